"""Run the DeepSpeed port's checkpoint under each of DeepSpeed's options, in a process of its
own, and print what happened as one JSON document (tests/deepspeed/test_deepspeed_options.py).

A process of its own because `configure()` needs a process group (`deepspeed.init_distributed`,
one gloo rank, without DeepSpeed's compiled shared-memory all-reduce) and sets module-wide
state; the test sessions keep neither. Each case runs the
port's `run(model, x)` on the canonical MLP, then `backward(ones)`, and compares the output and
every gradient with the default checkpoint's (no `configure()`), bit for bit.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import socket
import sys
import time

#: (options given to `configure`, the shape of x) for every case.
OPTIONS = (
    {"partition_activations": True},
    {"checkpoint_in_cpu": True},
    {"partition_activations": True, "checkpoint_in_cpu": True},
)
D, F = 4, 3
SHAPES = ((D,), (1, D), (2, D))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    import os

    started = time.process_time()
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0"}
    os.environ.update(env | {"WORLD_SIZE": "1", "LOCAL_RANK": "0"})
    with contextlib.redirect_stdout(sys.stderr):  # DeepSpeed logs to stdout
        import deepspeed
        import numpy as np
        import torch

        from implementations.stacks.deepspeed.deepspeed import DeepSpeed
        from implementations.stacks.numpy import canonical_params
        from implementations.stacks.torch import build_mlp

        imported = time.process_time()
        # Its shared-memory all-reduce op is compiled on a first init (about 100 s, again
        # in every new venv); one rank never all-reduces, and the options under test do
        # not touch it, so the probe goes without.
        # (By its module: the package's attribute `deepspeed.comm.torch` is torch itself.)
        importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None
        deepspeed.init_distributed("gloo")
        initialised = time.process_time()
        port = DeepSpeed()
        params = canonical_params(0, D, F)
        rng = np.random.default_rng(0)
        inputs = {shape: rng.standard_normal(shape).astype(np.float32) for shape in SHAPES}

        def run(shape, found: dict) -> None:
            """The pass on an x of `shape`; what it saw goes into `found` as it goes."""
            model = build_mlp(params)
            x = torch.tensor(inputs[shape], requires_grad=True)
            out = port.run(model, x)
            found["x_between"] = list(x.shape)  # the caller's x, between the passes
            out.backward(torch.ones_like(out))
            values = [out.detach(), x.grad, *(p.grad for p in model.parameters())]
            found["values"] = [v.numpy().tolist() for v in values]

        def case(options: dict, shape) -> dict:
            found: dict = {}
            deepspeed.checkpointing.configure(None, **options)
            try:
                run(shape, found)
            except Exception as error:  # the outcome to pin, whatever it is
                found["error"] = f"{type(error).__name__}: {error}"
            finally:  # back to the defaults for the next case
                deepspeed.checkpointing.configure(
                    None, partition_activations=False, checkpoint_in_cpu=False
                )
            if "values" in found:
                found["equal"] = found.pop("values") == defaults[shape]["values"]
            return found

        defaults: dict = {}
        for shape in SHAPES:
            run(shape, defaults.setdefault(shape, {}))

        cases = [
            {"options": options, "shape": list(shape), **case(options, shape)}
            for options in OPTIONS
            for shape in SHAPES
        ]
    report = {
        "cases": cases,
        "defaults_x_between": {str(list(s)): d["x_between"] for s, d in defaults.items()},
        "cpu_seconds": {
            "import": imported - started,
            "init_distributed": initialised - imported,
            "cases": time.process_time() - initialised,
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
