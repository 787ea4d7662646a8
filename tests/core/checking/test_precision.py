"""The precision tier's own tests: the statistic, the bits, the threshold, the property on
ports that sum every way, the lower-precision ones, and the mutants at D = F = 256 and 1024.

The meta-test of 10^5 examples is `benchmarks/precision_false_alarms.py` (docs/PRECISION.md).
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings

from conformance.checking import precision, strategies
from conformance.checking.checks import ConformanceError
from conformance.checking.properties.i_precision import check_precision, prepare_precision
from conformance.checking.strategies import PrecisionCase
from conformance.checking.tolerance import U
from implementations.contract import Grads, Params
from tests.support import precision_ports as ports
from tests.support import reference

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def _drawn(scope: str) -> list[PrecisionCase]:
    found: list[PrecisionCase] = []

    def keep(case: PrecisionCase) -> None:
        found.append(case)

    settings(max_examples=1000, derandomize=True, database=None)(
        given(strategies.precision_cases(scope))(keep)
    )()
    return found


@pytest.fixture(scope="module")
def menu_cases():
    return [(case, prepare_precision(None, case)) for case in _drawn("menu")]


# --- the threshold ---------------------------------------------------------------------


def _binomial_tail(n: int, p: float) -> float:
    """P(at least half of n independent events of probability p happen), exactly."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(math.ceil(n / 2), n + 1))


@pytest.mark.parametrize("groups", [4, 7, 16, 64, 256, 300, 1024])
def test_the_threshold_holds_the_false_alarm_bound(groups):
    t = precision.threshold(groups)
    # Chebyshev: an element exceeds t with probability at most s / t^2.
    p = precision.SECOND_MOMENT / t**2
    assert _binomial_tail(groups, p) <= precision.FALSE_ALARM * (1 + 1e-9)
    # ...and the bound is what sets t: a 10% lower threshold breaks it.
    looser = precision.SECOND_MOMENT / (0.9 * t) ** 2
    assert (4 * looser) ** (groups / 2) > precision.FALSE_ALARM


def test_the_threshold_in_numbers():
    assert precision.threshold(256) == pytest.approx(4 * 10 ** (12 / 256), rel=1e-12)
    assert 4.4 < precision.threshold(256) < 4.5
    assert 4.1 < precision.threshold(1024) < 4.2
    assert precision.threshold(7) > 200  # few groups: too loose to decide much
    assert math.isinf(precision.threshold(0))


# --- the statistic on hand-made cases ----------------------------------------------------


def test_an_exact_result_reads_infinite_bits():
    exact = np.array([1.0, -2.0, 3.0, 0.5])
    result = precision.judge("y", exact.astype(np.float32), exact, 1e-7, 1.0)
    assert result.median_z == 0
    assert result.bits == math.inf
    assert not result.failed


@pytest.mark.parametrize("p", [8, 11, 16, 24])
def test_a_constructed_error_reads_its_bits(p):
    # err = CALIBRATION 2^-p ||q|| is what rounding every term once at p bits gives.
    rho = np.array([2.0, 3.0, 5.0, 7.0, 11.0])
    exact = np.zeros(5)
    actual = exact + precision.CALIBRATION * 2.0**-p * rho
    assert precision.judge("y", actual, exact, U * rho, rho).bits == pytest.approx(p, abs=1e-9)


def _round_to(values: np.ndarray, bits: int) -> np.ndarray:
    """float64 values rounded to `bits` significant bits (nearest even)."""
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(mantissa * 2.0**bits), exponent - bits)


@pytest.mark.parametrize("bits", [8, 11, 16, 24])
def test_rounding_every_term_once_reads_its_precision(bits):
    rng = np.random.default_rng(bits)
    terms = rng.normal(size=(256, 512))  # 512 sums of 256 terms each
    exact = terms.sum(0)
    actual = _round_to(terms, bits).sum(0)  # each term rounded once, summed exactly
    norm = np.sqrt((terms * terms).sum(0))
    result = precision.judge("y", actual, exact, U * np.sqrt(256) * norm, norm)
    assert result.bits == pytest.approx(bits, abs=0.3)


