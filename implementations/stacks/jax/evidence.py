"""JAX's instrument for what a backward pass saves and recomputes. Imports jax only.

Every JAX port (Flax linen, Flax NNX, Equinox, plain JAX) reads its evidence
here, so all of them are measured the same way:

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.extend import core

from ...contract import BackwardRecord, SavedTensor

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
    }
)

INSTRUMENT = "jax.vjp residuals traced through the jaxpr; backward jaxpr ops; remat equations"


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
    saved = saved_tensors(fn, args, origins)
    backward = backward_jaxpr(fn, args, cotangent)
    return BackwardRecord(
        instrument=INSTRUMENT,
        saved=saved,
        recomputed=dict(recomputed_ops(backward)),
        checkpoint_regions=count_remat(backward.jaxpr),
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
    """The residuals `jax.vjp(fn, *args)` keeps, each with its origin."""
    flat_args, in_tree = jax.tree_util.tree_flatten(tuple(args))
    leaf_origins = [
        origin
        for arg, origin in zip(args, origins, strict=True)
        for _ in jax.tree_util.tree_leaves(arg)
    ]
    leaf_names = [
        jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tuple(args))
    ]

    def forward_and_residuals(*leaves):
        _, pullback = jax.vjp(fn, *jax.tree_util.tree_unflatten(in_tree, leaves))
        return jax.tree_util.tree_leaves(pullback)

    closed = jax.make_jaxpr(forward_and_residuals)(*flat_args)
    jaxpr = closed.jaxpr
    from_input = depends_on(jaxpr, [origin == "input" for origin in leaf_origins])
    from_any = depends_on(jaxpr, [True] * len(leaf_origins))

    saved, seen = [], set()
    for var in jaxpr.outvars:
        if isinstance(var, core.Literal) or var in seen:
            continue
        seen.add(var)
        shape, dtype = tuple(var.aval.shape), str(var.aval.dtype)
        if var in jaxpr.invars:
            index = jaxpr.invars.index(var)
            saved.append(
                SavedTensor(shape, dtype, leaf_origins[index], f"argument {leaf_names[index]}")
            )
        elif from_input.get(var, False):
            saved.append(
                SavedTensor(shape, dtype, "activation", f"output of {_producer(jaxpr, var)}")
            )
        else:
            producer = _producer(jaxpr, var)
            if from_any.get(var, False):
                saved.append(SavedTensor(shape, dtype, "parameter", f"from parameters: {producer}"))
            else:
                saved.append(SavedTensor(shape, dtype, "constant", f"output of {producer}"))
    return tuple(saved)


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
