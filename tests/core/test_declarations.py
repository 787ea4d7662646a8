"""One source for the registry: each port's own declarations, checked against every list of them.

The registry (the stacks' manifests) stays a lazy list, so that listing ports
imports no framework; these tests load every port that loads here (a Keras
port on another backend in a process of its own) and hold the list, the
README's ports table and docs/PORTING.md's to what the port class declares:
its name, extra, framework, stack and checkpoint API.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import implementations
from implementations import manifests
from implementations.stacks import Port, Stack

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PORTING = (ROOT / "docs" / "PORTING.md").read_text()

_DECLARED = """
import json, sys
import implementations, implementations.stacks
found = {}
for name in sys.argv[1:]:
    port = implementations.load(name)
    found[name] = {
        "class": type(port).__module__ + ":" + type(port).__qualname__,
        "name": port.name, "framework": port.framework, "extra": getattr(port, "extra", None),
        "checkpoint_api": port.checkpoint_api,
        "stack": port.stack.name if hasattr(port, "stack") else None,
        "is_port": isinstance(port, implementations.stacks.Port),
    }
print(json.dumps(found))
"""


def _declarations(names: list[str]) -> dict[str, dict]:
    """What the registered ports `names` declare, read off their loaded classes, in a process
    of their own: the ports of one worker group (one framework, one Keras backend) load
    together there, as they do in a run's worker."""
    done = subprocess.run(
        [sys.executable, "-c", _DECLARED, *names], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def declared() -> dict[str, dict]:
    from conformance.running.suite import worker_group

    groups: dict[str, list[str]] = {}
    for status in implementations.status():
        if status.source != "built-in":
            continue
        if status.state == "unavailable":
            continue  # its framework is not installed here; nothing to read
        assert status.state == "available", (status.name, status.reason)
        groups.setdefault(worker_group(status.name), []).append(status.name)
    found = {}
    for names in groups.values():
        found.update(_declarations(names))
    if not found:
        pytest.skip("no built-in port loads here")
    return found


def _table_rows(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the first table after the line starting with `header`, by port name."""
    start = re.search(rf"^{re.escape(header)}.*\n", text, flags=re.MULTILINE).end()
    rows = {}
    for line in text[start:].splitlines():
        if rows and not line.startswith("|"):
            break
        found = re.match(r"^\| `(\w+)`[^|]*\|(.*)\|\s*$", line)
        if found:
            rows[found.group(1)] = [cell.strip() for cell in found.group(2).split("|")]
    return rows


def test_every_builtin_port_declares_what_the_registry_says(declared):
    for name, port in declared.items():
        if implementations.BUILTIN[name].startswith(implementations.EXEC_PREFIX):
            # A process port (docs/PROTOCOL.md): its program declares itself in `hello`.
            assert port["class"] == "implementations.process.adapter:ProcessPort", name
            assert port["name"] == name
            assert port["checkpoint_api"], name
            continue
        module, _, cls = implementations.BUILTIN[name].partition(":")
        assert port["class"] == f"{module}:{cls}", name
        assert port["is_port"], f"{name} is not written against implementations.stacks.Port"
        assert port["name"] == name
        assert port["checkpoint_api"], name
        assert port["stack"] in implementations.stacks.NAMES, name


def test_the_readme_ports_table_matches_the_declarations(declared):
    rows = _table_rows(README, "## The ports")
    assert set(rows) == set(implementations.BUILTIN)
    previous = None
    for name, cells in rows.items():
        _, api, extra = cells[:3]  # port | framework | checkpoint API | extra
        # A cell "the same" (or starting so) repeats the row above.
        if api.startswith("the same") and previous is not None:
            api = f"{previous} {api}"
        previous = api
        assert extra == f"`{_extra(name)}`", name
        if name in declared:
            assert declared[name]["checkpoint_api"] in api, (name, api)


def _extra(name: str) -> str:
    return manifests.port(name)[1].extra


def test_the_ports_table_has_one_home():
    # The porting guide links to the README's table instead of keeping a second one.
    assert "../README.md#the-ports" in PORTING
    assert not re.search(r"^\| port \|", PORTING, flags=re.MULTILINE)


def test_a_port_missing_a_declaration_fails_when_its_class_is_made():
    with pytest.raises(TypeError, match=r"must declare framework, stack"):

        class NoStack(Port):  # the class statement is the test
            name = "no_stack"

    with pytest.raises(TypeError, match=r"stack must be a Stack"):

        class NotAStack(Port):
            name, framework, stack = "not_a_stack", "numpy", "ours"

    class Declared(Port):  # every declaration there: made without complaint
        name, framework, stack = "declared", "numpy", Stack("ours")

    assert Declared.stack.name == "ours"


def test_a_base_marked_abstract_needs_no_declarations():
    class Base(Port, abstract=True):
        pass

    with pytest.raises(TypeError, match=r"must declare name, framework, stack"):

        class Child(Base):
            pass
