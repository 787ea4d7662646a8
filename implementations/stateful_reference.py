"""The stateful block in numpy (float64), for a given mask: what property (l) holds ports to.

`step(params, x, mask, rate, cotangent)` computes the block's output, the VJP of
`<y, cotangent>` and the batch statistics, for the mask the port drew: the expected value
of (l.1) is this, never the port's own VJP. `bounds(...)` is its forward error analysis in
the standard model of float32 arithmetic (as `conformance.checking.tolerance` does for the
MLP): every float32 port's result lies within it of this exact one. `running(...)` is the
canonical's update of the running statistics, in any momentum convention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .stateful import CANONICAL_MOMENTUM, EPSILON, Momentum

U = 2.0**-24  # float32 unit roundoff
TINY = 2.0**-126  # one flushed subnormal
#: First-order error analysis drops products of errors; this factor covers them (each error
#: is below 1e-3 of its value on the suite's inputs, so the dropped terms are below 0.1%).
SECOND_ORDER = 2.0


def _gamma(n: int) -> float:
    return n * U / (1 - n * U)


@dataclass(frozen=True)
class Step:
    """The block's results for one mask: `y`, `grads` (`STATE_GRAD_NAMES`), the batch mean
    and biased variance, and the intermediates the error analysis reads."""

    y: np.ndarray
    grads: dict[str, np.ndarray]
    mean: np.ndarray
    var: np.ndarray
    parts: dict[str, np.ndarray]


def step(
    params: Mapping[str, np.ndarray], x: np.ndarray, mask: np.ndarray, rate: float,
    cotangent: np.ndarray,
) -> Step:  # fmt: skip
    """The block's forward and VJP in float64, for `mask` ((B, F) bool, True: kept)."""
    w1, b1, gamma, beta, w2, b2 = (
        np.asarray(params[n], np.float64) for n in ("w1", "b1", "gamma", "beta", "w2", "b2")
    )
    x, g, m = np.asarray(x, np.float64), np.asarray(cotangent, np.float64), np.asarray(mask)
    scale = 1.0 / (1.0 - rate)
    h = x @ w1 + b1
    mean = h.mean(0)
    c = h - mean
    var = (c * c).mean(0)
    inv = 1.0 / np.sqrt(var + EPSILON)
    n = c * inv
    z = n * gamma + beta
    a = np.maximum(z, 0.0)
    d = np.where(m, a * scale, 0.0)
    y = d @ w2 + b2
    gd = g @ w2.T
    ga = np.where(m, gd * scale, 0.0)
    gz = ga * (z > 0)
    gn = gz * gamma
    t = gn - gn.mean(0) - n * (gn * n).mean(0)
    gh = inv * t
    grads = {
        "w1": x.T @ gh, "b1": gh.sum(0), "gamma": (gz * n).sum(0), "beta": gz.sum(0),
        "w2": d.T @ g, "b2": g.sum(0), "x": gh @ w1.T,
    }  # fmt: skip
    parts = {"h": h, "c": c, "inv": inv, "n": n, "z": z, "d": d, "gd": gd, "ga": ga, "gz": gz,
             "gn": gn, "t": t, "gh": gh}  # fmt: skip
    return Step(y, grads, mean, var, parts)


