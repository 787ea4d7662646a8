"""The HIPS autograd port: its layout, relu at 0, its backward graph, its arrays in and out
(the tests of `tests.support.stack_kit.ArrayPortKit` and autograd's own).

Expected values come from a float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, from the numpy canonical init, from counts derived by
hand from autograd's VJP rules, or from tracemalloc (numpy's allocations);
never from the code under test. The cross-framework properties run in the
conformance suite.
"""

from __future__ import annotations

import gc
import importlib.metadata
import sys
import tracemalloc

import numpy as np
import pytest

autograd = pytest.importorskip("autograd")

import autograd.numpy as anp  # noqa: E402
from hypothesis import given, settings  # noqa: E402

from implementations import contract  # noqa: E402
from implementations.contract import Params  # noqa: E402
from implementations.stacks.autograd import block as mlp  # noqa: E402
from implementations.stacks.autograd import hips_autograd as port_module  # noqa: E402
from implementations.stacks.autograd import instrument  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from tests.support import reference  # noqa: E402
from tests.support import stack_kit as kit  # noqa: E402
from tests.support.helpers import run_python, same_bits, without_frameworks  # noqa: E402

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

DIM, FEATURES, X, G = kit.DIM, kit.FEATURES, kit.X, kit.G  # the shared case
PORT = port_module.HipsAutograd()


class TestAutogradPort(kit.ArrayPortKit):
    PORT = PORT
    port_module = port_module
    SCALARS = (np.array(3), np.array(2))  # 0-d numpy arrays


# ---------------------------------------------------------------------------
# Layout: autograd's arrays are the canonical ones
# ---------------------------------------------------------------------------


@settings(max_examples=30)
@given(params=kit.any_params())
def test_converters_round_trip_any_bits_in_the_canonical_layout(params):
    arrays = port_module.params_to_arrays(params)
    assert [a.shape for a in arrays] == [getattr(params, n).shape for n in port_module.NAMES]
    assert all(a.flags.writeable and a.dtype == np.float32 for a in arrays)  # copies
    back = port_module.arrays_to_params(arrays)
    for name in contract.PARAM_NAMES:
        assert same_bits(getattr(back, name), getattr(params, name)), name


def test_the_block_computes_in_the_canonical_layout():
    params = kit.random_params(0)
    w1, b1, w2, b2 = port_module.params_to_arrays(params)
    assert w1.shape == (DIM, FEATURES)  # (in, out): x @ w1, no transpose
    out = mlp.block(w1, b1, w2, b2, X)
    assert (out.shape, out.dtype) == ((FEATURES,), np.float32)
    h = X @ params.w1 + params.b1
    np.testing.assert_allclose(out, np.maximum(h, 0) @ params.w2 + params.b2, rtol=1e-6, atol=1e-6)


def test_wrong_shapes_are_refused():
    w1, b1, w2, b2 = port_module.params_to_arrays(kit.random_params(1))
    with pytest.raises(ValueError, match="b1"):
        port_module.arrays_to_params((w1, np.zeros(3, np.float32), w2, b2))
    with pytest.raises(ValueError, match="w2"):
        port_module.arrays_to_params((w1, b1, np.zeros((4, 3), np.float32), b2))


def test_checkpoint_on_and_off_give_the_same_bits():
    # The recomputation runs the same numpy calls on the same arrays.
    params = kit.random_params(4)
    on, off = (PORT.vjp(params, X, G, checkpoint=c).as_dict() for c in (True, False))
    for name in on:
        assert same_bits(on[name], off[name]), name


# ---------------------------------------------------------------------------
# relu at an exact 0: Flax's gradient is 0, autograd.numpy.maximum's 0.5
# ---------------------------------------------------------------------------


def _tie_params() -> Params:
    # w1 = 0 and b1 = [0, 1, 0, -1]: the pre-activation h is exactly b1, two entries at 0.
    rng = np.random.default_rng(5)
    return Params(
        w1=np.zeros((DIM, FEATURES), np.float32),
        b1=np.array([0.0, 1.0, -0.0, -1.0], np.float32),
        w2=rng.normal(size=(FEATURES, FEATURES)).astype(np.float32),
        b2=np.zeros(FEATURES, np.float32),
    )


@pytest.mark.parametrize("checkpoint", [True, False])
def test_relus_gradient_at_an_exact_zero_is_zero_as_in_flax(checkpoint):
    params = _tie_params()
    grads = PORT.vjp(params, X, G, checkpoint=checkpoint)
    upstream = params.w2 @ G  # dL/da
    # relu'(0) = 0 (Flax, JAX, torch; the reference): only h[1] > 0 passes its gradient.
    np.testing.assert_array_equal(grads.b1, [0.0, upstream[1], 0.0, 0.0])
    np.testing.assert_allclose(grads.b1, reference.vjp(params, X, G)["b1"], rtol=1e-6)


