"""What a sweep installs: the extra, its ports, and the version sets, each resolved to pins.

A version set is a word of `--versions`: `lowest` (each distribution of the extra at the
lowest version its requirement allows and the index serves), `pin` (at constraints.txt's
pins), `newest` (at the newest version the index serves), or `DIST==VERSION[,DIST==VERSION
...]`, named in full (a distribution it leaves out stays at its pin, or floats where it has
none). Every other distribution stays at the constraints' pin; `venvs` releases a pin
only where pip says it conflicts.

`installed` is the versions the running interpreter has (its distributions' metadata), run
with that interpreter itself: nothing is installed (`VersionSet.in_place`). It is never
joined with another set of the same versions: that one runs in a venv of its own.

A distribution whose stack's manifest says so (`named_only`: torch, whose Linux wheels on
PyPI are CUDA builds of several GB) keeps its pin in `lowest` and `newest`: other versions
of it run only when named. A set that holding it makes the pin set again is not run, and
says so.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from implementations import manifests

from . import project, registry
from .project import Constraints, Requirement, normalize

KEYWORDS = ("lowest", "pin", "newest", "installed")
DEFAULT = ("lowest", "pin", "newest")
#: The set of the running interpreter's own versions, run in it (no venv, no install).
INSTALLED = "installed"


class PlanError(ValueError):
    """A sweep that cannot be planned (a usage error): the message names what is wrong."""


@dataclass
class VersionSet:
    """One version set: `labels` (the keywords that gave it; empty when named in full), its
    `pins` (distribution -> version installed), what was `wanted` before a named-only
    distribution was held at its pin, `notes` for the report, and `skip`: why it is not run
    (empty when it is)."""

    labels: list[str]
    pins: dict[str, str]
    wanted: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skip: str = ""

    @property
    def in_place(self) -> bool:
        """Run with the running interpreter, as it is: no venv is made, nothing installed."""
        return INSTALLED in self.labels

    @property
    def label(self) -> str:
        return " = ".join(self.labels) if self.labels else "named"

    @property
    def versions(self) -> str:
        shown = self.wanted or self.pins
        return ", ".join(f"{name} {version}" for name, version in shown.items()) or "?"

    @property
    def title(self) -> str:
        return f"{self.label} · {self.versions}"

    @property
    def slug(self) -> str:
        """A file-name-safe name: `lowest-jax0.7.0-jaxlib0.7.0`."""
        text = "-".join(
            [self.label.replace(" = ", "-"), *(f"{k}{v}" for k, v in self.pins.items())]
        )
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]


@dataclass
class Plan:
    """A sweep of one extra: see the module docstring. `extras`: every extra each venv
    installs (the swept one, the canonical port's, the other extras of its ports)."""

    extra: str
    requirements: list[Requirement]
    ports: list[str]
    extras: list[str]
    constraints: Constraints | None
    words: list[str | dict[str, str]]
    sets: list[VersionSet] = field(default_factory=list)

    @property
    def distributions(self) -> list[str]:
        return [r.name for r in self.requirements]

    @property
    def canonical_extra(self) -> str:
        return project.extras_of(manifests.CANONICAL_PORT)[0]

    def install(self, vset: VersionSet) -> list[str]:
        """The requirements pip installs for `vset`: every extra's, the set's pins in place
        of their specifiers, and the suite's own."""
        wanted: dict[str, str] = {}
        for extra in self.extras:
            for requirement in project.requirements(extra):
                text = requirement.at(vset.pins.get(requirement.name))
                wanted.setdefault(text, requirement.name)
        for requirement in project.core():
            wanted.setdefault(requirement.at(vset.pins.get(requirement.name)), requirement.name)
        named = set(wanted.values())
        for name, version in vset.pins.items():  # a pin of something no extra names
            if name not in named:
                wanted[f"{name}=={version}"] = name
        return list(wanted)

    def swept(self, vset: VersionSet) -> set[str]:
        """The distributions this set moves: the extra's and those it names."""
        return set(self.distributions) | set(vset.pins)

    def held(self, vset: VersionSet) -> set[str]:
        """Pins a conflict may not release: the canonical port's distributions (its results
        are the reference) and the named-only ones, unless this set moves them."""
        canonical = {r.name for r in project.requirements(self.canonical_extra)}
        return (canonical | set(project.named_only())) - self.swept(vset)


def parse_word(word: str) -> str | dict[str, str]:
    """A `--versions` word: a keyword, or the pins it names; `PlanError` if it is neither."""
    if word in KEYWORDS:
        return word
    pins = {}
    for part in word.split(","):
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!_-]+)\s*", part)
        if match is None:
            raise PlanError(
                f"{word!r} is not a version set: give lowest, pin, newest, installed, or "
                "DIST==VERSION[,DIST==VERSION...]"
            )
        pins[normalize(match.group(1))] = match.group(2)
    return pins


