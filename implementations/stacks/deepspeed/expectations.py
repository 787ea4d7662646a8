"""What DeepSpeed's instrument shows under each remat policy.

DeepSpeed's checkpoint is reentrant: it keeps x on its node
(`ctx.deepspeed_saved_tensors`) and its backward reruns the whole block, the
second addmm too, with no early stop.
"""

from implementations.composition import whole_rerun
from implementations.expectations import Expectations, expect
from implementations.stacks.torch.state_declarations import eager_twice

#: The block with variables and RNGs: CheckpointFunction stashes and restores torch's CPU RNG
#: state, so the mask replays; BatchNorm's forward reruns (pytorch#96136).
DEEPSPEED = {"default": eager_twice("deepspeed.checkpointing.checkpoint(block, x)")}

EXPECTATIONS = Expectations(
    stateful={"deepspeed": DEEPSPEED},  # the block with variables and RNGs (property (l))
    families={
        "deepspeed": {
            "none": expect(
                "x a", 4, why="the plain module: eager relu's backward reads its output a"
            ),
            "full": expect(
                "x",
                6,
                why="deepspeed.checkpointing.checkpoint keeps x and reruns the whole block "
                "(addmm, relu, addmm): two matmuls more than none",
            ),
        },
    },
    # Measured on the port's own vjp (tests/deepspeed/test_deepspeed_composition.py pins them).
    compositions={
        "deepspeed": whole_rerun(
            once="CheckpointFunction (deepspeed/runtime/activation_checkpointing/"
            "checkpointing.py) runs the block under no_grad, reruns all of it in backward",
            twice="the outer CheckpointFunction.backward reruns the inner checkpoint's forward "
            "(2 matmuls, unused), whose backward reruns the block again (reentrant)",
            under_trainer="a checkpoint over the model's call nests as twice does: its backward "
            "reruns the model's checkpoint forward for nothing (CheckpointFunction.backward)",
        ),
    },
)
