"""The JAX fronts under composition, as measured (jax 0.10.2, flax 0.12.8, equinox 0.13.8,
dm-haiku 0.0.17): each front's region wrapped twice with its own API, or under a trainer's
`jax.checkpoint` over the model's call, keeps x and reruns x @ W1 once in the grad jaxpr, as one
region does (remat_partial_eval DCEs the outer region's recompute, which the inner full-remat
region hands no residual). What XLA:CPU compiles runs x @ W1 once in every case, none included.
The rows are written out here by hand, not read from the stack's expectations."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import implementations
from conformance.checking.checks import ConformanceError
from conformance.checking.properties import k_composition as records
from conformance.checking.properties.k_composition import check_composition, prepare_composition
from implementations.composition import CASES, NESTED, Nesting
from implementations.policies import NONE
from implementations.stacks.hlo import hlo_dot_count
from tests.support import reference
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FRONTS = ("flax_linen", "equinox_jax", "flax_nnx", "jax_checkpoint", "haiku")
X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
COTANGENT = np.linspace(-1, 1, 4).astype(np.float32)
# The MLP's forward matmuls are x @ W1 and a @ W2; its gradient's, without remat, dW2, da, dW1
# and dx: 4. Each case keeps x alone (3 float32: 12 bytes), runs both forward matmuls in the
# forward pass, and x @ W1 once again in the backward (relu's mask needs it; a @ W2 is read by
# nothing the gradient needs).
ROW = (["x"], 12, 2, 1)
REGIONS = {"once": 1, "twice": 2, "under_trainer": 2}


def _row(port, case):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    reruns = records.rerun_matmuls(record, plain)
    return sorted(record.saved_roles), record.saved_bytes, record.forward_matmuls, reruns


@pytest.mark.parametrize("front", FRONTS)
def test_every_front_declares_the_three_cases_with_its_own_api(front):
    port = implementations.load(front)
    assert set(port.compositions) == set(CASES)
    assert port.not_composable == {}
    assert records.not_expressible(port) is None
    api = port.checkpoint_api.split("(")[0]
    assert port.compositions["twice"].count(api) == 2, port.compositions["twice"]
    assert port.compositions["under_trainer"].startswith("jax.checkpoint(loss)")


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("case", CASES)
def test_each_case_keeps_x_and_reruns_the_first_matmul_once(front, case):
    port = implementations.load(front)
    assert _row(port, case) == ROW
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    assert record.checkpoint_regions == REGIONS[case]  # the inner region is there, nested
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)
    assert records.check_record(port, case, record, plain)["rerun_matmuls"] == 1


@pytest.mark.parametrize("front", FRONTS)
def test_the_values_do_not_change_under_composition(front):
    port = implementations.load(front)
    output = port.forward(PARAMS, X, checkpoint=True)
    once = port.vjp(PARAMS, X, COTANGENT, checkpoint=True).as_dict()
    for case in NESTED:
        np.testing.assert_array_equal(port.forward(PARAMS, X, checkpoint=Nesting(case)), output)
        grads = port.vjp(PARAMS, X, COTANGENT, checkpoint=Nesting(case)).as_dict()
        for name, value in grads.items():
            np.testing.assert_array_equal(value, once[name])


def test_the_canonical_port_meets_its_own_composition_declaration():
    # The run reports the canonical's (k) as the reference: its records are checked here.
    canonical = implementations.load("flax_linen")
    case = SimpleNamespace(params=PARAMS, x=X, cotangent=COTANGENT)
    worst = check_composition(canonical, prepare_composition(canonical, case), case)
    assert worst == 0.0  # its own values, composed: the same bits


def _compiled_dots(port, checkpoint, *, with_output: bool) -> int:
    """Dot ops in XLA's optimized HLO: of the port's own compiled vjp (the values' program), or
    of a step that returns y as well (as a training loop returns its loss)."""
    arrays = tuple(PARAMS.as_dict().values())
    resolved = port.resolved(checkpoint)
    if not with_output:
        lowered = port.compiled.vjp.lower(arrays, X, COTANGENT, checkpoint=resolved)
    else:

        def step(arrays, x):
            run, args = port.differentiable(arrays, x, checkpoint)
            out, pull_back = jax.vjp(run, *args)
            return out, pull_back(jnp.asarray(COTANGENT))

        lowered = jax.jit(step).lower(arrays, X)
    return hlo_dot_count(lowered.compile().as_text())


@pytest.mark.parametrize("front", FRONTS)
def test_the_compiled_program_runs_the_first_matmul_once_in_every_case(front):
    # vjp: x @ W1, da, dx (dW1 and dW2 are outer products, compiled as multiplies; a @ W2 is
    # dead, vjp returns no y; under remat the forward's x @ W1 is dead, the recompute's runs).
    # With y returned, a @ W2 too, and the recompute is merged into the forward's x @ W1 (CSE).
    port = implementations.load(front)
    for checkpoint in (NONE, *(Nesting(case) for case in CASES)):
        assert _compiled_dots(port, checkpoint, with_output=False) == 3, checkpoint
        assert _compiled_dots(port, checkpoint, with_output=True) == 4, checkpoint


def test_jax_spmd_says_why_it_does_not_compose():
    # Its own process: the port forces host devices before jax is imported.
    code = (
        "import json; from implementations.stacks.jax.jax_spmd import JaxSpmd; "
        "from conformance.checking.properties.k_composition import not_expressible; "
        "print(json.dumps([JaxSpmd.compositions, JaxSpmd.not_composable, "
        "not_expressible(JaxSpmd())]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    compositions, refused, reason = json.loads(done.stdout.strip().splitlines()[-1])
    assert compositions == {}
    assert set(refused) == set(NESTED)
    assert "jax_checkpoint" in refused["twice"]
    assert reason.startswith("not expressible: twice: not wired")


def test_a_second_wrap_that_is_missing_is_rejected_by_its_count_of_regions():
    # The mutant's values and kept roles are the canonical's: only the regions tell.
    from implementations.stacks.jax.flax_linen_mutants import TwiceWrapsOnce

    mutant, canonical = TwiceWrapsOnce(), implementations.load("flax_linen")
    case = SimpleNamespace(params=PARAMS, x=X, cotangent=COTANGENT)
    assert _row(mutant, "twice") == ROW
    with pytest.raises(ConformanceError, match=r"twice: .*1 checkpoint region\(s\): the inner"):
        check_composition(mutant, prepare_composition(canonical, case), case)
