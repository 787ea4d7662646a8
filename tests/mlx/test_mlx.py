"""The MLX port: its layout, its graph, MLX's allocator, its arrays in and out, its pitfalls
(the tests of `tests.support.stack_kit.ArrayPortKit` and MLX's own).

Expected values come from a float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, from the numpy canonical init, or from MLX itself
without the checkpoint; never from the code under test. The cross-framework
properties run in the conformance suite.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core")
nn = pytest.importorskip("mlx.nn")

from hypothesis import given, settings  # noqa: E402

from implementations import contract  # noqa: E402
from implementations.stacks.mlx import mlx as port_module  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from tests.support import stack_kit as kit  # noqa: E402
from tests.support.helpers import same_bits  # noqa: E402

DIM, FEATURES, X, G = kit.DIM, kit.FEATURES, kit.X, kit.G  # the shared case
PORT = port_module.Mlx()


class TestMlxPort(kit.ArrayPortKit):
    PORT = PORT
    port_module = port_module
    SCALARS = (mx.array(3), mx.array(2.0))  # 0-d MLX arrays


def _dot(*outputs) -> str:
    text = io.StringIO()
    mx.export_to_dot(text, *outputs)
    return text.getvalue()


# ---------------------------------------------------------------------------
# Layout converters: the kernel (in, out) is nn.Linear's weight (out, in)
# ---------------------------------------------------------------------------


@settings(max_examples=30)
@given(params=kit.any_params())
def test_converters_round_trip_any_bits_through_mlx_arrays(params):
    state = port_module.params_to_arrays(params)
    assert all(isinstance(a, mx.array) for a in state.values())
    assert same_bits(np.array(state["fc1.weight"]), params.w1.T)  # (out, in)
    assert same_bits(np.array(state["fc2.weight"]), params.w2.T)
    back = port_module.arrays_to_params(state)
    for name in contract.PARAM_NAMES:
        assert same_bits(getattr(back, name), getattr(params, name)), name


def test_the_layout_is_mlxs_own():
    params = kit.random_params(0)
    model = port_module.build_mlp(port_module.params_to_arrays(params))
    assert all(isinstance(layer, nn.Linear) for layer in (model.fc1, model.fc2))
    flat = dict(nn.utils.tree_flatten(model.parameters()))
    assert tuple(flat) == port_module.STATE_NAMES  # MLX's own names, in canonical order
    assert flat["fc1.weight"].shape == (FEATURES, DIM)  # (out, in)
    # nn.Linear computes x @ weight.T + bias: the canonical x @ w1 + b1.
    h = np.array(model.fc1(mx.array(X)))
    np.testing.assert_allclose(h, X @ params.w1 + params.b1, rtol=1e-6, atol=1e-6)


def test_wrong_shapes_are_refused():
    state = port_module.params_to_arrays(kit.random_params(1))
    for name, bad in [("fc1.bias", mx.zeros((3,))), ("fc2.weight", mx.zeros((4, 3)))]:
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            port_module.arrays_to_params({**state, name: bad})


def test_building_a_layer_leaves_mlxs_random_stream_alone():
    # nn.Linear.__init__ draws from MLX's global key; the port's layers do not.
    before = np.array(mx.random.state[0])
    port_module.build_mlp(port_module.params_to_arrays(kit.random_params(2)))
    assert np.array_equal(np.array(mx.random.state[0]), before)
    nn.Linear(2, 2)
    assert not np.array_equal(np.array(mx.random.state[0]), before)


# ---------------------------------------------------------------------------
# The checkpoint in MLX's graph, and MLX's allocator
# ---------------------------------------------------------------------------


def test_the_gradient_graph_holds_the_checkpoint_only_when_on():
    # Read straight off the DOT text (not through the port's instrument): a
    # checkpoint is a CustomTransforms primitive, and its backward a Depends.
    state = port_module.params_to_arrays(kit.random_params(4))
    for checkpoint in (True, False):
        model = port_module.build_mlp(state, checkpoint=checkpoint)
        grad = mx.grad(lambda x, model=model: mx.sum(model(x)))(mx.array(X))
        text = _dot(grad)
        assert ('label ="CustomTransforms"' in text) is checkpoint
        assert ('label ="Depends"' in text) is checkpoint
    grad = mx.grad(lambda x: mx.sum(port_module.nn_checkpoint_forward(5, x, FEATURES)))
    assert 'label ="CustomTransforms"' in _dot(grad(mx.array(X)))


def test_the_graph_instrument_reads_what_mlx_keeps_and_reruns():
    # By hand, from MLX's VJPs: without the checkpoint the backward pass reads x
    # (dW1), the pre-activation (Maximum's VJP compares its input with 0) and
    # relu's output (dW2). With it, the region's inputs; its backward reruns
    # AddMM and Maximum for the parameter gradients, and only AddMM (relu's
    # mask) for x's gradient alone: the rest of the rerun is never needed.
    on, off = kit.records_on_and_off(PORT)  # on keeps x and the parameters (the kit's test)
    exercise = PORT.exercise_record(3, X, FEATURES)
    assert (on.recomputed, on.checkpoint_regions) == ({"AddMM": 1, "Maximum": 1}, 1)
    activations = off.saved_by_origin("activation")
    assert sorted(t.note.rsplit("named ", 1)[-1] for t in activations) == ["'fc1'", "'relu'"]
    assert all((t.shape, t.dtype) == ((FEATURES,), "float32") for t in activations)
    assert (off.recomputed, off.checkpoint_regions) == ({}, 0)
    assert (exercise.recomputed, exercise.checkpoint_regions) == ({"AddMM": 1}, 1)
    assert [t.origin for t in exercise.kept] == ["input"]
    assert on.saved_bytes == X.nbytes < off.saved_bytes == X.nbytes + 2 * FEATURES * 4


def test_the_graph_instrument_reads_a_deep_checkpointed_stack():
    # 32 checkpointed blocks, each using its input thrice (max(x * x, 0.1) + x): the
    # graph's arrays are shared all the way down. Every block keeps its input
    # and reruns its multiply, which maximum's VJP reads.
    from implementations.stacks.mlx import backward_record

    block = mx.checkpoint(lambda x: mx.maximum(x * x, 0.1) + x)

    def stack(x):
        for _ in range(32):
            x = block(x)
        return x

    x = mx.array(np.linspace(-0.5, 0.5, 4, dtype=np.float32))
    record = backward_record(stack, {"x": x}, {"x": "input"}, mx.ones((4,)))
    assert record.checkpoint_regions == 32
    assert record.recomputed == {"Multiply": 32}


def test_mlxs_allocator_sees_the_checkpoint():
    # MLX's own counter, between the passes: evaluate the output of mx.vjp,
    # drop it, and see what the pending backward pass holds. Without the
    # checkpoint: the hidden layer's pre-activation (relu's VJP reads it) and
    # relu's output (for dW2), F floats each. With it: only the block's output,
    # which mx.checkpoint's Depends holds so that the recomputation runs after it.
    features = 1024  # 4 KiB per activation: far above the allocator's few stray bytes
    params = canonical_params(0, 8, features)
    held = {}
    for checkpoint in (True, False):
        primals = [*port_module.params_to_arrays(params).values(), mx.array(np.ones(8, np.float32))]
        mx.eval(primals)
        before = mx.get_active_memory()
        run = port_module._call(checkpoint)
        outputs, grads = mx.vjp(lambda *a, run=run: [run(*a)], primals, [mx.ones((features,))])
        mx.eval(outputs)
        del outputs
        held[checkpoint] = mx.get_active_memory() - before
        mx.eval(grads)
        del grads  # before the next measurement starts
    unit = features * 4
    assert abs(held[False] - 2 * unit) <= 64
    assert abs(held[True] - unit) <= 64


def test_export_function_cannot_serialise_a_checkpoint(tmp_path):
    # Why the instrument reads the DOT export: mx.export_function, which keeps
    # shapes, refuses the checkpoint's primitive (it holds C++ callbacks).
    run = port_module._call(True)
    primals = [*port_module.params_to_arrays(kit.random_params(6)).values(), mx.array(X)]

    def backward(*primals):
        return mx.vjp(lambda *a: [run(*a)], list(primals), [mx.ones((FEATURES,))])[1]

    with pytest.raises(ValueError, match="CustomTransforms"):
        mx.export_function(str(tmp_path / "backward.mlxfn"), backward, *primals)


def test_mx_checkpoint_closing_over_the_parameters_loses_their_gradients():
    # The pitfall nn.utils.checkpoint exists for: mx.checkpoint differentiates
    # with respect to its arguments only, so parameters it closes over get a
    # zero gradient, silently. The port checkpoints the module's parameters too.
    model = port_module.build_mlp(port_module.params_to_arrays(kit.random_params(7)))

    def loss(params, wrap):
        model.update(params)
        return mx.sum(wrap(model.block)(mx.array(X)))

    params = model.trainable_parameters()
    plain = dict(nn.utils.tree_flatten(mx.grad(lambda p: loss(p, lambda f: f))(params)))
    closed = dict(nn.utils.tree_flatten(mx.grad(lambda p: loss(p, mx.checkpoint))(params)))
    ported = dict(
        nn.utils.tree_flatten(
            mx.grad(lambda p: loss(p, lambda f: nn.utils.checkpoint(model, f)))(params)
        )
    )
    assert np.abs(np.array(plain["fc1.weight"])).sum() > 0
    assert not np.array(closed["fc1.weight"]).any()
    for name, value in plain.items():
        np.testing.assert_allclose(np.array(ported[name]), np.array(value), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------
# The exercise: MLX arrays, numpy and lists in; an mx.array out; x untouched
# ---------------------------------------------------------------------------


def test_lists_numpy_and_mlx_arrays_give_the_same_output():
    expected = port_module.nn_checkpoint_forward(4, X, FEATURES)
    assert isinstance(expected, mx.array)
    assert (expected.dtype, expected.shape) == (mx.float32, (FEATURES,))
    for form in (
        X.tolist(),
        X.astype(np.float64),
        mx.array(X),
        mx.array(X.astype(np.float64), dtype=mx.float64),
        mx.array(X).astype(mx.float16).astype(mx.float32),  # exactly representable: same
    ):
        assert same_bits(
            np.array(port_module.nn_checkpoint_forward(4, form, FEATURES)), np.array(expected)
        )
    kit.assert_exercise_output(expected)


def test_low_precision_and_integer_mlx_x_are_converted():
    half = port_module.nn_checkpoint_forward(1, mx.array([0.5, -1.5], dtype=mx.bfloat16), 2)
    assert same_bits(np.array(half), np.array(port_module.nn_checkpoint_forward(1, [0.5, -1.5], 2)))
    ints = port_module.nn_checkpoint_forward(1, mx.array([1, -2, 3]), 2)
    assert same_bits(
        np.array(ints), np.array(port_module.nn_checkpoint_forward(1, [1.0, -2.0, 3.0], 2))
    )
    with pytest.raises(ValueError, match=r"\bx\b"):  # float64 beyond float32's range
        port_module.nn_checkpoint_forward(1, mx.array([1e39, 0.0], dtype=mx.float64), 2)


def test_mlx_x_is_never_modified():
    x = mx.array(X)
    port_module.nn_checkpoint_forward(0, x, FEATURES)
    mx.grad(lambda v: mx.sum(port_module.nn_checkpoint_forward(0, v, FEATURES)))(x)
    assert same_bits(np.array(x), X)
    assert x.dtype == mx.float32


def test_gradients_flow_to_x_under_mx_grad():
    dx = mx.grad(lambda v: mx.sum(port_module.nn_checkpoint_forward(7, v, FEATURES) * mx.array(G)))(
        mx.array(X)
    )
    kit.assert_x_gradient(dx)


def test_vmap_over_x_checks_shape_and_dtype_only():
    xs = np.random.default_rng(3).standard_normal((5, DIM)).astype(np.float32)
    ys = mx.vmap(lambda x: port_module.nn_checkpoint_forward(9, x, FEATURES))(mx.array(xs))
    assert ys.shape == (5, FEATURES)
    for x, y in zip(xs, np.array(ys), strict=True):
        np.testing.assert_allclose(
            y, np.array(port_module.nn_checkpoint_forward(9, x, FEATURES)), atol=1e-6
        )
    with pytest.raises(TypeError, match=r"\bx\b"):
        mx.vmap(lambda x: port_module.nn_checkpoint_forward(9, x, FEATURES))(
            mx.zeros((2, 3), dtype=mx.bool_)
        )


def test_nothing_is_compiled(monkeypatch):
    # A warm call with a new seed has nothing to recompile: the port never
    # calls mx.compile (MLX runs the small graph as it is).
    def refuse(*args, **kwargs):
        raise AssertionError("mx.compile called")

    monkeypatch.setattr(mx, "compile", refuse)
    for seed in (0, 1, 2**40):
        np.array(port_module.nn_checkpoint_forward(seed, X, FEATURES))
    PORT.vjp(kit.random_params(8), X, np.ones(FEATURES, np.float32))
    PORT.backward_record(kit.random_params(8), X)


def test_from_numpy_keeps_the_dtype_and_to_numpy_copies():
    for array in kit.ODD_ARRAYS:  # float64 among them: mx.array alone would make it float32 inf
        native = PORT.from_numpy(array)
        assert str(native.dtype).rsplit(".", 1)[-1].rstrip("_") == array.dtype.name
        assert same_bits(PORT.to_numpy(native), array)
    bf16 = PORT.to_numpy(mx.array([1.5], dtype=mx.bfloat16))
    assert (bf16.dtype, bf16.tolist()) == (np.float32, [1.5])


def test_pin_matmul_precision_sets_mlxs_switch(monkeypatch):
    monkeypatch.delenv("MLX_ENABLE_TF32", raising=False)
    found = PORT.matmul_precision()
    assert found["default"].startswith("MLX_ENABLE_TF32=1")
    assert found["current"] == "MLX_ENABLE_TF32=1"
    PORT.pin_matmul_precision()
    assert os.environ["MLX_ENABLE_TF32"] == "0"
    assert PORT.matmul_precision()["current"] == found["pinned"] == "MLX_ENABLE_TF32=0"
