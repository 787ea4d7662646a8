"""`python -m conformance plan`: where to put the regions over L blocks within a memory budget,
per framework, from the true optimum (`implementations.optimum`).

A framework's declarations are read from its bench module's source, not imported (a plan is
printed in a second, with no framework loaded): `PLACE_CODE`, a `string.Template` of the code
that places a nested placement with its own API (`$placement`: the placement as nested lists,
a list a region, an int a block run plain), `INTERNALS_UNITS`, what one taped block keeps
beside its input (a, in units: one B x F float32 tensor), and the constant keys of
`NOT_EXPRESSIBLE` / `SCHEDULES_NOT_EXPRESSIBLE`. `--measure` imports the framework and runs
the placement through its `StackBench`.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from dataclasses import dataclass
from string import Template
from typing import Any

from implementations.measuring.departure import count_model
from implementations.measuring.driver import ScheduleCase, StackBench
from implementations.measuring.placement import Placement
from implementations.optimum import optimal_placement, placement_cost
from implementations.schedules import (
    UNIT_BYTES,
    Item,
    Schedule,
    regions,
    revolve_frontier,
    show,
)

from . import FRAMEWORKS, load_frameworks
from .measure import Settings, make_data
from .schedules import PEAK_HIGH, PEAK_LOW, PEAK_SLACK_UNITS

#: The model's a without `--framework`: one tensor of internals, as torch and TensorFlow keep.
DEFAULT_INTERNALS = 1.0
#: What the spelled memory sizes are worth in bytes (`units` depends on B and F).
SIZES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


@dataclass(frozen=True)
class Declared:
    """A framework's plan declarations, read from its bench module's source."""

    framework: str
    place_code: str | None
    internals_units: float | None
    refused: frozenset[str]
    on_the_core: bool = False  # a block module (`place`): `StackBench` measures it

    def expresses(self, name: str) -> bool:
        return name not in self.refused


@dataclass
class Choice:
    """What one framework runs: a schedule it can express, and the model's prediction."""

    framework: str
    label: str
    items: tuple[Item, ...]
    peak_units: float
    evaluations: int
    code: str | None


def declared(framework: str) -> Declared:
    """`framework`'s declarations (its bench module's `PLACE_CODE`, `INTERNALS_UNITS` and the
    constant keys of what it cannot express), read without importing it."""
    spec = importlib.util.find_spec(FRAMEWORKS[framework])
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found: dict[str, ast.expr] = {}
    places = any(isinstance(n, ast.FunctionDef) and n.name == "place" for n in tree.body)
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({t.id: node.value for t in targets if isinstance(t, ast.Name)})
    refused = set()
    for name in ("NOT_EXPRESSIBLE", "SCHEDULES_NOT_EXPRESSIBLE"):
        value = found.get(name)
        if isinstance(value, ast.Dict):
            refused |= {k.value for k in value.keys if isinstance(k, ast.Constant)}
    code = found.get("PLACE_CODE")
    units = found.get("INTERNALS_UNITS")
    return Declared(
        framework,
        None if code is None else ast.literal_eval(code),
        None if units is None else float(ast.literal_eval(units)),
        frozenset(refused),
        places,
    )


def unit_bytes(batch: int, features: int) -> int:
    """One unit: a B x F float32 tensor."""
    return batch * features * UNIT_BYTES


def budget_units(amount: float, unit: str, batch: int, features: int) -> float:
    """A memory budget in units: `amount` of `unit` ("units", or a size of `SIZES`)."""
    if unit == "units":
        return float(amount)
    return amount * SIZES[unit] / unit_bytes(batch, features)


def as_lists(items: tuple[Item, ...]) -> str:
    """The placement as nested Python lists (`[[0, 1], [2], 3]`)."""
    return show(items, region=True, separator=", ")


def candidates(depth: int, known: Declared | None) -> list[tuple[str, tuple[Item, ...]]]:
    """The vocabulary's schedules a framework can express at `depth`, as (label, placement):
    the nearest to the optimum is the fewest evaluations among them within the budget."""
    expresses = known.expresses if known is not None else (lambda name: True)
    found = [(s, Schedule.parse(s)) for s in ("none", "every") if expresses(s)]
    if expresses("segments"):
        found += [(f"segments({s})", Schedule("segments", (s,))) for s in range(2, depth + 1)]
    if expresses("nested"):
        found += [
            (f"nested({','.join(map(str, f))})", Schedule("nested", f)) for f in _splits(depth)
        ]
    if expresses("binomial"):
        found += [(f"binomial({c})", Schedule("binomial", (c,))) for c in range(1, depth - 1)]
    return [(label, schedule.placement(depth)) for label, schedule in found]