def _hint(word: str, known: list[str]) -> str:
    """A did-you-mean: a port's own extra (`pytorch`: torch), else the closest extra."""
    if manifests.port(word) is not None:
        extras = [e for e in project.extras_of(word) if e in known]
        if extras:
            return f" ({word!r} is a port: did you mean {extras[0]!r}?)"
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def make(
    extra: str,
    words: list[str] | None = None,
    ports: list[str] | None = None,
    constraints: str | Path | None = None,
) -> Plan:
    """The plan of a sweep, checked, before any registry is asked (`resolve` asks it)."""
    known = project.sweepable()
    if extra not in known:
        raise PlanError(
            f"{extra!r} is not an extra a sweep takes (one framework's extra, naming "
            f"distributions and serving ports){_hint(extra, known)}; known: {', '.join(known)}"
        )
    selected = list(dict.fromkeys(ports or project.ports_of(extra)))
    for name in selected:
        if manifests.port(name) is None:
            raise PlanError(f"{name!r} is not a built-in port: a sweep installs its extra")
    path = Path(constraints) if constraints else project.constraints_file()
    extras = [extra, project.extras_of(manifests.CANONICAL_PORT)[0]]
    for name in selected:
        extras += project.extras_of(name)
    return Plan(
        extra=extra,
        requirements=project.requirements(extra),
        ports=selected,
        extras=list(dict.fromkeys(extras)),
        constraints=None if path is None else project.read_constraints(path),
        words=[parse_word(w) for w in (words or DEFAULT)],
    )


def resolve(plan: Plan) -> list[VersionSet]:
    """Each word as pins (asking the index for lowest and newest), in version order, the same
    set given twice once (its labels joined: `pin = newest`; never `installed`'s, which runs
    in no venv). Sets `plan.sets`."""
    resolved = [_keyword(plan, w) if isinstance(w, str) else _named(plan, w) for w in plan.words]
    pinned = {name: _pin(plan, name) for name in plan.distributions}
    for vset in resolved:  # only holding a named-only pin made it the pin set: not run
        held = vset.wanted != vset.pins and not vset.skip
        if held and all(vset.pins.get(name) == pin for name, pin in pinned.items()):
            vset.skip = "; ".join(vset.notes)  # the set's state says "not run"
    found: list[VersionSet] = []
    for vset in resolved:
        twin = next(
            (f for f in found if (f.pins, f.in_place) == (vset.pins, vset.in_place) and not f.skip),
            None,
        )
        if twin is not None and not vset.skip:
            twin.labels += [label for label in vset.labels if label not in twin.labels]
            continue
        found.append(vset)
    found.sort(key=lambda s: _order(plan, s))
    plan.sets = found
    return found


def _pin(plan: Plan, name: str) -> str | None:
    return None if plan.constraints is None else plan.constraints.pins.get(name)


def _keyword(plan: Plan, word: str) -> VersionSet:
    if word == INSTALLED:
        return _installed(plan)
    vset = VersionSet([word], {})
    if word == "pin" and plan.constraints is None:
        vset.skip = "no constraints file (give --constraints PATH): the pins are unknown"
        return vset
    named_only = project.named_only()
    for requirement in plan.requirements:
        name = requirement.name
        try:
            if word == "pin":
                version = _pin(plan, name)
            elif word == "lowest":
                version = registry.lowest(name, requirement.specifier)
            else:
                version = registry.newest(name)
        except registry.RegistryError as error:
            vset.skip = str(error)
            return vset
        if version is None:
            vset.notes.append(f"{name} has no pin: pip picks it")
            continue
        vset.wanted[name] = version
        pin = _pin(plan, name)
        if name in named_only and word != "pin" and version != pin:
            if pin is None:
                vset.skip = f"{name} {version}: {named_only[name]}"
                return vset
            vset.notes.append(
                f"{name} held at its pin {pin}, not {version}: {named_only[name]}; "
                f"name it to run it (--versions {name}=={version})"
            )
            version = pin
        vset.pins[name] = version
    return vset


def _installed(plan: Plan) -> VersionSet:
    """The running interpreter's versions of the extra's distributions; not run where one is
    missing (the suite would only find its ports unavailable)."""
    vset = VersionSet([INSTALLED], {})
    for requirement in plan.requirements:
        try:
            vset.pins[requirement.name] = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            vset.skip = (
                f"{requirement.name} is not installed in this interpreter: install the extra "
                f"(pip install '{project.DISTRIBUTION}[{plan.extra}]')"
            )
            return vset
    vset.wanted = dict(vset.pins)
    return vset


def _named(plan: Plan, pins: dict[str, str]) -> VersionSet:
    return VersionSet([], dict(pins), dict(pins))


def _order(plan: Plan, vset: VersionSet) -> tuple:
    lib = project.packaging_lib()
    key = []
    for name in plan.distributions:
        try:
            key.append(lib.version.Version((vset.wanted or vset.pins).get(name, "0")))
        except lib.version.InvalidVersion:
            key.append(lib.version.Version("0"))
    return tuple(key)
