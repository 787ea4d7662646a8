"""Drive the `torch_fsdp` port's ranks in a process of its own: `python -m tests.support.fsdp_probe
MODE`.

The ranks are processes the port starts; the tests in `tests/torch/test_torch_fsdp.py`
run this in a fresh interpreter (so that a crash, a hang or a SIGKILL of the
controller is the probe's, not pytest's) and judge the JSON it prints. Modes:

- `evidence`: rank 0's `backward_record` (the contract's VJP, x on every rank) under none
  and full (the kept tensors' roles and the backward matmuls), then every rank's record in
  the batch layout, with and without the checkpoint;
- `crash`: a rank SIGKILLs itself on the first request (`REMAT_FSDP_CRASH_RANK`);
- `hang`: every rank sleeps past `REMAT_RANK_TIMEOUT`;
- `serve`: print the ranks' pids, then wait to be killed;
- `fault`: print who runs where (`roster`), then run a long training-step call, for a
  test to kill or stop a node in the middle of (`REMAT_SCALE_NODES=2`), and print what
  failed, when.

`evidence` also runs the per-rank half of (e) on the mutant without the checkpoint, and
every mode's output names the ranks' nodes and processes (`roster`).

No expected value is computed here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict

import numpy as np

from tests.support.nodes import failure, mutant_ranks, roster, say, still_alive

B, D, F = 8, 16, 12


def main(mode: str) -> dict:
    import implementations
    from implementations.policies import Policy
    from implementations.stacks.numpy import canonical_params

    port = implementations.load("torch_fsdp")
    params = canonical_params(1, D, F)
    x = np.linspace(-1.0, 1.0, B * D, dtype=np.float32).reshape(B, D)
    seen: dict = {"ranks": port.ranks}
    pool = port.pool()
    seen["pids"] = sorted(m.pid for m in pool.members.values())
    seen["roster"] = roster(pool, "rank", rendezvous=pool.endpoint)
    if mode == "serve":
        say(seen)
        time.sleep(600)
    if mode == "evidence":
        for policy in ("none", "full"):  # rank 0's kept tensors, by role
            record = port.backward_record(params, x[0], checkpoint=Policy(policy))
            seen[policy] = {
                "roles": sorted(t.role for t in record.kept),
                "backward_matmuls": record.backward_matmuls,
            }
        for checkpoint in (True, False):
            records = port.rank_records(params, x, "batch", checkpoint=checkpoint)
            seen[str(checkpoint)] = [asdict(r) for r in records]
        seen["mutant_ranks"] = mutant_ranks("fsdp_no_checkpoint", params, x[0])  # same ranks
        port.close()
    elif mode == "fault":
        say(seen)
        seen.update(failure(lambda: pool.ask(("step", params, x, "batch", True, 10**6))))
        port.close()
    else:
        request = ("forward", params, x[0], True) if mode == "crash" else ("sleep", 600)
        seen.update(failure(lambda: pool.ask(request)))
    seen["alive_after"] = still_alive(seen["pids"])
    seen["everything_alive_after"] = still_alive(seen["roster"]["everything"])
    return seen


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(sys.argv[1])) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the launcher's thread is done; nothing to wait for
