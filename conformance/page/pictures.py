"""The compare pictures (PNG bytes), from a `compare --json` document; matplotlib, Agg.

- `strip`: per port, with the checkpoint on, what the backward pass keeps
  (input, activations, masks, constants) and which forward ops it reruns
  (matmuls, adds, relu, other), ports grouped by engine: a port whose
  backward reruns the whole block shows every op column filled.
- `time_vs_saved`: the warm VJP time against the bytes saved, checkpoint on
  and off, with interquartile whiskers where the report holds the samples.
- `bits`: a dot plot of effective bits per port and result, with the
  bfloat16, TF32, float16 and float32 bands drawn in.

`compare --plot DIR` writes them as files; the report inlines them.
"""

from __future__ import annotations

import io
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import manifests

from .tables import is_matmul, number

SAVED_KINDS = ("input x", "activations", "bool masks", "constants")
OP_KINDS = ("matmul", "add / bias", "relu", "other")
# Effective bits measured for each reduced precision (docs/PRECISION.md).
BANDS = (
    ("bfloat16 kernels", 7.5, 9.2, "tab:red"),
    ("TF32", 10.3, 11.2, "tab:orange"),
    ("float16 x", 11.8, 12.6, "tab:purple"),
    ("float32", 19.0, 24.0, "tab:green"),
)
RESULT_MARKERS = {"output": "o", "exercise": "s", "w1": "^", "b1": "v", "w2": "<", "x": "D"}


def engine(row: dict[str, Any]) -> str:
    """The engine a port computes with (its stack's manifest): pictures group by it."""
    return manifests.engine_of(row.get("name", ""), row.get("framework", ""))


def _saved_kind(tensor: dict[str, Any]) -> str | None:
    origin = tensor.get("origin")
    if origin == "input":
        return "input x"
    if origin == "constant":
        return "constants"
    if origin == "activation":
        return "bool masks" if "bool" in str(tensor.get("dtype")) else "activations"
    return None  # parameters live anyway


def _op_kind(op: str) -> str:
    low = op.lower()
    if is_matmul(op):
        return "matmul"
    if "add" in low or "bias" in low:
        return "add / bias"
    if any(
        word in low for word in ("relu", "max", "select", "gt", "greater", "where", "threshold")
    ):
        return "relu"
    return "other"


def strip_counts(row: dict[str, Any], setting: str = "on") -> dict[str, int]:
    """Counts per `SAVED_KINDS` and `OP_KINDS` for one port's residuals, checkpoint `setting`."""
    found = dict.fromkeys((*SAVED_KINDS, *OP_KINDS), 0)
    residuals = (row.get("residuals") or {}).get(setting) or {}
    for tensor in residuals.get("saved") or []:
        kind = _saved_kind(tensor)
        if kind:
            found[kind] += 1
    for op, count in (residuals.get("recomputed") or {}).items():
        found[_op_kind(op)] += int(count)
    return found


def measured_rows(compare: dict[str, Any]) -> list[dict[str, Any]]:
    """The ports that ran without error, grouped by engine (stable within one)."""
    rows = [r for r in compare["ports"] if r.get("state") == "available" and not r.get("error")]
    order = list(dict.fromkeys(engine(r) for r in rows))
    return sorted(rows, key=lambda r: order.index(engine(r)))


def warm_vjp(row: dict[str, Any]) -> tuple[float, float | None, float | None] | None:
    """(median, low, high) of the warm VJP in seconds; low and high None when only a
    median is known.

    From the samples (`warm_vjp_samples`: the quartiles), else from compare's
    `warm_spread["vjp"]` (half the interquartile range: median ± it), else
    the median alone (`warm_vjp_seconds`).
    """
    samples = row.get("warm_vjp_samples")
    if samples and len(samples) >= 2:
        values = sorted(float(v) for v in samples)
        if len(values) < 4:
            return statistics.median(values), values[0], values[-1]
        q1, median, q3 = statistics.quantiles(values, n=4)
        return median, q1, q3
    median = number(row.get("warm_vjp_seconds"))
    if median is None:
        return None
    half = number((row.get("warm_spread") or {}).get("vjp"))
    if half is None or half != half:  # NaN: too few samples to say
        return median, None, None
    return median, median - half, median + half


