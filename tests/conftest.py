"""Test settings: strict JAX checks and the Hypothesis profile."""

import importlib.util

from conformance import profiles

pytest_plugins = ["conformance.pytest_plugin"]

profiles.load()

if importlib.util.find_spec("jax") is not None:
    import jax

    # Implicit rank promotion hides shape bugs, e.g. a (1, F) output added
    # to an (F,) bias; make it an error in the ports' own code.
    jax.config.update("jax_numpy_rank_promotion", "raise")
    jax.config.update("jax_numpy_dtype_promotion", "strict")
