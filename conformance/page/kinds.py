"""What the report shows of each kind of report, one entry per kind (`KINDS`): its section's
title and anchor, its blocks (the tables and notes, built by its kind's module in
`conformance.tables.kinds`), and its pictures (drawn by `pictures` or the kind's own plot).

A new kind of report is one entry here and one builder module there: `sections` reads the
entries, and knows no kind by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..benchmark import schedule_plot, with_targets
from ..comparison import restore
from ..tables.kinds import (
    bench,
    bench_policies,
    bench_schedules,
    compare,
    mutants,
    plain,
    scale,
    version_sets,
)
from ..tables.kinds import run as run_tables
from ..tables.model import Block, Paragraph
from . import pictures as drawing


class Picture(NamedTuple):
    """A picture: its title (the caption), PNG bytes, and its alt text (what it shows)."""

    title: str
    png: bytes
    alt: str = ""


Report = Mapping[str, Any]
#: A kind's blocks from its report and the run reports given beside it.
Blocks = Callable[[Report, Sequence[Report]], list[Block]]
#: A kind's pictures, or a paragraph saying why one was left out.
Pictures = Callable[[Report], list[Picture | Paragraph]]


@dataclass(frozen=True)
class Kind:
    """One kind's section: `title` (its kind's name on the page; a source's name follows where
    the reports hold several of the kind), `anchor` (its id, numbered by its place among the
    reports; `numbered=False`: only where there are several of the kind), `blocks`,
    `pictures` (None: it draws none)."""

    title: str
    anchor: str
    blocks: Blocks
    pictures: Pictures | None = None
    numbered: bool = True


# ---------------------------------------------------------------------------
# Each kind's blocks
# ---------------------------------------------------------------------------


def _run(data: Report, runs: Sequence[Report]) -> list[Block]:
    """The headline, the conformance matrix (each row's details in it), the mutants."""
    found = mutants.page_blocks(data) or [
        Paragraph("No mutation run in this report (--no-mutants).")
    ]
    return [run_tables.headline(data), run_tables.matrix(data), *found]


def _compare(data: Report, runs: Sequence[Report]) -> list[Block]:
    return compare.page_blocks(restore.from_json(dict(data)), held_to(data, runs))


def _bench(data: Report, runs: Sequence[Report]) -> list[Block]:
    data = with_targets(dict(data))
    smoke = bench.smoke(data)
    tables = [bench.results_table(data), bench.targets_table(data)]
    return [smoke, *tables] if smoke is not None else tables


def _bench_policies(data: Report, runs: Sequence[Report]) -> list[Block]:
    data = dict(data)
    return [bench_policies.table(data), *map(Paragraph, bench_policies.notes(data).items)]


def _bench_schedules(data: Report, runs: Sequence[Report]) -> list[Block]:
    # The peak's method is named once under the table, per framework (its note).
    data = dict(data)
    best = bench_schedules.frontier_table(data)
    return [
        bench_schedules.table(data),
        *([best] if best is not None else []),
        *map(Paragraph, bench_schedules.notes(data).items),
    ]


def _scale(data: Report, runs: Sequence[Report]) -> list[Block]:
    failed = [Paragraph(f"{what} failed: {why}", "fail") for what, why in data["failed"].items()]
    return [scale.table(dict(data)), *failed]


def _versions(data: Report, runs: Sequence[Report]) -> list[Block]:
    """A sweep as `versions --out` writes it (it has `sets`): its matrix, its sets and its
    degradations; any other rows: a plain list of dicts, one table row each
    (`plain.versions_table` says which keys it reads)."""
    rows = data.get("rows") or []
    if "sets" in data:
        return list(version_sets.tables(dict(data)))
    if rows:
        return [plain.versions_table(rows)]
    return [Paragraph("No versions were swept.")]


# ---------------------------------------------------------------------------
# Each kind's pictures
# ---------------------------------------------------------------------------

COMPARE_ALT = {
    "compare-strip.png": "A grid of ports (rows, grouped by engine) by what the backward pass "
    "keeps with the checkpoint on (input, activations, masks, constants) and which forward ops "
    "it reruns (matmul, add, relu, other); each filled cell holds a count.",
    "compare-time-vs-saved.png": "One row per port, grouped by engine: on the left the KiB "
    "kept for the backward pass with the checkpoint off (hollow) and on (filled); on the right "
    "the warm VJP time in ms on a log scale with its interquartile whisker; the text beside "
    "each row gives the median, n and the IQR relative to the median, and says noise where "
    "the spread exceeds half the median.",
    "compare-bits.png": "A dot plot of the effective bits of each result (output, exercise, "
    "w1, b1, w2, x) per port, over bands for bfloat16, TF32, float16 and float32; a red mark "
    "fails the precision tier.",
}


def _compare_pictures(data: Report) -> list[Picture | Paragraph]:
    return [
        Picture(title, png, COMPARE_ALT.get(name, title))
        for name, (title, png) in drawing.compare_pictures(dict(data)).items()
    ]


def _one(title: str, draw: Callable[[dict[str, Any]], bytes], alt: str) -> Pictures:
    """A kind's one picture, drawn from its report."""
    return lambda data: [Picture(title, draw(dict(data)), alt)]


def _schedule_pictures(data: Report) -> list[Picture | Paragraph]:
    unmeasured = schedule_plot.why_not(dict(data))
    if unmeasured is not None:
        return [Paragraph(f"picture left out: {unmeasured}")]
    return [
        Picture(
            "Bench: where to recompute, against the model and Revolve's optimum",
            schedule_plot.png(dict(data)),
            "Top, per framework at the deepest L: peak bytes of the backward pass "
            "against block forward evaluations, each schedule measured (filled) "
            "and modelled (hollow), Revolve's frontier (one block taped at a time); "
            "bottom: peak bytes against L per schedule, log axes.",
        )
    ]


#: Every kind of report the page reads (`tables.reports.KINDS`), in no particular order: the
#: page shows the reports in the order given.
KINDS: dict[str, Kind] = {
    "run": Kind("Conformance matrix", "run", _run),
    "compare": Kind("Compare", "compare", _compare, _compare_pictures),
    "bench": Kind(
        "Bench",
        "bench",
        _bench,
        _one(
            "Bench: memory and time against depth",
            lambda data: drawing.bench_picture(with_targets(data)),
            "One row of panels per framework, against the depth L (log scale): the saved "
            "residuals, the compiled temp or allocation peak, the step time with its "
            "interquartile band, and the time over no checkpoint; one line per mode (none, "
            "full, save_dots), told apart by marker and line style, in the framework's engine "
            "colour.",
        ),
    ),
    "bench-policies": Kind(
        "Bench: remat policies",
        "bench-policies",
        _bench_policies,
        _one(
            "Bench: time and saved bytes per remat policy",
            drawing.policy_bench_picture,
            "One row per framework and policy, grouped by framework: on the left the saved "
            "bytes over the analytic minimum, on the right the step time over the same "
            "framework's no-remat step, median with its interquartile whisker; the text beside "
            "each row gives n and says noise where the spread is wide.",
        ),
    ),
    "bench-schedules": Kind(
        "Bench: remat schedules", "bench-schedules", _bench_schedules, _schedule_pictures
    ),
    "scale": Kind(
        "Bench: scale over ranks",
        "scale",
        _scale,
        _one(
            "Scale: bytes kept per rank and step time against the rank count N",
            drawing.scale_picture,
            "Two panels against the rank count N (log scale): the bytes the largest rank "
            "keeps, with the analytic minimum dashed, and the step time with interquartile "
            "whiskers; one colour and marker per engine, solid lines with the checkpoint on, "
            "dotted without, hollow markers for ranks split over two nodes.",
        ),
    ),
    "versions": Kind("Versions", "versions", _versions, numbered=False),
}


def held_to(compare: Report, runs: Sequence[Report]) -> dict[str, str]:
    """Port -> whose expectations its records were held to and who measured them, from the
    run reports' `environment.evidence` (compare says only who measured)."""
    evidence: dict[str, dict[str, Any]] = {}
    for run in runs:
        for port in run.get("ports") or []:
            found = (port.get("environment") or {}).get("evidence")
            if found:
                evidence[port["name"]] = found
    measured = {"suite": "the suite's instrument", "port": "self-reported by the port"}
    said = {}
    for row in compare.get("ports") or []:
        found = evidence.get(row["name"], {})
        who = found.get("measured_by") or row.get("measured_by") or ""
        held = _held(found.get("expectations", "")) or (
            "see the run report" if not runs else "none written"
        )
        said[row["name"]] = f"held to {held} · evidence: {measured.get(who, who or '-')}"
    return said


def _held(words: str) -> str:
    # "the jax instrument's, declared by the suite (path)" -> "the suite: path"
    if ", declared by the suite (" in words:
        return "the suite: " + words.split(", declared by the suite (", 1)[1].rstrip(")")
    if ", declared by the port itself (" in words:
        return "the port itself (" + words.split(", declared by the port itself (", 1)[1]
    return words
