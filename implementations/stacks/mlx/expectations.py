"""What MLX's instrument (the lazy graph of `mx.vjp`) shows under each remat policy."""

from implementations.composition import composed
from implementations.expectations import Expectations, uncounted
from implementations.stateful import Momentum, StateDeclaration
from implementations.stateful_port import redraws

_SOURCE = "checkpoint in mlx/transforms.cpp: vjp(fun, depends(primals, outputs), cotangents)"

#: No upstream report was found; the repro is ready for one.
_UNREPORTED = (
    "unreported upstream (mlx.nn.utils.checkpoint calls the module again in mx.checkpoint's "
    "VJP, mlx 0.32.4): repros/mlx_checkpoint_dropout.py"
)
#: MLX's BatchNorm momentum is torch's convention: 0.01 taken is the canonical 0.99 kept.
_MOMENTUM = Momentum("new", 0.01)

#: The block with variables and RNGs (property (l)), measured on mlx 0.32.4;
#: tests/mlx/test_mlx_stateful.py holds each count.
STATEFUL = {
    "mlx": {
        "default": redraws(
            "nn.utils.checkpoint(block) over nn.Dropout and nn.BatchNorm",
            "mx.random.seed(seed); nn.Dropout draws mx.random.bernoulli from the global key, "
            "which each draw splits",
            _UNREPORTED,
            replay="the checkpoint's VJP calls the module again: Dropout draws the global "
            "key's next mask, 1 fresh mask, and the gradients are the fresh mask's",
            stream="the recompute's draw splits the global key once more",
            updates="the recompute runs BatchNorm again in training mode: the running "
            "statistics are assigned a second update",
            momentum=_MOMENTUM,
            running_var="unbiased",
            fix="mlx:explicit_key",
            repro="repros/mlx_checkpoint_dropout.py",
        ),
        "explicit_key": StateDeclaration(
            "nn.utils.checkpoint(block), dropout on an explicit key",
            "mx.random.bernoulli(..., key=mx.random.key(seed)): the recompute draws from the "
            "same key, so the forward's mask, and the global key is never read",
            momentum=_MOMENTUM,
            running_var="unbiased",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
    families={
        "mlx": uncounted(
            "x h a",
            "MLX's relu VJP reads its input h",
            "mx.checkpoint keeps the region's inputs",
        ),
    },
    # Measured on the lazy graph of the port's pullback (mlx 0.32.4):
    # tests/mlx/test_mlx_composition.py pins them.
    compositions={
        "mlx": {
            "once": composed(
                "x",
                2,
                1,
                why="keeps the region's inputs; the recompute is lazy, so only what the VJP "
                f"reads is in the graph: fc1's AddMM (relu's mask), not fc2's ({_SOURCE})",
            ),
            "twice": composed(
                "x",
                2,
                3,
                why="the outer recompute reruns the inner region whole (2 AddMM), since the "
                "inner VJP's depends() waits on those outputs, then the inner reruns fc1 (1): "
                f"2 for ordering only ({_SOURCE})",
                degradation=True,
            ),
            "under_trainer": composed(
                "x",
                2,
                3,
                why="the trainer's checkpoint over the model's call reruns the model's region "
                f"whole for the inner depends(), as twice does ({_SOURCE})",
                degradation=True,
            ),
        },
    },
)
