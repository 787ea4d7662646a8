"""docs/PORTING.md held to the code: the number of properties its short version promises, the
folder it says a framework needs (against `implementations.manifests.Manifest` and every stack
folder that exists), the register step of its checklist, the properties a port without the
canonical runs, and its length (a general guide: each framework's notes are in its folder)."""

from __future__ import annotations

import dataclasses
import re

import implementations
from conformance.checking.properties import PROPERTIES
from implementations import manifests
from tests.support.helpers import ROOT

GUIDE = ROOT / "docs" / "PORTING.md"
NUMBERS = {8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
#: Manifest fields a framework may leave at their defaults (the recipe names the others).
OPTIONAL = {
    "stack",
    "engine",
    "distributions",
    "load_first",
    "load_first_why",
    "environment",
    "reads",
    "thread_variables",  # its thread pools' variables, sized to a worker's cores
    "one_thread",  # what a worker with one core sets (XLA's Eigen pool off)
    "rows",
    "devices",
    "device_module",
    "built_on",
    "caches",
    "process_variables",
    "state",
    "ci",
    "named_only",  # the version sweep: versions run only where named (torch)
    "build_requires",  # the version sweep: what an sdist imports while it builds
}


def _short_version() -> str:
    text = GUIDE.read_text()
    return text[text.index("## The short version") : text.index("## What a port is")]


def recipe(optional: bool = False) -> list[tuple[str, str]]:
    """The folder recipe's required items (`optional`: its optional ones): (path, the Manifest
    field it serves, "MANIFEST", or "" for a file no field names)."""
    found = re.search(
        r"<!-- folder-recipe -->\n(.*?)<!-- /folder-recipe -->", _short_version(), re.DOTALL
    )
    assert found, "PORTING.md's short version has no folder recipe"
    items = []
    for line in found.group(1).strip().splitlines():
        if line.startswith("- `") and (": optional, " in line) != optional:
            continue
        match = re.fullmatch(
            r"- `([^`]+)`: `(MANIFEST)`.*|- `([^`]+)`: [^`]*?(?:\(`(\w+)`\).*)?", line
        )
        assert match, f"not a recipe item: {line!r}"
        path, field = match.group(1, 2) if match.group(1) else match.group(3, 4)
        items.append((path, field or ""))
    return items


def _folder_files(stack: str) -> set[str]:
    """The files of a stack's folder, relative to it (caches left out)."""
    folder = ROOT / "implementations" / "stacks" / stack
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and "node_modules" not in p.parts
    }


def test_the_short_version_promises_as_many_passes_as_there_are_properties():
    found = re.search(r"<!-- property-count -->(\w+)<!-- /property-count -->", _short_version())
    assert found, "the short version does not say how many properties pass"
    # Every property passes but those with nothing to check on its port: (k), for a port that
    # declares no composition case, and (l), for one that offers no stateful block (each is
    # skipped, saying so).
    skipped = [p for p in PROPERTIES if p.not_applicable is not None]
    assert [p.id for p in skipped] == ["k", "l"]
    assert found.group(1) == NUMBERS[len(PROPERTIES) - len(skipped)]
    passing = PROPERTIES[len(PROPERTIES) - len(skipped) - 1].id
    named = " and ".join(f"({p.id})" for p in skipped)
    assert f"(a) to ({passing}), and {named} skipped" in _short_version()


def test_the_folder_recipe_names_exactly_what_a_manifest_needs():
    fields = {f.name for f in dataclasses.fields(manifests.Manifest)}
    named = {field for _, field in recipe() + recipe(optional=True)}
    named -= {"MANIFEST", ""}
    assert named <= fields, named - fields
    assert named | OPTIONAL == fields, fields - named - OPTIONAL
    assert not named & OPTIONAL
    assert recipe()[0] == ("implementations/stacks/<framework>/manifest.py", "MANIFEST")


