"""torch's apply_activation_checkpointing as the port applies it (torch 2.13): on the block,
once or twice (the regions nest, the inner stops early), its reentrant implementation as a port
attribute (the whole block reruns), and the wrapper on the block's children (relu's output kept
between them), as measured."""

from __future__ import annotations

import numpy as np
import pytest
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
from torch.utils.checkpoint import set_checkpoint_early_stop

from conformance.checking.properties import k_composition as records
from implementations.composition import Nesting
from implementations.policies import Policy
from implementations.stacks.torch import reentrant
from implementations.stacks.torch.mlp import MLP
from implementations.stacks.torch.pytorch import PyTorch
from implementations.stacks.torch.torch_ac_wrapper import CheckpointImpl, TorchAcWrapper
from implementations.stacks.torch.torch_ac_wrapper_mutants import WrapperOnChildren
from tests.support import reference

X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(5), 3, 4)
COTANGENT = np.linspace(-1, 1, 4).astype(np.float32)


class Reentrant(TorchAcWrapper):
    """The variant: checkpoint_wrapper(checkpoint_impl=CheckpointImpl.REENTRANT)."""

    checkpoint_impl = CheckpointImpl.REENTRANT


def _row(port, checkpoint, node=""):
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    if node:
        ones = np.ones(4, np.float32)
        record = reentrant.observe(
            lambda: port.vjp(PARAMS, X, ones, checkpoint=checkpoint), X, node
        )
    else:
        record = port.backward_record(PARAMS, X, checkpoint=checkpoint)
    rerun = records.rerun_matmuls(record, plain)
    return sorted(record.saved_roles), record.forward_matmuls, rerun, record.checkpoint_regions


def test_the_wrapper_goes_on_the_block_once_per_application():
    port = TorchAcWrapper()
    once, twice = port.model(PARAMS, True), port.model(PARAMS, Nesting("twice"))
    assert isinstance(once.block, CheckpointWrapper)
    assert isinstance(once.block._checkpoint_wrapped_module, MLP)
    inner = twice.block._checkpoint_wrapped_module  # the second application wraps inside
    assert isinstance(inner, CheckpointWrapper)
    assert isinstance(inner._checkpoint_wrapped_module, MLP)


@pytest.mark.parametrize(("case", "regions"), [("once", 1), ("twice", 2)])
def test_each_case_keeps_x_and_reruns_the_first_matmul_once(case, regions):
    port = TorchAcWrapper()
    assert _row(port, Nesting(case)) == (["x"], 2, 1, regions)
    record = port.backward_record(PARAMS, X, checkpoint=Nesting(case))
    plain = port.backward_record(PARAMS, X, checkpoint=False)
    assert records.check_record(port, case, record, plain)["rerun_matmuls"] == 1


def test_without_the_early_stop_twice_reruns_the_block_for_each_region():
    with set_checkpoint_early_stop(False):
        assert _row(TorchAcWrapper(), Nesting("twice"))[:3] == (["x"], 2, 4)


def test_the_reentrant_variant_reruns_the_whole_block():
    node = "CheckpointFunctionBackward"
    assert _row(Reentrant(), True, node) == (["x"], 2, 2, 1)
    # Wrapped twice, the outer reentrant rerun runs the inner one, which reruns again.
    assert _row(Reentrant(), Nesting("twice"), node)[:3] == (["x"], 2, 4)


@pytest.mark.parametrize(
    ("port", "checkpoint"),
    [
        (TorchAcWrapper(), True),
        (TorchAcWrapper(), Policy("save_dots")),
        (TorchAcWrapper(), Nesting("twice")),
        (Reentrant(), True),
        (Reentrant(), Nesting("twice")),
    ],
)
def test_the_values_are_the_eager_ports_bit_for_bit(port, checkpoint):
    eager = PyTorch().vjp(PARAMS, X, COTANGENT, checkpoint=True).as_dict()
    for name, value in port.vjp(PARAMS, X, COTANGENT, checkpoint=checkpoint).as_dict().items():
        np.testing.assert_array_equal(value, eager[name])


def test_the_reentrant_variant_refuses_a_selective_policy_by_name():
    with pytest.raises(ValueError, match="checkpoint=save_dots: a REENTRANT checkpoint_wrapper"):
        Reentrant().vjp(PARAMS, X, COTANGENT, checkpoint=Policy("save_dots"))


def test_the_wrapper_on_the_children_keeps_relus_output():
    # accelerate#4172's placement: each Linear a region, relu's output kept between them.
    record = WrapperOnChildren().backward_record(PARAMS, X, checkpoint=True)
    assert (sorted(record.saved_roles), record.checkpoint_regions) == (["a", "x"], 2)


def test_under_trainer_is_refused_by_name():
    with pytest.raises(ValueError, match=r"checkpoint=under_trainer: port torch_ac_wrapper"):
        TorchAcWrapper().vjp(PARAMS, X, COTANGENT, checkpoint=Nesting("under_trainer"))
