"""Every flag and environment variable is checked before any work: exit 2, one line naming it.

The bad-argument cases run in this process, through `cli.main`, with every
entry into real work (preparing the cache, loading a port, the suite, the
comparison, the bench, reading reports, exporting vectors) replaced by a
function that fails the test: a case passes only if the command stopped
before all of them. One subprocess checks that no framework was imported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import hypothesis
import pytest
from hypothesis.core import encode_failure

from conformance import cli, pytest_plugin
from conformance.commands import arguments
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

HAS_PROC = Path("/proc/self").is_dir()  # a directory nobody can create files in, even root
FRAMEWORKS = ("jax", "flax", "torch", "tensorflow", "keras", "mlx", "haiku", "equinox")

# (argv, the flag the one line must name); "{tmp}" is a fresh empty directory.
BAD = [
    # run
    (["run", "--timeout", "0"], "--timeout"),
    (["run", "--timeout", "-1"], "--timeout"),
    (["run", "--timeout", "nan"], "--timeout"),
    (["run", "--timeout", "inf"], "--timeout"),
    (["run", "--timeout", "soon"], "--timeout"),
    (["run", "--compute-timeout", "0"], "--compute-timeout"),
    (["run", "--compute-timeout", "nan"], "--compute-timeout"),
    (["run", "--timeout", "20", "--compute-timeout", "10"], "--compute-timeout"),
    (["run", "--compute-timeout", "60"], "--compute-timeout"),  # under the default 120 s
    (["run", "--jobs", "0"], "--jobs"),
    (["run", "--jobs", "-1"], "--jobs"),
    (["run", "--jobs", "many"], "--jobs"),
    (["run", "--examples", "0"], "--examples"),
    (["run", "--examples", "-5"], "--examples"),
    (["run", "--examples", "2.5"], "--examples"),
    (["run", "--implementation", "nope"], "--implementation"),
    (["run", "--canonical", "nope"], "--canonical"),
    (["run", "--property", "z"], "--property"),
    (["run", "--property", "c_vjpp"], "--property"),
    (["run", "--profile", "nope"], "--profile"),
    (["run", "--reproduce", "garbage"], "--reproduce"),
    (["run", "--reproduce", "1.0:AAAA"], "--reproduce"),
    (["run", "--reproduce", f"{hypothesis.__version__}:AQ=="], "--reproduce"),
    (["run", "--markdown", "{tmp}/no/such/dir/x.md"], "--markdown"),
    (["run", "--markdown", "{tmp}"], "--markdown"),
    (["run", "--expectations", "{tmp}/missing"], "--expectations"),
    (["--examples", "0"], "--examples"),  # `run` is the default command
    # compare
    (["compare", "--dim", "0"], "--dim"),
    (["compare", "--dim", "-5"], "--dim"),
    (["compare", "--features", "0"], "--features"),
    (["compare", "--seed", "-1"], "--seed"),
    (["compare", "--seed", str(2**63)], "--seed"),
    (["compare", "--repeats", "0"], "--repeats"),
    (["compare", "--implementation", "pytorh"], "--implementation"),
    # bench
    (["bench", "--seed", "-1"], "--seed"),
    (["bench", "--out", "{tmp}/a-file"], "--out"),
    (["bench", "--batch", "0"], "--batch"),
    (["bench", "--features", "0"], "--features"),
    (["bench", "--repeats", "0"], "--repeats"),
    (["bench", "--max-repeats", "0"], "--max-repeats"),
    (["bench", "--repeats", "20", "--max-repeats", "10"], "--max-repeats"),
    (["bench", "--depths", "1", "0"], "--depths"),
    (["bench", "--framework", "nope"], "--framework"),
    # merge
    (["merge", "{tmp}/a-file", "--out", "{tmp}"], "--out"),
    (["merge", "{tmp}/a-file", "--markdown", "{tmp}/no/x.md"], "--markdown"),
    # vectors
    (["vectors", "check", "--implementation", "nope"], "--implementation"),
    (["vectors", "check", "--implementation", "pytorch", "--vectors", "{tmp}/x.json"], "--vectors"),
    (["vectors", "check", "--implementation", "pytorch", "--vectors", "{tmp}/a-file"], "--vectors"),
    (["vectors", "export", "{tmp}/no/stem"], "path"),
]
if HAS_PROC:
    BAD += [
        (["bench", "--out", "/proc/nope"], "--out"),
        (["merge", "{tmp}/a-file", "--out", "/proc/merged.json"], "--out"),
        (["run", "--markdown", "/proc/matrix.md"], "--markdown"),
        (["vectors", "export", "/proc/golden"], "path"),
    ]


@pytest.fixture
def no_work(monkeypatch):
    """Every way into real work, made to fail the test if a command reaches it."""
    import implementations
    from conformance import benchmark as bench
    from conformance import comparison as compare
    from conformance import merge
    from conformance.checking import vectors
    from conformance.running import environment, suite

    def started(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    for module, name in [
        (environment, "prepare"),
        (implementations, "load"),
        (suite, "run_suite"),
        (compare, "run"),
        (bench, "run"),
        (bench, "load_frameworks"),
        (merge, "read_all"),
        (vectors, "export"),
        (vectors, "check"),
    ]:
        monkeypatch.setattr(module, name, started)


def _argv(argv: list[str], tmp: Path) -> list[str]:
    (tmp / "a-file").write_text("not a directory, not a manifest\n")
    return [word.replace("{tmp}", str(tmp)) for word in argv]


def _one_line_naming(capsys, flag: str, command: str) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"python -m conformance {command}"), lines[0]
    assert ": error: " in lines[0]
    assert flag in lines[0]
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(("argv", "flag"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_argument_is_one_line_and_exit_2_before_any_work(
    argv, flag, tmp_path, capsys, monkeypatch, no_work
):
    monkeypatch.delenv("REMAT_PROFILE", raising=False)
    words = _argv(argv, tmp_path)
    before = sorted(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exited:
        cli.main(words)
    assert exited.value.code == 2
    command = argv[0] if argv[0] in cli.COMMANDS else "run"
    _one_line_naming(capsys, flag, command)
    assert sorted(tmp_path.iterdir()) == before  # nothing made, not even a probe's file


def test_a_bad_profile_in_the_environment_is_a_usage_error(capsys, monkeypatch, no_work):
    monkeypatch.setenv("REMAT_PROFILE", "nope")
    with pytest.raises(SystemExit) as exited:
        cli.main(["run"])
    assert exited.value.code == 2
    line = _one_line_naming(capsys, "REMAT_PROFILE", "run")
    assert "'nope'" in line
    assert "dev, ci, thorough" in line


def test_the_flag_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("REMAT_PROFILE", "nope")
    args = cli.parser().parse_args(["run", "--profile", "dev"])
    cli.COMMANDS["run"].validate(args)
    assert args.profile == "dev"


def test_a_report_merge_cannot_read_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["merge", str(tmp_path / "missing.json"), "--out", str(tmp_path / "m.json")])
    assert exited.value.code == 2
    _one_line_naming(capsys, "missing.json: cannot read it", "merge")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc, where no file can be made")
def test_the_default_bench_out_is_checked_too(capsys, monkeypatch, no_work):
    monkeypatch.chdir("/proc")  # bench-out would be made here, after the sweep
    with pytest.raises(SystemExit) as exited:
        cli.main(["bench"])
    assert exited.value.code == 2
    _one_line_naming(capsys, "--out", "bench")


def test_a_near_miss_says_did_you_mean(capsys, no_work):
    with pytest.raises(SystemExit):
        cli.main(["run", "--implementation", "pytorh"])
    assert "did you mean 'pytorch'?" in capsys.readouterr().err


def test_the_bad_cases_import_no_framework():
    """In a fresh interpreter, every bad case stops before any framework is imported."""
    cases = [argv for argv, _ in BAD if not any("{tmp}" in word for word in argv)]
    script = (
        "import json, sys\n"
        "from conformance import cli\n"
        "codes = []\n"
        f"for argv in {cases!r}:\n"
        "    try:\n"
        "        codes.append(cli.main(argv))\n"
        "    except SystemExit as exited:\n"
        "        codes.append(exited.code)\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})\n"
        "print(json.dumps({'codes': codes, 'loaded': loaded}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REMAT_PROFILE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["codes"] == [2] * len(cases)
    assert found["loaded"] == []
    assert len(done.stderr.splitlines()) == len(cases)  # one line each, no traceback


# ---------------------------------------------------------------------------
# Good values still pass, and come back as the engines want them
# ---------------------------------------------------------------------------


def test_good_values_are_accepted_and_converted(tmp_path):
    parse = cli.parser().parse_args
    args = parse(["run", "--timeout", "0.5", "--jobs", "3", "--examples", "1",
                  "--profile", "dev", "--property", "c", "--property", "b_forward",
                  "--implementation", "pytorch", "--markdown", str(tmp_path / "m.md"),
                  "--expectations", str(tmp_path)])  # fmt: skip
    assert (args.timeout, args.jobs, args.examples, args.profile) == (0.5, 3, 1, "dev")
    assert args.property == ["c_vjp", "b_forward"]
    assert args.implementation == ["pytorch"]
    assert args.markdown == tmp_path / "m.md"
    assert args.expectations == tmp_path
    assert parse(["run"]).jobs == (os.cpu_count() or 1)  # "auto"
    args = parse(["run", "--timeout", "3", "--compute-timeout", "3"])
    assert (args.timeout, args.compute_timeout) == (3.0, 3.0)
    assert parse(["run"]).reproduce is None
    blob = f"{hypothesis.__version__}:{encode_failure([1, True]).decode()}"
    assert parse(["run", "--reproduce", blob]).reproduce == blob
    args = parse(["compare", "--seed", str(2**63 - 1), "--dim", "1", "--features", "1"])
    assert (args.seed, args.dim, args.features) == (2**63 - 1, 1, 1)
    args = parse(["bench", "--out", str(tmp_path / "new" / "dir"), "--seed", "0"])
    assert args.out == tmp_path / "new" / "dir"
    assert args.seed == 0
    assert list(tmp_path.iterdir()) == []  # checked by probing: nothing left, nothing made


def test_a_computing_example_is_stopped_at_ten_timeouts_unless_told():
    from conformance.running.config import Patience, RunConfig

    assert RunConfig(ports=(), timeout=3).example_patience == Patience(
        3, 30, "10 times the 3 s timeout"
    )
    assert RunConfig(ports=(), profile="thorough").example_patience.computing == 3000
    told = RunConfig(ports=(), timeout=3, compute_timeout=16, load_timeout=12)
    assert told.example_patience == Patience(3, 16, "--compute-timeout")
    assert told.load_patience == Patience(12, 120, "10 times the 12 s timeout")  # not told


def test_an_existing_output_file_is_replaced_and_left_as_it_was_by_the_check(tmp_path):
    path = tmp_path / "merged.json"
    path.write_text("old")
    assert arguments.writable_file(str(path)) == path
    assert path.read_text() == "old"
    with pytest.raises(argparse.ArgumentTypeError, match="is a file"):
        arguments.writable_directory(str(path))
    with pytest.raises(argparse.ArgumentTypeError, match="is a file"):
        arguments.writable_directory(str(path / "below"))


# ---------------------------------------------------------------------------
# merge judges from the outcomes
# ---------------------------------------------------------------------------


def _report(status: str = "pass", *, failed: bool = False, **extra) -> dict:
    outcome = {"property": "b_forward", "status": status, "examples": 3}
    port = {"name": "pytorch", "state": "available", "outcomes": [outcome]}
    return {"schema": 3, "failed": failed, "ports": [port], **extra}


@pytest.mark.parametrize(
    ("report", "code"),
    [
        (_report(), 0),
        (_report("fail", failed=False), 1),
        (_report("crashed", failed=False), 1),
        (_report("timeout", failed=False), 1),
        (_report(failed=False, mutants=[{"name": "m", "status": "survived"}]), 1),
        (_report(failed=False, canonical_failure="the canonical port crashed"), 1),
        (_report("xpass", failed=True), 0),  # the flag alone decides nothing
    ],
    ids=["pass", "fail", "crashed", "timeout", "survivor", "canonical", "flag-only"],
)
def test_merge_judges_from_the_outcomes_never_the_flag(report, code, tmp_path, capsys):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert cli.main(["merge", str(path), "--json"]) == code
    merged = json.loads(capsys.readouterr().out)
    assert merged["failed"] is bool(code)
    assert [r["failed"] for r in merged["reports"]] == [bool(code)]


def test_a_crashed_port_fails_the_merge(tmp_path, capsys):
    report = _report()
    report["ports"][0].update(state="crashed", outcomes=[])
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert cli.main(["merge", str(path)]) == 1


# ---------------------------------------------------------------------------
# A closed pipe ends quietly
# ---------------------------------------------------------------------------


def _into_a_closed_pipe(*words: str) -> subprocess.CompletedProcess:
    """`python -m conformance *words` with stdout a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)  # before the child starts: its first write meets a closed pipe
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "conformance", *words],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=600,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("json_flag", [["--json"], []], ids=["json", "table"])
def test_merge_into_a_closed_pipe_ends_quietly(json_flag, tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report()))
    done = _into_a_closed_pipe("merge", str(path), *json_flag)
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, as a shell reports a process it killed


