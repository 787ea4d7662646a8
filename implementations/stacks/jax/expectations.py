"""What JAX's instrument (the residuals of `jax.vjp`) shows under each remat policy.

The five JAX front ends pass `policy=` through and show the same residuals.
JAX saves d1 (the dot's output, before the bias) under `save_dots`, and keeps
relu's boolean mask next to a; constant residuals (relu's zeros) hold no data
and are never listed.
"""

from implementations.composition import composed
from implementations.expectations import Expectations, expect
from implementations.stateful import DEFAULT_VARIANT, StateDeclaration

#: What XLA:CPU's compiled program runs, in every case alike (tests/jax/test_jax_composition.py).
_COMPILED = (
    "compiled (XLA:CPU), the port's vjp runs 3 dots in every case, as with no remat: x @ W1 "
    "once, the dead forward dots dropped (DCE: vjp returns no y); a step returning y runs 4, "
    "the recompute merged into the forward's x @ W1 (CSE, once XLA's "
    "OptimizationBarrierExpander drops remat's opt-barrier)"
)

#: Why every JAX front replays its dropout mask (`implementations.stateful`, Seeding).
_REPLAYS = (
    "; the key is a value: jax.checkpoint's recompute runs the region's random ops on the same "
    "key, so it draws the forward's mask, and no global state moves"
)


def _replays(spelling: str, seeding: str, **kwargs) -> dict[str, StateDeclaration]:
    """One API variant that replays, keeps the stream and updates once, as the canonical."""
    return {DEFAULT_VARIANT: StateDeclaration(spelling, seeding + _REPLAYS, **kwargs)}


EXPECTATIONS = Expectations(
    families={
        "jax": {
            "none": expect("x a mask", 4, why="relu's VJP keeps its boolean mask next to a"),
            "full": expect("x", 5, why="recomputes dot, add, max: one matmul more"),
            "save_dots": expect("x d1", 4, why="dots_saveable keeps d1 = x @ W1, before the bias"),
            "save_named": expect("x h", 4, why='checkpoint_name(h, "h") + save_only_these_names'),
            "offload_dots": expect("x d1", 4, host="d1", why="as save_dots, d1 in f32<host>"),
        },
    },
    # The block with variables and RNGs (property (l)): replayed, the stream kept, one update.
    stateful={
        "flax_linen": _replays(
            "nn.checkpoint(Block)", "rngs={'dropout': fold_in(PRNGKey(seed), 1)} at apply"
        ),
        "flax_nnx": _replays(
            "nnx.remat(Block.plain)",
            "nnx.Rngs(dropout=fold_in(PRNGKey(seed), 1)), kept by nnx.Dropout as a key and a "
            "counter that each draw advances (the stream: one draw per step, on and off)",
        ),
        "equinox_jax": _replays(
            "eqx.filter_checkpoint(vmap(Block)), BatchNorm mode='batch'",
            "the key fold_in(PRNGKey(seed), 1), split once per step, then into one key per "
            "row (eqx.nn.Dropout sees one example under vmap)",
            counters=("batch_counter",),
        ),
        "haiku": _replays(
            "hk.remat(block)",
            "hk.next_rng_key() of the apply's key fold_in(PRNGKey(seed), 1), split once per step",
            var_start=0.0,
            counters=("counter",),
        ),
        "jax_checkpoint": _replays(
            "jax.checkpoint(block)",
            "the key fold_in(PRNGKey(seed), 1), split once per step: the step draws from the "
            "second half and hands the first back as the next step's key",
        ),
    },
    # Measured on the five JAX fronts alike, in the grad jaxpr (the record's instrument).
    compositions={
        "jax": {
            "once": composed(
                "x",
                2,
                1,
                why="jaxpr: remat_partial_eval (jax/_src/ad_checkpoint.py) keeps the region's "
                "inputs and DCEs the staged recompute to what the VJP reads: x @ W1 reruns "
                f"(relu's mask), a @ W2 does not; {_COMPILED}",
            ),
            "twice": composed(
                "x",
                2,
                1,
                why="jaxpr: the inner full-remat region hands the outer no residual but its "
                "inputs, so remat_partial_eval's pe.dce_jaxpr drops the outer's recompute and "
                f"x @ W1 reruns once, as once; {_COMPILED}",
            ),
            "under_trainer": composed(
                "x",
                2,
                1,
                why="jaxpr: the trainer's jax.checkpoint over the model's call nests as twice "
                f"does (remat_partial_eval, pe.dce_jaxpr): x @ W1 reruns once; {_COMPILED}",
            ),
        },
    },
)
