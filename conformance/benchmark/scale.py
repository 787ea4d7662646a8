"""The scaling bench: per-rank saved bytes and step time of the sharded ports against N.

For each sharded port (its manifest entry names the variable that sets its
rank count), each node count (1, and 2: `REMAT_SCALE_NODES`, the ranks
split over two torchrun nodes or JAX processes of this machine,
docs/SCALE.md) and each N, a fresh isolated process (`conformance.running.isolation`:
a port's devices may exist only where it imports its framework first, and
its ranks stop with the process) loads the port with N set, and measures
on one batch `(B, D)` split by rows (the batch layout), with and without
the checkpoint:

- each rank's bytes kept for backward from x (`rank_records`: the ranks' own
  instruments), against the analytic per-rank minimum: x's rows,
  `(B/N) D` floats, with the checkpoint; x's rows and the relu's output,
  `(B/N) (D + F)` floats, without;
- the step time (forward, backward and, for FSDP, the gradients'
  reduce-scatter; the slowest rank's), `repeats` steps after one that warms
  up, as median and interquartile range.

`python -m conformance bench --scale` runs it (`commands.bench`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

import implementations
from implementations import manifests
from implementations.installing import install_command
from implementations.stacks.numpy import canonical_params

from .. import outputs
from ..running import isolation
from ..tables.kinds import scale as scale_tables
from ..tables.render import markdown as markdown_render

FLOAT32 = 4


@dataclass(frozen=True)
class ScaleSettings:
    """The sweep: rank counts, the batch's shape, the timed steps, the data's seed."""

    ranks: tuple[int, ...] = (1, 2, 4)
    #: Nodes (torchrun nodes, JAX processes) the ranks are split over; N from `ranks` that
    #: divide by it (at least one rank per node).
    nodes: tuple[int, ...] = (1, 2)
    batch: int = 256
    dim: int = 256
    features: int = 256
    repeats: int = 15
    seed: int = 0

    def __post_init__(self):
        for n in self.ranks:
            if self.batch % n:
                raise ValueError(f"batch={self.batch} must divide by every rank count, not {n}")

    def runs(self) -> list[tuple[int, int]]:
        """(nodes, N) for every run: each node count with the N it divides."""
        return [(k, n) for k in self.nodes for n in self.ranks if n % k == 0]


@dataclass
class ScaleRow:
    """One engine at one N, with or without the checkpoint."""

    engine: str
    ranks: int
    checkpoint: bool
    kept_bytes: list[int]  # per rank
    minimum_bytes: int  # analytic, per rank
    times: list[float] = field(default_factory=list)  # seconds per step
    nodes: int = 1  # the nodes (or processes) the N ranks are split over

    @property
    def worst_kept(self) -> int:
        return max(self.kept_bytes)

    def spread(self) -> tuple[float, float, int]:
        """Median and interquartile range of the step time, in seconds, and n."""
        q25, q50, q75 = np.percentile(self.times, [25, 50, 75])
        return float(q50), float(q75 - q25), len(self.times)


def minimum_bytes(settings: ScaleSettings, ranks: int, checkpoint: bool) -> int:
    """The analytic per-rank minimum a VJP of the MLP keeps from x (see the module)."""
    rows = settings.batch // ranks
    width = settings.dim if checkpoint else settings.dim + settings.features
    return rows * width * FLOAT32


def measure_here(engine: str, ranks: int, settings: dict, nodes: int = 1) -> list[dict]:
    """In an isolated process with N (and the nodes) set: one row per checkpoint setting,
    as dicts."""
    name = engine

    chosen = ScaleSettings(
        **{**settings, "ranks": tuple(settings["ranks"]), "nodes": tuple(settings["nodes"])}
    )
    port = implementations.load(name)
    if port.ranks != ranks:
        raise RuntimeError(f"{name} runs on {port.ranks} ranks, {ranks} were asked for")
    params = canonical_params(chosen.seed, chosen.dim, chosen.features)
    rng = np.random.default_rng(chosen.seed)
    x = rng.standard_normal((chosen.batch, chosen.dim)).astype(np.float32)
    rows = []
    try:
        for checkpoint in (True, False):
            records = port.rank_records(params, x, "batch", checkpoint=checkpoint)
            times = port.step_times(
                params, x, "batch", checkpoint=checkpoint, repeats=chosen.repeats
            )
            row = ScaleRow(
                engine, ranks, checkpoint, [r.kept_bytes for r in records],
                minimum_bytes(chosen, ranks, checkpoint), times, nodes,
            )  # fmt: skip
            if nodes > 1 and len({r.node for r in records}) != nodes:
                raise RuntimeError(f"{name}: ranks on {sorted({r.node for r in records})}")
            rows.append(asdict(row))
    finally:
        if hasattr(port, "close"):
            port.close()
    return rows


def run(
    settings: ScaleSettings,
    engines: list[str],
    progress: Callable[[str], None] = lambda text: None,
    timeout: float = 1800.0,
) -> tuple[list[ScaleRow], dict[str, str]]:
    """Every engine at every N and node count, each in a fresh process: the rows, and what
    failed (why)."""
    rows, failed = [], {}
    for engine in engines:
        for nodes, ranks in settings.runs():
            where = f"on {nodes} nodes" if nodes > 1 else ""
            progress(f"{engine} on {ranks} rank(s) {where}".strip())
            env = {**os.environ, **manifests.rank_setting(engine, ranks, nodes)}
            result = isolation.run(
                "conformance.benchmark.scale:measure_here",
                (engine, ranks, asdict(settings), nodes),
                env=env,
                timeout=timeout,
            )
            if result.status != "returned":
                label = f"{engine} N={ranks}" + (f" nodes={nodes}" if nodes > 1 else "")
                failed[label] = f"{result.status}: {result.error}".strip()
                continue
            rows.extend(ScaleRow(**row) for row in result.value)
    return rows, failed


def report_data(
    rows: list[ScaleRow], settings: ScaleSettings, failed: dict[str, str], seconds: float = 0.0
) -> dict:
    """The sweep as `scale.json` holds it (`kind` "scale")."""
    return {
        "kind": "scale",
        "settings": asdict(settings),
        "rows": [asdict(r) for r in rows],
        "failed": failed,
        "seconds": seconds,
    }


def markdown(rows: list[ScaleRow], settings: ScaleSettings, failed: dict[str, str]) -> str:
    """The table (`conformance.tables.kinds.scale`) as Markdown."""
    return markdown_render.document(scale_tables.document(report_data(rows, settings, failed)))


def plot(rows: list[ScaleRow], path) -> str | None:
    """Bytes per rank and step time against N, per engine, node count and checkpoint, the
    analytic minimum dashed; None when written, else why not (no matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        return f"matplotlib is not installed ({error}); {install_command('bench')}"
    figure, (memory, time) = plt.subplots(1, 2, figsize=(10, 4))
    for engine, nodes, checkpoint in dict.fromkeys((r.engine, r.nodes, r.checkpoint) for r in rows):
        mine = [r for r in rows if (r.engine, r.nodes, r.checkpoint) == (engine, nodes, checkpoint)]
        n = [r.ranks for r in mine]
        label = f"{engine}, checkpoint {'on' if checkpoint else 'off'}"
        # The rows on several nodes: open markers, a dotted line, no minimum of their own.
        style = {"marker": "o", "label": label}
        if nodes > 1:
            style.update(label=f"{label}, {nodes} nodes", markerfacecolor="none", linestyle=":")
        line = memory.plot(n, [r.worst_kept for r in mine], **style)[0]
        if nodes == 1:
            memory.plot(n, [r.minimum_bytes for r in mine], "--", color=line.get_color())
        spreads = [r.spread() for r in mine]
        time.errorbar(
            n, [s[0] * 1e3 for s in spreads], yerr=[s[1] * 1e3 / 2 for s in spreads],
            capsize=3, color=line.get_color(), **style,
        )  # fmt: skip
    for axis, title in ((memory, "bytes kept per rank (dashed: minimum)"), (time, "step ms")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("ranks N")
        axis.set_title(title)
        axis.legend(fontsize=7)
    time.set_title("step time, ms (bars: IQR)")
    figure.tight_layout()
    with outputs.replacing(path) as temporary:  # whole or not at all
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)
    return None
