"""Probes of torch's documented degradations (`expectations.py`): each runs the degraded call
on the MLP and says whether it still degrades, `(holds, seen)`. Imports torch.

The version sweep (`python -m conformance versions`) runs them at every version it installs;
tests/torch/test_torch_policies.py and test_torch_compile_policies.py pin them in detail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..numpy import canonical_params


def _x(dim: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=dim).astype(np.float32)


def _eager(policy_fn: Callable[..., Any], *, tag_h: bool = False):
    """torch's eager instrument on the MLP (4, 4) under a selective policy function."""
    # torch's modules import torch: only where a probe runs
    from . import leaf_input
    from . import policies as torch_policies
    from .instrument import RegionCounter
    from .mlp import build_mlp
    from .stack import model_record

    regions = RegionCounter()
    cache = torch_policies.SelectiveCache(policy_fn)
    x = leaf_input(_x(4))

    def run():
        context_fn = torch_policies.combine(regions.context_fn, cache.context_fn)
        model = build_mlp(canonical_params(0, 4, 4), context_fn=context_fn, tag_h=tag_h)
        return model(x), model

    return model_record(run, x, regions, cache)


def _compiled(policy_fn: Callable[..., Any]):
    """AOTAutograd's partition of the compiled MLP (8, 8) under a selective policy function:
    the record and the forward graph."""
    import torch

    # torch's modules import torch: only where a probe runs
    from . import leaf_input
    from . import policies as torch_policies
    from .compiled import CompiledModule
    from .mlp import build_mlp

    compiled = CompiledModule()
    model = build_mlp(canonical_params(0, 8, 8), context_fn=torch_policies.context_fn(policy_fn))
    x = leaf_input(_x(8))
    with compiled.recorder.capture() as seen:
        out = compiled(model, x)
    torch.autograd.grad(out, [x, *model.parameters()], torch.ones_like(out))
    return seen.record(), seen.last()[0]


def _said(record) -> str:
    return f"keeps {sorted(record.saved_roles)}, {record.backward_matmuls} backward matmuls"


def eager_cpu_offload_recomputes() -> tuple[bool, str]:
    """Eager selective checkpointing treats MUST_CPU_OFFLOAD as recompute."""
    from . import policies as torch_policies  # imports torch: only where a probe runs

    record = _eager(torch_policies.offload_dots)
    host = sorted(t.role for t in record.kept if t.memory_space == "host")
    holds = record.saved_roles == {"x"} and record.backward_matmuls == 5 and not host
    return holds, f"offload_dots {_said(record)}, on the host {host}"


def eager_tagged_h_still_reruns_its_addmm() -> tuple[bool, str]:
    """A tagged h is cached (MUST_SAVE), and the eager recompute still reruns its addmm."""
    from . import policies as torch_policies  # imports torch: only where a probe runs

    record = _eager(torch_policies.save_named, tag_h=True)
    holds = record.saved_roles == {"x", "h"} and record.backward_matmuls == 5
    return holds, f"save_named {_said(record)}"


def compiled_cpu_offload_is_a_save() -> tuple[bool, str]:
    """CPU_OFFLOAD under torch.compile becomes a plain save: h kept, nothing moved."""
    from . import policies as torch_policies  # imports torch: only where a probe runs

    record, partition = _compiled(torch_policies.offload_dots)
    copies = sorted(
        {node.target for node in partition.forward.nodes}
        & {"aten._to_copy", "aten.to", "aten.copy_"}
    )
    holds = record.saved_roles == {"x", "h"} and not copies
    return holds, f"offload_dots {_said(record)}, copies {copies}"


def compiled_stateful_policy_is_ignored() -> tuple[bool, str]:
    """A stateful policy function (save the first addmm) is ignored under compile: full remat."""
    from . import policies as torch_policies  # imports torch: only where a probe runs

    record, _ = _compiled(torch_policies.stateful_first_matmul())
    holds = record.saved_roles == {"x"} and record.backward_matmuls == 5
    return holds, f"a stateful save_dots {_said(record)}"
