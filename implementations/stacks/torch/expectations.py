"""What torch's instruments show under each remat policy: eager (saved-tensor hooks and the
selective-checkpoint cache), inductor (AOTAutograd's partitioned graphs) and FSDP2's ranks.

torch's Linear is one addmm with the bias fused in: a policy can save h, never d1.
"""

from implementations.composition import composed
from implementations.expectations import Degradation, Expectations, expect

from . import state_declarations as state

_HERE = "implementations.stacks.torch.degradations"

EXPECTATIONS = Expectations(
    families={
        "torch": {
            "none": expect("x a", 4, why="eager relu's backward reads its output a"),
            "full": expect("x", 5, why="torch.utils.checkpoint keeps x, reruns addmm and relu"),
            "save_dots": expect(
                "x h y",
                4,
                why="addmm fuses the bias (h, not d1); eager selective checkpointing caches "
                "every addmm output, y too, which nothing reads",
            ),
        },
        "torch_compile": {
            "none": expect(
                "x a mask",
                4,
                why="relu's backward reads its mask (a <= 0, made in the forward graph) beside "
                "a, and nothing is recomputed",
            ),
            "full": expect("x", 5, why="the partitioner recomputes the region's first layer"),
            "save_dots": expect("x h", 4, why="addmm fuses the bias (h); the partitioner drops y"),
            "save_named": expect("x h", 4, why="the tag op's output h, MUST_SAVE"),
            "budget(0)": expect("x", 5, why="activation_memory_budget 0: recompute all it can"),
            # A budget in (0, 1] is min-cut's own choice at batch 1, and it hangs on the sizes
            # (measured: (3, 4) keeps x; (8, 8) x, a; (33, 7) x, h; (32, 32) x, a, mask): (j)
            # holds budget(0) exactly, and `bench --policies` measures the rest.
        },
        # torch's checkpoint_wrapper (apply_activation_checkpointing): torch.utils.checkpoint.
        "torch_ac_wrapper": {
            "none": expect("x a", 4, why="no wrapper: eager relu's backward reads its output a"),
            "full": expect(
                "x", 5, why="checkpoint_wrapper(NO_REENTRANT) keeps x, reruns addmm and relu"
            ),
            "save_dots": expect(
                "x h y",
                4,
                why="checkpoint_wrapper passes context_fn on to torch.utils.checkpoint: eager "
                "selective checkpointing caches every addmm output, y too",
            ),
        },
        # Rank 0's saved_tensors_hooks under FSDP2 (gathered weights are parameters, not kept).
        "torch_fsdp": {
            "none": expect(
                "x a", 4, why="as eager torch on each rank: relu's backward reads its output a"
            ),
            "full": expect(
                "x", 5, why="torch.utils.checkpoint keeps x's rows, reruns addmm and relu"
            ),
        },
    },
    # The block with variables and RNGs (property (l)), tests/torch/test_torch_stateful.py.
    stateful={
        "pytorch": state.PYTORCH,
        "torch_compile": state.TORCH_COMPILE,
        "torch_ac_wrapper": state.TORCH_AC_WRAPPER,
    },
    # Measured on the eager port (tests/torch/test_torch_composition.py pins them).
    compositions={
        "torch": {
            "once": composed(
                "x",
                2,
                1,
                why="non-reentrant checkpoint keeps x; its recompute stops once relu's output "
                "is rebuilt, so x @ W1 alone reruns (early_stop, torch/utils/checkpoint.py)",
            ),
            "twice": composed(
                "x",
                2,
                1,
                why="the outer recompute reruns the inner checkpoint, which saves through the "
                "outer's hooks and stops early: nothing more (NOTE [Nestable Checkpoint])",
            ),
            "under_trainer": composed(
                "x",
                2,
                1,
                why="the trainer's region over the model's call nests as twice does "
                "(NOTE [Nestable Checkpoint], early_stop)",
            ),
        },
        # torch_compile's, measured (tests/torch/test_torch_compile_composition.py pins it):
        # its nested cases are not composable (`TorchCompile.not_composable`).
        "torch_compile": {
            "once": composed(
                "x",
                2,
                1,
                why="AOTAutograd's partition of the tagged region keeps x and reruns x @ W1 "
                "alone: a @ W2's output is not needed by the backward pass "
                "(min_cut_rematerialization_partition, torch/_functorch/partitioners.py)",
            ),
        },
        # torch_ac_wrapper's, measured (tests/torch/test_torch_ac_wrapper.py pins them).
        "torch_ac_wrapper": {
            "once": composed(
                "x",
                2,
                1,
                why="checkpoint_wrapper runs torch.utils.checkpoint(use_reentrant=False): keeps x, "
                "its recompute stops once relu's output is rebuilt (early_stop)",
            ),
            "twice": composed(
                "x",
                2,
                1,
                why="apply_activation_checkpointing again wraps the block inside the first "
                "CheckpointWrapper; the regions nest and the inner stops early (NOTE [Nestable "
                "Checkpoint], torch/utils/checkpoint.py)",
            ),
        },
    },
    # Pinned by tests/torch/test_torch_policies.py and tests/torch/test_torch_compile_policies.py.
    degradations=(
        Degradation(
            "torch",
            "offload_dots",
            "eager selective checkpointing treats MUST_CPU_OFFLOAD as recompute: nothing is "
            "offloaded, the addmm reruns",
            "torch 2.13.0",
            probe=f"{_HERE}:eager_cpu_offload_recomputes",
        ),
        Degradation(
            "torch",
            "save_named",
            "a custom tag op on h can be cached (MUST_SAVE), but the eager recompute still "
            "reruns the addmm that makes h (5 backward matmuls)",
            "torch 2.13.0",
            probe=f"{_HERE}:eager_tagged_h_still_reruns_its_addmm",
        ),
        Degradation(
            "torch_compile",
            "offload_dots",
            "CPU_OFFLOAD under torch.compile becomes a plain save: h kept, nothing moved",
            "torch 2.13.0",
            probe=f"{_HERE}:compiled_cpu_offload_is_a_save",
        ),
        Degradation(
            "torch_compile",
            "save_dots",
            "a stateful policy function (save the first addmm) is silently ignored under "
            "torch.compile, which calls it twice per op: full remat instead",
            "torch 2.13.0",
            probe=f"{_HERE}:compiled_stateful_policy_is_ignored",
        ),
    ),
)
