"""`Stack` (a framework's duties) and `Port` (the base of every port). Imports numpy only.

A **stack** is what every port on one framework shares: converting arrays
to and from numpy, pinning the float32 matmul precision and reporting it,
Flax's canonical init in that framework, and the evidence instrument (one
`record(...)` entry point). Each framework's package under
`implementations.stacks` defines one `STACK`.

A **port** declares its `name`, `framework`, `stack` and `checkpoint_api`
(the checkpoint it runs, as a short string for tables), and writes the
model; a built-in port's pip extra is its stack's manifest's. A stack's port base (for
example `implementations.stacks.jax.JaxPort`) derives the contract from
the port's `to_native`, `to_canonical` and `apply`. The declarations are
checked when the class is created, so a port that forgets one fails at
import, with a `TypeError` naming what is missing.

A port also declares its remat policies (`implementations.policies`):
`policies`, policy name -> the native spelling it runs, and `inexpressible`,
policy name -> a one-line reason, together covering every policy once,
with `none` and `full` in `policies`. A port that declares neither is taken
to express none and full only (the rest "not declared").

What its instrument must show under each policy is its stack's declaration
(the stack folder's `expectations.py`), unless the port declares its own:
`instrument_family` and `expectations`, policy label -> `Expected` with its
one-line reason (`implementations.expectations.expect`), as a port on a
framework the suite does not know must. Property (j) holds a port's own
declaration to the policy vocabulary first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from .. import composition
from ..contract import (
    NOT_REPORTED,
    BackwardRecord,
    Grads,
    Implementation,
    Params,
    check_features,
)
from ..policies import FULL, POLICY_NAMES, Policy, check_declaration, declared_policy

#: What every concrete port class declares (`checkpoint_api` has a default).
DECLARED = ("name", "framework", "stack")

#: The value methods whose values the evidence speaks for, and the record that must see each:
#: (c) checks `vjp` and (e) reads `backward_record`; (f) checks `nn_checkpoint_forward` and (e)
#: reads `exercise_record`. (`forward` runs no backward pass, so nothing is saved to show.)
EVIDENCE_OF = {"vjp": "backward_record", "nn_checkpoint_forward": "exercise_record"}
#: The methods that make each record: a port that overrides one brings its own evidence.
RECORD_MAKERS = {
    "backward_record": ("backward_record", "traced_record"),
    "exercise_record": ("exercise_record",),
}


def observes(value_method: str) -> Callable[[Callable], Callable]:
    """Marks a record method that runs the port's own `value_method` under the instrument (an
    eager stack's hooks around `self.vjp(...)`, a tracing stack's trace of it): a subclass may
    then override `value_method` freely, and its evidence is observed on that override."""
    if value_method not in EVIDENCE_OF:
        raise ValueError(f"value_method must be one of {tuple(EVIDENCE_OF)}, not {value_method!r}")

    def mark(record: Callable) -> Callable:
        record.observes = value_method  # type: ignore[attr-defined]
        return record

    return mark


def _owner(cls: type, names: tuple[str, ...]) -> type | None:
    """The most derived class of `cls`'s MRO that defines any of `names`."""
    return next((k for k in cls.__mro__ if any(n in vars(k) for n in names)), None)


def unobserved_overrides(cls: type) -> list[tuple[str, str, type, type]]:
    """`(value method, record, its owner, the record's maker)` for each value method that `cls`
    overrides below the class that makes its record, when that record does not observe it."""
    found = []
    for value, record in EVIDENCE_OF.items():
        if getattr(getattr(cls, record, None), "observes", None) == value:
            continue
        makers = RECORD_MAKERS[record] + tuple(getattr(cls, "evidence_methods", ()))
        value_owner, maker = _owner(cls, (value,)), _owner(cls, makers)
        if value_owner is None or maker is None or value_owner is maker:
            continue
        if cls.__mro__.index(value_owner) < cls.__mro__.index(maker):
            found.append((value, record, value_owner, maker))
    return found


