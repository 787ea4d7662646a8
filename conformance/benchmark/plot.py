"""The bench's plot: one row of panels per framework, one column per metric.

A row holds one framework's lines only, in its engine's colour (the same in
every picture of the report: `conformance.colours`); the modes are told
apart by marker and line style, the variants by filled or hollow markers, so
no axis carries more than nine lines and colour is never the only signal. Every memory
axis shows one metric: XLA's compiled temp and torch's profiler peak are
different things and never share an axis. Times have error bands (the
interquartile range of the repeats); ticks read in plain milliseconds. The
legend sits below the panels, never over the data.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from implementations.bench_case import MODES
from implementations.installing import install_command

from .. import colours, outputs
from .measure import TIME_TARGET, Result

if TYPE_CHECKING:
    from . import BenchReport

MIB = 2**20
STYLES = {"none": ":", "full": "-", "save-mm": "--"}  # modes, by line style and marker
#: A mode as the reader sees it: `save-mm` is the bench's internal name for `save_dots`.
MODE_NAMES = {"save-mm": "save_dots"}
MARKERS = {"none": "o", "full": "s", "save-mm": "^"}
FILLS = ("full", "none", "left", "bottom")  # variants of one framework, in order


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _band(quartiles, scale: float = 1.0):
    return None if quartiles is None else (quartiles[0] * scale, quartiles[2] * scale)


# (column title, value of a result, its IQR band or None, y on a log scale)
Metric = tuple[str, Callable[[Result], float | None], Callable[[Result], tuple | None], bool]
METRICS: tuple[Metric, ...] = (
    ("saved residuals (MiB)", lambda r: r.saved_bytes / MIB, lambda r: None, True),
    (
        "XLA compiled temp (MiB)",
        lambda r: None if r.temp_bytes is None else r.temp_bytes / MIB,
        lambda r: None,
        True,
    ),
    (
        "allocation peak (MiB):\nthe stack's allocator (definitions)",
        lambda r: None if r.peak_bytes is None else r.peak_bytes / MIB,
        lambda r: None,
        True,
    ),
    (
        "step time (ms), median and IQR",
        lambda r: _ms(r.step_median),
        lambda r: _band(r.step_quartiles, 1e3),
        True,
    ),
    (
        "time / no checkpoint, median and IQR",
        lambda r: None if r.mode == "none" else r.time_ratio,
        lambda r: None if r.mode == "none" else _band(r.time_ratio_quartiles),
        False,
    ),
)


def plot(report: BenchReport, path) -> str | None:
    """Draw the bench into `path` (PNG). **Returns:** None, or why there is no plot."""
    try:
        import matplotlib
    except ImportError:
        return f"matplotlib is not installed ({install_command('bench')})"
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    if not report.results:
        return "no results to plot"
    drawn = figure(report)
    with outputs.replacing(path) as temporary:  # whole or not at all
        drawn.savefig(temporary, dpi=80, format="png")
    plt.close(drawn)
    return None


def figure(report: BenchReport):
    """The plot as a matplotlib `Figure` (matplotlib imported, Agg chosen, by the caller)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    results = report.results
    # Lines a stack holds to a time target at every depth (`Result.time_target_every_depth`).
    every_depth = {
        (r.framework, r.variant): r.time_target_every_depth
        for r in results
        if r.time_target_every_depth is not None
    }
    s = report.settings
    frameworks = list(dict.fromkeys(r.framework for r in results))
    # Only the metrics some result has: an empty column says nothing.
    metrics = [m for m in METRICS if any(m[1](r) is not None for r in results)]
    drawing, axes = plt.subplots(
        len(frameworks),
        len(metrics),
        figsize=(3.6 * len(metrics), 2.9 * len(frameworks) + 1.2),
        squeeze=False,
    )

    plain = FuncFormatter(lambda value, _: f"{value:g}")
    variant_styles: dict[tuple[str, str], str] = {}
    for row, framework in enumerate(frameworks):
        colour = colours.colour(colours.bench_engine(framework))
        mine = [r for r in results if r.framework == framework]
        variants = list(dict.fromkeys(r.variant for r in mine))
        for i, variant in enumerate(variants):
            variant_styles[(framework, variant)] = FILLS[i % len(FILLS)]
        for column, (title, value, band, log_y) in enumerate(metrics):
            axis = axes[row, column]
            drawn = False
            for variant in variants:
                for mode in MODES:
                    line = sorted(
                        (r for r in mine if (r.variant, r.mode) == (variant, mode)),
                        key=lambda r: r.depth,
                    )
                    points = [(r.depth, value(r), band(r)) for r in line if value(r) is not None]
                    if not points:
                        continue
                    depths = [p[0] for p in points]
                    axis.plot(
                        depths,
                        [p[1] for p in points],
                        linestyle=STYLES[mode],
                        marker=MARKERS[mode],
                        markersize=5,
                        fillstyle=variant_styles[(framework, variant)],
                        markerfacecoloralt="white",
                        color=colour,
                    )
                    bands = [p for p in points if p[2] is not None]
                    if bands:
                        axis.fill_between(
                            [p[0] for p in bands],
                            [p[2][0] for p in bands],
                            [p[2][1] for p in bands],
                            color=colour,
                            alpha=0.12,
                            linewidth=0,
                        )
                    drawn = True
            if not drawn:
                axis.text(
                    0.5,
                    0.5,
                    "not measured\nfor " + framework,
                    ha="center",
                    va="center",
                    transform=axis.transAxes,
                    color="grey",
                )
                axis.set_xticks([])
                axis.set_yticks([])
            else:
                _decorate(axis, s, title, log_y, plain, NullFormatter)
                if column == 0:
                    analytic = [d * s.batch * s.features * 4 / MIB for d in sorted(s.depths)]
                    axis.plot(
                        sorted(s.depths), analytic, color="grey", alpha=0.5, linewidth=4, zorder=0
                    )
                if title.startswith("time /"):
                    axis.axhline(TIME_TARGET, color="black", linestyle="--", linewidth=1)
                    for (owner, variant), target in every_depth.items():
                        if owner == framework and variant in variants:
                            axis.axhline(target, color="black", linestyle=":", linewidth=1)
                    axis.axhline(1.0, color="grey", linewidth=0.5)
            if row == 0:
                axis.set_title(title, fontsize=9)
            if column == 0:
                axis.set_ylabel(framework, fontsize=11, fontweight="bold", color=colour)
    handles = [
        Line2D(
            [],
            [],
            color="black",
            marker=MARKERS[m],
            linestyle=STYLES[m],
            label=f"mode {MODE_NAMES.get(m, m)}",
        )
        for m in MODES
    ]
    handles += [
        Line2D(
            [],
            [],
            color=colours.colour(colours.bench_engine(fw)),
            marker="o",
            fillstyle=fill,
            markerfacecoloralt="white",
            linestyle="none",
            label=f"{fw} {variant}".strip(),
        )
        for (fw, variant), fill in variant_styles.items()
    ]
    handles += [
        Line2D([], [], color="grey", alpha=0.5, linewidth=4, label="analytic minimum L·B·F·4"),
        Line2D([], [], color="black", linestyle="--", label=f"time target {TIME_TARGET}"),
    ]
    for (fw, variant), target in every_depth.items():
        handles.append(
            Line2D([], [], color="black", linestyle=":", label=f"{fw} {variant}: {target} every L")
        )
    drawing.legend(
        handles=handles, loc="lower center", ncol=min(6, len(handles)), fontsize=8, frameon=False
    )
    drawing.suptitle(
        f"L blocks Dense({s.features}) → relu → Dense({s.features}), batch {s.batch}, float32, "
        f"CPU ({os.cpu_count()} cores) · bands: interquartile range of the repeats",
        fontsize=11,
    )
    legend_rows = -(-len(handles) // min(6, len(handles)))
    drawing.tight_layout(rect=(0, 0.03 + 0.12 * legend_rows / (2.9 * len(frameworks)), 1, 0.97))
    return drawing


def _two_five(value: float, _position) -> str:
    # Minor ticks of a log axis over decades: label 2 and 5 times a power of ten.
    if value <= 0:
        return ""
    mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
    return f"{value:g}" if mantissa in (2, 5) else ""


def _decorate(axis, settings, title: str, log_y: bool, plain, null_formatter) -> None:
    """Log-2 depths, plain tick labels (`2048`, not `2^11`), a light grid."""
    from matplotlib.ticker import FuncFormatter

    axis.set_xscale("log", base=2)
    axis.set_xticks(list(settings.depths), [str(d) for d in settings.depths])
    axis.xaxis.set_minor_formatter(null_formatter())
    if log_y:
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(plain)
        low, high = axis.get_ylim()
        # Within one decade a log axis has one major tick or none: label the minor ones.
        axis.yaxis.set_minor_formatter(plain if high < 10 * low else FuncFormatter(_two_five))
    axis.set_xlabel("depth L", fontsize=8)
    axis.tick_params(labelsize=8)
    axis.grid(alpha=0.3, which="both")
