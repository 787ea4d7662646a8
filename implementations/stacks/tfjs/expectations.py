"""What the tfjs port's tape shows under each remat policy.

A process port's family is its hello's framework. Its tape saves by role (the
evidence's `role`, docs/PROTOCOL.md); forward and backward matmuls are tf.profile's
BatchMatMul kernels.
"""

from implementations.composition import composed
from implementations.expectations import Expectations, expect
from implementations.stateful import DEFAULT_VARIANT, StateDeclaration

#: The block with variables and RNGs (stateful.js), measured on the port (tfjs 4.22,
#: tests/process/test_tfjs_stateful.py): the recompute replays, one update, nothing moves.
STATEFUL = {
    "tfjs": {
        DEFAULT_VARIANT: StateDeclaration(
            "tf.customGrad(block), its gradFunc recomputing the block",
            "tf.randomUniform(shape, 0, 1, 'float32', String(seed)) in tf.dropout's recipe: "
            "tfjs seeds an alea generator from the string on each call and keeps no global "
            "generator state for a seeded op, so the recompute draws the forward's mask again "
            "and the stream is kept by construction (the fingerprint is the seed's two words; "
            "an unseeded tf.dropout draws from Math.random, which no instrument can read)",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
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
    # Measured on the port (tests/process/test_tfjs.py pins them); under_trainer is not
    # composable in tfjs (the port's hello says why).
    compositions={
        "@tensorflow/tfjs": {
            "once": composed(
                "x",
                2,
                1,
                why="tf.customGrad keeps what save() is given (x, params); the port's gradFunc "
                "reruns x @ W1 alone (tfjs-core engine.js customGrad)",
            ),
        },
    },
)
