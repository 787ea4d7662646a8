"""What TensorFlow's instrument (the traced gradient graph) shows under each remat policy."""

from implementations.expectations import NOT_COUNTED, Degradation, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "tensorflow": {
            "none": expect("x a", None, why=f"relu's gradient reads a; {NOT_COUNTED}"),
            "full": expect(
                "x", None, why=f"tf.recompute_grad keeps the region's inputs; {NOT_COUNTED}"
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
