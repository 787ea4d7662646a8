"""The precision tier, measured: false alarms on float32 ports, and every port's bits.

Three runs, each a deterministic stream of cases (example i is the same
case on every machine), so a long run can be made in pieces (`--start`):

- `false-alarms`: float32 test ports that differ only in how they sum
  (tests/support/precision_ports.py: loops both ways, pairwise, blocked, SIMD lanes,
  Kahan, FMA, float64 accumulation, numpy's BLAS) through the whole precision
  check, one port per example in turn. Every one must pass: a failure is a
  false alarm. This is the meta-test of docs/PRECISION.md (10^5 examples).
- `ports`: the registered ports (XLA, torch, MLX) through the same check.
- `mutants`: the lower-precision test ports and the mutants, at D = F = 256
  and 1024: their effective bits (each must fail).

The cases come from every x kind (normal, scaled, constant, alternating,
integers, dynamic range, zeros) and parameter kind of the precision
strategy, on shapes from 7 x 300 to 1024 x 1024.

Usage:
    python benchmarks/precision_tier.py false-alarms --examples 10000 --start 0 --json out.json
    python benchmarks/precision_tier.py ports --examples 500 flax_linen pytorch
    python benchmarks/precision_tier.py mutants [MUTANT ...]
    python benchmarks/precision_tier.py summary out-*.json

Run it with `nice -n 19`: it keeps one core busy.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support.precision_ports

from conformance.running import environment  # noqa: E402

# Shapes and how often each is drawn: mostly the sizes the tier is for,
# some with few groups (7 x 300: d/dx has 7), a few of the largest.
SHAPES = [
    ((256, 256), 30),
    ((128, 128), 15),
    ((64, 64), 10),
    ((300, 128), 10),
    ((128, 300), 10),
    ((7, 300), 10),
    ((512, 512), 8),
    ((1024, 256), 3),
    ((256, 1024), 3),
    ((1024, 1024), 1),
]
RESULTS = ("output", "d/dw1", "d/db1", "d/dw2", "d/db2", "d/dx", "end_to_end")


def case_for(index: int):
    """Example `index` of the stream: the same case everywhere."""
    from conformance.checking.strategies import (
        PRECISION_PARAM_KINDS,
        PRECISION_X_KINDS,
        PrecisionCase,
    )

    rng = np.random.default_rng([20260515, index])
    weights = np.array([w for _, w in SHAPES], float)
    dim, features = SHAPES[rng.choice(len(SHAPES), p=weights / weights.sum())][0]
    x_kind = PRECISION_X_KINDS[rng.integers(len(PRECISION_X_KINDS))]
    param_kind = PRECISION_PARAM_KINDS[rng.integers(len(PRECISION_PARAM_KINDS))]
    return PrecisionCase(dim, features, x_kind, param_kind, data_seed=index, seed=index % 1000)


def judge_all(port, case, reference) -> list:
    """Every result of the precision check, without stopping at a failure."""
    from conformance.checking import precision
    from conformance.checking.properties.shared import run_seeded_forward

    results = [
        precision.judge_output("output", port.forward(case.params, case.x), reference.forward)
    ]
    grads = port.vjp(case.params, case.x, case.cotangent).as_dict()
    results += precision.judge_grads(grads, reference, case.params, case.x, case.cotangent)
    out = run_seeded_forward(port, case, port.from_numpy(case.x.copy()))
    results.append(precision.judge_output("end_to_end", out, reference.end_to_end))
    return results


class Tally:
    """Per port: examples, failures, the worst ratio, and the bits of each result."""

    def __init__(self):
        self.examples = 0
        self.failures: list[dict] = []
        self.worst: dict = {"ratio": 0.0}
        self.ratios: list[float] = []
        self.bits: dict[str, list[float]] = defaultdict(list)
        self.by_kind: dict[str, float] = defaultdict(float)

    def add(self, index: int, case, results: list) -> None:
        self.examples += 1
        ratio = max(r.ratio for r in results)
        self.ratios.append(ratio)
        kind = f"{case.x_kind} x, {case.param_kind} params"
        self.by_kind[kind] = max(self.by_kind[kind], ratio)
        for r in results:
            if math.isfinite(r.bits):  # exact results (inf) say nothing of precision
                self.bits[r.name].append(r.bits)
        if ratio > self.worst["ratio"]:
            worst = max(results, key=lambda r: r.ratio)
            self.worst = {
                "ratio": ratio,
                "index": index,
                "case": describe(case),
                "result": worst.name,
                "median_z": worst.median_z,
                "threshold": worst.threshold,
            }
        for r in results:
            if r.failed:
                self.failures.append({"index": index, "case": describe(case), "result": r.name})

    def summary(self) -> dict:
        ratios = np.minimum(np.array(self.ratios), 1e300)  # inf: a failure, kept finite
        return {
            "examples": self.examples,
            "failures": self.failures,
            "worst": self.worst,
            "ratio_quantiles": {
                q: float(np.quantile(ratios, float(q))) for q in ("0.5", "0.99", "0.999", "1")
            }
            if len(ratios)
            else {},
            "bits": {
                name: {
                    "median": float(np.median(v)),
                    "min": float(np.min(v)),
                    "count": len(v),
                }
                for name, v in sorted(self.bits.items())
            },
            "worst_ratio_by_kind": dict(sorted(self.by_kind.items())),
        }


def describe(case) -> str:
    from conformance.checking.strategies import describe as describe_case

    return describe_case(case)


def false_alarms(start: int, count: int, progress: bool) -> dict:
    from conformance.checking.properties.i_precision import prepare_precision
    from tests.support.precision_ports import float32_ports

    ports = float32_ports()
    tallies = {p.name: Tally() for p in ports}
    began = time.perf_counter()
    for index in range(start, start + count):
        case = case_for(index)
        port = ports[index % len(ports)]
        reference = prepare_precision(None, case)
        with np.errstate(all="ignore"):  # a loop may overflow where the exact sum does not
            tallies[port.name].add(index, case, judge_all(port, case, reference))
        if progress and (index - start + 1) % 1000 == 0:
            done = index - start + 1
            print(f"{done} examples, {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return {
        "run": "false-alarms",
        "start": start,
        "count": count,
        "seconds": time.perf_counter() - began,
        "ports": {name: t.summary() for name, t in tallies.items()},
    }


def real_ports(names: list[str], start: int, count: int, progress: bool) -> dict:
    import implementations
    from conformance.checking.properties.i_precision import prepare_precision

    out: dict = {"run": "ports", "start": start, "count": count, "ports": {}}
    ports = []
    for name in names:
        try:
            port = implementations.load(name)
        except implementations.PortUnavailable as error:
            out["ports"][name] = {"unavailable": error.reason}
            continue
        port.pin_matmul_precision()
        ports.append(port)
    tallies = {port.name: Tally() for port in ports}
    seconds = dict.fromkeys(tallies, 0.0)
    # Example by example, every port on it: the exact result is computed once
    # and dropped, so a long run keeps no more than one case in memory.
    for index in range(start, start + count):
        case = case_for(index)
        reference = prepare_precision(None, case)
        for port in ports:
            began = time.perf_counter()
            tallies[port.name].add(index, case, judge_all(port, case, reference))
            seconds[port.name] += time.perf_counter() - began
        if progress and (index - start + 1) % 1000 == 0:
            print(f"{index - start + 1} of {count} examples", file=sys.stderr)
    for name, tally in tallies.items():
        out["ports"][name] = {**tally.summary(), "seconds": seconds[name]}
    return out


PRECISION_MUTANTS = ("tf32_matmul", "f16_inputs", "bf16_weights_only", "bias_off_by_1e-4")


def mutants(data_seeds: int, names: list[str]) -> dict:
    """The lower-precision test ports and the named mutants (default: the precision
    tier's four); a mutant whose stack cannot load in this process is listed as such."""
    from conformance import mutants as registry
    from conformance.checking.properties.i_precision import prepare_precision
    from conformance.checking.strategies import PrecisionCase
    from tests.support.precision_ports import low_precision_ports

    ports = list(low_precision_ports())
    out: dict = {"run": "mutants", "ports": {}}
    for name in names or PRECISION_MUTANTS:
        mutant = registry.load(name)
        if mutant.port is None:
            out["ports"][f"mutant {name}"] = {"unavailable": mutant.reason}
            continue
        ports.append(mutant.port)
        mutant.port.name = f"mutant {name}"
    for size in (256, 1024):
        cases = [PrecisionCase(size, size, "normal", "normal", s, s) for s in range(data_seeds)]
        references = [prepare_precision(None, c) for c in cases]
        for port in ports:
            tally = Tally()
            try:
                for index, (case, ref) in enumerate(zip(cases, references, strict=True)):
                    with np.errstate(all="ignore"):
                        tally.add(index, case, judge_all(port, case, ref))
            except Exception as error:  # a mutant may break the contract outright
                out["ports"][f"{port.name} @ {size}"] = {
                    "error": f"{type(error).__name__}: {error}"
                }
                continue
            summary = tally.summary()
            out["ports"][f"{port.name} @ {size}"] = {
                "examples": summary["examples"],
                "failed": len({f["index"] for f in summary["failures"]}),
                "bits": {k: v["median"] for k, v in summary["bits"].items()},
            }
    return out


def merge(paths: list[str]) -> dict:
    """Pieces of one run as one: examples added, failures joined, the worst kept."""
    pieces = [json.loads(Path(p).read_text()) for p in paths]
    total: dict = {"pieces": len(pieces), "examples": 0, "failures": [], "worst": {"ratio": 0}}
    per_port: dict[str, dict] = {}
    for piece in pieces:
        for name, s in piece["ports"].items():
            total["examples"] += s["examples"]
            total["failures"] += s["failures"]
            if s["worst"]["ratio"] > total["worst"]["ratio"]:
                total["worst"] = {"port": name, **s["worst"]}
            port = per_port.setdefault(name, {"examples": 0, "worst_ratio": 0.0, "bits": {}})
            port["examples"] += s["examples"]
            port["worst_ratio"] = max(port["worst_ratio"], s["worst"]["ratio"])
            for result, b in s["bits"].items():
                # medians of pieces: a summary, not the exact median of the whole
                port["bits"].setdefault(result, []).append(b["median"])
    for port in per_port.values():
        port["bits"] = {k: round(float(np.median(v)), 2) for k, v in port["bits"].items()}
    total["ports"] = per_port
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", choices=["false-alarms", "ports", "mutants", "summary"])
    parser.add_argument(
        "names", nargs="*", help="ports (ports), mutants (mutants), or JSON files (summary)"
    )
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=4, help="mutants: cases per size")
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    environment.prepare()
    if args.run == "false-alarms":
        result = false_alarms(args.start, args.examples, args.progress)
    elif args.run == "ports":
        result = real_ports(args.names, args.start, args.examples, args.progress)
    elif args.run == "mutants":
        result = mutants(args.seeds, args.names)
    else:
        result = merge(args.names)
    text = json.dumps(result, indent=1, default=str)
    if args.json:
        args.json.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