class Stack:
    """One framework's duties, given as the functions that do them.

    **Arguments** (each optional; what is not given falls back as said):

    - `name`: the framework, as its package under `implementations.stacks` is named.
    - `arrays`: a module with `to_host_array(array)` and `from_host_array(array)`
      (default: `np.asarray` out, numpy arrays in as they are).
    - `precision`: a module with `pin_matmul_precision()` and `matmul_precision()`
      (default: no pin, "not reported").
    - `init`: `init(seed, D, F) -> Params`, Flax linen's init in this framework.
    - `instrument`: the evidence instrument, `record(...)`'s body; its arguments
      are the stack's own (see each stack's `record`).
    - `installed`: `installed(versions) -> versions`, what only the framework
      can report added to the installed distributions.
    - `distributions`: the distributions every port on the stack uses (a port
      that declares none gets these, and its `framework` when that is another).

    A stack whose duties need state of their own (Keras over a backend) subclasses it.
    """

    def __init__(
        self,
        name: str,
        *,
        arrays: ModuleType | None = None,
        precision: ModuleType | None = None,
        init: Callable[[Any, int, Any], Params] | None = None,
        instrument: Callable[..., BackwardRecord] | None = None,
        installed: Callable[[dict[str, str]], dict[str, str]] | None = None,
        distributions: tuple[str, ...] = (),
    ):
        self.name, self.arrays, self.precision = name, arrays, precision
        self.distributions = distributions
        self.init, self.instrument, self.installed = init, instrument, installed

    def to_numpy(self, array: Any) -> np.ndarray:
        """A framework array (or anything array-like) as a numpy array."""
        return np.asarray(array) if self.arrays is None else self.arrays.to_host_array(array)

    def from_numpy(self, array: np.ndarray) -> Any:
        """A numpy array as the framework's own array, dtype kept."""
        return array if self.arrays is None else self.arrays.from_host_array(array)

    def pin_matmul_precision(self) -> None:
        """Ask the framework for full float32 matmuls (no TF32, no bfloat16 passes)."""
        if self.precision is not None:
            self.precision.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        """The float32 matmul setting as the process found it, once pinned, and now."""
        if self.precision is None:
            return {"default": NOT_REPORTED, "pinned": NOT_REPORTED}
        return self.precision.matmul_precision()

    def canonical_params(self, seed: Any, dim: int, features: Any) -> Params:
        """Flax linen's init of the exercise's MLP, computed in this framework."""
        if self.init is None:
            raise NotImplementedError(f"the {self.name} stack has no canonical init")
        return self.init(seed, dim, features)

    def record(self, *args: Any, **kwargs: Any) -> BackwardRecord:
        """The evidence instrument: what a backward pass saves and recomputes."""
        if self.instrument is None:
            raise NotImplementedError(f"the {self.name} stack has no evidence instrument")
        return self.instrument(*args, **kwargs)

    def versions(self, found: dict[str, str]) -> dict[str, str]:
        """`found` (installed distributions) with what only the framework can report added."""
        return found if self.installed is None else self.installed(found)

    def __repr__(self) -> str:
        return f"<{self.name} stack>"


def _refuse_unobserved_overrides(cls: type) -> None:
    # The values (c) and (f) check and the evidence (e) reads must come from one path: a value
    # method overridden where its record cannot see it would be checked on one model and proved
    # on another (a port whose own computation never checkpoints would pass (e)).
    for value, record, owner, maker in unobserved_overrides(cls):
        raise TypeError(
            f"port class {cls.__module__}.{cls.__qualname__} overrides {value} (in "
            f"{owner.__qualname__}), which its evidence, {record} (made in {maker.__qualname__}), "
            f"never runs: override {cls.model_methods} instead, which feed the values and the "
            f"evidence alike, or override {record} too (its evidence is then self-reported)"
        )


