"""One run setup: the CLI, the Python API and the pytest plugin make their `RunConfig` by
`conformance.running.config.run_config`, so the same inputs pick the same ports, profile,
examples, timeout and reference port. The API's docstring says its defaults as the code has
them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import settings

import implementations
from conformance import api, cli
from conformance.checking.properties import PROPERTIES
from conformance.commands import run as run_command
from conformance.pytest_plugin import checked_ports, session_config
from conformance.running import profiles
from conformance.running.config import run_config
from tests.support.helpers import ROOT

#: What a run may be asked, each: the ports named, the profile, the examples, the timeout.
ASKED = [
    ((), "dev", None, None),
    ((), "ci", None, None),
    ((), "scale", None, None),
    (("jax_spmd", "pytorch"), "dev", 7, 5.0),
    (("pytorch",), "scale", None, 30.0),
]
#: The fields the three take from the same inputs (jobs is the plugin's own: one port worker
#: per xdist worker; mutants are tests of their own there).
SHARED = ("ports", "profile", "max_examples", "properties", "timeout", "canonical")


@pytest.fixture(autouse=True)
def _profile_kept(monkeypatch):
    """Each setup activates its profile: put the session's back."""
    monkeypatch.delenv(profiles.ENV_VAR, raising=False)
    before = settings.get_current_profile_name()
    yield
    settings.load_profile(before)


class _PytestConfig:
    """The plugin's options as `pytest.Config.getoption` gives them, checked."""

    def __init__(self, ports, examples, timeout):
        self.options = {
            "port": list(ports) or None,
            "conformance_examples": examples,
            "conformance_timeout": timeout,
            "conformance_in_process": False,
            "expectations": None,
        }

    def getoption(self, name):
        return self.options[name]


def _cli(ports, profile, examples, timeout):
    argv = ["run", "--profile", profile]
    argv += [word for port in ports for word in ("--implementation", port)]
    argv += ["--examples", str(examples)] if examples is not None else []
    argv += ["--timeout", str(timeout)] if timeout is not None else []
    args = cli.parser().parse_args(argv)
    run_command.validate(args)
    return run_command.config_from(args)


def _api(ports, profile, examples, timeout):
    return api.suite_config(
        list(ports) or None, profile=profile, examples=examples, timeout=timeout, mutants=True
    )


def _plugin(ports, profile, examples, timeout, monkeypatch):
    monkeypatch.setenv(profiles.ENV_VAR, profile)  # the plugin's only way to name one
    return session_config(_PytestConfig(ports, examples, timeout))


@pytest.mark.parametrize(("ports", "profile", "examples", "timeout"), ASKED)
def test_the_cli_the_api_and_the_plugin_make_the_same_run(
    ports, profile, examples, timeout, monkeypatch
):
    by_cli = _cli(ports, profile, examples, timeout)
    by_api = _api(ports, profile, examples, timeout)
    by_plugin = _plugin(ports, profile, examples, timeout, monkeypatch)
    assert by_api == by_cli  # every field, mutants asked for alike
    assert {f: getattr(by_plugin, f) for f in SHARED} == {f: getattr(by_cli, f) for f in SHARED}


@pytest.mark.parametrize("profile", profiles.PROFILES)
def test_with_no_port_named_every_entry_runs_the_profiles_ports(profile, monkeypatch):
    registered = list(implementations.registered())
    sharded = profile == profiles.SCALE
    expected = tuple(p for p in registered if (p in implementations.SHARDED) == sharded)
    assert expected  # the profile runs something
    assert _cli((), profile, None, None).ports == expected
    assert _api((), profile, None, None).ports == expected
    assert tuple(_plugin((), profile, None, None, monkeypatch).ports) == expected
    assert tuple(checked_ports(_PytestConfig((), None, None))) == expected


def test_a_named_sharded_port_runs_under_any_profile():
    assert run_config(["jax_spmd"], profile="dev").ports == ("jax_spmd",)


def test_the_defaults_are_the_profiles():
    config = run_config(profile="dev")
    assert config.max_examples == settings.get_profile("dev").max_examples
    assert config.example_timeout == profiles.TIMEOUTS["dev"]
    assert config.canonical == implementations.CANONICAL
    assert run_config().profile == profiles.DEFAULT


def test_only_run_config_makes_a_run_config():
    """The three entry points call `run_config`; none builds a `RunConfig` of its own."""
    makers = {}
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            if called and node.func.id in ("RunConfig", "run_config"):
                makers.setdefault(node.func.id, set()).add(path.relative_to(ROOT))
    assert makers["RunConfig"] == {Path("conformance/running/config.py")}
    assert {
        Path("conformance/api.py"),
        Path("conformance/commands/run.py"),
        Path("conformance/pytest_plugin.py"),
    } <= makers["run_config"]


def _argument_doc(name: str) -> str:
    found = re.search(rf"- `{name}`: (.*?)(?=\n    - `|\n\n)", api.run.__doc__, re.DOTALL)
    assert found, name
    return " ".join(found[1].split())


def test_the_api_docstring_says_the_default_profile():
    said = re.search(r'else "(\w+)"\)', _argument_doc("profile"))
    assert said, _argument_doc("profile")
    assert said[1] == profiles.DEFAULT


def test_the_api_docstring_says_every_property():
    said = re.search(r"every property, \((\w)\) to \((\w)\)", _argument_doc("properties"))
    assert said, _argument_doc("properties")
    assert (said[1], said[2]) == (PROPERTIES[0].id, PROPERTIES[-1].id)


def test_the_api_docstring_says_the_ports_the_profile_picks():
    said = _argument_doc("ports")
    assert "but the sharded ones" in said
    assert f"`{profiles.SCALE}` profile" in said
