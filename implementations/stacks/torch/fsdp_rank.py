"""One FSDP2 rank: the MLP under `fully_shard` on a gloo process group. Imports torch and numpy.

`rank_main(address, authkey, owner)` is the entry point torch's launcher
runs in every rank (`torch.distributed.launcher.api.elastic_launch`, which
is what `torchrun` runs; `main` is another node's `torchrun -m` entry): it
reads `RANK`, `WORLD_SIZE`, `GROUP_RANK` (its node), `MASTER_ADDR` and
`MASTER_PORT` from the environment the launcher set, joins the gloo group,
connects to the controller at `address` (`implementations.stacks.torch.ranks`,
`implementations.rank_pool`), says who and where it is, and serves its
requests until told to stop or the controller is gone. A rank also ends
when its parent (the launcher's agent) is gone, so that a killed worker
leaves no rank behind.

**Layouts.** The contract's calls (one x) run with x on every rank and the
cotangent on rank 0 only (zeros elsewhere), the gradients summed over the
ranks (`set_force_sum_reduction_for_comms`, `set_gradient_divide_factor(1.0)`):
adding exact zeros, the sum is rank 0's gradient. The `"batch"` layout gives each rank its rows of a
`(B, D)` batch: FSDP2's data parallelism.

**Per-rank evidence** (`record`): saved-tensor hooks note every tensor saved
in the forward pass, and after it (when FSDP2 has freed the gathered
weights) each is x's shard (its storage is x's), a parameter (a parameter's
storage, or a storage FSDP2 freed: a gathered weight), or an activation; the
stack's counter (`instrument.Ops`) counts the forward ops (addmm, relu) and the matmuls the
backward pass runs.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import time
import warnings
from multiprocessing.connection import Client
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from ...contract import BackwardRecord, Params, SavedTensor
from ...rank_pool import OWNER_VARIABLE, watch_parent
from ...sharding import RankRecord
from .instrument import Ops, Roles
from .mlp import STATE_NAMES, build_mlp

#: Set in a rank's environment by a test: the rank that crashes (SIGKILLs itself) on its
#: first request, to show that a dead rank is reported by number and leaves no orphan.
CRASH_VARIABLE = "REMAT_FSDP_CRASH_RANK"
MATMULS = ("aten.addmm", "aten.mm")
RERUN = ("aten.addmm", "aten.relu")
INSTRUMENT = (
    "saved_tensors_hooks on each FSDP2 rank (a storage FSDP2 freed after forward is a "
    "gathered weight); TorchDispatchMode in backward"
)


class Rank:
    """This process's rank: the group, the mesh, and the requests it answers."""

    def __init__(self):
        self.rank, self.world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        # torch's node rank: the rendezvous orders the nodes (by host name, then pid)
        self.node = f"node {os.environ.get('GROUP_RANK', '0')}"
        self.host = socket.gethostname()
        self.mesh = init_device_mesh("cpu", (self.world,))

    def sharded(self, params: Params, checkpoint: bool):
        """The MLP with Flax's layout converted, FSDP2 on each Linear and on the root."""
        model = build_mlp(params, checkpoint=checkpoint)
        for layer in (model.fc1, model.fc2):
            fully_shard(layer, mesh=self.mesh)
        fully_shard(model, mesh=self.mesh)
        for module in (model.fc1, model.fc2, model):  # each holds its own parameter groups
            # Sum the ranks' gradients, not average them: gloo has no PREMUL_SUM, so the
            # sum is forced, and a factor of 1 divides by nothing (zeros added are exact).
            module.set_force_sum_reduction_for_comms(True)
            module.set_gradient_divide_factor(1.0)
        return model

    def rows(self, x: np.ndarray, layout: str) -> torch.Tensor:
        """x's part on this rank: its rows of a batch, or all of a replicated x."""
        if layout == "batch":
            x = np.array_split(x, self.world)[self.rank]
        return torch.from_numpy(np.array(x, np.float32, order="C")).requires_grad_(True)

    def forward(self, params: Params, x: np.ndarray, checkpoint: bool) -> np.ndarray:
        model = self.sharded(params, checkpoint)
        return model(self.rows(x, "replicated")).detach().numpy()

    def vjp(self, params: Params, x: np.ndarray, cotangent: np.ndarray, checkpoint: bool):
        model = self.sharded(params, checkpoint)
        x = self.rows(x, "replicated")
        out = model(x)
        mine = cotangent if self.rank == 0 else np.zeros_like(cotangent)
        out.backward(torch.from_numpy(np.array(mine, np.float32)))
        grads = {n: model.get_parameter(n).grad.full_tensor().numpy() for n in STATE_NAMES}
        return grads, x.grad.numpy()

    def record(self, params: Params, x: np.ndarray, layout: str, checkpoint: bool):
        """This rank's `RankRecord` and `BackwardRecord` for the VJP on its part of x."""
        model = self.sharded(params, checkpoint)
        x = self.rows(x, layout)
        found: dict[int, torch.Tensor] = {}
        # FSDP2 frees the gathered weights during forward, and a later activation may be
        # allocated where one was: a role is read while its saved tensor is alive (in the
        # pack hook), and what writes into its arguments (all-gathers, copies) names nothing.
        roles = Roles(functional_only=True)
        role_of: dict[int, str] = {}

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            # Keyed by the storage object, not its address: FSDP2 frees fc1's gathered weight
            # during the forward pass, and the relu's output may be allocated where it was.
            if _storage(tensor) not in found:
                found[_storage(tensor)] = tensor
                role_of[_storage(tensor)] = roles.role(tensor.untyped_storage().data_ptr())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), Ops(roles):
            out = model(x)
        saved = self.classify(found, x, model, role_of)  # after forward: weights are freed
        cotangent = torch.ones_like(out)
        with Ops() as ops:
            out.backward(cotangent)
        rerun = {op.removeprefix("aten."): n for op, n in ops.by_op(ops=RERUN).items()}
        matmuls = ops.count(MATMULS)
        kept = sum(t.nbytes for t in saved if t.origin in SavedTensor.KEPT)
        inputs = sum(t.nbytes for t in saved if t.origin == "input")
        rank_layout = layout if layout == "batch" else "feature"
        rank_record = RankRecord(
            self.rank, rank_layout, kept, inputs, x.nbytes, rerun, matmuls, INSTRUMENT,
            self.node, self.host, os.getpid(),
        )  # fmt: skip
        regions = None  # the dispatch counts show recomputation; regions are not counted here
        return rank_record, BackwardRecord(
            INSTRUMENT, saved, rerun, regions, backward_matmuls=matmuls
        )

    def step(self, params: Params, x: np.ndarray, layout: str, checkpoint: bool, repeats: int):
        """Seconds of each of `repeats` training steps (forward, backward, the gradients'
        reduce-scatter) on this rank's part of x, after one step that warms up; each step
        starts at a barrier, so that the ranks' times are of the same step."""
        model = self.sharded(params, checkpoint)
        x = self.rows(x, layout)
        times = []
        for _ in range(repeats + 1):
            dist.barrier()
            started = time.perf_counter()
            out = model(x)
            out.backward(torch.ones_like(out))
            times.append(time.perf_counter() - started)
            model.zero_grad(set_to_none=True)
        return times[1:]

    @staticmethod
    def classify(
        found: dict[int, torch.Tensor], x: torch.Tensor, model, role_of: dict[int, str]
    ) -> tuple:
        own = {_storage(p.to_local()) for p in model.parameters()}
        saved = []
        for ptr, tensor in found.items():
            shape, dtype = tuple(tensor.shape), str(tensor.dtype).removeprefix("torch.")
            live = tensor.untyped_storage().nbytes()
            if ptr == _storage(x):
                saved.append(SavedTensor(shape, dtype, "input", "x's rows on this rank", "x"))
            elif ptr in own or live == 0:
                note = "a parameter shard" if ptr in own else "a gathered weight, freed by FSDP2"
                saved.append(SavedTensor(shape, dtype, "parameter", note))
            else:
                grad_fn = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "leaf"
                note, role = f"output of {grad_fn}", role_of.get(ptr, "")
                saved.append(SavedTensor(shape, dtype, "activation", note, role))
        return tuple(saved)

    def answer(self, request: tuple) -> Any:
        kind, *args = request
        if os.environ.get(CRASH_VARIABLE) == str(self.rank):
            os.kill(os.getpid(), 9)
        if kind == "sleep":  # a hung rank, for the tests
            time.sleep(args[0])
            return None
        return getattr(self, kind)(*args)


