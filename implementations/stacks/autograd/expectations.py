"""What autograd's instrument (make_vjp's backward graph, the backward pass profiled) shows
under each remat policy."""

from implementations.composition import whole_rerun
from implementations.expectations import Expectations, expect
from implementations.stateful import StateDeclaration
from implementations.stateful_port import redraws

# The recipe: autograd.checkpoint (autograd/differential_operators.py, 1.9.1), its VJP's
# make_vjp moved into the backward pass (implementations/stacks/autograd/remat.py).
_RECIPE = "autograd.checkpoint's make_vjp(fun) recipe, traced in backward (remat.py)"

#: numpy's global generator is stateful and autograd has no RNG of its own: any recompute that
#: calls np.random again draws the next numbers. Not an upstream bug of either; the fix is a
#: mask made from an explicit seed.
_GLOBAL = "numpy's global generator (numpy.random.rand) is stateful; autograd has no RNG"
_UPSTREAM = (
    "unreported upstream (autograd.checkpoint's VJP maker, make_vjp(fun)(*args), runs while "
    "the forward pass does, autograd 1.9.1): repros/autograd_checkpoint_dropout.py"
)
_SEEDING = "np.random.seed(seed mod 2**32); dropout keeps np.random.rand(B, F) >= rate"


def _redraws(spelling: str, when: str, upstream: str, **kwargs) -> StateDeclaration:
    """A variant whose checkpoint traces the block again (`when`): a second draw from numpy's
    global generator and a second update of the statistics."""
    return redraws(
        spelling, _SEEDING, upstream,
        replay=f"the block is traced again {when}: np.random.rand draws the next numbers, 1 "
        "fresh mask, and the gradients are the fresh mask's",
        stream="the second draw leaves numpy's generator a mask ahead",
        updates=f"the block's update of the statistics runs again {when}: 2 updates",
        fix="hips_autograd:explicit_seed", **kwargs,
    )  # fmt: skip


#: The block with variables and RNGs (property (l)), measured on autograd 1.9.1;
#: tests/autograd/test_autograd_stateful.py holds each count.
STATEFUL = {
    "hips_autograd": {
        "default": _redraws(
            "remat.checkpoint(block) over np.random", "in the backward pass", _GLOBAL
        ),
        "upstream": _redraws(
            "autograd.checkpoint(block) over np.random, its arrays one tuple argument",
            "while the forward pass runs (once per differentiated argument: one tuple here)",
            _UPSTREAM,
            repro="repros/autograd_checkpoint_dropout.py",
        ),
        "explicit_seed": StateDeclaration(
            "remat.checkpoint(block), the mask from an explicit seed",
            "np.random.default_rng((seed, 1)) made in the block: every trace draws the same "
            "mask, and numpy's global generator is never read; the statistics are written to a "
            "slot the step applies once",
        ),
    },
}

EXPECTATIONS = Expectations(
    stateful=STATEFUL,
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
        "autograd": whole_rerun(
            once="the primitive keeps its inputs; its VJP traces the block again with "
            f"make_vjp, both dots (autograd is eager: nothing is pruned) ({_RECIPE})",
            twice="the outer VJP's make_vjp runs the inner primitive's forward (2 dots) only "
            "to build its node, whose VJP keeps its inputs and traces the block again (2): "
            f"the first rerun is never read ({_RECIPE})",
            under_trainer="the trainer's checkpoint over the model's call reruns the model's "
            f"region forward for nothing, as twice does ({_RECIPE})",
        ),
    },
)
