"""The protocol every port implements, `Implementation`, and what loading one can raise. Numpy only.

- `Implementation`: the protocol, as an abstract base class.
- `StackUnavailable`: what a port's import raises when its stack is installed
  but cannot run in this process.
- `installed_versions`, `NOT_REPORTED`: what a port reports of its stack.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np

from ..policies import Policy
from .records import BackwardRecord, Grads, Params

#: What `Implementation.matmul_precision` says of a setting it cannot read.
NOT_REPORTED = "not reported"


class StackUnavailable(ImportError):
    """A port's stack is installed but cannot load in this process.

    Keras fixes its backend when it is first imported, so a Keras port on
    one backend cannot load where Keras runs on another. A port module raises
    this while it is imported; the registry reports the port *unavailable*
    with this message (it loads in a fresh process), never broken.
    """


class PortWarning(UserWarning):
    """A line for the person running the suite about a port's setup, never its answers: a
    cached runtime that would not load and was installed again, say.

    A run says it once on its own stderr (`conformance.running.environment`), not in the
    port's captured output where nobody would read it. A process port sends one as a line on
    stderr that starts with `remat-conformance: warning: ` (docs/PROTOCOL.md).
    """


class Implementation(abc.ABC):
    """One port of the exercise. Subclass it once per framework.

    Arrays in and out of the contract methods are numpy, canonical layout.
    Their `checkpoint=` is `True` (full remat), `False` (none) or a remat
    `Policy` (`implementations.policies`) the port declares in `policies`.
    Only `nn_checkpoint_forward` takes and returns the framework's own arrays.
    Importing a port's module imports its framework; `implementations`
    itself imports none.
    """

    #: The registry name, e.g. "pytorch".
    name: ClassVar[str]
    #: The framework, as its distribution is named, e.g. "torch".
    framework: ClassVar[str]
    #: Distributions whose versions the reports show, e.g. ("jax", "flax").
    distributions: ClassVar[tuple[str, ...]] = ()
    #: Methods `vjp` runs that `prepared_vjp` runs too, in other steps: a subclass that
    #: overrides one of them (or `vjp`) without `prepared_vjp` is timed by `vjp` whole.
    vjp_builds_on: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def init_params(self, seed: Any, dim: int, features: Any) -> Params:
        """The port's own seeded init for input width `dim`, exported in the canonical layout."""

    @abc.abstractmethod
    def forward(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> np.ndarray:
        """The `(F,)` output for the given params, with the checkpoint on or off."""

    @abc.abstractmethod
    def vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Grads:
        """Pull the `(F,)` cotangent back to every parameter and to x."""

    def prepared_vjp(
        self,
        params: Params,
        x: np.ndarray,
        cotangent: np.ndarray,
        *,
        checkpoint: bool | Policy = True,
    ) -> Callable[[], Any] | None:
        """`vjp`'s framework call with the port's setup done: optional, for timing.

        A port that offers it makes here, once, what `vjp` makes on every call (its model,
        the parameters, x and the cotangent as the framework's arrays) and returns a
        callable taking no arguments that runs only the framework's forward and backward
        pass, its results computed (synchronised) on return, in the framework's own arrays.
        `compare` times that callable; for a port that offers none (None, the default) it
        times `vjp` whole and says that the port's setup is included.
        """
        return None

    @abc.abstractmethod
    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> BackwardRecord:
        """What the backward pass of `vjp` saves and recomputes, from the framework's instrument."""

    @abc.abstractmethod
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """What differentiating `nn_checkpoint_forward` with respect to x saves and recomputes."""

    @abc.abstractmethod
    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> Any:
        """The exercise itself: the framework's arrays in, a float32 `(F,)` array out."""

    @abc.abstractmethod
    def to_numpy(self, array: Any) -> np.ndarray:
        """A framework array as numpy, detached from any autograd graph."""

    @abc.abstractmethod
    def from_numpy(self, array: np.ndarray) -> Any:
        """A numpy array as the framework's own array (dtype kept)."""

    def pin_matmul_precision(self) -> None:  # noqa: B027 - optional hook; a CPU-only port needs none
        """Make float32 matmuls exact float32 on accelerators (no TF32, no bf16 passes)."""

    def matmul_precision(self) -> dict[str, str]:
        """The framework's float32 matmul setting, in its own words, as the framework reports it.

        **Returns:** at least
        - `"default"`: what the framework would use for a float32 matmul if
          the suite did not pin it (JAX's default precision is TF32 on recent
          NVIDIA GPUs and bfloat16 passes on TPUs; on a CPU every setting
          computes in float32, so default and pinned coincide in effect);
        - `"pinned"`: what it uses after `pin_matmul_precision`;
        - optionally `"device"` (where matmuls run) and anything else the
          framework tells (`"current"`, a note).

        A port that does not override this reports "not reported".
        """
        return {"default": NOT_REPORTED, "pinned": NOT_REPORTED}

    def versions(self) -> dict[str, str]:
        """The installed version of each distribution this port uses."""
        return installed_versions(self.distributions)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.framework})>"


def installed_versions(distributions: Iterable[str]) -> dict[str, str]:
    """Each distribution's installed version ("not installed" where it is not)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for dist in distributions:
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found
