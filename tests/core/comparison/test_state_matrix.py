"""`compare`'s randomness-and-state matrix (`comparison.state_matrix`): each API variant of the
stateful block, declared and measured on one step, held to its declaration by property (l)'s
checks; shown in the terminal, kept in `compare --json` and drawn on the report page.

On hips_autograd (numpy underneath, a step takes milliseconds): its checkpoint traces the
block again and numpy's global generator draws a second, fresh mask (issue 78's measured
facts, declared in implementations/stacks/autograd/expectations.py); an explicit seed is the
fix beside it."""

from __future__ import annotations

import dataclasses

import pytest
from rich.console import Console

from conformance.comparison import restore, state_matrix
from conformance.comparison.model import Comparison, PortComparison
from conformance.page import build
from conformance.tables.kinds import compare, compare_state
from conformance.tables.render import terminal
from implementations.stateful import StateDeclaration
from tests.support.helpers import port_or_skip

SEED, DIM, FEATURES = 3, 5, 4


@pytest.fixture(scope="module")
def autograd_port():
    return port_or_skip("hips_autograd")


@pytest.fixture(scope="module")
def cells(autograd_port):
    return {cell.variant: cell for cell in state_matrix.measure(autograd_port, SEED, DIM, FEATURES)}


def _claims_the_canonical(port_class):
    """`port_class` declaring, as an outside port would (its own `state_declarations`), that its
    default variant does what Flax does: the forward's mask replayed, the stream kept, 1 update."""

    class ClaimsTheCanonical(port_class):
        name = "claims_the_canonical"
        state_variants = {"default": port_class.state_variants["default"]}  # noqa: RUF012
        state_declarations = {  # noqa: RUF012
            "default": StateDeclaration("remat.checkpoint(block)", "np.random.seed(seed)")
        }

    return ClaimsTheCanonical()


def test_a_variant_that_departs_as_declared_is_measured_with_its_upstream_reason(cells):
    assert list(cells) == ["default", "upstream", "explicit_seed"]
    fresh = cells["default"]
    # Declared: a fresh mask, the generator a mask ahead, the statistics updated twice.
    assert (fresh.declared_replay, fresh.declared_stream, fresh.declared_updates) == (
        False,
        False,
        2,
    )
    # Measured on the step itself: one recompute seen, its mask not the forward's.
    assert fresh.recomputes == 1
    assert 0.0 < fresh.changed < 1.0
    assert (fresh.moved, fresh.updates, fresh.failed) == (True, 2, False)
    assert fresh.fix == "hips_autograd:explicit_seed"
    assert fresh.measured_by == "suite"
    assert [d.split(": ", 1)[0] for d in fresh.degradations] == ["replay", "stream", "updates"]
    assert cells["upstream"].repro == "repros/autograd_checkpoint_dropout.py"


def test_the_fix_beside_it_replays_keeps_the_stream_and_updates_once(cells):
    fixed = cells["explicit_seed"]
    assert (fixed.changed, fixed.recomputes, fixed.moved, fixed.updates) == (0.0, 1, False, 1)
    assert not fixed.failed
    assert not fixed.degradations


def test_a_claim_the_step_contradicts_is_a_cross_with_property_l_s_message(autograd_port):
    port = _claims_the_canonical(type(autograd_port))
    (cell,) = state_matrix.measure(port, SEED, DIM, FEATURES)
    assert cell.failed
    assert not cell.error
    assert cell.replay.startswith("(l.1) replay: the recompute drew a fresh mask")
    assert cell.stream.startswith("(l.2) the stream")
    assert cell.state.startswith("(l.3) state once")
    assert "expected 1" in cell.state
    assert cell.declared_by == "in the port's own state_declarations"
    assert cell.measured_by == "suite"  # the step is the built-in stack's code
    row = PortComparison(port.name, "available", states=[cell])
    comparison = Comparison(SEED, DIM, FEATURES, "flax_linen", [row])
    assert comparison.failed
    line = compare.verdict_line(comparison).text
    assert line.startswith("compare failed · 1 port against flax_linen · ✗ claims_the_canonical (")
    assert "(randomness and state)" in line


