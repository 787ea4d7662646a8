"""`REMAT_PROCESS_TIMEOUT`: how long a process port may take to say `hello` (the README sends a
user there when a first start, such as tfjs's `npm ci`, outlasts the default)."""

from __future__ import annotations

import pytest

from implementations.process import adapter


def test_the_hello_wait_is_120_s_unless_the_variable_sets_it(monkeypatch):
    monkeypatch.delenv("REMAT_PROCESS_TIMEOUT", raising=False)
    assert adapter._timeout() == adapter.DEFAULT_TIMEOUT == 120.0
    monkeypatch.setenv("REMAT_PROCESS_TIMEOUT", "600")
    assert adapter._timeout() == 600.0


@pytest.mark.parametrize("setting", ["0", "-5", "soon"])
def test_a_bad_setting_is_an_error_that_names_the_variable(monkeypatch, setting):
    monkeypatch.setenv("REMAT_PROCESS_TIMEOUT", setting)
    with pytest.raises(ValueError, match="REMAT_PROCESS_TIMEOUT must be a positive number"):
        adapter._timeout()
