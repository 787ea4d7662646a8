"""Drive the `torch_fsdp` port's ranks in a process of its own: `python -m tests.fsdp_probe MODE`.

The ranks are processes the port starts; the tests in `tests/torch/test_torch_fsdp.py`
run this in a fresh interpreter (so that a crash, a hang or a SIGKILL of the
controller is the probe's, not pytest's) and judge the JSON it prints. Modes:

- `evidence`: every rank's record in the batch layout, with and without the checkpoint;
- `roles`: rank 0's `backward_record` (the contract's VJP, x on every rank) under none and
  full: the kept tensors' roles and the backward matmuls;
- `crash`: a rank SIGKILLs itself on the first request (`REMAT_FSDP_CRASH_RANK`);
- `hang`: every rank sleeps past `REMAT_RANK_TIMEOUT`;
- `serve`: print the ranks' pids, then wait to be killed.

No expected value is computed here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict

import numpy as np

B, D, F = 8, 16, 12


def alive(pids) -> list[int]:
    """The pids that name a live process (not a zombie)."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(pid)
    return found


def main(mode: str) -> dict:
    import implementations
    from implementations.policies import Policy
    from implementations.stacks.numpy import canonical_params
    from implementations.stacks.torch.ranks import RankFailure

    port = implementations.load("torch_fsdp")
    params = canonical_params(1, D, F)
    x = np.linspace(-1.0, 1.0, B * D, dtype=np.float32).reshape(B, D)
    seen: dict = {"ranks": port.ranks}
    pool = port.pool()
    seen["pids"] = sorted(m.pid for m in pool.members.values())
    if mode == "serve":
        sys.stdout.write(json.dumps(seen) + "\n")
        sys.stdout.flush()
        time.sleep(600)
    if mode == "roles":
        for policy in ("none", "full"):
            record = port.backward_record(params, x[0], checkpoint=Policy(policy))
            seen[policy] = {
                "roles": sorted(t.role for t in record.kept),
                "backward_matmuls": record.backward_matmuls,
            }
        port.close()
    elif mode == "evidence":
        for checkpoint in (True, False):
            records = port.rank_records(params, x, "batch", checkpoint=checkpoint)
            seen[str(checkpoint)] = [asdict(r) for r in records]
        port.close()
    else:
        request = ("forward", params, x[0], True) if mode == "crash" else ("sleep", 600)
        started = time.monotonic()
        try:
            pool.ask(request)
            seen["error"] = ""
        except RankFailure as error:
            seen["error"] = str(error)
        seen["seconds"] = time.monotonic() - started
    time.sleep(1)
    seen["alive_after"] = alive(seen["pids"])
    return seen


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(sys.argv[1])) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the launcher's thread is done; nothing to wait for
