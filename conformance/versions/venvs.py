"""One virtualenv per version set, under the cache, made with pip and reused across runs.

A venv lives in `<cache>/versions/<extra>-<set>-<key>/`, where the key is a hash of what
it installs (the interpreter, the requirements, the constraints): a later sweep that asks
for the same finds it complete (its `state.json`) and reuses it; anything else makes it
again. `remove` deletes one (`versions --remove` does, after its run).

**Installing.** `pip install -c <constraints> <requirements>`: the set's pins, every other
distribution at the constraints' pin (with `--no-compile`: a module is compiled when first
imported, which takes a third of the time on the few modules a run imports). The venv is made
without pip where this interpreter's pip can install into it (`pip --python`). Where pip
finds a conflict (`ResolutionImpossible`), the pins it names are released, one round at a
time, and the release is reported: a pin
that a pinned distribution's dependency rules out (`flax 0.12.8 depends on jax>=0.10.0`),
or that a requirement rules out (`The user requested (constraint) ml-dtypes==0.6.0`). The
held pins (`Plan.held`: the canonical port's distributions, and the named-only ones such as
torch) are released only where they depend on a distribution the set moves. A set pip
cannot install is an `InstallFailed` whose message is pip's reason.

**torch is never fetched by accident.** The named-only distributions' pins are also passed
as `PIP_CONSTRAINT`, which reaches pip's build subprocesses too (`-c` does not); a stack
whose sdist imports torch while it builds (`Manifest.build_requires`: DeepSpeed) gets its
build requirements installed first and is built without build isolation.

**The project itself** is not installed: each run copies `conformance/` and
`implementations/` into the venv (`remat-src/`, with a small `.dist-info` that gives its
version) and puts that on `PYTHONPATH`, so the venv runs this checkout's code as it is now,
and nothing is written into the source tree.

**The `installed` set** (`VersionSet.in_place`) makes no venv: it runs with the running
interpreter (`sys.executable`), as it is, and its cache (the versions are the ones its own runs
use). Its folder under `<cache>/versions/` holds only its runs' outputs and the copy of the
project; `remove` never deletes the running interpreter's environment, nor a folder holding it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

import implementations

from .. import distribution
from ..running import environment
from . import project
from .plan import Plan, VersionSet
from .project import normalize

FOLDER = "versions"
STATE = "state.json"
SOURCE = "remat-src"
MAX_ROUNDS = 8
#: Variables of this process that must not reach a venv's processes.
FOREIGN = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "__PYVENV_LAUNCHER__")

Say = Callable[[str], None]


class InstallFailed(RuntimeError):
    """pip could not install a set; the message is why, in pip's words."""


@dataclass
class Venv:
    """A venv ready to run: where, whether it was reused, what pip released and installed.
    `interpreter`: the running interpreter, for the `installed` set (then `path` is only the
    folder its runs write in)."""

    path: Path
    reused: bool = False
    seconds: float = 0.0
    released: dict[str, str] = field(default_factory=dict)  # distribution -> the pin let go
    packages: dict[str, str] = field(default_factory=dict)  # distribution -> version installed
    interpreter: Path | None = None

    @property
    def python(self) -> Path:
        return self.interpreter or python_of(self.path)

    @property
    def environment(self) -> Path:
        """The Python environment the set runs in: the venv, or the running interpreter's."""
        return Path(sys.prefix) if self.interpreter else self.path


def python_of(path: Path) -> Path:
    return path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def root() -> Path:
    """Where the venvs live: `versions/` in the suite's cache."""
    return environment.cache_root() / FOLDER


def key(plan: Plan, vset: VersionSet) -> str:
    """A hash of everything a venv's contents depend on (for the `installed` set: which
    interpreter, at which versions)."""
    if vset.in_place:
        what = {"python": sys.version, "executable": sys.executable, "prefix": sys.prefix,
                "pins": vset.pins}  # fmt: skip
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]
    what = {
        "python": sys.version,
        "machine": platform.machine(),
        "requirements": plan.install(vset),
        "build": project.build_requires(plan.ports),
        "constraints": list(plan.constraints.lines) if plan.constraints else None,
        "held": sorted(plan.held(vset)),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]