def _splits(depth: int) -> list[tuple[int, ...]]:
    """Every ordered factorisation of `depth` into two or three lengths of 2 or more."""
    found = []
    for first in range(2, depth):
        if depth % first == 0:
            rest = depth // first
            found.append((first, rest))
            found += [(first, *more) for more in _splits(rest) if len(more) == 2]
    return found


def choose(framework: str, depth: int, units: float, a: float, known: Declared | None) -> Choice:
    """The optimum's placement where the framework expresses nested regions (`optimal`), else
    the nearest schedule it can express: the fewest evaluations within `units`."""
    code = None if known is None else known.place_code
    if known is None or known.expresses("optimal"):
        items = optimal_placement(depth, units, a)
        peak, evaluations = placement_cost(items, a)
        label = f"optimal({math.floor(units)})" if a == 1 else f"the optimum at a = {a:g}"
        return Choice(framework, label, items, peak, evaluations, _filled(code, items))
    costed = [(placement_cost(items, a), label, items) for label, items in candidates(depth, known)]
    fitting = [c for c in costed if c[0][0] <= units]
    if not fitting:
        return Choice(framework, "none fits", (), math.nan, 0, None)
    (peak, evaluations), label, items = min(fitting, key=lambda c: (c[0][1], c[0][0]))
    return Choice(framework, label, items, peak, evaluations, _filled(code, items))


def _filled(code: str | None, items: tuple[Item, ...]) -> str | None:
    return None if code is None else Template(code).substitute(placement=as_lists(items))


def revolve_within(depth: int, units: float, a: float) -> tuple[int, int] | None:
    """Revolve's fewest evaluations within `units` (its peak c + 1 + a), and its c."""
    fitting = [p for p in revolve_frontier(depth) if p.peak.inputs + a * p.peak.internals <= units]
    if not fitting:
        return None
    best = min(fitting, key=lambda p: p.forwards)
    return best.forwards, best.snapshots


@dataclass
class Plan:
    """The optimum for L blocks within a budget, and each framework's choice."""

    depth: int
    batch: int
    features: int
    budget_units: float
    a: float
    items: tuple[Item, ...]
    peak_units: float
    evaluations: int
    revolve: tuple[int, int] | None
    choices: list[Choice]

    @property
    def unit_bytes(self) -> int:
        return unit_bytes(self.batch, self.features)


def make_plan(
    depth: int, budget: float, batch: int, features: int, frameworks: list[str], a: float
) -> Plan:
    """The plan for `depth` blocks within `budget` units (`ValueError` below the least)."""
    items = optimal_placement(depth, budget, a)
    peak, evaluations = placement_cost(items, a)
    choices = [choose(name, depth, budget, a, declared(name)) for name in frameworks]
    revolve = revolve_within(depth, budget, a)
    return Plan(depth, batch, features, budget, a, items, peak, evaluations, revolve, choices)


def measure(plan: Plan, choice: Choice, stack: Any) -> dict[str, Any]:
    """Run `choice`'s placement through the framework's `StackBench` at the plan's B and F:
    its measured peak and evaluations against the prediction, and whether they lie within
    `bench --schedules`' acceptance (matmuls: 2E less one per region to 2E; peak: from
    `PEAK_LOW` x to `PEAK_HIGH` x the prediction + `PEAK_SLACK_UNITS`)."""
    if not isinstance(stack, StackBench):
        return {"not_measured": "its bench module is not on the measurement core (StackBench)"}
    data = make_data(
        Settings(depths=(plan.depth,), batch=plan.batch, features=plan.features), plan.depth
    )
    static = ScheduleCase(stack, Placement(choice.items), data, choice.label).measure()
    found: dict[str, Any] = {"method": static.peak_method, "outside": []}
    count = sum(1 for _ in regions(choice.items))
    if static.forward_matmuls is None:
        found["evaluations"] = None
    else:
        matmuls = sum(static.forward_matmuls)
        found["evaluations"] = matmuls / 2
        if not 2 * choice.evaluations - count <= matmuls <= 2 * choice.evaluations:
            found["outside"].append(
                f"forward matmuls {matmuls} outside {2 * choice.evaluations - count} to "
                f"{2 * choice.evaluations}"
            )
    if static.peak_bytes is None:
        found["peak_units"] = None
    else:
        units = static.peak_bytes / plan.unit_bytes
        found["peak_units"] = units
        low, high = PEAK_LOW * choice.peak_units, PEAK_HIGH * choice.peak_units + PEAK_SLACK_UNITS
        if not low <= units <= high:
            found["outside"].append(
                f"peak {units:.2f} units outside {low:.2f} to {high:.2f}"
                + _departure_said(stack, choice, units, low)
            )
    return found


