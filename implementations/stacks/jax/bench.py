"""The JAX stack: L blocks `Dense -> relu -> Dense` as plain functions. Imports jax and numpy.

Flax linen `nn.checkpoint`, Flax NNX `nnx.remat` and Equinox
`eqx.filter_checkpoint` all lower to `jax.checkpoint` (a `remat2` equation
in the jaxpr), so the stack is written against `jax.checkpoint` directly:

- `none`: the blocks as they are;
- `full`: `jax.checkpoint(block)`, the default policy (save nothing
  inside the block) and `prevent_cse=True`, as the frameworks' wrappers do;
- `save-mm`: `jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)`.

Each runs unrolled (a Python loop: L copies of the block in one XLA program)
and under `lax.scan` (one block body, looped; the parameters stacked).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from implementations.bench_case import MODES, Data, Static
from implementations.contract import SavedTensor, installed_versions
from implementations.policies import Policy
from implementations.stacks.hlo import hlo_dot_count
from implementations.stacks.jax import policies as jax_policies
from implementations.stacks.jax import saved_tensors
from implementations.stacks.lazy import schedule_exports

FRAMEWORK = "jax"
VARIANTS = ("unrolled", "scan")


def versions() -> dict[str, str]:
    """The installed jax and jaxlib versions."""
    return installed_versions(("jax", "jaxlib"))


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def block(params: Sequence[jax.Array], x: jax.Array) -> jax.Array:  # (B, F) -> (B, F)
    w1, b1, w2, b2 = params  # kernels (F, F) as (in, out), biases (F,)
    # Biases as (1, F): explicit broadcasting, which strict rank promotion allows.
    return jax.nn.relu(x @ w1 + b1[None, :]) @ w2 + b2[None, :]


def wrap(mode: str) -> Callable:
    """The block as the mode runs it."""
    if mode == "none":
        return block
    if mode == "full":
        return jax.checkpoint(block)
    if mode == "save-mm":
        return jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")


def stack_fn(variant: str, mode: str) -> Callable:
    """`stack(params, x)`: the L blocks, for the variant's parameter layout.

    `unrolled` takes a list of per-block tuples; `scan` one tuple of arrays
    stacked along a leading L axis.
    """
    run = wrap(mode)
    if variant == "unrolled":

        def stack(params, x):  # [(w1, b1, w2, b2)] * L, (B, F) -> (B, F)
            for p in params:
                x = run(p, x)
            return x

    elif variant == "scan":

        def stack(params, x):  # (w1 (L, F, F), b1 (L, F), ...), (B, F) -> (B, F)
            y, _ = jax.lax.scan(lambda h, p: (run(p, h), None), x, params)
            return y

    else:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    return stack


def step_fn(stack: Callable) -> Callable:
    """`step(params, x, c)`: the loss `sum(stack(params, x) * c)` and the parameters' gradient."""

    def step(params, x, cotangent):
        y, pull_back = jax.vjp(lambda p: stack(p, x), params)
        # Return the loss, as a training step would: without it XLA would drop
        # the last block's second matmul, whose output no gradient needs.
        return jnp.sum(y * cotangent), pull_back(cotangent)[0]

    return step


class JaxCase:
    """One JAX configuration at one depth, on the given data.

    **Arguments:**

    - `variant`, `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        self.variant, self.mode = variant, mode
        self.stack = stack_fn(variant, mode)
        if variant == "unrolled":
            params = [tuple(jnp.asarray(a) for a in b) for b in data.blocks]
        else:
            params = tuple(jnp.stack([b[i] for b in data.blocks]) for i in range(4))  # (L, ...)
        self.args = (params, jnp.asarray(data.x), jnp.asarray(data.cotangent))
        self._compiled = None

    def compiled(self):
        """The compiled step (compiled once)."""
        if self._compiled is None:
            self._compiled = jax.jit(step_fn(self.stack)).lower(*self.args).compile()
        return self._compiled

    def residuals(self) -> tuple[SavedTensor, ...]:
        """What `jax.vjp` of the stack keeps, parameters and x marked as such."""
        params, x, _ = self.args
        return saved_tensors(self.stack, (params, x), ("parameter", "input"))

    def measure(self) -> Static:
        compiled = self.compiled()
        analysis = compiled.memory_analysis()
        temp = None if analysis is None else int(analysis.temp_size_in_bytes)
        return Static(self.residuals(), temp_bytes=temp, matmuls=hlo_dot_count(compiled.as_text()))

    def step(self) -> None:
        jax.block_until_ready(self.compiled()(*self.args))


def build(variant: str, mode: str, data: Data) -> JaxCase:
    """The case for one configuration (nothing is compiled yet)."""
    return JaxCase(variant, mode, data)


# ---------------------------------------------------------------------------
# bench --policies
# ---------------------------------------------------------------------------

#: The policies `bench --policies` runs here, and those JAX cannot express.
POLICIES = ("none", "full", "save_dots", "save_named", "offload_dots")
NOT_EXPRESSIBLE = {"budget": "JAX has no memory-budget policy"}


def policy_case(policy: str, data: Data) -> JaxCase:
    """The stack under `lax.scan` (where XLA:CPU keeps the remat), each block under
    `jax.checkpoint(block, policy=...)` with the JAX stack's policy functions, h tagged by
    `checkpoint_name` for save_named."""

    def tagged_block(params, x):  # (B, F) -> (B, F), h tagged for save_named
        w1, b1, w2, b2 = params
        h = jax_policies.tag(x @ w1 + b1[None, :])
        return jax.nn.relu(h) @ w2 + b2[None, :]

    parsed = Policy.parse(policy)
    run = tagged_block
    if parsed.name != "none":
        run = jax.checkpoint(tagged_block, policy=jax_policies.policy_function(parsed))

    def stack(params, x):  # (w1 (L, F, F), ...), (B, F) -> (B, F)
        y, _ = jax.lax.scan(lambda h, p: (run(p, h), None), x, params)
        return y

    case = JaxCase("scan", "none", data)
    case.stack, case.mode = stack, policy
    return case


# bench --schedules: the stack with its regions where a schedule places them (schedules.py,
# which imports this module: its names are looked up there when first asked for)
__getattr__, __dir__ = schedule_exports(__name__, "canonical_values")
