"""An unusable cache is infrastructure: one warning, the run goes on, no port is failed for it.

The suite runs as root in CI, and root may write into a directory whose mode
forbids it, so "read-only" here is what root cannot write either: a path
under /proc, a regular file or /dev/null where a directory should be, a
directory where a file should be, and writes made to raise EROFS or ENOSPC.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
from pathlib import Path

import pytest

from conformance.checking.properties import BY_KEY
from conformance.running import cache_files, environment, example_bank, framework_caches, profiles
from conformance.running.runner import run_property
from tests.support.helpers import assert_identical, port_or_skip, run_cli, run_python
from tests.support.hostile import outcomes_of, run_json, write_hostile_ports

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(environment, "_WARNED", set())
    profiles.load("ci")


@pytest.fixture
def warnings(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(environment, "_WARNING_SINKS", [lambda text, key: said.append(text)])
    return said


def clean_cases(tmp_path, monkeypatch, key="f_end_to_end"):
    """The cases a working cache gives (drawn into a cache of their own)."""
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "clean"))
    cases = example_bank.cases(BY_KEY[key], "menu", 4)
    (entry,) = (tmp_path / "clean" / "examples").glob("*.entry")
    return cases, entry.name


def leftovers(directory: Path) -> list[str]:
    """Every file under `directory` but the bank's entries and locks (temporary files leak)."""
    if not directory.is_dir():
        return []
    return sorted(
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and p.suffix not in (".entry", ".lock")
    )


def unusable_root(kind: str, tmp_path: Path, entry_name: str) -> Path:
    """A cache root of the given kind of trouble."""
    if kind == "under /proc":
        return Path("/proc/remat-conformance-nope")
    if kind == "a regular file":
        root = tmp_path / "file"
        root.write_text("not a directory")
        return root
    if kind == "/dev/null":
        return Path("/dev/null")
    root = tmp_path / "dir-in-place"
    (root / "examples" / entry_name).mkdir(parents=True)  # a directory where the entry goes
    return root


KINDS = ["under /proc", "a regular file", "/dev/null", "a directory where the entry goes"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_unusable_cache_gives_the_same_cases_one_warning_and_no_leak(
    tmp_path, monkeypatch, warnings, kind
):
    cases, entry_name = clean_cases(tmp_path, monkeypatch)
    root = unusable_root(kind, tmp_path, entry_name)
    monkeypatch.setenv(environment.ROOT_ENV, str(root))
    for _ in range(3):  # every later call meets it too: still one line
        assert_identical(example_bank.cases(BY_KEY["f_end_to_end"], "menu", 4), cases)
    assert len(warnings) == 1, warnings
    assert "the run goes on without it" in warnings[0]
    if kind.startswith("a directory"):
        assert leftovers(root) == []  # the temporary file is removed, not left (61 MB a run)


def test_a_read_only_cache_is_named_by_its_root_once(tmp_path, monkeypatch, warnings):
    """A read-only mount (as root, no mode bit stops a write): one line names the root, not
    the first of its folders to be found so (JAX's, which the others' silence hid)."""
    root = tmp_path / "mounted"
    monkeypatch.setenv(environment.ROOT_ENV, str(root))
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(environment, "usable", lambda directory: read_only)
    for folder in ("jax", "examples"):
        environment.unusable(root / folder, f"({folder}) cannot be written", read_only)
    assert warnings == [
        f"the cache at {root} cannot be written (Read-only file system): the run goes on without it"
    ]


def test_a_folder_that_cannot_be_written_under_a_usable_root_is_named_itself(
    tmp_path, monkeypatch, warnings
):
    root = tmp_path / "cache"
    monkeypatch.setenv(environment.ROOT_ENV, str(root))
    denied = OSError(errno.EACCES, os.strerror(errno.EACCES))
    environment.unusable(root / "jax", "(JAX's compilation) cannot be written", denied)
    assert warnings == [
        f"the cache at {root / 'jax'} (JAX's compilation) cannot be written (Permission denied): "
        "the run goes on without it"
    ]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_failing_write_leaves_no_file_and_gives_one_warning(
    tmp_path, monkeypatch, warnings, code
):
    cases, _ = clean_cases(tmp_path, monkeypatch)
    root = tmp_path / "full"
    monkeypatch.setenv(environment.ROOT_ENV, str(root))
    real_dump = cache_files.dump

    def dump_then_fail(file, key, value):
        real_dump(file, key, value)  # the bytes are out, half a file on disk...
        raise OSError(code, os.strerror(code))  # ...when the disk fills up

    monkeypatch.setattr(cache_files, "dump", dump_then_fail)
    for _ in range(2):
        assert_identical(example_bank.cases(BY_KEY["f_end_to_end"], "menu", 4), cases)
    assert len(warnings) == 1, warnings
    assert os.strerror(code) in warnings[0]
    assert leftovers(root) == []
    assert list((root / "examples").glob("*.entry")) == []


def test_an_error_of_the_make_itself_is_not_swallowed(tmp_path, monkeypatch):
    """Only the cache's faults are turned into warnings; the canonical side's reach the run."""
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "root"))

    def broken():
        raise ZeroDivisionError("in the make")

    with pytest.raises(ZeroDivisionError):
        example_bank._kept(tmp_path / "root" / "references" / "x.entry", broken)


