"""What the project declares about versions, read without importing any framework.

- each extra's requirements: `pyproject.toml` in a source checkout, else the installed
  metadata of remat-conformance (`importlib.metadata`), markers evaluated for this machine;
- the pins of `constraints.txt` (a source checkout's, or the file given);
- which ports an extra serves and what their stacks ask of a sweep (the manifests).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from implementations import manifests

from ..distribution import DISTRIBUTION


def packaging_lib() -> Any:
    """The `packaging` library: installed, or the copy pip vendors."""
    try:
        import packaging.markers
        import packaging.requirements
        import packaging.specifiers
        import packaging.version
    except ImportError:  # pragma: no cover - pip always carries it
        from pip._vendor import packaging
        from pip._vendor.packaging import markers, requirements, specifiers, version  # noqa: F401
    return packaging


def normalize(name: str) -> str:
    """A distribution's name as the index spells it (PEP 503): `ml_dtypes` is `ml-dtypes`."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """One requirement of an extra, its marker already found true here.

    `name`: normalized; `extras`: its own extras (`mlx[cpu]`); `specifier`: `>=0.28`."""

    name: str
    extras: tuple[str, ...] = ()
    specifier: str = ""

    def at(self, version: str | None) -> str:
        """The requirement as pip takes it: at `version` (`jax==0.7.0`), else as declared."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{f'=={version}' if version else self.specifier}"


def source_root() -> Path | None:
    """The source checkout this package runs from (its pyproject.toml names the project), or
    None when it is installed."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    return root if _pyproject(pyproject).get("project", {}).get("name") == DISTRIBUTION else None


@functools.cache
def _pyproject(path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(path.read_text(encoding="utf-8"))


@functools.cache
def declared() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The core dependencies and each extra's requirement strings (markers as written)."""
    root = source_root()
    if root is not None:
        project = _pyproject(root / "pyproject.toml")["project"]
        extras = project.get("optional-dependencies", {})
        return tuple(project.get("dependencies", ())), {k: tuple(v) for k, v in extras.items()}
    try:
        meta = metadata.metadata(DISTRIBUTION)
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return (), {}
    names = meta.get_all("Provides-Extra") or []
    lib = packaging_lib()
    core, extras = [], {name: [] for name in names}
    for text in requires:
        requirement = lib.requirements.Requirement(text)
        marker = requirement.marker
        if marker is None or not _mentions_extra(str(marker)):
            core.append(text)
            continue
        for name in names:
            if marker.evaluate({"extra": name}):
                extras[name].append(text)
    return tuple(core), {k: tuple(v) for k, v in extras.items()}


def _mentions_extra(marker: str) -> bool:
    return re.search(r"\bextra\s*==", marker) is not None


def extras() -> dict[str, tuple[str, ...]]:
    """Each extra's requirement strings, as declared."""
    return declared()[1]


def _parse(texts: tuple[str, ...], extra: str = "") -> list[Requirement]:
    lib = packaging_lib()
    found: list[Requirement] = []
    for text in texts:
        requirement = lib.requirements.Requirement(text)
        marker = requirement.marker
        if marker is not None and not marker.evaluate({"extra": extra}):
            continue  # a requirement for another platform
        name = normalize(requirement.name)
        if name == DISTRIBUTION:  # an extra made of extras: `engines`, `all`
            for inner in sorted(requirement.extras):
                found += requirements(inner)
            continue
        found.append(
            Requirement(name, tuple(sorted(requirement.extras)), str(requirement.specifier))
        )
    return found


def requirements(extra: str) -> list[Requirement]:
    """The requirements `extra` installs on this machine (an extra of extras expanded)."""
    return _parse(extras().get(extra, ()), extra)


def core() -> list[Requirement]:
    """The suite's own dependencies (numpy, hypothesis, rich)."""
    return _parse(declared()[0])


# ---------------------------------------------------------------------------
# constraints.txt
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraints:
    """A constraints file: its lines, and the distributions it pins (`name==version`)."""

    path: str
    lines: tuple[str, ...]

    @functools.cached_property
    def pins(self) -> dict[str, str]:
        found = {}
        for line in self.lines:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
            if match:
                found[normalize(match.group(1))] = match.group(2)
        return found

    def without(self, names: set[str]) -> str:
        """The file's text with the lines of `names` left out."""
        kept = []
        for line in self.lines:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
            if match and not line.lstrip().startswith("#") and normalize(match.group(1)) in names:
                continue
            kept.append(line)
        return "\n".join(kept) + "\n"


def constraints_file() -> Path | None:
    """The source checkout's constraints.txt (None for an installed package)."""
    root = source_root()
    found = None if root is None else root / "constraints.txt"
    return found if found is not None and found.is_file() else None


def read_constraints(path: str | Path) -> Constraints:
    text = Path(path).read_text(encoding="utf-8")
    return Constraints(str(path), tuple(text.splitlines()))


# ---------------------------------------------------------------------------
# Ports and stacks (the manifests)
# ---------------------------------------------------------------------------


def extras_of(port: str) -> list[str]:
    """The extras a built-in port needs (`keras_jax`: keras and jax)."""
    entry = manifests.port(port)
    return [] if entry is None else [e for e in entry[1].extra.split(",") if e]


def ports_of(extra: str) -> list[str]:
    """The ports that need `extra`, in registration order, the sharded ones left out (they run
    under the scale profile, or when named)."""
    return [
        name
        for name, (_, entry) in manifests.ports().items()
        if extra in extras_of(name) and entry.profile != manifests.SCALE
    ]


def sweepable() -> list[str]:
    """The extras a sweep takes: each names distributions and serves ports."""
    return [
        extra
        for extra in extras()
        if requirements(extra) and any(extra in extras_of(name) for name in manifests.ports())
        and not _is_group(extra)
    ]  # fmt: skip


def _is_group(extra: str) -> bool:
    """An extra made of other extras only (`engines`, `all`)."""
    lib = packaging_lib()
    texts = extras().get(extra, ())
    return bool(texts) and all(
        normalize(lib.requirements.Requirement(t).name) == DISTRIBUTION for t in texts
    )


def named_only() -> dict[str, str]:
    """Distribution -> why a sweep runs its versions other than the pin only when named."""
    found: dict[str, str] = {}
    for manifest in manifests.manifests():
        found.update({normalize(k): v for k, v in manifest.named_only.items()})
    return found


def build_requires(ports: list[str]) -> tuple[str, ...]:
    """What the ports' stacks' sdists import while they build, in order, once each."""
    found: dict[str, None] = {}
    for name in ports:
        entry = manifests.port(name)
        if entry is not None:
            found.update(dict.fromkeys(entry[0].build_requires))
    return tuple(found)


def families(ports: list[str]) -> set[str]:
    """The instrument families and stacks of the ports: whose degradations concern them."""
    found: set[str] = set()
    for name in ports:
        entry = manifests.port(name)
        if entry is not None:
            found |= {entry[0].family_of(entry[1]), entry[0].stack}
    return found
