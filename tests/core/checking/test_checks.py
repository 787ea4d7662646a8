"""Meta-tests of the suite's assertion helpers: they fail when they should, and say why."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError, bitwise_equal, within, within_ulps


def test_within_passes_inside_the_bound_and_reports_the_worst_ratio():
    ratio = within("p", "q", np.array([1.0, 2.0]), np.array([1.0, 2.5]), np.array([1.0, 1.0]))
    assert ratio == pytest.approx(0.5)


def test_within_message_names_port_quantity_index_error_and_bound():
    with pytest.raises(ConformanceError) as caught:
        within("pytorch", "VJP d/dw1", np.ones((2, 3)), np.zeros((2, 3)), np.full((2, 3), 0.5))
    message = str(caught.value)
    assert message.startswith("[pytorch] VJP d/dw1: index (0, 0)")
    assert "error 1.000e+00 > bound 5.000e-01" in message
    assert "6 of 6 entries" in message


def test_within_rejects_a_wrong_shape_and_non_finite_values():
    with pytest.raises(ConformanceError, match=r"shape \(1, 3\), expected \(3,\)"):
        within("p", "out", np.zeros((1, 3)), np.zeros(3), 1.0)
    with pytest.raises(ConformanceError, match="non-finite"):
        within("p", "out", np.array([np.nan]), np.zeros(1), np.inf)


def test_within_treats_a_zero_bound_as_exact():
    assert within("p", "q", np.zeros(2), np.zeros(2), 0.0) == 0.0
    with pytest.raises(ConformanceError):
        within("p", "q", np.array([1e-45]), np.zeros(1), 0.0)


def test_within_ulps():
    one = np.float32(1)
    assert within_ulps("p", "w", np.array([np.nextafter(one, 2)]), np.array([one]), 2) == 0.5
    three_up = np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2)
    with pytest.raises(ConformanceError, match="error 3 ulp > bound 2 ulp"):
        within_ulps("p", "init w1", np.array([three_up]), np.array([one]), 2)


def test_bitwise_equal_sees_negative_zero_and_dtype_changes():
    bitwise_equal("p", "x", np.array([0.0, 1.0], np.float32), np.array([0.0, 1.0], np.float32))
    with pytest.raises(ConformanceError, match="index 0"):
        bitwise_equal("p", "x", np.array([-0.0], np.float32), np.array([0.0], np.float32))
    with pytest.raises(ConformanceError, match="dtype"):
        bitwise_equal("p", "x", np.array([1.0]), np.array([1.0], np.float32))


def test_a_property_with_a_share_runs_that_share_of_the_examples_asked_for():
    from conformance.checking.properties import BY_KEY

    assert BY_KEY["e_evidence"].capped(100) == 25
    assert BY_KEY["h_hygiene"].capped(100) == 25
    assert BY_KEY["d_on_off"].capped(100) == 50
    assert BY_KEY["e_evidence"].capped(3) == 1  # never none
    assert BY_KEY["b_forward"].capped(100) == 100
    assert BY_KEY["j_policies"].capped(100) == BY_KEY["j_policies"].examples