@pytest.mark.parametrize("kind", ["under /proc", "a directory where the entry goes"])
def test_a_port_passes_with_an_unusable_cache(tmp_path, monkeypatch, warnings, kind):
    """Before: "[pytorch] raised OSError: Read-only file system", a failed port."""
    port = port_or_skip("jax_checkpoint")
    canonical = port_or_skip("flax_linen")
    _, entry_name = clean_cases(tmp_path, monkeypatch, "b_forward")
    monkeypatch.setenv(environment.ROOT_ENV, str(unusable_root(kind, tmp_path, entry_name)))
    outcome = run_property(BY_KEY["b_forward"], port, lambda: canonical, max_examples=4)
    assert outcome.status == "pass", outcome.message
    assert outcome.examples == 4
    assert len(warnings) == 1


def test_a_run_with_an_unwritable_cache_passes_with_one_warning_line(tmp_path):
    cache = tmp_path / "a-file"
    cache.write_text("")
    env = {**os.environ, environment.ROOT_ENV: str(cache), "JAX_PLATFORMS": "cpu"}
    for variable in ("HYPOTHESIS_STORAGE_DIRECTORY", "REMAT_JAX_CACHE", "REMAT_TORCH_CACHE"):
        env.pop(variable, None)
    quick = ("--no-mutants", "--examples", "3", "--jobs", "1", "--profile", "ci", "--json")
    result = run_cli("--implementation", "jax_checkpoint", *quick, "--property", "b_forward",
                     "--property", "f_end_to_end", env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert {o["status"] for o in report["ports"][0]["outcomes"]} == {"pass"}
    lines = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    assert str(cache) in lines[0]


# ---------------------------------------------------------------------------
# The frameworks' own caches: a damaged entry is the cache's fault, not the port's
# ---------------------------------------------------------------------------


class NamesACacheFile:
    """A port whose first `failures` forward calls fail on a file in inductor's cache."""

    def __init__(self, port, cache: Path, failures: int):
        self._port, self._cache, self.failures = port, cache, failures

    def __getattr__(self, name):
        return getattr(self._port, name)

    def forward(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise ImportError(f"Failed to import {self._cache}/xq/cxqabc.py\nSyntaxError")
        return self._port.forward(*args, **kwargs)


@pytest.fixture
def inductor_cache(tmp_path, monkeypatch):
    cache = tmp_path / "torchinductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    turned_off: list[str] = []
    monkeypatch.setattr(framework_caches, "turn_off", turned_off.append)
    return cache, turned_off


def test_a_failure_in_a_framework_cache_is_run_again_without_it(
    tmp_path, monkeypatch, inductor_cache
):
    cache, turned_off = inductor_cache
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "root"))
    port = NamesACacheFile(port_or_skip("jax_checkpoint"), cache, failures=1)
    canonical = port_or_skip("flax_linen")
    outcome = run_property(BY_KEY["b_forward"], port, lambda: canonical, max_examples=3)
    assert outcome.status == "pass", outcome.message
    assert turned_off == ["inductor"]
    assert "the cache was at fault" in outcome.message
    assert str(cache) in outcome.message


def test_a_failure_that_comes_back_without_the_cache_is_the_port_s(
    tmp_path, monkeypatch, inductor_cache
):
    cache, turned_off = inductor_cache
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "root"))
    port = NamesACacheFile(port_or_skip("jax_checkpoint"), cache, failures=10**6)
    canonical = port_or_skip("flax_linen")
    outcome = run_property(BY_KEY["b_forward"], port, lambda: canonical, max_examples=3)
    assert outcome.status == "fail"
    assert turned_off == ["inductor"]  # once, not again
    assert "failed again" in outcome.message


def test_a_failure_naming_no_cache_is_not_run_again(tmp_path, monkeypatch, inductor_cache):
    _, turned_off = inductor_cache
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "root"))
    elsewhere = tmp_path / "torchinductor-but-not-the-cache"
    port = NamesACacheFile(port_or_skip("jax_checkpoint"), elsewhere, failures=1)
    canonical = port_or_skip("flax_linen")
    outcome = run_property(
        BY_KEY["b_forward"], port, lambda: canonical, max_examples=3, shrink=False
    )
    assert outcome.status == "fail"
    assert turned_off == []


def test_blamed_names_the_cache_a_chained_error_points_into(monkeypatch, tmp_path):
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    outer = RuntimeError("compile failed")
    outer.__cause__ = OSError(f"truncated: {tmp_path}/inductor/ab/x.so")
    assert framework_caches.blamed(outer) == ("inductor", tmp_path / "inductor")
    assert framework_caches.blamed(ValueError(f"{tmp_path}/jax/entry"))[0] == "JAX"
    assert framework_caches.blamed(ValueError(f"{tmp_path}/jaxother")) is None


