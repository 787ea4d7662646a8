"""Mutants of the eager PyTorch port: the porter's own model, never checkpointed (e); and
regions composed wrongly (k)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch.utils.checkpoint import set_checkpoint_early_stop

from implementations.composition import composed
from implementations.contract import Params
from implementations.stacks.torch.instrument import in_backward
from implementations.stacks.torch.mlp import MLP
from implementations.stacks.torch.plain_model import PlainModel
from implementations.stacks.torch.pytorch import PyTorch


class OwnModelWithoutCheckpoint(PlainModel, PyTorch):
    """`forward`, `vjp` and `nn_checkpoint_forward` overridden by a plain MLP of the port's own
    (`PlainModel`), while the base's model (`model()`, `run()`) still checkpoints: the values
    are right, and only evidence read off the port's own call can tell."""


# -- composition (k): each killed by (k) alone --------------------------------------------


class _Reruns(MLP):
    """The nested region with torch's early stop off: the outer recompute reruns the block in
    full and the inner one again (three forward runs of the first layer, two of the second)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.nesting == "once":
            return super().forward(x)
        with set_checkpoint_early_stop(False):
            return super().forward(x)


class _Dropped(MLP):
    """Wrapping again toggles the checkpoint off: the nested region runs plain, keeping all."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) if self.nesting != "once" else super().forward(x)


class _OtherParameters(MLP):
    """Under nesting, the rerun of the block draws other parameters (a fresh draw in
    recompute): the forward values hold, the gradients do not."""

    def block(self, x: torch.Tensor) -> torch.Tensor:
        if self.nesting != "once" and in_backward():
            with torch.no_grad():
                self.fc1.weight.mul_(1.001)
        return super().block(x)


class _Composed(PyTorch, abstract=True):
    """The eager port with its MLP's composition replaced by `mlp`."""

    mlp: type = MLP

    def model(self, params: Params, checkpoint: Any, context_fn=None) -> MLP:
        model = super().model(params, checkpoint, context_fn)
        model.__class__ = self.mlp  # the same module, its nesting as the mutant runs it
        return model


class RerunsWhileDeclaringNone(_Composed):
    """Declares torch's early stop (twice costs nothing) but runs the forward three times."""

    mlp = _Reruns


class SecondWrapDropsTheRegion(_Composed):
    """The second wrap drops the inner region: everything is saved."""

    mlp = _Dropped


class NestedRecomputeDrawsOtherParameters(_Composed):
    """The recompute under nesting draws other parameters: the values differ."""

    mlp = _OtherParameters


class DeclaresFewerForwardRuns(PyTorch):
    """A declaration of its own that breaks a rule: twice reruns less than once."""

    instrument_family = "torch"
    composition_expectations: ClassVar[dict[str, Any]] = {
        "once": composed("x", 2, 1, why="as torch's"),
        "twice": composed("x", 2, 0, why="claims the outer region removes the inner rerun"),
        "under_trainer": composed("x", 2, 1, why="as torch's"),
    }
