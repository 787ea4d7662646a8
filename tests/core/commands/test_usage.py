"""Usage: `--port`, "did you mean", `--version`, a `list` that imports no framework, quiet
broken pipes, and the Python API (`conformance.run`, `.compare`, `.bench`)."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

import implementations
from conformance import cli
from implementations import found
from tests.support.helpers import ROOT, run_cli, without_frameworks

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FRAMEWORKS = ("jax", "flax", "torch", "tensorflow", "keras", "mlx", "haiku", "equinox")


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )


# --- the command line --------------------------------------------------------------------


def test_port_is_an_alias_of_implementation_wherever_it_is_accepted():
    for argv in (
        ["run", "--port", "pytorch", "--port", "haiku"],
        ["compare", "--port", "pytorch", "--port", "haiku"],
        ["vectors", "check", "--port", "pytorch", "--port", "haiku"],  # several too (issue 76)
    ):
        args = cli.parser().parse_args(argv)
        assert args.implementation == ["pytorch", "haiku"], argv


def test_every_command_takes_the_output_flags():
    flags = ["--width", "100", "--plain", "--no-color"]
    for argv in (
        ["run"],
        ["list"],
        ["compare"],
        ["bench"],
        ["merge", "report.json"],
        ["vectors", "export", "vectors-out"],
        ["vectors", "check", "--port", "haiku"],
    ):
        args = cli.parser().parse_args([*argv, *flags])
        assert (args.width, args.plain, args.no_color) == (100, True, True), argv


def test_a_misspelt_command_port_or_property_gets_a_did_you_mean(capsys):
    for argv, hint in (
        (["cmpare"], "did you mean 'compare'?"),
        (["run", "--port", "pytorh"], "did you mean 'pytorch'?"),
        (["compare", "--implementation", "hiaku"], "did you mean 'haiku'?"),
        (["run", "--property", "c_vpj"], "did you mean 'c_vjp'?"),
        # A framework's name: its ports (issue 76, item 7), Keras's on that backend among them.
        (["run", "--implementation", "jax"], "did you mean the jax ports: flax_linen, "),
        (["vectors", "check", "--port", "torch"], "the torch ports: deepspeed, keras_torch, "),
    ):
        with pytest.raises(SystemExit) as stop:
            cli.main(argv)
        assert stop.value.code == 2, argv
        error = capsys.readouterr().err
        assert hint in error, (argv, error)
        assert len(error.strip().splitlines()) == 1, error


def test_version_prints_the_installed_version():
    from importlib.metadata import version

    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"python -m conformance {version('remat-conformance')}"


# --- list ------------------------------------------------------------------------------


def test_list_imports_no_framework_and_says_so():
    code = (
        "import sys; from conformance import cli; code = cli.main(['list']); "
        f"print('IMPORTED', sorted(m for m in {FRAMEWORKS!r} if m in sys.modules)); "
        "sys.exit(code)"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "IMPORTED []" in result.stdout
    for name in implementations.BUILTIN:
        line = next(x for x in result.stdout.splitlines() if x.startswith(name + " "))
        # Installed here, so found, and never called available without an import.
        assert "found (not imported)" in line, line
        assert "available" not in line, line


def test_list_calls_an_installed_but_broken_framework_found_not_available(tmp_path):
    # torch shadowed by a package that fails on import: on the path, broken when imported.
    env = without_frameworks(tmp_path, ["torch"])
    quick = run_cli("list", env=env)
    assert quick.returncode == 0, quick.stderr
    line = next(x for x in quick.stdout.splitlines() if x.startswith("pytorch "))
    assert "found (not imported)" in line
    assert "fails on import shows only with --import" in " ".join(quick.stdout.split())
    # With --import, in the same environment: "unavailable", naming torch
    # (tests/core/commands/test_cli.py).


def test_a_framework_that_is_not_installed_reads_unavailable(monkeypatch):
    needs = {"pytorch": ("torch", "no_such_framework_here")}
    monkeypatch.setattr(found, "modules", lambda name: needs.get(name) or ("jax", "haiku"))
    result = found.find("pytorch", implementations.BUILTIN["pytorch"])
    assert result.state == "unavailable"
    assert "no_such_framework_here" in result.reason
    assert found.find("haiku", implementations.BUILTIN["haiku"]).state == "found"


def test_a_port_from_another_package_is_unknown_until_imported():
    assert found.find("theirs", "json:JSONDecoder").state == "unknown"
    assert found.find("theirs", "no_such_package_x:Port").state == "unavailable"


def test_a_quoted_entry_point_target_is_broken_without_an_import():
    result = found.find("quoted", '"some_module:Port"')
    assert result.state == "broken"
    assert "is quoted" in result.reason


def test_every_builtin_port_says_which_frameworks_it_needs():
    # A process port (exec:) needs its program, looked up on PATH instead.
    for name, target in implementations.BUILTIN.items():
        if target.startswith("exec:"):
            assert found.modules(name) is None, name
        else:
            assert found.modules(name), name


def test_a_closed_pipe_ends_list_quietly():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        f"{sys.executable} -m conformance list | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == "", result.stderr


# --- the Python API ---------------------------------------------------------------------


def test_importing_conformance_is_cheap_and_lists_the_api():
    code = (
        "import sys, conformance; "
        "print(sorted(n for n in dir(conformance) if not n.startswith('_'))); "
        f"print(sorted(m for m in {FRAMEWORKS!r} + ('numpy', 'rich', 'hypothesis') "
        "if m in sys.modules))"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    listed, imported = result.stdout.splitlines()
    assert listed == "['bench', 'compare', 'report', 'run']"
    assert imported == "[]"


def test_the_api_functions_have_docstrings_and_signatures():
    import conformance

    # The packages behind the commands have names of their own: importing them leaves the
    # API functions in place (no module replaces a function of the same name).
    import conformance.benchmark
    import conformance.comparison
    import conformance.page

    firsts = {"run": "ports", "compare": "ports", "bench": "frameworks", "report": "reports"}
    for name, first in firsts.items():
        function = getattr(conformance, name)
        assert inspect.isfunction(function), name
        assert "**Returns:**" in function.__doc__, name
        assert next(iter(inspect.signature(function).parameters)) == first, name
    assert "dim" in inspect.signature(conformance.compare).parameters


def test_the_packages_docstring_names_the_api_as_it_is():
    # Every call `conformance/__init__.py`'s docstring shows is a function of the API, with
    # those parameters and defaults, in that order, and the type it returns; every name of
    # the API is shown; every other `conformance.<name>` it names is a module of the package.
    import conformance

    doc = conformance.__doc__
    shown = re.findall(r"`conformance\.(\w+)\(([^`]*)\)`\s*->\s*`(\w+)`", doc)
    assert sorted(name for name, _, _ in shown) == sorted(conformance.__all__)
    for name, arguments, returned in shown:
        signature = inspect.signature(getattr(conformance, name))
        assert signature.return_annotation in (returned, getattr(conformance.api, returned))
        parameters = iter(signature.parameters.values())
        words = [w.strip() for w in arguments.split(",")]
        # The docstring may stop early ("..."); else it shows every parameter.
        assert words[-1] == "..." or len(words) == len(signature.parameters) + ("*" in words)
        keyword_only = False
        for word in words:
            if word in ("*", "..."):
                keyword_only = True
                continue
            parameter = next(parameters)
            said, _, default = word.partition("=")
            assert said == parameter.name, (name, said, parameter.name)
            assert (parameter.kind is inspect.Parameter.KEYWORD_ONLY) == keyword_only, said
            if default:
                assert repr(parameter.default) == default, (name, said, parameter.default)
    for name in set(re.findall(r"`conformance\.(\w+)\b", doc)) - set(conformance.__all__):
        assert importlib.util.find_spec(f"conformance.{name}") is not None, name


def test_api_report_builds_a_page_from_an_api_comparison_json(tmp_path):
    import conformance

    recorded = json.loads((ROOT / "tests/data/report/compare.json").read_text())
    page = conformance.report([recorded], html_path=tmp_path / "r.html", pictures=False)
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == page.html
    assert "compare" in page.kinds
    with pytest.raises(ValueError, match="reports"):
        conformance.report([])


def test_api_bad_arguments_name_the_argument_before_any_work():
    import conformance

    for call, words in (
        (lambda: conformance.compare(dim=0), "dim must be a positive integer"),
        (lambda: conformance.compare("pytorh"), "did you mean 'pytorch'"),
        (lambda: conformance.compare(seed=-1), "seed must be"),
        (lambda: conformance.run(properties="z"), "properties is not a known property"),
        (lambda: conformance.run(profile="nope"), "profile is not a known profile"),
        (lambda: conformance.bench("jx"), "did you mean 'jax'"),
        (lambda: conformance.bench(repeats=5, max_repeats=2), "max_repeats must be at least"),
    ):
        with pytest.raises(ValueError, match=words):
            call()
    with pytest.raises(TypeError, match="examples"):
        conformance.run(examples=2.5)


def test_api_compare_returns_the_comparison_the_json_holds():
    pytest.importorskip("flax")
    import conformance

    comparison = conformance.compare(["jax_checkpoint"], dim=4, features=3, repeats=1)
    assert [row.name for row in comparison.ports] == ["flax_linen", "jax_checkpoint"]
    assert not conformance.comparison.failed(comparison)
    data = json.loads(json.dumps(comparison.to_json(), default=str))
    assert (data["dim"], data["features"]) == (4, 3)
    row = data["ports"][1]
    assert row["warm_samples"] == 1
    assert set(row["warm_spread"]) == {"forward", "vjp"}
    # Other work while timing is measured where /proc/stat can be read (Linux).
    measured = {"others_while_timing"} if sys.platform.startswith("linux") else set()
    assert set(data["load"]) == {"before", "after"} | measured
    assert data["first_calls"] is False


def test_api_run_returns_the_suite_report_the_json_holds():
    pytest.importorskip("flax")
    import conformance

    report = conformance.run("jax_checkpoint", properties=["b", "d"], examples=2, jobs=1)
    assert [p.name for p in report.ports] == ["jax_checkpoint"]
    statuses = {o.property: o.status for o in report.ports[0].outcomes}
    assert statuses == {"b_forward": "pass", "d_on_off": "pass"}
    data = report.to_json()
    assert data["ports"][0]["name"] == "jax_checkpoint"
    assert data["failed"] is False
    assert data["mutants"] is None  # the API's default: the ports only


def test_a_process_port_is_found_by_its_program_on_path_without_starting_it():
    assert found.find("sh_port", "exec:sh -c true").state == "found"
    missing = found.find("gone", "exec:no-such-program-here --flag")
    assert missing.state == "unavailable"
    assert "'no-such-program-here'" in missing.reason