def test_autograd_numpys_maximum_splits_the_gradient_at_a_tie():
    # Why the port has a relu primitive of its own (pinned: fails the day autograd changes).
    grad = autograd.grad(lambda h: anp.sum(anp.maximum(h, 0.0)))
    h = np.array([0.0, 2.0, -1.0], np.float32)
    np.testing.assert_array_equal(grad(h), [0.5, 1.0, 0.0])
    ours = autograd.grad(lambda h: anp.sum(mlp.relu(h)))(h)
    np.testing.assert_array_equal(ours, [0.0, 1.0, 0.0])
    assert ours.dtype == np.float32


def test_the_relu_tie_matches_jax():
    jax = pytest.importorskip("jax")
    h = np.array([0.0, -0.0, 1.5, -2.0], np.float32)
    _, pullback = jax.vjp(jax.nn.relu, h)
    (expected,) = pullback(np.ones(4, np.float32))
    ours = autograd.grad(lambda h: anp.sum(mlp.relu(h)))(h)
    assert same_bits(ours, np.asarray(expected))


# ---------------------------------------------------------------------------
# The backward graph: what autograd keeps, what the backward pass runs
# ---------------------------------------------------------------------------


def test_the_instrument_reads_what_autograd_keeps_and_reruns():
    # By hand, from autograd's VJP rules: dot's VJPs close over both operands (x and w1,
    # a and w2; match_complex reads the other one too), relu's over its output a, add's
    # over shapes only. So without the checkpoint x and a (F floats) are kept; the backward
    # pass runs dW1, dx, dW2, da: 4 matmuls, and traces nothing. With it the node keeps
    # the block's five inputs; its VJP traces the block again (dot, add, relu, dot, add)
    # and then runs the same 4 adjoints: 6 matmuls, one trace.
    on, off = kit.records_on_and_off(PORT)  # on keeps x and the parameters (the kit's test)
    assert (on.recomputed, on.checkpoint_regions, on.backward_matmuls) == (
        {"dot": 2, "add": 2, "relu": 1},
        1,
        6,
    )
    activations = off.saved_by_origin("activation")
    assert [(t.role, t.shape, t.dtype) for t in activations] == [("a", (FEATURES,), "float32")]
    assert (off.recomputed, off.checkpoint_regions, off.backward_matmuls) == ({}, 0, 4)
    assert on.saved_bytes == X.nbytes < off.saved_bytes == X.nbytes + FEATURES * 4


def test_the_exercise_record_keeps_x_and_reruns_the_block():
    # The gradient with respect to x alone: the adjoints are da and dx (2 matmuls), after
    # the block is traced again (2 dots): autograd is eager, so the second dot reruns too.
    record = PORT.exercise_record(3, X, FEATURES)
    assert [t.role for t in record.kept] == ["x"]
    assert sorted(t.origin for t in record.saved) == ["input"] + ["parameter"] * 4
    assert (record.recomputed, record.checkpoint_regions, record.backward_matmuls) == (
        {"dot": 2, "add": 2, "relu": 1},
        1,
        4,
    )


#: The tracemalloc domain numpy reports its array data in (NPY_TRACE_DOMAIN, numpy's alloc.c).
NUMPY_DOMAIN = 389047


