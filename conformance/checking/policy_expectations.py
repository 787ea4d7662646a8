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
    - `wide`: roles kept in addition when F > 16 (inductor writes a matmul on a
      vector with both weight dimensions <= 16 as multiplies and a sum; with
      the second layer one addmm, it also keeps relu's mask).
    """

    roles: frozenset[str]
    backward_matmuls: int | None
    host: frozenset[str] = frozenset()
    why: str = ""
    wide: frozenset[str] = frozenset()

    def roles_at(self, features: int | None) -> frozenset[str]:
        """The expected roles for width `features` (None: unknown, `roles` alone)."""
        if features is not None and features > WIDE:
            return self.roles | self.wide
        return self.roles


#: The largest weight dimension inductor still decomposes (`torch._inductor.decomposition.addmm`).
WIDE = 16


def _e(roles: str, matmuls: int | None, host: str = "", why: str = "", wide: str = "") -> Expected:
    return Expected(
        frozenset(roles.split()), matmuls, frozenset(host.split()), why, frozenset(wide.split())
    )


_NOT_COUNTED = "this stack's instrument does not count backward matmuls"

#: By instrument family (a stack's name, or a Keras port's backend), then policy name.
EXPECTED: dict[str, dict[str, Any]] = {  # Expected, or (dim, features) -> Expected
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
    # torch's Linear is one addmm with the bias fused in: a policy can save h, never d1.
    "torch": {
        "none": _e("x a", 4, why="eager relu's backward reads its output a"),
        "full": _e("x", 5, why="torch.utils.checkpoint keeps x, reruns addmm and relu"),
        "save_dots": _e(
            "x h y",
            4,
            why="addmm fuses the bias (h, not d1); eager selective checkpointing caches every "
            "addmm output, y too, which nothing reads",
        ),
    },
    # DeepSpeed's checkpoint is reentrant: it keeps x on its node (ctx.deepspeed_saved_tensors)
    # and its backward reruns the whole block, the second addmm too, with no early stop.
    "deepspeed": {
        "none": _e("x a", 4, why="the plain module: eager relu's backward reads its output a"),
        "full": _e(
            "x",
            6,
            why="deepspeed.checkpointing.checkpoint keeps x and reruns the whole block "
            "(addmm, relu, addmm): two matmuls more than none",
        ),
    },
    "paddle": {
        "none": _e("x a", None, why=f"Paddle's relu_grad reads its output a; {_NOT_COUNTED}"),
        "full": _e(
            "x", None, why=f"fleet.utils.recompute keeps the block's input x; {_NOT_COUNTED}"
        ),
    },
    "mindspore": {
        "none": _e("x a", None, why=f"MindSpore's ReluGrad reads its output a; {_NOT_COUNTED}"),
        "full": _e("x", None, why=f"Cell.recompute keeps the cell's input x; {_NOT_COUNTED}"),
    },
    "torch_compile": {
        "none": _e(
            "x a",
            4,
            wide="mask",
            why="inductor rebuilds relu's mask from a, and keeps it too when F > 16",
        ),
        "full": _e("x", 5, why="the partitioner recomputes the region's first layer"),
        "save_dots": _e("x h", 4, why="addmm fuses the bias (h); the partitioner drops y"),
        "save_named": _e("x h", 4, why="the tag op's output h, MUST_SAVE"),
        "budget(0)": _e("x", 5, why="activation_memory_budget 0: recompute all it can"),
        # A budget in (0, 1] is min-cut's own choice at batch 1, and it hangs on the sizes
        # (measured: (3, 4) keeps x; (8, 8) x, a; (33, 7) x, h; (32, 32) x, a, mask): (j)
        # holds budget(0) exactly, and `bench --policies` measures the rest.
    },
    # Rank 0's saved_tensors_hooks under FSDP2 (gathered weights are parameters, not kept).
    "torch_fsdp": {
        "none": _e("x a", 4, why="as eager torch on each rank: relu's backward reads its output a"),
        "full": _e("x", 5, why="torch.utils.checkpoint keeps x's rows, reruns addmm and relu"),
    },
    # A process port's family is its hello's framework. Its tape saves by role (the evidence's
    # `role`, docs/PROTOCOL.md); backward matmuls are tf.profile's BatchMatMul kernels.
    "@tensorflow/tfjs": {
        "none": _e(
            "x d1 h a y",
            4,
            why="tfjs's Add gradient saves both inputs (d1, and y = a @ W2 before the bias), "
            "its Relu gradient reads its input h, the second BatchMatMul's reads a",
        ),
        "full": _e("x", 5, why="tf.customGrad keeps x; its gradient reruns the first BatchMatMul"),
    },
    # The protocol's C++ test port (tests/process/cpp_port): its own bookkeeping.
    "cpp_port": {
        "none": _e("x h a", 4, why="its backward reads h (for relu's mask) and a"),
        "full": _e("x", 5, why="its backward reruns the hidden layer's matvec"),
    },
}


#: Ports whose instrument family is not their stack's name.
FAMILY_BY_PORT = {"torch_compile": "torch_compile"}


def family(port: Any) -> str:
    """The instrument family whose expectations hold for `port`: its class's
    `instrument_family` where it declares one (so a mutant of the port, renamed, keeps it),
    else by its name or its stack."""
    declared_family = getattr(port, "instrument_family", "")
    if declared_family:
        return declared_family
    name = getattr(port, "name", "")
    if name in FAMILY_BY_PORT:
        return FAMILY_BY_PORT[name]
    stack = getattr(port, "stack", None)
    return getattr(stack, "backend_name", None) or getattr(stack, "name", "") or ""


def expected(
    port: Any, policy: Policy, dim: int | None = None, features: int | None = None
) -> Expected | None:
    """What `port`'s instrument must show under `policy` (its label, e.g. `budget(0)`, first,
    then its name) at sizes `dim`, `features`; None where nothing is written down. An entry
    may be a function of the sizes, where the framework's choice depends on them."""
    table = EXPECTED.get(family(port), {})
    entry = table.get(policy.label) or table.get(policy.name)
    return entry(dim, features) if callable(entry) else entry


