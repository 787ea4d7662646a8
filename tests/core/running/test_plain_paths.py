"""Issue 61, case 2: a framework whose tools cannot take a path with a space or a quote
(inductor's g++ command line) gets plain paths of its own, for its cache and its temporary
files, where `TMPDIR` or `REMAT_CACHE` is not plain."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.running import framework_caches, plain_paths

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, os, tempfile
from conformance.running import environment
environment.prepare()
print(json.dumps({"env": dict(os.environ), "tempdir": tempfile.gettempdir()}))
"""


def _prepared(env: dict[str, str]) -> dict:
    """The environment `environment.prepare` leaves in a fresh process started with `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REMAT_", "TORCHINDUCTOR"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) | {"stderr": done.stderr}


def _plain_caches() -> list:
    caches = [c for c in framework_caches.declared().values() if c.plain_paths]
    if not caches:
        pytest.skip("no stack declares a cache that needs plain paths")
    return caches


def test_a_path_with_a_space_or_a_quote_is_not_plain_and_gets_a_stand_in(tmp_path):
    assert plain_paths.plain("/tmp/remat-conformance/a_b-1.2")
    for odd in ("/tmp/sp ace", "/tmp/it's", '/tmp/"q"', "/tmp/$HOME", "/tmp/tab\there"):
        assert not plain_paths.plain(odd)
    odd = tmp_path / "it's a dir"
    first, said = plain_paths.stand_in(odd, "a test's cache")
    assert said == (
        f"a test's cache: {odd} holds a space or a quote, which its tools cannot take: {first} "
        "stands in for it"
    )
    assert plain_paths.plain(first)
    assert first.is_dir()
    assert not first.is_symlink()
    assert first.stat().st_mode & 0o777 == 0o700
    assert plain_paths.stand_in(odd, "a test's cache")[0] == first  # the same one, every run
    assert plain_paths.stand_in(tmp_path, "a plain one") == (tmp_path, "")
    first.rmdir()


def test_the_cache_and_temporary_files_of_such_a_framework_get_plain_paths(tmp_path):
    caches = _plain_caches()
    spaced = tmp_path / "sp ace"
    spaced.mkdir()
    quoted = tmp_path / "cache it's"
    prepared = _prepared({"TMPDIR": str(spaced), "REMAT_CACHE": str(quoted)})
    env = prepared["env"]
    for cache in caches:
        directory = env[cache.directory_variable]
        assert plain_paths.plain(directory), directory
        assert os.path.isdir(directory)
    assert plain_paths.plain(prepared["tempdir"])
    assert plain_paths.plain(env["TMPDIR"])
    assert f"{spaced} holds a space or a quote" in prepared["stderr"]  # said, once each
    for path in {prepared["tempdir"], *(env[c.directory_variable] for c in caches)}:
        with contextlib.suppress(OSError):  # the stand-ins made for this test, if empty
            os.rmdir(path)


def test_plain_paths_and_a_users_own_setting_are_left_alone(tmp_path):
    caches = _plain_caches()
    own = {c.directory_variable: str(tmp_path / "my own, with a space") for c in caches}
    prepared = _prepared({"TMPDIR": str(tmp_path), "REMAT_CACHE": str(tmp_path / "cache")} | own)
    assert prepared["env"]["TMPDIR"] == str(tmp_path)
    for variable, value in own.items():
        assert prepared["env"][variable] == value
