"""The FSDP2 port: the torch MLP under `fully_shard` over N gloo CPU ranks, checkpointed.

N is `REMAT_FSDP_RANKS` (default 2) on every node, read when the port is
made; one node unless `REMAT_SCALE_NODES` (nodes on this machine, each a
`torchrun`) or `REMAT_FSDP_NNODES` (a cluster's) says more, and the world
is nodes x N (docs/SCALE.md). The ranks are processes started by torch's
own launcher (`torch.distributed.launcher.api.elastic_launch`, as
`torchrun` starts them) the first time the port is asked something, and
kept for the process's life (`implementations.stacks.torch.ranks.RankPool`,
one per process and world, shared by the port and its mutants); each holds
1/world of every parameter (`fully_shard` on each Linear and on the root)
and runs the block under `torch.utils.checkpoint(..., use_reentrant=False)`.
Results are gathered on rank 0 (`DTensor.full_tensor()`). The rank's side
is `implementations.stacks.torch.fsdp_rank`.

`nn_checkpoint_forward` checks its arguments here, then runs on the ranks:
its result is a tensor with no graph back to x (the graph lives in the
ranks); `exercise_record` reads the ranks' instruments instead.
"""

from __future__ import annotations

import atexit
from typing import Any

import numpy as np
import torch

from implementations.contract import (
    BackwardRecord,
    Grads,
    Params,
    check_exercise,
)
from implementations.policies import none_and_full
from implementations.sharding import RankRecord, rank_count
from implementations.stacks.numpy import canonical_params, out_in
from implementations.stacks.torch import TorchPort
from implementations.stacks.torch.arrays import as_input, to_host_array
from implementations.stacks.torch.policies import EAGER_NO_OFFLOAD
from implementations.stacks.torch.ranks import RankPool, node_count

RANKS_VARIABLE = "REMAT_FSDP_RANKS"

#: The live ranks, one pool per world size in a process, shared by the port and its mutants
#: (a request says whether to checkpoint; the ranks do not care which port asks): one
#: start-up per worker, not one per port object, and on several nodes one controller address
#: and one set of remote ranks, which a second pool could not have.
_POOLS: dict[int, RankPool] = {}


class TorchFsdp(TorchPort):
    """FSDP2 (`fully_shard`) over gloo ranks, `torch.utils.checkpoint` around the MLP."""

    name = "torch_fsdp"
    checkpoint_api = "torch.utils.checkpoint under FSDP2 fully_shard"
    layouts = ("batch",)  # FSDP2 splits the batch; a (D,) x goes to every rank
    not_stateful = (
        "not built: BatchNorm's statistics under FSDP2 are each rank's own batch shard's "
        "(SyncBatchNorm to share them), and the ranks' dropout streams are the ranks' own; the "
        "checkpoint is eager torch's, which pytorch's variants show"
    )
    # (j) holds the ranks' instrument to its own expectations (this folder's expectations.py).
    instrument_family = "torch_fsdp"
    policies, inexpressible = none_and_full(
        "fully_shard, no checkpoint",
        "torch.utils.checkpoint(use_reentrant=False) inside fully_shard",
        save_dots="not wired: the ranks' instrument reads saved_tensors_hooks, which "
        "selective checkpointing's cache bypasses (the torch port expresses it)",
        save_named="torch has no tensor names; the eager recompute reruns the addmm that "
        "makes h anyway (see the torch port)",
        offload_dots=f"{EAGER_NO_OFFLOAD}: nothing is offloaded",
        budget="activation_memory_budget is a torch.compile option; eager FSDP2 has none",
    )
    #: The values come from the ranks, and so does the evidence: a value method overridden
    #: here, in the controller, computes where no rank's instrument sees it, so a subclass
    #: that overrides one (and not its record) is refused when it is made, naming these.
    model_methods = (
        "checkpointed (whether the ranks checkpoint; the ranks' model is fsdp_rank.Rank.sharded)"
    )

    def __init__(self):
        # The ranks every node starts, and the world: all nodes' (what (e) counts records of).
        self.ranks_per_node = rank_count(RANKS_VARIABLE, 2)
        self.nodes = node_count()
        self.ranks = self.ranks_per_node * self.nodes

    def pool(self) -> RankPool:
        """The live ranks, started on first use (and again after a failure)."""
        pool = _POOLS.get(self.ranks)
        if pool is None or not pool.alive:
            if pool is not None:
                pool.close()
            pool = _POOLS[self.ranks] = RankPool(self.ranks_per_node)
            atexit.register(pool.close)
        return pool

    def close(self) -> None:
        """Stop the ranks (they stop with this process anyway)."""
        pool = _POOLS.pop(self.ranks, None)
        if pool is not None:
            pool.close()

    def checkpointed(self, checkpoint: Any) -> bool:
        """Whether the ranks run the block under the checkpoint (a mutant says no): `full`
        (or True); `ValueError` for a policy it does not declare."""
        return self.policy(checkpoint).name == "full"

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        x = np.asarray(x, np.float32)
        return self.pool().ask(("forward", params, x, self.checkpointed(checkpoint)))[0]

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        request = ("vjp", params, np.asarray(x, np.float32), np.asarray(cotangent, np.float32))
        grads, dx = self.pool().ask((*request, self.checkpointed(checkpoint)))[0]
        return out_in.to_grads([grads[n] for n in out_in.NAMES], dx, np.asarray)

    def rank_records(
        self, params: Params, x: np.ndarray, layout: str, *, checkpoint: bool = True
    ) -> tuple[RankRecord, ...]:
        """Each rank's evidence for the VJP of its rows of the batch `x` `(B, D)`."""
        if layout not in self.layouts:
            raise ValueError(f"layout must be one of {self.layouts}, got {layout!r}")
        request = ("record", params, np.asarray(x, np.float32), layout)
        answers = self.pool().ask((*request, self.checkpointed(checkpoint)))
        return tuple(rank for rank, _ in answers)

    def step_times(
        self, params: Params, x: np.ndarray, layout: str, *, checkpoint: bool, repeats: int
    ) -> list[float]:
        """Seconds per training step on the batch `x`: the slowest rank's, step by step."""
        request = ("step", params, np.asarray(x, np.float32), layout, checkpoint, repeats)
        per_rank = self.pool().ask(request)
        return [max(times) for times in zip(*per_rank, strict=True)]

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        """Rank 0's instruments on the contract's VJP (x on every rank)."""
        request = ("record", params, np.asarray(x, np.float32), "replicated")
        return self.pool().ask((*request, self.checkpointed(checkpoint)))[0][1]

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        seed, x, features = check_exercise(seed, x, features, as_input)
        x = to_host_array(x)
        return self.backward_record(canonical_params(seed, x.shape[0], features), x)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> torch.Tensor:
        """The exercise on the ranks: Flax's canonical MLP for `PRNGKey(seed)`, FSDP2-sharded,
        through the checkpoint. Arguments as the `pytorch` port's; the `(F,)` float32 result
        is on x's device (the CPU for non-tensors), with no graph back to x."""
        seed, x, features = check_exercise(seed, x, features, as_input)
        params = canonical_params(seed, x.shape[0], features)
        out = self.forward(params, to_host_array(x), checkpoint=True)
        return torch.from_numpy(np.array(out, np.float32)).to(x.device)


nn_checkpoint_forward = TorchFsdp.exported()