# ---------------------------------------------------------------------------
# REMAT_CACHE=off leaves nothing; a relative XDG_CACHE_HOME is ignored
# ---------------------------------------------------------------------------


@pytest.mark.slow(reason="18 s alone: compiles inductor and XLA with every cache off")
def test_cache_off_leaves_nothing_in_the_temporary_directory(tmp_path):
    """With the cache off, what a run must write goes to its scratch directory, removed at its
    end: inductor's generated code (its own default is /tmp/torchinductor_<user>, kept) and
    its precompiled headers (kept there whatever its cache variable says, about 600 MB)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, environment.ROOT_ENV: "off", "TMPDIR": str(temporary)}
    env.pop(environment.SCRATCH_ENV, None)
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    for cache in framework_caches.declared().values():  # the user's settings are not asked
        env.pop(cache.directory_variable, None)
        env.pop(cache.setting, None)
    ports = ["flax_linen", *(["torch_compile"] if importlib.util.find_spec("torch") else [])]
    quick = ("--no-mutants", "--examples", "1", "--profile", "ci", "--property", "b_forward")
    chosen = [argument for name in ports for argument in ("--implementation", name)]
    result = run_cli(*chosen, *quick, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_cache_off_makes_one_directory_shared_with_workers_and_removes_it(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setenv(environment.ROOT_ENV, "off")
    monkeypatch.delenv(environment.SCRATCH_ENV, raising=False)
    monkeypatch.setattr(environment, "_SCRATCH", [])
    registered = []
    monkeypatch.setattr(environment.atexit, "register", lambda f, *a: registered.append((f, a)))
    root = environment.cache_root()
    assert root.is_dir()
    assert os.environ[environment.SCRATCH_ENV] == str(root)  # a worker spawned now inherits it
    monkeypatch.setattr(environment, "_SCRATCH", [])  # as in that worker: it reuses the dir
    assert environment.cache_root() == root
    assert len(registered) == 1  # only the process that made it removes it
    (root / "examples").mkdir()
    (root / "examples" / "x.entry").write_bytes(b"data")
    function, arguments = registered[0]
    function(*arguments)
    assert not root.exists()


@pytest.mark.parametrize("setting", ["relative/cache", "cache", "./c", ""])
def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path, setting):
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.delenv(environment.ROOT_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", setting)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert environment.cache_root() == tmp_path / "home" / ".cache" / "remat-conformance"


def test_an_absolute_xdg_cache_home_is_used(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.delenv(environment.ROOT_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert environment.cache_root() == tmp_path / "xdg" / "remat-conformance"


def test_turning_a_framework_cache_off_really_stops_it(tmp_path):
    """In a process of its own: it changes the frameworks' global settings."""
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    script = tmp_path / "turn_off.py"
    script.write_text(
        "import os, sys\n"
        f"os.environ['JAX_COMPILATION_CACHE_DIR'] = {str(tmp_path / 'jax')!r}\n"
        f"os.environ['TORCHINDUCTOR_CACHE_DIR'] = {str(tmp_path / 'inductor')!r}\n"
        "import jax, torch._inductor.config, torch._inductor.codecache\n"
        "from jax._src import compilation_cache\n"
        "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
        "from conformance.running import framework_caches\n"
        "jax.jit(lambda x: x + 1)(1.0)\n"
        "framework_caches.turn_off('JAX')\n"
        "assert not jax.config.jax_enable_compilation_cache\n"
        "assert not compilation_cache.is_cache_used(jax.devices()[0].client)\n"
        "framework_caches.turn_off('inductor')\n"
        "assert torch._inductor.config.force_disable_caches\n"
        f"assert not cache_dir().startswith({str(tmp_path / 'inductor')!r}), cache_dir()\n"
        "headers = torch._inductor.codecache._HEADER_DIR\n"
        "assert headers.startswith(cache_dir()), headers  # a damaged one is not read again\n"
        "print('ok')\n"
    )
    result = run_python([str(script)], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_a_cache_turned_off_after_a_failure_in_it_is_not_laid_at_the_port_s_door(tmp_path):
    """Turning a damaged cache off changes the worker's environment (inductor's directory):
    that is the suite's doing. The port passes, its outcome says why it ran twice, and no
    warning says the port changed process-wide state."""
    hostile = write_hostile_ports(tmp_path)
    args = ["-m", "conformance", "--json", "--no-mutants", "--profile", "dev", "--examples", "3"]
    args += ["--implementation", "cache_fault_port", "--property", "b_forward"]
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    done = run_python(args, hostile, env=env)
    report = run_json(done)
    forward = outcomes_of(report, "cache_fault_port")["b_forward"]
    assert forward["status"] == "pass", forward
    assert "the cache was at fault, not the port" in forward["message"]
    assert "changed process-wide state" not in done.stdout + done.stderr
