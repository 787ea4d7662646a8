"""Hypothesis strategies for the suite's inputs.

Shapes come from a fixed menu, weighted toward small ones, so that a run
compiles each port's functions for a handful of shapes and then reuses them.
The `thorough` profile widens the menu to every size from 1 to 300.

Values reach the corners that break ports: ±0.0, subnormals, tiny and
huge magnitudes (still finite through both layers), integer-valued floats,
and, for the exercise, every region of the seed range (small, near 2**31,
2**32 ± k, ≥ 2**40, up to 2**63 - 1), as ints and as integral floats.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from hypothesis import strategies as st

from implementations.contract import SEED_MAX, Params

# (D, F) pairs: small first (Hypothesis shrinks toward the first), then a large size people
# actually use. Each new shape
# costs every compiling port a trace and compile (a second for a JAX port, more
# for inductor), so the menu is one shape per way a framework's choices differ:
# the degenerate (1, 1), which compilers specialise; D < F and D > F at small sizes,
# where a compiler may rewrite a small matmul (inductor as it comes does: multiplies and
# a sum); and a width people use. The thorough profile adds more shapes
# (the menu's former (16, 16) and (7, 300) among them) and any size from 1 to 300.
SMALL_SHAPES = [(1, 1), (3, 4), (33, 7)]
LARGE_SHAPES = [(256, 256)]
EXTRA_SHAPES = [(2, 1), (1, 5), (8, 8), (16, 16), (64, 64), (7, 300), (300, 128), (128, 300)]

SEED_ANCHORS = (0, 2**31, 2**32, 2**40, 2**53, 2**62, SEED_MAX)

# Outputs stay finite: |y| <= F * (D * |x| * |W1| + |b1|) * |W2| + |b2|, far
# below float32's 3.4e38 for |x| <= 1e18 and the parameter scales below.
X_MAX = float(np.float32(1e18))
TINY_MIN, TINY_MAX = float(np.float32(1e-30)), float(np.float32(1e-20))
SUBNORMAL_MAX = float(np.finfo(np.float32).tiny)  # 2**-126: below it, subnormal


SCOPES = ("small", "menu", "wide")


def shapes(scope: str = "menu") -> st.SearchStrategy[tuple[int, int]]:
    """(D, F) pairs.

    `scope` is "menu" (the fixed menu), "small" (its small shapes only, for the
    mutation run) or "wide" (more shapes and any sizes up to 300).
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if scope == "small":
        return st.sampled_from(SMALL_SHAPES)
    # One list: Hypothesis shrinks an index toward 0, so a failing large shape shrinks to the
    # smallest failing one.
    menu = st.sampled_from(SMALL_SHAPES + LARGE_SHAPES)
    if scope == "menu":
        return menu
    # Any size costs a compile per shape, so it is drawn one time in ten.
    sizes = st.tuples(st.integers(1, 300), st.integers(1, 300))
    known = st.one_of(menu, st.sampled_from(EXTRA_SHAPES))
    return st.integers(0, 9).flatmap(lambda roll: sizes if roll == 0 else known)


def seeds() -> st.SearchStrategy[int | float]:
    """Seeds from every region of the accepted range, as ints or as integral floats."""
    near_anchor = st.tuples(st.sampled_from(SEED_ANCHORS), st.integers(-3, 3)).map(
        lambda pair: min(max(pair[0] + pair[1], 0), SEED_MAX)
    )
    as_int = st.one_of(
        st.integers(0, 1000), near_anchor, st.integers(2**40, SEED_MAX), st.integers(0, 2**32)
    )

    def maybe_float(seed: int, as_float: bool) -> int | float:
        # Only where the float is the same seed: float(2**63 - 1) is 2**63.
        return float(seed) if as_float and float(seed) == seed else seed

    return st.builds(maybe_float, as_int, st.booleans())


def x_elements() -> st.SearchStrategy[float]:
    """One float32 entry of x, from one of the corners."""
    return st.one_of(
        st.floats(-4.0, 4.0, width=32),
        st.sampled_from([0.0, -0.0]),
        st.integers(-1000, 1000).map(float),
        st.floats(-SUBNORMAL_MAX, SUBNORMAL_MAX, width=32, allow_subnormal=True),
        st.floats(TINY_MIN, TINY_MAX, width=32).flatmap(lambda v: st.sampled_from([v, -v])),
        st.floats(-X_MAX, X_MAX, width=32),
    )