def refuse_own_values(cls: type, owner: type, values: str, evidence: str) -> None:
    """Raise `TypeError` when `cls` overrides `values`, the method below `owner` that makes
    vjp's values, and neither record: `owner`'s `backward_record` (which `evidence`) never runs
    it, so an own one would split the values from the evidence, as an own `vjp` would."""
    below = cls.__mro__[: cls.__mro__.index(owner)]
    records = ("backward_record", "traced_record")
    if any(values in vars(k) for k in below) and not any(
        r in vars(k) for k in below for r in records
    ):
        raise TypeError(
            f"port class {cls.__module__}.{cls.__qualname__} overrides {values}, which makes "
            f"vjp's values, while its evidence, backward_record (made in {owner.__name__}), "
            f"{evidence}: override {cls.model_methods} instead, which feed the values and the "
            f"evidence alike, or override backward_record too (its evidence is then "
            f"self-reported)"
        )


class Port(Implementation):
    """The base of every port: declarations checked at class creation, the stack's duties.

    Subclass with `abstract=True` for a base that concrete ports subclass in
    turn (`class JaxPort(Port, abstract=True)`); every other subclass must
    declare `name`, `framework` and `stack` (a `Stack`), or creating it
    raises `TypeError`.
    """

    #: The checkpoint the port runs, as its tables show it (`"jax.checkpoint"`).
    checkpoint_api: str = ""
    #: Remat policies it expresses: name -> native spelling (`implementations.policies`).
    policies: ClassVar[dict[str, str]] = {}
    #: Remat policies it cannot express: name -> one-line reason.
    inexpressible: ClassVar[dict[str, str]] = {}
    #: Whose policy expectations its instrument is held to ("": its manifest's, or its stack's).
    instrument_family: ClassVar[str] = ""
    #: Its own expectations, policy label -> `implementations.expectations.Expected` ({}: its
    #: family's, as its stack folder declares them).
    expectations: ClassVar[Mapping[str, Any]] = {}
    #: Composition cases it expresses: case -> native spelling (`implementations.composition`).
    compositions: ClassVar[dict[str, str]] = {}
    #: Composition cases it cannot express: case -> one-line reason.
    not_composable: ClassVar[dict[str, str]] = {}
    #: The block with variables and RNGs (`implementations.stateful`, property (l)): API
    #: variant -> native spelling; {} where the port does not offer `state_step`.
    state_variants: ClassVar[Mapping[str, str]] = {}
    #: Why it cannot express the block, in one line (where `state_variants` is empty).
    not_stateful: ClassVar[str] = ""
    #: Its own declarations, variant -> `StateDeclaration` ({}: its stack's `Expectations.
    #: stateful[name]`), as an outside port writes them.
    state_declarations: ClassVar[Mapping[str, Any]] = {}
    #: The names its class and its bases declare, nearest first (set for every subclass).
    name_lineage: ClassVar[tuple[str, ...]] = ()
    #: Methods of a base that feed its records only (JAX: `differentiable`): overriding one
    #: makes the evidence the port's own, like overriding a record.
    evidence_methods: ClassVar[tuple[str, ...]] = ()
    #: What a port on this base overrides to change its model, values and evidence alike.
    model_methods: ClassVar[str] = "the model its records build"
    stack: Stack

    def __init_subclass__(cls, *, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The names its class and its bases declare, nearest first: a subclass under a name of
        # its own (a mutant, an outside port on a built-in one) keeps its bases' declarations.
        cls.name_lineage = tuple(vars(k)["name"] for k in cls.__mro__ if "name" in vars(k))
        if abstract:
            return
        missing = [attr for attr in DECLARED if not getattr(cls, attr, None)]
        if missing:
            raise TypeError(
                f"port class {cls.__module__}.{cls.__qualname__} must declare "
                f"{', '.join(missing)} (see docs/PORTING.md)"
            )
        _refuse_unobserved_overrides(cls)
        if not isinstance(cls.stack, Stack):
            raise TypeError(
                f"port class {cls.__qualname__}: stack must be a Stack "
                f"(implementations.stacks.<framework>.STACK), not {type(cls.stack).__name__}"
            )
        if not cls.policies and not cls.inexpressible:  # written before policies existed
            cls.policies = {
                "none": "checkpoint=False",
                "full": f"{cls.checkpoint_api or 'checkpoint'}",
            }
            cls.inexpressible = {
                name: "not declared (see docs/PORTING.md, Remat policies)"
                for name in POLICY_NAMES
                if name not in cls.policies
            }
        check_declaration(f"port class {cls.__qualname__}", cls.policies, cls.inexpressible)
        composition.check_declaration(
            f"port class {cls.__qualname__}", cls.compositions, cls.not_composable
        )
        if not cls.distributions:  # the stack's, and the framework's own when it is a library
            extra = () if cls.framework in cls.stack.distributions else (cls.framework,)
            cls.distributions = cls.stack.distributions + extra

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

    def policy(self, checkpoint: Any) -> Policy:
        """The contract's `checkpoint=` as a Policy this port declares; `ValueError`
        naming `checkpoint` for one it cannot express (with the declared reason). A
        composition case (`composition.Nesting`) is full remat, composed: FULL."""
        if isinstance(checkpoint, composition.Nesting):
            if checkpoint.case not in self.compositions:
                reason = composition.not_composable(self)[checkpoint.case]
                raise ValueError(
                    f"checkpoint={checkpoint.case}: port {self.name} cannot express it ({reason})"
                )
            return FULL
        return declared_policy(checkpoint, self.name, self.policies, self.inexpressible)

    def nesting(self, checkpoint: Any) -> str:
        """The composition case `checkpoint=` asks for ("once" for a plain policy)."""
        return composition.case_of(checkpoint)

    @observes("nn_checkpoint_forward")
    def exercise_record(self, seed: Any, x: np.ndarray, features: Any) -> BackwardRecord:
        """The stack's instrument on `nn_checkpoint_forward(seed, x, features)` as a function
        of x alone (its only input, a cotangent of ones), kept per shape.

        For stacks whose `record(fn, args, origins, cotangent)` traces `fn`
        (JAX, TensorFlow): the record then depends on the shapes only.
        """
        features = check_features(features)

        def make() -> BackwardRecord:
            self.before_exercise_trace(seed, np.shape(x)[0], features)
            return self.stack.record(
                lambda x: self.nn_checkpoint_forward(seed, x, features),
                [np.asarray(x, np.float32)],
                ("input",),
                np.ones(features, np.float32),
            )

        return self.cached_record(("exercise", np.shape(x), features), make)

    def backward_record(
        self, params: Params, x: np.ndarray, *, checkpoint: bool | Policy = True
    ) -> BackwardRecord:
        """`traced_record(params, x, checkpoint)`, kept on this port per shape and checkpoint.

        For stacks whose instrument traces a graph (JAX, TensorFlow, Keras on
        TensorFlow): the graph depends on the shapes only, and tracing one is
        slow. A port on a stack whose instrument runs the pass itself (torch,
        MLX) overrides `backward_record` instead.
        """
        policy, nesting = self.policy(checkpoint), self.nesting(checkpoint)
        # A composition case reaches the trace as it was asked for (full remat, composed).
        traced = policy if nesting == "once" else checkpoint
        return self.cached_record(
            ("vjp", params.dim, params.features, policy, nesting),
            lambda: self.traced_record(params, x, traced),
        )

    def own_vjp(self, params: Params, x: np.ndarray, checkpoint: Any) -> Callable[[], Grads]:
        """This port's own `vjp(params, x, ones, checkpoint=checkpoint)` as a call of no
        arguments: what an eager stack's `@observes("vjp")` record runs under its instrument,
        so that the evidence is read off the very call (c) checks, overrides and all."""
        ones = np.ones(params.features, np.float32)
        return lambda: self.vjp(params, x, ones, checkpoint=checkpoint)

    def traced_record(self, params: Params, x: np.ndarray, checkpoint: Policy) -> BackwardRecord:
        """The stack's instrument on the backward pass of `vjp` (see `backward_record`)."""
        raise NotImplementedError(f"port {self.name} must define backward_record or traced_record")

    def before_exercise_trace(self, seed: Any, dim: int, features: int) -> None:
        """Called before `exercise_record` traces the exercise: what must exist outside the
        trace is made here (a Keras model's variables). Nothing by default."""

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
