"""DeepSpeed's instrument: torch's (`implementations.stacks.torch.instrument`, the one dispatch-mode
counter) around the block's call, with what only a reentrant checkpoint's autograd graph shows
(`implementations.stacks.torch.reentrant`). Imports torch and numpy.

- **Saved**: torch's outer `saved_tensors_hooks`, plus what each `CheckpointFunctionBackward`
  node keeps in `ctx.deepspeed_saved_tensors` (a plain attribute, where no hook sees it), read
  off the nodes behind the backward pass's roots as it starts; the parameters are among them
  (the region's arguments), by origin `parameter`.
- **Evaluations**: torch's, by the kernels' storages: DeepSpeed reruns a region's body under
  `enable_grad` inside the backward pass (`CheckpointFunction.backward`), which torch's counter
  sees as a rerun; its inputs are detached, the same storages.
- **Regions**: those the block's checkpoint enters in the forward pass (`region`, around each
  by the block: the checkpoint takes no `context_fn`), inner ones under an outer's forward
  included; an inner region entered by its outer's rerun runs its forward with grad mode
  off, inside the backward pass: its matmuls are a rerun's too (each level reruns its
  blocks). **Reruns**: the checkpoint nodes the backward passes reach (each reruns its body
  once: an inner one's node is made by its outer's rerun).
- **Peak**: torch's, from the outermost `torch.autograd.backward` (the block's `vjp`; the
  checkpoints' own inner passes run inside its span), the gradients it returns left out for
  their whole life (`PEAK_WRT`, the block's), after a garbage collection: an earlier
  call's reference cycles freed inside the profile would read as frees the profile never saw
  allocated.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator

import torch

from implementations.stacks.torch import instrument as torch_instrument
from implementations.stacks.torch.instrument import Peak, Seen, active, in_backward
from implementations.stacks.torch.reentrant import Roots

__all__ = ["peak", "region", "watch"]

#: The checkpoint's node in the autograd graph: one per region.
CHECKPOINT_NODE = "CheckpointFunctionBackward"
#: Where that node keeps the region's inputs, out of the saved-tensor hooks' sight.
KEPT_ON_NODE = "deepspeed_saved_tensors"


@contextlib.contextmanager
def region() -> Iterator[None]:
    """A region of the block in DeepSpeed's checkpoint: counted by the watch, if any; entered
    in the backward pass (an inner region, by its outer's rerun), its body is a rerun."""
    watching = active()
    if watching is None:
        yield
        return
    watching.regions.entered()
    with watching.evaluations.rerun() if in_backward() else contextlib.nullcontext():
        yield


@contextlib.contextmanager
def watch(x: torch.Tensor, parameters: Iterable[torch.Tensor]) -> Iterator[Seen]:
    """torch's watch around the block's call in the `with` block, what the checkpoint nodes keep
    counted as saved and their number as the reruns; its `.record()` after it."""
    roots = Roots(CHECKPOINT_NODE, KEPT_ON_NODE)
    note = f"kept on the checkpoint node ({KEPT_ON_NODE})"
    with (
        roots.watching(),
        torch_instrument.watch(x, parameters, kept=lambda: roots.kept, kept_note=note) as seen,
    ):
        yield seen
    seen.watch.regions.recomputed = len(roots.nodes)


@contextlib.contextmanager
def peak() -> Iterator[Peak]:
    """torch's `peak()` around the call in the `with` block, earlier cycles collected first."""
    gc.collect()
    with torch_instrument.peak(returned_left_out=True) as found:
        yield found
