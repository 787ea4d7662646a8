"""Observe the `jax_spmd` port in a process of its own: `python -m tests.spmd_probe`.

The port's devices exist only where it is the first to import jax (XLA
reads `--xla_force_host_platform_device_count` once), and pytest has
imported jax already, so `tests/jax/test_jax_spmd.py` runs this and judges
what it prints: one JSON object of observations. No expected value is
computed here.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import numpy as np

B, D, F = 8, 16, 12  # B and F divide by 4 and 2


def main() -> dict:
    import implementations  # the port first: it sets XLA_FLAGS before jax is imported

    port = implementations.load("jax_spmd")
    import jax

    from conformance.checking.checks import ConformanceError
    from conformance.checking.properties import _check_ranks, check_evidence
    from conformance.checking.strategies import ParamCase
    from conformance.mutants import load as load_mutant
    from implementations.stacks.jax import spmd
    from implementations.stacks.numpy import canonical_params

    seen: dict = {"devices": len(jax.devices()), "ranks": port.ranks}
    params = canonical_params(1, D, F)
    x = np.linspace(-1.0, 1.0, B * D, dtype=np.float32).reshape(B, D)
    for layout in ("batch", "feature"):
        for checkpoint in (True, False):
            records = port.rank_records(params, x, layout, checkpoint=checkpoint)
            seen[f"{layout}_{checkpoint}"] = [asdict(r) for r in records]
    # The roles each declared remat policy keeps (the contract's VJP, one example).
    from implementations.policies import Policy

    seen["policies"] = {}
    for name in port.policies:
        record = port.backward_record(params, x[0], checkpoint=Policy(name))
        seen["policies"][name] = {
            "roles": sorted(t.role for t in record.kept),
            "host": sorted(t.role for t in record.kept if t.memory_space == "host"),
            "backward_matmuls": record.backward_matmuls,
        }
    # The one-jit merge: forward and backward compiled together, with and without remat.
    arrays = (params.w1, params.b1, params.w2, params.b2)
    cotangent = np.ones((B, F), np.float32)
    for checkpoint in (True, False):
        fn = lambda p, v, c=checkpoint: port.run(p, v, c)  # noqa: E731
        seen[f"merged_{checkpoint}"] = spmd.merged_vjp_matmuls(
            fn, port.mesh, "batch", arrays, x, cotangent
        )
    # Property (e) on the port and on the mutant without jax.checkpoint.
    one = x[0]
    case = (ParamCase(params=params, x=one, cotangent=np.ones(F, np.float32)), 1)
    check_evidence(port, None, case)
    mutant = load_mutant("spmd_no_checkpoint").port
    try:
        check_evidence(mutant, None, case)
        seen["mutant"] = "passed"
    except ConformanceError as error:
        seen["mutant"] = str(error)
    try:  # the per-rank half of (e) alone
        _check_ranks(mutant, params, one)
        seen["mutant_ranks"] = "passed"
    except ConformanceError as error:
        seen["mutant_ranks"] = str(error)
    return seen


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main()) + "\n")
