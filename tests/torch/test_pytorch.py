"""The PyTorch port: its layout converters, checkpoint behaviour, evidence and inputs.

Expected values come from a float64 numpy MLP (`tests.support.reference`) under the
project's error bounds, from Flax where it is installed, or from the
checkpoint-free torch module. The cross-framework properties run in the
conformance suite; these tests cover what is particular to torch.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conformance.checking.tolerance import analyse_forward, vjp_bounds  # noqa: E402
from implementations.contract import Params  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from implementations.stacks.torch import pytorch  # noqa: E402
from tests.support import reference  # noqa: E402

PORT = pytorch.PyTorch()
SHAPES = [(1, 1), (3, 4), (16, 16), (7, 33)]
NAMES = ("w1", "b1", "w2", "b2")


def _x(seed: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


def _random_params(seed: int, dim: int, features: int) -> Params:
    return reference.random_params(np.random.default_rng(seed), dim, features)


# ---------------------------------------------------------------------------
# Layout converters
# ---------------------------------------------------------------------------


@given(
    dim=st.integers(1, 9),
    features=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_params_round_trip_through_the_torch_layout(dim, features, seed):
    params = _random_params(seed, dim, features)
    state = pytorch.params_to_state(params)
    assert state["fc1.weight"].shape == (features, dim)  # Linear.weight is (out, in)
    assert state["fc2.weight"].shape == (features, features)
    np.testing.assert_array_equal(state["fc1.weight"].numpy(), params.w1.T)
    np.testing.assert_array_equal(state["fc2.weight"].numpy(), params.w2.T)
    back = pytorch.state_to_params(state)
    for name in NAMES:
        np.testing.assert_array_equal(getattr(back, name), getattr(params, name))


def test_module_state_round_trips_and_does_not_share_memory():
    params = _random_params(0, 3, 5)
    model = pytorch.build_mlp(params)
    assert all(isinstance(layer, torch.nn.Linear) for layer in (model.fc1, model.fc2))
    assert (model.fc1.in_features, model.fc1.out_features) == (3, 5)
    assert set(model.state_dict()) == set(pytorch.STATE_NAMES)
    again = pytorch.state_to_params(model.state_dict())
    for name in NAMES:
        np.testing.assert_array_equal(getattr(again, name), getattr(params, name))
    with torch.no_grad():
        model.fc1.weight.add_(1.0)
    np.testing.assert_array_equal(
        pytorch.state_to_params(pytorch.params_to_state(params)).w1, params.w1
    )


def test_state_with_wrong_shapes_is_refused():
    state = pytorch.params_to_state(_random_params(0, 3, 5))
    for name, bad in [("fc1.bias", torch.zeros(4)), ("fc2.weight", torch.zeros(5, 3))]:
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            pytorch.state_to_params({**state, name: bad})


# ---------------------------------------------------------------------------
# Init and forward
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dim", "features"), SHAPES)
def test_init_is_the_canonical_init_through_the_module(dim, features):
    ours = PORT.init_params(2**32 + 9, dim, features)
    expected = canonical_params(9, dim, features)
    for name in NAMES:
        np.testing.assert_array_equal(getattr(ours, name), getattr(expected, name))


@pytest.mark.parametrize(("dim", "features"), SHAPES)
@pytest.mark.parametrize("checkpoint", [True, False])
def test_forward_is_within_the_error_bound_of_exact(dim, features, checkpoint):
    params, x = _random_params(1, dim, features), _x(2, dim)
    out = PORT.forward(params, x, checkpoint=checkpoint)
    assert (out.shape, out.dtype) == ((features,), np.float32)
    error = np.abs(out.astype(np.float64) - reference.forward(params, x))
    assert np.all(error <= analyse_forward(params, x).e2)


# ---------------------------------------------------------------------------
# Evidence of checkpointing
# ---------------------------------------------------------------------------


def test_the_torch_instrument_reads_inputs_activations_and_recomputed_ops():
    params, x = _random_params(8, 6, 5), _x(9, 6)
    on = PORT.backward_record(params, x, checkpoint=True)
    off = PORT.backward_record(params, x, checkpoint=False)
    exercise = PORT.exercise_record(3, x, 5)
    for record in (on, exercise):
        assert record.recomputed.get("aten.addmm", 0) >= 1
        assert record.recomputed.get("aten.relu", 0) >= 1
        assert record.saved_by_origin("activation") == ()
        assert [t.origin for t in record.saved] == ["input"]
        assert record.checkpoint_regions == 1
    assert off.recomputed == {}
    assert off.checkpoint_regions == 0
    (activation,) = off.saved_by_origin("activation")  # the relu output, (F,)
    assert activation.shape == (5,)
    assert len(off.saved_by_origin("parameter")) == 2  # the two weights
    assert on.saved_bytes < off.saved_bytes


@pytest.mark.parametrize("dim", [1, 3])
def test_an_activation_equal_to_x_is_an_activation_not_a_copy_of_x(dim):
    # The thorough hunt's find: w1, b1 and x all zero make h = relu(x @ w1 + b1) equal x by
    # value. The instrument read h and a as copies of x, so the plain VJP "saved no
    # activation" and (e) failed a correct port.
    zeros = np.zeros((dim, dim), np.float32)
    params = Params(zeros, zeros[0], np.full((dim, dim), 2.0, np.float32), zeros[0] + 3)
    off = PORT.backward_record(params, zeros[0], checkpoint=False)
    (activation,) = off.saved_by_origin("activation")
    assert (activation.shape, activation.role) == ((dim,), "a")
    on = PORT.backward_record(params, zeros[0], checkpoint=True)
    assert on.saved_by_origin("activation") == ()


def test_without_grad_the_checkpoint_may_be_skipped_and_the_values_agree():
    x = torch.tensor(_x(17, 5))
    with_grad = pytorch.nn_checkpoint_forward(2, x, 4)
    with torch.no_grad():
        without = pytorch.nn_checkpoint_forward(2, x, 4)
    assert without.grad_fn is None
    torch.testing.assert_close(without, with_grad.detach(), rtol=0, atol=0)


def test_nothing_warns():
    params, x = _random_params(10, 4, 3), _x(11, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pytorch.nn_checkpoint_forward(0, torch.tensor(x, requires_grad=True), 3).sum().backward()
        PORT.forward(params, x)
        PORT.vjp(params, x, np.ones(3, np.float32))
        PORT.backward_record(params, x)
        PORT.exercise_record(0, x, 3)
        PORT.init_params(0, 4, 3)


# ---------------------------------------------------------------------------
# The exercise's inputs
# ---------------------------------------------------------------------------


def test_lists_numpy_and_tensors_give_the_same_output():
    x = _x(12, 5)
    expected = pytorch.nn_checkpoint_forward(4, x, 3)
    assert (expected.dtype, expected.shape, expected.device.type) == (torch.float32, (3,), "cpu")
    for form in (
        x.tolist(),
        x.astype(np.float64),
        torch.tensor(x),
        torch.tensor(x, dtype=torch.float64),
    ):
        torch.testing.assert_close(
            pytorch.nn_checkpoint_forward(4, form, 3), expected, rtol=0, atol=0
        )
    np.testing.assert_allclose(
        expected.detach().numpy(),
        reference.forward(canonical_params(4, 5, 3), x),
        rtol=0,
        atol=1e-5,
    )


def test_integer_and_low_precision_x_are_converted():
    out = pytorch.nn_checkpoint_forward(1, torch.tensor([1, -2, 3]), 2)
    expected = pytorch.nn_checkpoint_forward(1, [1.0, -2.0, 3.0], 2)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    half = torch.tensor([0.5, -1.5], dtype=torch.bfloat16)
    torch.testing.assert_close(
        pytorch.nn_checkpoint_forward(1, half, 2), pytorch.nn_checkpoint_forward(1, [0.5, -1.5], 2)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_tensor_x_is_never_modified(dtype, requires_grad):
    x = torch.tensor([0.5, -1.25, 3.0, 0.0], dtype=dtype, requires_grad=requires_grad)
    before, version = x.detach().clone(), x._version  # any in-place op bumps the version
    out = pytorch.nn_checkpoint_forward(0, x, 3)
    if requires_grad:
        out.sum().backward()
    assert x._version == version
    torch.testing.assert_close(x.detach(), before, rtol=0, atol=0)
    assert (x.dtype, x.requires_grad) == (dtype, requires_grad)


@pytest.mark.parametrize("make", [np.float32, np.float64, np.int32, list])
def test_numpy_and_list_x_are_never_modified(make):
    source = [0.5, -1.25, 3.0, 0.0] if make is not np.int32 else [1, -2, 3, 0]
    x = list(source) if make is list else np.array(source, dtype=make)
    pytorch.nn_checkpoint_forward(0, x, 3)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(source, dtype=np.asarray(x).dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_flow_to_x(dtype):
    x_values = _x(13, 6)
    x = torch.tensor(x_values, dtype=dtype, requires_grad=True)
    out = pytorch.nn_checkpoint_forward(7, x, 4)
    assert out.requires_grad
    cotangent = _x(14, 4)
    out.backward(torch.tensor(cotangent))
    assert x.grad is not None
    assert x.grad.dtype == dtype
    params = canonical_params(7, 6, 4)
    expected = reference.vjp(params, x_values, cotangent)["x"]
    bound = vjp_bounds(params, x_values, cotangent)["x"] / 2
    assert np.all(np.abs(x.grad.numpy() - expected) <= bound + 1e-7)


def test_seed_and_features_may_be_floats_numpy_or_0d_tensors():
    x = _x(15, 3)
    expected = pytorch.nn_checkpoint_forward(3, x, 2)
    for seed, features in [
        (3.0, 2.0),
        (np.int64(3), np.float32(2)),
        (torch.tensor(3), torch.tensor(2.0)),
    ]:
        torch.testing.assert_close(pytorch.nn_checkpoint_forward(seed, x, features), expected)
    torch.testing.assert_close(pytorch.nn_checkpoint_forward(2**32 + 3, x, 2), expected)


def test_from_numpy_keeps_the_dtype_and_to_numpy_detaches():
    for array in [
        np.array([True, False]),
        np.array([1 + 2j], np.complex64),
        np.arange(3, dtype=np.int16),
    ]:
        tensor = PORT.from_numpy(array)
        assert str(tensor.dtype).endswith(array.dtype.name)
        np.testing.assert_array_equal(PORT.to_numpy(tensor), array)
    read_only = np.ones(2, np.float32)
    read_only.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PORT.from_numpy(read_only)
    out = PORT.to_numpy(torch.ones(2, requires_grad=True) * 2)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float32


def test_pin_matmul_precision():
    PORT.pin_matmul_precision()
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.cuda.matmul.allow_tf32 is False


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_output_stays_on_the_device_of_x():
    x = torch.tensor(_x(16, 4), device="cuda")
    out = pytorch.nn_checkpoint_forward(0, x, 3)
    assert out.device == x.device
    torch.testing.assert_close(out.cpu(), pytorch.nn_checkpoint_forward(0, x.cpu(), 3))
