"""`autograd.checkpoint` as shipped (1.9.1) does not rematerialise; the suite rejects it.

autograd calls a primitive's VJP maker while the forward pass runs (`VJPNode.__init__`),
and `autograd.checkpoint`'s maker is `make_vjp(fun, argnum)(*args)[0]`: the region is
traced in the forward pass, once per differentiated input, and the closures returned
hold those traces until the backward pass. These tests pin that (they fail the day
autograd defers the trace) and show the suite killing both mutants by property (e).
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

autograd = pytest.importorskip("autograd")

from conformance.checking.checks import ConformanceError  # noqa: E402
from conformance.checking.properties.e_evidence import check_evidence  # noqa: E402
from conformance.mutants import MUTANTS, load  # noqa: E402
from implementations.stacks.autograd import block as mlp  # noqa: E402
from implementations.stacks.autograd import hips_autograd as port_module  # noqa: E402
from implementations.stacks.autograd import instrument  # noqa: E402
from implementations.stacks.autograd.hips_autograd_mutants import (  # noqa: E402
    upstream_checkpointed_block,
)
from implementations.stacks.numpy import canonical_params  # noqa: E402
from tests.support import reference  # noqa: E402

X = np.array([0.5, -1.25, 2.0], np.float32)
NUMPY_DOMAIN = 389047  # numpy's tracemalloc domain for array data


def _arrays(features: int = 4) -> tuple[np.ndarray, ...]:
    params = reference.random_params(np.random.default_rng(0), 3, features)
    return (*port_module.params_to_arrays(params), X)


@pytest.mark.parametrize("argnums", [(4,), (0, 4), (0, 1, 2, 3, 4)])
def test_autograd_checkpoint_traces_its_region_in_the_forward_pass(argnums):
    # The block runs once untraced (the primitive's value), then once traced per
    # differentiated argument (2 dots each); the backward pass starts no trace.
    with instrument.watch(X, _arrays()[:4]) as seen:
        pullback, _ = autograd.make_vjp(upstream_checkpointed_block, argnums)(*_arrays())
        pullback(np.ones(4, np.float32))
    assert seen.matmuls["forward"] == 2 + 2 * len(argnums)
    assert seen.traces["forward"] == 1 + len(argnums)  # make_vjp's own, then the maker's
    record = seen.record()
    assert (record.reruns, record.recomputed) == (0, {})


def test_autograd_checkpoint_keeps_more_than_no_checkpoint():
    # numpy's own allocations (tracemalloc), held between the passes at F = 1024 for the
    # gradient with respect to all five inputs: no checkpoint holds a (one unit); the
    # shipped checkpoint holds a from four of its five traces (b2's needs none); the
    # deferred one holds nothing it allocated.
    unit, held = 1024 * 4, {}
    params = canonical_params(0, 8, 1024)
    arrays = (*port_module.params_to_arrays(params), np.ones(8, np.float32))
    only_numpy = [tracemalloc.DomainFilter(True, NUMPY_DOMAIN)]
    runs = {"none": mlp.block, "upstream": upstream_checkpointed_block}
    runs["deferred"] = mlp.checkpointed_block
    for name, run in runs.items():
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot().filter_traces(only_numpy)
            pullback, out = autograd.make_vjp(run, (0, 1, 2, 3, 4))(*arrays)
            del out
            gc.collect()
            after = tracemalloc.take_snapshot().filter_traces(only_numpy)
        finally:
            tracemalloc.stop()
        held[name] = sum(s.size_diff for s in after.compare_to(before, "filename"))
        del pullback
    assert held == {"none": unit, "upstream": 4 * unit, "deferred": 0}, held


def test_the_instrument_sees_the_same():
    port = load("autograd_upstream_checkpoint").port
    params = reference.random_params(np.random.default_rng(2), 3, 4)
    record = port.backward_record(params, X, checkpoint=True)
    assert [t.role for t in record.saved_by_origin("activation")] == ["a"] * 4
    assert (record.recomputed, record.checkpoint_regions) == ({}, 0)


class _Case:
    """An evidence case as property (e) draws them: params and x, and a seed."""

    def __init__(self, seed: int):
        self.params = reference.random_params(np.random.default_rng(seed), 3, 4)
        self.x = X


@pytest.mark.parametrize("name", ["autograd_no_checkpoint", "autograd_upstream_checkpoint"])
def test_property_e_kills_the_mutant(name):
    assert MUTANTS[name].family == "hips_autograd"
    mutant = load(name).port
    with pytest.raises(ConformanceError, match="activation"):
        check_evidence(mutant, None, (_Case(3), 5))
    check_evidence(port_module.HipsAutograd(), None, (_Case(3), 5))  # the port passes