def test_one_unlucky_element_cannot_decide():
    sigma = np.full(256, 1e-7)
    exact = np.zeros(256)
    actual = 0.1 * sigma
    actual[17] = 1e6 * sigma[17]  # one element a million sigma off
    result = precision.judge("y", actual, exact, sigma, sigma / U)
    assert not result.failed
    assert result.median_z == pytest.approx(0.1)
    assert result.worst == (17,)
    assert result.worst_z == pytest.approx(1e6)


def test_half_the_elements_decide():
    sigma = np.full(256, 1e-7)
    actual = np.where(np.arange(256) < 129, 10.0, 0.1) * sigma  # 129 of 256 at 10 sigma
    assert precision.judge("y", actual, np.zeros(256), sigma, sigma / U).failed
    actual = np.where(np.arange(256) < 127, 10.0, 0.1) * sigma  # 127: not a majority
    assert not precision.judge("y", actual, np.zeros(256), sigma, sigma / U).failed


def test_elements_without_arithmetic_must_be_exact():
    # sigma 0: no rounding can touch them (a closed relu unit, dL/db2 = c).
    exact, sigma = np.ones(10), np.zeros(10)
    assert precision.judge("b2", exact.copy(), exact, sigma, sigma).judged == 0
    wrong = exact * (1 + 1e-7)
    result = precision.judge("b2", wrong, exact, sigma, sigma)
    assert result.median_z == math.inf
    assert result.failed
    # Among elements with arithmetic, one such error is one element.
    sigma = np.where(np.arange(10) == 0, 0.0, 1e-7)
    actual = exact.copy()
    actual[0] += 1e-3
    assert not precision.judge("y", actual, exact, sigma, sigma / U).failed


def test_errors_under_the_floor_are_ignored_and_non_finite_values_are_not():
    sigma = np.full(8, 1e-30)
    actual = np.full(8, 5e-38)  # a flushed subnormal's worth of error
    assert precision.judge("y", actual, np.zeros(8), sigma, sigma, floor=1e-37).median_z == 0
    actual = np.full(8, np.nan)
    assert precision.judge("y", actual, np.zeros(8), 1.0, 1.0).median_z == math.inf


def test_groups_of_an_outer_product_are_its_shared_factors():
    # 64 rows x 8 columns; a column shares one factor's error: 8 groups.
    sigma = np.ones((64, 8))
    sigma[:, 5] = 0.0  # a closed unit's column: no arithmetic, exact
    result = precision.judge("w1", np.zeros((64, 8)), np.zeros((64, 8)), sigma, 1.0, group_axis=0)
    assert result.groups == 7
    assert result.judged == 64 * 7
    assert result.threshold == precision.threshold(7)


# --- the exact results and scales --------------------------------------------------------


def test_scales_by_hand():
    params = Params(
        w1=np.array([[1.0], [-2.0]]), b1=np.array([0.5]), w2=np.array([[3.0]]), b2=np.array([-1.0])
    )
    x = np.array([2.0, 0.25], np.float32)
    scales = precision.forward_scales(params, x)
    # h = 2 - 0.5 + 0.5 = 2, y = 3 * 2 - 1 = 5
    assert scales.h.tolist() == [2.0]
    assert scales.y.tolist() == [5.0]
    q1 = 2.0**2 + 0.5**2 + 0.5**2  # (x w1)^2 terms and the bias
    assert scales.q1.tolist() == [q1]
    assert scales.var_h.tolist() == [3 * q1]  # n1 = D + 1 = 3
    q2 = 6.0**2 + 1.0**2
    assert scales.var_y == pytest.approx([9.0 * 3 * q1 + 2 * q2])  # through w2, n2 = F + 1 = 2
    assert scales.unit_y == pytest.approx([9.0 * q1 + q2])


def test_the_exact_results_are_the_float64_ones(menu_cases):
    case, ref = menu_cases[0]
    np.testing.assert_allclose(ref.forward.y, reference.forward(case.params, case.x), rtol=1e-12)
    grads = reference.vjp(case.params, case.x, case.cotangent)
    np.testing.assert_allclose(ref.dx, grads["x"], rtol=1e-12, atol=1e-300)


# --- the property on float32 ports: every summation order passes -------------------------


@pytest.mark.parametrize("port", ports.float32_ports(), ids=lambda p: p.name)
def test_every_summation_order_passes_the_menu(port, menu_cases):
    worst = max(check_precision(port, ref, case) for case, ref in menu_cases)
    # A float32 port's median error is a few percent of the threshold.
    assert worst < 0.25, worst