@st.composite
def x_vectors(draw, dim: int) -> np.ndarray:
    """A float32 `(dim,)` x: a base vector, with up to eight entries set to corner values.

    The base comes from a drawn numpy seed (drawing hundreds of floats one by
    one would dominate the run): normal at a drawn scale, integers, zeros, or
    one corner value throughout. Hypothesis shrinks toward zeros.
    """
    kind = draw(st.sampled_from(["zeros", "normal", "integers", "constant"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "zeros":
        x = np.zeros(dim)
    elif kind == "normal":
        scale = draw(st.sampled_from([1.0, 1e-3, 1e3, 1e-25, 1e15]))
        x = scale * rng.normal(size=dim)
    elif kind == "integers":
        x = rng.integers(-1000, 1001, dim).astype(np.float64)
    else:
        x = np.full(dim, draw(x_elements()))
    x = x.astype(np.float32)
    for index, value in draw(
        st.lists(st.tuples(st.integers(0, dim - 1), x_elements()), max_size=8)
    ):
        x[index] = value
    return x


@st.composite
def cotangents(draw, features: int) -> np.ndarray:
    """A float32 `(F,)` cotangent for a VJP: normal at a drawn scale, some entries set."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    c = draw(st.sampled_from([1.0, 1e-3, 30.0])) * rng.normal(size=features)
    c = c.astype(np.float32)
    corners = st.sampled_from([0.0, -0.0, 1.0, -1.0])
    for index, value in draw(
        st.lists(st.tuples(st.integers(0, features - 1), corners), max_size=4)
    ):
        c[index] = value
    return c


@st.composite
def parameter_sets(draw, dim: int, features: int) -> Params:
    """General parameters: random kernels and non-zero biases at several scales.

    Built from a drawn numpy seed, since drawing 65k floats one by one would
    be slow. Integer-valued parameters make exact zeros in the
    pre-activation, which is where the relu kink has to be handled.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "integers", "wide"]))
    kernel_scale = draw(st.sampled_from([1.0, 1e-3, 30.0])) if kind == "wide" else 1.0
    bias_scale = draw(st.sampled_from([1.0, 1e-2, 100.0])) if kind == "wide" else 1.0
    return random_params(rng, kind, dim, features, kernel_scale, bias_scale)


def random_params(
    rng: np.random.Generator,
    kind: str,
    dim: int,
    features: int,
    kernel_scale: float = 1.0,
    bias_scale: float = 1.0,
) -> Params:
    """Small integers (`kind="integers"`), or normal kernels scaled to fan-in and
    non-zero biases, each times its scale; every weight has a random sign."""
    if kind == "integers":
        return Params(
            w1=rng.integers(-3, 4, (dim, features)),
            b1=rng.integers(-3, 4, features),
            w2=rng.integers(-3, 4, (features, features)),
            b2=rng.integers(-3, 4, features),
        )
    # A nonzero floor keeps every bias away from zero: the biases must matter.
    signs = rng.choice([-1.0, 1.0], size=(2, features))
    b1, b2 = bias_scale * signs * (0.1 + np.abs(rng.normal(size=(2, features))))
    return Params(
        w1=kernel_scale * rng.normal(size=(dim, features)) / np.sqrt(dim),
        b1=b1,
        w2=kernel_scale * rng.normal(size=(features, features)) / np.sqrt(features),
        b2=b2,
    )


@dataclass(frozen=True)
class SeededForwardCase:
    """One call of `nn_checkpoint_forward(seed, x, features)`: the port's own init, then forward."""

    seed: int | float
    x: np.ndarray
    features: int

    @property
    def dim(self) -> int:
        return self.x.shape[0]


@dataclass(frozen=True)
class ParamCase:
    """Shared parameters, an x and a cotangent, for the forward and VJP properties."""

    params: Params
    x: np.ndarray
    cotangent: np.ndarray


@st.composite
def seeded_forward_cases(draw, scope: str = "menu") -> SeededForwardCase:
    dim, features = draw(shapes(scope))
    features_form = draw(st.sampled_from([int, float]))
    return SeededForwardCase(
        seed=draw(seeds()), x=draw(x_vectors(dim)), features=features_form(features)
    )


@st.composite
def param_cases(draw, scope: str = "menu") -> ParamCase:
    dim, features = draw(shapes(scope))
    return ParamCase(
        params=draw(parameter_sets(dim, features)),
        x=draw(x_vectors(dim)),
        cotangent=draw(cotangents(features)),
    )


# --- the precision tier's cases ---------------------------------------------------------

