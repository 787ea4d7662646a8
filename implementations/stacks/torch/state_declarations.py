"""What the torch-based ports declare for the block with variables and RNGs (property (l)):
per port and API variant, replay, stream kept, updates, and each degradation as its count
with its upstream reference. Measured on CPU, torch 2.13 (tests/torch/test_torch_stateful.py
holds every number here to a step). Imports nothing but the contract and its declarations.
"""

from implementations.stateful import Momentum, StateDeclaration, StateDegradation
from implementations.stateful_port import redraws, updates_twice

#: torch's BatchNorm: momentum the share of the batch taken (0.01 is Flax's 0.99 kept), the
#: unbiased batch variance in `running_var`, steps counted in `num_batches_tracked`.
MOMENTUM = Momentum("new", 0.01)
SEEDING = (
    "nn.Dropout draws from torch's default CPU generator, seeded by torch.manual_seed(seed) "
    "inside torch.random.fork_rng (the caller's stream is left as it was)"
)
REPROS = "repros/"
#: pytorch#96136: an eager checkpoint reruns BatchNorm's forward, which writes the running
#: statistics again; the mask replays (the RNG state stashed and restored).
TWICE = StateDegradation(
    "updates",
    2,
    "pytorch#96136",
    "the recompute reruns BatchNorm's forward in training mode: running_mean, running_var and "
    "num_batches_tracked are updated a second time",
)
FIX = "pytorch:stats_outside"
_TWICE_REPRO = REPROS + "torch_checkpoint_batchnorm_twice.py"


#: torch's statistics: momentum, the unbiased variance and the step counter.
STATISTICS = {
    "momentum": MOMENTUM,
    "running_var": "unbiased",
    "counters": ("num_batches_tracked",),
}


def torch_state(spelling: str, **kwargs) -> StateDeclaration:
    """A torch variant's declaration: torch's seeding, momentum, variance and counter."""
    return StateDeclaration(spelling, SEEDING, **STATISTICS, **kwargs)


def eager_twice(spelling: str) -> StateDeclaration:
    """An eager checkpoint that keeps the RNG state: replayed, the stream kept, 2 updates."""
    return updates_twice(spelling, SEEDING, TWICE, fix=FIX, repro=_TWICE_REPRO, **STATISTICS)


#: `preserve_rng_state=False`: nothing stashed, so the recompute draws the next mask from the
#: stream (fresh), and the stream ends one mask further on.
NO_RNG_STATE = redraws(
    "checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)",
    SEEDING,
    "OLMo-core#828",
    replay="preserve_rng_state=False: the recompute draws a fresh mask (1 recompute, its mask "
    "not the forward's), and the gradients follow it",
    stream="the recompute's draw advances torch's generator: the state after the step is one "
    "mask further on",
    updates=TWICE,
    **STATISTICS,
    fix="pytorch:default",
    repro=REPROS + "torch_preserve_rng_state_false.py",
)

PYTORCH = {
    "default": eager_twice("checkpoint(block, x, use_reentrant=False)"),
    "reentrant": eager_twice("checkpoint(block, x, use_reentrant=True)"),
    "no_rng_state": NO_RNG_STATE,
    "stats_outside": torch_state(
        "checkpoint(pure block on batch statistics, x, use_reentrant=False), the running "
        "statistics updated once outside it"
    ),
}

#: The budget under which the partitioner recomputes dropout: 0, recompute all it can.
BUDGET_ZERO = 0.0
BUDGET_REFERENCES = "pytorch#190717, pytorch#190758"
TORCH_COMPILE = {
    "default": torch_state(
        "torch.compile(lambda block, x: checkpoint(block, x, use_reentrant=False), dynamic=False)"
    ),
    "fallback_random": torch_state(
        "torch.compile(lambda block, x: checkpoint(block, x, use_reentrant=False), dynamic=False) "
        "with torch._inductor.config.fallback_random = True"
    ),
    "budget_zero": torch_state(
        "torch.compile(block, dynamic=False) under activation_memory_budget = 0",
        replay=False,
        stream_kept=False,
        degradations=(
            StateDegradation(
                "replay",
                1,
                BUDGET_REFERENCES,
                "the min-cut partitioner at budget 0 recomputes dropout in the backward "
                "graph with a fresh draw (1 recompute, its mask not the forward's)",
            ),
            StateDegradation(
                "stream",
                1,
                BUDGET_REFERENCES,
                "the backward graph's draw advances torch's generator",
            ),
        ),
        fix="torch_compile:default",
        repro=REPROS + "torch_compile_budget_dropout.py",
    ),
}
TORCH_AC_WRAPPER = {
    "default": eager_twice(
        "apply_activation_checkpointing(Net(block), checkpoint_wrapper_fn=partial("
        "checkpoint_wrapper, checkpoint_impl=NO_REENTRANT))"
    )
}
