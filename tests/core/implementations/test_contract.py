"""The numpy-only contract: validation, the parameter layout, the evidence records."""

from __future__ import annotations

import math

import numpy as np
import pytest

from implementations.contract import (
    BAD_INPUTS,
    BackwardRecord,
    Grads,
    Params,
    SavedTensor,
    check_features,
    check_seed,
    check_sizes,
    check_x,
    dtype_category,
    param_shapes,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (7, 7),
        (7.0, 7),
        (np.int64(9), 9),
        (np.float32(9.0), 9),
        (np.array(4), 4),
        (2**40, 2**40),
        (float(2**62), 2**62),
        (np.uint64(2**63 - 1), 2**63 - 1),
    ],
)
def test_seed_accepts_integer_valued_scalars(value, expected):
    result = check_seed(value)
    assert result == expected
    assert type(result) is int


def _checked_call(bad):
    """The contract's checks in a port's order, on the entry's arguments and byte budget."""
    seed, features = check_seed(bad.seed), check_features(bad.features)
    x = check_x(bad.x(np.asarray))
    check_sizes(x.shape[0], features)
    return seed, x, features


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=lambda b: b.label)
def test_catalogue_raises_naming_the_argument(bad, monkeypatch):
    if bad.max_bytes is not None:
        monkeypatch.setenv("REMAT_MAX_BYTES", str(bad.max_bytes))
    with pytest.raises(bad.error, match=rf"\b{bad.argument}\b"):
        _checked_call(bad)


# The entries that fail on seed or features alone: all but the byte budget's.
SCALAR_ONLY = [b for b in BAD_INPUTS if b.argument != "x" and b.max_bytes is None]


@pytest.mark.parametrize("bad", SCALAR_ONLY, ids=lambda b: b.label)
def test_scalar_catalogue_fails_in_the_scalar_checks(bad):
    check = check_seed if bad.argument == "seed" else check_features
    value = bad.seed if bad.argument == "seed" else bad.features
    with pytest.raises(bad.error, match=bad.argument):
        check(value)


def test_features_must_be_positive():
    assert check_features(1) == 1
    assert check_features(3.0) == 3
    with pytest.raises(ValueError, match="features"):
        check_features(0)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        ([1, 2, 3], [1.0, 2.0, 3.0]),
        (np.array([1, -2], np.int8), [1.0, -2.0]),
        (np.array([0.1, 1e30]), [np.float32(0.1), np.float32(1e30)]),
        (np.array([1.5], np.float16), [1.5]),
        ((0.0, -0.0), [0.0, -0.0]),
    ],
)
def test_x_is_converted_to_a_float32_copy(x, expected):
    out = check_x(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array(expected, np.float32))
    if isinstance(x, np.ndarray):
        assert not np.shares_memory(out, x)


def test_x_float32_input_is_still_copied():
    x = np.array([1.0, 2.0], np.float32)
    out = check_x(x)
    out[0] = 99.0
    assert x[0] == 1.0


@pytest.mark.parametrize(
    ("dtype", "category"),
    [
        ("float32", "float"),
        ("float16", "float"),
        ("bfloat16", "float"),
        ("torch.bfloat16", "float"),
        ("float8_e4m3fn", "float"),
        ("int64", "int"),
        ("uint8", "int"),
        ("int4", "int"),
        ("bool", "bool"),
        ("torch.bool", "bool"),
        ("complex64", "complex"),
        ("object", "other"),
        ("<U3", "other"),
        ("torch.float32", "float"),
        ("torch.complex64", "complex"),
    ],
)
def test_dtype_categories(dtype, category):
    assert dtype_category(dtype) == category


def test_params_are_float32_read_only_copies():
    w1 = np.ones((2, 3))
    params = Params(w1=w1, b1=np.zeros(3), w2=np.ones((3, 3)), b2=np.zeros(3))
    assert params.dim == 2
    assert params.features == 3
    assert all(p.dtype == np.float32 for p in params.as_dict().values())
    assert not params.w1.flags.writeable
    w1[0, 0] = 5.0
    assert params.w1[0, 0] == 1.0
    assert {k: v.shape for k, v in params.as_dict().items()} == param_shapes(2, 3)


def test_params_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match="w2"):
        Params(w1=np.ones((2, 3)), b1=np.zeros(3), w2=np.ones((2, 3)), b2=np.zeros(3))
    with pytest.raises(ValueError, match="w1"):
        Params(w1=np.ones(3), b1=np.zeros(3), w2=np.ones((3, 3)), b2=np.zeros(3))


def test_grads_names():
    grads = Grads(
        w1=np.ones((2, 3)), b1=np.ones(3), w2=np.ones((3, 3)), b2=np.ones(3), x=np.ones(2)
    )
    assert list(grads.as_dict()) == ["w1", "b1", "w2", "b2", "x"]


def test_backward_record_counts_bytes_without_parameters():
    record = BackwardRecord(
        instrument="hand",
        saved=(
            SavedTensor((4, 3), "float32", "parameter"),
            SavedTensor((3,), "float32", "input"),
            SavedTensor((4,), "bool", "activation"),
            SavedTensor((2, 2), "torch.float32", "activation"),
        ),
        recomputed={"dot_general": 2, "add": 1},
    )
    assert record.saved_bytes == 3 * 4 + 4 * 1 + 4 * 4
    assert record.recomputed_count == 3
    assert len(record.saved_by_origin("activation")) == 2
    with pytest.raises(ValueError, match="origin"):
        SavedTensor((1,), "float32", "weights")


def test_seed_limit_is_2_to_the_63_minus_1():
    assert check_seed(2**63 - 1) == 2**63 - 1
    assert math.log2(2**63) == 63
    with pytest.raises(ValueError, match="seed"):
        check_seed(2**63)
