"""The plain JAX port's own tests: what the cross-framework suite does not cover.

Expected values come from Flax linen (skipped where it is not installed),
never from the code under test. One shape, (D, F) = (6, 4), keeps compiles few.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from implementations import contract, jax_flax_init, load
from implementations import jax_checkpoint as jc
from implementations.contract import Params
from tests.helpers import remat_equations, same_bits

ROOT = Path(__file__).resolve().parents[1]
DIM, FEATURES = 6, 4
X = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)


@pytest.fixture(scope="module")
def port():
    return load("jax_checkpoint")


@pytest.fixture(scope="module")
def canonical():
    pytest.importorskip("flax")
    return load("flax_linen")


# ---------------------------------------------------------------------------
# The checkpoint is on the gradient path, and only where asked for
# ---------------------------------------------------------------------------


def test_gradient_of_the_exercise_holds_remat():
    grad = jax.grad(lambda x: jnp.sum(jc.nn_checkpoint_forward(3, x, FEATURES)))
    assert remat_equations(jax.make_jaxpr(grad)(jnp.asarray(X)).jaxpr)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_gradient_of_mlp_holds_remat_only_when_on(checkpoint):
    params = jc.init(jax.random.PRNGKey(0), DIM, FEATURES)
    grad = jax.grad(lambda p, x: jnp.sum(jc.mlp(p, x, checkpoint=checkpoint)), argnums=(0, 1))
    found = remat_equations(jax.make_jaxpr(grad)(params, jnp.asarray(X)).jaxpr)
    assert bool(found) is checkpoint


def test_the_block_is_wrapped_by_jax_checkpoint():
    # jax.checkpoint's wrapper keeps the function it wraps.
    assert jc.checkpointed_block.__wrapped__ is jc.block


# ---------------------------------------------------------------------------
# Converters and the shared init
# ---------------------------------------------------------------------------


@st.composite
def any_params(draw, max_side: int = 5) -> Params:
    dim, features = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    floats = hnp.from_dtype(np.dtype(np.float32))  # NaN, inf, -0 and subnormals too
    return Params(
        **{
            name: draw(hnp.arrays(np.float32, shape, elements=floats))
            for name, shape in contract.param_shapes(dim, features).items()
        }
    )


@settings(max_examples=25)
@given(any_params())
def test_converters_round_trip(p):
    tree = jc.params_to_tree(p)
    assert set(tree) == set(contract.PARAM_NAMES)
    assert tree["w1"].shape == (p.dim, p.features)  # the canonical layout: (in, out)
    back = jc.tree_to_params(jax.tree.map(jnp.asarray, tree))  # through jax arrays
    assert all(same_bits(getattr(back, n), getattr(p, n)) for n in contract.PARAM_NAMES)


def test_tree_to_params_checks_shapes():
    tree = jc.params_to_tree(Params(np.ones((3, 2)), np.ones(2), np.ones((2, 2)), np.ones(2)))
    with pytest.raises(ValueError, match="w2"):
        jc.tree_to_params({**tree, "w2": np.ones((2, 3))})


def test_the_init_is_shared_not_copied():
    import implementations.equinox_jax as ej  # skips nothing: equinox is a test dependency

    assert jc.flax_init is jax_flax_init.flax_init
    assert jc.JaxCheckpoint.init_params is jax_flax_init.init_params
    assert ej.EquinoxJax.init_params is jax_flax_init.init_params


def test_init_equals_flax_linen_bit_for_bit(port, canonical):
    for seed in (0, 1, 2**32 - 1, 2**32 + 5, 2**63 - 1):
        ours, flax = port.init_params(seed, DIM, FEATURES), canonical.init_params(seed, DIM, 4)
        for name in contract.PARAM_NAMES:
            assert same_bits(getattr(ours, name), getattr(flax, name)), (name, seed)


# ---------------------------------------------------------------------------
# The exercise function: jit, grad, vmap, caching
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def linen_forward():
    """Flax linen's own `nn_checkpoint_forward`: the expected values, or a skip."""
    return pytest.importorskip("implementations.flax_linen").nn_checkpoint_forward


def close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_jit_with_static_seed_and_features(linen_forward):
    fast = jax.jit(jc.nn_checkpoint_forward, static_argnums=(0, 2))
    y = fast(9, jnp.asarray(X), FEATURES)
    assert y.shape == (FEATURES,)
    assert y.dtype == jnp.float32
    close(y, linen_forward(9, X, FEATURES))
    with pytest.raises(TypeError, match="seed"):  # a traced seed cannot pick parameters
        jax.jit(jc.nn_checkpoint_forward, static_argnums=2)(9, jnp.asarray(X), FEATURES)


def test_grad_and_vmap_over_x(linen_forward):
    g = jnp.asarray([1.0, -2.0, 0.5, 3.0], jnp.float32)
    ours = jax.grad(lambda x: jc.nn_checkpoint_forward(2**40 + 9, x, FEATURES) @ g)
    flax = jax.grad(lambda x: linen_forward(2**40 + 9, x, FEATURES) @ g)
    close(ours(jnp.asarray(X)), flax(jnp.asarray(X)))
    xs = np.random.default_rng(3).standard_normal((5, DIM)).astype(np.float32)
    ys = jax.vmap(lambda x: jc.nn_checkpoint_forward(9, x, FEATURES))(jnp.asarray(xs))
    assert ys.shape == (5, FEATURES)
    for x, y in zip(xs, np.asarray(ys), strict=True):
        close(y, linen_forward(9, x, FEATURES))


def test_new_seeds_do_not_retrace():
    # One compiled function per F (and D): the seed is an argument, not a constant.
    x = jnp.asarray(X)
    jc.nn_checkpoint_forward(0, x, FEATURES)
    compiled = jc._exercise.compiled(FEATURES)._cache_size()
    for seed in (1, 2**33, 2**63 - 1, 7.0):
        jc.nn_checkpoint_forward(seed, x, float(FEATURES))  # features 4.0 is the int 4
    assert jc._exercise.compiled(FEATURES)._cache_size() == compiled


def test_x_left_unchanged():
    x = X.copy()
    jc.nn_checkpoint_forward(1, x, FEATURES)
    jax.grad(lambda v: jnp.sum(jc.nn_checkpoint_forward(1, v, FEATURES)))(x)
    assert same_bits(x, X)
    assert x.flags.writeable


# ---------------------------------------------------------------------------
# Isolation: no Flax, no Equinox
# ---------------------------------------------------------------------------

ISOLATED = textwrap.dedent(
    """
    import json, sys
    for name in ("flax", "equinox", "torch"):
        sys.modules[name] = None  # any import of it now raises ImportError

    import numpy as np
    from implementations import load

    port = load("jax_checkpoint")  # the registry path
    x = np.array(json.loads(sys.argv[1]), np.float32)
    y = port.nn_checkpoint_forward(2**40 + 5, x, 4)
    record = port.exercise_record(2**40 + 5, x, 4)
    leaked = sorted(
        m for m in sys.modules
        if m.split(".")[0] in ("flax", "equinox", "torch") and sys.modules[m] is not None
    )
    print(json.dumps({"y": np.asarray(y).tolist(), "regions": record.checkpoint_regions,
                      "leaked": leaked}))
    """
)


def test_runs_with_flax_and_equinox_unimportable(linen_forward):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", ISOLATED, json.dumps(X.tolist())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["leaked"] == []
    assert result["regions"] >= 1
    close(np.asarray(result["y"], np.float32), linen_forward(2**40 + 5, X, FEATURES))