STRUCTURED = [
    (dim, features, x_kind, param_kind)
    for dim, features in [(64, 64), (300, 128)]
    for x_kind in strategies.PRECISION_X_KINDS
    for param_kind in strategies.PRECISION_PARAM_KINDS
]


@pytest.mark.parametrize("recipe", STRUCTURED, ids=lambda r: "-".join(map(str, r)))
def test_structured_inputs_pass_in_every_order(recipe):
    case = PrecisionCase(*recipe, data_seed=1, seed=5)
    ref = prepare_precision(None, case)
    for port in ports.float32_ports():
        assert check_precision(port, ref, case) < 0.25, port.name


# --- relu kinks ------------------------------------------------------------------------


class _Mask(ports.NumpyPort):
    """A float32 port whose VJP opens the units `opens(h)` says."""

    def __init__(self, opens):
        super().__init__("numpy", name="mask")
        self.opens = opens

    def vjp(self, params, x, cotangent, *, checkpoint=True):
        w1, w2 = params.w1, params.w2
        h, a, _ = ports.mlp_forward(params, x, "numpy")
        g_h = np.where(self.opens(h), ports.matvec(cotangent, w2.T, "numpy"), np.float32(0))
        return Grads(
            w1=np.outer(x, g_h).astype(np.float32),
            b1=g_h,
            w2=np.outer(a, cotangent).astype(np.float32),
            b2=np.asarray(cotangent, np.float32),
            x=ports.matvec(g_h, w1.T, "numpy"),
        )


def _kink_case() -> tuple[Params, np.ndarray, np.ndarray]:
    # Integer data: about a tenth of the 64 units have a pre-activation of exactly 0.
    rng = np.random.default_rng(3)
    params = Params(
        w1=rng.integers(-2, 3, (32, 64)),
        b1=rng.integers(-2, 3, 64),
        w2=rng.integers(-2, 3, (64, 64)),
        b2=rng.integers(-2, 3, 64),
    )
    x = rng.integers(-2, 3, 32).astype(np.float32)
    return params, x, rng.normal(size=64).astype(np.float32)


def _judge_vjp(port, params, x, c):
    ref = precision.reference(params, x, c)
    grads = port.vjp(params, x, c).as_dict()
    return ref, precision.judge_grads(grads, ref, params, x, c)


def test_either_side_of_a_kink_passes():
    params, x, c = _kink_case()
    for opens in (lambda h: h > 0, lambda h: h >= 0):  # relu'(0) = 0, or 1
        ref, results = _judge_vjp(_Mask(opens), params, x, c)
        assert ref.forward.kinks.sum() >= 3  # the case has kinks to decide
        assert not any(r.failed for r in results), results


def test_a_unit_on_the_wrong_side_away_from_a_kink_fails():
    params, x, c = _kink_case()
    ref = precision.reference(params, x, c)
    clear = np.flatnonzero(~ref.forward.kinks & (ref.forward.h > 0))
    unit = clear[np.argmax(np.abs(ref.g_a[clear]))]  # an open unit, far from its kink
    _, results = _judge_vjp(_Mask(lambda h: (h > 0) & (np.arange(64) != unit)), params, x, c)
    failed = {r.name for r in results if r.failed}
    # d/dx sums over every unit: one closed by mistake moves all of it.
    assert "d/dx" in failed


# --- lower precision fails at D = F = 256 and 1024 ------------------------------------------

SIZES = [(256, 256), (1024, 1024)]


