"""transformers' switch composed with torch's checkpoint_wrapper (the trainer's switch), as
measured (transformers 5.23, torch 2.13): both non-reentrant, the two regions nest and the
inner stops early, so x @ W1 reruns once (llama-cookbook#740's two recomputations need the
early stop off, or a reentrant switch inside); mixed reentrant and non-reentrant pairs rerun
more, and the values never change."""

from __future__ import annotations

import numpy as np
import pytest
from torch.utils.checkpoint import set_checkpoint_early_stop

from conformance.checking.properties import k_composition as records
from implementations.composition import Nesting
from implementations.stacks.torch import reentrant
from implementations.stacks.torch.torch_ac_wrapper import CheckpointImpl, wrap
from implementations.stacks.transformers.hf_transformers import HfTransformers, _is_block
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
ONES = np.ones(4, np.float32)
NODE = "CheckpointFunctionBackward"  # a reentrant checkpoint's region


class ReentrantSwitch(HfTransformers):
    """transformers' switch with use_reentrant=True (4.x's default, where torch's was)."""

    use_reentrant = True


class UnderReentrantWrapper(HfTransformers):
    """The non-reentrant switch, a REENTRANT checkpoint_wrapper on top."""

    def model(self, params, checkpoint, context_fn=None, device=None):
        model = super().model(params, checkpoint, context_fn, device)
        if self.policy(checkpoint).name != "none":
            wrap(model, _is_block, CheckpointImpl.REENTRANT)
        return model


def _row(port, checkpoint, *, reentrant_inside=False):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    if reentrant_inside:  # regions are CheckpointFunctionBackward nodes, counted as such
        record = reentrant.observe(
            lambda: port.vjp(PARAMS, X, ONES, checkpoint=checkpoint), X, NODE
        )
    else:
        record = port.backward_record(PARAMS, X, checkpoint=checkpoint)
    return sorted(record.saved_roles), record.forward_matmuls, records.rerun_matmuls(record, plain)


@pytest.mark.parametrize("case", ["once", "under_trainer"])
def test_each_declared_case_keeps_x_and_reruns_the_first_matmul_once(case):
    port = HfTransformers()
    assert _row(port, Nesting(case)) == (["x"], 2, 1)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert records.check_record(port, case, record, plain)["rerun_matmuls"] == 1
    assert record.checkpoint_regions == {"once": 1, "under_trainer": 2}[case]


def test_without_the_early_stop_both_switches_rerun_the_block_twice():
    # llama-cookbook#740's "two recomputations per backward".
    with set_checkpoint_early_stop(False):
        assert _row(HfTransformers(), Nesting("once")) == (["x"], 2, 2)
        assert _row(HfTransformers(), Nesting("under_trainer")) == (["x"], 2, 4)


def test_mixed_reentrant_and_non_reentrant_rerun_more():
    # A reentrant switch reruns its whole layer (no early stop): 2 alone.
    assert _row(ReentrantSwitch(), True, reentrant_inside=True) == (["x"], 2, 2)
    # ... under a non-reentrant wrapper, whose recompute reruns it too: 4, two recomputations.
    assert _row(ReentrantSwitch(), Nesting("under_trainer"), reentrant_inside=True) == (["x"], 2, 4)
    # A reentrant wrapper over the non-reentrant switch: its rerun of the layer runs both
    # matmuls, then the switch's own recompute reruns x @ W1 (early stop): 3.
    assert _row(UnderReentrantWrapper(), True, reentrant_inside=True) == (["x"], 2, 3)


@pytest.mark.parametrize("port", [ReentrantSwitch(), UnderReentrantWrapper()])
def test_the_values_do_not_change_under_composition(port):
    once = HfTransformers().vjp(PARAMS, X, ONES, checkpoint=True).as_dict()
    cases = [True, Nesting("under_trainer")] if port.compositions.get("under_trainer") else [True]
    for case in cases:
        for name, value in port.vjp(PARAMS, X, ONES, checkpoint=case).as_dict().items():
            np.testing.assert_array_equal(value, once[name])


def test_twice_is_refused_by_name():
    with pytest.raises(ValueError, match=r"checkpoint=twice: port hf_transformers .*does not nest"):
        HfTransformers().vjp(PARAMS, X, ONES, checkpoint=Nesting("twice"))
