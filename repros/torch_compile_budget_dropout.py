"""torch.compile with activation_memory_budget = 0: the partitioner recomputes dropout in the
backward pass with fresh randomness, so the gradients are wrong while the forward is right
(pytorch#190717, pytorch#190758). The default budget (1) recomputes nothing.

Linear -> BatchNorm1d -> relu -> Dropout(0.5) -> Linear, batch 8, CPU, inductor.
"""

import torch
from torch._functorch import config


def step(budget):
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
        torch.nn.Dropout(0.5), torch.nn.Linear(6, 6),
    )  # fmt: skip
    x = torch.randn(8, 4, requires_grad=True)
    torch._dynamo.reset()  # a graph compiled under one budget is not reused under the other
    with config.patch(activation_memory_budget=budget):
        y = torch.compile(block)(x)
        y.sum().backward()
    return y.detach(), [x.grad, *(p.grad for p in block.parameters())]


(y_off, g_off), (y_on, g_on) = step(1.0), step(0.0)
forward = "equal" if torch.equal(y_off, y_on) else "different"
gap = max((a - b).abs().max() for a, b in zip(g_off, g_on, strict=True))
print(f"gradients at budget 0 differ by {gap:.1f}, forward {forward}")
