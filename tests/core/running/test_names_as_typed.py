"""The commands take names as users type them (issue 60, item 3): several values after one
`--implementation`, `--property` or `--framework` as well as repeated flags, a port name
where a bench is asked for (or a did-you-mean naming the valid choices), and a run that
names ports hunts only the mutants of those ports' stacks."""

from __future__ import annotations

import pytest

import implementations
from conformance import cli
from conformance.commands import framework_names
from conformance.mutants import MUTANTS
from conformance.running.suite import RunConfig, plan
from implementations import manifests

TWO = ["pytorch", "jax_checkpoint"]


def _parse(argv: list[str]):
    return cli.parser().parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--implementation", *TWO],
        ["run", "--implementation", TWO[0], "--implementation", TWO[1]],
        ["run", "--port", TWO[0], "--implementation", TWO[1]],
        ["compare", "--implementation", *TWO],
        ["versions", "torch", "--implementation", *TWO],
        ["report", "a.json", "--implementation", *TWO],
    ],
)
def test_several_ports_after_one_flag_or_repeated(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}")
    assert _parse(argv).implementation == TWO


def test_a_positional_before_the_ports_is_still_the_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}")
    args = _parse(["report", "a.json", "--implementation", *TWO, "--out", "x.html"])
    assert [str(p) for p in args.reports] == ["a.json"]
    assert args.implementation == TWO


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--implementation", *TWO, "a.json"],
        ["report", "--implementation", TWO[0], "--port", TWO[1], "a.json", "--out", "x.html"],
    ],
)
def test_a_positional_after_the_ports_is_still_the_reports(argv, tmp_path, monkeypatch):
    from conformance.commands import report

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}")
    args = _parse(argv)
    report.validate(args)
    assert [str(p) for p in args.reports] == ["a.json"]
    assert args.implementation == TWO


def test_a_misspelt_port_before_a_report_is_still_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(SystemExit):
        _parse(["report", "--implementation", "pytorh", "a.json"])
    assert "did you mean 'pytorch'" in capsys.readouterr().err


def test_several_properties_after_one_flag():
    args = _parse(["run", "--property", "c", "d_on_off", "--property", "e"])
    assert args.property == ["c_vjp", "d_on_off", "e_evidence"]
    assert _parse(["versions", "torch", "--property", "c", "d"]).property == ["c_vjp", "d_on_off"]


def test_several_frameworks_after_one_flag_and_port_names_too():
    args = _parse(["bench", "--framework", "pytorch", "jax", "--framework", "torch_compile"])
    assert args.framework == ["torch", "jax", "torch_compile"]


def test_a_bench_of_a_port_is_its_stacks():
    for name, (manifest, _) in manifests.ports().items():
        bench = framework_names.bench_of_port(name)
        if bench is not None:
            assert bench in {entry.name for entry in manifest.bench}


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("pytorh", "did you mean 'pytorch', which runs 'torch'?"),
        ("tensorflw", "did you mean 'tensorflow'?"),
        ("keras_torch", "the bench of its engine is 'torch'"),
    ],
)
def test_a_wrong_framework_says_what_to_type(typed, said, capsys):
    with pytest.raises(SystemExit) as stop:
        _parse(["bench", "--framework", typed])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert said in error
    assert "invalid choice" not in error
    assert "torch_compile" in error  # the valid choices are named


def test_versions_says_a_ports_extra(capsys):
    from conformance.versions import plan as version_plan

    with pytest.raises(version_plan.PlanError, match="'pytorch' is a port: did you mean 'torch'"):
        version_plan.make("pytorch")


def _hunted(ports, tmp_path) -> set[str]:
    jobs = plan(RunConfig(ports=tuple(ports), mutants=True), tmp_path)
    return {name for job in jobs for run in job.items for name in run.mutants}


def _stack(mutant: str) -> str | None:
    return next(
        (m.stack for m in manifests.manifests() for s in m.mutants if s.name == mutant), None
    )


def test_naming_ports_hunts_only_their_stacks_mutants(tmp_path):
    hunted = _hunted(TWO, tmp_path)
    stacks = {_stack(name) for name in hunted}
    assert stacks == {"torch", "jax", None}  # None: the suite's own, in JAX's worker
    assert not {"tensorflow", "tfjs", "mlx"} & stacks
    expected = {
        name
        for name, spec in MUTANTS.items()
        if _stack(name) in ("torch", "jax") and spec.family not in implementations.SHARDED
    }
    assert hunted - {n for n in hunted if _stack(n) is None} == expected


def test_a_suite_wide_mutant_is_hunted_only_in_a_worker_the_ports_start(tmp_path):
    suite_wide = {name for name in MUTANTS if _stack(name) is None}
    assert suite_wide
    assert not _hunted(["pytorch"], tmp_path) & suite_wide
    assert suite_wide <= _hunted(["jax_checkpoint"], tmp_path)


def test_the_default_run_still_hunts_every_mutant_but_the_sharded(tmp_path):
    registered = implementations.registered()
    default = [name for name in registered if name not in implementations.SHARDED]
    assert _hunted(default, tmp_path) == {
        name for name, spec in MUTANTS.items() if spec.family not in implementations.SHARDED
    }
