"""Sizes are part of the contract: limits checked before anything is allocated, in every port.

Without them, `features=2**31` aborted the interpreter (SIGABRT, XLA's
"overflow in static extent product") in every JAX port, and keras_jax
aborted at `features=10**7`. The limits are checked here; every port meets them in
tests/core/implementations/test_stacks_alone.py, a subprocess per stack, so that an abort fails the
port's
test instead of ending the test run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import implementations
from implementations.contract import (
    MAX_ELEMENTS,
    MAX_FEATURES,
    MIN_MAX_BYTES,
    SizeLimitError,
    call_bytes,
    check_dim,
    check_features,
    check_sizes,
    check_x,
    check_x_spec,
    max_bytes,
    sizes,
)

GiB = 2**30


# ---------------------------------------------------------------------------
# The limits themselves (numpy only)
# ---------------------------------------------------------------------------


def test_the_hard_limits_are_int32_element_counts():
    assert MAX_ELEMENTS == 2**31 - 1
    assert MAX_FEATURES == 46340  # 46340**2 < 2**31 - 1 < 46341**2
    assert MAX_FEATURES**2 <= MAX_ELEMENTS < (MAX_FEATURES + 1) ** 2


def test_features_up_to_the_limit_pass_and_past_it_raise_naming_features():
    assert check_features(MAX_FEATURES) == MAX_FEATURES
    for features in (MAX_FEATURES + 1, 10**7, 2**31, 2**63, float(2**40)):
        with pytest.raises(SizeLimitError, match=r"\bfeatures\b"):
            check_features(features)


def test_x_up_to_the_limit_passes_and_past_it_raises_naming_x():
    assert check_x_spec((MAX_ELEMENTS,), np.dtype(np.float32)) == MAX_ELEMENTS
    for dim in (2**31, 2**40):
        with pytest.raises(SizeLimitError, match=r"\bx\b"):
            check_x_spec((dim,), np.dtype(np.float32))


def test_a_huge_x_is_refused_before_it_is_copied():
    # A stride-0 array of 2**40 elements holds one float: a copy would need 4 TB.
    x = np.broadcast_to(np.zeros((), np.float32), (2**40,))
    with pytest.raises(SizeLimitError, match=r"\bx\b"):
        check_x(x)


def test_dim_limits_name_dim():
    assert check_dim(MAX_ELEMENTS) == MAX_ELEMENTS
    with pytest.raises(SizeLimitError, match=r"\bdim\b"):
        check_dim(2**31)


def test_the_kernel_d_by_f_must_stay_within_int32(monkeypatch):
    monkeypatch.setenv("REMAT_MAX_BYTES", str(2**62))  # only the element count can refuse
    check_sizes(2**21 - 1, 2**10)  # 2**31 - 1024 elements
    with pytest.raises(SizeLimitError, match=r"\bfeatures=1024\b.*\bx\b.*2\.15e\+09 elements"):
        check_sizes(2**21, 2**10)  # exactly 2**31
    with pytest.raises(SizeLimitError, match=r"\bdim\b"):
        check_sizes(2**21, 2**10, dim_name="dim")


def test_bytes_are_the_parameters_and_activations_in_float32():
    # D = 3, F = 2: w1 6, b1 2, w2 4, b2 2 floats; x 3, hidden 2 + 2, output 2.
    assert call_bytes(3, 2) == (4 * 14, 4 * 9)


def test_the_byte_budget_names_both_arguments_and_the_numbers(monkeypatch):
    parameters, activations = call_bytes(1000, 1000)  # 8.008 MB, 16 kB
    monkeypatch.setenv("REMAT_MAX_BYTES", str(parameters + activations))
    check_sizes(1000, 1000)  # exactly at the budget: fits
    monkeypatch.setenv("REMAT_MAX_BYTES", str(parameters + activations - 1))
    with pytest.raises(SizeLimitError) as caught:
        check_sizes(1000, 1000)
    message = str(caught.value)
    assert "features=1000 with x of D=1000" in message
    assert "8.01 MB of parameters and 16 kB of activations" in message
    assert "REMAT_MAX_BYTES" in message


@pytest.mark.parametrize("setting", ["0", "-5", "lots", "1.5e9", "nan"])
def test_a_bad_remat_max_bytes_is_named(monkeypatch, setting):
    monkeypatch.setenv("REMAT_MAX_BYTES", setting)
    with pytest.raises(ValueError, match="REMAT_MAX_BYTES"):
        max_bytes()


def test_the_default_budget_is_a_quarter_of_memory_with_a_floor(monkeypatch):
    monkeypatch.delenv("REMAT_MAX_BYTES", raising=False)
    monkeypatch.setattr(sizes, "physical_memory", lambda: 64 * GiB)
    assert max_bytes() == 16 * GiB
    monkeypatch.setattr(sizes, "physical_memory", lambda: 4 * GiB)
    assert max_bytes() == MIN_MAX_BYTES == 2 * GiB
    monkeypatch.setattr(sizes, "physical_memory", lambda: None)  # the OS does not say
    assert max_bytes() == MIN_MAX_BYTES


def test_physical_memory_is_read_from_sysconf():
    if not hasattr(os, "sysconf"):
        pytest.skip("no os.sysconf here")
    expected = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert sizes.physical_memory() == expected > 0


# ---------------------------------------------------------------------------
# The mutant without size checks: killed by (g), and by (g) alone
# ---------------------------------------------------------------------------


def test_the_mutant_without_size_checks_fails_only_the_bad_inputs_property():
    pytest.importorskip("flax")
    from conformance import mutants
    from conformance.checking.properties import PROPERTIES
    from conformance.running.runner import run_property

    mutant = mutants.load("unchecked_sizes").port
    canonical = implementations.load(implementations.CANONICAL)
    outcomes = {
        prop.id: run_property(
            prop, mutant, lambda: canonical, max_examples=3, scope="small", shrink=False
        )
        for prop in PROPERTIES
    }
    assert outcomes["g"].status == "fail"
    # Every size entry is what fails, as a failed check: MemoryError or accepted.
    assert "MemoryError" in outcomes["g"].message or "accepted" in outcomes["g"].message
    others = {pid: (o.status, o.message) for pid, o in outcomes.items() if pid != "g"}
    assert all(status == "pass" for status, _ in others.values()), others
