"""The port template: it is not registered, and a copy left unfinished fails loudly, never passes.

"Loudly" means every property of the suite fails (none passes, none skips)
and every failure message names the `TODO(port)` that is left.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import implementations
from conformance.checking.properties import PROPERTIES
from conformance.running.runner import run_property
from implementations import _template
from implementations.contract import Implementation, Params
from tests.support.helpers import make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

TEMPLATE = Path(_template.__file__)
COPY = "unfinished_port"  # the module a user's copy becomes


def test_the_template_is_not_registered():
    targets = [target for target, _ in implementations.registered().values()]
    assert not [t for t in targets if "_template" in t], targets
    assert _template.TemplatePort.name not in implementations.registered()


def test_the_template_imports_no_framework():
    source = TEMPLATE.read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == [
        "from __future__ import annotations",
        "from typing import Any, ClassVar",
        "import numpy as np",
        "from implementations.contract import (  # noqa: F401 - the names a finished port uses",
        "from implementations.stacks import Port, Stack",
    ]


def test_every_contract_method_raises_its_todo():
    port = _template.TemplatePort()
    params = Params(np.ones((2, 3)), np.ones(3), np.ones((3, 3)), np.ones(3))
    x, cotangent = np.ones(2, np.float32), np.ones(3, np.float32)
    calls = {
        "init_params": lambda: port.init_params(0, 2, 3),
        "forward": lambda: port.forward(params, x),
        "vjp": lambda: port.vjp(params, x, cotangent),
        "backward_record": lambda: port.backward_record(params, x),
        "exercise_record": lambda: port.exercise_record(0, x, 3),
        "nn_checkpoint_forward": lambda: port.nn_checkpoint_forward(0, x, 3),
        "to_numpy": lambda: port.to_numpy(x),
        "from_numpy": lambda: port.from_numpy(x),
        "params_to_native": lambda: _template.params_to_native(params),
        "native_to_params": lambda: _template.native_to_params(params),
    }
    assert Implementation.__abstractmethods__ <= set(calls)  # every contract method is tried
    for name, call in calls.items():
        with pytest.raises(NotImplementedError, match=rf"^TODO\(port\): {name}: .*PORTING\.md"):
            call()


def test_the_todos_are_marked_in_the_source():
    source = TEMPLATE.read_text()
    # Every method body and the class attributes carry a TODO(port) comment.
    assert source.count("# TODO(port):") >= 14
    assert "docs/PORTING.md" in source


@pytest.fixture
def unfinished_copy(tmp_path, monkeypatch) -> Implementation:
    """A verbatim copy of the template, registered as a built-in port, loaded."""
    pytest.importorskip("flax")  # the canonical port, which the suite compares with
    shutil.copy(TEMPLATE, tmp_path / f"{COPY}.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(implementations.BUILTIN, "template", f"{COPY}:TemplatePort")
    implementations.load.cache_clear()
    yield implementations.load("template")
    implementations.load.cache_clear()
    sys.modules.pop(COPY, None)


def test_an_unfinished_copy_fails_every_property(unfinished_copy):
    canonical = implementations.load(implementations.CANONICAL)
    assert type(unfinished_copy).__module__ == COPY
    for prop in PROPERTIES:
        # Without shrinking: every example fails at once, and shrinking would
        # only look for the smallest of them, at ~4 s a property.
        outcome = run_property(
            prop, unfinished_copy, lambda: canonical, max_examples=3, scope="small", shrink=False
        )
        assert outcome.status == "fail", (prop.key, outcome.status, outcome.message)
        assert outcome.message.startswith("[template] "), outcome.message
        assert "NotImplementedError: TODO(port): " in outcome.message, outcome.message
        assert outcome.examples == 0, prop.key  # not a single example got through


def test_the_cli_exits_non_zero_on_an_unfinished_copy(tmp_path):
    pytest.importorskip("flax")
    # Registered the way an external package would: through the entry point.
    plugin = make_distribution(
        tmp_path,
        "unfinished-port",
        {"template": f"{COPY}:TemplatePort"},
        {f"{COPY}.py": TEMPLATE.read_text()},
    )
    # --no-shrink: every example fails at once, so shrinking would only hunt for the smallest
    # failing one (most of the run); the exit code and the messages are the same either way.
    args = ["-m", "conformance", "--implementation", "template", "--no-mutants", "--no-shrink"]
    args += ["--jobs", "1", "--json", "--profile", "dev", "--examples", "2"]
    done = run_python(args, plugin)
    assert done.returncode == 1, done.stderr[-3000:]
    (port,) = json.loads(done.stdout)["ports"]
    assert port["state"] == "available", port["reason"]
    assert len(port["outcomes"]) == len(PROPERTIES)
    for outcome in port["outcomes"]:
        assert outcome["status"] == "fail", outcome
        assert "NotImplementedError: TODO(port): " in outcome["message"], outcome
