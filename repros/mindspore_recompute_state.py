"""MindSpore PyNative, CPU: Cell.recompute() and mindspore.recompute over dropout and batch norm.

Dense -> batch norm -> relu -> Dropout(0.5) -> Dense, batch 8. Both rerun the block in the
backward pass, so the running mean takes a second update (momentum 0.9: 1.90 x one update);
mindspore.recompute (the function) also draws a new dropout mask there. The batch norm is
written with ops: nn.BatchNorm1d fails on NumPy 2 ("compiled using NumPy 1.x").
"""

import mindspore as ms
import numpy as np
from mindspore import nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
x = ms.Tensor(np.random.default_rng(0).normal(size=(8, 4)).astype("float32"))


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.d1, self.drop, self.d2 = nn.Dense(4, 4), nn.Dropout(p=0.5), nn.Dense(4, 4)
        self.mean = ms.Parameter(ms.Tensor(np.zeros(4, np.float32)), requires_grad=False)

    def construct(self, x):
        h = self.d1(x)
        m, v = h.mean(0), ((h - h.mean(0)) ** 2).mean(0)
        ops.assign(self.mean, 0.9 * self.mean + 0.1 * m)
        return self.d2(self.drop(ops.relu((h - m) / ops.sqrt(v + 1e-5))))


def step(how):
    ms.set_seed(0)
    block = Block().set_train(True)  # dropout on
    _ = how == "Cell.recompute()" and block.recompute()
    call = (lambda x: ms.recompute(block, x)) if how == "mindspore.recompute" else block
    loss = lambda x: (lambda y: ((y * y).sum(), y))(call(x))  # noqa: E731
    ms.set_seed(1)
    (_, y), g = ms.value_and_grad(loss, None, block.trainable_params(), has_aux=True)(x)
    return y[0].asnumpy(), [t.asnumpy() for t in g], block.mean.asnumpy()


def compare(how, off):
    on = step(how)
    gap = max(np.abs(a - b).max() for a, b in zip(off[1], on[1], strict=True))
    forward, ratio = "equal" if np.allclose(off[0], on[0]) else "different", (on[2] / off[2]).mean()
    return f"{how}: gradients differ by {gap:.1f}, forward {forward}, running mean {ratio:.2f} x"


off = step("off")
print("; ".join(compare(how, off) for how in ["Cell.recompute()", "mindspore.recompute"]))
