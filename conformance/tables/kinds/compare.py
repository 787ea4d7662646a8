"""The `compare` report's tables: a verdict per port at a glance, then the detail, then the
legend; the terminal's document (`document`, `print_comparison`) and the page's blocks
(`page_blocks`). The policy and composition matrices are `compare_grids`' and
`compare_matrices`'.

The terminal's, in order:

1. **at a glance** (`summary_table`): per port, a verdict of three marks
   that read without colour (✓/✗ agree, tier, remat), the worst
   error/bound and the fewest bits, what the backward pass keeps (KiB, with
   the checkpoint off and on, and the roles kept), what it recomputes
   (ops, of them matmuls), and the warm times (median ± half IQR, n);
2. **agreement** (`agreement_table`): error/bound of every result;
3. **precision** (`precision_table`): bits of every result, and the matmul setting;
4. **recomputed ops**, once per distinct list (`recomputed_lines`): ports
   that rerun the same ops share a line;
5. the policy and composition grids, a line per port, the findings under each;
6. the randomness-and-state matrix (`compare_state`): port x variant of the stateful block;
7. the legend, the wall time and the load.

A comparison is a `comparison.Comparison` (measured, or `comparison.restore`d from its JSON),
read by its fields and its `failed` verdict: this floor imports nothing from `comparison`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich.console import Console

from implementations.contract import SavedTensor

from ...checking.properties.k_composition import rerun_matmuls
from .. import numbers
from ..model import Block, Cell, Column, Document, Items, Paragraph, Section, Table, TableBuilder
from ..render import terminal as terminal_render
from . import compare_grids, compare_state

PASS, FAIL = "✓", "✗"

#: An op whose name contains one of these is a matrix multiply (jax, torch, tf, mlx spellings).
MATMUL_MARKS = ("dot", "matmul", "mm", "gemm", "einsum")

# The results, in the order the detail tables show them (d/db2 = c needs no arithmetic).
RESULTS = (("fwd", "output"), ("ex", "exercise"), ("dw1", "w1"), ("db1", "b1"),
           ("dw2", "w2"), ("db2", "b2"), ("dx", "x"))  # fmt: skip
PRECISION_COLUMNS = tuple(r for r in RESULTS if r[0] != "db2")


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------


def _ratio(value: float) -> str:
    # The worst error over its bound, as every report spells it.
    return numbers.ratio(value)


def matmuls(recomputed: dict[str, int]) -> int:
    """How many of the recomputed ops are matrix multiplies."""
    return sum(n for op, n in recomputed.items() if any(m in op.lower() for m in MATMUL_MARKS))


def rerun_ops(off: Any, on: Any) -> tuple[int, int]:
    """The ops and the matmuls the backward pass reruns with the checkpoint on. The matmuls by
    the measure property (k) and the composition matrix use
    (`checking.properties.k_composition`): the instrument's own count, else the backward's
    matmuls beyond the checkpoint-off pass's; by op name only where neither is counted. (A
    tfjs backward runs BatchMatMul for the gradient too, so its names show no rerun matmul,
    where its counts show one.) A matmul counted but not named adds to the ops."""
    named = matmuls(on.recomputed)
    counted = rerun_matmuls(on, off)
    reruns = named if counted is None else counted
    return sum(on.recomputed.values()) + max(0, reruns - named), reruns


def roles(saved: Sequence[dict[str, Any]]) -> str:
    """The roles of the kept tensors, counted: "input, activationx2" ("nothing" if none)."""
    counts: dict[str, int] = {}
    for t in saved:
        if t["origin"] in SavedTensor.KEPT:
            counts[t["origin"]] = counts.get(t["origin"], 0) + 1
    return ", ".join(f"{o}x{n}" if n > 1 else o for o, n in counts.items()) or "nothing"


# ---------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------


def _diffs(row: Any) -> dict[str, Any]:
    found = {"output": row.output, "exercise": row.exercise, **row.gradients}
    return {k: v for k, v in found.items() if v is not None}


def _short(key: str) -> str:
    return dict((k, s) for s, k in RESULTS).get(key, key)


def verdict(row: Any) -> dict[str, bool | None]:
    """Three judgements (None: not measured).

    - `agree`: every result within the tolerance model's bound of the canonical port's;
    - `tier`: every result keeps the bits of float32 arithmetic (the precision tier);
    - `remat`: evidence of the checkpoint: with it on, the backward pass keeps fewer
      bytes than with it off.
    """
    diffs = _diffs(row)
    off, on = row.residuals.get("off"), row.residuals.get("on")
    return {
        "agree": all(d.worst_ratio <= 1.0 for d in diffs.values()) if diffs else None,
        "tier": all(b.ratio <= 1.0 for b in row.precision.values()) if row.precision else None,
        "remat": (on.bytes < off.bytes) if off and on else None,
    }


def _mark(ok: bool | None, word: str) -> str:
    if ok is None:
        return f"- {word}"
    return f"{PASS} {word}" if ok else f"{FAIL} {word}"


def _verdict_cell(row: Any) -> Cell:
    found = verdict(row)
    agree = "ref" if row.reference else _mark(found["agree"], "agree")
    text = "\n".join([agree, _mark(found["tier"], "tier"), _mark(found["remat"], "remat")])
    judged = [
        ok for key, ok in found.items() if ok is not None and not (row.reference and key == "agree")
    ]
    mark = "fail" if False in judged else ("pass" if judged else "")
    return Cell(text, mark)


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def title(comparison: Any, what: str) -> str:
    """`what`, then the run's settings as they were given."""
    # The command as given, when it was given flags: "--dim 1024" is what the user asked for.
    given = comparison.command.split(" ", 1)[1:] if comparison.command else []
    ran = f" · as run: {comparison.command}" if given else ""
    return (
        f"compare · {what} · seed {comparison.seed} · D={comparison.dim} "
        f"F={comparison.features} · against {comparison.canonical}{ran}"
    )


