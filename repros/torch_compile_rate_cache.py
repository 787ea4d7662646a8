"""torch.compile over a checkpoint whose dropout rate changes: a second rate recompiles the
frame with the rate a symbolic float (torch's default, automatic dynamic), and AOTAutograd's
cache guards only SymInts (`GuardedCache._filter_backed_symints`, torch/_inductor/codecache.py),
not the float: a third rate is served the second's compiled graph, its forward and gradients
silently those of the other rate. `dynamic=False` keeps the rate a constant of its graph.

Linear -> BatchNorm1d -> relu -> Dropout -> Linear, batch 8, CPU, inductor with
`fallback_random` (the compiled step draws eager's very masks), a fresh cache directory.
"""

import os
import tempfile

cache = tempfile.TemporaryDirectory()  # removed at exit
os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache.name
import torch  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

torch._inductor.config.fallback_random = True


def checkpointed(block, x):
    return checkpoint(block, x, use_reentrant=False)


def step(rate, compiled):
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
        torch.nn.Dropout(rate), torch.nn.Linear(6, 6),
    )  # fmt: skip
    x = torch.randn(8, 4, requires_grad=True)
    y = (compiled or checkpointed)(block, x)
    y.sum().backward()
    return y.detach(), [x.grad, *(p.grad for p in block.parameters())]


def gaps(options):
    torch._dynamo.reset()
    compiled = torch.compile(checkpointed, **options)
    y, grads = [step(rate, compiled) for rate in (0.1, 0.5, 0.25)][-1]
    y_eager, eager = step(0.25, None)
    forward = "equal" if torch.allclose(y, y_eager, atol=1e-6) else "different"
    gap = max((a - b).abs().max() for a, b in zip(grads, eager, strict=True))
    return f"gradients differ from eager by {gap:.1f}, forward {forward}"


print(f"at rate 0.25 after 0.1 and 0.5: {gaps({})}; dynamic=False: {gaps({'dynamic': False})}")
