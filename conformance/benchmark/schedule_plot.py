"""The schedule bench's pictures (`bench-schedules.png`), drawn from its JSON.

Top row, per framework at the deepest depth: peak bytes against forward evaluations (measured
forward matmuls / 2), each schedule a point in the framework's engine colour
(`conformance.colours`), its analytic model hollow beside it, Revolve's frontier
(`revolve_frontier`: one block taped at a time) and the true optimal frontier
(`implementations.optimum`, at the framework's a: `against_optimum.internals_of`), the limit.
Bottom row, per framework: measured peak bytes against L on log axes, one line per schedule
family. Imports matplotlib only when drawing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from implementations.installing import install_command
from implementations.optimum import optimal_frontier

from .. import colours, outputs
from .against_optimum import internals_of

MIB = 2**20


def family(label: str) -> str:
    """A schedule's line across depths: its name, nested by its depth of nesting, binomial
    by its snapshots (`nested(2,2,2)` -> `nested binary`, `nested(8,8)` -> `nested 2-level`)."""
    match = re.match(r"(\w+)\((.*)\)", label)
    if not match:
        return label
    name, args = match.groups()
    if name == "nested":
        lengths = args.split(",")
        return "nested 2-level" if len(lengths) == 2 else "nested binary"
    return label if name == "binomial" else name


def why_not(data: dict[str, Any]) -> str | None:
    """Why nothing can be drawn (matplotlib missing, no schedule measured), or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"matplotlib is not installed ({install_command('bench')})"
    if not _measured(data):
        return "no schedule was measured"
    return None


def png(data: dict[str, Any]) -> bytes:
    """The pictures as PNG bytes, for the report page; `why_not(data)` must be None."""
    import io

    import matplotlib.pyplot as plt

    drawn = figure(data)
    try:
        buffer = io.BytesIO()
        drawn.savefig(buffer, dpi=100, format="png")
        return buffer.getvalue()
    finally:
        plt.close(drawn)


def plot(data: dict[str, Any], path: Path) -> str | None:
    """Draw both rows into the file `path` (PNG). **Returns:** None, or why nothing was drawn."""
    reason = why_not(data)
    if reason is not None:
        return reason
    import matplotlib.pyplot as plt

    drawn = figure(data)
    try:
        with outputs.replacing(path) as temporary:  # whole or not at all
            drawn.savefig(temporary, dpi=100, format="png")
    finally:
        plt.close(drawn)
    return None


def _measured(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in data.get("results") or [] if r.get("peak_bytes") is not None]


def figure(data: dict[str, Any]):
    """Both rows as a matplotlib figure (Agg); the caller closes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = _measured(data)
    frameworks = list(dict.fromkeys(r["framework"] for r in results))
    deepest = max(r["depth"] for r in results)
    drawn, axes = plt.subplots(
        2, len(frameworks), figsize=(5.6 * len(frameworks), 9.0), squeeze=False
    )
    frontier = (data.get("frontier") or {}).get(str(deepest), [])
    unit = data["settings"]["batch"] * data["settings"]["features"] * 4
    for column, framework in enumerate(frameworks):
        colour = colours.colour(colours.bench_engine(framework))
        mine = [r for r in results if r["framework"] == framework]
        _trade_off(axes[0][column], framework, deepest, mine, frontier, colour)
        _optimum(axes[0][column], framework, deepest, unit)
        _against_depth(axes[1][column], framework, mine)
    drawn.suptitle("remat schedules: peak memory against forward evaluations, and against L")
    drawn.tight_layout()
    return drawn


def _trade_off(axis, framework, depth, mine, frontier, colour) -> None:
    if frontier:
        axis.step(
            [p["forwards"] for p in frontier],
            [p["peak_bytes"] / MIB for p in frontier],
            where="post",
            color="black",
            linewidth=1,
            label="Revolve's frontier (model: one block taped at a time)",
        )
    for r in (r for r in mine if r["depth"] == depth):
        if r.get("forward_matmuls") is None:
            continue
        measured = sum(r["forward_matmuls"]) / 2
        axis.plot(measured, r["peak_bytes"] / MIB, "o", color=colour)
        axis.plot(
            r["model_matmuls"] / 2, r["model_peak_bytes"] / MIB, "o", mfc="none", color="grey"
        )
        axis.annotate(r["schedule"], (measured, r["peak_bytes"] / MIB), fontsize=7)
    axis.plot([], [], "o", color=colour, label="measured")
    axis.plot([], [], "o", mfc="none", color="grey", label="model")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_title(f"{framework} · L = {depth}", fontsize=10)
    axis.set_xlabel("block forward evaluations per step (forward matmuls / 2)")
    axis.set_ylabel("peak bytes in the backward pass (MiB)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=7)


def _optimum(axis, framework: str, depth: int, unit: int) -> None:
    """The true optimal frontier at the framework's a, as a step line below Revolve's."""
    a = internals_of(framework)
    points = optimal_frontier(depth, a)
    axis.step(
        [p.evaluations for p in points],
        [p.peak * unit / MIB for p in points],
        where="post",
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"true optimum (several blocks taped at once, a = {a:g})",
    )
    axis.legend(fontsize=7)


def _against_depth(axis, framework, mine) -> None:
    lines: dict[str, list[tuple[int, float]]] = {}
    for r in mine:
        lines.setdefault(family(r["schedule"]), []).append((r["depth"], r["peak_bytes"] / MIB))
    for index, (name, points) in enumerate(sorted(lines.items())):
        points.sort()
        axis.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="os^Dv<>Ph"[index % 9],
            color=f"C{index % 10}",
            label=name,
        )
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_title(f"{framework}: peak bytes against L", fontsize=10)
    axis.set_xlabel("L (blocks)")
    axis.set_ylabel("peak bytes in the backward pass (MiB)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=7)