def _usable(row: Any) -> bool:
    return row.state == "available" and not row.error


def _samples(comparison: Any) -> str:
    counts = {row.warm_samples for row in comparison.ports if row.warm_samples}
    return f"n={counts.pop()}" if len(counts) == 1 else "n per cell"


def _warm_cell(row: Any, per_cell_n: bool) -> Cell:
    if row.warm_forward_seconds is None or row.warm_vjp_seconds is None:
        return Cell("-")
    lines = []
    for median, key in ((row.warm_forward_seconds, "forward"), (row.warm_vjp_seconds, "vjp")):
        spread = row.warm_spread.get(key, math.nan)
        lines.append(f"{numbers.ms(median)} ± {numbers.ms(spread, 2)}")
    # The contract's vjp whole (a port without prepared_vjp): never silently beside the
    # framework's call alone in one column (`comparison.warm.VJP_METHODS`).
    if getattr(row, "warm_vjp_method", "") == "vjp":
        lines[-1] += " +setup"
    return Cell("\n".join(lines), note=f"n={row.warm_samples}" if per_cell_n else "")


def _first_call_cell(first: dict[str, Any]) -> Cell:
    if "error" in first:
        return Cell(str(first["error"]), "fail")
    if not first:
        return Cell("-")
    return Cell(
        "\n".join(
            f"{label} {numbers.seconds(first.get(key))}"
            for label, key in (("import", "import"), ("fwd", "forward"), ("vjp", "vjp"))
        )
    )


def _label(row: Any) -> Cell:
    notes = [f"{k} {v}" for k, v in row.versions.items()]
    if getattr(row, "measured_by", "") == "port":
        notes.append("evidence self-reported")
    return Cell(row.name, "heading", note="\n".join(notes))


def summary_table(comparison: Any) -> Table:
    """One row per port: the verdict, the worst numbers, residuals and times."""
    samples = _samples(comparison)
    columns = [
        Column("port", wrap=True),
        Column("verdict"),
        Column("worst\nerr/bnd", number="error/bound"),
        Column("fewest\nbits"),
        Column("kept KiB\noff → on", number="bytes"),
        Column("recomp.\n(on)", number="count"),
        Column(f"warm ms\nfwd, vjp\n±½IQR {samples}", number="seconds"),
    ]
    if comparison.first_calls:
        columns.append(Column("first call", number="seconds"))
    table = TableBuilder(title(comparison, "at a glance"), columns, kind="compare")
    for row in comparison.ports:
        label = _label(row)
        blank = [Cell()] * (len(columns) - 3)
        if not _usable(row):
            # The reason goes under the name, in the one column that wraps: in the verdict
            # column, which does not, a long one squeezed every other column of the table.
            if row.error:
                mark, why = Cell(f"{FAIL}error", "fail"), row.error
            else:
                mark, why = Cell(row.state, "unavailable"), row.reason
            said = Cell(row.name, "heading", note="\n".join(filter(None, [label.note, why])))
            table.add([said, mark, *blank, Cell()], key=row.name)
            continue
        diffs = _diffs(row)
        if row.reference:
            worst = Cell("ref", "muted")
        elif diffs:
            key, d = max(diffs.items(), key=lambda item: item[1].worst_ratio)
            worst = Cell(_ratio(d.worst_ratio), "" if d.worst_ratio <= 1.0 else "fail", _short(key))
        else:
            worst = Cell("-")
        if row.precision:
            key, b = min(row.precision.items(), key=lambda item: item[1].bits)
            bits = Cell(_bits(b), "fail" if b.ratio > 1.0 else "", _short(key))
        else:
            bits = Cell("-")
        off, on = row.residuals.get("off"), row.residuals.get("on")
        if off and on:
            kept = Cell(
                f"{numbers.kib(off.bytes)} → {numbers.kib(on.bytes)}", note=f"on: {roles(on.saved)}"
            )
            ops, reruns = rerun_ops(off, on)
            recomputed = Cell(f"{ops} ops\n{reruns} matmul")
        else:
            kept = recomputed = Cell("-")
        cells = [label, _verdict_cell(row), worst, bits, kept, recomputed]
        cells.append(_warm_cell(row, samples == "n per cell"))
        if comparison.first_calls:
            cells.append(_first_call_cell(row.first_call))
        table.add(cells, key=row.name)
    return table.build()