def _storage(tensor: torch.Tensor) -> int:
    """The identity of a tensor's storage (its C++ object), alive while the tensor is."""
    return tensor.untyped_storage()._cdata


def rank_main(address: tuple[str, int], authkey: bytes, owner: str = "") -> None:
    """A rank's life: join the group, connect to the controller, answer until stopped.
    `owner` is the token of the controller whose launcher started this rank (a `torchrun`
    that a controller started passes it in `REMAT_RANK_OWNER`; a user's passes none)."""
    watch_parent()
    # A Linear on a (D,) x returns a view (addmm on x[None], squeezed); FSDP2 warns about
    # in-place ops on it, which the MLP never does.
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
    # The node's cores shared among its ranks, as torchrun's OMP_NUM_THREADS=1 default does
    # in spirit: N ranks with every core's threads each would fight over them.
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))
    dist.init_process_group("gloo")
    rank = Rank()
    connection = Client(tuple(address), authkey=authkey)
    info = {
        "pid": os.getpid(), "parent": os.getppid(), "host": rank.host, "node": rank.node,
        "owner": owner or os.environ.get(OWNER_VARIABLE, ""),
    }  # fmt: skip
    connection.send(("ready", rank.rank, info))
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):  # the controller is gone
            break
        if request[0] == "stop":
            break
        try:
            answer = ("returned", rank.answer(request))
        except Exception as error:
            answer = ("raised", f"{type(error).__name__}: {error}")
        connection.send(answer)
    # Not `destroy_process_group`: it waits for every rank, and a rank whose peer died
    # would wait there until gloo's timeout. Returning is what tells `elastic_launch`'s
    # function entrypoint (the controller's node) that this rank is done: its wrapper reads
    # the return value, and a rank that left by `os._exit` before it would be "running" to
    # the agent forever (its thread spinning, another node's agent at the exit barrier for
    # 300 s). `main` (a `torchrun` node, where exit code 0 is done) exits at once.
    sys.stdout.flush()
    sys.stderr.flush()
    # Once the launcher's wrapper has the return value, the interpreter's teardown (a live
    # gloo group, torch's modules: seconds) is skipped: the first exit handler ends it.
    atexit.register(os._exit, 0)


def main(argv: list[str] | None = None) -> None:
    """`torchrun ... -m implementations.stacks.torch.fsdp_rank --controller HOST:PORT`: the
    ranks of another node, for a controller on several nodes (`REMAT_FSDP_NNODES` or
    `REMAT_SCALE_NODES`; its key in `REMAT_FSDP_AUTHKEY`, hex). The same `rank_main` the
    controller's own launcher runs."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m implementations.stacks.torch.fsdp_rank")
    parser.add_argument("--controller", required=True, metavar="HOST:PORT")
    args = parser.parse_args(argv)
    host, _, port = args.controller.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--controller must be HOST:PORT, got {args.controller!r}")
    key = os.environ.get("REMAT_FSDP_AUTHKEY", "")
    try:
        authkey = bytes.fromhex(key)
    except ValueError:
        parser.error("REMAT_FSDP_AUTHKEY must be the controller's key, in hexadecimal")
    rank_main((host, int(port)), authkey)
    os._exit(0)


if __name__ == "__main__":
    main()
