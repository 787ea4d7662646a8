"""The Equinox port's own tests: what the cross-framework suite does not cover.

Expected values come from Flax (skipped where it is not installed) or from a
float64 numpy reference, never from the code under test. The float32 error
bounds follow DESIGN.md: a dot product of n terms in any order is off by at
most `gamma_n * sum |terms|`, propagated through the second layer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.tolerance import analyse_forward, analyse_vjp, ulp_distance
from implementations import contract, jax_flax_init, load
from implementations import equinox_jax as ej
from implementations.contract import Params
from tests import reference as reference_mlp
from tests.helpers import remat_equations, same_bits

ROOT = Path(__file__).resolve().parents[1]
HAS_FLAX = importlib.util.find_spec("flax") is not None

EDGE_SEEDS = [0, 1, 42, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 7, 2**40, 2**40 + 12345,
              2**62 + 3, 2**63 - 2, 2**63 - 1]  # fmt: skip
SHAPES = [(1, 1), (6, 4), (20, 3)]  # (6, 4) is also the shape of the smaller tests


@pytest.fixture(scope="module")
def port():
    return load("equinox_jax")


@pytest.fixture(scope="module")
def canonical():
    pytest.importorskip("flax")
    return load("flax_linen")


# ---------------------------------------------------------------------------
# Helpers: float32 ulps, a float64 reference, error bounds
# ---------------------------------------------------------------------------


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance between two float32 arrays in units in the last place."""
    assert np.shape(a) == np.shape(b)
    return int(np.max(ulp_distance(a, b), initial=0))


def reference(p: Params, x: np.ndarray, g: np.ndarray) -> tuple[dict, dict, tuple]:
    """Float64 output and VJP, a bound on one float32 port's error for each, and `(h, e_h)`.

    The bounds are the suite's error analysis (`conformance.tolerance`); they
    hold where no pre-activation is within its error of 0 (see `off_kink`).
    """
    forward = analyse_forward(p, x)
    value = {"y": reference_mlp.forward(p, x), **reference_mlp.vjp(p, x, g)}
    # same_side bounds two float32 implementations apart: 2e; one is within e.
    bound = {"y": forward.e2} | {k: v / 2 for k, v in analyse_vjp(p, x, g).same_side.items()}
    return value, bound, (forward.h, forward.e1)


def off_kink(h: np.ndarray, e_h: np.ndarray) -> bool:
    """No pre-activation so close to 0 that a float32 port may land on the other side."""
    return bool(np.all(np.abs(h) > 2 * e_h))


def assert_within(name: str, got, want, bound) -> None:
    got = np.asarray(got, np.float64)
    excess = np.abs(got - want) - bound
    worst = int(np.argmax(excess))
    assert excess.flat[worst] <= 0, (
        f"equinox_jax {name}: element {np.unravel_index(worst, excess.shape)} is "
        f"{got.flat[worst]!r}, reference {want.flat[worst]!r}, bound {bound.flat[worst]:.3g}"
    )