# What the precision tier draws: large shapes (the rigorous bound is loosest
# there), few examples (each is a matmul of up to a million weights), and data
# whose weights have random signs (normal or symmetric integers: the analysis
# in conformance/checking/precision.py needs that) while x reaches every kind the
# suite promises. Each recipe is (D, F, x kind, parameter kind).
PRECISION_X_KINDS = (
    "normal",
    "scaled",
    "constant",
    "alternating",
    "integers",
    "dynamic_range",
    "zeros",
)
PRECISION_PARAM_KINDS = ("normal", "integers", "wide")
PRECISION_RECIPES = {
    # The mutation run: both sizes the precision mutants must die at.
    "small": [(256, 256, "normal", "normal"), (1024, 1024, "normal", "normal")],
    # The default run: those, structured x and parameters at 256, and a
    # rectangular shape (already compiled for the other properties).
    "menu": [
        (256, 256, "normal", "normal"),
        (1024, 1024, "normal", "normal"),
        (256, 256, "constant", "integers"),
        (256, 256, "alternating", "wide"),
        (256, 256, "scaled", "normal"),
        (7, 300, "dynamic_range", "normal"),
    ],
}
# The thorough profile: every kind on more shapes, 4 data seeds each (504 cases).
PRECISION_WIDE_SHAPES = [(256, 256), (1024, 1024), (1024, 256), (256, 1024), (7, 300), (300, 128)]
PRECISION_WIDE_SEEDS = 4


@dataclass(frozen=True)
class PrecisionCase:
    """A case of the precision tier: shared parameters, x and a cotangent, and a seed and F
    for the exercise. The arrays are made from `data_seed` when first used, so that the bank
    keeps a few numbers per case, not megabytes.
    """

    dim: int
    features: int
    x_kind: str
    param_kind: str
    data_seed: int
    seed: int

    @functools.cached_property
    def _arrays(self) -> tuple[Params, np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.data_seed, self.dim, self.features])
        params = _precision_params(rng, self.param_kind, self.dim, self.features)
        x = _precision_x(rng, self.x_kind, self.dim)
        cotangent = rng.normal(size=self.features).astype(np.float32)
        return params, x, cotangent

    @property
    def params(self) -> Params:
        return self._arrays[0]

    @property
    def x(self) -> np.ndarray:
        return self._arrays[1]

    @property
    def cotangent(self) -> np.ndarray:
        return self._arrays[2]

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # not the arrays

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


def _precision_params(rng: np.random.Generator, kind: str, dim: int, features: int) -> Params:
    if kind == "integers":
        return random_params(rng, kind, dim, features)
    kernel, bias = (1.0, 1.0) if kind == "normal" else rng.choice([[1e-3, 1e-2], [30.0, 100.0]])
    return random_params(rng, kind, dim, features, kernel, bias)


def _precision_x(rng: np.random.Generator, kind: str, dim: int) -> np.ndarray:
    if kind == "normal":
        x = rng.normal(size=dim)
    elif kind == "scaled":
        x = rng.choice([1e-3, 1e3, 1e-25, 1e15]) * rng.normal(size=dim)
    elif kind == "constant":
        x = np.full(dim, rng.choice([1.0, 0.1, -3.7, 1e-20, 1e15]))
    elif kind == "alternating":
        x = np.where(np.arange(dim) % 2 == 0, 1.0, -1.0) * np.abs(rng.normal(size=dim))
    elif kind == "integers":
        x = rng.integers(-1000, 1001, dim).astype(np.float64)
    elif kind == "dynamic_range":  # magnitudes spread from 1e-30 to 1e15
        x = rng.choice([-1.0, 1.0], dim) * 10.0 ** rng.uniform(-30, 15, dim)
    elif kind == "zeros":
        x = np.zeros(dim)
    else:
        raise ValueError(f"unknown x kind {kind!r}")
    return x.astype(np.float32)


