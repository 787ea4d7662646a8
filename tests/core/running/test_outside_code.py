"""No port can change another port's verdict (issue 79), checked in this process.

- the example bank keeps nothing a process that ran outside code made, and a kept reference
  that disagrees with one made now is dropped, with a warning, and made again;
- the arrays handed to a port cannot be made writable, and (h) names the one a port writes;
- a framework attribute an outside package planted is a change of process-wide state, even
  where the framework was first imported by the port that patched it;
- a working or temporary directory gone under the run is the run's error, not a failure;
- a replay for another test, or one Hypothesis cannot replay, is refused;
- an outside port that lacks its own dependency is broken, with the import error as it is;
- an entry point that claims a built-in port's name is said.

Each failed on cb1e6a1 (the subprocess cases are in test_hostile_canonical.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib.metadata import EntryPoint

import hypothesis
import numpy as np
import pytest
from hypothesis.core import encode_failure

import implementations
from conformance import cli
from conformance.checking.properties import BY_ID
from conformance.running import environment, example_bank, process_state, profiles, scratch
from conformance.running.runner import run_property
from implementations.contract import PARAM_NAMES
from tests.support.helpers import port_or_skip


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A cache directory of the test's own, under the derandomized dev profile (the bank)."""
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "cache"))
    profiles.load("dev")
    return tmp_path / "cache"


@pytest.fixture
def said(monkeypatch):
    """The warnings said (`environment.warn`), in order."""
    lines: list[str] = []
    monkeypatch.setattr(environment, "warn", lambda text, once=None: lines.append(text))
    return lines


class _Shifted:
    """The canonical port, its forward shifted by 0.25: what a patched framework would make it
    compute, under its own name and versions (so the bank files it as the canonical's)."""

    def __init__(self, canonical):
        self._canonical = canonical

    def __getattr__(self, name):
        return getattr(self._canonical, name)

    def forward(self, params, x, *, checkpoint=True):
        return np.asarray(self._canonical.forward(params, x, checkpoint=checkpoint)) + 0.25


def test_a_kept_reference_that_disagrees_with_one_made_now_is_dropped_and_made_again(
    private_cache, said
):
    canonical = port_or_skip(implementations.CANONICAL)
    port = port_or_skip("jax_checkpoint")
    poisoned = run_property(BY_ID["b"], port, lambda: _Shifted(canonical), max_examples=3)
    assert poisoned.status == "fail"  # the shifted canonical's side is what the bank kept
    outcome = run_property(BY_ID["b"], port, lambda: canonical, max_examples=3)
    assert outcome.status == "pass", outcome.message
    (warning,) = [line for line in said if "dropped, made again" in line]
    assert "disagrees with the canonical side of" in warning
    again = run_property(BY_ID["b"], port, lambda: canonical, max_examples=3)
    assert again.status == "pass"
    assert len([line for line in said if "dropped" in line]) == 1  # the entry made anew is kept


def test_a_process_that_ran_outside_code_writes_no_entry(private_cache, monkeypatch):
    monkeypatch.setitem(implementations.OUTSIDE_LOADED, "poison_port", "poison_package")
    prop = BY_ID["b"]
    cases = example_bank.cases(prop, "small", 2)

    class Reference:
        name = "fake_reference"

        def versions(self):
            return {"fake": "1"}

    made = example_bank.references(prop, cases, Reference, lambda p, c, case: 1.0)
    assert list(made) == [1.0, 1.0]
    assert made.read is False
    assert not list(private_cache.rglob("*.entry"))  # neither the cases nor the references


def test_the_canonical_s_code_is_part_of_a_reference_s_key():
    canonical = port_or_skip(implementations.CANONICAL)
    name, versions, code = example_bank.canonical_identity(canonical)
    assert (name, dict(versions)) == (canonical.name, canonical.versions())
    assert code == example_bank.canonical_code(implementations.CANONICAL)
    assert len(code) == 16


# -- what a port is handed -------------------------------------------------------------------