def test_a_step_that_raises_or_a_variant_never_declared_is_a_cell_that_says_so(autograd_port):
    class Raises(type(autograd_port)):
        name = "raises_in_its_step"

        def state_step(self, *args, **kwargs):
            raise RuntimeError("the block would not build")

    class Undeclared(type(autograd_port)):
        name = "undeclared"
        state_variants = {"mine": "my own spelling"}  # noqa: RUF012

    raised = state_matrix.measure(Raises(), SEED, DIM, FEATURES)
    assert [cell.variant for cell in raised] == ["default", "upstream", "explicit_seed"]
    assert all(cell.error == "RuntimeError: the block would not build" for cell in raised)
    (undeclared,) = state_matrix.measure(Undeclared(), SEED, DIM, FEATURES)
    assert undeclared.failed
    assert undeclared.error.startswith("no declaration written down")
    assert compare_state.replay(undeclared).text == "not observable"  # nothing was measured
    assert compare_state._cells(undeclared)[1].mark == "fail"


def _comparison(cells, autograd_port) -> Comparison:
    (claimed,) = state_matrix.measure(
        _claims_the_canonical(type(autograd_port)), SEED, DIM, FEATURES
    )
    rows = [
        PortComparison("hips_autograd", "available", states=list(cells.values())),
        PortComparison("claims_the_canonical", "available", states=[claimed]),
    ]
    return Comparison(SEED, DIM, FEATURES, "flax_linen", rows)


def _shown(table) -> dict[str, list[tuple[str, str]]]:
    """Each row's key: its cells' texts and marks."""
    shown = {}
    for row in table.rows:
        if row.key and not row.heading:
            shown[row.key] = [(cell.text, cell.mark) for cell in row.cells]
    return shown


def test_the_table_marks_each_part_and_survives_the_json_and_reaches_the_page(
    cells, autograd_port, tmp_path
):
    comparison = _comparison(cells, autograd_port)
    table = compare_state.state_table(comparison.ports)
    shown = _shown(table)
    assert list(shown) == [
        "hips_autograd default",
        "hips_autograd upstream",
        "hips_autograd explicit_seed",
        "claims_the_canonical default",
    ]
    marks = {key: [mark for _, mark in row[1:4]] for key, row in shown.items()}
    assert marks["hips_autograd default"] == ["warn", "warn", "warn"]  # as declared, upstream
    assert marks["hips_autograd explicit_seed"] == ["pass", "pass", "pass"]
    assert marks["claims_the_canonical default"] == ["fail", "fail", "fail"]
    assert shown["hips_autograd explicit_seed"][3][0] == "1 update"
    assert shown["hips_autograd default"][3][0] == "2 updates"

    # A terminal of 100 columns keeps the three measured parts, and leaves out who and fix.
    console = Console(width=100, record=True)
    terminal.print_block(console, table)
    text = console.export_text()
    header = text.splitlines()[1].split()
    assert header == ["variant", "replay", "stream", "updates"]
    assert "left out to fit 100 columns: declared, measured, fix, repro" in text
    assert "2 updates" in text
    console = Console(width=2000, record=True)
    terminal.print_block(console, table)
    text = console.export_text()
    assert "randomness and state" in text
    assert "repros/autograd_checkpoint_dropout.py" in text

    # `compare --json` keeps every field, and the table drawn from it is the same.
    data = comparison.to_json()
    assert [dataclasses.asdict(c) for c in restore.from_json(data).ports[0].states] == [
        dataclasses.asdict(c) for c in cells.values()
    ]
    assert _shown(compare_state.state_table(restore.from_json(data).ports)) == shown

    # The page draws it, one row per port and variant, the ✗ row's message in it.
    report = build([data], html_path=tmp_path / "page.html", pictures=False)
    (drawn,) = [t for s in report.sections for t in s.tables if t.kind == "state"]
    assert _shown(drawn) == shown
    page = (tmp_path / "page.html").read_text()
    assert "(l.1) replay: the recompute drew a fresh mask" in page
