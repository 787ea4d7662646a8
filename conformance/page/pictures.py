"""The compare pictures (PNG bytes), from a `compare --json` document; matplotlib, Agg.

- `strip`: per port, with the checkpoint on, what the backward pass keeps
  (input, activations, masks, constants) and which forward ops it reruns
  (matmuls, adds, relu, other), ports grouped by engine: a port whose
  backward reruns the whole block shows every op column filled.
- `time_vs_saved`: per port, the bytes kept with the checkpoint off and on
  beside the warm VJP time (checkpoint on) with its interquartile whisker, n
  and the IQR relative to the median; a spread wider than half the median is
  drawn hollow and dashed and called noise. Labels are the rows' ticks, so
  none overlap; colours and markers are the engines' (`conformance.colours`).
- `bits`: a dot plot of effective bits per port and result, with the
  bfloat16, TF32, float16 and float32 bands drawn in.

`compare --plot DIR` writes them as files; the report inlines them.
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import manifests

from .. import colours, outputs
from ..benchmark import from_json, plot
from ..tables.kinds.spread import relative_spread
from ..tables.kinds.spread import spread_words as words_of_spread
from ..tables.numbers import number
from .facts import is_matmul

SAVED_KINDS = ("input x", "activations", "bool masks", "constants")
OP_KINDS = ("matmul", "add / bias", "relu", "other")
# Effective bits measured for each reduced precision (docs/PRECISION.md).
BANDS = (
    ("bfloat16 kernels", 7.5, 9.2, "tab:red"),
    ("TF32", 10.3, 11.2, "tab:orange"),
    ("float16 x", 11.8, 12.6, "tab:purple"),
    ("float32", 19.0, 24.0, "tab:green"),
)
#: A spread this wide (interquartile range over the median) says the median is noise.
NOISE = 0.5
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


def _png(
    draw: Callable[[Any], None], size: tuple[float, float], layout: str | None = None
) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=size, layout=layout)
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


def spread(row: dict[str, Any]) -> dict[str, Any] | None:
    """The warm VJP's spread, said plainly: median and quartiles in ms, the sample count n,
    the interquartile range relative to the median, and whether that makes it noise.

    Noise: the interquartile range is more than `NOISE` of the median, or its low end
    would fall to zero or below (median - half the IQR, when only that is known): the
    median then says little, and the picture draws it hollow with a dashed whisker."""
    timing = warm_vjp(row)
    if timing is None:
        return None
    median, low, high = timing
    n = len(row.get("warm_vjp_samples") or ()) or row.get("warm_samples")
    found: dict[str, Any] = {"median": median * 1e3, "low": None, "high": None, "n": n}
    if low is None or high is None:
        found.update(relative=None, noise=False)
        return found
    relative = (high - low) / median if median > 0 else math.inf
    found.update(
        low=low * 1e3 if low > 0 else None,
        high=high * 1e3,
        relative=relative,
        noise=relative > NOISE or low <= 0,
    )
    return found


def spread_words(found: dict[str, Any] | None) -> str:
    """`n=9 · IQR 12% of the median`, `… : noise`, or `median only`."""
    if found is None:
        return "not timed"
    n = f"n={found['n']}" if found.get("n") else "n unknown"
    if found["relative"] is None:
        return f"{n} · median only, no spread"
    words = f"{n} · IQR {found['relative']:.0%} of the median"
    return words + ": noise" if found["noise"] else words


def time_vs_saved(compare: dict[str, Any]) -> bytes:
    """Per port (one row each, by engine): the bytes the backward pass keeps, checkpoint off
    (hollow) and on (filled), beside the warm VJP time with the checkpoint on, its
    interquartile whisker, n and the IQR relative to the median; a spread that is noise
    is drawn hollow and dashed, and says so. Every label is a row's tick: none overlap."""
    rows = measured_rows(compare)
    spreads = [spread(r) for r in rows]

    def draw(figure) -> None:
        from matplotlib.lines import Line2D

        saved, timed = figure.subplots(1, 2, sharey=True, width_ratios=(1, 1.6))
        for y, (row, found) in enumerate(zip(rows, spreads, strict=True)):
            name = engine(row)
            style = {"color": colours.colour(name), "marker": colours.marker(name)}
            residuals = row.get("residuals") or {}
            kib = {k: residuals[k]["bytes"] / 1024 for k in ("off", "on") if k in residuals}
            if len(kib) == 2:
                saved.plot([kib["off"], kib["on"]], [y, y], color=style["color"], linewidth=1)
            for setting, kept in kib.items():
                saved.plot(
                    kept, y, linestyle="none", markersize=7, markeredgecolor=style["color"],
                    markerfacecolor=style["color"] if setting == "on" else "white", **style,
                )  # fmt: skip
            if found is None:
                timed.text(0.02, y, "not timed", va="center", fontsize=8, color="grey",
                           transform=timed.get_yaxis_transform())  # fmt: skip
                continue
            median, noise = found["median"], found["noise"]
            if found["high"] is not None:
                low = found["low"] if found["low"] is not None else median / 100
                timed.plot(
                    [low, found["high"]], [y, y], color=style["color"], linewidth=1.5,
                    linestyle="--" if noise else "-",
                )  # fmt: skip
                for end in (low, found["high"]):
                    timed.plot(end, y, "|", color=style["color"], markersize=8)
            timed.plot(
                median, y, linestyle="none", markersize=7, markeredgecolor=style["color"],
                markerfacecolor="white" if noise else style["color"], **style,
            )  # fmt: skip
            timed.text(
                1.02, y, f"{median:.3g} ms · {spread_words(found)}", va="center", fontsize=8,
                fontweight="bold" if noise else "normal", transform=timed.get_yaxis_transform(),
            )  # fmt: skip
        labels = [f"{engine(r)} · {r['name']}" for r in rows]
        saved.set_yticks(range(len(rows)), labels, fontsize=9)
        saved.set_ylim(len(rows) - 0.5, -0.5)
        for y in range(1, len(rows)):  # a rule between engines
            if engine(rows[y]) != engine(rows[y - 1]):
                for axis in (saved, timed):
                    axis.axhline(y - 0.5, color="black", linewidth=0.6)
        saved.set_xlim(left=0)
        saved.set_xlabel("kept for the backward pass (KiB, parameters left out)", fontsize=9)
        saved.grid(alpha=0.3, axis="x")
        timed.set_xscale("log")
        timed.xaxis.set_major_formatter(_plain())
        timed.xaxis.set_minor_formatter(_two_five())  # 0.2, 0.5, 2, 5 between the decades
        timed.set_xlabel("warm VJP with the checkpoint on (ms per call, log)", fontsize=9)
        timed.grid(alpha=0.3, axis="x", which="both")
        timed.tick_params(axis="y", length=0)
        keys = [
            Line2D([], [], color="black", marker="o", linestyle="none", label="checkpoint on"),
            Line2D(
                [],
                [],
                color="black",
                marker="o",
                markerfacecolor="white",
                linestyle="none",
                label="checkpoint off",
            ),
            Line2D([], [], color="black", marker="|", linestyle="-", label="IQR of the samples"),
            Line2D(
                [],
                [],
                color="black",
                marker="o",
                markerfacecolor="white",
                linestyle="--",
                label=f"noise: IQR > {NOISE:.0%} of the median",
            ),
        ]
        figure.legend(
            handles=keys,
            fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=4,
            frameon=False,
        )
        figure.suptitle(
            "time against saved bytes: what each port keeps for the backward pass, and its "
            "warm VJP (median, interquartile whisker, n)",
            fontsize=10,
        )

    return _png(draw, (11.5, 0.3 * len(rows) + 2.2), layout="constrained")


