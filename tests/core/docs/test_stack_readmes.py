"""Each stack folder's README.md, held to its manifest and expectations: a framework is one
folder, docs included. The README names every port of the stack and every documented
degradation of its expectations (with its probe); the porting guide links every README."""

from __future__ import annotations

import importlib

import pytest

from implementations import manifests
from tests.support.helpers import ROOT

GUIDE = (ROOT / "docs" / "PORTING.md").read_text()
STACKS = sorted(path.parent.name for path in ROOT.glob("implementations/stacks/*/manifest.py"))


def _readme(stack: str) -> str:
    return (ROOT / "implementations" / "stacks" / stack / "README.md").read_text()


def test_every_manifest_is_a_stack_folder_found_here():
    assert sorted(m.stack for m in manifests.manifests()) == STACKS


@pytest.mark.parametrize("stack", STACKS)
def test_the_readme_names_every_port_and_links_the_guide(stack):
    text = _readme(stack)
    assert text.startswith("# "), stack
    assert "](../../../docs/PORTING.md)" in text
    (manifest,) = [m for m in manifests.manifests() if m.stack == stack]
    for port in manifest.ports:
        assert f"`{port.name}`" in text, port.name


@pytest.mark.parametrize("stack", STACKS)
def test_the_readme_lists_every_documented_degradation(stack):
    (manifest,) = [m for m in manifests.manifests() if m.stack == stack]
    module, _, attr = manifest.expectations.partition(":")
    expectations = getattr(importlib.import_module(module), attr)  # imports no framework
    section = _readme(stack).split("## Degradations", 1)[1]
    for degradation in expectations.degradations:
        probe = degradation.probe.rpartition(":")[2]
        line = next((ln for ln in section.splitlines() if f"`{probe}`" in ln), "")
        assert f"`{degradation.family}`, `{degradation.policy}`" in line, probe
    if not expectations.degradations:
        assert "None documented" in section


def test_the_guide_links_every_stack_readme():
    for stack in STACKS:
        assert f"](../implementations/stacks/{stack}/README.md)" in GUIDE, stack


def _departing(stack: str) -> list:
    """The stack's stateful declarations that depart from the canonical: (port, variant, its
    declaration) (property (l); `expectations.stateful`)."""
    (manifest,) = [m for m in manifests.manifests() if m.stack == stack]
    module, _, attr = manifest.expectations.partition(":")
    expectations = getattr(importlib.import_module(module), attr)  # imports no framework
    return [
        (port, variant, declaration)
        for port, table in expectations.stateful.items()
        for variant, declaration in table.items()
        if declaration.degradations
    ]


#: The stacks with a variant that departs (the others have nothing to name).
DEPARTING = [stack for stack in STACKS if _departing(stack)]


def test_the_stacks_with_departures_are_the_measured_ones():
    # Every stack whose checkpoint updates state twice or redraws masks (issue 78's matrix).
    assert len(DEPARTING) >= 8, DEPARTING


@pytest.mark.parametrize("stack", DEPARTING)
def test_the_readme_names_every_stateful_degradation_and_its_repro(stack):
    # The block with variables and RNGs (property (l)): each variant that departs from the
    # canonical is named in the README's "Randomness and state" section, with its repro.
    departing = _departing(stack)
    section = _readme(stack).split("## Randomness and state", 1)[1].split("\n## ", 1)[0]
    for port, variant, declaration in departing:
        line = next((ln for ln in section.splitlines() if f"`{port}`, `{variant}`" in ln), "")
        assert line, f"{stack}: no line names `{port}`, `{variant}`"
        if declaration.repro:
            assert f"](../../../{declaration.repro})" in line, (port, variant)
        assert all(f"{d.part} {d.count}" in line for d in declaration.degradations), line
