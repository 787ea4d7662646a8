"""Remat policies in JAX: `jax.checkpoint_policies` for the vocabulary of
`implementations.policies`, shared by every JAX front. Imports jax only.

Every front passes the same policy function to its own checkpoint
(`nn.checkpoint(policy=...)`, `nnx.remat(policy=...)`,
`eqx.filter_checkpoint(policy=...)`, `hk.remat(policy=...)`,
`jax.checkpoint(policy=...)`), and tags the first layer's output h with
`checkpoint_name(h, "h")` (`tag`), so that `save_named` has a name to save.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.ad_checkpoint import checkpoint_name

from ...policies import SAVED_NAME, Policy

#: JAX has no memory-budget policy.
BUDGET_REASON = (
    "JAX has no memory-budget policy: a policy function decides per primitive, not by bytes"
)

#: How each policy is spelled in JAX (`checkpoint(..., policy=<this>)`).
SPELLINGS = {
    "save_dots": "jax.checkpoint_policies.dots_saveable",
    "save_named": f'checkpoint_name(h, "{SAVED_NAME}") + '
    f'jax.checkpoint_policies.save_only_these_names("{SAVED_NAME}")',
    "offload_dots": 'jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", '
    '"pinned_host")',
}


def declaration(none: str, full: str, policy_keyword: str) -> tuple[dict, dict]:
    """`(policies, inexpressible)` of a JAX front whose checkpoint is spelled `full` and
    takes `policy_keyword` (e.g. `"nn.checkpoint(policy=...)"`)."""
    policies = {"none": none, "full": full}
    for name, spelling in SPELLINGS.items():
        policies[name] = f"{policy_keyword} with policy={spelling}"
    return policies, {"budget": BUDGET_REASON}


def front(
    none: str, full: str, policy_keyword: str, *, twice: str, trained: str
) -> tuple[dict, dict, dict]:
    """`(policies, inexpressible, compositions)` of a JAX front: `declaration`'s, and the
    compositions of its checkpoint `full`: `once` is `full`, `twice` is it wrapped again, and
    `under_trainer` is a trainer's `jax.checkpoint(loss)` around `trained` (the model that
    runs `full`)."""
    policies, inexpressible = declaration(none, full, policy_keyword)
    compositions = {
        "once": full,
        "twice": twice,
        "under_trainer": f"jax.checkpoint(loss) around {trained}",
    }
    return policies, inexpressible, compositions


def tag(h: jax.Array) -> jax.Array:
    """The first layer's output, tagged for `save_named` (an identity otherwise)."""
    return checkpoint_name(h, SAVED_NAME)


def policy_function(policy: Policy) -> Callable[..., bool] | None:
    """The `policy=` argument of a JAX checkpoint for `policy`: None for `full`
    (save nothing but the inputs). `none` is no checkpoint at all; `budget` has none."""
    policies = jax.checkpoint_policies
    if policy.name == "full":
        return None
    if policy.name == "save_dots":
        return policies.dots_saveable
    if policy.name == "save_named":
        return policies.save_only_these_names(SAVED_NAME)
    if policy.name == "offload_dots":
        return policies.offload_dot_with_no_batch_dims("device", "pinned_host")
    raise ValueError(f"checkpoint={policy.label}: JAX has no policy function for it")