def _plain():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def _two_five():
    from matplotlib.ticker import FuncFormatter

    def label(value: float, _) -> str:
        if value <= 0:
            return ""
        mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
        return f"{value:g}" if mantissa in (2, 5) else ""

    return FuncFormatter(label)


#: Where an exact result (infinite bits) is drawn, past float32's 24.
EXACT_AT = 26.0


def bit_points(compare: dict[str, Any]) -> list[float]:
    """Every effective-bits figure the precision picture draws (an exact one at
    `EXACT_AT`)."""
    found = []
    for row in measured_rows(compare):
        for key in RESULT_MARKERS:
            value = number(((row.get("precision") or {}).get(key) or {}).get("bits"))
            if value is not None:
                found.append(EXACT_AT if value == float("inf") else value)
    return found


def bits_window(points: list[float]) -> tuple[float, float]:
    """The precision picture's x axis: its points with a bit of margin on each side (a
    float32 port's sit at 20 to 24 bits; a TF32 or bfloat16 one's far lower), so that no
    point is off it and no empty stretch of bits fills it."""
    if not points:
        return 5.0, EXACT_AT + 1
    return math.floor(min(points)) - 1.0, max(math.ceil(max(points)) + 1.0, 25.0)


def bits(compare: dict[str, Any]) -> bytes:
    """Effective bits per port and result, with the reduced-precision bands its window
    (`bits_window`) reaches."""
    rows = measured_rows(compare)
    left, right = bits_window(bit_points(compare))

    def draw(figure) -> None:
        axis = figure.add_subplot()
        for label, low, high, colour in BANDS:
            if high < left or low > right:
                continue  # off the window: the caption names every band
            axis.axvspan(low, high, color=colour, alpha=0.15)
            middle = (max(low, left) + min(high, right)) / 2
            axis.text(middle, -0.7, label, ha="center", va="bottom", fontsize=8, color=colour)
        exact_at = EXACT_AT
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
        axis.set_xlim(left, right)
        step = 1 if right - left <= 12 else 2
        ticks = [t for t in range(math.ceil(left), 25, step) if t <= 24]
        exact = [exact_at] if right > exact_at else []
        axis.set_xticks([*ticks, *exact], [*map(str, ticks), *(["exact"] if exact else [])])
        axis.set_ylim(len(rows) - 0.5, -1.2)
        axis.set_yticks(range(len(rows)), [f"{engine(r)} · {r['name']}" for r in rows], fontsize=9)
        axis.set_xlabel("effective bits of the exact (float64) result")
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axis.grid(alpha=0.3, axis="x")
        axis.set_title(
            "precision per port; bands, where the axis reaches them: what bfloat16, TF32, "
            "float16 and float32 arithmetic read (docs/PRECISION.md)",
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
        outputs.write_bytes(directory / name, png)
        written.append(directory / name)
    return written


def bench_picture(bench: dict[str, Any]) -> bytes:
    """The bench plot (`conformance.benchmark.plot`) of a `bench.json`, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plot.figure(from_json(bench))
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=70)
        return buffer.getvalue()
    finally:
        plt.close(figure)


def policy_bench_picture(data: dict[str, Any]) -> bytes:
    """`bench --policies`: one row per framework and policy (by framework, in its engine's
    colour and marker): saved over the analytic minimum beside the step time over the same
    framework's `none`, median with its interquartile whisker, and n and the spread in words
    (noise over `NOISE` of the median)."""
    results = data.get("results") or []
    order = list(dict.fromkeys(r["framework"] for r in results))
    results = sorted(results, key=lambda r: order.index(r["framework"]))

    def draw(figure) -> None:
        saved, timed = figure.subplots(1, 2, sharey=True, width_ratios=(1, 1.4))
        for y, r in enumerate(results):
            name = colours.bench_engine(r["framework"])
            style = {"color": colours.colour(name), "marker": colours.marker(name)}
            saved.plot(r["saved_bytes"] / r["analytic_minimum"], y, linestyle="none", **style)
            ratios = [float(v) for v in r.get("time_ratios") or []]
            median, relative = relative_spread(ratios)
            if median is None:
                timed.text(0.02, y, "not timed", va="center", fontsize=8, color="grey",
                           transform=timed.get_yaxis_transform())  # fmt: skip
                continue
            noise = relative is not None and relative > NOISE
            if relative is not None:
                q1, _, q3 = statistics.quantiles(ratios, n=4)
                timed.plot([q1, q3], [y, y], color=style["color"],
                           linestyle="--" if noise else "-")  # fmt: skip
            timed.plot(median, y, linestyle="none", markeredgecolor=style["color"],
                       markerfacecolor="white" if noise else style["color"], **style)  # fmt: skip
            words = words_of_spread(relative, len(ratios), NOISE)
            timed.text(1.02, y, f"{median:.2f} · {words}",
                       va="center", fontsize=8, fontweight="bold" if noise else "normal",
                       transform=timed.get_yaxis_transform())  # fmt: skip
        labels = [f"{r['framework']} {r.get('variant', '')}".strip() + f" · {r['policy']}"
                  for r in results]  # fmt: skip
        saved.set_yticks(range(len(results)), labels, fontsize=8)
        saved.set_ylim(len(results) - 0.5, -0.5)
        for y in range(1, len(results)):
            if results[y]["framework"] != results[y - 1]["framework"]:
                for axis in (saved, timed):
                    axis.axhline(y - 0.5, color="black", linewidth=0.6)
        saved.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        saved.set_xlabel("saved / analytic minimum L·B·F·4", fontsize=9)
        saved.grid(alpha=0.3, axis="x")
        timed.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        timed.set_xlabel("step time / none (median, IQR whisker; dashed: noise)", fontsize=9)
        timed.grid(alpha=0.3, axis="x")
        timed.tick_params(axis="y", length=0)
        figure.suptitle("remat policies: saved bytes and step time per framework", fontsize=10)

    return _png(draw, (10.5, 0.24 * len(results) + 1.6), layout="constrained")


def scale_picture(data: dict[str, Any]) -> bytes:
    """`bench --scale`: bytes per rank and step time against N, one colour and marker per
    engine (`colours`), solid with the checkpoint on, dotted off, hollow on several nodes."""
    rows = data.get("rows") or []

    def draw(figure) -> None:
        memory, time = figure.subplots(1, 2)
        groups = dict.fromkeys((r["engine"], r.get("nodes", 1), r["checkpoint"]) for r in rows)
        for port, nodes, checkpoint in groups:
            mine = sorted(
                (r for r in rows if (r["engine"], r.get("nodes", 1), r["checkpoint"])
                 == (port, nodes, checkpoint)),
                key=lambda r: r["ranks"],
            )  # fmt: skip
            name = manifests.engine_of(port)
            style = {
                "color": colours.colour(name),
                "marker": colours.marker(name),
                "linestyle": "-" if checkpoint else ":",
                "markerfacecolor": "white" if nodes > 1 else colours.colour(name),
                "label": f"{port}, checkpoint {'on' if checkpoint else 'off'}"
                + (f", {nodes} nodes" if nodes > 1 else ""),
            }
            n = [r["ranks"] for r in mine]
            memory.plot(n, [max(r["kept_bytes"]) / 1024 for r in mine], **style)
            if nodes == 1:
                memory.plot(n, [r["minimum_bytes"] / 1024 for r in mine], "--", linewidth=0.8,
                            color=style["color"], alpha=0.6)  # fmt: skip
            medians, low, high = [], [], []
            for r in mine:
                times = sorted(float(t) * 1e3 for t in r.get("times") or [])
                median, _ = relative_spread(times)
                medians.append(median)
                if len(times) >= 4:
                    q1, _, q3 = statistics.quantiles(times, n=4)
                    low.append(median - q1)
                    high.append(q3 - median)
                else:
                    low.append(0.0)
                    high.append(0.0)
            time.errorbar(n, medians, yerr=[low, high], capsize=3, **style)
        for axis, title in (
            (memory, "KiB kept by the largest rank (thin dashed: analytic minimum)"),
            (time, "step time, ms (median, IQR whiskers)"),
        ):
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.xaxis.set_major_formatter(_plain())
            axis.yaxis.set_major_formatter(_plain())
            axis.yaxis.set_minor_formatter(_two_five())
            axis.set_xlabel("ranks N")
            axis.set_title(title, fontsize=9)
            axis.grid(alpha=0.3, which="both")
        handles, labels = memory.get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8,
                      frameon=False)  # fmt: skip

    return _png(draw, (10, 4.6), layout="constrained")
