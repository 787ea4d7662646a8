"""The report's content, renderer-free: sections of model blocks (tables, paragraphs) and
pictures.

`sections(documents)` reads every report given and returns what HTML and
Markdown both show: first, where there are run or compare reports, "At a
glance" (`grids.summary`: one row per port, conforms, policies honoured, the
cost of wrapping twice); then, in the order given: for a run, its headline,
the conformance matrix (ports by properties, each row's details in it: the
terminal's own table, `tables.kinds.run`), what the run left out and the
mutation score in one line (`grids.mutants`: rows only for mutants not
killed); for a compare, its table, the policy grid and the composition grid
(`grids`: port x policy, port x case, each port's lines in its details, its
heading saying whose expectations it was held to, from the run reports
given), the precision bits and pictures; for a bench, its table, targets and
plot; for `bench --policies`, `--schedules` and `--scale`, theirs; for a
versions document, the versions section (`versions_section`: a version
sweep's matrix, its sets and degradations, or a plain list of rows); then the
runs' version sets where they differ, and the machines and versions the
reports name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import implementations

from ..benchmark import schedule_plot, with_targets
from ..comparison import render as compare_render
from ..comparison import restore
from ..tables.kinds import bench, bench_policies, bench_schedules, scale
from ..tables.kinds import run as run_tables
from ..tables.model import Block, Items, Paragraph, Table
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
    blocks: list[Block] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]


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
        "pictures left out: matplotlib is not installed "
        f"({implementations.install_command('bench')})"
        if pictures and not can_draw
        else "pictures left out on request"
    )
    runs = [d.data for d in documents if d.kind == "run"]
    compares = [restore.from_json(d.data) for d in documents if d.kind == "compare"]
    glance = grids.summary(runs, compares)
    if glance is not None:
        found.append(Section("At a glance", "summary", blocks=[glance]))
    for i, doc in enumerate(documents):
        data, suffix = doc.data, _suffix(documents, doc)
        if doc.kind == "run":
            section = Section(f"Conformance matrix{suffix}", f"run-{i}")
            section.blocks.append(run_tables.headline(data))
            section.blocks.append(run_tables.matrix(data))
            mutants = grids.mutants(data)
            if mutants:
                section.blocks += mutants
            else:
                section.blocks.append(Paragraph("No mutation run in this report (--no-mutants)."))
        elif doc.kind == "compare":
            section = Section(f"Compare{suffix}", f"compare-{i}")
            comparison = restore.from_json(data)
            section.blocks.append(compare_render.summary_table(comparison))
            policies = grids.policy_grid(comparison, held_to(data, runs))
            if policies is not None:
                section.blocks.append(policies)
            else:
                section.blocks.append(
                    Paragraph(
                        "No policy matrix: this compare report has no per-port policies "
                        "(made by an older version)."
                    )
                )
            compositions = grids.composition_grid(comparison)
            if compositions is not None:
                section.blocks.append(compositions)
            else:
                section.blocks.append(
                    Paragraph(
                        "No composition matrix: this compare report has no composition cases "
                        "(made by an older version)."
                    )
                )
            section.blocks.append(compare_render.precision_table(comparison))
            settings = compare_render.matmul_lines(comparison)
            if settings:  # one heading, a line per setting
                heading = "float32 matmul setting (default → pinned), as each framework reports it"
                section.blocks.append(Items(heading, tuple(settings)))
            if can_draw:
                section.pictures += [
                    Picture(title, png, ALT.get(name, title))
                    for name, (title, png) in drawing.compare_pictures(data).items()
                ]
            else:
                section.blocks.append(Paragraph(why_not))
        elif doc.kind == "bench-policies":
            section = Section(f"Bench: remat policies{suffix}", f"bench-policies-{i}")
            section.blocks.append(bench_policies.table(data))
            section.blocks += [Paragraph(n) for n in bench_policies.notes(data).items]
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
                section.blocks.append(Paragraph(why_not))
        elif doc.kind == "bench-schedules":
            section = Section(f"Bench: remat schedules{suffix}", f"bench-schedules-{i}")
            # The peak's method is named once under the table, per framework (its note).
            section.blocks.append(bench_schedules.table(data))
            best = bench_schedules.frontier_table(data)
            if best is not None:
                section.blocks.append(best)
            section.blocks += [Paragraph(n) for n in bench_schedules.notes(data).items]
            unmeasured = schedule_plot.why_not(data) if can_draw else None
            if unmeasured is not None:
                section.blocks.append(Paragraph(f"picture left out: {unmeasured}"))
            elif can_draw:
                section.pictures.append(
                    Picture(
                        "Bench: where to recompute, against the model and Revolve's optimum",
                        schedule_plot.png(data),
                        "Top, per framework at the deepest L: peak bytes of the backward pass "
                        "against block forward evaluations, each schedule measured (filled) "
                        "and modelled (hollow), Revolve's frontier (one block taped at a time); "
                        "bottom: peak bytes against L per schedule, log axes.",
                    )
                )
            else:
                section.blocks.append(Paragraph(why_not))
        elif doc.kind == "scale":
            section = Section(f"Bench: scale over ranks{suffix}", f"scale-{i}")
            section.blocks.append(scale.table(data))
            section.blocks += [
                Paragraph(f"{what} failed: {why}", "fail") for what, why in data["failed"].items()
            ]
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
                section.blocks.append(Paragraph(why_not))
        elif doc.kind == "versions":
            section = versions_section(data, "versions" + (f"-{i}" if suffix else ""), suffix)
        else:
            section = Section(f"Bench{suffix}", f"bench-{i}")
            data = with_targets(data)
            smoke = bench.smoke(data)
            if smoke is not None:
                section.blocks.append(smoke)
            section.blocks += [bench.results_table(data), bench.targets_table(data)]
            if can_draw:
                section.pictures.append(
                    Picture(
                        "Bench: memory and time against depth",
                        drawing.bench_picture(data),
                        "One row of panels per framework, against the depth L (log scale): "
                        "the saved residuals, the compiled temp or allocation peak, the step "
                        "time with its interquartile band, and the time over no checkpoint; "
                        "one line per mode (none, full, save_dots), told apart by marker and "
                        "line style, in the framework's engine colour.",
                    )
                )
            else:
                section.blocks.append(Paragraph(why_not))
        found.append(section)
    run_versions = versions_page.run_versions(documents)
    if run_versions is not None:
        found.append(Section("Versions of the runs", "run-versions", blocks=[run_versions]))
    found.append(Section("Machine and versions", "machine", blocks=[tables.machine(documents)]))
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
        section.blocks += versions_page.tables(dict(data))
    elif rows:
        section.blocks.append(tables.versions_table(rows))
    else:
        section.blocks.append(Paragraph("No versions were swept."))
    return section


def held_to(compare: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
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


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
