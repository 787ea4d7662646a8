"""The scaling bench: per-rank saved bytes and step time of the sharded ports against N.

For each sharded port (its manifest entry names the variable that sets its
rank count) and each N, a fresh isolated process (`conformance.running.isolation`:
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

from implementations import manifests

FLOAT32 = 4


@dataclass(frozen=True)
class ScaleSettings:
    """The sweep: rank counts, the batch's shape, the timed steps, the data's seed."""

    ranks: tuple[int, ...] = (1, 2, 4)
    batch: int = 256
    dim: int = 256
    features: int = 256
    repeats: int = 15
    seed: int = 0

    def __post_init__(self):
        for n in self.ranks:
            if self.batch % n:
                raise ValueError(f"batch={self.batch} must divide by every rank count, not {n}")


@dataclass
class ScaleRow:
    """One engine at one N, with or without the checkpoint."""

    engine: str
    ranks: int
    checkpoint: bool
    kept_bytes: list[int]  # per rank
    minimum_bytes: int  # analytic, per rank
    times: list[float] = field(default_factory=list)  # seconds per step

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


def measure_here(engine: str, ranks: int, settings: dict) -> list[dict]:
    """In an isolated process with N set: one row per checkpoint setting, as dicts."""
    name = engine
    import implementations
    from implementations.stacks.numpy import canonical_params

    chosen = ScaleSettings(**{**settings, "ranks": tuple(settings["ranks"])})
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
                minimum_bytes(chosen, ranks, checkpoint), times,
            )  # fmt: skip
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
    """Every engine at every N, each in a fresh process: the rows, and what failed (why)."""
    from ..running import isolation

    rows, failed = [], {}
    for engine in engines:
        variable = manifests.sharded()[engine]
        for ranks in settings.ranks:
            progress(f"{engine} on {ranks} rank(s)")
            env = {**os.environ, variable: str(ranks)}
            result = isolation.run(
                "conformance.benchmark.scale:measure_here",
                (engine, ranks, asdict(settings)),
                env=env,
                timeout=timeout,
            )
            if result.status != "returned":
                failed[f"{engine} N={ranks}"] = f"{result.status}: {result.error}".strip()
                continue
            rows.extend(ScaleRow(**row) for row in result.value)
    return rows, failed


def markdown(rows: list[ScaleRow], settings: ScaleSettings, failed: dict[str, str]) -> str:
    """The table: per-rank bytes against the analytic minimum, step times with spreads."""
    lines = [
        f"Batch ({settings.batch}, {settings.dim}) split by rows, F = {settings.features}; "
        f"{settings.repeats} timed steps after one warm-up; bytes: the largest rank's.",
        "",
        "| engine | N | checkpoint | bytes per rank | analytic minimum | ratio "
        "| step ms (median) | IQR ms | n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        median, iqr, n = row.spread()
        lines.append(
            f"| {row.engine} | {row.ranks} | {'on' if row.checkpoint else 'off'} "
            f"| {row.worst_kept:,} | {row.minimum_bytes:,} "
            f"| {row.worst_kept / row.minimum_bytes:.2f} "
            f"| {median * 1e3:.2f} | {iqr * 1e3:.2f} | {n} |"
        )
    for what, why in failed.items():
        lines.append(f"\n{what} failed: {why}")
    return "\n".join(lines) + "\n"


def plot(rows: list[ScaleRow], path) -> str | None:
    """Bytes per rank and step time against N, per engine and checkpoint, the analytic
    minimum dashed; None when written, else why not (no matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        return f"matplotlib is not installed ({error}); pip install -e '.[bench]'"
    figure, (memory, time) = plt.subplots(1, 2, figsize=(10, 4))
    for engine in dict.fromkeys(r.engine for r in rows):
        for checkpoint in (True, False):
            mine = [r for r in rows if r.engine == engine and r.checkpoint == checkpoint]
            if not mine:
                continue
            n = [r.ranks for r in mine]
            label = f"{engine}, checkpoint {'on' if checkpoint else 'off'}"
            line = memory.plot(n, [r.worst_kept for r in mine], marker="o", label=label)[0]
            memory.plot(n, [r.minimum_bytes for r in mine], "--", color=line.get_color())
            spreads = [r.spread() for r in mine]
            time.errorbar(
                n, [s[0] * 1e3 for s in spreads], yerr=[s[1] * 1e3 / 2 for s in spreads],
                marker="o", capsize=3, label=label, color=line.get_color(),
            )  # fmt: skip
    for axis, title in ((memory, "bytes kept per rank (dashed: minimum)"), (time, "step ms")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("ranks N")
        axis.set_title(title)
        axis.legend(fontsize=7)
    time.set_title("step time, ms (bars: IQR)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return None
