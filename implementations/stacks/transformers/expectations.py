"""What torch's instrument shows on transformers' switch, under each remat policy and each
composition case it declares. The checkpoint is torch's own (`torch.utils.checkpoint`, non-
reentrant, called from `GradientCheckpointingLayer`'s wrapped `forward`), so each policy shows
what it shows on eager torch. Measured with transformers 5.23.0, torch 2.13.0 (CPU); the
composition rows are pinned by tests/transformers/test_hf_composition.py.
"""

from implementations.composition import composed
from implementations.expectations import Expectations, expect
from implementations.stacks.torch.state_declarations import eager_twice

#: The block with variables and RNGs: torch's non-reentrant checkpoint, so eager torch's
#: replay and its second BatchNorm update (pytorch#96136).
HF_TRANSFORMERS = {
    "default": eager_twice(
        'StatefulModel(block).activation_checkpointing_enable({"use_reentrant": False})'
    )
}

EXPECTATIONS = Expectations(
    families={
        "transformers": {
            "none": expect(
                "x a", 4, why="the switch off: eager relu's backward reads its output a"
            ),
            "full": expect(
                "x",
                5,
                why="the layer's forward under torch.utils.checkpoint(use_reentrant=False): keeps "
                "x, reruns addmm and relu (early stop)",
            ),
            "save_dots": expect(
                "x h y",
                4,
                why="context_fn handed through activation_checkpointing_kwargs: eager selective "
                "checkpointing caches every addmm output, y too",
            ),
        },
    },
    # The block with variables and RNGs (property (l)): eager torch's checkpoint, so eager's.
    stateful={"hf_transformers": HF_TRANSFORMERS},
    compositions={
        "transformers": {
            "once": composed(
                "x",
                2,
                1,
                why="GradientCheckpointingLayer's forward under a non-reentrant checkpoint; its "
                "recompute stops once relu's output is rebuilt (early_stop, "
                "torch/utils/checkpoint.py)",
            ),
            "under_trainer": composed(
                "x",
                2,
                1,
                why="checkpoint_wrapper's region (torch/distributed/algorithms/_checkpoint/"
                "checkpoint_wrapper.py) around the layer's own: non-reentrant regions nest and "
                "the inner saves through the outer's hooks (NOTE [Nestable Checkpoint])",
            ),
        },
    },
)
