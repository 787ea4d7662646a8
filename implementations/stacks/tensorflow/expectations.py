"""What TensorFlow's instrument (the traced gradient graph) shows under each remat policy."""

from implementations.composition import composed
from implementations.expectations import NOT_COUNTED, Degradation, Expectations, expect

# recompute_grad's source: tensorflow/python/ops/custom_gradient.py (2.21).
_SOURCE = "recompute_grad in tensorflow/python/ops/custom_gradient.py"

EXPECTATIONS = Expectations(
    families={
        "tensorflow": {
            "none": expect("x a", None, why=f"relu's gradient reads a; {NOT_COUNTED}"),
            "full": expect(
                "x", None, why=f"tf.recompute_grad keeps the region's inputs; {NOT_COUNTED}"
            ),
        },
    },
    # Measured eagerly, as the instrument runs the port's vjp (tensorflow 2.21);
    # tests/tensorflow/test_tensorflow_composition.py pins them.
    compositions={
        "tensorflow": {
            "once": composed(
                "x",
                2,
                2,
                why="the forward runs f under stop_recording and keeps its arguments; "
                f"grad_wrapper reruns f whole under a GradientTape: both matmuls ({_SOURCE})",
            ),
            "twice": composed(
                "x",
                2,
                4,
                why="the outer grad_wrapper reruns the inner recompute_grad's forward (2 "
                "matmuls, whose result the inner gradient never reads), then the inner "
                f"grad_wrapper reruns the block again (2): nothing prunes the first ({_SOURCE})",
                degradation=True,
            ),
            "under_trainer": composed(
                "x",
                2,
                4,
                why="the trainer's recompute_grad over the model's call reruns the model's "
                f"region forward for nothing, as twice does ({_SOURCE}, grad_wrapper)",
                degradation=True,
            ),
        },
    },
    degradations=(
        Degradation(
            "tensorflow",
            "full",
            "tf.recompute_grad reruns both matmuls (MatMul x2 recomputed, no pruning of the "
            "second layer, which the gradient does not need)",
            "tensorflow 2.21",
            "reruns both matmuls",
            probe="implementations.stacks.tensorflow.degradations:"
            "recompute_grad_reruns_both_matmuls",
        ),
    ),
)
