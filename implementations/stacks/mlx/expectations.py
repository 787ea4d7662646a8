"""What MLX's instrument (the lazy graph of `mx.vjp`) shows under each remat policy."""

from implementations.composition import composed
from implementations.expectations import NOT_COUNTED, Expectations, expect

_SOURCE = "checkpoint in mlx/transforms.cpp: vjp(fun, depends(primals, outputs), cotangents)"

EXPECTATIONS = Expectations(
    families={
        "mlx": {
            "none": expect("x h a", None, why=f"MLX's relu VJP reads its input h; {NOT_COUNTED}"),
            "full": expect(
                "x", None, why=f"mx.checkpoint keeps the region's inputs; {NOT_COUNTED}"
            ),
        },
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