def path_of(plan: Plan, vset: VersionSet) -> Path:
    return root() / f"{plan.extra}-{vset.slug}-{key(plan, vset)}"


def clean_environment() -> dict[str, str]:
    """This process's environment minus what would point a venv's processes elsewhere: the
    Python path, this venv, and every cache variable that points into this run's cache (each
    venv has a cache of its own)."""
    cache = str(environment.cache_root())
    child = {}
    for name, value in os.environ.items():
        if name in FOREIGN or name == environment.SCRATCH_ENV:
            continue
        if value.startswith(cache) and name != environment.ROOT_ENV:
            continue  # JAX_COMPILATION_CACHE_DIR, HYPOTHESIS_STORAGE_DIRECTORY, ...
        child[name] = value
    return child


def ready(plan: Plan, vset: VersionSet, say: Say) -> Venv:
    """The set's venv: reused when complete, else made and installed (`InstallFailed`); for
    the `installed` set, the running interpreter."""
    path = path_of(plan, vset)
    if vset.in_place:
        return _in_place(path, say)
    with locked(path, "make", say):
        return _ready(plan, vset, path, say)


@contextlib.contextmanager
def locked(path: Path, what: str, say: Say) -> Iterator[None]:
    """The venv at `path` held for `what` ("make", "use") until the block ends: two sweeps on
    one machine share the cache, and one would otherwise remove or rewrite what the other is
    installing or running (its copy of the project, its report). The other waits, saying so.
    The lock is the kernel's (`flock`), so a sweep that dies releases it."""
    if fcntl is None:  # Windows: no flock; sweeps there must not share a cache at once
        yield
        return
    # In a folder of their own: a lock file outlives its holder (removing it would race with
    # the next taker), and it is no venv.
    folder = path.parent / ".locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{path.name}.{what}", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting: another sweep holds its venv ({what})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ready(plan: Plan, vset: VersionSet, path: Path, say: Say) -> Venv:
    state = _state(path)
    if state is not None:
        say("reusing its venv")
        return Venv(path, True, 0.0, state.get("released", {}), state.get("packages", {}))
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    start = time.monotonic()
    try:
        say("making a venv")
        without_pip = ["--without-pip"] if _parent_pip() else []
        _logged(path, [sys.executable, "-m", "venv", *without_pip, str(path)], say)
        released = _install(plan, vset, path, say)
        packages = _packages(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    venv = Venv(path, False, time.monotonic() - start, released, packages)
    state = {"released": released, "packages": packages, "seconds": venv.seconds,
             "pins": vset.pins, "key": path.name}  # fmt: skip
    (path / STATE).write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    return venv


def _in_place(path: Path, say: Say) -> Venv:
    """The running interpreter, as it is: a folder for its runs' outputs, nothing installed."""
    say("the running interpreter, no install")
    path.mkdir(parents=True, exist_ok=True)
    packages = {}
    for found in metadata.distributions():
        name = found.metadata["Name"]
        if name:
            packages.setdefault(normalize(name), found.version)
    return Venv(path, packages=packages, interpreter=Path(sys.executable))


def _state(path: Path) -> dict | None:
    try:
        state = json.loads((path / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if python_of(path).exists() and isinstance(state, dict) else None


def remove(path: Path) -> None:
    """Delete a set's venv or folder; never the running interpreter's environment, nor a
    folder that holds it (a guard: the `installed` set's runs write beside no venv)."""
    if _holds_this_interpreter(path):
        return
    shutil.rmtree(path, ignore_errors=True)


def _holds_this_interpreter(path: Path) -> bool:
    target = Path(path).resolve()
    mine = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent}
    return any(target == p.resolve() or target in p.resolve().parents for p in mine)


# ---------------------------------------------------------------------------
# pip
# ---------------------------------------------------------------------------


def _guard(plan: Plan, vset: VersionSet, path: Path) -> dict[str, str]:
    """`PIP_CONSTRAINT` pinning the named-only distributions (torch) for every pip process."""
    pins = plan.constraints.pins if plan.constraints else {}
    lines = []
    for name in project.named_only():
        version = vset.pins.get(name) or pins.get(name)
        if version:
            lines.append(f"{name}=={version}")
    if not lines:
        return {}
    guard = path / "guard-constraints.txt"
    guard.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"PIP_CONSTRAINT": str(guard)}


def _install(plan: Plan, vset: VersionSet, path: Path, say: Say) -> dict[str, str]:
    """Install the set into the venv at `path`, releasing conflicting pins; the released."""
    pins = dict(plan.constraints.pins) if plan.constraints else {}
    fixed = set(vset.pins) | {r.name for r in plan.requirements}  # never from the constraints
    held = plan.held(vset)
    extra_env = _guard(plan, vset, path)
    pip = [*pip_command(path), "install", "--disable-pip-version-check", "--no-compile"]
    build = project.build_requires(plan.ports)
    released: dict[str, str] = {}
    constraints = path / "constraints.txt"

    def write_constraints() -> list[str]:
        text = plan.constraints.without(fixed | set(released)) if plan.constraints else ""
        constraints.write_text(text, "utf-8")
        return ["-c", str(constraints)]

    no_isolation = []
    if build:
        say("installing what its sdists build with: " + " ".join(build))
        _logged(path, [*pip, *write_constraints(), *build], say, extra_env)
        no_isolation = ["--no-build-isolation"]
    for round_number in range(1, MAX_ROUNDS + 1):
        args = [*write_constraints(), *no_isolation, *plan.install(vset)]
        say(f"installing (round {round_number})" if round_number > 1 else "installing")
        done, output = _logged(path, [*pip, *args], say, extra_env, check=False)
        if done == 0:
            return released
        lines = conflict(output)
        new = releasable(lines, {k: v for k, v in pins.items() if k not in released}, held,
                         plan.swept(vset)) - fixed  # fmt: skip
        if not new:
            raise InstallFailed(reason(output, lines, held, pins))
        for name in sorted(new):
            released[name] = pins[name]
        say("released " + ", ".join(f"{n}=={pins[n]}" for n in sorted(new)))
    raise InstallFailed(f"pip still finds conflicts after releasing {', '.join(released)}")


def _logged(
    path: Path,
    command: list[str],
    say: Say,
    extra_env: dict[str, str] | None = None,
    *,
    check: bool = True,
) -> tuple[int, str]:
    """Run `command`, its output appended to the venv's `install.log` and its lines handed to
    `say` as they come; (exit code, output). `check`: raise `InstallFailed` on a failure."""
    env = clean_environment() | (extra_env or {})
    lines: list[str] = []
    with open(path / "install.log", "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=path,
        )
        with _LOCK:
            _RUNNING.add(process)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                lines.append(line.rstrip("\n"))
                if line.startswith(("Collecting", "Downloading", "Building", "Installing")):
                    say(line.strip()[:100])
            code = process.wait()
        finally:
            with _LOCK:
                _RUNNING.discard(process)
        log.write(f"[exit {code}]\n")
    output = "\n".join(lines)
    if check and code != 0:
        raise InstallFailed(reason(output, conflict(output), set(), {}))
    return code, output


#: The pip processes running now (a sweep installs the next set in a thread: `stop_installs`).
_RUNNING: set[subprocess.Popen] = set()
_LOCK = threading.Lock()


def stop_installs() -> None:
    """Terminate every pip this process runs (an interrupted sweep's install ahead)."""
    with _LOCK:
        running = list(_RUNNING)
    for process in running:
        if process.poll() is None:
            process.terminate()


def _parent_pip() -> bool:
    """Whether this interpreter's pip can install into another (`--python`, pip >= 22.3)."""
    try:
        from pip import __version__
    except ImportError:
        return False
    major, minor = (int(part) for part in re.findall(r"\d+", __version__)[:2])
    return (major, minor) >= (22, 3)


def pip_command(path: Path) -> list[str]:
    """pip for the venv at `path`: this interpreter's, pointed at it (a venv made without pip
    takes a fraction of a second), else the venv's own."""
    if _parent_pip():
        return [sys.executable, "-m", "pip", "--python", str(python_of(path))]
    return [str(python_of(path)), "-m", "pip"]


def _packages(path: Path) -> dict[str, str]:
    command = [*pip_command(path), "list", "--format", "json", "--disable-pip-version-check"]
    done = subprocess.run(
        command, capture_output=True, text=True, env=clean_environment(), check=False
    )
    try:
        return {normalize(p["name"]): p["version"] for p in json.loads(done.stdout)}
    except (ValueError, KeyError, TypeError):
        return {}


def conflict(output: str) -> list[str]:
    """The lines of pip's "The conflict is caused by:" block."""
    lines = output.splitlines()
    found: list[str] = []
    for index, line in enumerate(lines):
        if line.strip() == "The conflict is caused by:":
            for follow in lines[index + 1 :]:
                if not follow.strip() or follow.strip().startswith("To fix this"):
                    break
                found.append(follow.strip())
    return list(dict.fromkeys(found))


def releasable(lines: list[str], pins: dict[str, str], held: set[str], swept: set[str]) -> set[str]:
    """The constraints' pins a conflict names and a sweep may let go (module docstring)."""
    found = set()
    for line in lines:
        match = re.match(r"The user requested \(constraint\) ([A-Za-z0-9._-]+)", line)
        if match:
            name = normalize(match.group(1))
            if name in pins and name not in held:
                found.add(name)
            continue
        match = re.match(r"([A-Za-z0-9._-]+) (\S+) depends on ([A-Za-z0-9._-]+)", line)
        if match:
            name, version, needs = normalize(match.group(1)), match.group(2), match.group(3)
            if pins.get(name) == version and (name not in held or normalize(needs) in swept):
                found.add(name)
    return found


def reason(output: str, lines: list[str], held: set[str], pins: dict[str, str]) -> str:
    """Why pip failed, in a line or two of its own words."""
    if lines:
        kept = [line for line in lines if "depends on" in line or "requested" in line]
        said = "; ".join(kept or lines)
        holding = sorted(n for n in held if n in pins and any(n in line for line in lines))
        tail = (
            f" (held at the constraints' pins: {', '.join(f'{n}=={pins[n]}' for n in holding)})"
            if holding
            else ""
        )
        return f"pip finds conflicting requirements: {said}{tail}"
    errors = [line.replace("ERROR: ", "") for line in output.splitlines() if "ERROR" in line]
    if errors:
        return "; ".join(dict.fromkeys(errors))[:1000]
    return " / ".join(output.splitlines()[-3:])[:1000] or "pip failed"


# ---------------------------------------------------------------------------
# The project's code, copied in
# ---------------------------------------------------------------------------


def snapshot(path: Path) -> Path:
    """Copy this checkout's `conformance` and `implementations` packages into the venv (made
    again each run), with a `.dist-info` naming the version; the folder for `PYTHONPATH`."""
    target = path / SOURCE
    if target.exists():
        shutil.rmtree(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
    conformance = Path(__file__).resolve().parents[1]  # this package's folder, not its import
    for source in (conformance, Path(implementations.__file__).parent):
        shutil.copytree(source, target / source.name, ignore=ignore)
    version = _version()
    info = target / f"remat_conformance-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project.DISTRIBUTION}\nVersion: {version}\n", "utf-8"
    )
    return target


def _version() -> str:
    root = project.source_root()
    if root is not None:
        return project._pyproject(root / "pyproject.toml")["project"]["version"]
    return distribution.version()


def run_environment(venv: Venv, source: Path) -> dict[str, str]:
    """The environment a venv's suite runs in: this checkout's code on the path, a cache of
    the venv's own (nothing made at another version is reused); the `installed` set keeps
    this process's cache and environment (its versions are the ones it was made with)."""
    env = clean_environment()
    env["PYTHONPATH"] = str(source)
    if venv.interpreter is None:
        env[environment.ROOT_ENV] = str(venv.path / "cache")
        env["VIRTUAL_ENV"] = str(venv.path)
    elif sys.prefix != sys.base_prefix:  # this interpreter is a venv's
        env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = os.pathsep.join([str(venv.python.parent), env.get("PATH", "")])
    return env
