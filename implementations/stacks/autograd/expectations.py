"""What autograd's instrument (make_vjp's backward graph, the backward pass profiled) shows
under each remat policy."""

from implementations.composition import composed
from implementations.expectations import Expectations, expect

# The recipe: autograd.checkpoint (autograd/differential_operators.py, 1.9.1), its VJP's
# make_vjp moved into the backward pass (implementations/stacks/autograd/remat.py).
_RECIPE = "autograd.checkpoint's make_vjp(fun) recipe, traced in backward (remat.py)"

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
    # Measured on the port's vjp (tests/autograd/test_autograd_composition.py pins them).
    compositions={
        "autograd": {
            "once": composed(
                "x",
                2,
                2,
                why="the primitive keeps its inputs; its VJP traces the block again with "
                f"make_vjp, both dots (autograd is eager: nothing is pruned) ({_RECIPE})",
            ),
            "twice": composed(
                "x",
                2,
                4,
                why="the outer VJP's make_vjp runs the inner primitive's forward (2 dots) only "
                "to build its node, whose VJP keeps its inputs and traces the block again (2): "
                f"the first rerun is never read ({_RECIPE})",
                degradation=True,
            ),
            "under_trainer": composed(
                "x",
                2,
                4,
                why="the trainer's checkpoint over the model's call reruns the model's region "
                f"forward for nothing, as twice does ({_RECIPE})",
                degradation=True,
            ),
        },
    },
)
