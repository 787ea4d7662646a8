"""transformers' switch as the port flips it (transformers 5.23, torch 2.13): the current API,
the deprecated one held to the same results, and the behaviours its mutants and declared
reasons rest on (training mode only, no nesting, offload on a CPU, reentrant inputs)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from transformers import PreTrainedModel

from implementations.policies import Policy
from implementations.stacks.transformers.hf_transformers import HfTransformers
from implementations.stacks.transformers.hf_transformers_mutants import (
    LeftInEvalMode,
    ReentrantInputWithoutGrad,
)
from implementations.stacks.transformers.model import RematMLPModel, build_model
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
COTANGENT = np.linspace(-1, 1, 4).astype(np.float32)


class DeprecatedSwitch(HfTransformers):
    """The port with `gradient_checkpointing_enable`, the spelling transformers deprecates."""

    def switch(self, model, kwargs):
        with pytest.warns(FutureWarning, match="activation_checkpointing_enable"):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _evidence(record):
    return (
        sorted(record.saved_roles),
        record.saved_bytes,
        record.forward_matmuls,
        record.backward_matmuls,
        record.checkpoint_regions,
        dict(record.recomputed),
    )


@pytest.mark.parametrize("checkpoint", [True, Policy("save_dots")])
def test_the_deprecated_switch_gives_the_same_values_and_evidence(checkpoint):
    if not hasattr(PreTrainedModel, "gradient_checkpointing_enable"):
        pytest.skip("this transformers has removed gradient_checkpointing_enable")
    current, old = HfTransformers(), DeprecatedSwitch()
    for a, b in (
        (
            current.forward(PARAMS, X, checkpoint=checkpoint),
            old.forward(PARAMS, X, checkpoint=checkpoint),
        ),
        (current.nn_checkpoint_forward(3, X, 4), old.nn_checkpoint_forward(3, X, 4)),
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    grads = current.vjp(PARAMS, X, COTANGENT, checkpoint=checkpoint).as_dict()
    for name, value in old.vjp(PARAMS, X, COTANGENT, checkpoint=checkpoint).as_dict().items():
        np.testing.assert_array_equal(value, grads[name])
    assert _evidence(old.backward_record(PARAMS, X, checkpoint=checkpoint)) == _evidence(
        current.backward_record(PARAMS, X, checkpoint=checkpoint)
    )
    assert _evidence(old.exercise_record(3, X, 4)) == _evidence(current.exercise_record(3, X, 4))


def test_the_port_flips_the_current_switch_only():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the deprecated switch warns so
        record = HfTransformers().backward_record(PARAMS, X, checkpoint=True)
    assert (sorted(record.saved_roles), record.checkpoint_regions) == (["x"], 1)


def test_a_model_left_in_eval_mode_keeps_every_activation():
    # transformers checkpoints a GradientCheckpointingLayer only while it trains.
    kept = LeftInEvalMode().backward_record(PARAMS, X, checkpoint=True)
    assert (sorted(kept.saved_roles), kept.checkpoint_regions, kept.backward_matmuls) == (
        ["a", "x"],
        0,
        4,
    )


class SwitchedTwice(HfTransformers):
    def switch(self, model, kwargs):
        super().switch(model, kwargs)
        super().switch(model, kwargs)


def test_flipping_the_switch_twice_does_not_nest():
    # What HfTransformers.not_composable["twice"] says: the second call replaces the first.
    once = HfTransformers().backward_record(PARAMS, X, checkpoint=True)
    twice = SwitchedTwice().backward_record(PARAMS, X, checkpoint=True)
    assert _evidence(twice) == _evidence(once)
    assert once.checkpoint_regions == 1


class Offloading(HfTransformers):
    def switch(self, model, kwargs):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs, offload=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine has a pinned allocator")
def test_offload_raises_on_a_cpu_only_machine():
    # What HfTransformers.inexpressible["offload_dots"] says: save_on_cpu(pin_memory=True).
    with pytest.raises(RuntimeError, match="pin_memory=True requires"):
        Offloading().vjp(PARAMS, X, COTANGENT, checkpoint=True)


def test_a_reentrant_switch_whose_input_needs_no_grad_gives_no_gradient():
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        grads = ReentrantInputWithoutGrad().vjp(PARAMS, X, COTANGENT, checkpoint=True).as_dict()
    right = HfTransformers().vjp(PARAMS, X, COTANGENT, checkpoint=True).as_dict()
    for name, value in grads.items():
        assert not np.any(value), name  # nothing flowed: not x, not the layer's parameters
        assert np.any(right[name]), name  # where the port's gradients are not zero


def test_a_model_whose_input_is_input_ids_warns_without_embeddings(capfd):
    # Why RematMLPModel's main_input_name is "x": with "input_ids" the switch calls
    # enable_input_require_grads, which needs input embeddings.
    class WithInputIds(RematMLPModel):
        main_input_name = "input_ids"

    for cls, warned in ((RematMLPModel, False), (WithInputIds, True)):
        model = build_model(PARAMS)
        model.__class__ = cls
        capfd.readouterr()
        model.activation_checkpointing_enable()
        assert ("does not expose input embeddings" in capfd.readouterr().err) is warned, cls
