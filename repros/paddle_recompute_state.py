"""paddle.distributed.fleet.utils.recompute over BatchNorm1D and Dropout (CPU, dygraph).

Dense -> BatchNorm -> relu -> Dropout(0.5) -> Dense, batch 8. The recompute in the backward
pass runs BatchNorm again in training mode: its running mean takes a second update (momentum
0.9: 1.90 x one update). With preserve_rng_state=False the recompute also draws a new mask.
"""

import numpy as np
import paddle
from paddle.distributed.fleet.utils import recompute

paddle.seed(0)
nn = paddle.nn
block = nn.Sequential(
    nn.Linear(4, 4), nn.BatchNorm1D(4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 4)
)
start = {k: v.numpy().copy() for k, v in block.state_dict().items()}
x = paddle.to_tensor(np.random.default_rng(0).normal(size=(8, 4)).astype("float32"))
x.stop_gradient = False  # as a block inside a network sees its input


def step(fn):
    block.set_state_dict({k: paddle.to_tensor(v) for k, v in start.items()})
    paddle.seed(1)
    y = fn(x)
    (y * y).sum().backward()
    grads = [p.grad.numpy().copy() for p in block.parameters() if p.grad is not None]
    block.clear_gradients()
    return y.numpy(), grads, block[1]._mean.numpy().copy(), paddle.rand([1]).item()


off, on = step(block), step(lambda x: recompute(block, x))
loose = step(lambda x: recompute(block, x, preserve_rng_state=False))
gap = max(np.abs(a - b).max() for a, b in zip(off[1], loose[1], strict=True))
same, kept = np.allclose(off[0], loose[0]), off[3] == loose[3]
print(
    f"running mean {(on[2] / off[2]).mean():.2f} x one update; preserve_rng_state=False: gradients "
    f"differ by {gap:.1f}, forward {'equal' if same else 'different'}, "
    f"stream {'kept' if kept else 'shifted'}"
)