def _writer(base):
    class Writer(base):
        """Turns the write flag of the params and x it is handed back on, and writes them."""

        name = "writer_port"

        def forward(self, params, x, *, checkpoint=True):
            out = super().forward(params, x, checkpoint=checkpoint)
            for array in (params.w1, x):
                array.setflags(write=True)
                array[...] = array  # the same values: only the write is wrong
            return out

    return Writer()


def test_arrays_handed_to_a_port_cannot_be_made_writable(private_cache):
    from conformance.running.sealed import sealed

    (case,) = example_bank.cases(BY_ID["b"], "small", 1)  # as the bank hands it: writable
    handed = sealed(case)
    for array in [*(getattr(handed.params, n) for n in PARAM_NAMES), handed.x, handed.cotangent]:
        with pytest.raises(ValueError, match="WRITEABLE"):
            array.setflags(write=True)
    assert np.array_equal(handed.x, case.x)


def test_a_port_that_writes_what_it_is_handed_fails_h_naming_the_array(private_cache):
    canonical = port_or_skip(implementations.CANONICAL)
    from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint

    writer = _writer(JaxCheckpoint)
    hygiene = run_property(BY_ID["h"], writer, lambda: canonical, max_examples=2)
    assert hygiene.status == "fail"
    assert "[writer_port] params.w1: its write flag was turned back on" in hygiene.message
    forward = run_property(BY_ID["b"], writer, lambda: canonical, max_examples=2)
    assert forward.status == "fail"
    assert "wrote to an array it was handed read-only" in forward.message


# -- process-wide state ----------------------------------------------------------------------


def test_a_framework_attribute_planted_on_first_import_is_a_named_change(monkeypatch):
    linen = pytest.importorskip("flax.linen")
    module = type(sys)("poison_package.patch")

    def leaky_relu(x):
        return x

    leaky_relu.__module__ = module.__name__
    monkeypatch.setitem(implementations.OUTSIDE_LOADED, "poison_port", "poison_package")
    before = process_state.capture()
    # Before: as if flax had not been imported yet (the port's import brought it in).
    before["namespaces"] = {k: v for k, v in before["namespaces"].items() if "flax" not in k}
    monkeypatch.setattr(linen, "relu", leaky_relu)
    after = process_state.capture()
    change = process_state.changes(before, after)
    assert "flax.linen.relu was replaced by code of the port poison_port's package" in change


# -- the machine's faults --------------------------------------------------------------------


def test_a_working_directory_deleted_under_a_check_is_the_run_s_error(tmp_path, monkeypatch):
    canonical = port_or_skip(implementations.CANONICAL)
    from implementations.stacks.jax.jax_checkpoint import JaxCheckpoint

    doomed = tmp_path / "doomed"
    doomed.mkdir()
    monkeypatch.chdir(doomed)

    class CwdPort(JaxCheckpoint):
        """Its forward meets a working directory deleted under it, as torch's did."""

        name = "cwd_port"

        def forward(self, params, x, *, checkpoint=True):
            if doomed.exists():
                doomed.rmdir()
            os.getcwd()  # FileNotFoundError, as inside torch
            return super().forward(params, x, checkpoint=checkpoint)

    with pytest.raises(scratch.RunFault, match="the working directory was deleted"):
        run_property(BY_ID["b"], CwdPort(), lambda: canonical, max_examples=2)


