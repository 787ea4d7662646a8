"""The TensorFlow port and TensorFlow's instrument: what the suite cannot see.

Expected values come from the float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, from op counts derived by hand, or from TensorFlow's
own graph read directly (not through the instrument under test). The
cross-framework properties run in the conformance suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.checking.tolerance import analyse_forward, vjp_bounds
from implementations.contract import Params, param_shapes
from implementations.stacks.numpy import canonical_params
from implementations.stacks.numpy import init as numpy_init
from implementations.stacks.tensorflow import flax_init, instrument, tf
from implementations.stacks.tensorflow import runtime as stack
from implementations.stacks.tensorflow import tensorflow as port_module
from tests.support import reference
from tests.support.helpers import same_bits

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

PORT = port_module.TensorFlow()
D, F = 3, 4
X = np.array([0.5, -1.25, 2.0], np.float32)


def _params(seed: int = 0, dim: int = D, features: int = F) -> Params:
    return reference.random_params(np.random.default_rng(seed), dim, features)


# ---------------------------------------------------------------------------
# Layout converters
# ---------------------------------------------------------------------------


@st.composite
def any_params(draw) -> Params:
    dim, features = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    floats = hnp.from_dtype(np.dtype(np.float32))  # NaN, inf, -0 and subnormals too
    shapes = param_shapes(dim, features)
    arrays = {n: draw(hnp.arrays(np.float32, s, elements=floats)) for n, s in shapes.items()}
    return Params(**arrays)


@settings(max_examples=25)
@given(params=any_params())
def test_converters_round_trip_any_bits(params):
    tensors = port_module.params_to_tensors(params)
    assert [tuple(t.shape) for t in tensors] == [a.shape for a in params.as_dict().values()]
    assert all(t.dtype == tf.float32 for t in tensors)
    back = port_module.tensors_to_params(tensors)
    for name in ("w1", "b1", "w2", "b2"):
        assert same_bits(getattr(back, name), getattr(params, name)), name


def test_converters_refuse_wrong_shapes():
    w1, b1, w2, b2 = port_module.params_to_tensors(_params())
    with pytest.raises(ValueError, match="w2"):
        port_module.tensors_to_params([w1, b1, tf.zeros((F, F + 1)), b2])
    with pytest.raises(ValueError, match="w1"):
        port_module.tensors_to_params([tf.zeros(3), b1, w2, b2])


def test_init_is_the_canonical_init_through_tensorflow():
    for seed, dim, features in ((0, 1, 1), (2**40 + 5, 7, 3)):
        ours = PORT.init_params(seed, dim, features)
        numpy_init = canonical_params(seed, dim, features)
        for name in ("w1", "b1", "w2", "b2"):
            assert same_bits(getattr(ours, name), getattr(numpy_init, name))


@pytest.mark.parametrize("seed", [0, 2**32 - 1, 2**63 - 1])
@pytest.mark.parametrize(("dim", "features"), [(1, 1), (7, 3), (300, 17), (1024, 1024)])
def test_the_xla_init_makes_the_numpy_inits_kernels_bit_for_bit(seed, dim, features):
    w1, w2 = flax_init.kernels(seed, dim, features)
    numpy_init = canonical_params(seed, dim, features)
    assert same_bits(w1.numpy(), numpy_init.w1)
    assert same_bits(w2.numpy(), numpy_init.w2)


def test_kernels_past_int32_counters_come_from_the_numpy_init(monkeypatch):
    # Lowered limit: the XLA program must not run, and the bits stay the same.
    monkeypatch.setattr(flax_init, "MAX_ELEMENTS", 10)
    monkeypatch.setattr(flax_init, "_compiled", lambda *a: pytest.fail("XLA init used"))
    w1, w2 = flax_init.kernels(3, 5, 4)
    expected = canonical_params(3, 5, 4)
    assert same_bits(w1.numpy(), expected.w1)
    assert same_bits(w2.numpy(), expected.w2)


def test_an_xla_whose_erf_inv_rounds_otherwise_gets_the_numpy_init(monkeypatch):
    # TensorFlow 2.18 to 2.20 (docs/VERSIONS.md): the self-check fails, the XLA program
    # must not run, and the bits are the numpy init's.
    monkeypatch.setattr(flax_init, "xla_rounds_as_jax", lambda: False)
    monkeypatch.setattr(flax_init, "_compiled", lambda *a: pytest.fail("XLA init used"))
    w1, w2 = flax_init.kernels(3, 5, 4)
    expected = canonical_params(3, 5, 4)
    assert same_bits(w1.numpy(), expected.w1)
    assert same_bits(w2.numpy(), expected.w2)


def test_the_xla_truncated_normal_matches_on_all_2_23_mantissas():
    # Every outcome the truncated normal has: the float steps of the XLA init
    # (uniform's multiply-add, erf_inv, the clamp), fed mantissas directly,
    # against the numpy init's, which is XLA:CPU's by jax to the bit.
    mantissas = np.arange(2**23, dtype=np.uint32)
    fake_bits = tf.constant(mantissas << np.uint32(9))
    got = tf.function(flax_init.truncated_normal_of_bits, jit_compile=True)(fake_bits)
    want = numpy_init._truncated_normal_of_mantissa(mantissas, -2.0, 2.0)
    assert same_bits(got.numpy(), want)


def test_the_exercise_uses_the_xla_init_eagerly(monkeypatch):
    calls = []
    real = flax_init.kernels
    monkeypatch.setattr(flax_init, "kernels", lambda *a: calls.append(a) or real(*a))
    y = port_module.nn_checkpoint_forward(5, X, F)
    assert calls == [(5, D, F)]
    params = canonical_params(5, D, F)
    assert np.all(np.abs(y.numpy() - reference.forward(params, X)) <= analyse_forward(params, X).e2)


# ---------------------------------------------------------------------------
# Numerics, eager and compiled
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("checkpoint", [True, False])
def test_forward_and_vjp_are_within_the_bounds_of_exact(checkpoint):
    params, cotangent = _params(1, 5, 6), np.linspace(-1, 1, 6).astype(np.float32)
    x = np.random.default_rng(2).normal(size=5).astype(np.float32)
    out = PORT.forward(params, x, checkpoint=checkpoint)
    assert np.all(np.abs(out - reference.forward(params, x)) <= analyse_forward(params, x).e2)
    grads = PORT.vjp(params, x, cotangent, checkpoint=checkpoint).as_dict()
    exact = reference.vjp(params, x, cotangent)
    for name, bound in vjp_bounds(params, x, cotangent).items():
        assert np.all(np.abs(grads[name] - exact[name]) <= bound), name


def test_the_exercise_inside_tf_function_and_xla_equals_eager():
    seed, x = 7, tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        eager = port_module.nn_checkpoint_forward(seed, x, F)
    eager_dx = tape.gradient(eager, x, output_gradients=tf.ones(F))
    for jit in (False, True):

        @tf.function(jit_compile=jit)
        def run(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = port_module.nn_checkpoint_forward(seed, x, F)
            return y, tape.gradient(y, x, output_gradients=tf.ones(F))

        y, dx = run(x)
        bound = analyse_forward(canonical_params(seed, D, F), X).e2
        assert np.all(np.abs(y.numpy() - eager.numpy()) <= 2 * bound), jit
        np.testing.assert_allclose(dx.numpy(), eager_dx.numpy(), rtol=1e-5, atol=1e-6)


def test_the_compiled_contract_functions_stop_retracing_after_two_shapes():
    vjp = port_module.compiled("vjp", PORT.region)
    for dim, features in ((2, 3), (4, 5), (6, 2), (3, 7), (5, 5)):
        PORT.vjp(_params(0, dim, features), np.ones(dim, np.float32), np.ones(features, np.float32))
    assert vjp.experimental_get_tracing_count() <= 3


# ---------------------------------------------------------------------------
# The checkpoint, read from TensorFlow's graph directly
# ---------------------------------------------------------------------------


def _gradient_graph(checkpoint: bool):
    w = port_module.params_to_tensors(_params())

    @tf.function(autograph=False)
    def step(x, ct):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = port_module.mlp(w, x, checkpoint=checkpoint)
        return tape.gradient(y, x, output_gradients=ct)

    return step.get_concrete_function(tf.TensorSpec([D]), tf.TensorSpec([F])).graph


@pytest.mark.parametrize("checkpoint", [True, False])
def test_the_graph_holds_the_region_and_the_rerun_only_when_on(checkpoint):
    ops = _gradient_graph(checkpoint).get_operations()
    types = [op.type for op in ops]
    # Off: 2 forward MatMul, and for x's gradient alone dx = dy @ w.T per layer:
    # 2 more (the tape takes no dW it was not asked for). On: recompute_grad
    # reruns the block (2 MatMul, 1 Relu) and its own tape differentiates the
    # rerun with respect to every argument of the region, weights included:
    # dx and dW per layer, 4 MatMul.
    assert types.count("MatMul") == (8 if checkpoint else 4)
    assert types.count("Relu") == (2 if checkpoint else 1)
    # The region is a custom-gradient IdentityN in the forward pass; its
    # backward wraps the rerun in a custom gradient of its own (to refuse
    # forward-mode differentiation): two when on, none when off.
    custom = [op for op in ops if "_gradient_op_type" in op.node_def.attr]
    assert len(custom) == (2 if checkpoint else 0)


def test_the_instrument_reads_what_the_graph_keeps():
    on = PORT.backward_record(_params(), X, checkpoint=True)
    off = PORT.backward_record(_params(), X, checkpoint=False)
    # On: the region's five arguments, nothing computed from x; the block rerun.
    arguments = [((D,), "input"), ((D, F), "parameter"), ((F,), "parameter")]
    arguments += [((F, F), "parameter"), ((F,), "parameter")]
    assert sorted((t.shape, t.origin) for t in on.saved) == sorted(arguments)
    assert on.recomputed == {"MatMul": 2, "BiasAdd": 2, "Relu": 1}
    assert on.checkpoint_regions == 1
    # Off: x as the (1, D) row the first matmul reads (for dW1), relu's output
    # (for dW2 and ReluGrad), and the kernels (for dx and dh).
    assert sorted((t.shape, t.origin) for t in off.saved) == sorted(
        [((1, D), "input"), ((1, F), "activation"), ((D, F), "parameter"), ((F, F), "parameter")]
    )
    assert off.recomputed == {}
    assert off.checkpoint_regions == 0


@pytest.mark.parametrize("checkpoint", [True, False])
def test_eagerly_the_op_callback_sees_the_rerun_only_when_on(checkpoint):
    w = port_module.params_to_tensors(_params())
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = port_module.mlp(w, x, checkpoint=checkpoint)
    with instrument.watch(X, _params().as_dict().values()) as ops:
        tape.gradient(y, x)
    assert ops.record().recomputed == ({"MatMul": 2, "BiasAdd": 2, "Relu": 1} if checkpoint else {})


def test_a_tensor_passed_twice_gets_both_gradients():
    # TensorFlow issue 36999: recompute_grad once gave d(a + 2b)/dz = 1 for a is b is z.
    add = tf.recompute_grad(lambda a, b: a + 2.0 * b)
    z = tf.ones(3)
    with tf.GradientTape() as tape:
        tape.watch(z)
        y = add(z, z)
    np.testing.assert_array_equal(tape.gradient(y, z).numpy(), [3.0, 3.0, 3.0])


# ---------------------------------------------------------------------------
# TensorFlow's own arrays in and out
# ---------------------------------------------------------------------------


def test_tensors_variables_numpy_and_lists_give_the_same_float32_tensor():
    outs = [
        port_module.nn_checkpoint_forward(3, form, F)
        for form in (X, X.tolist(), tf.constant(X), tf.Variable(X), tf.constant(X, tf.float64))
    ]
    for out in outs:
        assert isinstance(out, tf.Tensor)
        assert (out.dtype, tuple(out.shape)) == (tf.float32, (F,))
        assert same_bits(out.numpy(), outs[0].numpy())


def test_gradients_flow_to_a_variable_x_and_it_stays_unchanged():
    x = tf.Variable(X)
    with tf.GradientTape() as tape:  # a trainable variable is watched by itself
        y = port_module.nn_checkpoint_forward(3, x, F)
    dx = tape.gradient(y, x, output_gradients=tf.ones(F))
    params = canonical_params(3, D, F)
    exact = reference.vjp(params, X, np.ones(F, np.float32))["x"]
    bound = vjp_bounds(params, X, np.ones(F, np.float32))["x"]
    assert np.all(np.abs(dx.numpy() - exact) <= bound)
    assert same_bits(x.numpy(), X)


def test_seed_and_features_may_be_0d_tensors_but_not_symbolic():
    base = port_module.nn_checkpoint_forward(3, X, F).numpy()
    same = port_module.nn_checkpoint_forward(tf.constant(3), X, tf.constant(4.0))
    assert same_bits(same.numpy(), base)

    @tf.function
    def symbolic_seed(x, seed):
        return port_module.nn_checkpoint_forward(seed, x, F)

    with pytest.raises(TypeError, match=r"\bseed\b"):
        symbolic_seed(tf.constant(X), tf.constant(3))


def test_a_symbolic_x_needs_a_static_shape():
    @tf.function(input_signature=[tf.TensorSpec([None])])
    def unknown_width(x):
        return port_module.nn_checkpoint_forward(0, x, F)

    with pytest.raises(ValueError, match=r"\bx\b"):
        unknown_width.get_concrete_function()


def test_from_numpy_keeps_the_dtype_and_to_numpy_reads_variables():
    for dtype in (np.float64, np.int32, np.bool_, np.complex64):
        array = np.zeros(2, dtype)
        assert PORT.from_numpy(array).dtype.as_numpy_dtype == dtype
    assert same_bits(PORT.to_numpy(tf.Variable(X)), X)


def test_pin_matmul_precision_turns_tensor_float_32_off():
    PORT.pin_matmul_precision()
    assert not tf.config.experimental.tensor_float_32_execution_enabled()
    assert PORT.matmul_precision()["pinned"] == "float32"


# ---------------------------------------------------------------------------
# TensorFlow's log lines
# ---------------------------------------------------------------------------


def test_the_log_filter_drops_cpp_log_lines_and_keeps_the_rest():
    text = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1796032959.938959   13012 port.cc:153] oneDNN custom operations are on.\n"
        "I0000 00:00:1796032960.135728   13012 cpu_feature_guard.cc:227] This TensorFlow binary\n"
        "To enable the following instructions: AVX2 FMA, in other operations, rebuild.\n"
        "a line of the user's own\n"
        "E0000 00:00:1796032961.1 77 cuda_dnn.cc:8579] Unable to register cuDNN factory\n"
    )
    assert stack._without_cpp_logs(text) == "a line of the user's own\n"


def test_loading_the_port_prints_nothing_and_leaves_keras_unloaded():
    # A fresh interpreter, so that this is TensorFlow's first import. TensorFlow
    # imports Keras itself, which would fix Keras's backend for the process.
    code = textwrap.dedent(
        """
        import sys
        import implementations
        port = implementations.load("tensorflow")
        port.nn_checkpoint_forward(0, [1.0, 2.0], 3)
        assert "keras" not in sys.modules
        import tensorflow as tf
        assert any(path.endswith("_tf_keras") for path in tf.__path__)  # tf.keras's path
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert done.stderr == ""
