"""torch.utils.checkpoint(preserve_rng_state=False): the recompute draws a fresh dropout mask,
so the gradients are wrong while the forward is right, and the RNG stream moves on.

Linear -> BatchNorm1d -> relu -> Dropout(0.5) -> Linear, batch 8, CPU, eager (OLMo-core#828).
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
    kept = dict(use_reentrant=False, preserve_rng_state=False)
    y = checkpoint(block, x, **kept) if checkpointed else block(x)
    y.sum().backward()
    return y.detach(), [x.grad, *(p.grad for p in block.parameters())], torch.get_rng_state()


(y_off, g_off, s_off), (y_on, g_on, s_on) = step(False), step(True)
forward = "equal" if torch.equal(y_off, y_on) else "different"
stream = "kept" if torch.equal(s_off, s_on) else "moved"
gap = max((a - b).abs().max() for a, b in zip(g_off, g_on, strict=True))
print(f"gradients with checkpoint differ by {gap:.1f}, forward {forward}, RNG stream {stream}")