def data(dim: int, features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(dim).astype(np.float32)
    return x, rng.standard_normal(features).astype(np.float32)


# ---------------------------------------------------------------------------
# The init reproduces Flax's
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dim", "features"), SHAPES)
def test_init_matches_flax_within_2_ulp(port, canonical, dim, features):
    seeds = [*EDGE_SEEDS, *np.random.default_rng(dim).integers(0, 2**63 - 1, 4).tolist()]
    for seed in seeds:
        ours = port.init_params(seed, dim, features)
        flax = canonical.init_params(seed, dim, features)
        for name in contract.PARAM_NAMES:
            got, want = getattr(ours, name), getattr(flax, name)
            assert got.dtype == want.dtype == np.float32
            assert ulps(got, want) <= 2, f"{name} at seed {seed}, D={dim}, F={features}"


def test_init_follows_prngkey_seed_semantics(port):
    # PRNGKey keeps the low 32 bits of a seed in x32 mode; Flax inherits that.
    base = port.init_params(12345, 6, 4)
    for same in (12345 + 2**32, 12345 + 2**40, 12345.0, np.int64(12345), jnp.asarray(12345)):
        assert np.array_equal(port.init_params(same, 6, 4).w1, base.w1), repr(same)
    assert not np.array_equal(port.init_params(12346, 6, 4).w1, base.w1)


@pytest.mark.parametrize("seed", EDGE_SEEDS)
def test_key_made_inside_jit_is_prngkey(seed):
    # The port builds PRNGKey inside its compiled function from np.int64(seed).
    inside = jax.jit(jax.random.PRNGKey)(jax_flax_init.seed_array(seed))
    assert np.array_equal(np.asarray(inside), np.asarray(jax.random.PRNGKey(seed)))


def test_init_shape_and_statistics_without_flax(port):
    # Independent of Flax: zero biases, kernels inside +-2 stddev with variance
    # 1 / fan_in, pooled over many seeds at one (already compiled) shape.
    draws = [port.init_params(seed, 6, 4) for seed in range(0, 400 * 2**20, 2**20)]
    assert not any(p.b1.any() or p.b2.any() for p in draws)
    for name, fan_in in (("w1", 6), ("w2", 4)):
        pooled = np.stack([getattr(p, name) for p in draws]).astype(np.float64)
        stddev = np.sqrt(1 / fan_in) / 0.87962566103423978
        assert np.abs(pooled).max() < 2 * stddev * (1 + 1e-6)
        assert np.mean(pooled) == pytest.approx(0, abs=0.05 * stddev)
        assert np.var(pooled) == pytest.approx(1 / fan_in, rel=0.05)


# ---------------------------------------------------------------------------
# Converters: canonical (in, out) <-> Equinox (out, in)
# ---------------------------------------------------------------------------


@st.composite
def canonical_params(draw, max_side: int = 6) -> Params:
    dim = draw(st.integers(1, max_side))
    features = draw(st.integers(1, max_side))
    # Any float32 bits (NaN, inf, subnormals, -0) must survive the round trip.
    floats = hnp.from_dtype(np.dtype(np.float32))
    arrays = {
        name: draw(hnp.arrays(np.float32, shape, elements=floats))
        for name, shape in contract.param_shapes(dim, features).items()
    }
    return Params(**arrays)


@settings(max_examples=20)
@given(canonical_params(), st.booleans())
def test_converters_round_trip(p, checkpoint):
    model = ej.params_to_model(p, checkpoint=checkpoint)
    # Equinox's layout: weight (out, in), the transpose of the kernel.
    assert isinstance(model.linear1, eqx.nn.Linear)
    assert isinstance(model.linear2, eqx.nn.Linear)
    assert (model.linear1.in_features, model.linear1.out_features) == (p.dim, p.features)
    assert same_bits(model.linear1.weight, p.w1.T)
    assert same_bits(model.linear2.weight, p.w2.T)
    assert same_bits(model.linear1.bias, p.b1)
    assert same_bits(model.linear2.bias, p.b2)
    assert model.checkpoint is checkpoint
    # canonical -> model -> canonical
    back = ej.model_to_params(model)
    assert all(same_bits(getattr(back, n), getattr(p, n)) for n in contract.PARAM_NAMES)
    # model -> canonical -> model
    again = ej.params_to_model(back, checkpoint=checkpoint)
    assert jax.tree_util.tree_structure(again) == jax.tree_util.tree_structure(model)
    assert all(map(same_bits, jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(model)))


def test_converter_asserts_shapes():
    w1, b1, w2, b2 = np.ones((3, 4)), np.ones(4), np.ones((4, 4)), np.ones(4)
    ej.from_canonical(w1, b1, w2, b2)
    with pytest.raises(AssertionError):
        ej.from_canonical(w1, b1, np.ones((4, 5)), b2)
    with pytest.raises(AssertionError):
        ej.from_canonical(w1, np.ones(3), w2, b2)


def test_with_checkpoint_keeps_the_arrays():
    model = ej.params_to_model(Params(np.ones((2, 3)), np.ones(3), np.ones((3, 3)), np.ones(3)))
    plain = ej.with_checkpoint(model, False)
    assert model.checkpoint
    assert not plain.checkpoint
    assert all(
        a is b
        for a, b in zip(
            jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(plain), strict=True
        )
    )


# ---------------------------------------------------------------------------
# Numerics: against a float64 reference and against Flax
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("checkpoint", [True, False])
@pytest.mark.parametrize(("dim", "features"), SHAPES)
def test_forward_and_vjp_match_float64_reference(port, dim, features, checkpoint):
    checked = 0
    for seed in range(4):
        p = port.init_params(100 + seed, dim, features)
        x, g = data(dim, features, seed)
        value, bound, (h, e_h) = reference(p, x, g)
        assert_within("forward", port.forward(p, x, checkpoint=checkpoint), value["y"], bound["y"])
        if not off_kink(h, e_h):
            continue
        checked += 1
        for name, got in port.vjp(p, x, g, checkpoint=checkpoint).as_dict().items():
            assert_within(f"d{name}", got, value[name], bound[name])
    assert checked >= 2


@pytest.mark.parametrize(("dim", "features"), SHAPES)
def test_outputs_match_canonical(port, canonical, dim, features):
    # Same params (Flax's), both ports within the float64 reference's bound,
    # so they are within twice it of each other.
    for seed in range(3):
        p = canonical.init_params(seed, dim, features)
        x, g = data(dim, features, 10 + seed)
        value, bound, (h, e_h) = reference(p, x, g)
        ours, flax = port.forward(p, x), canonical.forward(p, x)
        assert_within("forward vs flax_linen", ours, np.asarray(flax, np.float64), 2 * bound["y"])
        y = port.nn_checkpoint_forward(seed, x, features)
        assert_within("nn_checkpoint_forward", y, value["y"], bound["y"])
        if off_kink(h, e_h):
            ours, flax = port.vjp(p, x, g).as_dict(), canonical.vjp(p, x, g).as_dict()
            for name in ours:
                assert_within(f"d{name} vs flax_linen", ours[name], flax[name], 2 * bound[name])


@settings(max_examples=15)
@given(
    hnp.arrays(np.float32, 6, elements=st.floats(-1e3, 1e3, width=32)),
    hnp.arrays(np.float32, 4, elements=st.floats(-1e3, 1e3, width=32)),
    st.integers(0, 2**63 - 1),
)
def test_checkpoint_on_equals_off(x, g, seed):
    # The same compiled ops in both paths: XLA:CPU gives identical bits
    # (measured over 300 random shapes), so ask for equality, not closeness.
    port = load("equinox_jax")
    p = port.init_params(seed, 6, 4)
    assert np.array_equal(port.forward(p, x, checkpoint=True), port.forward(p, x, checkpoint=False))
    on = port.vjp(p, x, g, checkpoint=True).as_dict()
    off = port.vjp(p, x, g, checkpoint=False).as_dict()
    for name in on:
        assert np.array_equal(on[name], off[name]), f"d{name} differs with checkpoint on/off"


# ---------------------------------------------------------------------------
# Evidence of checkpointing
# ---------------------------------------------------------------------------


def test_gradient_jaxpr_holds_remat():
    x = jnp.arange(6.0, dtype=jnp.float32)
    grad = jax.grad(lambda x: jnp.sum(ej.nn_checkpoint_forward(3, x, 4)))
    assert remat_equations(jax.make_jaxpr(grad)(x).jaxpr)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_model_gradient_remat_only_when_on(checkpoint):
    arrays = (np.ones((4, 5)), np.ones(5), np.ones((5, 5)), np.ones(5))
    model = ej.from_canonical(*arrays, checkpoint=checkpoint)
    grad = jax.grad(lambda m, x: jnp.sum(m(x)))
    found = remat_equations(jax.make_jaxpr(grad)(model, jnp.ones(4, jnp.float32)).jaxpr)
    assert bool(found) is checkpoint


@pytest.mark.parametrize("checkpoint", [True, False])
def test_backward_record(port, checkpoint):
    p = port.init_params(1, 6, 4)
    record = port.backward_record(p, data(6, 4, 0)[0], checkpoint=checkpoint)
    if checkpoint:
        assert record.checkpoint_regions >= 1
        assert record.recomputed
        assert not record.saved_by_origin("activation")
    else:
        assert record.checkpoint_regions == 0
        assert not record.recomputed
        assert record.saved_by_origin("activation")


def test_exercise_record(port):
    record = port.exercise_record(2**40 + 1, data(6, 4, 0)[0], 4)
    assert record.checkpoint_regions >= 1
    assert record.recomputed
    assert not record.saved_by_origin("activation")


# ---------------------------------------------------------------------------
# The exercise function: jit, grad, vmap, caching, inputs
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flax_params():
    """Flax's params for seed 9, D=6, F=4 (the expected values' source), or a skip."""
    pytest.importorskip("flax")
    return load("flax_linen").init_params(9, 6, 4)


def test_jit_with_static_seed_and_features(flax_params):
    x, _ = data(6, 4, 1)
    value, bound, _ = reference(flax_params, x, np.zeros(4, np.float32))
    fast = jax.jit(ej.nn_checkpoint_forward, static_argnums=(0, 2))
    y = fast(9, jnp.asarray(x), 4)
    assert isinstance(y, jax.Array)
    assert y.shape == (4,)
    assert y.dtype == jnp.float32
    assert_within("jit", y, value["y"], bound["y"])
    with pytest.raises(TypeError, match="seed"):
        jax.jit(ej.nn_checkpoint_forward, static_argnums=2)(9, jnp.asarray(x), 4)


def test_grad_wrt_x(flax_params):
    x, g = data(6, 4, 2)
    value, bound, (h, e_h) = reference(flax_params, x, g)
    assert off_kink(h, e_h)
    dx = jax.grad(lambda x: ej.nn_checkpoint_forward(9, x, 4) @ jnp.asarray(g))(jnp.asarray(x))
    assert_within("grad x", dx, value["x"], bound["x"])


def test_vmap_over_x(flax_params):
    xs = np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32)
    ys = jax.vmap(lambda x: ej.nn_checkpoint_forward(9, x, 4))(jnp.asarray(xs))
    assert ys.shape == (5, 4)
    for x, y in zip(xs, np.asarray(ys), strict=True):
        value, bound, _ = reference(flax_params, x, np.zeros(4, np.float32))
        assert_within("vmap row", y, value["y"], bound["y"])


