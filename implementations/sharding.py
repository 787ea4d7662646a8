"""What the sharded ports (`torch_fsdp`, `jax_spmd`) share. Imports numpy only.

- `rank_count(variable, default)`: the number of ranks (processes or devices)
  a sharded port runs on, read from its environment variable, checked.
- `scale_nodes()`: the scale profile's multi-process setting, `REMAT_SCALE_NODES`
  (default 1): with 2, `torch_fsdp` runs on two torchrun nodes and `jax_spmd` on
  two `jax.distributed` processes, all on this machine (docs/SCALE.md).
- `RankRecord`: what one rank's backward pass kept and reran, as that rank's
  own instrument reports it (the per-rank evidence that property (e) checks
  on a sharded port, see `conformance.checking.properties.e_evidence`).
- `LAYOUTS`: the two ways the MLP is sharded. `"batch"`: x is a batch
  `(B, D)` split by rows over the ranks, parameters sharded (FSDP) or
  replicated (SPMD); `"feature"`: x replicated, the hidden layer split
  (Dense_0's kernel by columns, Dense_1's by rows).
"""

from __future__ import annotations

from dataclasses import dataclass

from .environment import checked_setting

LAYOUTS = ("batch", "feature")
#: The most ranks a sharded port starts on one machine (each is a process or a device).
MAX_RANKS = 64
#: The scale profile's setting: how many nodes (torch) or processes (JAX) the sharded ports
#: run on, started on this machine by the port itself (docs/SCALE.md).
NODES_VARIABLE = "REMAT_SCALE_NODES"


def rank_count(variable: str, default: int) -> int:
    """The rank count set by the environment variable `variable` (else `default`), checked:
    a positive integer up to `MAX_RANKS`, or a `ValueError` naming the variable."""
    value = checked_setting(
        variable, int, lambda count: 1 <= count <= MAX_RANKS, f"an integer from 1 to {MAX_RANKS}"
    )
    return default if value is None else value


def scale_nodes() -> int:
    """`REMAT_SCALE_NODES`, checked (default 1): the nodes or processes the sharded ports
    start on this machine, each a launcher of its own (a `torchrun`, a JAX process)."""
    return rank_count(NODES_VARIABLE, 1)


@dataclass(frozen=True)
class RankRecord:
    """One rank's backward pass, read off its own instrument.

    **Arguments:**

    - `rank`: the rank (process rank, or device index in the mesh).
    - `layout`: one of `LAYOUTS`.
    - `kept_bytes`: bytes this rank holds for backward that come from x
      (x itself or activations computed from it), parameters excluded.
    - `input_bytes`: of those, the bytes of x's shard on this rank.
    - `x_shard_bytes`: the bytes of x's shard on this rank (what a full
      checkpoint keeps at least).
    - `backward_ops`: the forward ops this rank's backward pass runs again
      (matmuls and relus, by name); empty without a checkpoint.
    - `backward_matmuls`: the matmuls this rank's backward pass runs.
    - `instrument`: what measured it, in a few words.
    - `node`: where the rank ran, as its launcher names it: `"node 1"` (torch's node
      rank, `GROUP_RANK`), `"process 1"` (`jax.process_index()`); `""` if not said.
    - `host`, `pid`: the machine and the process that measured it.
    """

    rank: int
    layout: str
    kept_bytes: int
    input_bytes: int
    x_shard_bytes: int
    backward_ops: dict
    backward_matmuls: int
    instrument: str
    node: str = ""
    host: str = ""
    pid: int = 0

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")

    @property
    def activation_bytes(self) -> int:
        """Kept bytes computed from x (x's own bytes left out)."""
        return self.kept_bytes - self.input_bytes

    @property
    def where(self) -> str:
        """The rank, named with its node and process: "rank 2 on node 1 (pid 4711 on h)"."""
        if not self.node:
            return f"rank {self.rank}"
        return f"rank {self.rank} on {self.node} (pid {self.pid} on {self.host})"
