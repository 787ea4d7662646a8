"""torch's instrument for a *reentrant* checkpoint (an `autograd.Function` that reruns its block
in backward), such as DeepSpeed's, on the port's own call. Imports torch only.

A reentrant checkpoint runs its own `torch.autograd.backward` inside its
backward, so it refuses `torch.autograd.grad` ("Checkpointing is not
compatible with .grad()"): a port's pass is `output.backward(cotangent)`
(`backward` reads the gradients off `.grad`). `observe` is the eager
instrument on the port's own call (`instrument`: saved-tensor hooks and one
`TorchDispatchMode`, origins by dataflow from x, grad-enabled aten ops and
matmuls in backward), and adds what only the autograd graph shows. Such a
checkpoint takes no `context_fn`, so its regions are the nodes whose class
is the checkpoint's backward (`CheckpointFunctionBackward`) behind the roots
of the call's backward passes (`torch.autograd.backward` and `grad` watched
for the call's length). It may keep its inputs on its node as a plain
attribute, where no saved-tensor hook sees them (DeepSpeed's
`ctx.deepspeed_saved_tensors`): `kept_on_node` names that attribute, read
off each checkpoint node as its backward pass starts, as what the
checkpoint keeps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ...contract import BackwardRecord
from . import instrument
from .instrument import in_backward


def nodes_of(output: torch.Tensor, kind: str) -> list[Any]:
    """The nodes of the autograd graph behind `output` whose class name is `kind`."""
    return [node for node in instrument.graph_nodes(output) if type(node).__name__ == kind]


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


class Roots:
    """The checkpoint nodes behind the roots of a call's backward passes, and what they keep
    on themselves, read as each outermost pass starts (before it drops them)."""

    def __init__(self, node: str, kept_on_node: str):
        self.node, self.kept_on_node = node, kept_on_node
        self.nodes: list[Any] = []
        self.kept: dict[int, torch.Tensor] = {}

    def note(self, roots: Any) -> None:
        # A reentrant checkpoint's own inner pass: its rerun's graph holds a checkpoint node
        # only where the region nests another (made by the rerun: a region, never kept).
        inner = in_backward()
        for root in (roots,) if isinstance(roots, torch.Tensor) else tuple(roots):
            if isinstance(root, torch.Tensor) and root.grad_fn is not None:
                found = [n for n in nodes_of(root, self.node) if n not in self.nodes]
                self.nodes.extend(found)
                if self.kept_on_node and not inner:
                    self.kept.update(kept_on_nodes(found, self.kept_on_node))

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """`torch.autograd.backward` and `torch.autograd.grad` (behind `Tensor.backward`)
        noting their roots, for the call's length; put back whatever happens."""
        autograd = torch.autograd
        backward, grad = autograd.backward, autograd.grad

        def backward_noted(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            self.note(tensors)
            return backward(tensors, *args, **kwargs)

        def grad_noted(outputs: Any, *args: Any, **kwargs: Any) -> Any:
            self.note(outputs)
            return grad(outputs, *args, **kwargs)

        try:
            autograd.backward, autograd.grad = backward_noted, grad_noted
            yield
        finally:
            autograd.backward, autograd.grad = backward, grad


def observe(call: Callable[[], Any], x: Any, node: str, kept_on_node: str = "") -> BackwardRecord:
    """torch's instrument on `call()`, the port's own call (`instrument.observe`), for a reentrant
    checkpoint: its regions are the nodes whose class name is `node` behind the roots of the
    call's backward passes, and what those nodes keep in their attribute `kept_on_node` ("":
    none), out of the hooks' sight, counts as kept."""
    roots = Roots(node, kept_on_node)
    with roots.watching():
        return instrument.observe(
            call,
            x,
            kept=lambda: roots.kept,
            kept_note=f"kept on the checkpoint node ({kept_on_node})",
            regions=lambda: len(roots.nodes),
        )