def agreement_table(comparison: Any) -> Table:
    """One row per port: every result's largest error over the bound there."""
    table = TableBuilder(
        title(comparison, "agreement: largest error / bound"),
        [
            Column("port", wrap=True),
            *(Column(label, "right", "error/bound") for label, _ in RESULTS),
        ],
        kind="agreement",
    )
    for row in comparison.ports:
        if not _usable(row) or row.reference:
            continue
        diffs = _diffs(row)
        cells = []
        for _, key in RESULTS:
            d = diffs.get(key)
            if d is None:
                cells.append(Cell("-"))
            else:
                text = _ratio(d.worst_ratio)
                cells.append(Cell(text) if d.worst_ratio <= 1.0 else Cell(f"{FAIL}{text}", "fail"))
        table.add([row.name, *cells], key=row.name)
    return table.build()


def _bits(b: Any) -> str:
    if b is None:
        return "-"
    text = "exact" if b.bits == float("inf") else f"{b.bits:.1f}"
    return f"{FAIL}{text}" if b.ratio > 1.0 else text


def _setting(value: str) -> str:
    # A setting's name, without the framework's explanation after it.
    return value.split(" (", 1)[0]


def _matmul(row: Any) -> str:
    """`default → pinned`, each the setting's name without the framework's explanation."""
    found = row.matmul_precision
    if not found:
        return "not reported"
    default, pinned = (_setting(found.get(key, "-")) for key in ("default", "pinned"))
    device = f" (on {found['device']})" if "device" in found else ""
    return f"{default} → {pinned}{device}"


def matmul_lines(comparison: Any) -> list[str]:
    """The float32 matmul settings, one line per distinct setting, naming its ports."""
    groups: dict[str, list[str]] = {}
    for row in comparison.ports:
        if _usable(row):
            groups.setdefault(_matmul(row), []).append(row.name)
    return [f"{', '.join(names)}: {text}" for text, names in groups.items()]


def precision_table(comparison: Any) -> Table:
    """One row per port: effective bits of each result (the matmul settings follow it)."""
    table = TableBuilder(
        "Precision: bits of the exact (float64) result each port keeps",
        [Column("port", wrap=True), *(Column(label, "right") for label, _ in PRECISION_COLUMNS)],
        kind="precision",
    )
    for row in comparison.ports:
        if not _usable(row):
            continue
        cells = []
        for _, key in PRECISION_COLUMNS:
            b = row.precision.get(key)
            cells.append(Cell(_bits(b), "fail" if b is not None and b.ratio > 1.0 else ""))
        table.add([row.name, *cells], key=row.name)
    return table.build()


def recomputed_lines(comparison: Any) -> list[str]:
    """The ops rerun with the checkpoint on, one line per distinct list, naming its ports."""
    groups: dict[tuple[tuple[str, int], ...], list[str]] = {}
    for row in comparison.ports:
        on = row.residuals.get("on") if _usable(row) else None
        if on is not None:
            groups.setdefault(tuple(sorted(on.recomputed.items())), []).append(row.name)
    lines = []
    for ops, names in groups.items():
        listed = ", ".join(f"{op} x{n}" for op, n in ops) or "nothing"
        lines.append(f"{', '.join(names)}: {listed}")
    return lines


