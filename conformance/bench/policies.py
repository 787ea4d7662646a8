"""`python -m conformance bench --policies`: every expressible remat policy on the batched
stacks, at one depth or a few: time over no remat, and saved bytes over the analytic minimum.

The stacks are the depth bench's (`jax_stack`, `torch_stack`,
`torch_compile_stack`, `mlx_stack`, `tensorflow_stack`): L blocks
`Linear -> relu -> Linear`, batch B, width F, the step the VJP of the stack.
Each block runs under the policy, spelled as the ports spell it:

- **jax** (under `lax.scan`, where XLA:CPU keeps the remat): `jax.checkpoint(block,
  policy=...)` with the JAX stack's policy functions (`implementations.stacks.jax.policies`),
  h tagged by `checkpoint_name`: none, full, save_dots, save_named, offload_dots.
- **torch** (eager): none, full, and save_dots through selective checkpointing.
- **torch compiled**: none (a partitioner that recomputes nothing, as the
  port's), full, save_dots, save_named (the `tag` operator on h), and no
  checkpoint with `activation_memory_budget` = 0, 0.25, 0.5, 0.75 and 1.
- **mlx**, **tensorflow**: none and full (they have no policy API).
- **mindspore_graph** (graph mode, in a child process): none, full, and save_dots
  (`Primitive.recompute()` on each block's adds and relu, not its matmuls).
- **paddle**, **mindspore** (PyNative), **deepspeed**: none and full (`recompute`,
  `Cell.recompute` and `deepspeed.checkpointing.checkpoint` take no policy).

Saved bytes come from each framework's instrument, as in the depth bench;
for a selective-checkpoint policy in eager torch, from the policy's cache
(`implementations.stacks.torch.policies.SelectiveCache`), which no hook
sees. They are exact: one measurement, no spread. Time is the median of
per-repeat ratios to the same framework's `none`, all cases of a depth
timed interleaved, with n and the interquartile range.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from implementations.contract import SavedTensor

from ..reporting.jsonable import to_data
from ..running import timing
from . import measure
from .measure import Data, Settings

#: The budgets torch.compile's `activation_memory_budget` is measured at.
BUDGETS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The policies each framework's bench runs (labels as `Policy.parse` reads them).
POLICIES: dict[str, tuple[str, ...]] = {
    "jax": ("none", "full", "save_dots", "save_named", "offload_dots"),
    "torch": ("none", "full", "save_dots"),
    "torch_compile": (
        "none",
        "full",
        "save_dots",
        "save_named",
        *(f"budget({b:g})" for b in BUDGETS),
    ),
    "mlx": ("none", "full"),
    "tensorflow": ("none", "full"),
    "mindspore_graph": ("none", "full", "save_dots"),  # save_dots: the stack's save-mm
    "paddle": ("none", "full"),
    "mindspore": ("none", "full"),
    "deepspeed": ("none", "full"),
}
#: Policies a framework cannot express, with the port's reason, shown under the table.
NOT_RUN: dict[str, dict[str, str]] = {
    "torch": {
        "save_named": "no tensor names; a cached tag still reruns its addmm eagerly",
        "offload_dots": "eager MUST_CPU_OFFLOAD is recompute (torch 2.13)",
        "budget": "a torch.compile option",
    },
    "torch_compile": {"offload_dots": "CPU_OFFLOAD is a plain save under compile (torch 2.13)"},
    "jax": {"budget": "JAX has no memory-budget policy"},
    "mlx": {name: "mx.checkpoint has no policy" for name in ("save_dots", "save_named")},
    "tensorflow": {name: "tf.recompute_grad has no policy" for name in ("save_dots", "save_named")},
    "paddle": dict.fromkeys(
        ("save_dots", "save_named", "offload_dots"), "recompute takes no policy"
    ),
    "mindspore": dict.fromkeys(
        ("save_dots", "save_named", "offload_dots"), "Cell.recompute takes no policy"
    ),
    "deepspeed": {
        "save_dots": "deepspeed.checkpointing.checkpoint takes no policy",
        "save_named": "deepspeed.checkpointing.checkpoint takes no policy",
        "offload_dots": "checkpoint_in_cpu offloads the inputs, not the dots, and fails upstream "
        "on the CPU (implementations/deepspeed.py, DeepSpeed.options)",
    },
    "mindspore_graph": {
        "save_named": "no names: Primitive.recompute marks ops, not tensors",
        "offload_dots": "graph-mode recompute has no offload option",
        "budget": "graph-mode recompute has no memory budget",
    },
}
NO_CASE = (
    "the policy bench has no case for it: its port speaks the process protocol, which carries "
    "the checkpoint on or off, not a policy (docs/PROTOCOL.md)"
)
#: The depth the policy bench runs at unless `--depths` says otherwise.
DEPTHS = (8,)


@dataclass
class PolicyResult:
    """One framework, variant and policy at one depth."""

    framework: str
    variant: str
    policy: str
    depth: int
    batch: int
    features: int
    saved_count: int
    saved_bytes: int
    analytic_minimum: int
    matmuls: int | None
    residuals: list[dict[str, Any]]
    step_seconds: list[float] = field(default_factory=list)
    time_ratios: list[float] = field(default_factory=list)

    @property
    def saved_ratio(self) -> float:
        return self.saved_bytes / self.analytic_minimum

    @property
    def time_ratio(self) -> float | None:
        return statistics.median(self.time_ratios) if self.time_ratios else None

    @property
    def time_ratio_quartiles(self) -> tuple[float, float] | None:
        """The first and third quartiles of the per-repeat ratios (None under 4 repeats)."""
        if len(self.time_ratios) < 4:
            return None
        q1, _, q3 = statistics.quantiles(self.time_ratios, n=4)
        return q1, q3

    @property
    def label(self) -> str:
        head = f"{self.framework} {self.variant}" if self.variant else self.framework
        return f"{head} · {self.policy}"

    def to_json(self) -> dict[str, Any]:
        data = to_data(self)
        data.update(
            label=self.label,
            saved_ratio=self.saved_ratio,
            time_ratio=self.time_ratio,
            time_ratio_quartiles=self.time_ratio_quartiles,
            n=len(self.time_ratios),
        )
        return data


# ---------------------------------------------------------------------------
# Cases: each framework's stack under a policy
# ---------------------------------------------------------------------------


def _jax_case(policy: str, data: Data):
    import jax

    from implementations.policies import Policy
    from implementations.stacks.jax import policies as jax_policies

    from . import jax_stack

    def block(params, x):  # (B, F) -> (B, F), h tagged for save_named
        w1, b1, w2, b2 = params
        h = jax_policies.tag(x @ w1 + b1[None, :])
        return jax.nn.relu(h) @ w2 + b2[None, :]

    parsed = Policy.parse(policy)
    run = block
    if parsed.name != "none":
        run = jax.checkpoint(block, policy=jax_policies.policy_function(parsed))

    def stack(params, x):  # (w1 (L, F, F), ...), (B, F) -> (B, F)
        y, _ = jax.lax.scan(lambda h, p: (run(p, h), None), x, params)
        return y

    case = jax_stack.JaxCase("scan", "none", data)
    case.stack, case.mode = stack, policy
    return case


def _torch_block(tag_h: bool) -> Callable:
    from torch.nn import functional

    from implementations.stacks.torch.policies import tag

    from . import torch_stack

    if not tag_h:
        return torch_stack.block

    def block(x, w1, b1, w2, b2):  # (B, F) -> (B, F), h through the tag operator
        return functional.linear(functional.relu(tag(functional.linear(x, w1, b1))), w2, b2)

    return block


def torch_stack_fn(policy: str, context_fn: Callable | None = None) -> Callable:
    """`stack(params, x)`: the torch blocks under `policy` (a budget runs them plain: it is the
    compiler's). `context_fn` replaces the policy's own (an instrument's)."""
    from torch.utils.checkpoint import checkpoint

    from implementations.policies import Policy
    from implementations.stacks.torch import policies as torch_policies

    name = Policy.parse(policy).name
    function = torch_policies.POLICY_FUNCTIONS.get(name)
    if context_fn is None and function is not None:
        context_fn = torch_policies.context_fn(function)
    extra = {} if context_fn is None else {"context_fn": context_fn}
    block = _torch_block(name == "save_named")

    def stack(params: Sequence[tuple[Any, ...]], x):
        for p in params:
            if name in ("none", "budget"):
                x = block(x, *p)
            else:
                x = checkpoint(block, x, *p, use_reentrant=False, **extra)
        return x

    return stack


def _torch_case(policy: str, data: Data):
    import torch

    from implementations.policies import Policy
    from implementations.stacks.torch import SavedTensors, classify
    from implementations.stacks.torch import policies as torch_policies

    from . import torch_stack

    class Case(torch_stack.TorchCase):
        def residuals(self) -> tuple[SavedTensor, ...]:
            # The hooks see what autograd keeps; a selective policy's cache, the rest.
            function = torch_policies.POLICY_FUNCTIONS.get(Policy.parse(policy).name)
            cache = None if function is None else torch_policies.SelectiveCache(function)
            stack = torch_stack_fn(policy, cache and cache.context_fn)
            hooked = SavedTensors()
            with torch.autograd.graph.saved_tensors_hooks(hooked.pack, hooked.unpack):
                y = stack(self.params, self.x)
            cached = {} if cache is None else cache.cached()
            saved = classify({**cached, **hooked.by_storage}, self.x, self.flat)
            torch.autograd.grad(y, self.flat, self.cotangent)
            return saved

    case = Case("", "none", data)
    case.stack, case.mode = torch_stack_fn(policy), policy
    return case


def _torch_compile_case(policy: str, data: Data):
    from implementations.policies import Policy
    from implementations.stacks.torch.compiled import CompiledModule, NoRemat

    from . import torch_compile_stack

    parsed = Policy.parse(policy)
    case = torch_compile_stack.CompiledCase("compiled", "none", data)
    if parsed.name == "none":  # as the port: a partitioner that recomputes nothing
        compiled = CompiledModule(dynamic=False, inductor={"custom_partitioner_fn": NoRemat()})
    elif parsed.name == "budget":
        compiled = CompiledModule(
            dynamic=False, functorch={"activation_memory_budget": parsed.budget}
        )
    else:
        compiled = CompiledModule(dynamic=False)
    case.compiled, case.mode = compiled, policy
    case.module = torch_compile_stack._Stack(torch_stack_fn(policy), case.params)
    case.stack = lambda params, x: case.compiled(case.module, x)
    return case


def _plain_case(module: ModuleType) -> Callable[[str, Data], Any]:
    # MLX, TensorFlow and the engines: their depth-bench cases for none and full, first variant.
    def build(policy: str, data: Data):
        variant = module.configurations()[0][0]
        return module.build(variant, policy, data)

    return build


def _mindspore_graph_case(module: ModuleType) -> Callable[[str, Data], Any]:
    # save_dots is the stack's save-mm: Primitive.recompute() on the adds and relu only.
    def build(policy: str, data: Data):
        return module.build("", "save-mm" if policy == "save_dots" else policy, data)

    return build


BUILDERS: dict[str, Callable[[ModuleType], Callable[[str, Data], Any]]] = {
    "jax": lambda module: _jax_case,
    "torch": lambda module: _torch_case,
    "torch_compile": lambda module: _torch_compile_case,
    "mlx": _plain_case,
    "tensorflow": _plain_case,
    "mindspore_graph": _mindspore_graph_case,
    "paddle": _plain_case,
    "mindspore": _plain_case,
    "deepspeed": _plain_case,
}


# ---------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------


def total_steps(settings: Settings, frameworks: dict[str, ModuleType]) -> int:
    cases = sum(len(POLICIES[name]) for name in frameworks)
    return len(settings.depths) * cases * (1 + settings.repeats)


def run(
    settings: Settings,
    frameworks: dict[str, ModuleType],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> tuple[list[PolicyResult], dict[str, str]]:
    """Measure every policy of every framework at each depth, then time them interleaved.

    **Returns:** `(results, failed: label -> error)`; a policy whose case fails to build or
    measure is reported, not dropped silently.
    """
    notify = progress or (lambda description, advance: None)
    results: list[PolicyResult] = []
    failed: dict[str, str] = {}
    for depth in settings.depths:
        data = measure.make_data(settings, depth)
        cases, depth_results = [], []
        for name, module in frameworks.items():
            build = BUILDERS[name](module)
            for policy in POLICIES[name]:
                label = f"L={depth} {name} · {policy}"
                notify(label, 0)
                try:
                    case = build(policy, data)
                    static = case.measure()
                except Exception as error:  # one policy's failure is reported, not fatal
                    failed[label] = f"{type(error).__name__}: {error}"
                    notify("", 1 + settings.repeats)
                    continue
                depth_results.append(_result(name, case, policy, static, depth, settings))
                cases.append(case)
                notify("", 1)
        notify(f"L={depth} timing, interleaved", 0)
        samples = timing.time_interleaved(
            [case.step for case in cases],
            settings.repeats,
            on_sample=lambda: notify("", 1),
            seed=settings.seed + depth,
        )
        attach_timings(depth_results, samples)
        results.extend(depth_results)
        del cases
    return results, failed


def _result(
    name: str, case: Any, policy: str, static: measure.Static, depth: int, settings: Settings
) -> PolicyResult:
    kept = [t for t in static.saved if t.origin in SavedTensor.KEPT]
    return PolicyResult(
        framework=name,
        variant=case.variant,
        policy=policy,
        depth=depth,
        batch=settings.batch,
        features=settings.features,
        saved_count=len(kept),
        saved_bytes=sum(t.nbytes for t in kept),
        analytic_minimum=measure.analytic_minimum(depth, settings.batch, settings.features),
        matmuls=static.matmuls,
        residuals=measure.summarise_residuals(static.saved),
    )


def attach_timings(results: Sequence[PolicyResult], samples: Sequence[list[float]]) -> None:
    """Each result's samples, and its per-repeat ratios to its own framework's `none`."""
    measure.attach_timings(
        results,
        samples,
        group=lambda r: (r.framework, r.depth),
        is_baseline=lambda r: r.policy == "none",
    )


def budget_monotone(results: Sequence[PolicyResult]) -> dict[int, bool | None]:
    """Per depth: do torch.compile's saved bytes never rise as the budget falls? (None: fewer
    than two budgets measured.)"""
    verdicts: dict[int, bool | None] = {}
    for depth in sorted({r.depth for r in results}):
        budgets = sorted(
            (float(r.policy[len("budget(") : -1]), r.saved_bytes)
            for r in results
            if r.framework == "torch_compile" and r.depth == depth and r.policy.startswith("budget")
        )
        if len(budgets) < 2:
            verdicts[depth] = None
            continue
        saved = [b for _, b in budgets]
        verdicts[depth] = all(low <= high for low, high in itertools.pairwise(saved))
    return verdicts


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def _ratio(result: PolicyResult) -> str:
    if result.time_ratio is None:
        return "—"
    quartiles = result.time_ratio_quartiles
    spread = "" if quartiles is None else f" (IQR {quartiles[0]:.2f} to {quartiles[1]:.2f})"
    return f"{result.time_ratio:.2f}{spread}"


def markdown(
    settings: Settings, results: Sequence[PolicyResult], failed: dict[str, str], frameworks
) -> str:
    """The policy table per framework, what could not run and why, and the budget verdict."""
    s = settings
    lines = [
        "# Remat policies: time and memory",
        "",
        f"L = {', '.join(map(str, s.depths))} blocks, B = {s.batch}, F = {s.features}, "
        f"float32, {s.repeats} interleaved repeats (n per row). time / none: the median of "
        "per-repeat ratios to the same framework's `none` step, with the interquartile range. "
        "saved / min: bytes the forward pass keeps for the backward pass over the analytic "
        "minimum L·B·F·4 (the block inputs); exact, one measurement, no spread.",
        "",
        "| framework | policy | L | time / none (IQR) | n | saved MiB | saved / min | matmuls |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head = f"{r.framework} {r.variant}".strip()
        matmuls = "—" if r.matmuls is None else str(r.matmuls)
        lines.append(
            f"| {head} | {r.policy} | {r.depth} | {_ratio(r)} | {len(r.time_ratios)} | "
            f"{r.saved_bytes / 2**20:.2f} | {r.saved_ratio:.2f} | {matmuls} |"
        )
    lines.append("")
    for name in frameworks:
        for policy, reason in NOT_RUN.get(name, {}).items():
            lines.append(f"- {name} · {policy}: not expressible ({reason}).")
    for label, error in failed.items():
        lines.append(f"- **{label} failed**: {error}")
    for depth, verdict in budget_monotone(results).items():
        if verdict is not None:
            said = "never rise" if verdict else "**rise somewhere**"
            lines.append(
                f"- torch.compile, L={depth}: saved bytes {said} as the budget falls "
                f"({', '.join(f'{b:g}' for b in reversed(BUDGETS))})."
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The command: `python -m conformance bench --policies`
# ---------------------------------------------------------------------------


def command(args: Any, settings: Settings) -> int:
    """Run the policy bench and write `bench-policies.json`, `.md` and `.png` into `args.out`."""
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..reporting.jsonable import dumps
    from ..running import interrupts
    from . import DEFAULT_FRAMEWORKS, load_average, load_frameworks
    from .policy_plot import plot

    console = Console(stderr=True)
    if not args.depths:  # one depth unless asked: the policies, not the depths, vary here
        settings = Settings(**{**to_data(settings), "depths": DEPTHS})
    named = args.framework or list(DEFAULT_FRAMEWORKS)
    # A framework without a policy case (tfjs: its protocol carries on/off only) is skipped
    # with the reason, before anything is loaded.
    skipped_first = {name: NO_CASE for name in named if name not in POLICIES}
    frameworks, skipped = load_frameworks([name for name in named if name in POLICIES])
    skipped = {**skipped_first, **skipped}
    interrupts.check()
    for name, reason in skipped.items():
        console.print(f"[yellow]skip[/] {name}: {reason}")
    load = {"before": load_average()}
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description:<40}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("bench --policies", total=total_steps(settings, frameworks))
        results, failed = run(
            settings,
            frameworks,
            progress=lambda description, advance: (
                interrupts.check(),
                bar.update(
                    task, advance=advance, **({"description": description} if description else {})
                ),
            ),
        )
    seconds = time.perf_counter() - started
    load["after"] = load_average()
    args.out.mkdir(parents=True, exist_ok=True)
    data = {
        "settings": to_data(settings),
        "budgets": BUDGETS,
        "policies": POLICIES,
        "not_run": {name: NOT_RUN.get(name, {}) for name in frameworks},
        "failed": failed,
        "skipped": skipped,
        "versions": {name: module.versions() for name, module in frameworks.items()},
        "budget_saved_bytes_never_rise_as_budget_falls": budget_monotone(results),
        "load_average_1min": load,
        "wall_seconds": seconds,
        "results": [r.to_json() for r in results],
    }
    table = markdown(settings, results, failed, frameworks)
    (args.out / "bench-policies.json").write_text(dumps(data) + "\n")
    (args.out / "bench-policies.md").write_text(table)
    why = plot(results, args.out / "bench-policies.png", "remat policies: time against memory")
    if why is not None:
        console.print(f"[yellow]no plot[/]: {why}")
    print(dumps(data) if args.json else table)
    console.print(f"bench --policies: {seconds:.0f}s wall, load {load} · wrote {args.out}")
    return 1 if failed else 0
