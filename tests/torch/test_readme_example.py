"""The torch stack README's worked example, read out of the page and run: a port around
torch's own `nn.Sequential` whose value methods are its own, and whose evidence the base reads
off them ((e) holds it); and the page's warning about `checkpoint_sequential`, measured."""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from conformance.checking import provenance
from conformance.checking.checks import ConformanceError
from conformance.checking.properties.e_evidence import check_evidence
from implementations.contract import MEASURED_BY_SUITE
from implementations.stacks.torch.pytorch import PyTorch
from tests.support import reference

PAGE = Path(__file__).resolve().parents[2] / "implementations/stacks/torch/README.md"
X = np.array([0.5, -1.0, 2.0], np.float32)
PARAMS = reference.random_params(np.random.default_rng(7), 3, 4)


def _example() -> types.ModuleType:
    text = PAGE.read_text()
    (code,) = re.findall(r"<!-- torch-worked-example -->\n```python\n(.*?)```", text, re.S)
    module = types.ModuleType("torch_worked_example")
    exec(compile(code, str(PAGE), "exec"), module.__dict__)
    return module


class _Case:
    params, x = PARAMS, X


def test_the_worked_example_has_the_port_s_values_and_its_own_evidence():
    port, checked = _example().SequentialPort(), PyTorch()
    cotangent = np.linspace(-1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(port.forward(PARAMS, X), checked.forward(PARAMS, X), rtol=1e-6)
    ours, theirs = port.vjp(PARAMS, X, cotangent), checked.vjp(PARAMS, X, cotangent)
    for name, value in ours.as_dict().items():
        np.testing.assert_allclose(value, theirs.as_dict()[name], rtol=1e-5, atol=1e-7)
    check_evidence(port, None, (_Case(), 3))
    assert provenance.measured_by(port) == MEASURED_BY_SUITE


def test_checkpoint_sequential_leaves_its_last_segment_unchecked():
    module = _example()

    class Sequential(module.SequentialPort):
        name = "torch_checkpoint_sequential"

        def vjp(self, params, x, cotangent, *, checkpoint=True):
            if self.policy(checkpoint).name == "none":
                return super().vjp(params, x, cotangent, checkpoint=checkpoint)
            model, x = module.sequential(params), torch.tensor(x, requires_grad=True)
            out = torch.utils.checkpoint.checkpoint_sequential(model, 2, x, use_reentrant=False)
            torch.autograd.grad(out, [x, *model.parameters()], torch.ones_like(out))
            return None  # only its evidence is read here

    with pytest.raises(ConformanceError, match=r"saves 1 activation.*\ba: output of Relu"):
        check_evidence(Sequential(), None, (_Case(), 3))