def _held_between_passes(checkpoint: bool, features: int = 1024) -> int:
    """Bytes of numpy array data that the forward pass of `make_vjp` allocated and still
    holds once its output is dropped (the backward pending), by tracemalloc."""
    params = canonical_params(0, 8, features)
    arrays = (*port_module.params_to_arrays(params), np.ones(8, np.float32))
    run = PORT._block(checkpoint)
    only_numpy = [tracemalloc.DomainFilter(True, NUMPY_DOMAIN)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(only_numpy)
        pullback, out = autograd.make_vjp(run, (0, 1, 2, 3, 4))(*arrays)
        del out
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(only_numpy)
    finally:
        tracemalloc.stop()
    pullback(np.ones(features, np.float32))
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def test_tracemalloc_sees_what_the_instrument_says():
    # numpy reports its array data to tracemalloc (in a domain of its own): an instrument
    # the walk does not use. Between the passes, without the checkpoint, the graph holds
    # relu's output a (4 KiB at F = 1024) and nothing else it allocated; with it, nothing
    # (its inputs were allocated before).
    held = {c: _held_between_passes(c) for c in (True, False)}
    assert held == {True: 0, False: 1024 * 4}, held


def test_the_checkpoint_reruns_the_block_in_the_backward_pass_only():
    # The watch counts matmul primitives run on plain arrays, per pass: the forward pass
    # runs the block once either way, in make_vjp's one trace; the backward pass reruns its
    # 2 dots, in a trace of its own, when checkpointed.
    params = port_module.params_to_arrays(kit.random_params(2))
    for checkpoint, backward in ((True, 6), (False, 4)):
        with instrument.watch(X, params) as seen:
            pullback, _ = autograd.make_vjp(PORT._block(checkpoint), (0, 1, 2, 3, 4))(*params, X)
            pullback(G)
        assert (seen.matmuls["forward"], seen.traces["forward"]) == (2, 1), checkpoint
        assert (seen.matmuls["backward"], seen.traces["backward"]) == (backward, int(checkpoint))
        # one evaluation of block 0 per pass it runs in, both matmuls each time
        phases = [(e.block, e.phase, e.ran) for e in seen.record().evaluations]
        expected = [(0, "forward", ("x@W1", "a@W2"))]
        assert phases == expected + [(0, "backward", ("x@W1", "a@W2"))] * checkpoint


def test_the_watch_leaves_the_profiler_it_found():
    def outer(frame, event, arg):
        return None

    sys.setprofile(outer)
    try:
        with instrument.watch(X, ()):
            pass
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(None)


# ---------------------------------------------------------------------------
# The exercise: numpy, lists and traced x in; numpy out; x untouched
# ---------------------------------------------------------------------------


def test_lists_numpy_and_float64_give_the_same_output():
    expected = port_module.nn_checkpoint_forward(4, X, FEATURES)
    assert isinstance(expected, np.ndarray)
    assert (expected.dtype, expected.shape) == (np.float32, (FEATURES,))
    for form in (X.tolist(), X.astype(np.float64), tuple(X.tolist()), X.astype(np.float16)):
        assert same_bits(port_module.nn_checkpoint_forward(4, form, FEATURES), expected)
    kit.assert_exercise_output(expected)


def test_integer_x_is_converted_and_a_float64_overflow_refused():
    ints = port_module.nn_checkpoint_forward(1, np.array([1, -2, 3]), 2)
    assert same_bits(ints, port_module.nn_checkpoint_forward(1, [1.0, -2.0, 3.0], 2))
    with pytest.raises(ValueError, match=r"\bx\b"):
        port_module.nn_checkpoint_forward(1, np.array([1e39, 0.0]), 2)


def test_the_callers_x_is_never_modified():
    for x in (X.copy(), X.astype(np.float64), X.tolist()):
        before = np.array(x, copy=True)
        port_module.nn_checkpoint_forward(0, x, FEATURES)
        autograd.grad(lambda v: anp.sum(port_module.nn_checkpoint_forward(0, v, FEATURES)))(
            np.asarray(x, np.float32)
        )
        assert same_bits(np.asarray(x), before)
    x = X.copy()
    PORT.vjp(kit.random_params(6), x, G)
    PORT.backward_record(kit.random_params(6), x)
    PORT.exercise_record(0, x, FEATURES)
    assert same_bits(x, X)


def test_gradients_flow_to_x_under_autograd_grad():
    dx = autograd.grad(lambda v: anp.sum(port_module.nn_checkpoint_forward(7, v, FEATURES) * G))(
        X.copy()
    )
    assert dx.dtype == np.float32
    kit.assert_x_gradient(dx)


def test_a_traced_x_is_checked_on_its_value():
    for bad, error in ((np.array([1.0, np.nan]), ValueError), (np.ones((2, 2)), ValueError)):
        with pytest.raises(error, match=r"\bx\b"):
            autograd.grad(lambda v: anp.sum(port_module.nn_checkpoint_forward(0, v, 2)))(bad)


def test_from_numpy_keeps_the_dtype_and_to_numpy_copies_and_unboxes():
    for array in kit.ODD_ARRAYS:
        native = PORT.from_numpy(array)
        assert native is not array
        assert same_bits(native, array)
        back = PORT.to_numpy(native)
        assert back is not native
        assert same_bits(back, array)
    seen = []
    autograd.grad(lambda v: seen.append(PORT.to_numpy(v)) or anp.sum(v))(X.copy())
    assert type(seen[0]) is np.ndarray
    assert same_bits(seen[0], X)


def test_matmul_precision_is_float32_with_nothing_to_pin():
    found = PORT.matmul_precision()
    assert found["default"].startswith("float32")
    assert found["pinned"].startswith("float32")
    assert found["device"] == "cpu"
    assert found["blas"]
    PORT.pin_matmul_precision()  # a no-op, callable
    assert PORT.versions()["autograd"] == importlib.metadata.version("autograd")


def test_the_port_runs_without_jax_or_torch(tmp_path):
    # The stack imports autograd and numpy only: with jax, torch and tensorflow blocked
    # the port loads and runs the exercise and its evidence.
    without_frameworks(tmp_path, ["jax", "torch", "tensorflow", "mlx"])  # shadows in tmp_path
    script = (
        "import sys, numpy as np\n"
        "import implementations\n"
        "port = implementations.load('hips_autograd')\n"
        "print(port.nn_checkpoint_forward(1, [0.5, -1.0], 3).dtype)\n"
        "print(port.exercise_record(1, np.array([0.5, -1.0], np.float32), 3).checkpoint_regions)\n"
        "print(sorted(m for m in ('jax', 'torch', 'tensorflow', 'mlx') if m in sys.modules))\n"
    )
    done = run_python(["-c", script], tmp_path, timeout=300)  # tmp_path first on the path
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["float32", "1", "[]"], done.stdout