def test_new_seeds_do_not_retrace():
    # One compiled function per F (and D): the seed is an argument, not a constant.
    x = jnp.ones(6, jnp.float32)
    ej.nn_checkpoint_forward(0, x, 4)
    compiled = ej._exercise.compiled(4)._cache_size()
    functions = ej._exercise.compiled.cache_info().currsize
    for seed in (1, 2**33, 2**40 + 1, 2**63 - 1, 7.0):
        ej.nn_checkpoint_forward(seed, x, 4.0)  # features 4.0 is the int 4
    assert ej._exercise.compiled(4)._cache_size() == compiled
    assert ej._exercise.compiled.cache_info().currsize == functions


def test_scalar_forms_and_dtypes():
    x = np.array([0.5, -1.0, 2.0, 0.0, 1.0, -3.0], np.float32)
    base = ej.nn_checkpoint_forward(3, x, 4)
    assert isinstance(base, jax.Array)
    base = np.asarray(base)
    for seed, features in [
        (3.0, 4.0),
        (np.int64(3), np.float32(4)),
        (jnp.asarray(3), jnp.asarray(4.0)),
    ]:
        assert np.array_equal(np.asarray(ej.nn_checkpoint_forward(seed, x, features)), base)
    as_ints = ej.nn_checkpoint_forward(3, np.array([1, -2, 3, 0, 1, 5], np.int32), 4)
    assert as_ints.dtype == jnp.float32
    assert as_ints.shape == (4,)
    assert np.array_equal(
        np.asarray(as_ints),
        np.asarray(ej.nn_checkpoint_forward(3, [1.0, -2.0, 3.0, 0.0, 1.0, 5.0], 4)),
    )


