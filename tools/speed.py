"""Time a command in calibration units, so that the host's own speed cancels out.

    python tools/speed.py --label "fast tier" -- .venv/bin/python -m pytest -n 2
    python tools/speed.py --table            # docs/speed.json as docs/BENCHMARKS.md's table
    python tools/speed.py --write-docs       # ... written into docs/BENCHMARKS.md

A shared host's speed drifts (a fixed one-second loop took 1.00 to 1.78 s here within
minutes), so a budget in wall seconds measures the host. This runs a fixed calibration
workload, a pure-Python loop and a numpy matmul (about 1 s together on the 2-core machine
the budgets were set on, when it is quiet), three times before the command and three times
after; the command's time divided by the median of the six is its time in units. The
result is recorded in docs/speed.json under its label (`--json` elsewhere), newest only:
tests/core/docs/test_speed.py holds BENCHMARKS.md's table to it, a figure over its budget (or
a command that failed) marked ✗ beside it, and "within 10 %" where it is: the tiers issue
reports such a figure rather than block on it (`NEAR`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "docs" / "speed.json"
BENCHMARKS = ROOT / "docs" / "BENCHMARKS.md"

#: The budgets in calibration units, with what each label measures (issue "two tiers").
BUDGETS = {
    "fast tier, cold": (
        300,
        "the README's test command's pytest (`pytest -n 2`), fresh clone, `$REMAT_CACHE` empty",
    ),
    "fast tier": (
        300,
        "the README's test command's pytest (`pytest -n 2`), fresh clone, its caches as the "
        "runs before left them",
    ),
    "full tier": (1200, "the README's full command's pytest (`pytest -n 2 --full`), fresh clone"),
    "default run, cold": (90, "`python -m conformance`, `$REMAT_CACHE` empty"),
    "default run, warm": (45, "`python -m conformance`, its caches warm"),
    "compare": (45, "`python -m conformance compare`"),
    "list": (1, "`python -m conformance list`"),
}
#: The workload's size: about 1 s in all on the machine the budgets were set on, quiet (the
#: loop about 0.75 s, the matmuls 0.25 s).
LOOP_ITERATIONS = 15_000_000
MATMUL_SIZE, MATMUL_REPEATS = 1024, 18
#: Runs of the workload on each side of the command.
ROUNDS = 3
#: A figure over its budget by at most this share is reported as such, not as a miss alone.
NEAR = 0.10
_TABLE_START, _TABLE_END = "<!-- speed-table -->", "<!-- /speed-table -->"


def calibration_workload() -> float:
    """Seconds for one run of the fixed workload: a Python loop and a float64 matmul."""
    start = time.perf_counter()
    total = 0
    for i in range(LOOP_ITERATIONS):
        total += i
    matrix = np.random.default_rng(0).standard_normal((MATMUL_SIZE, MATMUL_SIZE))
    for _ in range(MATMUL_REPEATS):
        matrix = np.tanh(matrix @ matrix / MATMUL_SIZE)
    return time.perf_counter() - start


def measure(command: list[str], label: str, cwd: Path | None = None) -> dict:
    """Run `command` between two sets of calibration runs; the record of the measurement."""
    before = [calibration_workload() for _ in range(ROUNDS)]
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, check=False)
    seconds = time.perf_counter() - start
    after = [calibration_workload() for _ in range(ROUNDS)]
    # The unit as recorded (to the millisecond), so that the units are the recorded seconds
    # over the recorded unit (an unrounded unit read 57.2 where 49.88 / 0.871 is 57.3).
    unit = round(statistics.median(before + after), 3)
    return {
        "label": label,
        "command": " ".join(command),
        "exit_code": completed.returncode,
        "seconds": round(seconds, 2),
        "unit_seconds": unit,
        "units": round(seconds / unit, 1),
        "calibration_before": [round(s, 3) for s in before],
        "calibration_after": [round(s, 3) for s in after],
        "commit": _commit(cwd or ROOT),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }


def _commit(where: Path) -> str:
    result = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True
    )
    return result.stdout.strip() or "unknown"


def load(path: Path = RECORD) -> dict[str, dict]:
    """The newest record per label."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def table(records: dict[str, dict]) -> str:
    """The records against their budgets, as docs/BENCHMARKS.md shows them."""
    lines = [
        "| what | units | budget | seconds | unit | commit, date |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for label, (budget, what) in BUDGETS.items():
        record = records.get(label)
        if record is None:
            lines.append(f"| {label}: {what} | not measured | {budget} | | | |")
            continue
        over = _over(record, budget)
        mark = "" if over is None else f" ✗{over}"
        lines.append(
            f"| {label}: {what} | **{record['units']}**{mark} | {budget} | {record['seconds']} s"
            f" | {record['unit_seconds']} s | {record['commit']}, {record['date']} |"
        )
    return "\n".join(lines)


def _over(record: dict, budget: float) -> str | None:
    """What the ✗ beside a figure adds (None: no ✗): the failed command's exit code, or
    "within 10 %" for a figure that is over its budget by at most `NEAR`."""
    if record["exit_code"]:
        return f" (exit {record['exit_code']})"
    if record["units"] <= budget:
        return None
    return f" (within {NEAR * 100:.0f} %)" if record["units"] <= budget * (1 + NEAR) else ""


def docs_with_table(text: str, records: dict[str, dict]) -> str:
    """BENCHMARKS.md's text with the table between its markers made from `records`."""
    head, rest = text.split(_TABLE_START, 1)
    _, tail = rest.split(_TABLE_END, 1)
    return f"{head}{_TABLE_START}\n{table(records)}\n{_TABLE_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", choices=sorted(BUDGETS), help="what the command measures")
    parser.add_argument("--json", type=Path, default=RECORD, help="the record to update")
    parser.add_argument("--cwd", type=Path, default=None, help="run the command there")
    parser.add_argument("--table", action="store_true", help="print the table of the record")
    parser.add_argument("--write-docs", action="store_true", help="write it into BENCHMARKS.md")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.table or args.write_docs:
        records = load(args.json)
        if args.write_docs:
            BENCHMARKS.write_text(
                docs_with_table(BENCHMARKS.read_text(encoding="utf-8"), records), encoding="utf-8"
            )
        print(table(records))
        return 0
    if not command:
        parser.error("command: give the command to time after --")
    if args.label is None:
        parser.error(f"--label: name what the command measures, one of {sorted(BUDGETS)}")
    record = measure(command, args.label, args.cwd)
    records = load(args.json)
    records[args.label] = record
    args.json.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    budget = BUDGETS[args.label][0]
    over = _over(dict(record, exit_code=0), budget)
    verdict = "within" if over is None else f"OVER{over}"
    print(
        f"{args.label}: {record['seconds']} s = {record['units']} units of "
        f"{record['unit_seconds']} s (budget {budget}: {verdict}), exit {record['exit_code']}"
    )
    return record["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
