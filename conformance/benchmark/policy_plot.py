"""The policy bench's plot: one panel per framework, time / none against saved / minimum,
each policy a point with whiskers (the interquartile range of its per-repeat time ratios).

Saved bytes are exact (one measurement), so they carry no whisker. Imports matplotlib only
when drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from implementations.installing import install_command

from .. import outputs
from .policies import PolicyResult


def plot(results: Sequence[PolicyResult], path: Path, title: str = "") -> str | None:
    """Draw the panels into `path` (PNG). **Returns:** None, or why nothing was drawn."""
    try:
        import matplotlib
    except ImportError:
        return f"matplotlib is not installed ({install_command('bench')})"
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    frameworks = list(dict.fromkeys(r.framework for r in results))
    if not frameworks:
        return "no policy was measured"
    columns = min(3, len(frameworks))
    rows = -(-len(frameworks) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.4 * rows), squeeze=False)
    for axis in axes.flat[len(frameworks) :]:
        axis.set_visible(False)
    for axis, framework in zip(axes.flat, frameworks, strict=False):
        mine = [r for r in results if r.framework == framework]
        for index, r in enumerate(mine):
            if r.time_ratio is None:
                continue
            quartiles = r.time_ratio_quartiles
            error = None
            if quartiles is not None:
                error = [[r.time_ratio - quartiles[0]], [quartiles[1] - r.time_ratio]]
            axis.errorbar(
                r.saved_ratio,
                r.time_ratio,
                yerr=error,
                fmt="o",
                capsize=4,
                color=f"C{index % 10}",
                label=f"{r.policy} (L={r.depth}, n={len(r.time_ratios)})",
            )
        axis.axvline(1.0, color="black", linestyle=":", linewidth=1)
        axis.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        axis.set_title(framework, fontsize=10)
        axis.set_xlabel("saved bytes / analytic minimum L·B·F·4")
        axis.set_ylabel("step time / none (median, IQR whiskers)")
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:  # a framework without `none` has no ratios
            axis.legend(fontsize=7, loc="best")
    if title:
        figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    with outputs.replacing(path) as temporary:  # whole or not at all
        figure.savefig(temporary, dpi=110, format="png")
    plt.close(figure)
    return None
