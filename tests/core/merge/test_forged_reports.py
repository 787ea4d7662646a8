"""Forged and odd reports (issue 61, cases 3, 9 and 10): `merge` and `report` read them through
one reader (`tables.reports`), held to the writer's own fields; each is refused by name.

The report is the writer's (`results.to_json` of a `SuiteReport`), no run needed."""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path

import pytest

from conformance import merge
from conformance.page import documents
from conformance.running.results import PortReport, SuiteReport, to_json
from conformance.running.runner import Outcome
from conformance.tables import reports
from tests.support.helpers import run_cli

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

#: The module (`merge.combine` is its function).
combine_module = importlib.import_module("conformance.merge.combine")


def _written(ports: int = 2) -> dict:
    """A run report as `run --json` writes it: two ports, one outcome each, no mutant."""
    rows = [
        PortReport(
            name=f"port{i}",
            framework="numpy",
            outcomes=[Outcome(f"port{i}", "b_forward", "pass", examples=3, worst_ratio=0.25)],
        )
        for i in range(ports)
    ]
    report = SuiteReport("dev", 3, "all", "flax_linen", rows, mutants=[])
    return json.loads(json.dumps(to_json(report)))


def _write(tmp_path: Path, data, name: str = "forged.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _outcome(data: dict) -> dict:
    return data["ports"][0]["outcomes"][0]


def test_the_writers_report_is_read_by_merge_and_report(tmp_path):
    path = _write(tmp_path, _written())
    assert not merge.read(path).failed
    assert documents.read(path).kind == "run"


# Case 3: a status the writer never writes merged as "passed", exit 0.
@pytest.mark.parametrize("status", ["banana", "FAIL", "error"])
def test_an_unknown_status_is_refused_naming_the_file_and_the_field(tmp_path, status):
    data = _written()
    _outcome(data)["status"] = status
    path = _write(tmp_path, data)
    for reader in (merge.read, documents.read):
        with pytest.raises(reports.ReportError) as error:
            reader(path)
        text = str(error.value)
        assert text.startswith(str(path)), text
        assert "ports[0] (port0).outcomes[0] (b_forward).status" in text
        assert repr(status) in text


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["ports"][0].update(state="gone"), "ports[0] (port0).state"),
        (lambda d: d["mutants"].append({"name": "m", "status": "spared"}), "mutants[0].status"),
    ],
)
def test_unknown_states_of_ports_and_mutants_are_refused(tmp_path, edit, field):
    data = _written()
    edit(data)
    with pytest.raises(reports.ReportError, match=r"forged\.json") as error:
        merge.read(_write(tmp_path, data))
    assert field in str(error.value)


# Case 9: wrong field types gave a TypeError deep in merge or the page.
@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: _outcome(d).update(examples="3"), "outcomes[0] (b_forward).examples"),
        (lambda d: _outcome(d).update(worst_ratio=[1]), "outcomes[0] (b_forward).worst_ratio"),
        (lambda d: d["ports"][0].update(versions=["jax"]), "ports[0] (port0).versions"),
        (lambda d: d["ports"][0].update(seconds="fast"), "ports[0] (port0).seconds"),
        (lambda d: d.update(max_examples=2.5), "max_examples"),
        (lambda d: d.update(properties=["b_forward"]), "properties"),
        (lambda d: d.update(mutation_score={"killed": "all"}), "mutation_score"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused_by_name(tmp_path, edit, field):
    data = _written()
    edit(data)
    path = _write(tmp_path, data)
    for reader in (merge.read, documents.read):
        with pytest.raises(reports.ReportError, match=r"forged\.json") as error:
            reader(path)
        assert field in str(error.value)
        assert "where the writer puts" in str(error.value)


def test_non_finite_floats_as_the_writer_spells_them_are_read(tmp_path):
    data = _written()
    _outcome(data)["worst_ratio"] = "inf"
    assert merge.read(_write(tmp_path, data)).ports[0]["outcomes"][0]["worst_ratio"] == "inf"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"a":' * 100 + "1" + "}" * 100, "nested deeper than"),
        ('{"schema": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
        ('{"schema": 3, "max_examples": NaN}', "NaN is not JSON"),
        ('{"schema": 3, "max_examples": Infinity}', "Infinity is not JSON"),
        ('{"schema": 3, "max_examples": -Infinity}', "-Infinity is not JSON"),
        ('{"schema": 3, "seconds": 1e999}', "overflows a float"),
    ],
)
def test_odd_json_is_refused_by_name_without_a_traceback(tmp_path, text, message):
    path = _write(tmp_path, text)
    for reader in (merge.read, documents.read):
        with pytest.raises(reports.ReportError, match=r"forged\.json") as error:
            reader(path)
        assert message in str(error.value)


