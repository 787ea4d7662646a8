"""What Paddle's instrument (saved-tensor hooks) shows under each remat policy."""

from implementations.expectations import NOT_COUNTED, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "paddle": {
            "none": expect(
                "x a", None, why=f"Paddle's relu_grad reads its output a; {NOT_COUNTED}"
            ),
            "full": expect(
                "x", None, why=f"fleet.utils.recompute keeps the block's input x; {NOT_COUNTED}"
            ),
        },
    },
)
