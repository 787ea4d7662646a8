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
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...contract import BackwardRecord
from .evidence import GradModeOps, SavedTensors, classify

INSTRUMENT = (
    "outer saved_tensors_hooks (storages, deduplicated); grad-enabled aten ops "
    "in backward (TorchDispatchMode); checkpoint nodes in the autograd graph"
)


def graph_nodes(output: torch.Tensor, kind: str) -> int:
    """How many nodes of the autograd graph behind `output` have the class name `kind`."""
    seen, stack, count = set(), [output.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        count += type(node).__name__ == kind
        stack.extend(child for child, _ in node.next_functions)
    return count


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
) -> BackwardRecord:
    """Run `run_forward() -> (output, model)` under the hooks, then `output.backward(ones)`.

    `x` is the leaf input (it requires grad); `node` is the class name of the
    checkpoint's node in the autograd graph.
    """
    saved = SavedTensors()
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
        out, model = run_forward()
    parameters = list(model.parameters())
    regions = graph_nodes(out, node)
    cotangent = torch.ones_like(out)  # made outside the mode, so it is not counted
    with GradModeOps() as ops:
        backward(out, x, [p for p in parameters if p.requires_grad], cotangent)
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=classify(saved.by_storage, x, parameters),
        recomputed=dict(ops.counts),
        checkpoint_regions=regions,
    )
