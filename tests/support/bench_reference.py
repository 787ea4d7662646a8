"""The bench stack's gradients by hand, in float64 numpy: the expected values of the engines'
bench tests (`tests/paddle`, `tests/mindspore`, `tests/deepspeed`), computed by no framework."""

from __future__ import annotations

import numpy as np

from conformance.benchmark import measure


def stack_grads(data: measure.Data) -> list[np.ndarray]:
    """The parameters' gradient of sum(y * c) for the L blocks `relu(x @ W1 + b1) @ W2 + b2`,
    flat `[dW1, db1, dW2, db2] * L`, kernels `(in, out)`."""
    blocks = [[np.asarray(a, np.float64) for a in b] for b in data.blocks]
    x, inputs, hidden = np.asarray(data.x, np.float64), [], []
    for w1, b1, w2, b2 in blocks:
        inputs.append(x)
        hidden.append(x @ w1 + b1)
        x = np.maximum(hidden[-1], 0) @ w2 + b2
    dy, grads = np.asarray(data.cotangent, np.float64), []
    for (w1, _, w2, _), x, h in reversed(list(zip(blocks, inputs, hidden, strict=True))):
        a = np.maximum(h, 0)
        dh = (dy @ w2.T) * (h > 0)
        grads = [x.T @ dh, dh.sum(0), a.T @ dy, dy.sum(0), *grads]
        dy = dh @ w1.T
    return grads


def assert_grads_match(found, data: measure.Data) -> None:
    """`found` (float32 arrays, flat as `stack_grads`) within float32 rounding of the reference."""
    expected = stack_grads(data)
    assert len(found) == len(expected)
    for i, (a, b) in enumerate(zip(found, expected, strict=True)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5, err_msg=f"grad {i}")


# The engines' bench tests run the same small stack: B != F, so that a shape tells an
# activation (B, F) from a weight (F, F); a "unit" is one (B, F) float32 array, and the
# analytic minimum is L units (the block inputs).
B, F = 4, 8
UNIT = B * F * 4


def small_data(depth: int) -> measure.Data:
    """The engines' bench tests' data at `depth` blocks."""
    return measure.make_data(measure.Settings(depths=(depth,), batch=B, features=F), depth)


def kept_activations(case, units: int) -> list:
    """The inputs and activations a bench case keeps, checked: `units` (B, F) arrays, block 0's
    input among them once."""
    kept = [t for t in case.residuals() if t.origin in ("input", "activation")]
    assert (len(kept), sum(t.nbytes for t in kept)) == (units, units * UNIT), kept
    assert all(t.shape == (B, F) for t in kept)
    assert [t.origin for t in kept].count("input") == 1  # x: block 0's input
    return kept