LEGEND = (
    "verdict: ✓ passes, ✗ fails, - not measured; ref: the canonical port, the reference. "
    "agree: every result within the tolerance model's bound of the canonical port's "
    "(a failure of the suite's property (b)/(c) kind). tier: every result keeps float32's "
    "bits (the precision tier, property (i)). remat: with the checkpoint on, the backward "
    "pass keeps fewer bytes than with it off (the evidence of rematerialisation).",
    "worst err/bnd: the largest |port - canonical| over the bound at that element, for the "
    "worst result (fwd: forward, shared params; ex: the exercise, own init; dw1 ... dx: "
    "gradients); above 1 fails. fewest bits: the result with the fewest effective bits of "
    "the exact result; float32 arithmetic reads 19-24, TF32 and float16 about 11, "
    "bfloat16 8; ✗ before a number: it fails its check.",
    "kept KiB: bytes of inputs and activations the backward pass keeps (parameters left "
    "out), checkpoint off → on; on: the roles kept with it on. recomp. (on): forward ops "
    "the backward pass runs again with the checkpoint on, and how many are matmuls (listed "
    "under 'recomputed ops'; the matmuls counted as the composition matrix counts them: its "
    "backward's matmuls beyond the checkpoint-off pass's, where its instrument counts them). "
    "warm ms: milliseconds per call of the forward, then of the "
    "VJP, median ± half the interquartile range of n samples, a new seed each call, "
    "interleaved with the other ports of the same framework's process; one process is "
    "timed at a time (a row for a framework's process-wide mode, such as a graph mode, has a "
    "process of its own). The VJP is the framework's forward and backward call alone, the "
    "port's model and arrays made once before timing (its prepared_vjp); '+setup' marks a "
    "port that offers none, timed by the contract's vjp whole, its per-call setup included. "
    "first call (--first-call): a fresh process, no compilation cache: import, first "
    "forward, first VJP.",
)


def _load_line(comparison: Any) -> tuple[str, bool]:
    load = comparison.load
    if not load:
        return "", False
    before, after = load.get("before", math.nan), load.get("after", math.nan)
    text = f"load average {before:.1f} before, {after:.1f} after (its own processes too)"
    if "others_while_timing" in load:
        text += f", other processes {load['others_while_timing']:.1f} cores while timing"
    return f"{text}, {comparison.cores} cores", comparison.loaded


def versions_line(comparison: Any) -> str:
    """Every distribution the ports ran on, once ("versions: jax 0.10.2 · torch 2.13.0 ...")."""
    seen = dict.fromkeys(f"{k} {v}" for row in comparison.ports for k, v in row.versions.items())
    return "versions: " + " · ".join(seen) if seen else ""


def terminal_summary(comparison: Any) -> Table:
    """The summary as a terminal shows it, two lines a port: the versions said once under the
    table (`versions_line`), not under each port's name, and the verdict's three marks on one
    line (the page keeps both as they are)."""
    table = summary_table(comparison)
    by_name = {row.name: row for row in comparison.ports}
    rows, missing = [], {}
    for row in table.rows:
        port = by_name.get(row.key)
        label, judged, *rest = row.cells
        if port is not None and port.state == "unavailable" and not port.error:
            # One line: the reasons, each once, follow the table (`missing`).
            missing.setdefault(port.reason, []).append(port.name)
            label = replace(label, note="")
        elif port is not None and port.versions:
            said = {f"{k} {v}" for k, v in port.versions.items()}
            note = "\n".join(line for line in label.note.split("\n") if line not in said)
            label = replace(label, note=note)
        # "✓agree ✓tier ✓remat": a mark stays with its word when the line wraps.
        marks = [line.replace(f"{PASS} ", PASS).replace(f"{FAIL} ", FAIL).replace("- ", "-")
                 for line in judged.text.split("\n")]  # fmt: skip
        judged = replace(judged, text=" ".join(marks))
        rows.append(replace(row, cells=(label, judged, *rest)))
    unavailable = "; ".join(f"{', '.join(names)}: {why}" for why, names in missing.items())
    said = f"Unavailable: {unavailable}." if unavailable else ""
    note = "\n".join(filter(None, [table.note, said, versions_line(comparison)]))
    return replace(table, rows=tuple(rows), note=note)


#: The headings of the two lists that follow the precision table.
MATMUL_HEADING = (
    "float32 matmul setting (as the framework reports it: its default, without the suite's "
    "pin → the pin; on a CPU both compute float32)"
)
SETTINGS_HEADING = "float32 matmul setting (default → pinned), as each framework reports it"
RECOMPUTED_HEADING = "recomputed ops (checkpoint on; ports with the same list share a line)"


def _grid(found: tuple[Table | None, Items]) -> list[Block]:
    """A terminal grid without its caption (the legend says it), then its findings."""
    table, findings = found
    if table is None:
        return []
    return [replace(table, caption=""), *([findings] if findings.items else [])]