def test_a_temporary_directory_gone_is_said(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    monkeypatch.setattr(tempfile, "tempdir", str(gone))
    assert scratch.environment_fault() == (
        f"the temporary directory {gone} vanished under the run: the run cannot go on; "
        "set TMPDIR to a directory that stays"
    )
    gone.mkdir()
    assert scratch.environment_fault() == ""


# -- replays ---------------------------------------------------------------------------------


def test_a_replay_for_another_test_is_a_usage_error_saying_whose(capsys):
    blob = f"pytorch:c_vjp:{hypothesis.__version__}:AXicc2RwhEIIAQARVAHI"
    argv = ["run", "--implementation", "jax_checkpoint", "--property", "b", "--reproduce", blob]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--reproduce: the blob replays pytorch's c_vjp" in line
    assert "--implementation pytorch --property c_vjp" in line


def test_a_blob_hypothesis_cannot_replay_is_the_run_s_error(private_cache):
    canonical = port_or_skip(implementations.CANONICAL)
    foreign = encode_failure([b"xx", b"yy", "text", 1.5]).decode()
    blob = f"{implementations.CANONICAL}:b_forward:{hypothesis.__version__}:{foreign}"
    with pytest.raises(scratch.RunFault, match="Hypothesis cannot replay this blob"):
        run_property(BY_ID["b"], canonical, lambda: canonical, reproduce=blob)


# -- loading ---------------------------------------------------------------------------------


def _outside(monkeypatch, name: str, target: str, dist: str = "hunt-ports"):
    point = EntryPoint(name, target, implementations.ENTRY_POINT_GROUP)
    point = point._for(type("Dist", (), {"name": dist})())
    monkeypatch.setattr(
        implementations, "entry_points", lambda group: [point] if "implementations" in group else []
    )


def test_an_outside_port_without_its_own_dependency_is_broken_with_the_error(tmp_path, monkeypatch):
    (tmp_path / "needs_dep_mod.py").write_text("import definitely_missing_dep_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _outside(monkeypatch, "needs_dep_port", "needs_dep_mod:Port")
    # Its import marks this process as having run outside code: that stays this test's.
    monkeypatch.setattr(implementations, "OUTSIDE_LOADED", {})
    implementations.load.cache_clear()
    with pytest.raises(implementations.PortUnavailable) as raised:
        implementations.load("needs_dep_port")
    implementations.load.cache_clear()
    assert raised.value.missing is False  # broken: a run that names it fails
    assert raised.value.reason == (
        "needs 'definitely_missing_dep_xyz': ModuleNotFoundError: "
        "No module named 'definitely_missing_dep_xyz'"
    )


def test_an_entry_point_claiming_a_built_in_name_is_said_in_list(monkeypatch, capsys):
    _outside(monkeypatch, "pytorch", "huntports.claim:Claim")
    assert cli.main(["list"]) == 0
    err = capsys.readouterr().err
    assert (
        "the entry point 'pytorch' of hunt-ports (huntports.claim:Claim) claims the built-in "
        "port's name: ignored, the built-in pytorch is the one checked"
    ) in err


# -- the canonical's worker --------------------------------------------------------------------


def test_the_built_in_ports_beside_the_canonical_leave_its_results_as_a_clean_process_makes_them(
    private_cache,
):
    """The canonical side of a built-in-only worker is made beside its framework's built-in
    ports: loaded here, they leave it bit for bit what the clean process (which imports no
    port but the canonical) makes."""
    from conformance.running.clean import CleanCanonical
    from conformance.running.worker import Settings
    from implementations import manifests

    canonical = port_or_skip(implementations.CANONICAL)
    (jax_stack,) = [m for m in manifests.manifests() if m.stack == "jax"]
    beside = []
    for entry in jax_stack.ports:
        if entry.profile != manifests.SCALE:
            try:
                beside.append(implementations.load(entry.name))
            except implementations.PortUnavailable:
                continue
    assert len(beside) > 1, "no built-in port to load beside the canonical"
    clean = CleanCanonical(Settings(profile="dev"))
    try:
        for key in ("b", "c"):
            prop = BY_ID[key]
            for case in example_bank.cases(prop, "small", 3):
                here = prop.prepare(canonical, case)
                there = clean.remote_prepare(prop.key, case)
                assert example_bank.agrees(here, there)
                for name in ("output", "grads"):
                    pairs = zip(_arrays(here.get(name)), _arrays(there.get(name)), strict=True)
                    for a, b in pairs:
                        assert np.array_equal(a, b), (key, name)  # bit for bit
    finally:
        clean.close()
    assert not clean.output.parent.exists()  # its own folder, made for it, goes with it


def _arrays(value) -> list:
    if value is None:
        return []
    if isinstance(value, dict):
        return [np.asarray(v) for v in value.values()]
    return [np.asarray(value)]
