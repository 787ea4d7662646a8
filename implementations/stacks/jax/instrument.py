"""JAX's instrument: what a backward pass saves and recomputes, read off the traced program,
and what the compiled program runs and holds. Imports jax only.

Every JAX port (Flax linen, Flax NNX, Equinox, Haiku, plain JAX) reads its record here
(`backward_record`), and the bench's call (`block.vjp`) is watched here (`watch`, `peak`),
so all of them are measured the same way:

- **Saved:** the residual leaves of `jax.vjp` (what `saved_residuals` lists),
  each traced back through the forward jaxpr to say whether it is an
  argument, a value derived from parameters only, or an activation that
  depends on x.
- **Recomputed:** the backward jaxpr (`make_jaxpr` of the VJP function, with
  the residuals as constants) holds, under checkpointing, forward operations
  again. They are the operations that do not depend on the cotangent.
- **Regions:** the `remat` equations on the backward path, looked for in
  every sub-jaxpr (jit, scan, cond, custom rules), since a checkpoint can sit
  inside any of them.
- **Roles** (for remat policies): each residual is named by the MLP tensor it
  is (x, d1 = x @ W1, h = d1 + b1, a = relu(h), relu's mask, y), found by
  following the forward jaxpr from x: a dot of x is d1, a bias added to it h,
  and so on; operations that pass a value on (`checkpoint_name`,
  `reduce_precision`, `device_put`, reshapes) keep its role.
- **Memory space:** a residual's aval says where it lives (`f32<host>` after
  an offload policy's `device_put`). This is the traced placement: under jit
  on a CPU, XLA has one memory and the placement is gone. jax 0.7.0's avals
  have no memory space: there the `device_put` that made the residual says it
  (`TransferToMemoryKind(memory_kind='pinned_host')`).
- **Backward matmuls:** the `dot_general` equations of the backward jaxpr,
  recomputed ones included.
- **Forward matmuls:** the `dot_general` equations of the forward jaxpr (the
  output and the residuals of `jax.vjp`). Both counts are the traced program's:
  XLA's compiled one may drop a dot nothing uses (DCE) or merge a recompute
  with the forward's (CSE, once the remat's optimization barrier is expanded).
- **Tags:** the `checkpoint_name` names the block holds, so that a policy
  naming a tag that is not there can be flagged (it silently runs full remat).

**The bench's call** (`watch(x, params)`, `peak()`: contexts around `block.vjp`, which hands
them its jitted program before it runs):

- **Saved, recomputed:** as above, of the run with respect to the parameters and x.
- **Matmuls:** the compiled program's `dot`s (optimized HLO), each counted as many times as
  its loop runs (`hlo_dot_count`): backward ones are named `transpose(jvp(...))` by JAX, the
  rest are the forward pass's. **Block matmuls per phase:** those of forward direction
  (x @ W1, a @ W2: lhs dim 1 contracted with rhs dim 0), in each phase: a compiled program
  has no block boundaries, so block evaluations are not observable.
- **Regions, reruns:** `remat` equations the traced program runs (a scan's body times its
  length), in the run and in its pullback.
- **Peak:** JAX's CPU runtime has no allocation profiler: not observable. XLA's
  `memory_analysis()` gives the compiled program's temporary buffers, at B and at 2B (the
  program at 2B compiled, never run): the part that grows with the batch, `temp(2B) -
  temp(B)`, is the activations; the parameters' gradients are not linear in B, and XLA keeps
  them in temporaries or writes them to its outputs as it sees fit.
- **Reruns the compiler removed:** XLA:CPU expands the checkpoint's optimization barriers
  (cse_barrier_expander) before HloCSE, which merges an unrolled region's rerun into the
  forward pass. Where the compiled backward runs fewer forward matmuls than the traced
  pullback reruns, the method says how many. Where that is exactly what the block's count
  model predicts (`block.removed_reruns`: a lone region of one block, e.g. `every` at L = 1),
  the schedule did not run: its block matmuls and its peak are not observable. Any other
  removal stays in the figures, measured, and the bench flags a program that is not its
  schedule (the mutant `jax_unrolled_schedules`, `block_mutants.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import jax
from jax.extend import core

from ...contract import BackwardRecord, SavedTensor
from ...measuring.record import NotObservable, Record
from ...policies import ROLES
from ..hlo import hlo_dot_count

REMAT_PRIMITIVES = frozenset({"remat2", "checkpoint", "remat"})

# Operations that only move or relabel data; they are not recomputation
# worth reporting, and JAX inserts them freely when it transposes.
LAYOUT_PRIMITIVES = frozenset(
    {
        "transpose",
        "reshape",
        "broadcast_in_dim",
        "squeeze",
        "expand_dims",
        "convert_element_type",
        "copy",
        "copy_p",
        "pjit",
        "jit",
        "name",  # checkpoint_name: a label, no computation
    }
)

INSTRUMENT = "jax.vjp residuals traced through the jaxpr; backward jaxpr ops; remat equations"
#: Said of a residual's memory space on a CPU backend.
CPU_PLACEMENT = "under jit on CPU the placement is gone (XLA:CPU has one memory)"


def backward_record(
    fn: Callable[..., Any], args: Sequence[Any], origins: Sequence[str], cotangent: Any
) -> BackwardRecord:
    """Measure the backward pass of `fn(*args)` for one cotangent.

    **Arguments:**

    - `fn`: the function whose VJP is measured.
    - `args`: its arguments (pytrees of arrays).
    - `origins`: for each argument, `"input"` (values derived from it are
      activations) or `"parameter"`.
    - `cotangent`: pulled back through `fn`; it fixes the backward jaxpr.

    **Returns:** a `BackwardRecord`.
    """
    saved, tags, forward_matmuls = _saved_and_tags(fn, args, origins)
    backward = backward_jaxpr(fn, args, cotangent)
    instrument = INSTRUMENT
    if any(t.memory_space == "host" for t in saved) and jax.default_backend() == "cpu":
        instrument += f"; host residuals as traced: {CPU_PLACEMENT}"
    return BackwardRecord(
        instrument=instrument,
        saved=saved,
        recomputed=dict(recomputed_ops(backward)),
        checkpoint_regions=count_remat(backward.jaxpr),
        backward_matmuls=count_primitive(backward.jaxpr, MATMUL_PRIMITIVES),
        tags=tags,
        forward_matmuls=forward_matmuls,
    )


def backward_jaxpr(fn: Callable[..., Any], args: Sequence[Any], cotangent: Any) -> core.ClosedJaxpr:
    """The jaxpr of `fn`'s pullback for `cotangent`, its residuals as constants.

    Traced inside an abstract trace of the forward pass, so nothing runs: the
    residuals are the outer trace's values, and the pullback's jaxpr takes
    them as constants, as it would concrete ones (30 times faster than
    running `jax.vjp` eagerly, which compiles every operation per shape).
    """
    found = []

    def forward(*args):
        _, pullback = jax.vjp(fn, *args)
        found.append(jax.make_jaxpr(pullback)(cotangent))
        return 0

    jax.make_jaxpr(forward)(*args)
    return found[0]


def saved_tensors(
    fn: Callable[..., Any], args: Sequence[Any], origins: Sequence[str]
) -> tuple[SavedTensor, ...]:
    """The residuals `jax.vjp(fn, *args)` keeps, each with its origin, role and memory space."""
    return _saved_and_tags(fn, args, origins)[0]


def _saved_and_tags(
    fn: Callable[..., Any], args: Sequence[Any], origins: Sequence[str]
) -> tuple[tuple[SavedTensor, ...], tuple[str, ...], int]:
    """The residuals, the `checkpoint_name` tags and the forward pass's matmuls of
    `jax.vjp(fn, *args)`, read off one jaxpr of its forward pass (output and residuals)."""
    flat_args, in_tree = jax.tree_util.tree_flatten(tuple(args))
    leaf_origins = [
        origin
        for arg, origin in zip(args, origins, strict=True)
        for _ in jax.tree_util.tree_leaves(arg)
    ]
    leaf_names = [
        jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tuple(args))
    ]

    outputs = []

    def forward_and_residuals(*leaves):
        out, pullback = jax.vjp(fn, *jax.tree_util.tree_unflatten(in_tree, leaves))
        outputs.append(len(jax.tree_util.tree_leaves(out)))
        # The output too: the forward pass computes it, and its matmuls are counted.
        return [*jax.tree_util.tree_leaves(out), *jax.tree_util.tree_leaves(pullback)]

    closed = jax.make_jaxpr(forward_and_residuals)(*flat_args)
    jaxpr = closed.jaxpr
    from_input = depends_on(jaxpr, [origin == "input" for origin in leaf_origins])
    from_any = depends_on(jaxpr, [True] * len(leaf_origins))
    roles = tensor_roles(jaxpr, ["x" if origin == "input" else "" for origin in leaf_origins])

    saved, seen = [], set()
    for var in jaxpr.outvars[outputs[0] :]:  # the residuals
        if isinstance(var, core.Literal) or var in seen:
            continue
        seen.add(var)
        shape, dtype = tuple(var.aval.shape), str(var.aval.dtype)
        where = {"role": roles.get(var, ""), "memory_space": _memory_space(var, jaxpr)}
        if where["role"] not in ROLES:  # d2 = a @ W2 is no role of the vocabulary
            where["role"] = ""
        if var in jaxpr.invars:
            index = jaxpr.invars.index(var)
            origin, note = leaf_origins[index], f"argument {leaf_names[index]}"
        elif from_input.get(var, False):
            origin, note = "activation", f"output of {_producer(jaxpr, var)}"
        elif from_any.get(var, False):
            origin, note = "parameter", f"from parameters: {_producer(jaxpr, var)}"
        else:
            origin, note = "constant", f"output of {_producer(jaxpr, var)}"
        if origin not in SavedTensor.KEPT:
            where["role"] = ""  # a parameter or constant plays no role of the MLP's tensors
        saved.append(SavedTensor(shape, dtype, origin, note, **where))
    forward_matmuls = count_primitive(jaxpr, MATMUL_PRIMITIVES)
    return tuple(saved), tuple(sorted(checkpoint_names(jaxpr))), forward_matmuls


def _memory_space(var, jaxpr: core.Jaxpr) -> str:
    if not hasattr(var.aval, "memory_space"):  # jax 0.7.0: the offload's device_put says it
        return "host" if _device_put_kind(jaxpr, var) == "pinned_host" else "device"
    space = var.aval.memory_space
    name = str(getattr(space, "name", space) or "").lower()
    return {"host": "host", "device": "device"}.get(name, name)


def _device_put_kind(jaxpr: core.Jaxpr, var) -> str | None:
    """The memory kind a `device_put` of `jaxpr` moves `var` to (followed into call-like
    equations), e.g. "pinned_host" for `TransferToMemoryKind(memory_kind='pinned_host')`."""
    for eqn in jaxpr.eqns:
        if var not in eqn.outvars:
            continue
        index = eqn.outvars.index(var)
        if eqn.primitive.name == "device_put":
            return getattr(eqn.params["devices"][index], "memory_kind", None)
        sub = _call_jaxpr(eqn, len(eqn.invars))
        if sub is None or isinstance(sub.outvars[index], core.Literal):
            return None
        return _device_put_kind(sub, sub.outvars[index])
    return None


# -- roles ------------------------------------------------------------------------------

#: Roles of the MLP's tensors while following the forward pass; d2 = a @ W2 is internal.
_AFTER_DOT = {"x": "d1", "a": "d2"}
_AFTER_ADD = {"d1": "h", "d2": "y"}
_ROLE_KEEPING = frozenset(
    {
        "name",
        "reduce_precision",
        "convert_element_type",
        "copy",
        "copy_p",
        "device_put",
        "optimization_barrier",
        "reshape",
        "broadcast_in_dim",
        "squeeze",
        "expand_dims",
    }
)
_COMPARISONS = frozenset({"gt", "ge", "lt", "le", "eq", "ne", "sign", "select_n"})
MATMUL_PRIMITIVES = frozenset({"dot_general"})


def _eqn_role(name: str, roles: list[str]) -> str:
    """The role of an equation's output from its primitive and its inputs' roles."""
    known = {r for r in roles if r}
    if not known:
        return ""
    if "mask" in known and name in _COMPARISONS | {"mul", "convert_element_type"}:
        return "mask"
    (role,) = known if len(known) == 1 else ("",)
    if name in _ROLE_KEEPING:
        return role
    if name == "dot_general":
        return _AFTER_DOT.get(role, "")
    if name == "add":
        return _AFTER_ADD.get(role, "")
    if name == "max" and role == "h":
        return "a"
    if name in _COMPARISONS and role == "h":
        return "mask"
    return ""


def tensor_roles(jaxpr: core.Jaxpr, invar_roles: Sequence[str]) -> dict[Any, str]:
    """For every variable of a forward jaxpr, the MLP tensor it is ("" for none), given
    the roles of its inputs (x's leaf "x"). Call-like equations are followed inside."""
    env: dict[Any, str] = dict(zip(jaxpr.invars, invar_roles, strict=True))

    def read(var) -> str:
        return "" if isinstance(var, core.Literal) else env.get(var, "")

    for eqn in jaxpr.eqns:
        roles = [read(v) for v in eqn.invars]
        sub = _call_jaxpr(eqn, len(roles))
        if sub is not None:
            inner = tensor_roles(sub, roles)
            outs = ["" if isinstance(v, core.Literal) else inner.get(v, "") for v in sub.outvars]
        else:
            outs = [_eqn_role(eqn.primitive.name, roles)] * len(eqn.outvars)
        env.update(zip(eqn.outvars, outs, strict=True))
    return env


def _call_jaxpr(eqn, n_inputs: int) -> core.Jaxpr | None:
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = _as_jaxpr(eqn.params.get(key))
        if sub is not None and len(sub.invars) == n_inputs and eqn.primitive.name != "scan":
            return sub
    return None


def checkpoint_names(jaxpr: core.Jaxpr) -> set[str]:
    """The names `checkpoint_name` gives in a jaxpr, sub-jaxprs included."""
    found = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "name":
            found.add(str(eqn.params.get("name")))
        for sub in _sub_jaxprs(eqn):
            found |= checkpoint_names(sub)
    return found


def count_primitive(jaxpr: core.Jaxpr, names: frozenset[str]) -> int:
    """How many equations of the given primitives a jaxpr holds, sub-jaxprs included."""
    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name in names
        for sub in _sub_jaxprs(eqn):
            total += count_primitive(sub, names)
    return total


def recomputed_ops(closed: core.ClosedJaxpr) -> Counter:
    """Operations of a backward jaxpr that do not depend on its cotangent inputs, by name."""
    counts: Counter = Counter()

    def visit(eqn, inputs_depend):
        has_variable_input = any(not isinstance(v, core.Literal) for v in eqn.invars)
        if (
            has_variable_input
            and not any(inputs_depend)
            and eqn.primitive.name not in LAYOUT_PRIMITIVES
        ):
            counts[eqn.primitive.name] += 1

    depends_on(closed.jaxpr, [True] * len(closed.jaxpr.invars), visit=visit)
    return counts


def count_remat(jaxpr: core.Jaxpr) -> int:
    """How many checkpoint (remat) equations a jaxpr holds, sub-jaxprs included."""
    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name in REMAT_PRIMITIVES
        for sub in _sub_jaxprs(eqn):
            total += count_remat(sub)
    return total


def depends_on(
    jaxpr: core.Jaxpr,
    invar_flags: Sequence[bool],
    *,
    visit: Callable[[Any, list[bool]], None] | None = None,
) -> dict[Any, bool]:
    """For every variable of `jaxpr`, whether it depends on a flagged input.

    Call-like equations (jit, remat, custom rules) are followed inside, so a
    parameter that flows through a jit next to x is not taken for an
    activation. Loops are followed to a fixed point. `visit(eqn, flags)` sees
    each leaf equation once, with the flags of its inputs.
    """
    env: dict[Any, bool] = dict.fromkeys(jaxpr.constvars, False)
    env.update(zip(jaxpr.invars, invar_flags, strict=True))

    def read(var) -> bool:
        return not isinstance(var, core.Literal) and env.get(var, False)

    for eqn in jaxpr.eqns:
        flags = [read(v) for v in eqn.invars]
        env.update(zip(eqn.outvars, _eqn_depends(eqn, flags, visit), strict=True))
    return env


def _outputs_depend(jaxpr: core.Jaxpr, flags: Sequence[bool], visit=None) -> list[bool]:
    env = depends_on(jaxpr, flags, visit=visit)
    return [not isinstance(v, core.Literal) and env.get(v, False) for v in jaxpr.outvars]


def _eqn_depends(eqn, flags: list[bool], visit) -> list[bool]:
    name = eqn.primitive.name
    params = eqn.params
    if name == "scan":
        return _scan_depends(eqn, flags, visit)
    if name == "while":
        return _while_depends(eqn, flags, visit)
    if name == "cond":
        index, operands = flags[0], flags[1:]
        outs = [False] * len(eqn.outvars)
        for branch in params["branches"]:
            branch_outs = _outputs_depend(branch.jaxpr, operands, visit)
            outs = [a or b or index for a, b in zip(outs, branch_outs, strict=True)]
        return outs
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = _as_jaxpr(params.get(key))
        if sub is not None and len(sub.invars) == len(flags):
            return _outputs_depend(sub, flags, visit)
    if visit is not None:
        visit(eqn, flags)
    return [any(flags)] * len(eqn.outvars)


def _scan_depends(eqn, flags, visit) -> list[bool]:
    body = eqn.params["jaxpr"].jaxpr
    n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    consts, carry, xs = (
        flags[:n_consts],
        flags[n_consts : n_consts + n_carry],
        flags[n_consts + n_carry :],
    )
    while True:  # a carry that comes to depend in one step depends in all later ones
        outs = _outputs_depend(body, consts + carry + xs)
        widened = [c or o for c, o in zip(carry, outs[:n_carry], strict=True)]
        if widened == carry:
            break
        carry = widened
    outs = _outputs_depend(body, consts + carry + xs, visit)
    return carry + outs[n_carry:]


def _while_depends(eqn, flags, visit) -> list[bool]:
    params = eqn.params
    n_cond, n_body = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, carry = (
        flags[:n_cond],
        flags[n_cond : n_cond + n_body],
        flags[n_cond + n_body :],
    )
    while True:
        outs = _outputs_depend(params["body_jaxpr"].jaxpr, body_consts + carry)
        predicate = _outputs_depend(params["cond_jaxpr"].jaxpr, cond_consts + carry)[0]
        widened = [c or o or predicate for c, o in zip(carry, outs, strict=True)]
        if widened == carry:
            break
        carry = widened
    _outputs_depend(params["body_jaxpr"].jaxpr, body_consts + carry, visit)
    return carry


def _as_jaxpr(value) -> core.Jaxpr | None:
    if isinstance(value, core.ClosedJaxpr):
        return value.jaxpr
    if isinstance(value, core.Jaxpr):
        return value
    return None


def _sub_jaxprs(eqn):
    for value in eqn.params.values():
        candidates = value if isinstance(value, (tuple, list)) else (value,)
        for candidate in candidates:
            sub = _as_jaxpr(candidate)
            if sub is not None:
                yield sub


# Operations that hand a value on without changing what it is. A checkpoint
# policy that saves a dot product saves it through `reduce_precision`, which
# JAX inserts; a saved value is named by the operation a user wrote.
PASS_THROUGH_PRIMITIVES = frozenset(
    {"reduce_precision", "convert_element_type", "copy", "copy_p", "optimization_barrier"}
)


def _producer(jaxpr: core.Jaxpr, var) -> str:
    """The operation that made `var`, looking through pass-through operations."""
    producers = {out: eqn for eqn in jaxpr.eqns for out in eqn.outvars}
    through = []
    while var in producers:
        eqn = producers[var]
        name = eqn.primitive.name
        inputs = [v for v in eqn.invars if not isinstance(v, core.Literal)]
        if name not in PASS_THROUGH_PRIMITIVES or len(inputs) != 1:
            return f"{name} (through {', '.join(through)})" if through else name
        through.append(name)
        var = inputs[0]
    return "a constant" if not through else f"an argument (through {', '.join(through)})"


# -- the bench's call: the compiled program --------------------------------------------------

WATCH = (
    "block.vjp's program: jax.vjp residuals traced through the jaxpr; the optimized HLO's dots "
    "(a loop body times its trip count); remat equations the traced program runs"
)
PEAK = "XLA memory_analysis(): temp bytes that grow with B, temp(2B) - temp(B)"
METHODS = {
    "saved": "jax.vjp residuals of the run in the parameters and x, traced through the jaxpr",
    "forward_matmuls": "optimized HLO dots not named transpose(jvp(...)), times their loops",
    "backward_matmuls": "optimized HLO dots named transpose(jvp(...)), times their loops",
    "phase_block_matmuls": "optimized HLO dots of forward direction (lhs dim 1 by rhs dim 0), "
    "per phase by JAX's transpose(jvp(...)) names, times their loops",
    "recomputed": "pullback jaxpr operations that do not depend on the cotangent",
    "regions": "remat equations of the run's jaxpr, a scan's body times its length",
    "reruns": "remat equations of the pullback's jaxpr, a scan's body times its length",
    "program_temp_bytes": "XLA memory_analysis().temp_size_in_bytes of the compiled program",
}
NO_PROFILER = NotObservable(
    "JAX's CPU runtime has no allocation profiler; XLA's memory_analysis() plans the "
    "compiled program's temporaries"
)
NO_BLOCKS = NotObservable("a compiled XLA program has no block boundaries")
#: xla/service/cpu/cpu_compiler.cc: CSE-barrier expansion runs before HloCSE in the CPU
#: pipeline, so an unrolled region's rerun is the forward's computation again, and merged.
MERGED = (
    "XLA:CPU removed the reruns: its pipeline expands the checkpoint's optimization barriers "
    "(cse_barrier_expander) before HloCSE (xla/service/cpu/cpu_compiler.cc), which merges an "
    "unrolled region's rerun into the forward pass: the compiled program is not the schedule"
)
_FORWARD_DOT = re.compile(r"lhs_contracting_dims=\{1\}, rhs_contracting_dims=\{0\}")
_BACKWARD_NAME = "transpose(jvp"


def hlo_dots(text: str, keep: Callable[[str], bool]) -> int | None:
    """The `dot`s one run of the HLO module executes whose line `keep` accepts."""
    lines = (
        line if keep(line) else line.replace(" dot(", " other_dot(") for line in text.splitlines()
    )
    return hlo_dot_count("\n".join(lines))


def _forward_direction(line: str) -> bool:
    return bool(_FORWARD_DOT.search(line))


def _in_backward(line: str) -> bool:
    return _BACKWARD_NAME in line


def executed(jaxpr: core.Jaxpr, count: Callable[[Any], bool]) -> int:
    """How many equations `count` accepts the jaxpr runs: a scan's body times its length,
    any other sub-jaxpr once."""
    total = 0
    for eqn in jaxpr.eqns:
        total += bool(count(eqn))
        times = eqn.params["length"] if eqn.primitive.name == "scan" else 1
        for sub in _sub_jaxprs(eqn):
            total += times * executed(sub, count)
    return total


def _remat(eqn) -> bool:
    return eqn.primitive.name in REMAT_PRIMITIVES


def _forward_dot(eqn) -> bool:
    if eqn.primitive.name not in MATMUL_PRIMITIVES:
        return False
    (lhs, rhs), _ = eqn.params["dimension_numbers"]
    return tuple(lhs) == (1,) and tuple(rhs) == (0,)


#: (step, what, shapes) -> (step, the value): watch and peak compile and trace a call once.
_MADE: dict[tuple, tuple[Callable, Any]] = {}


class Program:
    """One call of `block.vjp`: its run, jitted step and arguments, and what they show."""

    def __init__(self, forward: Callable, step: Callable, args: tuple, wrt: str):
        self.forward, self.step, self.args, self.wrt = forward, step, args, wrt

    def _once(self, what: Any, make: Callable[[], Any]) -> Any:
        stacked, x, _ = self.args
        key = (id(self.step), what, x.shape, stacked[0].shape)
        if key not in _MADE or _MADE[key][0] is not self.step:
            _MADE[key] = (self.step, make())
            while len(_MADE) > 16:  # the latest cases' (a bench measures one at a time)
                _MADE.pop(next(iter(_MADE)))
        return _MADE[key][1]

    def compiled(self, batch: int = 1):
        """The step compiled with x and the cotangent at `batch` times their batch (once)."""
        return self._once(batch, lambda: self._compile(batch))

    def _compile(self, batch: int):
        stacked, x, cotangent = self.args
        if batch == 1:  # the executable the call runs (`block.executable`), compiled once
            from . import block

            return block.executable(self.step, self.args)
        wide = [
            jax.ShapeDtypeStruct((batch * a.shape[0], *a.shape[1:]), a.dtype)
            for a in (x, cotangent)
        ]
        return self.step.lower(stacked, *wide).compile()

    def pullback(self) -> core.ClosedJaxpr:
        """The pullback's jaxpr of the run in the parameters and x (once)."""
        stacked, x, cotangent = self.args
        return self._once("pullback", lambda: backward_jaxpr(self.forward, (stacked, x), cotangent))

    def removed(self, text: str) -> tuple[int, int]:
        """`(removed, traced)`: the forward matmuls the traced pullback reruns that the
        compiled backward does not run, of the `traced` it reruns (0 removed where the
        compiler kept every rerun)."""
        traced = executed(self.pullback().jaxpr, _forward_dot)
        compiled = hlo_dots(text, lambda line: _forward_direction(line) and _in_backward(line))
        return (0 if compiled is None else max(0, traced - compiled)), traced

    def merged(self, text: str) -> NotObservable | None:
        """Where the compiler removed reruns exactly as the block's count model predicts
        (`block.removed_reruns` of the run's placement: a schedule XLA:CPU does not keep),
        why the schedule's figures are not observable; else None. Removals the model does
        not predict are left in the figures, measured: the bench then flags the program
        that is not its schedule (`record`)."""
        from . import block  # the bench's alone: the ports' records never load it

        removed, traced = self.removed(text)
        placement = getattr(self.forward, "placement", None)
        if not removed or placement is None or removed != block.removed_reruns(placement):
            return None
        return NotObservable(
            f"{MERGED}: {removed} of the {traced} forward matmuls the traced pullback reruns "
            f"are not in the compiled backward, as the block's count model says ({block.REMOVED})"
        )

    def record(self) -> Record:
        stacked, x, _ = self.args
        compiled = self.compiled()
        text = compiled.as_text()
        pullback = self.pullback()
        per_phase = {
            phase: hlo_dots(
                text, lambda line, b=backward: _forward_direction(line) and _in_backward(line) == b
            )
            for phase, backward in (("forward", False), ("backward", True))
        }
        methods = dict(METHODS)
        removed, traced = self.removed(text)
        if removed:  # said in the method; the model's prediction leaves the figure unseen
            methods["phase_block_matmuls"] += (
                f"; XLA:CPU removed {removed} of the {traced} forward matmuls the traced "
                "pullback reruns: the compiled program, not the schedule"
            )
        per_phase = self.merged(text) or per_phase
        analysis = compiled.memory_analysis()
        temp = NO_PROFILER if analysis is None else int(analysis.temp_size_in_bytes)
        return Record(
            WATCH,
            methods,
            saved=saved_tensors(self.forward, (stacked, x), ("parameter", "input")),
            evaluations=NO_BLOCKS,
            forward_matmuls=hlo_dots(text, lambda line: not _in_backward(line)),
            backward_matmuls=hlo_dots(text, _in_backward),
            phase_block_matmuls=per_phase,
            recomputed=dict(recomputed_ops(pullback)),
            regions=executed(jax.make_jaxpr(self.forward)(stacked, x).jaxpr, _remat),
            reruns=executed(pullback.jaxpr, _remat),
            program_temp_bytes=temp,
        )

    def peak(self) -> Record:
        """The peak's record: not observable, its part that grows with the batch planned."""
        # A program whose reruns the compiler merged is not its schedule: its peak is not
        # observable, and the program at 2B (the costliest compile of a deep row) is not made.
        merged = self.merged(self.compiled().as_text())
        if merged:
            return Record(PEAK, {}, peak_bytes=merged, peak_batch_bytes=merged)
        low, high = (self.compiled(b).memory_analysis() for b in (1, 2))
        methods = {
            "peak_batch_bytes": PEAK,
            "peak_fixed_bytes": PEAK.replace(
                "that grow with B, temp(2B) - temp(B)",
                "that do not grow with B, 2 temp(B) - temp(2B)",
            ),
        }
        if low is None or high is None:
            return Record(PEAK, {}, peak_bytes=NO_PROFILER)
        at_b, at_2b = int(low.temp_size_in_bytes), int(high.temp_size_in_bytes)
        return Record(
            PEAK,
            methods,
            peak_bytes=NO_PROFILER,
            peak_batch_bytes=at_2b - at_b,
            peak_fixed_bytes=2 * at_b - at_2b,
        )


class Watch:
    """The programs `block.vjp` ran in a `watch` or `peak` block; the last one's record."""

    def __init__(self, peak: bool = False):
        self.programs: list[Program] = []
        self.is_peak = peak

    def saw(self, forward: Callable, step: Callable, args: tuple, wrt: str) -> None:
        self.programs.append(Program(forward, step, args, wrt))

    def record(self) -> Record:
        if not self.programs:
            none = NotObservable("the call ran no block.vjp")
            return (
                Record(WATCH, {}, peak_bytes=none)
                if self.is_peak
                else Record(WATCH, {}, saved=none)
            )
        program = self.programs[-1]
        return program.peak() if self.is_peak else program.record()


@contextmanager
def _watching(peak: bool) -> Iterator[Watch]:
    from . import block  # the block hands its programs to its watchers

    seen = Watch(peak)
    block.WATCHERS.append(seen)
    try:
        yield seen
    finally:
        block.WATCHERS.remove(seen)


def watch(x: Any, parameters: Any) -> Any:
    """A context around `block.vjp`'s call: `.record()` after it (the values are the call's:
    the program says them)."""
    return _watching(peak=False)


def peak() -> Any:
    """A context around `block.vjp`'s call: `.record()` gives its peak's record after it."""
    return _watching(peak=True)
