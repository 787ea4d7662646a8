"""What autograd's instrument (make_vjp's backward graph, the backward pass profiled) shows
under each remat policy."""

from implementations.expectations import Expectations, expect

EXPECTATIONS = Expectations(
    families={
        "autograd": {
            "none": expect(
                "x a",
                4,
                why="dot's VJPs keep x (dW1) and a (dW2); the port's relu VJP reads its output "
                "a (a > 0 where h > 0); backward: dW1, dx, dW2, da",
            ),
            "full": expect(
                "x",
                6,
                why="the deferred checkpoint keeps the block's inputs; backward traces the "
                "block again (both dots: autograd is eager, nothing is pruned), then 4 adjoints",
            ),
        },
    },
)
