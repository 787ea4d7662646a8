"""Facts `compare` puts on screen agree with the rest of the report (issue 76, items 5, 7)."""

from __future__ import annotations

from conformance import comparison as compare
from conformance.checking.properties import k_composition as composition
from conformance.comparison.model import Residuals
from conformance.tables.kinds import compare as render


def _residuals(recomputed, backward_matmuls, rerun_matmuls=None) -> Residuals:
    return Residuals(0, 0, [], recomputed, 1, "test", "suite", backward_matmuls, rerun_matmuls)


def _recomputed_cell(off: Residuals, on: Residuals):
    row = compare.PortComparison("tfjs", "available", residuals={"off": off, "on": on})
    table = render.summary_table(compare.Comparison(0, 3, 4, "flax_linen", [row]))
    column = [c.name for c in table.columns].index("recomp.\n(on)")
    return table.rows[0].cells[column]


def test_tfjs_reruns_the_matmul_its_composition_row_counts():
    # tfjs's records as its port reports them (D = 3, F = 4): by name it reruns Relu and Add
    # alone, since BatchMatMul runs for the gradient too; by count its backward runs one
    # BatchMatMul more with the checkpoint on (x @ W1 again), which (k) reads as one rerun.
    off = _residuals({}, 4)
    on = _residuals({"Relu": 1, "Add": 1}, 5)
    assert composition.rerun_matmuls(on, off) == 1  # the composition matrix's "rerun mm"
    cell = _recomputed_cell(off, on)
    assert cell.text == "3 ops\n1 matmul"  # was "2 ops\n0 matmul"


def test_a_stack_that_names_its_rerun_matmuls_keeps_its_count():
    off = _residuals({}, None)
    on = _residuals({"dot_general": 1, "add": 2, "max": 1}, None)
    assert _recomputed_cell(off, on).text == "4 ops\n1 matmul"
    counted = _residuals({"dot_general": 2}, 6, rerun_matmuls=2)
    assert _recomputed_cell(_residuals({}, 4), counted).text == "2 ops\n2 matmul"


def test_compare_records_its_machine_and_the_page_shows_it(monkeypatch):
    # `compare` measured in-process on one numpy port (autograd as the canonical, so no lane
    # process starts), its measurements stubbed: what is under test is what the report keeps.
    import implementations
    from conformance.comparison import measure, restore
    from conformance.page.documents import Document
    from conformance.tables.kinds import plain as tables

    monkeypatch.setattr(implementations, "CANONICAL", "hips_autograd")
    for name in ("exact_results", "expected_results"):
        monkeypatch.setattr(measure, name, lambda *args: None)
    monkeypatch.setattr(
        measure,
        "measure_status",
        lambda status, *args: (compare.PortComparison(status.name, "available"), None),
    )
    data = measure.run(0, 3, 4, ["hips_autograd"], repeats=1).to_json()
    found = data["machine"]
    assert found["cores"]
    assert found["cpu"]
    assert restore.from_json(data).to_json()["machine"] == found  # kept through the page's reading
    row = tables.machine([Document("compare.json", "compare", data)]).rows[0]
    where = row.cells[2].text
    assert where != "not recorded"
    assert found["cpu"] in where


def test_the_page_says_the_float32_matmul_setting_once():
    from conformance.page import build

    row = lambda name, default: compare.PortComparison(  # noqa: E731
        name, "available", matmul_precision={"default": default, "pinned": "HIGHEST"}
    )
    ports = [row(f"port_{i}", "DEFAULT") for i in range(7)] + [row("other", "TF32")]
    data = compare.Comparison(0, 3, 4, "flax_linen", ports).to_json()
    page = build([data], pictures=False).html
    assert page.count("float32 matmul setting (default") == 1
    assert "port_0, port_1" in page
    assert "other: TF32 → HIGHEST" in page
