"""What MindSpore's instrument (saved-tensor hooks, PyNative) shows under each remat policy."""

from implementations.expectations import NOT_COUNTED, Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "mindspore": {
            "none": expect(
                "x a", None, why=f"MindSpore's ReluGrad reads its output a; {NOT_COUNTED}"
            ),
            "full": expect(
                "x", None, why=f"Cell.recompute keeps the cell's input x; {NOT_COUNTED}"
            ),
        },
    },
)