def bounds(
    params: Mapping[str, np.ndarray], x: np.ndarray, mask: np.ndarray, rate: float,
    cotangent: np.ndarray, result: Step,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Per-element bounds on a float32 port's error, by name: "y", "mean", "var" and each
    gradient's. Each operation adds its rounding (`U` times its magnitude, `gamma_n` for a
    sum of n terms) to the errors it carries; where the exact `z` lies within its error of
    relu's kink, either side is accepted (the bound grows by the jump)."""
    p = {k: np.abs(np.asarray(v, np.float64)) for k, v in params.items()}
    ax, ag, m = np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(cotangent, np.float64)), mask
    r = {k: np.abs(v) for k, v in result.parts.items()}
    batch, dim = ax.shape
    features = p["w2"].shape[0]
    scale = 1.0 / (1.0 - rate)
    inv = r["inv"]
    e_h = _gamma(dim + 1) * (ax @ p["w1"] + p["b1"])
    e_mean = e_h.mean(0) + _gamma(batch) * r["h"].mean(0)
    e_c = e_h + e_mean + U * r["c"]
    e_var = (2 * r["c"] * e_c).mean(0) + _gamma(batch + 1) * (r["c"] ** 2).mean(0)
    e_inv = 0.5 * inv**3 * e_var + 3 * U * inv
    e_n = e_c * inv + r["c"] * e_inv + U * r["n"]
    e_z = p["gamma"] * e_n + 2 * U * (r["n"] * p["gamma"] + p["beta"])
    e_d = np.where(m, scale * e_z + 2 * U * r["d"], 0.0)
    e_y = e_d @ p["w2"] + _gamma(features + 1) * (r["d"] @ p["w2"] + p["b2"])
    e_gd = _gamma(features) * (ag @ p["w2"].T)
    e_ga = np.where(m, scale * e_gd + 2 * U * r["ga"], 0.0)
    kink = np.abs(result.parts["z"]) <= e_z
    e_gz = np.where(result.parts["z"] > 0, e_ga, 0.0)
    e_gz = np.where(kink, r["ga"] + e_ga, e_gz)
    e_gn = p["gamma"] * e_gz + U * r["gn"]
    mg, mp = (
        np.abs(result.parts["gn"].mean(0)),
        np.abs((result.parts["gn"] * result.parts["n"]).mean(0)),
    )
    e_mg = e_gn.mean(0) + _gamma(batch) * r["gn"].mean(0)
    e_mp = (e_gn * r["n"] + r["gn"] * e_n).mean(0) + _gamma(batch + 1) * (r["gn"] * r["n"]).mean(0)
    e_t = e_gn + e_mg + e_n * mp + r["n"] * e_mp + 3 * U * (r["gn"] + mg + r["n"] * mp)
    e_gh = e_inv * r["t"] + inv * e_t + U * r["gh"]
    found = {
        "y": e_y,
        "mean": e_mean,
        "var": e_var,
        "w1": ax.T @ e_gh + _gamma(batch) * (ax.T @ r["gh"]),
        "b1": e_gh.sum(0) + _gamma(batch) * r["gh"].sum(0),
        "gamma": (e_gz * r["n"] + r["gz"] * e_n).sum(0) + _gamma(batch) * (r["gz"] * r["n"]).sum(0),
        "beta": e_gz.sum(0) + _gamma(batch) * r["gz"].sum(0),
        "w2": e_d.T @ ag + _gamma(batch) * (r["d"].T @ ag),
        "b2": _gamma(batch) * ag.sum(0),
        "x": e_gh @ p["w1"].T + _gamma(features) * (r["gh"] @ p["w1"].T),
    }
    return {k: SECOND_ORDER * v + 8 * TINY for k, v in found.items()}


def running(
    mean: np.ndarray, var: np.ndarray, batch: int, updates: int = 1,
    momentum: Momentum = CANONICAL_MOMENTUM, variance: str = "biased", var_start: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The running mean and variance after `updates` updates from zeros and `var_start` with
    the batch's `mean` and biased `var`, at `momentum` (any convention), the variance taken
    "biased" or "unbiased" (times `batch / (batch - 1)`)."""
    kept = momentum.kept
    batch_var = var * (batch / (batch - 1) if variance == "unbiased" else 1.0)
    run_mean, run_var = np.zeros_like(mean), np.full_like(var, var_start)
    for _ in range(updates):
        run_mean = kept * run_mean + (1 - kept) * mean
        run_var = kept * run_var + (1 - kept) * batch_var
    return run_mean, run_var
