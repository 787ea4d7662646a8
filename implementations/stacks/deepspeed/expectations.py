"""What DeepSpeed's instrument shows under each remat policy.

DeepSpeed's checkpoint is reentrant: it keeps x on its node
(`ctx.deepspeed_saved_tensors`) and its backward reruns the whole block, the
second addmm too, with no early stop.
"""

from implementations.expectations import Expectations, expect

EXPECTATIONS = Expectations(
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
)
