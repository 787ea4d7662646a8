"""The report's tables as plain data, from the JSON reports: one source for HTML, Markdown, CSV.

Every builder takes a report's parsed JSON (a `dict`, as `run --json`,
`compare --json` and `bench.json` hold it) and returns a `Table` of strings,
with no markup: each renderer styles the cells its own way. Symbols read
without colour: ✓ within the bound / met, ✗ not, `inconclusive` for a time
ratio whose spread is too wide to say.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PASSING = {"pass": "✓ pass", "reference": "ref", "skip": "skip", "xfail": "xfail (expected)"}
FAILING = {"fail": "✗ fail", "crashed": "✗ crash", "timeout": "✗ hang", "xpass": "✗ xpass"}
KIB = 1024


@dataclass
class Table:
    """A titled table of strings; `keys` names each row (a port), for links and checks."""

    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    caption: str = ""
    kind: str = ""  # "matrix", "compare", ...: lets HTML give the rows an id
    collapsed: bool = False  # HTML shows it on demand (a <details>): nothing in it stands out

    def add(self, key: str, cells: Sequence[Any]) -> None:
        self.keys.append(key)
        self.rows.append([str(c) for c in cells])


def number(value: Any) -> float | None:
    """A JSON number back to a float: `"inf"`, `"nan"` strings too (jsonable's convention)."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _ratio(value: Any) -> str:
    found = number(value)
    if found is None:
        return ""
    return "0" if found == 0 else ("<0.001" if found < 1e-3 else f"{found:.3f}")


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------


def outcome_cell(outcome: dict[str, Any]) -> str:
    """`✓ pass · 100 ex · worst 0.123`: the status in words, examples, worst error/bound."""
    status = outcome["status"]
    words = PASSING.get(status) or FAILING.get(status) or status
    if status in ("skip", "reference"):
        return words
    at = "at example" if status in FAILING else "ex"
    cell = f"{words} · {outcome.get('examples', 0)} {at}"
    worst = _ratio(outcome.get("worst_ratio"))
    return f"{cell} · worst {worst}" if worst else cell


def matrix(run: dict[str, Any]) -> Table:
    """Ports as rows, properties as columns, each cell an outcome in words."""
    properties = list(run.get("properties") or {})
    table = Table(
        title=f"Conformance matrix · profile {run.get('profile', '?')} · "
        f"{run.get('max_examples', '?')} examples per property",
        header=[
            "port",
            "framework",
            *[f"({key.split('_', 1)[0]}) {key.split('_', 1)[-1]}" for key in properties],
            "seconds",
        ],
        caption="✓ pass · N ex: all N examples passed; worst: the largest error/bound over them "
        "(1 would fail) · ✗ fail/crash/hang at example N: the property failed there · ref: the "
        "canonical port is the reference · skip: could not run · evidence self-reported: the "
        "port's own word, not the suite's instrument (docs/PROTOCOL.md, the trust boundary)",
        kind="matrix",
    )
    for port in run["ports"]:
        if port.get("state", "available") != "available":
            cells = [f"{port.get('state')}: {port.get('reason', '')}"] + [""] * len(properties)
            table.add(port["name"], [port["name"], *cells, ""])
            continue
        by_key = {o["property"]: o for o in port["outcomes"]}
        cells = [outcome_cell(by_key[k]) if k in by_key else "" for k in properties]
        seconds = number(port.get("seconds"))
        time = "" if seconds is None else f"{seconds:.0f}"
        framework = port.get("framework", "")
        evidence = (port.get("environment") or {}).get("evidence") or {}
        if evidence.get("measured_by") == "port":
            framework += " · evidence self-reported"
        table.add(port["name"], [port["name"], framework, *cells, time])
    return table


def failures(run: dict[str, Any]) -> Table | None:
    """One row per failed, crashed or hung outcome: its message and replay command."""
    table = Table(
        title="Failures",
        header=["port", "property", "status", "message", "replay"],
        caption="replay: the command that runs the property on the port again, failing "
        "example first",
        kind="failures",
    )
    for port in run["ports"]:
        for o in port["outcomes"]:
            if o["status"] in ("fail", "crashed", "timeout"):
                message = o.get("message", "").strip()
                short = message if len(message) <= 600 else message[:600] + " …"
                table.add(
                    port["name"],
                    [port["name"], o["property"], FAILING[o["status"]], short, o.get("replay", "")],
                )
    return table if table.rows else None


def mutants(run: dict[str, Any]) -> Table | None:
    """One row per mutant: killed by which property, its bug; None without mutants."""
    found = run.get("mutants")
    if not found:
        return None
    score = run.get("mutation_score") or {}
    table = Table(
        title=f"Mutation score: {score.get('killed', '?')}/{score.get('total', '?')} killed",
        header=["mutant", "verdict", "killed by", "bug"],
        caption="A mutant is a deliberately broken port; ✓ killed: a property rejected it",
        kind="mutants",
        collapsed=all(m["status"] == "killed" for m in found),
    )
    for m in found:
        verdict = "✓ killed" if m["status"] == "killed" else f"✗ {m['status']}"
        table.add(m["name"], [m["name"], verdict, m.get("killed_by", ""), m.get("bug", "")])
    return table


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------


def _within(diff: dict[str, Any] | None) -> bool | None:
    if not diff:
        return None
    worst = number(diff.get("worst_ratio"))
    return worst is not None and worst <= 1.0


def _diff(diff: dict[str, Any] | None) -> str:
    if not diff:
        return "-"
    mark = "✓" if _within(diff) else "✗"
    return f"{mark} {number(diff['max_abs']):.1e} ≤ {number(diff['bound']):.1e}"


def _worst_gradient(row: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    grads = row.get("gradients") or {}
    if not grads:
        return None
    return max(grads.items(), key=lambda item: number(item[1].get("worst_ratio")) or 0.0)


def _bytes(value: Any) -> str:
    found = number(value)
    if found is None:
        return "-"
    return f"{found / KIB:.2f}"


def _seconds(value: Any, half_iqr: Any = None, n: Any = None) -> str:
    # Milliseconds, 3 significant figures: `7.58 ± 0.41 (n=9)` when the spread is known.
    found = number(value)
    if found is None:
        return "-"
    text = f"{found * 1e3:.3g}"
    spread = number(half_iqr)
    if spread is not None and spread == spread:
        text += f" ± {spread * 1e3:.2g}"
    return f"{text} (n={n})" if n else text


def is_matmul(op: str) -> bool:
    """A matrix product, by any framework's name for it (dot_general, aten.addmm, MatMul)."""
    low = op.lower()
    return "dot" in low or low.endswith("mm") or "matmul" in low or "addmm" in low


def backward_matmuls(row: dict[str, Any]) -> int | None:
    """Matmuls the backward pass reruns with the checkpoint on (from `recomputed`)."""
    on = (row.get("residuals") or {}).get("on")
    if not on:
        return None
    return sum(n for op, n in (on.get("recomputed") or {}).items() if is_matmul(op))


def compare_verdict(row: dict[str, Any]) -> str:
    """✓ when every result is within its bound and every precision tier passes; else ✗ why."""
    if row.get("state") != "available":
        return f"{row.get('state')}: {row.get('reason', '')}"
    if row.get("error"):
        return f"✗ error: {row['error']}"
    if row.get("reference"):
        return "reference"
    over = [
        name
        for name, diff in [
            ("output", row.get("output")),
            ("exercise", row.get("exercise")),
            *(row.get("gradients") or {}).items(),
        ]
        if _within(diff) is False
    ]
    tier = [k for k, b in (row.get("precision") or {}).items() if (number(b["ratio"]) or 0) > 1]
    if over or tier:
        return "✗ " + "; ".join(
            ([f"over the bound: {', '.join(over)}"] if over else [])
            + ([f"precision tier: {', '.join(tier)}"] if tier else [])
        )
    return "✓ within bounds, float32 precision"


def compare_table(compare: dict[str, Any]) -> Table:
    """One row per port: verdict, differences, residuals, backward matmuls, times."""
    table = Table(
        title=f"Compare · seed {compare['seed']} · D={compare['dim']} F={compare['features']} · "
        f"against {compare['canonical']}",
        header=[
            "port",
            "verdict",
            "output",
            "worst gradient",
            "saved off (n · KiB)",
            "saved on (n · KiB)",
            "backward matmuls rerun",
            "warm fwd (ms)",
            "warm vjp (ms)",
            "versions",
        ],
        caption="output, gradients: ✓ when the largest |port - canonical| is within the "
        "tolerance bound at that element (shown as difference ≤ bound) · saved: residuals kept "
        "for the backward pass, checkpoint off and on, parameters left out · backward matmuls "
        "rerun: matrix products the backward pass recomputes · warm: median ms per call, ± half "
        "the interquartile range of the samples and their count n where the report has them",
        kind="compare",
    )
    for row in compare["ports"]:
        if row.get("state") != "available" or row.get("error"):
            table.add(row["name"], [row["name"], compare_verdict(row), *[""] * 8])
            continue
        worst = _worst_gradient(row)
        residuals = row.get("residuals") or {}
        saved = [
            f"{residuals[k]['count']} · {_bytes(residuals[k]['bytes'])}" if k in residuals else "-"
            for k in ("off", "on")
        ]
        matmuls = backward_matmuls(row)
        spread, n = row.get("warm_spread") or {}, row.get("warm_samples")
        versions = ", ".join(f"{k} {v}" for k, v in (row.get("versions") or {}).items())
        self_reported = row.get("measured_by") == "port"
        table.add(
            row["name"],
            [
                row["name"] + (" (evidence self-reported)" if self_reported else ""),
                compare_verdict(row),
                "reference" if row.get("reference") else _diff(row.get("output")),
                "reference"
                if row.get("reference") or not worst
                else f"d{worst[0]}: {_diff(worst[1])}",
                *saved,
                "-" if matmuls is None else str(matmuls),
                _seconds(row.get("warm_forward_seconds"), spread.get("forward"), n),
                _seconds(row.get("warm_vjp_seconds"), spread.get("vjp"), n),
                versions,
            ],
        )
    return table


PRECISION_KEYS = ("output", "exercise", "w1", "b1", "w2", "x")


def _bits(found: dict[str, Any] | None) -> str:
    if not found:
        return "-"
    bits = number(found.get("bits"))
    text = "exact" if bits == math.inf else f"{bits:.1f}"
    return f"✗ {text}" if (number(found.get("ratio")) or 0) > 1 else text


def precision_table(compare: dict[str, Any]) -> Table:
    """Effective bits of each result per port, and the float32 matmul setting."""
    table = Table(
        title="Precision: bits of the exact (float64) result each port keeps",
        header=["port", *PRECISION_KEYS, "matmul default", "matmul pinned"],
        caption="float32 arithmetic reads 19-24 bits, TF32 and float16 about 11, bfloat16 8; "
        "✗: fails the precision tier; exact: no error at all",
        kind="precision",
    )
    for row in compare["ports"]:
        if row.get("state") != "available" or row.get("error"):
            continue
        bits = row.get("precision") or {}
        setting = row.get("matmul_precision") or {}
        table.add(
            row["name"],
            [
                row["name"],
                *[_bits(bits.get(k)) for k in PRECISION_KEYS],
                str(setting.get("default", "-")).split(" (", 1)[0],
                str(setting.get("pinned", "-")).split(" (", 1)[0],
            ],
        )
    return table


# ---------------------------------------------------------------------------
# machine and versions
# ---------------------------------------------------------------------------


def machine(documents: Sequence[Any]) -> Table:
    """Where each report was made, and the versions it names."""
    table = Table(
        title="Machine and versions",
        header=["report", "kind", "machine", "versions"],
        kind="machine",
    )
    for doc in documents:
        data = doc.data
        found = data.get("machine") or {}
        where = ", ".join(
            str(found[k])
            for k in ("os", "platform", "cpu", "cores", "cpus", "python")
            if found.get(k) is not None
        )
        load = found.get("load_average_1min")
        if load:
            where += " · load " + ", ".join(f"{v:.1f} {k}" for k, v in load.items())
        versions: dict[str, str] = {}
        for port in data.get("ports") or []:
            versions.update(port.get("versions") or {})
        for found_versions in (data.get("versions") or {}).values():
            versions.update(found_versions)
        versions.update(found.get("packages") or {})
        table.add(
            doc.source,
            [
                doc.source,
                doc.kind,
                where or "not recorded",
                ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
            ],
        )
    return table


# ---------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------


def bench_table(data: dict[str, Any]) -> Table:
    """The bench's rows as `bench.md` has them: every figure with n and its spread."""
    from ..benchmark import from_json, render

    report = from_json(data)
    s = report.settings
    table = Table(
        title=f"Bench · L blocks of Dense({s.features}) → relu → Dense({s.features}), "
        f"batch {s.batch}",
        header=[column for column, _ in render.COLUMNS],
        caption="saved: residual MiB, parameters left out · saved/min: over L·B·F·4 · n: timed "
        "repeats · step ms and time/none: median ± half the interquartile range, relative "
        f"(! over ±{s.target_spread:.0%}; ±?: one repeat)",
        kind="bench",
    )
    for row in render.rows(report.results):
        table.add(f"{row[0]} {row[1]} {row[2]}", row)
    return table


def bench_targets(data: dict[str, Any]) -> Table:
    """The targets with a checkpoint per block: ✓, ✗ or inconclusive."""
    from ..benchmark import from_json, render

    report = from_json(data)
    table = Table(
        title="Bench targets (a checkpoint per block)",
        header=[
            "line",
            f"saved/min, worst L (≤ {render.SAVED_TARGET})",
            "time/none judged",
            "time target",
            "verdict",
        ],
        caption="✓/✗ only where the ratio's spread is within the target spread and its band "
        "clears the target; otherwise inconclusive",
        kind="targets",
    )
    for t in render.targets(report.results, report.settings.target_spread):
        which = "worst" if t["time_target_at"] == "every L" else "deepest"
        saved = f"{t['saved_ratio_worst']:.2f} {'✓' if t['saved_target_met'] else '✗'}"
        table.add(
            t["line"],
            [
                t["line"],
                saved,
                render.target_ratio(t, which),
                f"≤ {t['time_target']} at {t['time_target_at']}",
                render.VERDICT_MARKS[t["time_verdict"]],
            ],
        )
    return table


# ---------------------------------------------------------------------------
# bench --policies, bench --scale
# ---------------------------------------------------------------------------


def relative_spread(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(median, interquartile range over the median) of `values`; the spread is None under
    4 values (too few for quartiles)."""
    import statistics

    found = [v for v in (number(v) for v in values) if v is not None]
    if not found:
        return None, None
    median = statistics.median(found)
    if len(found) < 4 or median == 0:
        return median, None
    q1, _, q3 = statistics.quantiles(found, n=4)
    return median, (q3 - q1) / median


def spread_words(relative: float | None, n: int, noise: float = 0.5) -> str:
    """`n=11 · IQR 8%`, `n=11 · IQR 70%: noise`, or `n=2 · too few for an IQR`."""
    if relative is None:
        return f"n={n} · too few for an IQR" if n < 4 else f"n={n}"
    words = f"n={n} · IQR {relative:.0%}"
    return words + ": noise" if relative > noise else words


def policy_bench_table(data: dict[str, Any]) -> Table:
    """`bench --policies`: per framework and policy, time over none and saved over minimum."""
    s = data.get("settings") or {}
    table = Table(
        title=f"Bench · remat policies · L = {', '.join(map(str, s.get('depths', [])))}, "
        f"B = {s.get('batch', '?')}, F = {s.get('features', '?')}",
        header=[
            "framework",
            "policy",
            "L",
            "time / none",
            "spread",
            "saved MiB",
            "saved / min",
            "matmuls",
        ],
        caption="time / none: the median of per-repeat ratios to the same framework's no-remat "
        "step, with n and the interquartile range over the median (noise: over 50%) · saved / "
        "min: bytes kept for the backward pass over the analytic minimum L·B·F·4; exact, one "
        "measurement",
        kind="bench-policies",
    )
    for r in data.get("results") or []:
        head = f"{r['framework']} {r.get('variant', '')}".strip()
        ratio, relative = relative_spread(r.get("time_ratios") or [])
        matmuls = r.get("matmuls")
        table.add(
            f"{head} {r['policy']} {r['depth']}",
            [
                head,
                r["policy"],
                r["depth"],
                "-" if ratio is None else f"{ratio:.2f}",
                spread_words(relative, len(r.get("time_ratios") or [])),
                f"{r['saved_bytes'] / 2**20:.3g}",
                f"{r['saved_bytes'] / r['analytic_minimum']:.2f}",
                "-" if matmuls is None else matmuls,
            ],
        )
    return table


def policy_bench_notes(data: dict[str, Any]) -> list[str]:
    """What `bench --policies` could not run, what failed, and the budget verdicts."""
    notes = [
        f"{name} · {policy}: not expressible ({reason})"
        for name, found in (data.get("not_run") or {}).items()
        for policy, reason in found.items()
    ]
    notes += [f"✗ {label} failed: {error}" for label, error in (data.get("failed") or {}).items()]
    notes += [f"{name} skipped: {why}" for name, why in (data.get("skipped") or {}).items()]
    for line, verdict in (data.get("budget_saved_bytes_never_rise_as_budget_falls") or {}).items():
        if verdict is not None:
            said = "✓ never rise" if verdict else "✗ rise somewhere"
            notes.append(f"{line}: saved bytes {said} as the budget falls")
    return notes


def scale_table(data: dict[str, Any]) -> Table:
    """`bench --scale`: per engine, node count, N and checkpoint, bytes per rank and time."""
    s = data.get("settings") or {}
    table = Table(
        title=f"Bench · scale over ranks · batch ({s.get('batch', '?')}, {s.get('dim', '?')}) "
        f"split by rows, F = {s.get('features', '?')}",
        header=[
            "engine",
            "nodes",
            "N",
            "checkpoint",
            "bytes per rank",
            "analytic minimum",
            "ratio",
            "step ms (median)",
            "spread",
        ],
        caption="bytes per rank: the largest rank's, against the analytic per-rank minimum; "
        "step ms: the median over the timed steps, with n and the interquartile range over "
        "the median (noise: over 50%); nodes: the sharded port's nodes, all on this machine",
        kind="scale",
    )
    for row in data.get("rows") or []:
        worst = max(row["kept_bytes"])
        median, relative = relative_spread(row.get("times") or [])
        checkpoint = "on" if row["checkpoint"] else "off"
        table.add(
            f"{row['engine']} {row.get('nodes', 1)} {row['ranks']} {checkpoint}",
            [
                row["engine"],
                row.get("nodes", 1),
                row["ranks"],
                checkpoint,
                f"{worst:,}",
                f"{row['minimum_bytes']:,}",
                f"{worst / row['minimum_bytes']:.2f}",
                "-" if median is None else f"{median * 1e3:.2f}",
                spread_words(relative, len(row.get("times") or [])),
            ],
        )
    return table


# ---------------------------------------------------------------------------
# versions
# ---------------------------------------------------------------------------

#: The columns a versions row is read by first, in this order; any other key follows.
VERSION_COLUMNS = ("framework", "version", "port", "status", "verdict", "failed", "note")


def versions_table(rows: Sequence[Any]) -> Table:
    """A versions sweep's matrix, from a plain list of rows (dicts: `framework` and
    `version` first, then `port`, `status` or `verdict`, `failed`, `note`, then any other
    key, each a column; a value that is a dict, such as property -> status, is one column
    per key). A cell reads ✓ or ✗ where the value is a status (`pass`, `fail`...) or a
    boolean `failed` or `passed`."""
    flat = []
    for row in rows:
        cells: dict[str, Any] = {}
        for key, value in dict(row).items():
            if isinstance(value, dict):
                cells.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                cells[key] = value
        flat.append(cells)
    keys = list(dict.fromkeys(k for cells in flat for k in cells))
    header = [k for k in VERSION_COLUMNS if k in keys] + [
        k for k in keys if k not in VERSION_COLUMNS
    ]
    table = Table(
        title="Versions",
        header=header,
        caption="One row per framework version the sweep tried: ✓ passed, ✗ failed, with "
        "what each row reports",
        kind="versions",
    )
    for cells in flat:
        table.add(
            " ".join(str(cells.get(k, "")) for k in ("framework", "version", "port")).strip(),
            [_version_cell(k, cells.get(k)) for k in header],
        )
    return table


def _version_cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        if key in ("failed", "fails"):
            return "✗ failed" if value else "✓ passed"
        if key in ("passed", "ok", "conforms"):
            return "✓ passed" if value else "✗ failed"
        return "yes" if value else "no"
    text = str(value)
    if text in PASSING and text != "skip":
        return PASSING[text]
    if text in FAILING:
        return FAILING[text]
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return text
