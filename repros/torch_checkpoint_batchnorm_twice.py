"""torch.utils.checkpoint reruns BatchNorm's forward in the backward pass: the running statistics
are updated twice in one training step (pytorch#96136). Outputs and gradients are unchanged.

Linear -> BatchNorm1d -> relu -> Dropout(0.5) -> Linear, batch 8, CPU, eager.
"""

import torch
from torch.utils.checkpoint import checkpoint


def step(checkpointed):
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
        torch.nn.Dropout(0.5), torch.nn.Linear(6, 6),
    )  # fmt: skip
    x = torch.randn(8, 4, requires_grad=True)
    y = checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
    y.sum().backward()
    return block[1], x.grad


(bn_off, grad_off), (bn_on, grad_on) = step(False), step(True)
same = "equal" if torch.equal(grad_off, grad_on) else "different"
print(
    f"running stats updated twice: num_batches_tracked {int(bn_on.num_batches_tracked)}, "
    f"expected {int(bn_off.num_batches_tracked)}; gradients {same}"
)
