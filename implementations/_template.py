"""TEMPLATE: a new port of the exercise. Copy this file; do not register it as it is.

**How to use it** (the full guide is `docs/PORTING.md`):

1. A framework the suite has: copy this file into its folder,
   `implementations/stacks/<framework>/<port>.py`, and add a `PortEntry` to the
   folder's `manifest.py`. A framework it has not: **add a folder**,
   `implementations/stacks/<framework>/`, holding
   - `manifest.py`: `MANIFEST = Manifest(stack="<framework>", engine=...,
     ports=(PortEntry("<port>", "implementations.stacks.<framework>.<port>:<Class>",
     "<extra>"),), mutants=(...), bench=(...))` (`implementations.manifests`; it imports
     no framework; its expectations are `expectations.py`'s, its tests `tests/<framework>/`);
   - `<port>.py`: this file, finished;
   - `expectations.py`: what its instrument shows under each policy it declares
     (`implementations.expectations.expect`, one reason each);
   - `<port>_mutants.py`: a mutant per bug the suite must catch, each a `MutantEntry`
     in the manifest with `killed_by`, the letter of the property that must kill it
     (its rule in `conformance/checking/properties/<key>.py`);
   - `bench.py`: its bench stack (`implementations.bench_case`);
   and its tests in `tests/<framework>/`. An external port (your own package,
   the entry-point group `remat_conformance.implementations`) needs no folder:
   it declares its own `instrument_family` and `expectations` on the class.
2. Work through every `TODO(port)` below, top to bottom. Search for the
   string: none may be left.
3. The class's own declarations (`name`, `framework`, `stack`, `extra`,
   `checkpoint_api`, `policies`) are checked when it is created.
4. Run `python -m conformance --implementation <port> --no-mutants` until
   every property, (a) to (l), is green ((k) skipped, saying why, until the
   class declares a composition case: docs/PORTING.md, *Composition*; (l)
   likewise until it offers the stateful block: *Randomness and state*).

**A port on a stack that has a port base is shorter.** On JAX, subclass
`implementations.stacks.jax.JaxPort` and define three methods, `to_native`,
`to_canonical` and `apply`; the base builds every contract method from them
(`implementations/stacks/jax/jax_checkpoint.py` is the whole of one). On torch,
subclass `implementations.stacks.torch.TorchPort` (`implementations/stacks/torch/pytorch.py`
is the whole of one). This template is for every other stack: a `Port` on a
`Stack` of its own.

**An unfinished copy fails loudly.** Every contract method raises
`NotImplementedError("TODO(port): ...")`, so every property of the suite
fails and names the TODO that is left. Nothing here validates or computes
anything on its own, so no property can pass by accident.

Imports numpy and the contract only; your port imports its framework too.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

# TODO(port): import your framework here (e.g. `import torch`). Import nothing
# from another port's framework: a missing framework must only make *this* port
# unavailable, and `implementations` must import no framework at all.
from implementations.contract import (  # noqa: F401 - the names a finished port uses
    BackwardRecord,
    Grads,
    Implementation,
    Params,
    SavedTensor,
    check_exercise,
    check_x,
)
from implementations.stacks import Port, Stack

GUIDE = "see docs/PORTING.md"


def _todo(what: str) -> NotImplementedError:
    """The error every unfinished piece raises; the suite's failure messages show it."""
    return NotImplementedError(f"TODO(port): {what} ({GUIDE})")


# ---------------------------------------------------------------------------
# 0. The stack: your framework's duties, shared by every port on it
# ---------------------------------------------------------------------------


class TemplateStack(Stack):
    """TODO(port): your framework. If `implementations.stacks` has a package for it, use
    its `STACK` instead and delete this class."""

    def to_numpy(self, array: Any) -> np.ndarray:
        # TODO(port): your framework's array as numpy, detached from any autograd graph.
        raise _todo("to_numpy: a framework array as numpy")

    def from_numpy(self, array: np.ndarray) -> Any:
        # TODO(port): a numpy array as your framework's own array, dtype kept.
        raise _todo("from_numpy: a numpy array as a framework array")

    # TODO(port): if your framework can use TF32 or bf16 passes for float32 matmuls
    # on an accelerator, override pin_matmul_precision and matmul_precision.


STACK = TemplateStack("template")  # TODO(port): the framework's name, e.g. "paddle"


# ---------------------------------------------------------------------------
# 1. The model
# ---------------------------------------------------------------------------

# TODO(port): define the MLP in your framework's own idiom:
#   Linear(D, F) -> relu -> Linear(F, F), biases on, no other layers,
#   with its forward pass wrapped in your framework's checkpoint API
#   (jax.checkpoint, nnx.remat, eqx.filter_checkpoint, torch.utils.checkpoint
#   with use_reentrant=False, ...; each stack's README.md lists its pitfalls).
#   Make the checkpoint switchable (`checkpoint=True/False`) without changing
#   the parameters: property (d) compares the two paths and (e) needs both.
#       def block(x):          # (D,) -> (F,)
#           h = relu(x @ W1 + b1)   # (D,) -> (F,)
#           return h @ W2 + b2      # (F,) -> (F,)


# ---------------------------------------------------------------------------
# 2. Converters: canonical layout <-> your framework's own layout
# ---------------------------------------------------------------------------


def params_to_native(params: Params) -> Any:
    """Canonical `Params` (kernel `(in, out)`) as your framework's parameters."""
    # TODO(port): keep your framework's layout and convert explicitly here, with
    # shape asserts: e.g. a torch `Linear.weight` is `(out, in)`, so it is `w1.T`.
    # Copy: the canonical arrays are read-only and must never be aliased.
    raise _todo("params_to_native: canonical Params -> your framework's layout")


