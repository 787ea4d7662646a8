"""Meta-tests: the strategies really reach the corners the suite promises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st

from conformance.checking import strategies
from implementations.contract import SEED_MAX, check_seed

SEARCH = settings(
    max_examples=3000, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def reaches(strategy, predicate):
    """True if the strategy can produce an example satisfying predicate (else the test fails)."""
    return find(strategy, predicate, settings=SEARCH) is not None


SEED_REGIONS = {
    "zero": lambda s: s == 0,
    "small": lambda s: 0 < s < 100,
    "near 2**31": lambda s: abs(s - 2**31) <= 3,
    "2**32 - k": lambda s: 2**32 - 3 <= s < 2**32,
    "2**32 + k": lambda s: 2**32 < s <= 2**32 + 3,
    ">= 2**40": lambda s: s >= 2**40,
    "the top": lambda s: s == SEED_MAX,
}
# float(2**63 - 1) is 2**63, out of range: the top has an int form only.
SEED_FORMS = [(label, form) for label in SEED_REGIONS for form in (int, float)]
SEED_FORMS.remove(("the top", float))


@pytest.mark.parametrize(("label", "form"), SEED_FORMS)
def test_seeds_reach_every_region_in_both_forms(label, form):
    region = SEED_REGIONS[label]
    assert reaches(strategies.seeds(), lambda s: type(s) is form and region(int(s)))


def test_every_seed_is_accepted_and_integral():
    @settings(max_examples=500, database=None)
    def check(seed):
        assert check_seed(seed) == int(seed)

    from hypothesis import given

    given(strategies.seeds())(check)()


@pytest.mark.parametrize(
    ("label", "predicate"),
    [
        ("D = 1", lambda s: s[0] == 1),
        ("F = 1", lambda s: s[1] == 1),
        ("D >= 256", lambda s: s[0] >= 256),
        ("F >= 256", lambda s: s[1] >= 256),
        ("D != F", lambda s: s[0] != s[1]),
    ],
)
def test_shapes_reach_small_and_large(label, predicate):
    assert reaches(strategies.shapes(), predicate)


def test_shape_menu_is_short_and_wide_scope_goes_beyond_it():
    menu = set(strategies.SMALL_SHAPES + strategies.LARGE_SHAPES)
    assert len(menu) <= 8  # each shape costs a compile per JAX port
    assert reaches(strategies.shapes("wide"), lambda s: s not in menu)
    with pytest.raises(ValueError, match="scope"):
        strategies.shapes("huge")


def _x_cases():
    return st.integers(1, 16).flatmap(strategies.x_vectors)


TINY = np.finfo(np.float32).tiny


@pytest.mark.parametrize(
    ("label", "predicate"),
    [
        ("+0.0", lambda x: np.any((x == 0) & ~np.signbit(x))),
        ("-0.0", lambda x: np.any((x == 0) & np.signbit(x))),
        ("all zeros", lambda x: x.size > 2 and not np.any(x)),
        ("subnormal", lambda x: np.any((x != 0) & (np.abs(x) < TINY))),
        ("tiny normal", lambda x: np.any((np.abs(x) >= TINY) & (np.abs(x) < 1e-20))),
        ("large", lambda x: np.any(np.abs(x) > 1e12)),
        ("integer-valued", lambda x: np.any((x != 0) & (x == np.round(x)) & (np.abs(x) > 1))),
        ("negative", lambda x: np.any(x < 0)),
    ],
)
def test_x_reaches_the_corners(label, predicate):
    assert reaches(_x_cases(), predicate)


def test_x_is_always_finite_float32_of_the_right_shape():
    @settings(max_examples=300, database=None)
    def check(dim_and_x):
        dim, x = dim_and_x
        assert x.shape == (dim,)
        assert x.dtype == np.float32
        assert np.all(np.isfinite(x))
        assert np.all(np.abs(x) <= strategies.X_MAX)

    from hypothesis import given

    given(st.integers(1, 40).flatmap(lambda d: st.tuples(st.just(d), strategies.x_vectors(d))))(
        check
    )()


def test_parameter_sets_have_nonzero_biases_and_integer_variants():
    params = st.tuples(st.integers(1, 8), st.integers(1, 8)).flatmap(
        lambda s: strategies.parameter_sets(*s)
    )
    assert reaches(params, lambda p: np.all(p.b1 != 0) and np.all(p.b2 != 0))
    assert reaches(params, lambda p: np.all(p.w1 == np.round(p.w1)) and p.w1.size > 3)
    assert reaches(params, lambda p: np.max(np.abs(p.b2)) > 50)  # biases that dominate


def test_cotangents_reach_zero_and_large():
    cts = st.integers(1, 16).flatmap(strategies.cotangents)
    assert reaches(cts, lambda c: np.any(c == 0))
    assert reaches(cts, lambda c: np.max(np.abs(c)) > 20)