def test_bytes_that_are_not_utf8_get_a_message(tmp_path):
    path = tmp_path / "latin.json"
    data = _written()
    data["ports"][0]["reason"] = "café"
    path.write_bytes(json.dumps(data, ensure_ascii=False).encode("latin-1"))
    for reader in (merge.read, documents.read):
        with pytest.raises(reports.ReportError, match=r"latin\.json: not UTF-8 \(byte \d+"):
            reader(path)


def test_a_file_past_the_size_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(reports, "MAX_BYTES", 100)
    path = _write(tmp_path, _written())
    with pytest.raises(reports.ReportError, match=r"forged\.json: larger than"):
        merge.read(path)


def test_report_refuses_a_schema_merge_refuses(tmp_path):
    data = _written()
    data["schema"] = 999
    path = _write(tmp_path, data)
    with pytest.raises(reports.ReportError, match=r"forged\.json: schema 999 is newer"):
        documents.read(path)


@pytest.mark.parametrize("command", ["merge", "report"])
def test_the_commands_exit_2_naming_the_file_and_field(tmp_path, command):
    data = _written()
    _outcome(data)["status"] = "banana"
    path = _write(tmp_path, data)
    extra = ["--out", str(tmp_path / "page.html"), "--no-pictures"] if command == "report" else []
    done = run_cli(command, str(path), *extra)
    assert done.returncode == 2, done.stdout[-2000:]
    assert "Traceback" not in done.stderr
    assert "forged.json" in done.stderr
    assert "(b_forward).status" in done.stderr
    nested = _write(tmp_path, "[" * 100_000 + "]" * 100_000, "deep.json")
    done = run_cli(command, str(nested), *extra)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "deep.json: nested deeper than" in done.stderr


# Case 10: `_conflicts` scanned every row once per port: 45,000 ports took 255 s.
class _CountingRows(list):
    """A group's rows that count how often they are walked."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_conflicts_walk_a_groups_rows_once_whatever_their_number():
    for ports in (10, 1000):
        group = combine_module.Group("M1", "cpu")
        rows = [combine_module.Row(f"p{i}", "numpy", "available", 1, {}) for i in range(ports)]
        twin = copy.deepcopy(rows[0])
        twin.source, twin.state = 2, "broken"
        group.rows = _CountingRows([*rows, twin])
        _CountingRows.walks = 0
        found = combine_module._conflicts(group)
        assert _CountingRows.walks == 1, (ports, _CountingRows.walks)
        assert [(c.port, c.differs, c.sources) for c in found] == [("p0", ("state",), (1, 2))]


def test_the_docs_state_the_readers_bounds_and_statuses_as_the_code_has_them():
    text = " ".join((Path(__file__).parents[3] / "docs" / "REPORT.md").read_text().split())
    assert f"over {reports.MAX_BYTES // 2**20} MiB" in text
    assert f"deeper than {reports.MAX_DEPTH} levels" in text
    assert f"more than {reports.MAX_DIGITS} digits" in text
    for name, values in [
        ("an outcome's `status`", reports.STATUSES),
        ("a port's `state`", reports.PORT_STATES),
        ("a mutant's `status`", reports.MUTANT_STATUSES),
    ]:
        listed = ", ".join(f"`{v}`" for v in values)
        assert f"{name} one of {listed}" in text, name