@dataclass(frozen=True)
class Degradation:
    """An upstream behaviour that silently does less (or more) than the policy says.

    - `family`: the instrument family (or port) it concerns; `policy`: the policy name.
    - `what`: one line for reports; `short`: a few words for tables.
    - `measured`: the upstream distribution and version it was measured on.
    """

    family: str
    policy: str
    what: str
    measured: str
    short: str = ""


#: The documented degradations of issue 21. The torch ones are pinned by
#: tests/torch/test_torch_policies.py and tests/torch/test_torch_compile_policies.py.
DEGRADATIONS: tuple[Degradation, ...] = (
    Degradation(
        "torch",
        "offload_dots",
        "eager selective checkpointing treats MUST_CPU_OFFLOAD as recompute: nothing is "
        "offloaded, the addmm reruns",
        "torch 2.13.0",
    ),
    Degradation(
        "torch",
        "save_named",
        "a custom tag op on h can be cached (MUST_SAVE), but the eager recompute still reruns "
        "the addmm that makes h (5 backward matmuls)",
        "torch 2.13.0",
    ),
    Degradation(
        "torch_compile",
        "offload_dots",
        "CPU_OFFLOAD under torch.compile becomes a plain save: h kept, nothing moved",
        "torch 2.13.0",
    ),
    Degradation(
        "torch_compile",
        "save_dots",
        "a stateful policy function (save the first addmm) is silently ignored under "
        "torch.compile, which calls it twice per op: full remat instead",
        "torch 2.13.0",
    ),
    Degradation(
        "tensorflow",
        "full",
        "tf.recompute_grad reruns both matmuls (MatMul x2 recomputed, no pruning of the "
        "second layer, which the gradient does not need)",
        "tensorflow 2.21",
        "reruns both matmuls",
    ),
    Degradation(
        "keras",
        "save_named",
        'RematScope(mode="activations") saves more than no remat at all: it cannot stand '
        "for save_named",
        "keras 3.15.1",
        'mode="activations" saves more than none',
    ),
)


def degradations(port: Any, policy: str) -> tuple[Degradation, ...]:
    """The documented degradations for `port` (its family, or Keras) under `policy`."""
    families = {family(port)}
    if not getattr(port, "instrument_family", ""):  # a declared family is the whole story
        families.add(getattr(getattr(port, "stack", None), "name", ""))
    return tuple(d for d in DEGRADATIONS if d.family in families and d.policy == policy)