def _present(table: Table | None) -> list[Block]:
    return [] if table is None else [table]


def _lines(heading: str, lines: list[str]) -> list[Block]:
    return [Items(heading, tuple(lines))] if lines else []


def closing(comparison: Any) -> list[Paragraph]:
    """The legend, the wall time and the load, and a warning when other work shared the
    machine."""
    legend = [Paragraph(text, "muted") for text in (*LEGEND, compare_grids.GRID_LEGEND)]
    load, busy = _load_line(comparison)
    found = [*legend, Paragraph(f"compare: {comparison.seconds:.1f} s wall · {load}")]
    if busy:
        found.append(
            Paragraph(
                f"warning: other work shared the machine ({comparison.cores} cores), so the "
                "times are noisy (the ±½IQR shows how much); compare again on an idle machine "
                "to trust them",
                "warn",
            )
        )
    return found


def document(comparison: Any) -> Document:
    """The comparison as a terminal shows it (`print_comparison`): the summary, agreement and
    precision tables, the matmul settings and the rerun ops, the policy and composition grids
    a line per port, then the legend, the wall time and the load. `comparison`: a
    `comparison.Comparison`, measured or restored from its JSON."""
    ports = comparison.ports
    blocks: list[Block] = [
        terminal_summary(comparison),
        agreement_table(comparison),
        precision_table(comparison),
        *_lines(MATMUL_HEADING, matmul_lines(comparison)),
        *_lines(RECOMPUTED_HEADING, recomputed_lines(comparison)),
        *_grid(compare_grids.terminal_policy_grid(ports)),
        *_grid(compare_grids.terminal_composition_grid(ports)),
        *_present(compare_state.state_table(ports)),
    ]
    parts = (Section("", tuple(blocks)), Section("", tuple(closing(comparison))))
    return Document("compare", title(comparison, "every port side by side"), parts)


def verdict_line(comparison: Any) -> Paragraph:
    """The comparison's verdict in one line, last (`Comparison.failed` decides it): the ports
    with a ✗ and where, or how many were checked; the ports not installed; the wall time."""
    broken, checked, missing = [], 0, 0
    for row in comparison.ports:
        if row.state == "unavailable" and not row.error:
            missing += 1
            continue
        if not _usable(row):
            broken.append(f"{row.name} (error)")
            continue
        checked += 1
        crosses = [key for key, ok in verdict(row).items() if ok is False]
        if row.reference:
            crosses = [key for key in crosses if key != "agree"]
        if any(cell.failed for cell in row.policies):
            crosses.append("policies")
        if any(cell.failed for cell in row.states):
            crosses.append("randomness and state")
        if crosses:
            broken.append(f"{row.name} (✗ {', '.join(crosses)})")
    failed = comparison.failed
    parts = [f"compare {'failed' if failed else 'passed'}"]
    parts.append(f"{checked} port{'' if checked == 1 else 's'} against {comparison.canonical}")
    if broken:
        parts.append("✗ " + ", ".join(broken).replace("(✗ ", "("))
    if missing:
        parts.append(f"{missing} not installed")
    parts.append(f"{comparison.seconds:.0f} s wall")
    return Paragraph(" · ".join(parts), "fail" if failed else "pass")


def print_comparison(comparison: Any, console: Console) -> None:
    """The comparison's document (`document`), then its verdict, last."""
    terminal_render.print_document(console, document(comparison))
    terminal_render.print_verdict(console, verdict_line(comparison))


def page_blocks(comparison: Any, held: dict[str, str] | None = None) -> list[Block]:
    """What the report page and its Markdown show of a comparison: the summary, the policy
    grid and the composition grid (each port's full lines in its details; `held`: port ->
    whose expectations held its records), the randomness-and-state matrix, the precision table
    and the matmul settings. A
    report from before the policy or composition matrices says it has none."""
    policies = compare_grids.policy_grid(comparison, held)
    compositions = compare_grids.composition_grid(comparison)
    said = "this compare report has no {} (made by an older version)."
    settings = matmul_lines(comparison)
    return [
        summary_table(comparison),
        policies or Paragraph("No policy matrix: " + said.format("per-port policies")),
        compositions or Paragraph("No composition matrix: " + said.format("composition cases")),
        compare_state.state_table(comparison.ports)
        or Paragraph(
            "No randomness-and-state matrix: no port in this report offers the "
            "stateful block (or it was made by an older version)."
        ),
        precision_table(comparison),
        *_lines(SETTINGS_HEADING, settings),
    ]
