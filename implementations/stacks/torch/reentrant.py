"""torch's instrument for a *reentrant* checkpoint (an `autograd.Function` that reruns its block
in backward), such as DeepSpeed's. Imports torch only.

A reentrant checkpoint runs its own `torch.autograd.backward` inside its
backward, so it refuses `torch.autograd.grad` ("Checkpointing is not
compatible with .grad()"): the pass here is `output.backward(cotangent)`,
and the gradients are read off `.grad`. The rest is the eager instrument
(`evidence`): an outer `saved_tensors_hooks` around the forward pass (what
autograd keeps), a `TorchDispatchMode` over the backward pass (what reruns
with grad mode on). Such a checkpoint takes no `context_fn`, so its regions
are counted in the autograd graph itself: the nodes whose class is the
checkpoint's backward (`CheckpointFunctionBackward`).

**Roles** are named as the eager instrument names them (`evidence.Roles`, a
`TorchDispatchMode` over the forward pass); **backward matmuls** are every
aten matmul of the backward pass, the rerun block's included. A reentrant
checkpoint may keep its inputs on its node as a plain attribute, where no
saved-tensor hook sees them (DeepSpeed's `ctx.deepspeed_saved_tensors`):
`kept_on_node` names that attribute, and the record reads it off each
checkpoint node of the autograd graph, as what the checkpoint keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ...contract import BackwardRecord
from .evidence import GradModeOps, Roles, SavedTensors, classify

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated) and the tensors kept on the checkpoint "
    "nodes; roles by a TorchDispatchMode over the forward; grad-enabled aten ops and all "
    "matmuls in backward (TorchDispatchMode); checkpoint nodes in the autograd graph"
)


def nodes_of(output: torch.Tensor, kind: str) -> list[Any]:
    """The nodes of the autograd graph behind `output` whose class name is `kind`."""
    seen, stack, found = set(), [output.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ == kind:
            found.append(node)
        stack.extend(child for child, _ in node.next_functions)
    return found


def graph_nodes(output: torch.Tensor, kind: str) -> int:
    """How many nodes of the autograd graph behind `output` have the class name `kind`."""
    return len(nodes_of(output, kind))


def kept_on_nodes(nodes: list[Any], attribute: str) -> dict[int, torch.Tensor]:
    """The tensors that checkpoint `nodes` keep in their attribute `attribute`, by storage."""
    kept: dict[int, torch.Tensor] = {}
    for node in nodes:
        for tensor in getattr(node, attribute, None) or ():
            if isinstance(tensor, torch.Tensor):
                kept.setdefault(tensor.untyped_storage().data_ptr(), tensor)
    return kept


def backward(
    out: torch.Tensor, x: torch.Tensor, parameters: list[torch.Tensor], cotangent: torch.Tensor
) -> list[torch.Tensor | None]:
    """`out.backward(cotangent)`; returns the gradients of x and each parameter (None where
    it needs none), leaving their `.grad` as it found them."""
    leaves = [x, *parameters]
    before = [leaf.grad for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    out.backward(cotangent)
    grads = [leaf.grad for leaf in leaves]
    for leaf, grad in zip(leaves, before, strict=True):
        leaf.grad = grad
    return grads


def record(
    run_forward: Callable[[], tuple[torch.Tensor, torch.nn.Module]],
    x: torch.Tensor,
    node: str,
    kept_on_node: str = "",
) -> BackwardRecord:
    """Run `run_forward() -> (output, model)` under the hooks, then `output.backward(ones)`.

    `x` is the leaf input (it requires grad); `node` is the class name of the
    checkpoint's node in the autograd graph; `kept_on_node`, the attribute where that node
    keeps its inputs out of the hooks' sight ("": none).
    """
    saved, roles = SavedTensors(), Roles()
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack), roles:
        out, model = run_forward()
    parameters = list(model.parameters())
    checkpoints = nodes_of(out, node)
    # Read before the backward pass, which drops them.
    kept = kept_on_nodes(checkpoints, kept_on_node) if kept_on_node else {}
    cotangent = torch.ones_like(out)  # made outside the mode, so it is not counted
    with GradModeOps() as ops:
        backward(out, x, [p for p in parameters if p.requires_grad], cotangent)

    def where(ptr: int) -> str:
        return f"kept on the checkpoint node ({kept_on_node})" if ptr in kept else ""

    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify({**kept, **saved.by_storage}, x, parameters, where, roles.role),
        recomputed=dict(ops.counts),
        checkpoint_regions=len(checkpoints),
        backward_matmuls=ops.matmuls,
    )
