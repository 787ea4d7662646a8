"""Where the compilation caches live: JAX's and inductor's, and the switches that turn them off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.running import environment

# Every variable that moves a cache: a user's own setting must not decide a test.
VARIABLES = (
    environment.ROOT_ENV,
    environment.CACHE_ENV,
    environment.TORCH_CACHE_ENV,
    "XDG_CACHE_HOME",
)


@pytest.fixture
def env(monkeypatch, tmp_path):
    # A copy of the environment: prepare() sets variables the test must not leak.
    monkeypatch.setattr(os, "environ", dict(os.environ))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return monkeypatch, tmp_path


def test_both_caches_live_side_by_side_by_default(env):
    _, home = env
    assert environment.jax_cache_dir() == home / "remat-conformance" / "jax"
    assert environment.torch_cache_dir() == home / "remat-conformance" / "torchinductor"


def test_a_directory_moves_a_cache_and_off_turns_it_off(env):
    monkeypatch, _ = env
    monkeypatch.setenv(environment.TORCH_CACHE_ENV, "/somewhere/else")
    assert environment.torch_cache_dir() == Path("/somewhere/else")
    monkeypatch.setenv(environment.TORCH_CACHE_ENV, "off")
    assert environment.torch_cache_dir() is None
    assert environment.jax_cache_dir() is not None  # each switch is its own


def test_no_jax_cache_means_no_inductor_cache_unless_said_otherwise(env):
    # compare's first-call child turns the JAX cache off and expects no cache at all.
    monkeypatch, home = env
    monkeypatch.setenv(environment.CACHE_ENV, "off")
    assert environment.torch_cache_dir() is None
    monkeypatch.setenv(environment.TORCH_CACHE_ENV, str(home / "mine"))
    assert environment.torch_cache_dir() == home / "mine"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("", "TORCHINDUCTOR_CACHE_DIR"), ("off", "TORCHINDUCTOR_FORCE_DISABLE_CACHES")],
)
def test_prepare_tells_inductor_before_torch_is_imported(env, setting, expected):
    monkeypatch, home = env
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FORCE_DISABLE_CACHES"):
        monkeypatch.delenv(name, raising=False)
    if setting:
        monkeypatch.setenv(environment.TORCH_CACHE_ENV, setting)
    environment.prepare()
    assert expected in os.environ
    other = {"TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FORCE_DISABLE_CACHES"} - {expected}
    assert not other & set(os.environ)
    if not setting:
        assert os.environ[expected] == str(home / "remat-conformance" / "torchinductor")