def native_to_params(native: Any) -> Params:
    """Your framework's parameters (or gradients shaped like them) as canonical `Params`."""
    # TODO(port): the inverse of params_to_native, shape-checked; it also converts
    # gradients in vjp. Test the round trip on arbitrary float32 bits.
    raise _todo("native_to_params: your framework's layout -> canonical Params")


# ---------------------------------------------------------------------------
# 3. The exercise
# ---------------------------------------------------------------------------


def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> Any:
    """The exercise: Flax linen's parameters for `PRNGKey(int(seed))`, the checkpointed MLP on x."""
    # TODO(port): replace the raise with, in this order:
    #   seed, x, features = check_exercise(seed, x, features, check_x)
    #     (your stack's `as_input` in place of `check_x` where it has one; the shared
    #     checks, seed, features, x, then the sizes: every port must raise the same
    #     errors, property (g), and refuse sizes past the limits before it allocates anything;
    #     a JAX port's base does this with tracers too);
    #   the canonical parameters for (seed, D, F): NOT your framework's own seeded
    #     init, which draws different numbers. Use
    #     `implementations.stacks.numpy.canonical_params` (numpy only);
    #   the checkpointed forward pass, returning a float32 (F,) array of your
    #     framework, leaving x unchanged (property (h)).
    raise _todo("nn_checkpoint_forward: validate, canonical init, checkpointed forward")


class TemplatePort(Port):
    """TODO(port): one line saying which framework and which checkpoint API."""

    # TODO(port): the registry name; it must equal the BUILTIN key or entry-point name.
    name = "template"
    # TODO(port): the framework's distribution name, e.g. "torch".
    framework = "TODO(port)"
    # TODO(port): the stack: `implementations.stacks.<framework>.STACK`, or yours above.
    stack = STACK
    # TODO(port): the pip extra that installs the framework, and the checkpoint API.
    extra = ""
    checkpoint_api = "TODO(port)"
    # TODO(port): the distributions whose versions reports show, e.g. ("jax", "flax").
    distributions = ()
    # TODO(port): the remat policies your checkpoint expresses, each with its native
    # spelling, and a one-line reason for each it cannot (docs/PORTING.md, Remat policies).
    policies: ClassVar[dict[str, str]] = {"none": "TODO(port)", "full": "TODO(port)"}
    inexpressible: ClassVar[dict[str, str]] = {
        name: "TODO(port): why your checkpoint cannot express it"
        for name in ("save_dots", "save_named", "offload_dots", "budget")
    }
    # TODO(port): the composition cases your checkpoint expresses (docs/PORTING.md,
    # Composition): "twice", your region wrapped twice with your own API, and
    # "under_trainer", your region inside an outer one over the whole model call; each
    # with its native spelling, and `not_composable` (case -> reason) for each it cannot.
    # `forward`, `vjp` and the records then take `composition.Nesting(case)` as checkpoint=.
    compositions: ClassVar[dict[str, str]] = {
        "once": "TODO(port)",
        "twice": "TODO(port)",
        "under_trainer": "TODO(port)",
    }
    # TODO(port): what your instrument shows under each policy: in the folder's
    # expectations.py (a built-in stack), or here (an external port on a framework the
    # suite does not know): instrument_family = "<name>" and
    # expectations = {"none": expect("x a", 4, why="..."), "full": expect("x", 5, why=...)}
    # (implementations.expectations; property (j) holds them to the policy vocabulary).
    instrument_family: ClassVar[str] = ""
    expectations: ClassVar[dict[str, Any]] = {}
    # TODO(port): the block with variables and RNGs (docs/PORTING.md, Randomness and state):
    # each API variant with its native spelling, its declaration in the folder's
    # expectations.py (`stateful`), and `state_step`; or `state_variants = {}` and
    # `not_stateful = "<why your framework cannot>"`.
    state_variants: ClassVar[dict[str, str]] = {"default": "TODO(port)"}

    def state_step(
        self, seed: Any, x: Any, features: Any, rate: Any, cotangent: Any,
        checkpoint: bool = True, variant: str = "default",
    ) -> Any:  # fmt: skip
        # TODO(port): one training step of the stateful block from `seed`, as an
        # implementations.stateful.StateStep (its masks and RNG state as your instrument saw
        # them). Property (l).
        raise _todo("state_step: one training step of the block with dropout and BatchNorm")

    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        # TODO(port): the checks (canonical_params makes them), then the canonical init (see
        # nn_checkpoint_forward) as contract.Params. Property (a) allows 2 ulp.
        raise _todo("init_params: the port's seeded init, equal to Flax linen's")

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: bool = True) -> np.ndarray:
        # TODO(port): params_to_native(params), run the MLP with the checkpoint on or
        # off, return a float32 (F,) numpy array. Property (b), (d).
        raise _todo("forward: the (F,) output from given params, checkpoint on or off")

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: bool = True
    ) -> Grads:
        # TODO(port): pull the (F,) cotangent back to every parameter and to x; return
        # contract.Grads in the canonical layout (native_to_params). Property (c), (d).
        raise _todo("vjp: gradients of every parameter and of x for a cotangent")

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool = True
    ) -> BackwardRecord:
        # TODO(port): read what the backward pass saves and recomputes off your
        # framework's own instrument (its stack's `record`: torch's runs
        # saved_tensors_hooks and a dispatch mode). With the
        # checkpoint on: no saved activation, something recomputed. Off: an
        # activation saved, nothing recomputed. Property (e).
        raise _todo("backward_record: what vjp's backward pass saves and recomputes")

    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        # TODO(port): the same record for the gradient of nn_checkpoint_forward with
        # respect to x: the checkpoint must sit on the exercise's own grad path too.
        raise _todo("exercise_record: the record of differentiating nn_checkpoint_forward")

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        return nn_checkpoint_forward(seed, x, features)