def test_vectors_check_into_a_closed_pipe_ends_quietly():
    pytest.importorskip("torch")
    done = _into_a_closed_pipe("vectors", "check", "--implementation", "pytorch", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    assert "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141


@pytest.mark.parametrize("json_flag", [["--json"], []], ids=["json", "table"])
def test_a_run_into_a_closed_pipe_ends_quietly(json_flag):
    pytest.importorskip("flax")
    quick = ["--implementation", "flax_linen", "--property", "b", "--examples", "1"]
    quick += ["--profile", "dev", "--no-mutants", "--jobs", "1"]
    done = _into_a_closed_pipe("run", *quick, *json_flag)
    assert "Traceback" not in done.stderr, done.stderr
    assert "BrokenPipe" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 141


# ---------------------------------------------------------------------------
# The pytest plugin's options
# ---------------------------------------------------------------------------


class _Config:
    """What `check_options` reads of a `pytest.Config`: the parsed options."""

    def __init__(self, **given):
        defaults = dict(port=None, expectations=None, conformance_timeout=None,
                        conformance_examples=None, conformance_in_process=False)  # fmt: skip
        self.option = argparse.Namespace(**{**defaults, **given})

    def getoption(self, name: str):
        return getattr(self.option, name)


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        ({"port": ["pytorch", "nope"]}, "--port"),
        ({"expectations": "/no/such/dir"}, "--expectations"),
        ({"conformance_timeout": "nan"}, "--conformance-timeout"),
        ({"conformance_timeout": "0"}, "--conformance-timeout"),
        ({"conformance_timeout": "inf"}, "--conformance-timeout"),
        ({"conformance_examples": "0"}, "--conformance-examples"),
        ({"conformance_examples": "-5"}, "--conformance-examples"),
    ],
)
def test_a_bad_plugin_option_is_a_usage_error_naming_it(given, flag, monkeypatch):
    monkeypatch.delenv("REMAT_PROFILE", raising=False)
    with pytest.raises(pytest.UsageError) as error:
        pytest_plugin.check_options(_Config(**given))
    message = str(error.value)
    assert message.startswith(f"{flag} ")
    assert "\n" not in message


def test_good_plugin_options_are_converted(tmp_path, monkeypatch):
    monkeypatch.delenv("REMAT_PROFILE", raising=False)
    config = _Config(port=["pytorch"], expectations=str(tmp_path), conformance_timeout="2.5",
                     conformance_examples="4")  # fmt: skip
    pytest_plugin.check_options(config)
    assert config.option.port == ["pytorch"]
    assert config.option.expectations == tmp_path
    assert config.option.conformance_timeout == 2.5
    assert config.option.conformance_examples == 4


def test_the_plugin_refuses_a_bad_profile_in_the_environment(monkeypatch):
    monkeypatch.setenv("REMAT_PROFILE", "nope")
    with pytest.raises(pytest.UsageError, match="REMAT_PROFILE"):
        pytest_plugin.check_options(_Config())


def test_pytest_reports_a_bad_plugin_option_as_a_usage_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REMAT_PROFILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conformance.pytest_plugin",
         "-p", "no:cacheprovider", "--conformance-timeout", "nan", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--conformance-timeout must be a positive number of seconds, got 'nan'" in done.stderr
    assert "Traceback" not in done.stderr
