"""The command line as documented (issue 60, item 7), held by reading the code: every command
has a description, every help closes its parentheses, the flags `report --make` passes are
documented, and the Python API's defaults are the command line's."""

from __future__ import annotations

import argparse
import inspect
import re

import pytest

from conformance import api, cli
from conformance.commands import bench as bench_command
from conformance.commands import report as report_command
from tests.support.helpers import ROOT

USAGE = (ROOT / "docs" / "USAGE.md").read_text(encoding="utf-8")


def _parsers(parser: argparse.ArgumentParser, name: str = "python -m conformance"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {word}")


PARSERS = dict(_parsers(cli.parser()))


@pytest.mark.parametrize("name", PARSERS)
def test_every_command_has_a_description(name):
    assert PARSERS[name].description, f"{name} --help has no description"


@pytest.mark.parametrize("name", PARSERS)
def test_every_help_closes_its_parentheses(name):
    for action in PARSERS[name]._actions:
        text = action.help or ""
        depth = 0
        for character in text:
            depth += {"(": 1, ")": -1}.get(character, 0)
            assert depth >= 0, (name, action.dest, text)
        assert depth == 0, (name, action.dest, text)


def _documented(parser: argparse.ArgumentParser) -> set[str]:
    return {
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
    }


@pytest.mark.parametrize("kind", report_command.MAKEABLE)
def test_the_flags_report_make_passes_are_documented(kind, tmp_path):
    args = argparse.Namespace(implementation=["pytorch"], profile="dev", full_bench=False)
    command, _ = report_command.make_command(kind, args, tmp_path)
    words = command[3:]  # after "python -m conformance"
    parser = PARSERS[f"python -m conformance {words[0]}"]
    for flag in (w for w in words[1:] if w.startswith("--")):
        assert flag in _documented(parser), f"{words[0]} {flag} is not in its --help"


def test_usage_says_what_no_first_call_does():
    assert "--no-first-call" in _documented(PARSERS["python -m conformance compare"])
    said = re.search(r"`--no-first-call` ([^.]*)\.", USAGE)
    assert said, "docs/USAGE.md does not document --no-first-call"
    assert "report --make compare" in said[1]


def test_the_apis_compare_defaults_are_the_clis():
    args = cli.parser().parse_args(["compare"])
    defaults = {
        name: p.default
        for name, p in inspect.signature(api.compare).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert defaults.pop("ports") is None
    assert args.implementation is None
    assert defaults.pop("first_calls") == (args.first_call and not args.no_first_call)
    assert defaults.pop("progress") is True  # as the command, which always shows it
    assert defaults == {name: getattr(args, name) for name in defaults}


def test_the_apis_bench_defaults_are_the_clis(monkeypatch):
    seen = {}

    def load_frameworks(names):
        seen["frameworks"] = list(names)
        return {}, {}

    def run(settings, loaded, **kwargs):
        seen["settings"] = settings
        return []

    monkeypatch.setattr(api, "load_frameworks", load_frameworks)
    monkeypatch.setattr(api.sweep, "run", run)
    api.bench()
    args = cli.parser().parse_args(["bench"])
    assert seen["settings"] == bench_command.settings_from(args)
    assert seen["frameworks"] == list(args.framework or bench_command.DEFAULT_FRAMEWORKS)


def test_usage_s_bench_synopsis_names_every_mode():
    parser = argparse.ArgumentParser()
    bench_command.add_arguments(parser)
    modes = [
        a.option_strings[0] for a in parser._actions if a.dest in ("policies", "scale", "schedules")
    ]
    synopsis = next(
        line for line in USAGE.splitlines() if line.startswith("python -m conformance bench")
    )
    assert len(modes) == 3
    assert all(f"[{mode}]" in synopsis for mode in modes), synopsis
