"""Small helpers the tests share: ports or skips, jaxprs, bits, external ports, blocked imports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import implementations
from implementations import ENTRY_POINT_GROUP, PortUnavailable

ROOT = Path(__file__).resolve().parents[2]

REMAT_NAMES = ("remat2", "remat", "checkpoint")


def port_or_skip(name: str) -> implementations.Implementation:
    """The registered port `name`, skipping the test when its framework is not installed."""
    try:
        return implementations.load(name)
    except PortUnavailable as error:
        if error.missing:
            pytest.skip(error.reason)
        raise


def remat_equations(jaxpr) -> list[str]:
    """Names of remat/checkpoint equations anywhere in a jaxpr, walked by hand.

    Sub-jaxprs are followed (jit, custom rules, loops): a checkpoint can sit inside any.
    """
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in REMAT_NAMES:
            found.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    found += remat_equations(inner)
    return found


def same_bits(a, b) -> bool:
    """The same shape, dtype and bytes (so -0.0 differs from 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def own_stack(modules: tuple[str, ...]) -> tuple[str, ...]:
    """A stack's top-level modules (its ports' `PortEntry.modules`) and jaxlib with jax: it
    comes with jax, and blocking it would block jax."""
    return (*modules, "jaxlib") if "jax" in modules else modules


def ports_own_stacks() -> dict[str, tuple[str, ...]]:
    """Each registered port's own stack: its manifest entry's modules (`own_stack`)."""
    from implementations import manifests

    return {name: own_stack(entry.modules) for name, (_, entry) in manifests.ports().items()}


def without_frameworks(directory, names) -> dict[str, str]:
    """An environment in which the named top-level modules cannot be imported.

    Each gets a shadow package in `directory` that raises `ModuleNotFoundError`
    naming it, as if it were not installed. The directory goes first on
    `PYTHONPATH`, so every process started with this environment, worker
    processes included, sees the same.
    """
    import os
    from pathlib import Path

    for name in names:
        package = Path(directory) / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (blocked for a test)'!r}, "
            f"name={name!r})\n"
        )
    path = os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def make_distribution(
    root: Path,
    name: str,
    entry_points: dict[str, str],
    modules: dict[str, str],
    groups: dict[str, dict[str, str]] | None = None,
) -> Path:
    """Write a source tree and its dist-info into `root`; return `root` for `PYTHONPATH`.

    **Arguments:**

    - `name`: the distribution's name, e.g. `"my-port-pkg"`.
    - `entry_points`: port name -> `"module:Class"`, in the suite's group.
    - `modules`: relative path -> source, e.g. `{"my_port_pkg/port.py": ...}`.
    - `groups`: more entry-point groups, group -> name -> value.
    """
    points = "\n".join(f'{port} = "{target}"' for port, target in entry_points.items())
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools>=69"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{name}"
            version = "0.1"
            dependencies = ["remat-conformance"]

            [project.entry-points."{ENTRY_POINT_GROUP}"]
            """
        )
        + points
        + "\n"
    )
    for relative, source in modules.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    # What `pip install` would write next to the package (the name normalized).
    dist_info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{p} = {t}" for p, t in entry_points.items()]
    for group, points in (groups or {}).items():
        lines += ["", f"[{group}]"] + [f"{p} = {t}" for p, t in points.items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root


def run_python(
    args: list[str], path: Path, timeout: float = 300, cwd: Path = ROOT, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`python *args` with `path` and this checkout on `PYTHONPATH`, a wide terminal, and
    `env` added to this process's environment."""
    env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": os.pathsep.join([str(path), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
        "JAX_PLATFORMS": "cpu",
    }
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`python -m conformance *args` in a subprocess, with a wide terminal for the report."""
    env = {**(os.environ if env is None else env), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def assert_identical(a, b, where: str = "value") -> None:
    """`a` and `b` are the same value, type by type: arrays of the same dtype, shape and bits,
    floats of the same bits (-0.0 and NaN included), dataclasses field by field."""
    import dataclasses
    import struct

    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray | np.generic):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, f"{where}: {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{where}: {a.shape} != {b.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: the bits differ"
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_identical(a[key], b[key], f"{where}[{key!r}]")
    elif dataclasses.is_dataclass(a):
        for field in dataclasses.fields(a):
            name = field.name
            assert_identical(getattr(a, name), getattr(b, name), f"{where}.{name}")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def readme_ports_table() -> dict[str, tuple[str, str]]:
    """The README's ports table: each port's checkpoint API cell (a "the same ..." cell
    completed from the row above) and its extra cell, by port name."""
    text = (ROOT / "README.md").read_text()
    start = re.search(r"^## The ports.*\n", text, flags=re.MULTILINE).end()
    rows, previous = {}, None
    for line in text[start:].splitlines():
        if rows and not line.startswith("|"):
            break
        found = re.match(r"^\| `(\w+)`[^|]*\|(.*)\|\s*$", line)
        if found:
            _, api, extra = [cell.strip() for cell in found.group(2).split("|")][:3]
            if api.startswith("the same") and previous is not None:
                api = f"{previous} {api}"
            previous = api
            rows[found.group(1)] = (api, extra)
    return rows
