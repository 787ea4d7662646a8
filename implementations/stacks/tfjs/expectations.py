"""What the tfjs port's tape shows under each remat policy.

A process port's family is its hello's framework. Its tape saves by role (the
evidence's `role`, docs/PROTOCOL.md); backward matmuls are tf.profile's
BatchMatMul kernels.
"""

from implementations.expectations import Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "@tensorflow/tfjs": {
            "none": expect(
                "x d1 h a y",
                4,
                why="tfjs's Add gradient saves both inputs (d1, and y = a @ W2 before the "
                "bias), its Relu gradient reads its input h, the second BatchMatMul's reads a",
            ),
            "full": expect(
                "x", 5, why="tf.customGrad keeps x; its gradient reruns the first BatchMatMul"
            ),
        },
    },
)
