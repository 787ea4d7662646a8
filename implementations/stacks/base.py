"""`Stack` (a framework's duties) and `Port` (the base of every port). Imports numpy only.

A **stack** is what every port on one framework shares: converting arrays
to and from numpy, pinning the float32 matmul precision and reporting it,
Flax's canonical init in that framework, and the evidence instrument (one
`record(...)` entry point). Each framework's package under
`implementations.stacks` defines one `STACK`.

A **port** declares its `name`, `framework`, `stack`, `extra` (the pip
extra that installs it) and `checkpoint_api` (the checkpoint it runs, as a
short string for tables), and writes the model. A stack's port base (for
example `implementations.stacks.jax.JaxPort`) derives the contract from
the port's `to_native`, `to_canonical` and `apply`. The declarations are
checked when the class is created, so a port that forgets one fails at
import, with a `TypeError` naming what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..contract import NOT_REPORTED, BackwardRecord, Implementation, Params

#: What every concrete port class declares (`extra` and `checkpoint_api` have defaults).
DECLARED = ("name", "framework", "stack")


class Stack:
    """One framework's duties. Subclasses override what their framework needs."""

    #: The framework's name, as the stack's module is named (`"jax"`, `"torch"`, ...).
    name: str = ""

    def to_numpy(self, array: Any) -> np.ndarray:
        """A framework array (or anything array-like) as a numpy array."""
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> Any:
        """A numpy array as the framework's own array, dtype kept."""
        return array

    def pin_matmul_precision(self) -> None:
        """Ask the framework for full float32 matmuls (no TF32, no bfloat16 passes)."""

    def matmul_precision(self) -> dict[str, str]:
        """The float32 matmul setting as the process found it, once pinned, and now."""
        return {"default": NOT_REPORTED, "pinned": NOT_REPORTED}

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax linen's init of the exercise's MLP, computed in this framework."""
        raise NotImplementedError(f"the {self.name} stack has no canonical init")

    def record(self, *args: Any, **kwargs: Any) -> BackwardRecord:
        """The evidence instrument: what a backward pass saves and recomputes."""
        raise NotImplementedError(f"the {self.name} stack has no evidence instrument")

    def versions(self, found: dict[str, str]) -> dict[str, str]:
        """`found` (installed distributions) with what only the framework can report added."""
        return found

    def __repr__(self) -> str:
        return f"<{self.name} stack>"


class Port(Implementation):
    """The base of every port: declarations checked at class creation, the stack's duties.

    Subclass with `abstract=True` for a base that concrete ports subclass in
    turn (`class JaxPort(Port, abstract=True)`); every other subclass must
    declare `name`, `framework` and `stack` (a `Stack`), or creating it
    raises `TypeError`.
    """

    #: The pip extra that installs this port's framework (`"keras,torch"` for two).
    extra: str = ""
    #: The checkpoint the port runs, as its tables show it (`"jax.checkpoint"`).
    checkpoint_api: str = ""
    stack: Stack

    def __init_subclass__(cls, *, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        missing = [attr for attr in DECLARED if not getattr(cls, attr, None)]
        if missing:
            raise TypeError(
                f"port class {cls.__module__}.{cls.__qualname__} must declare "
                f"{', '.join(missing)} (see docs/PORTING.md)"
            )
        if not isinstance(cls.stack, Stack):
            raise TypeError(
                f"port class {cls.__qualname__}: stack must be a Stack "
                f"(implementations.stacks.<framework>.STACK), not {type(cls.stack).__name__}"
            )

    @classmethod
    def exported(cls) -> Callable[[Any, Any, Any], Any]:
        """The module-level `nn_checkpoint_forward(seed, x, features)` of this port.

        One instance of the port answers every call; the function carries
        its docstring (`nn_checkpoint_forward`'s of the class) and `port`.
        """
        port = cls()

        def nn_checkpoint_forward(seed: Any, x: Any, features: Any) -> Any:
            return port.nn_checkpoint_forward(seed, x, features)

        nn_checkpoint_forward.__doc__ = cls.nn_checkpoint_forward.__doc__
        nn_checkpoint_forward.__module__ = cls.__module__
        nn_checkpoint_forward.port = port  # type: ignore[attr-defined]
        return nn_checkpoint_forward

    def cached_record(self, key: Any, make: Callable[[], BackwardRecord]) -> BackwardRecord:
        """`make()`, kept on this port per `key`: records whose graph depends on shapes only."""
        records = self.__dict__.setdefault("_records", {})
        if key not in records:
            records[key] = make()
        return records[key]

    # -- the stack's duties ---------------------------------------------------------------

    def to_numpy(self, array: Any) -> np.ndarray:
        return self.stack.to_numpy(array)

    def from_numpy(self, array: np.ndarray) -> Any:
        return self.stack.from_numpy(array)

    def pin_matmul_precision(self) -> None:
        self.stack.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        return self.stack.matmul_precision()

    def versions(self) -> dict[str, str]:
        return self.stack.versions(super().versions())
