"""What each stack's instrument must show under each remat policy, written down once.

The expected sets are read off the issue's measured table (issue 21) and
the frameworks' documented behaviour, not computed by the code under test.
Where frameworks legitimately differ, the difference is written here, once
per stack, with its reason; it is never a looser check:

- JAX saves d1 (the dot's output, before the bias) under `save_dots`; a
  fused addmm (torch, MLX's AddMM) can save only h.
- JAX keeps relu's boolean mask next to a; TensorFlow's and eager torch's
  relu gradients read a alone; MLX's relu gradient reads its input h.
- Constant residuals (JAX's relu zeros) hold no data and are never listed
  (`BackwardRecord.kept` leaves them out).

**Documented degradations** are upstream behaviours that users walk into,
pinned with the upstream version they were measured on. Each has a test
that fails the day upstream changes; reports show them as *documented
degradation*, never as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from implementations.policies import Policy


@dataclass(frozen=True)
class Expected:
    """What a stack's instrument shows under one policy.

    - `roles`: the kept tensors by role (x, d1, h, a, mask, y).
    - `backward_matmuls`: the matmuls of the backward pass, recomputed ones
      included; None where the stack's instrument does not count them (`why`).
    - `host`: roles kept in host memory (offload).
    - `why`: the per-stack equivalence or gap, in one line.
    """

    roles: frozenset[str]
    backward_matmuls: int | None
    host: frozenset[str] = frozenset()
    why: str = ""


def _e(roles: str, matmuls: int | None, host: str = "", why: str = "") -> Expected:
    return Expected(frozenset(roles.split()), matmuls, frozenset(host.split()), why)


_NOT_COUNTED = "this stack's instrument does not count backward matmuls"

#: By instrument family (a stack's name, or a Keras port's backend), then policy name.
EXPECTED: dict[str, dict[str, Expected]] = {
    "jax": {
        "none": _e("x a mask", 4, why="relu's VJP keeps its boolean mask next to a"),
        "full": _e("x", 5, why="recomputes dot, add, max: one matmul more"),
        "save_dots": _e("x d1", 4, why="dots_saveable keeps d1 = x @ W1, before the bias"),
        "save_named": _e("x h", 4, why='checkpoint_name(h, "h") + save_only_these_names'),
        "offload_dots": _e("x d1", 4, host="d1", why="as save_dots, d1 in f32<host>"),
    },
    "tensorflow": {
        "none": _e("x a", None, why=f"relu's gradient reads a; {_NOT_COUNTED}"),
        "full": _e("x", None, why=f"tf.recompute_grad keeps the region's inputs; {_NOT_COUNTED}"),
    },
    "mlx": {
        "none": _e("x h a", None, why=f"MLX's relu VJP reads its input h; {_NOT_COUNTED}"),
        "full": _e("x", None, why=f"mx.checkpoint keeps the region's inputs; {_NOT_COUNTED}"),
    },
    "torch": {
        "none": _e("x a", None, why=f"eager relu's backward reads a; {_NOT_COUNTED}"),
        "full": _e("x", None, why=f"torch.utils.checkpoint keeps x; {_NOT_COUNTED}"),
    },
    "torch_compile": {
        "none": _e("x a mask", None, why=f"inductor keeps relu's mask; {_NOT_COUNTED}"),
        "full": _e("x", None, why=f"the partitioner recomputes the region; {_NOT_COUNTED}"),
    },
}

#: Ports whose instrument family is not their stack's name.
FAMILY_BY_PORT = {"torch_compile": "torch_compile"}


def family(port: Any) -> str:
    """The instrument family whose expectations hold for `port`."""
    name = getattr(port, "name", "")
    if name in FAMILY_BY_PORT:
        return FAMILY_BY_PORT[name]
    stack = getattr(port, "stack", None)
    return getattr(stack, "backend_name", None) or getattr(stack, "name", "") or ""


def expected(port: Any, policy: Policy) -> Expected | None:
    """What `port`'s instrument must show under `policy`; None where nothing is written down."""
    return EXPECTED.get(family(port), {}).get(policy.name)


@dataclass(frozen=True)
class Degradation:
    """An upstream behaviour that silently does less (or more) than the policy says.

    - `family`: the instrument family (or port) it concerns; `policy`: the policy name.
    - `what`: one line for reports.
    - `measured`: the upstream distribution and version it was measured on.
    """

    family: str
    policy: str
    what: str
    measured: str


#: The documented degradations of issue 21 that concern the non-torch stacks
#: (the torch ones are pinned next to the torch instrument).
DEGRADATIONS: tuple[Degradation, ...] = (
    Degradation(
        "tensorflow",
        "full",
        "tf.recompute_grad reruns both matmuls (MatMul x2 recomputed, no pruning of the "
        "second layer, which the gradient does not need)",
        "tensorflow 2.21",
    ),
    Degradation(
        "keras",
        "save_named",
        'RematScope(mode="activations") saves more than no remat at all: it cannot stand '
        "for save_named",
        "keras 3.15.1",
    ),
)


def degradations(port: Any, policy: str) -> tuple[Degradation, ...]:
    """The documented degradations for `port` (its family, or Keras) under `policy`."""
    families = {family(port), getattr(getattr(port, "stack", None), "name", "")}
    return tuple(d for d in DEGRADATIONS if d.family in families and d.policy == policy)
