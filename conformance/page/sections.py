"""The report's content, renderer-free: sections of notes, grids, tables and pictures.

`sections(documents)` reads every report given and returns what HTML and
Markdown both show, in the order given: for a run, the conformance grid
(ports by properties), its failures and the mutation score; for a compare,
its table, the policy matrix (ports by remat policies, with whose
expectations each port was held to, from the run reports given), the
precision bits and pictures; for a bench, its table, targets and plot; for
`bench --policies` and `bench --scale`, theirs; for a versions document, the
versions section (`versions_section`: a version sweep's matrix, its sets and
degradations, or a plain list of rows); then the runs' version sets where they
differ, and the machines and versions the reports name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..benchmark import schedule_plot, with_targets
from ..comparison import render as compare_render
from ..comparison import restore
from ..tables.kinds import bench, bench_policies, bench_schedules, scale
from ..tables.kinds import run as run_tables
from ..tables.model import Table
from . import grids, tables
from . import pictures as drawing
from . import versions as versions_page
from .documents import Document


class Picture(NamedTuple):
    """A picture: its title (the caption), PNG bytes, and its alt text (what it shows)."""

    title: str
    png: bytes
    alt: str = ""


@dataclass
class Section:
    """A titled part of the report."""

    title: str
    anchor: str
    notes: list[str] = field(default_factory=list)
    grids: list[grids.Grid] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)


def _suffix(documents: Sequence[Document], doc: Document) -> str:
    # "Matrix", or "Matrix (run.json)" when there are several of a kind.
    same = [d for d in documents if d.kind == doc.kind]
    return f" ({doc.source})" if len(same) > 1 else ""


ALT = {
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


def sections(documents: Sequence[Document], *, pictures: bool = True) -> list[Section]:
    """Everything the report shows. `pictures=False` skips matplotlib (no `bench` extra).

    Pictures need matplotlib; without it, each section says so in a note.
    """
    found: list[Section] = []
    can_draw = pictures and _has_matplotlib()
    why_not = (
        "pictures left out: matplotlib is not installed (pip install 'remat-conformance[bench]')"
        if pictures and not can_draw
        else "pictures left out on request"
    )
    runs = [d.data for d in documents if d.kind == "run"]
    for i, doc in enumerate(documents):
        data, suffix = doc.data, _suffix(documents, doc)
        if doc.kind == "run":
            section = Section(f"Conformance matrix{suffix}", f"run-{i}")
            failed = "failed" if data.get("failed") else "passed"
            section.notes.append(
                f"The run {failed} · {data.get('seconds', 0):.0f} s wall · canonical port "
                f"{data.get('canonical', '?')}"
                + (" · interrupted: partial results" if data.get("interrupted") else "")
            )
            section.grids.append(grids.run_grid(data))
            failed_outcomes = tables.failures(data)
            if failed_outcomes is not None:
                section.tables.append(failed_outcomes)
            mutants = run_tables.mutants(data)
            if mutants is not None:
                section.tables.append(mutants)
            else:
                section.notes.append("No mutation run in this report (--no-mutants).")
        elif doc.kind == "compare":
            section = Section(f"Compare{suffix}", f"compare-{i}")
            comparison = restore.from_json(data)
            section.tables.append(compare_render.summary_table(comparison))
            policy = grids.policy_grid(data, runs)
            if policy is not None:
                section.grids.append(policy)
            else:
                section.notes.append(
                    "No policy matrix: this compare report has no per-port policies "
                    "(made by an older version)."
                )
            section.tables.append(compare_render.precision_table(comparison))
            section.notes += [
                f"float32 matmul setting (default → pinned): {line}"
                for line in compare_render.matmul_lines(comparison)
            ]
            if can_draw:
                section.pictures += [
                    Picture(title, png, ALT.get(name, title))
                    for name, (title, png) in drawing.compare_pictures(data).items()
                ]
            else:
                section.notes.append(why_not)
        elif doc.kind == "bench-policies":
            section = Section(f"Bench: remat policies{suffix}", f"bench-policies-{i}")
            section.tables.append(bench_policies.table(data))
            section.notes += list(bench_policies.notes(data).items)
            if can_draw:
                section.pictures.append(
                    Picture(
                        "Bench: time and saved bytes per remat policy",
                        drawing.policy_bench_picture(data),
                        "One row per framework and policy, grouped by framework: on the left "
                        "the saved bytes over the analytic minimum, on the right the step time "
                        "over the same framework's no-remat step, median with its "
                        "interquartile whisker; the text beside each row gives n and says "
                        "noise where the spread is wide.",
                    )
                )
            else:
                section.notes.append(why_not)
        elif doc.kind == "bench-schedules":
            section = Section(f"Bench: remat schedules{suffix}", f"bench-schedules-{i}")
            section.tables.append(bench_schedules.table(data))
            section.notes += list(bench_schedules.notes(data).items)
            if can_draw:
                section.pictures.append(
                    Picture(
                        "Bench: where to recompute, against the model and Revolve's optimum",
                        schedule_plot.png(data),
                        "Top, per framework at the deepest L: peak bytes of the backward pass "
                        "against block forward evaluations, each schedule measured (filled) "
                        "and modelled (hollow), Revolve's frontier as the limit; bottom: "
                        "peak bytes against L per schedule, log axes.",
                    )
                )
            else:
                section.notes.append(why_not)
        elif doc.kind == "scale":
            section = Section(f"Bench: scale over ranks{suffix}", f"scale-{i}")
            section.tables.append(scale.table(data))
            section.notes += [f"{what} failed: {why}" for what, why in data["failed"].items()]
            if can_draw:
                section.pictures.append(
                    Picture(
                        "Scale: bytes kept per rank and step time against the rank count N",
                        drawing.scale_picture(data),
                        "Two panels against the rank count N (log scale): the bytes the "
                        "largest rank keeps, with the analytic minimum dashed, and the step "
                        "time with interquartile whiskers; one colour and marker per engine, "
                        "solid lines with the checkpoint on, dotted without, hollow markers "
                        "for ranks split over two nodes.",
                    )
                )
            else:
                section.notes.append(why_not)
        elif doc.kind == "versions":
            section = versions_section(data, "versions" + (f"-{i}" if suffix else ""), suffix)
        else:
            section = Section(f"Bench{suffix}", f"bench-{i}")
            data = with_targets(data)
            section.tables += [bench.results_table(data), bench.targets_table(data)]
            if can_draw:
                section.pictures.append(
                    Picture(
                        "Bench: memory and time against depth",
                        drawing.bench_picture(data),
                        "One row of panels per framework, against the depth L (log scale): "
                        "the saved residuals, the compiled temp or allocation peak, the step "
                        "time with its interquartile band, and the time over no checkpoint; "
                        "one line per mode (none, full, save-mm), told apart by marker and "
                        "line style, in the framework's engine colour.",
                    )
                )
            else:
                section.notes.append(why_not)
        found.append(section)
    run_versions = versions_page.run_versions(documents)
    if run_versions is not None:
        found.append(Section("Versions of the runs", "run-versions", tables=[run_versions]))
    found.append(Section("Machine and versions", "machine", tables=[tables.machine(documents)]))
    return found


def versions_section(
    data: Mapping[str, Any], anchor: str = "versions", suffix: str = ""
) -> Section:
    """The versions section of one `{"kind": "versions", "rows": [...]}` document.

    A sweep as `versions --out` writes it (it has `sets`) shows its matrix, its sets and
    its degradations across versions (`conformance.page.versions`); any other rows are a
    plain list of dicts, one table row each (`tables.versions_table` says which keys it
    reads).
    """
    section = Section(f"Versions{suffix}", anchor)
    rows = data.get("rows") or []
    if "sets" in data:
        section.tables += versions_page.tables(dict(data))
    elif rows:
        section.tables.append(tables.versions_table(rows))
    else:
        section.notes.append("No versions were swept.")
    return section


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
