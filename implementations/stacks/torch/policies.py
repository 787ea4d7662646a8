"""Remat policies in torch: selective checkpointing's policy functions, the tag op, the cache.

Imports torch only.

torch spells a policy as a function `policy_fn(ctx, func, *args, **kwargs) ->
CheckpointPolicy`, called for every aten operator inside the checkpointed
region, and hands it to `torch.utils.checkpoint.checkpoint` as
`context_fn=functools.partial(create_selective_checkpoint_contexts, policy_fn)`.
Under `torch.compile` it must be that spelling: a `functools.partial` or a
plain function (dynamo raises `NotImplementedError` for a callable object).

- `save_dots`: the outputs of the matmuls (`aten.addmm`, `aten.mm`, ...)
  `MUST_SAVE`, the rest `PREFER_RECOMPUTE`. `nn.Linear` runs one fused
  `addmm`, so the first layer's saved output is h, never d1.
- `save_named`: torch has no names. A custom identity operator,
  `remat_conformance::tag` (`tag`), marks h, and the policy saves its output.
- `offload_dots`: `MUST_CPU_OFFLOAD` for the matmuls. torch 2.13 does not
  offload: eager selective checkpointing treats it as recompute, and
  AOTAutograd's partitioner as a plain save (see the pinned degradations).
- `stateful_first_matmul()`: "save the first addmm", counted by the policy
  itself. Eager torch calls the policy once per operator and honours it;
  under `torch.compile` the policy is called twice per operator (once to
  trace, once to tag), the second call sees state the first changed, and
  the saving is silently lost.

**The instrument.** Selective checkpointing keeps what it saves in its own
cache, which no `saved_tensors_hooks` sees. `SelectiveCache` is the
`context_fn` that makes the two dispatch modes and keeps a handle on the
cache they share, so that a record can read what the forward pass really
cached (not what the policy said).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

aten = torch.ops.aten
#: The aten matmul operators (a `Linear` on a vector or a batch is one `addmm`).
MATMULS = frozenset(
    {
        aten.mm.default,
        aten.addmm.default,
        aten.mv.default,
        aten.addmv.default,
        aten.bmm.default,
        aten.baddbmm.default,
    }
)
#: The same as packet names, for graphs and counters (`aten.addmm`).
MATMUL_NAMES = frozenset(str(op.overloadpacket) for op in MATMULS)

#: How torch spells `save_dots` (what follows it is each port's own).
SAVE_DOTS = (
    "context_fn=functools.partial(create_selective_checkpoint_contexts, policy_fn): "
    "aten.addmm/mm -> CheckpointPolicy.MUST_SAVE"
)
#: Why eager torch cannot express `save_named`, `offload_dots` (what follows it is each port's
#: own) and `budget`: the reasons its eager ports share.
EAGER_NO_NAMES = (
    "torch has no tensor names; a custom tag op can be cached, but the eager recompute still "
    "reruns the addmm that makes h"
)
EAGER_NO_OFFLOAD = "eager selective checkpointing treats MUST_CPU_OFFLOAD as recompute (torch 2.13)"
EAGER_NO_BUDGET = "activation_memory_budget is a torch.compile option; eager torch has none"


@torch.library.custom_op("remat_conformance::tag", mutates_args=())
def tag(tensor: torch.Tensor) -> torch.Tensor:
    """h, tagged for `save_named`: an identity operator a policy can name.

    A copy, because a custom operator may not return an alias of its input.
    """
    return tensor.clone()


@tag.register_fake
def _tag_fake(tensor: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(tensor)


tag.register_autograd(lambda ctx, grad: grad)

TAG = torch.ops.remat_conformance.tag.default


def save_dots(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    """Save the matmul outputs, recompute the rest."""
    return CheckpointPolicy.MUST_SAVE if func in MATMULS else CheckpointPolicy.PREFER_RECOMPUTE


def save_named(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    """Save the output of the `tag` operator (h), recompute the rest."""
    return CheckpointPolicy.MUST_SAVE if func is TAG else CheckpointPolicy.PREFER_RECOMPUTE


def offload_dots(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    """Offload the matmul outputs to CPU memory, recompute the rest (torch 2.13 does not)."""
    if func in MATMULS:
        return CheckpointPolicy.MUST_CPU_OFFLOAD
    return CheckpointPolicy.PREFER_RECOMPUTE


def stateful_first_matmul() -> Callable[..., CheckpointPolicy]:
    """A policy with state: save the first matmul's output (h) the policy sees, recompute the rest.

    A plain function (a closure), so that dynamo accepts it; the state is a
    counter that the policy itself advances.
    """
    seen = [0]

    def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
        if func in MATMULS:
            seen[0] += 1
            if seen[0] == 1:
                return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


#: The policy function of each selective-checkpoint policy, by policy name.
POLICY_FUNCTIONS: dict[str, Callable[..., CheckpointPolicy]] = {
    "save_dots": save_dots,
    "save_named": save_named,
    "offload_dots": offload_dots,
}


@functools.cache
def context_fn(policy_fn: Callable[..., CheckpointPolicy]) -> Callable[[], tuple[Any, Any]]:
    """torch's own spelling of a selective checkpoint's `context_fn` (dynamo accepts it).

    One object per policy function: dynamo guards on it, and a new one per
    call would compile the model again at every call.
    """
    return functools.partial(create_selective_checkpoint_contexts, policy_fn)


class SelectiveCache:
    """A `context_fn` for selective checkpointing that keeps a handle on its cache.

    **Arguments:** `policy_fn`, the policy.

    Each region the checkpoint enters makes a fresh pair of modes
    (`create_selective_checkpoint_contexts`); the caching mode's `storage`
    maps each operator to its outputs by call index, holding either the
    cached (detached) output or a marker that says "recompute". After the
    backward pass every entry is marked consumed: read `cached()` between
    the forward and the backward pass.
    """

    def __init__(self, policy_fn: Callable[..., CheckpointPolicy]):
        self.policy_fn = policy_fn
        self.storages: list[dict[Any, dict[int, Any]]] = []
        self.kept: dict[int, torch.Tensor] = {}

    def context_fn(self) -> tuple[Any, Any]:
        caching, cached = create_selective_checkpoint_contexts(self.policy_fn)
        storage = getattr(caching, "storage", None)
        if storage is None:  # torch's private layout moved: say so, never read nothing
            raise RuntimeError(
                "torch's selective-checkpoint mode has no `storage`: the instrument "
                f"needs updating for torch {torch.__version__}"
            )
        self.storages.append(storage)
        return self._kept_at_exit(caching, storage), cached

    @contextlib.contextmanager
    def _kept_at_exit(self, caching: Any, storage: Any) -> Iterator[None]:
        # The backward pass marks each entry consumed as it reads it: what the forward pass
        # cached is noted when the region's forward ends, for a record read after the backward.
        with caching:
            yield
        self.kept.update(self._read([storage]))

    def cached(self) -> dict[int, torch.Tensor]:
        """Every tensor the caches held at the end of their region's forward pass, by storage
        (the operator's output, detached)."""
        return {**self.kept, **self._read(self.storages)}

    @staticmethod
    def _read(storages: list[Any]) -> dict[int, torch.Tensor]:
        found: dict[int, torch.Tensor] = {}
        for storage in storages:
            for entries in storage.values():
                for entry in entries.values():
                    value = getattr(entry, "val", None)  # a _VersionWrapper: saved
                    for leaf in torch.utils._pytree.tree_leaves(value):
                        if isinstance(leaf, torch.Tensor):
                            found.setdefault(leaf.untyped_storage().data_ptr(), leaf)
        return found


def combine(*context_fns: Callable[[], tuple[Any, Any]] | None) -> Callable[[], tuple[Any, Any]]:
    """One eager `context_fn` that enters each given one's forward and recompute contexts.

    Eager torch only: dynamo accepts nothing but torch's own spelling
    (`context_fn`, above).
    """
    given = [fn for fn in context_fns if fn is not None]

    def combined() -> tuple[Any, Any]:
        pairs = [fn() for fn in given]
        return _enter_all([p[0] for p in pairs]), _enter_all([p[1] for p in pairs])

    return combined


@contextlib.contextmanager
def _enter_all(contexts: Sequence[Any]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
        yield
