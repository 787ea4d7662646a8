"""What TensorFlow's instrument (the traced gradient graph) shows under each remat policy."""

from implementations.composition import whole_rerun
from implementations.expectations import Degradation, Expectations, uncounted
from implementations.stateful import DEFAULT_VARIANT, StateDeclaration
from implementations.stateful_port import redraws

# recompute_grad's source: tensorflow/python/ops/custom_gradient.py (2.21).
_SOURCE = "recompute_grad in tensorflow/python/ops/custom_gradient.py"

#: No upstream report was found for these; the repro is ready for one.
_UNREPORTED = (
    f"unreported upstream ({_SOURCE}, tensorflow 2.21): repros/tf_recompute_grad_dropout.py"
)

#: The block with variables and RNGs (property (l)), measured eagerly on tensorflow 2.21;
#: tests/tensorflow/test_tensorflow_stateful.py holds each count.
STATEFUL = {
    "tensorflow": {
        DEFAULT_VARIANT: redraws(
            "tf.recompute_grad(block) over tf.nn.dropout",
            "tf.random.set_seed(seed), then tf.nn.dropout with no op seed: its op seed comes "
            "from the global seed's generator, one draw per call",
            _UNREPORTED,
            replay="the recompute calls tf.nn.dropout again, which takes the next op seed: "
            "1 fresh mask, and the gradients are the fresh mask's",
            stream="the recompute's dropout takes one more op seed: the generator is one draw "
            "ahead after the step (at rate 0 too: tf.nn.dropout takes its op seed "
            "before it looks at the rate)",
            updates="grad_wrapper reruns the block whole, its assigns too: the running "
            "statistics take a second update",
            fix="tensorflow:stateless",
            repro="repros/tf_recompute_grad_dropout.py",
        ),
        "stateless": StateDeclaration(
            "tf.recompute_grad(block) over tf.nn.experimental.stateless_dropout",
            "tf.nn.experimental.stateless_dropout(seed=[seed, 1]): the mask is a function of "
            "the seed, so the recompute draws it again; nothing global moves",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
    families={
        "tensorflow": uncounted(
            "x a",
            "relu's gradient reads a",
            "tf.recompute_grad keeps the region's inputs",
        ),
    },
    # Measured eagerly, as the instrument runs the port's vjp (tensorflow 2.21);
    # tests/tensorflow/test_tensorflow_composition.py pins them.
    compositions={
        "tensorflow": whole_rerun(
            once="the forward runs f under stop_recording and keeps its arguments; "
            f"grad_wrapper reruns f whole under a GradientTape: both matmuls ({_SOURCE})",
            twice="the outer grad_wrapper reruns the inner recompute_grad's forward (2 "
            "matmuls, whose result the inner gradient never reads), then the inner "
            f"grad_wrapper reruns the block again (2): nothing prunes the first ({_SOURCE})",
            under_trainer="the trainer's recompute_grad over the model's call reruns the model's "
            f"region forward for nothing, as twice does ({_SOURCE}, grad_wrapper)",
        ),
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
