"""The block with variables and RNGs in torch (issue 78): one training step under each of
torch's checkpoints, and the instrument that sees its dropout masks and state writes.
Imports torch and numpy.

**The block**: `Linear(D, F) -> BatchNorm1d(F) -> relu -> Dropout(rate) -> Linear(F, F)`, the
Linears holding the first exercise's canonical parameters (numpy's init, kernels transposed),
BatchNorm `weight` 1, `bias` 0, running mean 0 and variance 1, `eps` 1e-5 and momentum 0.01:
torch's spelling of Flax's 0.99 (torch's momentum is the share of the batch taken). torch
keeps the *unbiased* batch variance (times B / (B - 1)) in `running_var`, and counts steps in
`num_batches_tracked`.

**Seeding.** `nn.Dropout` draws from torch's default CPU generator: a step runs inside
`torch.random.fork_rng` after `torch.manual_seed(seed)`, so the caller's stream is left as it
was, and the stream read before and after the step (`torch.get_rng_state()`) is the step's own.

**The instrument** is the stack's one counter, `instrument.Ops`, with `Draws` observing both
passes: each dropout draw (`aten.bernoulli`: its 0/1 output, nonzero where kept) in the pass
that ran it, and each write into BatchNorm's running mean (`native_batch_norm` in training
with the running statistics, whose schema does not mark them written, or any op that writes
that storage). A compiled step is not watched from outside: dynamo runs a frame eagerly while
a `TorchDispatchMode` is active, so watching would change what is checked (`COMPILED_UNSEEN`).
With inductor's `fallback_random`, `watched_inductor` enters it inside the compiled call, where
dropout is `aten.native_dropout` (its `(output, mask)` seen) under torch's RNG higher-order ops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional
from torch.utils.checkpoint import checkpoint

from ...contract import check_features, check_seed
from ...stateful import (
    DEFAULT_VARIANT,
    NotObservable,
    StateStep,
    check_batch,
    check_rate,
)
from ..numpy import canonical_params
from .caches import RECOMPILES
from .instrument import PHASES, Ops, in_backward
from .mlp import CanonicalLinear, tensor
from .state_declarations import BUDGET_ZERO, PYTORCH, TORCH_COMPILE

#: torch's momentum for the canonical's 0.99 kept: the share of the batch's statistic taken.
TORCH_MOMENTUM = 0.01
EPS = 1e-5
SEEDING = (
    "nn.Dropout draws from torch's default CPU generator: torch.manual_seed(seed) inside "
    "torch.random.fork_rng, so the caller's stream is untouched"
)
#: Why a compiled step's masks and writes are not observed.
COMPILED_UNSEEN = (
    "inductor draws the mask inside its generated kernel (with the checkpoint, the forward "
    "saves only the draw's int64 seed for the backward to draw again), and a "
    "TorchDispatchMode active around torch.compile makes dynamo run the frame eagerly "
    "(measured: BatchNorm updated twice, as eager), so no instrument watches the compiled step"
)
_BERNOULLI = frozenset({"aten.bernoulli", "aten.bernoulli_"})
#: `aten.native_dropout` returns `(output, mask)`: what a compiled step's fallback kernel runs.
_NATIVE_DROPOUT = "aten.native_dropout"
#: Why a compiled step's state writes are not counted: inductor fuses BatchNorm's update.
UPDATES_COMPILED = (
    "inductor fuses BatchNorm's running-statistics update into its generated kernel; (l.3) "
    "reads the statistics and num_batches_tracked instead"
)
_BATCH_NORM = torch.ops.aten.native_batch_norm.default

#: `run(block, x) -> y`: the block's call, with or without a checkpoint.
Run = Callable[[nn.Module, torch.Tensor], torch.Tensor]


class Block(nn.Module):
    """`Linear -> BatchNorm1d -> relu -> Dropout -> Linear`, in training mode."""

    def __init__(self, params: Any, rate: float):
        super().__init__()
        self.fc1 = CanonicalLinear(tensor(params.w1.T), tensor(params.b1))
        self.bn = nn.BatchNorm1d(params.features, eps=EPS, momentum=TORCH_MOMENTUM)
        self.drop = nn.Dropout(rate)
        self.fc2 = CanonicalLinear(tensor(params.w2.T), tensor(params.b2))
        self.train()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, F)
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))

    def leaves(self) -> list[torch.Tensor]:
        """The parameters in the canonical order w1, b1, gamma, beta, w2, b2."""
        return [
            self.fc1.weight,
            self.fc1.bias,
            self.bn.weight,
            self.bn.bias,
            self.fc2.weight,
            self.fc2.bias,
        ]


def build_block(seed: int, dim: int, features: int, rate: float) -> Block:
    """The block for `seed`: the canonical Linears (numpy's init, drawing nothing from torch)."""
    return Block(canonical_params(seed, dim, features), rate)


def plain(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The block with no checkpoint."""
    return block(x)


class Draws:
    """An observer of `instrument.Ops` in both passes: the dropout masks each pass draws, and
    the writes into the running mean's storage (`running`)."""

    def __init__(self, running: torch.Tensor):
        self.storage = running.untyped_storage().data_ptr()
        self.masks: dict[str, list[np.ndarray]] = {phase: [] for phase in PHASES}
        self.writes = 0

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        pass

    def after(self, func: Any, args: Any, out: Any) -> None:
        packet = str(func.overloadpacket)
        if packet in _BERNOULLI:
            self.masks[PHASES[in_backward()]].append(out.detach().cpu().numpy() != 0)
        if packet == _NATIVE_DROPOUT:
            self.masks[PHASES[in_backward()]].append(out[1].detach().cpu().numpy().astype(bool))
        if self._writes_running(func, args):
            self.writes += 1

    def _writes_running(self, func: Any, args: Any) -> bool:
        if func is _BATCH_NORM:  # training with running stats writes them (schema unmarked)
            running = args[3]
            return bool(args[5]) and running is not None and self._is_running(running)
        written = [
            arg
            for arg, spec in zip(args, func._schema.arguments, strict=False)
            if spec.alias_info is not None and spec.alias_info.is_write
        ]
        return any(isinstance(t, torch.Tensor) and self._is_running(t) for t in written)

    def _is_running(self, tensor: torch.Tensor) -> bool:
        return tensor.untyped_storage().data_ptr() == self.storage


def non_reentrant(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False)


def reentrant(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=True)


def no_rng_state(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)


def _pure(block: Block, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # BatchNorm on the batch's statistics, no running ones: a rerun writes no state
    h = block.fc1(x)
    bn = block.bn
    z = functional.batch_norm(h, None, None, bn.weight, bn.bias, training=True, eps=bn.eps)
    return block.fc2(block.drop(torch.relu(z))), h


def stats_outside(block: Block, x: torch.Tensor) -> torch.Tensor:
    """The fix for pytorch#96136 in eager torch: the checkpoint runs a pure block (BatchNorm on
    batch statistics), and the running statistics are updated once, outside it, as
    `BatchNorm1d` would (momentum the batch's share, the unbiased variance)."""
    y, h = checkpoint(_pure, block, x, use_reentrant=False)
    with torch.no_grad():
        update_running(block.bn, h)
    return y


def stats_outside_off(block: Block, x: torch.Tensor) -> torch.Tensor:
    """`stats_outside` with no checkpoint: the same pure block and the one update."""
    y, h = _pure(block, x)
    with torch.no_grad():
        update_running(block.bn, h)
    return y


def update_running(bn: nn.BatchNorm1d, h: torch.Tensor) -> None:
    """One update of `bn`'s running statistics from the batch `h`, as `BatchNorm1d` makes it."""
    bn.running_mean.lerp_(h.mean(0), bn.momentum)
    bn.running_var.lerp_(h.var(0, correction=1), bn.momentum)
    bn.num_batches_tracked.add_(1)


def fingerprint() -> bytes:
    """torch's default CPU generator's state, as bytes."""
    return torch.get_rng_state().numpy().tobytes()


@dataclass(frozen=True)
class Variant:
    """One way a port runs the block: `spelling`, its call with the checkpoint `on` and `off`,
    and whether torch's dispatch-mode instrument watches it (`observed`: not a compiled one);
    or a whole `step(seed, x, features, rate, cotangent, checkpoint) -> StateStep` of its own
    (a block that is not torch's `Block`, Keras's)."""

    spelling: str
    on: Run = plain
    off: Run = plain
    observed: bool = True
    step: Callable[..., StateStep] | None = None
    #: Compiled by `watched_inductor`: the instrument enters inside the compiled call.
    inside: bool = False


class StatefulTorch:
    """A torch port's side of the block with variables and RNGs: `state_runs` (variant ->
    `Variant`) are its ways, `state_step` runs any of them. Property (l) is offered those
    torch's instrument watches (`state_variants`); a port whose ways are all compiled says
    why not (`not_stateful`), and tests/torch/test_torch_stateful.py measures them."""

    state_runs: ClassVar[dict[str, Variant]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        runs = cls.state_runs.items()
        cls.state_variants = {name: run.spelling for name, run in runs if run.observed}
        if runs and not cls.state_variants:
            cls.not_stateful = f"the forward's dropout mask is not observable: {COMPILED_UNSEEN}"
        super().__init_subclass__(**kwargs)

    def state_step(
        self,
        seed: Any,
        x: Any,
        features: Any,
        rate: Any,
        cotangent: Any,
        checkpoint: bool = True,
        variant: str = DEFAULT_VARIANT,
    ) -> StateStep:
        """One training step of the block (`implementations.stateful`) under `variant`."""
        if variant not in self.state_runs:
            raise ValueError(f"variant must be one of {sorted(self.state_runs)}, got {variant!r}")
        run = self.state_runs[variant]
        if run.step is not None:
            return run.step(seed, x, features, rate, cotangent, checkpoint)
        return state_step(run, seed, x, features, rate, cotangent, checkpoint)


def check_step(seed: Any, x: Any, features: Any, rate: Any, cotangent: Any) -> tuple:
    """The step's arguments checked (each error names its argument): `(seed, x, features,
    rate, cotangent)`, x and the cotangent float32 copies."""
    seed, features, rate = check_seed(seed), check_features(features), check_rate(rate)
    x = check_batch(x)
    cotangent = np.array(cotangent, dtype=np.float32, copy=True)
    if cotangent.shape != (x.shape[0], features):
        raise ValueError(
            f"cotangent must have shape {(x.shape[0], features)} (B, features), "
            f"got {cotangent.shape}"
        )
    return seed, x, features, rate, cotangent


def state_step(
    variant: Variant,
    seed: Any,
    x: Any,
    features: Any,
    rate: Any,
    cotangent: Any,
    checkpoint: bool,
) -> StateStep:
    """One training step of the block for `seed` under `variant` (`checkpoint`: on or off),
    watched by torch's instrument where `variant.observed`."""
    seed, x, features, rate, cotangent = check_step(seed, x, features, rate, cotangent)
    run = variant.on if checkpoint else variant.off
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = build_block(seed, x.shape[1], features, rate)
        x_leaf = torch.from_numpy(x).requires_grad_(True)
        leaves = [*block.leaves(), x_leaf]
        draws = Draws(block.bn.running_mean)
        before = fingerprint()
        if variant.inside:  # the compiled call enters the instrument itself
            watching = inside(draws)
        elif variant.observed:
            watching = Ops(throughout=(draws,))
        else:
            watching = contextlib.nullcontext()
        with watching:
            y = run(block, x_leaf)
        with Ops(throughout=(draws,)) if variant.observed else contextlib.nullcontext():
            # .backward, not autograd.grad: a reentrant checkpoint refuses the latter
            y.backward(torch.from_numpy(cotangent))
        after = fingerprint()
    grads = [leaf.grad.detach().numpy() for leaf in leaves]
    w1, b1, gamma, beta, w2, b2, dx = grads
    bn = block.bn
    return seen_step(
        y,
        {"w1": w1.T, "b1": b1, "gamma": gamma, "beta": beta, "w2": w2.T, "b2": b2, "x": dx},
        draws if variant.observed else None,
        rate,
        (bn.running_mean, bn.running_var),
        {"num_batches_tracked": int(bn.num_batches_tracked)},
        (before, after),
        NotObservable(UPDATES_COMPILED) if variant.inside else None,
    )


def seen_step(
    y: torch.Tensor,
    grads: dict[str, np.ndarray],
    draws: Draws | None,
    rate: float,
    running: tuple[torch.Tensor, torch.Tensor],
    counters: dict[str, int],
    rng: tuple[Any, Any],
    updates: NotObservable | None = None,
) -> StateStep:
    """The `StateStep` of a step: `grads` in canonical layouts, what `draws` saw (None: a
    compiled step, not watched), the running mean and variance, the counters, and the RNG
    state before and after."""
    shape = tuple(y.shape)
    return StateStep(
        y=y.detach().numpy(),
        grads=grads,
        mask=_unseen() if draws is None else _mask(draws, rate, shape),
        recompute_masks=_unseen() if draws is None else tuple(draws.masks["backward"]),
        running_mean=running[0].detach().numpy().copy(),
        running_var=running[1].detach().numpy().copy(),
        counters=counters,
        updates=_unseen() if draws is None else updates or draws.writes,
        rng_before=rng[0],
        rng_after=rng[1],
    )


def _unseen() -> NotObservable:
    return NotObservable(COMPILED_UNSEEN)


def _mask(draws: Draws, rate: float, shape: tuple[int, ...]) -> np.ndarray | NotObservable:
    drawn = draws.masks["forward"]
    if len(drawn) == 1:
        return drawn[0]
    if not drawn and rate == 0.0:  # a dropout at rate 0 returns its input: nothing drawn
        return np.ones(shape, bool)
    return NotObservable(f"{len(drawn)} dropout draws seen in the forward pass, one expected")


#: Eager torch's ways, as `pytorch`'s variants (spelled as `state_declarations` declares).
EAGER_VARIANTS = {
    "default": Variant(PYTORCH["default"].spelling, non_reentrant),
    "reentrant": Variant(PYTORCH["reentrant"].spelling, reentrant),
    "no_rng_state": Variant(PYTORCH["no_rng_state"].spelling, no_rng_state),
    "stats_outside": Variant(PYTORCH["stats_outside"].spelling, stats_outside, stats_outside_off),
}


# -- torch.compile: one function per graph, so that no compiled graph serves another ----------
# (dynamo caches by code object, and activation_memory_budget is not among its guards)

#: Every compiled step keeps the dropout rate a constant of its graph. By default a second rate
#: recompiles the frame with the rate a symbolic float, and AOTAutograd's cache guards only
#: SymInts (`GuardedCache._filter_backed_symints`, torch/_inductor/codecache.py): under a
#: checkpoint a third rate ran the second's graph, in the process and from the disk (torch
#: 2.13; repros/torch_compile_rate_cache.py).
STATIC = {"dynamic": False}


def _run_compiled(function: Run, block: nn.Module, x: torch.Tensor, **options: Any) -> Any:
    """`function(block, x)` through `torch.compile`, the rate a constant of its graph
    (`STATIC`), dynamo's recompiles as the ports' own (`caches.RECOMPILES`)."""
    from torch._dynamo import config as dynamo_config

    with dynamo_config.patch(**RECOMPILES):
        return torch.compile(function, **STATIC, **options)(block, x)


def _compiled_plain(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return block(x)


def _compiled_checkpoint(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False)


def _compiled_budget(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return block(x)


#: The budget under which `budget_zero` compiles: recompute all the partitioner can.
BUDGET = BUDGET_ZERO


def compiled_plain(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The block through `torch.compile` (inductor), no checkpoint, the default budget (1)."""
    return _run_compiled(_compiled_plain, block, x)


def compiled_checkpoint(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`checkpoint(block, x, use_reentrant=False)` through `torch.compile` (inductor)."""
    return _run_compiled(_compiled_checkpoint, block, x)


def budget_zero(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The block through `torch.compile` with `activation_memory_budget = BUDGET`, no
    checkpoint: the partitioner recomputes what it can in the backward pass."""
    from torch._functorch import config as functorch_config

    with functorch_config.patch(activation_memory_budget=BUDGET):
        return _run_compiled(_compiled_budget, block, x)


#: torch.compile's ways, as `torch_compile`'s variants.
COMPILED_VARIANTS = {
    "default": Variant(
        TORCH_COMPILE["default"].spelling, compiled_checkpoint, compiled_plain, observed=False
    ),
    "budget_zero": Variant(
        TORCH_COMPILE["budget_zero"].spelling, budget_zero, compiled_plain, observed=False
    ),
}


# -- torch.compile watched from inside: inductor with its random ops as aten fallbacks --------

#: The `Draws` the compiled call being watched reports to (`inside`).
_INSIDE: list[Draws] = []


@contextlib.contextmanager
def inside(draws: Draws) -> Iterator[None]:
    """`watched_inductor`'s compiled forward runs under `Ops(throughout=(draws,))` in this
    block: entered inside the compiled call, after dynamo has run its guards (a mode active
    around the call would make dynamo run the frame eagerly)."""
    _INSIDE.append(draws)
    try:
        yield
    finally:
        _INSIDE.pop()


def watched_inductor(graph: torch.fx.GraphModule, example: list) -> Callable:
    """inductor itself (`compile_fx`), its compiled forward run under `Ops` where `inside`
    asks: with `fallback_random`, its dropout is `aten.native_dropout` under torch's
    `run_and_save_rng_state` (and the backward's under `run_with_rng_state`), which `Ops` sees."""
    from torch._inductor.compile_fx import compile_fx

    compiled = compile_fx(graph, example)

    def run(*args: Any) -> Any:
        if not _INSIDE:
            return compiled(*args)
        with Ops(throughout=(_INSIDE[-1],)):
            return compiled(*args)

    return run


def _rng_rules() -> None:
    # torch's RNG higher-order ops have no rule for a dispatch mode of ours: each runs as its
    # CPU implementation does (torch/_prims/rng_prims.py), its op under the mode again.
    from torch._prims.rng_prims import run_and_save_rng_state, run_with_rng_state

    @run_and_save_rng_state.py_impl(Ops)
    def _save(mode: Ops, op: Any, *args: Any, **kwargs: Any) -> Any:
        state = torch.get_rng_state()
        with mode:
            return state, op(*args, **kwargs)

    @run_with_rng_state.py_impl(Ops)
    def _replay(mode: Ops, rng_state: torch.Tensor, op: Any, *args: Any, **kwargs: Any) -> Any:
        current = torch.get_rng_state()
        torch.set_rng_state(rng_state)
        try:
            with mode:
                return op(*args, **kwargs)
        finally:
            torch.set_rng_state(current)


_rng_rules()


def _compiled_fallback(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False)


def _compiled_fallback_plain(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return block(x)


def fallback_random(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`checkpoint(block, x, use_reentrant=False)` through inductor with
    `torch._inductor.config.fallback_random = True` (random ops as aten's, eager's stream)."""
    return _with_fallback(_compiled_fallback, block, x)


def fallback_random_off(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The same, no checkpoint."""
    return _with_fallback(_compiled_fallback_plain, block, x)


def _with_fallback(function: Run, block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    from torch._inductor import config as inductor_config

    with inductor_config.patch(fallback_random=True):
        return _run_compiled(function, block, x, backend=watched_inductor)


COMPILED_VARIANTS["fallback_random"] = Variant(
    TORCH_COMPILE["fallback_random"].spelling,
    fallback_random,
    fallback_random_off,
    inside=True,
)
