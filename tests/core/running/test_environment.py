"""Where the compilation caches live (JAX's and every cache a stack's manifest declares), and
the switches that turn them off."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import pytest

from conformance.running import environment, framework_caches
from implementations.contract import PortWarning

CACHES = framework_caches.declared()
#: The caches other than JAX's, each with its own switch (inductor's, for one).
OTHERS = sorted(name for name in CACHES if name != "JAX")
# Every variable that moves a cache: a user's own setting must not decide a test.
VARIABLES = (
    environment.ROOT_ENV,
    *(cache.setting for cache in CACHES.values()),
    "XDG_CACHE_HOME",
)


@pytest.fixture
def env(monkeypatch, tmp_path):
    # A copy of the environment: prepare() sets variables the test must not leak.
    monkeypatch.setattr(os, "environ", dict(os.environ))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(environment.SCRATCH_ENV, raising=False)
    monkeypatch.setattr(environment, "_SCRATCH", [])  # a scratch directory of the test's own
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return monkeypatch, tmp_path


def test_every_cache_lives_in_a_folder_of_its_own_by_default(env):
    _, home = env
    assert environment.leading_cache_dir() == home / "remat-conformance" / "jax"
    assert len({cache.folder for cache in CACHES.values()}) == len(CACHES)
    for cache in CACHES.values():
        assert environment.cache_dir(cache) == home / "remat-conformance" / cache.folder


@pytest.mark.parametrize("name", OTHERS)
def test_a_directory_moves_a_cache_and_off_turns_it_off(env, name):
    monkeypatch, _ = env
    cache = CACHES[name]
    monkeypatch.setenv(cache.setting, "/somewhere/else")
    assert environment.cache_dir(cache) == Path("/somewhere/else")
    monkeypatch.setenv(cache.setting, "off")
    assert environment.cache_dir(cache) is None
    assert environment.leading_cache_dir() is not None  # each switch is its own


@pytest.mark.parametrize("name", [n for n in OTHERS if CACHES[n].follows])
def test_a_following_cache_is_off_with_the_one_it_follows_unless_said_otherwise(env, name):
    # A user who turns the JAX cache off expects no compilation cache at all.
    monkeypatch, home = env
    cache = CACHES[name]
    monkeypatch.setenv(CACHES[cache.follows].setting, "off")
    assert environment.cache_dir(cache) is None
    monkeypatch.setenv(cache.setting, str(home / "mine"))
    assert environment.cache_dir(cache) == home / "mine"


@pytest.mark.parametrize("name", OTHERS)
@pytest.mark.parametrize("setting", ["", "off"])
def test_prepare_tells_the_framework_before_it_is_imported(env, name, setting):
    monkeypatch, home = env
    cache = CACHES[name]
    variables = {cache.directory_variable, *cache.when_on, *cache.when_off}
    for variable in variables:
        monkeypatch.delenv(variable, raising=False)
    if setting:
        monkeypatch.setenv(cache.setting, setting)
    environment.prepare()
    expected = set(cache.when_off) if setting else {cache.directory_variable, *cache.when_on}
    if setting and cache.writes_when_off:
        expected.add(cache.directory_variable)
    assert expected <= set(os.environ)
    assert not (variables - expected) & set(os.environ)
    if not setting:
        folder = home / "remat-conformance" / cache.folder
        assert os.environ[cache.directory_variable] == str(folder)
    elif cache.writes_when_off:  # the run's scratch directory, removed at its end
        folder = Path(os.environ[environment.SCRATCH_ENV]) / cache.folder
        assert os.environ[cache.directory_variable] == str(folder)
        assert folder.parent.parent == home


def test_a_port_warning_is_said_once_as_the_cache_s_are_and_other_warnings_are_left_be(env):
    """A port's `PortWarning` (tfjs: its cached install would not load) goes where the cache's
    warnings go, a worker's to its parent and from there to the run's stderr, once; not to
    the port's captured output. Every other warning is shown as before."""
    monkeypatch, _ = env
    said, others = [], []
    monkeypatch.setattr(environment, "_WARNING_SINKS", [lambda text, key: said.append(text)])
    monkeypatch.setattr(environment, "_WARNED", set())
    text = "tfjs: the cached tfjs in /cache/tfjs does not load: installed again"
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *rest: others.append(str(message))
        environment.prepare()
        environment.prepare()  # a second prepare adds no second layer
        warnings.warn(text, PortWarning, stacklevel=1)
        warnings.warn(text, PortWarning, stacklevel=1)
        warnings.warn("a framework's own warning", UserWarning, stacklevel=1)
    assert said == [text]
    assert others == ["a framework's own warning"]
