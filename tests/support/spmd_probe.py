"""Observe the `jax_spmd` port in a process of its own: `python -m tests.support.spmd_probe [MODE]`.

The port's devices exist only where it is the first to import jax (XLA
reads `--xla_force_host_platform_device_count` once), and pytest has
imported jax already, so `tests/jax/test_jax_spmd.py` runs this and judges
what it prints: one JSON object of observations. No expected value is
computed here. Modes:

- none: one process (the port's own devices), as above;
- `processes` (with `REMAT_SCALE_NODES=2`): the port as the controller of its JAX
  processes: every device's record in both layouts (each measured by its own process),
  the contract's results, the per-rank half of (e) on the mutant, who ran where;
- `fault`: print who runs where, then run a long training-step call, for a test to kill
  or stop a process in the middle of, and print what failed, when;
- `serve`: print who runs where, then wait to be killed;
- `values`: the contract's results alone (for comparing one process with two).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import numpy as np

from tests.support.nodes import failure, mutant_ranks, roster, say, still_alive

B, D, F = 8, 16, 12  # B and F divide by 4 and 2


def merged_vjp_matmuls(fn, mesh, layout: str, arrays, x, cotangent) -> int:
    """The `dot`s of forward and backward compiled as ONE `jit`: where XLA:CPU merges a
    checkpoint's recomputation away, the same count with and without the checkpoint."""
    import jax
    from jax.sharding import NamedSharding

    from implementations.stacks.jax import spmd

    params, x = spmd.placed(mesh, layout, arrays, x)
    spec = spmd.x_spec(layout, np.ndim(cotangent))
    ct = jax.device_put(np.asarray(cotangent, np.float32), NamedSharding(mesh, spec))
    step = jax.jit(lambda p, v, c: jax.vjp(fn, p, v)[1](c))
    return spmd._dots(step.lower(params, x, ct).compile().as_text())


def main() -> dict:
    import implementations  # the port first: it sets XLA_FLAGS before jax is imported

    port = implementations.load("jax_spmd")
    import jax

    from conformance.checking.checks import ConformanceError
    from conformance.checking.properties.e_evidence import _check_ranks, check_evidence
    from conformance.checking.strategies import ParamCase
    from conformance.mutants import load as load_mutant
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
        seen[f"merged_{checkpoint}"] = merged_vjp_matmuls(
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


def values(port) -> dict:
    """The contract's results on fixed inputs, as lists (forward, VJP, the exercise)."""
    from implementations.stacks.numpy import canonical_params

    rng = np.random.default_rng(0)
    params = canonical_params(1, D, F)
    x, cotangent = rng.standard_normal(D, np.float32), rng.standard_normal(F, np.float32)
    grads = port.vjp(params, x, cotangent, checkpoint=True)
    return {
        "forward": port.forward(params, x, checkpoint=True).tolist(),
        **{f"d{k}": np.asarray(v).tolist() for k, v in grads.as_dict().items()},
        "exercise": np.asarray(port.nn_checkpoint_forward(3, x, F)).tolist(),
    }


def processes(mode: str) -> dict:
    """The port on several JAX processes (see the module)."""
    import time

    import implementations
    from implementations.stacks.numpy import canonical_params

    port = implementations.load("jax_spmd")
    if mode == "values":
        seen = {"values": values(port)}
        port.close()
        return seen
    params = canonical_params(1, D, F)
    x = np.linspace(-1.0, 1.0, B * D, dtype=np.float32).reshape(B, D)
    pool = port.pool()
    seen: dict = {
        "ranks": port.ranks,
        "roster": roster(pool, "process", coordinator=pool.coordinator),
    }
    if mode == "serve":  # up, then idle until killed
        say(seen)
        time.sleep(600)
    if mode == "fault":
        say(seen)

        def steps():  # long enough to fault a process in the middle of
            port.step_times(params, x, "batch", checkpoint=True, repeats=10**6)

        seen.update(failure(steps))
    else:
        for layout in ("batch", "feature"):
            for checkpoint in (True, False):
                records = port.rank_records(params, x, layout, checkpoint=checkpoint)
                seen[f"{layout}_{checkpoint}"] = [asdict(r) for r in records]
        seen["values"] = values(port)
        seen["mutant_ranks"] = mutant_ranks("spmd_no_checkpoint", params, x[0])  # same processes
    port.close()
    seen["everything_alive_after"] = still_alive(seen["roster"]["everything"])
    return seen


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    sys.stdout.write(json.dumps(processes(mode) if mode else main()) + "\n")
    sys.stdout.flush()