def test_every_stack_folder_is_laid_out_as_the_recipe_says():
    paths = dict((field, path) for path, field in recipe() + recipe(optional=True))
    for manifest in manifests.manifests():
        folder = f"implementations/stacks/{manifest.stack}"

        def module_path(target: str) -> str:
            return target.split(":", 1)[0].replace(".", "/") + ".py"

        assert (ROOT / paths["MANIFEST"].replace("<framework>", manifest.stack)).is_file()
        expected = paths["expectations"].replace("<framework>", manifest.stack)
        assert module_path(manifest.expectations) == expected, manifest.stack
        for port in manifest.ports:
            if not port.target.startswith("exec:"):
                assert module_path(port.target).startswith(folder + "/"), port.name
        for mutant in manifest.mutants:
            assert re.fullmatch(rf"{folder}/\w+_mutants\.py", module_path(mutant.target)), mutant
        if manifest.bench:
            block = paths["bench"].replace("<framework>", manifest.stack)
            benches = {module_path(b.module) for b in manifest.bench}
            if block in benches:  # moved onto block + instrument: the instrument beside it
                assert (ROOT / block).with_name("instrument.py").is_file(), manifest.stack
            else:  # not yet moved (issue 75): its bench module
                assert block.replace("/block.py", "/bench.py") in benches, manifest.stack
        tests = paths["tests"].replace("<framework>", manifest.tests).rstrip("/")
        assert (ROOT / tests).is_dir(), manifest.stack


def test_every_stack_folder_holds_what_the_guide_requires_and_the_optional_files_are_optional():
    # Every framework's folder (the ones with a manifest) holds each required file; each
    # optional one is in some folders and not in others (else it would be required, or gone).
    stacks = [p.parent.name for p in sorted(ROOT.glob("implementations/stacks/*/manifest.py"))]
    prefix = "implementations/stacks/<framework>/"
    required = [path for path, _ in recipe() if path.startswith(prefix)]
    fixed = [path[len(prefix) :] for path in required if "<port>" not in path]
    assert {"manifest.py", "README.md", "expectations.py"} <= set(fixed)
    assert "the package's `__init__.py`" in _short_version()  # on the manifest's line
    fixed.append("__init__.py")
    for stack in stacks:
        files = _folder_files(stack)
        assert set(fixed) <= files, (stack, set(fixed) - files)
        assert any(f.endswith("_mutants.py") for f in files), stack
    for path, _ in recipe(optional=True):
        assert path.startswith(prefix), path
        having = [stack for stack in stacks if path[len(prefix) :] in _folder_files(stack)]
        assert 0 < len(having) < len(stacks), (path, having)


def _section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_guide_stays_a_general_guide():
    # Each framework's notes live in its stack folder's README
    # (tests/core/docs/test_stack_readmes.py).
    assert len(GUIDE.read_text().splitlines()) <= 500


def test_the_register_step_names_only_what_the_code_has():
    (step,) = re.findall(r"^9\. \*\*Register\.\*\*.*?(?=^10\. )", GUIDE.read_text(), re.M | re.S)
    # The registry is derived from the manifests: a port is registered by its PortEntry.
    assert "`PortEntry`" in step
    assert "`MANIFEST`" in step
    assert set(implementations.BUILTIN) == set(manifests.ports())
    for name in re.findall(r"`implementations\.(\w+)`", step):
        assert hasattr(implementations, name), name
    for path in re.findall(r"`((?:implementations|conformance)/[\w/<>.]+\.py)`", step):
        pattern = path.replace("<framework>", "*")
        assert list(ROOT.glob(pattern)), path
    for word in re.findall(r"`(_?[A-Z][A-Z_]+)`", step):  # a registry table it names
        assert word == "MANIFEST" or hasattr(implementations, word), word


def test_a_port_without_the_canonical_runs_the_properties_that_need_none():
    found = re.search(r"<!-- own-properties -->(.*?)<!-- /own-properties -->", GUIDE.read_text())
    assert found, "the guide does not say which properties need no canonical port"
    named = re.findall(r"\((\w)\)", found.group(1))
    assert named == [p.id for p in PROPERTIES if not p.needs_canonical]