def _png(draw: Callable[[Any], None], size: tuple[float, float]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=size)
    try:
        draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
        return buffer.getvalue()
    finally:
        plt.close(figure)


def strip(compare: dict[str, Any]) -> bytes:
    """The saved/recomputed strip: ports by engine, kept roles then rerun ops (checkpoint on)."""
    rows = measured_rows(compare)
    columns = (*SAVED_KINDS, *OP_KINDS)

    def draw(figure) -> None:
        axis = figure.add_subplot()
        counts = [strip_counts(r) for r in rows]
        for y, found in enumerate(counts):
            for x, kind in enumerate(columns):
                n = found[kind]
                saved = kind in SAVED_KINDS
                colour = ("tab:blue" if saved else "tab:orange") if n else "whitesmoke"
                axis.add_patch(_cell(x, y, colour))
                axis.text(
                    x,
                    y,
                    str(n) if n else "·",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if n else "grey",
                )
        axis.set_xlim(-0.5, len(columns) - 0.5)
        axis.set_ylim(len(rows) - 0.5, -0.5)
        axis.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=9)
        axis.set_yticks(range(len(rows)), [f"{engine(r)} · {r['name']}" for r in rows], fontsize=9)
        axis.axvline(len(SAVED_KINDS) - 0.5, color="black", linewidth=1.5)
        for y in range(1, len(rows)):  # a rule between engines
            if engine(rows[y]) != engine(rows[y - 1]):
                axis.axhline(y - 0.5, color="black", linewidth=1)
        axis.set_title(
            "checkpoint on: kept for the backward pass (blue, count) | "
            "forward ops the backward pass reruns (orange, count)",
            fontsize=10,
        )
        axis.tick_params(length=0)
        for side in axis.spines.values():
            side.set_visible(False)

    return _png(draw, (8.5, 0.45 * len(rows) + 1.8))


def _cell(x: float, y: float, colour: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.45, y - 0.4), 0.9, 0.8, color=colour)


def time_vs_saved(compare: dict[str, Any]) -> bytes:
    """Warm VJP time against saved bytes, checkpoint on (filled) and off (hollow), IQR whiskers."""
    rows = measured_rows(compare)
    engines = list(dict.fromkeys(engine(r) for r in rows))

    def draw(figure) -> None:
        import matplotlib.pyplot as plt

        axis = figure.add_subplot()
        colours = plt.get_cmap("tab10")
        whiskers = False
        for row in rows:
            timing = warm_vjp(row)
            if timing is None:
                continue
            median, q1, q3 = (None if v is None else v * 1e3 for v in timing)
            colour = colours(engines.index(engine(row)) % 10)
            for setting, face in (("on", colour), ("off", "none")):
                residual = (row.get("residuals") or {}).get(setting)
                if not residual:
                    continue
                kib = residual["bytes"] / 1024
                error = None if q1 is None else [[median - q1], [q3 - median]]
                whiskers |= error is not None
                axis.errorbar(
                    kib,
                    median,
                    yerr=error,
                    fmt="o",
                    markerfacecolor=face,
                    markeredgecolor=colour,
                    ecolor=colour,
                    capsize=3,
                )
            on = (row.get("residuals") or {}).get("on")
            if on:
                axis.annotate(
                    row["name"],
                    (on["bytes"] / 1024, median),
                    fontsize=8,
                    xytext=(4, 4),
                    textcoords="offset points",
                )
        for i, name in enumerate(engines):
            axis.plot([], [], "o", color=colours(i % 10), label=name)
        axis.plot([], [], "o", color="grey", label="checkpoint on")
        axis.plot([], [], "o", color="grey", markerfacecolor="none", label="checkpoint off")
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axis.set_xlabel("saved for the backward pass (KiB, parameters left out)")
        axis.set_ylabel("warm VJP (ms per call, median)")
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(_plain())
        axis.yaxis.set_minor_formatter(_plain())  # log ticks read 6, not 6x10^0
        axis.grid(alpha=0.3, which="both")
        axis.set_title(
            "time against saved bytes"
            + (
                " · whiskers: interquartile range"
                if whiskers
                else " · no samples in this report: medians only, no whiskers"
            ),
            fontsize=10,
        )

    return _png(draw, (8.5, 4.8))