def test_x_left_unchanged():
    x = np.array([0.25, -3.0, 1.5, 0.0, 2.0, -1.0], np.float32)
    before = x.copy()
    ej.nn_checkpoint_forward(1, x, 4)
    jax.grad(lambda v: jnp.sum(ej.nn_checkpoint_forward(1, v, 4)))(x)
    assert np.array_equal(x, before)
    assert x.flags.writeable


@pytest.mark.parametrize("native", [np.asarray, jnp.asarray], ids=["numpy", "jax"])
@pytest.mark.parametrize("bad", contract.BAD_INPUTS, ids=lambda bad: bad.label)
def test_bad_inputs_raise_the_contract_error(bad, native):
    x = bad.x(native)
    with pytest.raises(bad.error) as caught:
        ej.nn_checkpoint_forward(bad.seed, x, bad.features)
    assert re.search(rf"\b{bad.argument}\b", str(caught.value)), str(caught.value)


# ---------------------------------------------------------------------------
# Isolation: the port never imports flax
# ---------------------------------------------------------------------------

ISOLATED = textwrap.dedent(
    """
    import json, sys
    sys.modules["flax"] = None  # any `import flax` now raises ImportError

    import jax.numpy as jnp
    import numpy as np
    from implementations import load
    from implementations.equinox_jax import nn_checkpoint_forward

    assert type(load("equinox_jax")).__name__ == "EquinoxJax"  # the registry path, too
    x = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)
    y = nn_checkpoint_forward(2**40 + 5, jnp.asarray(x), 4)
    assert sys.modules["flax"] is None
    leaked = [m for m in sys.modules if m.split(".")[0] == "flax" and sys.modules[m] is not None]
    print(json.dumps({"y": np.asarray(y).tolist(), "leaked": leaked}))
    """
)


def test_runs_with_flax_unimportable():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", ISOLATED],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["leaked"] == []
    if HAS_FLAX:
        flax = load("flax_linen")
        p = flax.init_params(2**40 + 5, 6, 4)
        x = np.array([0.5, -1.25, 2.0, 0.0, 3.0, -0.5], np.float32)
        value, bound, _ = reference(p, x, np.zeros(4, np.float32))
        assert_within(
            "isolated forward", np.asarray(result["y"], np.float32), value["y"], bound["y"]
        )