@pytest.fixture(scope="module", params=SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def large_case(request):
    case = PrecisionCase(*request.param, "normal", "normal", data_seed=0, seed=3)
    return case, prepare_precision(None, case)


@pytest.mark.parametrize("port", ports.low_precision_ports(), ids=lambda p: p.name)
def test_lower_precision_fails(port, large_case):
    case, ref = large_case
    with pytest.raises(ConformanceError, match="effective precision"):
        check_precision(port, ref, case)


# --- the strategy ------------------------------------------------------------------------


def test_the_strategy_draws_a_handful_of_large_cases():
    small, menu = _drawn("small"), _drawn("menu")
    assert sorted((c.dim, c.features) for c in small) == [(256, 256), (1024, 1024)]
    shapes = {(c.dim, c.features) for c in menu}
    assert {(256, 256), (1024, 1024)} <= shapes
    assert any(d != f for d, f in shapes)
    assert len(menu) <= 8
    assert {c.x_kind for c in menu} >= {"normal", "constant", "alternating", "dynamic_range"}
    wide = _drawn("wide")
    assert len(wide) == 1000 or len(wide) == len(set(wide))  # no case twice
    assert {(c.dim, c.features) for c in wide} >= shapes


@pytest.mark.parametrize("param_kind", strategies.PRECISION_PARAM_KINDS)
def test_weights_have_random_signs(param_kind):
    # The analysis needs it: every weight's sign independent and symmetric.
    case = PrecisionCase(256, 256, "normal", param_kind, data_seed=2, seed=0)
    for w in (case.params.w1, case.params.w2):
        nonzero = w[w != 0]
        assert abs((nonzero > 0).mean() - 0.5) < 0.01
        assert abs(np.corrcoef(np.sign(nonzero[:-1]), np.sign(nonzero[1:]))[0, 1]) < 0.01


def test_a_case_is_pickled_without_its_arrays():
    case = PrecisionCase(1024, 1024, "scaled", "wide", data_seed=7, seed=11)
    x = case.x.copy()
    stored = pickle.dumps(case)
    assert len(stored) < 1000  # not 8 MB of weights
    again = pickle.loads(stored)
    assert again == case
    assert np.array_equal(again.x, x)
    assert np.array_equal(again.params.w1, case.params.w1)


# --- the mutants: the precision tier kills them at 256 and at 1024 ---------------------------

PRECISION_MUTANTS = ("tf32_matmul", "f16_inputs", "bf16_weights_only", "bias_off_by_1e-4")
# Measured effective bits of each mutant's output (normal x and parameters), generously
# bracketed: TF32 rounds both operands at 11 bits, float16 x one, bfloat16 kernels at 8.
MUTANT_BITS = {
    "tf32_matmul": (10, 12),
    "f16_inputs": (11, 14),
    "bf16_weights_only": (7.5, 10),
    "bias_off_by_1e-4": (10.5, 14),
}


@pytest.fixture(scope="module")
def canonical_port():
    pytest.importorskip("flax")
    from tests.support.helpers import port_or_skip

    return port_or_skip("flax_linen")


@pytest.mark.parametrize("name", PRECISION_MUTANTS)
def test_the_precision_tier_kills_the_mutant_where_the_forward_bound_cannot(
    name, large_case, canonical_port
):
    from conformance import mutants
    from conformance.checking.properties import BY_ID
    from conformance.checking.strategies import ParamCase, SeededForwardCase

    case, ref = large_case
    mutant = mutants.load(name).port
    # The precision tier sees it in the forward output alone.
    output = precision.judge_output("output", mutant.forward(case.params, case.x), ref.forward)
    low, high = MUTANT_BITS[name]
    assert output.failed, output
    assert low < output.bits < high, output
    with pytest.raises(ConformanceError, match="precision of the output"):
        check_precision(mutant, ref, case)
    # The rigorous forward bounds, (b) with shared parameters and (f) the
    # exercise, admit it at this size (bfloat16 kernels break (b) at 256 only).
    rigorous = [("f", SeededForwardCase(case.seed, case.x, case.features))]
    if not (name == "bf16_weights_only" and case.dim == 256):
        rigorous.append(("b", ParamCase(case.params, case.x, case.cotangent)))
    for prop_id, rigorous_case in rigorous:
        prop = BY_ID[prop_id]
        reference_side = prop.prepare(canonical_port, rigorous_case)
        assert prop.check(mutant, reference_side, rigorous_case) <= 1.0


def test_the_meta_test_script_runs(tmp_path):
    # The 10^5-example run is `benchmarks/precision_tier.py false-alarms` (docs/PRECISION.md);
    # here a dozen examples, one per summation order and two more.
    import json
    import subprocess
    import sys

    from tests.support.helpers import ROOT

    out = tmp_path / "piece.json"
    command = [sys.executable, "benchmarks/precision_tier.py", "false-alarms", "--examples", "12"]
    done = subprocess.run(
        [*command, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert sum(p["examples"] for p in result["ports"].values()) == 12
    assert not any(p["failures"] for p in result["ports"].values())
    merged = json.loads(
        subprocess.run(
            [sys.executable, "benchmarks/precision_tier.py", "summary", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        ).stdout
    )
    assert merged["examples"] == 12
    assert merged["failures"] == []