def _departure_said(stack: Any, choice: Choice, units: float, low: float) -> str:
    """What the stack's counted departure for nested regions predicts for the placement (the
    optimum's placement nests regions; `optimal`'s own declaration first), in units."""
    declared_for = getattr(stack, "SCHEDULE_DEPARTURES", {})
    why = declared_for.get("optimal", declared_for.get("nested"))
    if why is None or "peak_units" not in count_model(why).predicts:
        return ""  # none declared, or a count model of other figures (or words: no count)
    predicted = count_model(why).predict(choice.items)["peak_units"]
    high = PEAK_HIGH * predicted + PEAK_SLACK_UNITS
    meets = "meets it" if low <= units <= high else "is outside it too"
    return (
        f"; its declared departure for nested regions predicts {predicted} units "
        f"(accepted to {high:.2f}): the measured {meets}"
    )


def planned_frameworks() -> list[str]:
    """The bench frameworks whose bench module declares `PLACE_CODE`, in the bench's order."""
    return [name for name in FRAMEWORKS if declared(name).place_code is not None]


def lines(plan: Plan) -> list[str]:
    """The plan as the command prints it."""
    size = plan.unit_bytes
    found = [
        f"plan: L = {plan.depth} blocks within {plan.budget_units:g} units "
        f"({plan.budget_units * size / 2**20:.3g} MiB; a unit: one {plan.batch} x "
        f"{plan.features} float32 tensor, {size} bytes), a = {plan.a:g} unit of internals "
        "per taped block",
        f"optimal placement ([...] a region, a number a block run plain): {show(plan.items)}",
        f"predicted: peak {plan.peak_units:g} units ({plan.peak_units * size / 2**20:.3g} MiB), "
        f"{plan.evaluations} block evaluations, {sum(1 for _ in regions(plan.items))} regions",
    ]
    if plan.revolve is not None:
        found.append(
            f"Revolve (one block taped at a time) within the same budget: {plan.revolve[0]} "
            f"block evaluations (binomial({plan.revolve[1]}))"
        )
    for choice in plan.choices:
        found.append("")
        found.append(
            f"{choice.framework}: {choice.label}, predicted peak {choice.peak_units:g} units, "
            f"{choice.evaluations} block evaluations"
        )
        if choice.code is None:
            found.append("  (its bench module declares no PLACE_CODE)")
        else:
            found += ["  " + line if line else "" for line in choice.code.splitlines()]
    left = [name for name in FRAMEWORKS if name not in {c.framework for c in plan.choices}]
    if len(plan.choices) > 1 and left:
        found += ["", f"not planned (their bench modules declare no PLACE_CODE): {', '.join(left)}"]
    return found


def measured_lines(plan: Plan, names: list[str]):
    """Each named framework's choice run and measured, a line as each finishes."""
    chosen = {c.framework: c for c in plan.choices}
    loaded, skipped = load_frameworks(names)
    yield ""
    for name in names:
        if name in skipped:
            yield f"{name}: not measured: {skipped[name]}"
            continue
        choice = chosen.get(name) or choose(
            name, plan.depth, plan.budget_units, plan.a, declared(name)
        )
        found = measure(plan, choice, loaded[name])
        yield _measured_line(name, choice, found)


def _measured_line(name: str, choice: Choice, found: dict[str, Any]) -> str:
    if "not_measured" in found:
        return f"{name}: not measured: {found['not_measured']}"
    parts = []
    for figure, said, predicted, unit in (
        ("peak_units", "peak", choice.peak_units, "units"),
        ("evaluations", "evaluations", choice.evaluations, "evaluations"),
    ):
        value = found[figure]
        if value is None:  # the instrument's reason, where it gives one (the peak's method)
            why = found["method"] if figure == "peak_units" else "not observable"
            parts.append(f"{said}: {why}; {predicted:g} {unit} predicted")
            continue
        parts.append(
            f"{value:.2f} {unit} measured, {predicted:g} predicted ({value / predicted:.2f}x)"
        )
    unseen = [f for f in ("peak_units", "evaluations") if found[f] is None]
    verdict = "; ".join(found["outside"]) or "within the bench's acceptance"
    if len(unseen) == 2:
        verdict = "not held to the model: " + (verdict if found["outside"] else "not observable")
    elif unseen and not found["outside"]:
        verdict += " where observed (the peak or the evaluations not observable)"
    method = "" if found["peak_units"] is None else f" · peak by {found['method']}"
    return f"{name} · {choice.label}: {'; '.join(parts)} · {verdict}{method}"