def _plain():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def bits(compare: dict[str, Any]) -> bytes:
    """Effective bits per port and result, with the reduced-precision bands."""
    rows = measured_rows(compare)

    def draw(figure) -> None:
        axis = figure.add_subplot()
        for label, low, high, colour in BANDS:
            axis.axvspan(low, high, color=colour, alpha=0.15)
            axis.text(
                (low + high) / 2, -0.7, label, ha="center", va="bottom", fontsize=8, color=colour
            )
        exact_at = 26.0
        for y, row in enumerate(rows):
            for key, marker in RESULT_MARKERS.items():
                found = (row.get("precision") or {}).get(key)
                if not found:
                    continue
                value = number(found.get("bits"))
                failed = (number(found.get("ratio")) or 0) > 1
                x = exact_at if value == float("inf") else value
                axis.plot(
                    x,
                    y,
                    marker,
                    color="tab:red" if failed else "black",
                    markerfacecolor="none" if key == "exercise" else None,
                    alpha=0.75,
                )
        for key, marker in RESULT_MARKERS.items():
            axis.plot([], [], marker, color="black", label=key)
        axis.plot([], [], "o", color="tab:red", label="fails the precision tier")
        axis.axvline(exact_at - 0.5, color="grey", linewidth=0.5)
        axis.set_xlim(5, exact_at + 1)
        ticks = list(range(6, 25, 2))
        axis.set_xticks([*ticks, exact_at], [*map(str, ticks), "exact"])
        axis.set_ylim(len(rows) - 0.5, -1.2)
        axis.set_yticks(range(len(rows)), [f"{engine(r)} · {r['name']}" for r in rows], fontsize=9)
        axis.set_xlabel("effective bits of the exact (float64) result")
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axis.grid(alpha=0.3, axis="x")
        axis.set_title(
            "precision per port; bands: what bfloat16, TF32, float16 and float32 "
            "arithmetic read (docs/PRECISION.md)",
            fontsize=10,
        )

    return _png(draw, (8.5, 0.4 * len(rows) + 2.0))


PICTURES = {
    "compare-strip.png": ("What each port saves and reruns", strip),
    "compare-time-vs-saved.png": ("Time against saved bytes", time_vs_saved),
    "compare-bits.png": ("Precision bits per port", bits),
}


def compare_pictures(compare: dict[str, Any]) -> dict[str, tuple[str, bytes]]:
    """File name → (title, PNG bytes) for every compare picture."""
    return {name: (title, draw(compare)) for name, (title, draw) in PICTURES.items()}


def write_compare_pictures(compare: dict[str, Any], directory: str | Path) -> list[Path]:
    """Write the compare pictures into `directory` (made if missing). **Returns:** the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (_, png) in compare_pictures(compare).items():
        (directory / name).write_bytes(png)
        written.append(directory / name)
    return written


def bench_picture(bench: dict[str, Any]) -> bytes:
    """The bench plot (`conformance.benchmark.plot`) of a `bench.json`, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..benchmark import from_json, plot

    figure = plot.figure(from_json(bench))
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=70)
        return buffer.getvalue()
    finally:
        plt.close(figure)