def precision_cases(scope: str = "menu") -> st.SearchStrategy[PrecisionCase]:
    """The precision tier's cases: a fixed handful ("small", "menu"), or many ("wide").

    A finite strategy: Hypothesis stops when it has drawn every case, so a
    run makes a handful of examples whatever its example count.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if scope == "wide":
        recipes = [
            (dim, features, x_kind, param_kind)
            for dim, features in PRECISION_WIDE_SHAPES
            for x_kind in PRECISION_X_KINDS
            for param_kind in PRECISION_PARAM_KINDS
        ]
        data_seeds = st.integers(0, PRECISION_WIDE_SEEDS - 1)
    else:
        recipes, data_seeds = PRECISION_RECIPES[scope], st.just(0)

    def build(recipe: tuple, data_seed: int) -> PrecisionCase:
        dim, features, x_kind, param_kind = recipe
        # The exercise's seed: a different small one per case.
        seed = (data_seed * 7919 + dim * 31 + features) % 1000
        return PrecisionCase(dim, features, x_kind, param_kind, data_seed, seed)

    return st.builds(build, st.sampled_from(recipes), data_seeds)


def shape_key(case: Any) -> Any:
    """What decides whether a case needs new compiled code: its kind and shapes."""
    if isinstance(case, SeededForwardCase):
        return ("exercise", case.dim, int(case.features))
    if isinstance(case, ParamCase):
        return ("params", case.params.dim, case.params.features)
    if isinstance(case, tuple) and case and isinstance(case[0], ParamCase):
        return ("evidence", case[0].params.dim, case[0].params.features)
    if isinstance(case, PrecisionCase):
        return ("precision", case.dim, case.features)
    return ("case", repr(case)[:80])


def describe(case: Any) -> str:
    """A case in a few words: enough to tell which example a port was running."""
    if isinstance(case, SeededForwardCase):
        return f"nn_checkpoint_forward(seed={case.seed!r}, x: D={case.dim}, {case.features!r})"
    if isinstance(case, ParamCase):
        return f"params D={case.params.dim} F={case.params.features}, x and a cotangent"
    if isinstance(case, PrecisionCase):
        return (
            f"precision D={case.dim} F={case.features}: {case.x_kind} x, "
            f"{case.param_kind} params (data seed {case.data_seed}), seed={case.seed}"
        )
    if isinstance(case, tuple) and case and isinstance(case[0], ParamCase):
        params = case[0].params
        return f"records: params D={params.dim} F={params.features}, seed={case[1]!r}"
    if isinstance(case, tuple) and len(case) == 2 and hasattr(case[0], "label"):
        if case[1] == "init":
            return f"bad input '{case[0].label}'"
        return f"bad input '{case[0].label}' ({case[1]} x)"
    return repr(case)[:120]


#: The shapes (j) and (k) draw, D < F and D > F, from the small menu; "wide" draws any.
POLICY_SHAPES = [(3, 4), (33, 7)]


@st.composite
def policy_cases(draw, scope: str = "menu") -> ParamCase:
    """Parameter cases for (j) and (k): few shapes, so that each policy compiles once or twice."""
    if scope == "wide":
        dim, features = draw(shapes(scope))
    else:
        shapes(scope)  # the scope's check
        dim, features = draw(st.sampled_from(POLICY_SHAPES))
    return ParamCase(
        params=draw(parameter_sets(dim, features)),
        x=draw(x_vectors(dim)),
        cotangent=draw(cotangents(features)),
    )


#: The block with variables and RNGs ((l)): (B, D, F). One shape on the menu, since each
#: (shape, rate, checkpoint) is a compile on a compiling stack; the wide scope adds two. Its
#: 128 mask elements a step give (l.4)'s law its draws in four steps.
STATE_SHAPES = [(32, 5, 4)]
STATE_EXTRA_SHAPES = [(4, 3, 6), (16, 7, 3)]
#: Rates (l) draws: 0 (the statistics held across frameworks) and one that drops a quarter.
#: Not a half: at 0.5 a mask drawn with the keep and drop probabilities swapped, or with a
#: framework's default 0.5 in place of the rate asked, has the right law.
STATE_RATES = (0.0, 0.25)


@dataclass(frozen=True)
class StateCase:
    """A step of the block with variables and RNGs: `seed`, `x` (B, D), `features`, `rate`
    and the step's `cotangent` (B, F)."""

    seed: int
    x: np.ndarray
    features: int
    rate: float
    cotangent: np.ndarray


@st.composite
def state_cases(draw, scope: str = "menu") -> StateCase:
    """Cases for (l): a seed from any region, a normal x at a drawn scale (BatchNorm removes
    the scale: the statistics of large and tiny batches), a normal cotangent."""
    shapes(scope)  # the scope's check
    menu = STATE_SHAPES + (STATE_EXTRA_SHAPES if scope == "wide" else [])
    batch, dim, features = draw(st.sampled_from(menu))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1.0, 1e-2, 1e2]))
    x = (scale * rng.normal(size=(batch, dim))).astype(np.float32)
    return StateCase(
        seed=int(draw(seeds())),
        x=x,
        features=features,
        rate=draw(st.sampled_from(STATE_RATES)),
        cotangent=rng.normal(size=(batch, features)).astype(np.float32),
    )
