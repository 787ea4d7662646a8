"""What JAX's instrument (the residuals of `jax.vjp`) shows under each remat policy.

The five JAX front ends pass `policy=` through and show the same residuals.
JAX saves d1 (the dot's output, before the bias) under `save_dots`, and keeps
relu's boolean mask next to a; constant residuals (relu's zeros) hold no data
and are never listed.
"""

from implementations.expectations import Expectations, expect

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
)
