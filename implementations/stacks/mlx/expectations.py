"""What MLX's instrument (the lazy graph of `mx.vjp`) shows under each remat policy."""

from implementations.expectations import NOT_COUNTED, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "mlx": {
            "none": expect("x h a", None, why=f"MLX's relu VJP reads its input h; {NOT_COUNTED}"),
            "full": expect(
                "x", None, why=f"mx.checkpoint keeps the region's inputs; {NOT_COUNTED}"
            ),
        },
    },
)
