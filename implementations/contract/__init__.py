"""The contract every port satisfies. Imports numpy only.

Data crosses between frameworks as float32 numpy arrays in the canonical
layout, which is Flax's: a kernel is `(in, out)`. Each port converts into and
out of its own layout next to its own code.

**Contents:**

- `Params`, `Grads`: the canonical parameter layout and a VJP's result.
- `SavedTensor`, `BackwardRecord`: what a backward pass saved and recomputed
  (by role and memory space where the instrument can tell; backward matmuls).
- `Implementation`: the protocol, as an abstract base class.
- `check_seed`, `check_features`, `check_x`, `check_x_spec`, `check_dim`,
  `check_sizes`: input validation, shared so that every port raises the same
  error for the same bad input.
- `SizeLimitError`, `MAX_ELEMENTS`, `MAX_FEATURES`, `max_bytes`: the size limits.
- `BAD_INPUTS`: the catalogue of bad inputs that the suite feeds every port.
- `StackUnavailable`: what a port's import raises when its stack is installed
  but cannot run in this process (Keras already on another backend).

**Size limits.** Every port raises `SizeLimitError` (a `ValueError`) naming
the argument, before it allocates or compiles anything, when a call is too
big to run:

- Hard limits, the same on every machine: no array may hold more than
  `MAX_ELEMENTS = 2**31 - 1` elements, because frameworks count elements in
  int32 (XLA's "static extent product" aborts the interpreter past it). So
  `features <= MAX_FEATURES = 46340` (the `(F, F)` kernel), `D <= 2**31 - 1`
  (x) and `D * F <= 2**31 - 1` (the `(D, F)` kernel).
- A byte budget, `max_bytes()`: the parameters (`4 * (D*F + F*F + 2*F)`
  bytes) plus the activations (x, the hidden layer before and after the relu
  and the output, `4 * (D + 3*F)` bytes) must fit in it. It is a quarter of
  the machine's physical memory (`SC_PAGE_SIZE * SC_PHYS_PAGES`), because an
  init holds the kernels two or three times over while it makes them (random
  bits, floats, the framework's copy); never less than `MIN_MAX_BYTES` (2 GiB),
  which is also the budget where the memory cannot be read. The environment
  variable `REMAT_MAX_BYTES` (a positive integer, bytes) replaces it.
"""

from __future__ import annotations

import abc
import contextlib
import math
import numbers
import operator
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from ..policies import ROLES, Policy

PARAM_NAMES = ("w1", "b1", "w2", "b2")
#: What `Implementation.matmul_precision` says of a setting it cannot read.
NOT_REPORTED = "not reported"

# `jax.random.PRNGKey` converts its seed to a C long: 2**63 raises
# OverflowError. In the default x32 mode it then keeps the low 32 bits, so
# seeds s and s + 2**32 give the same key (pinned in tests/jax/test_seed_range.py).
SEED_MAX = 2**63 - 1


def param_shapes(dim: int, features: int) -> dict[str, tuple[int, ...]]:
    """The canonical shape of each parameter, for input width `dim` and width `features`."""
    return {"w1": (dim, features), "b1": (features,), "w2": (features, features), "b2": (features,)}


@dataclass(frozen=True, eq=False)
class Params:
    """The MLP's parameters in the canonical (Flax) layout: float32, kernel `(in, out)`.

    **Arguments:**

    - `w1`: `(D, F)` kernel of `Dense_0`.
    - `b1`: `(F,)` bias of `Dense_0`.
    - `w2`: `(F, F)` kernel of `Dense_1`.
    - `b2`: `(F,)` bias of `Dense_1`.

    The arrays are copied to float32 and made read-only, so a port can never
    change them in place behind the caller's back.
    """

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    def __post_init__(self):
        for name in PARAM_NAMES:
            array = np.array(getattr(self, name), dtype=np.float32, copy=True)
            array.flags.writeable = False
            object.__setattr__(self, name, array)
        if self.w1.ndim != 2:
            raise ValueError(f"params: w1 must be 2-D (D, F), got shape {self.w1.shape}")
        expected = param_shapes(*self.w1.shape)
        for name in PARAM_NAMES:
            if getattr(self, name).shape != expected[name]:
                raise ValueError(
                    f"params: {name} must have shape {expected[name]} to match w1 "
                    f"{self.w1.shape}, got {getattr(self, name).shape}"
                )

    @property
    def dim(self) -> int:
        """The input width D."""
        return self.w1.shape[0]

    @property
    def features(self) -> int:
        """The width F."""
        return self.w1.shape[1]

    def as_dict(self) -> dict[str, np.ndarray]:
        """The parameters by canonical name."""
        return {name: getattr(self, name) for name in PARAM_NAMES}


@dataclass(frozen=True, eq=False)
class Grads:
    """A VJP's result: the cotangent pulled back to every parameter and to x, canonical layout."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    x: np.ndarray

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, np.asarray(getattr(self, f.name), dtype=np.float32))

    @classmethod
    def of(cls, params: Params, x: np.ndarray) -> Grads:
        """The parameter gradients (shaped, and so checked, like `Params`) and x's."""
        return cls(w1=params.w1, b1=params.b1, w2=params.w2, b2=params.b2, x=x)

    def as_dict(self) -> dict[str, np.ndarray]:
        """The gradients by name: `w1`, `b1`, `w2`, `b2`, `x`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SavedTensor:
    """One tensor that the forward pass keeps for the backward pass.

    **Arguments:**

    - `shape`, `dtype`: as the framework reports them.
    - `origin`: `"input"` (x), `"parameter"` (a weight or bias, or a value
      computed from them alone), `"activation"` (computed from x inside the
      model) or `"constant"` (depends on no argument, e.g. a buffer of zeros).
    - `note`: the framework instrument's own description of it.
    - `role`: which of the MLP's tensors it is (`policies.ROLES`: x, d1, h, a,
      mask, y), or "" where the instrument cannot tell.
    - `memory_space`: where it is kept ("device", "host"), or "" where the
      instrument cannot tell (JAX under jit on CPU: the placement is gone).
    """

    shape: tuple[int, ...]
    dtype: str
    origin: str
    note: str = ""
    role: str = ""
    memory_space: str = ""

    ORIGINS: ClassVar[tuple[str, ...]] = ("input", "parameter", "activation", "constant")
    #: The origins that hold data: what a backward pass keeps because of x.
    KEPT: ClassVar[tuple[str, ...]] = ("input", "activation")

    def __post_init__(self):
        if self.origin not in self.ORIGINS:
            raise ValueError(f"origin must be one of {self.ORIGINS}, got {self.origin!r}")
        if self.role and self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES} or '', got {self.role!r}")

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(_numpy_dtype_name(self.dtype)).itemsize


@dataclass(frozen=True)
class BackwardRecord:
    """What one backward pass saved and recomputed, read off the framework's own instrument.

    **Arguments:**

    - `instrument`: which instrument measured this, in a few words.
    - `saved`: every tensor kept from the forward pass for the backward pass.
    - `recomputed`: forward operations that the backward pass ran again, by op
      name (`dot_general`, `aten.addmm`, ...). Empty without checkpointing.
    - `checkpoint_regions`: how many checkpoint regions the grad path holds,
      or None where the framework has no instrument that counts them.
    - `backward_matmuls`: how many matmuls the backward pass runs (the
      gradient's and the recomputed ones), or None where it is not counted.
    - `tags`: the names the block tags tensors with (JAX's `checkpoint_name`),
      or None where the framework has no names; a policy that saves a name
      not among them saves nothing.
    """

    instrument: str
    saved: tuple[SavedTensor, ...]
    recomputed: Mapping[str, int] = field(default_factory=dict)
    checkpoint_regions: int | None = None
    backward_matmuls: int | None = None
    tags: tuple[str, ...] | None = None

    @property
    def saved_roles(self) -> frozenset[str]:
        """The roles of the kept tensors (`kept`) that the instrument could name."""
        return frozenset(t.role for t in self.kept if t.role)

    def saved_by_origin(self, origin: str) -> tuple[SavedTensor, ...]:
        return tuple(t for t in self.saved if t.origin == origin)

    @property
    def kept(self) -> tuple[SavedTensor, ...]:
        """The saved inputs and activations: parameters live on whether or not anything
        is saved, and constants (e.g. zeros a compiler can rebuild for free) hold no data."""
        return tuple(t for t in self.saved if t.origin in SavedTensor.KEPT)

    @property
    def saved_bytes(self) -> int:
        """Bytes of the saved inputs and activations (`kept`)."""
        return sum(t.nbytes for t in self.kept)

    @property
    def recomputed_count(self) -> int:
        return sum(self.recomputed.values())


class StackUnavailable(ImportError):
    """A port's stack is installed but cannot load in this process.

    Keras fixes its backend when it is first imported, so a Keras port on
    one backend cannot load where Keras runs on another. A port module raises
    this while it is imported; the registry reports the port *unavailable*
    with this message (it loads in a fresh process), never broken.
    """


def _numpy_dtype_name(name: str) -> str:
    # Frameworks spell dtypes their own way ("torch.float32"); keep the last word.
    name = name.rsplit(".", 1)[-1]
    return "float16" if name == "bfloat16" else name  # same itemsize


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


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def check_seed(seed: Any) -> int:
    """`seed` as a Python int in `[0, SEED_MAX]`; raise naming `seed` otherwise."""
    value = _integer_scalar(seed, "seed")
    if value < 0:
        raise ValueError(f"seed must be non-negative, got {value}")
    if value > SEED_MAX:
        raise ValueError(
            f"seed must be at most 2**63 - 1 (jax.random.PRNGKey's limit), got {value}"
        )
    return value


def check_features(features: Any) -> int:
    """`features` as a Python int in `[1, MAX_FEATURES]`; raise naming `features` otherwise."""
    value = _integer_scalar(features, "features")
    if value < 1:
        raise ValueError(f"features must be a positive integer, got {value}")
    if value > MAX_FEATURES:
        raise SizeLimitError(
            f"features={value} is too large: the (F, F) kernel would hold {value**2:.3g} "
            f"elements, past {_ELEMENTS_LIMIT}; features must be at most {MAX_FEATURES}"
        )
    return value


def check_dim(dim: Any) -> int:
    """`init_params`'s input width `dim` as a Python int in `[1, MAX_ELEMENTS]`, named `dim`."""
    if isinstance(dim, (bool, np.bool_)):
        raise ValueError(f"dim must be a positive integer, not a bool ({dim!r})")
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"dim must be an integer, got {type(dim).__name__}: {dim!r}") from None
    if dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim}")
    if dim > MAX_ELEMENTS:
        raise SizeLimitError(f"dim={dim} is too large: the limit is {_ELEMENTS_LIMIT}")
    return dim


def _integer_scalar(value: Any, name: str) -> int:
    """An integer-valued scalar (int, integral float, 0-d array of any framework) as an int."""
    if getattr(value, "shape", None) == ():
        # A 0-d numpy, jax or torch array: `.item()` gives the Python scalar
        # and fails on a tracer, whose value nobody can know yet.
        try:
            value = value.item()
        except Exception as error:
            raise TypeError(
                f"{name} must be a concrete scalar, not a traced value; "
                f"mark it static under jax.jit ({type(error).__name__})"
            ) from None
    elif hasattr(value, "shape"):
        raise TypeError(f"{name} must be a scalar, got an array of shape {tuple(value.shape)}")
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, not a bool ({value!r})")
    if isinstance(value, numbers.Integral):
        return operator.index(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{name} must be a finite integer, got {value}")
        if not value.is_integer():
            raise ValueError(f"{name} must be integer-valued, got {value!r}")
        return int(value)
    raise TypeError(f"{name} must be an integer scalar, got {type(value).__name__}: {value!r}")


# ml_dtypes' narrow floats and ints have numpy kind "V"; know them by name.
_NARROW_FLOAT_PREFIXES = ("bfloat16", "float8", "float6", "float4")
_NARROW_INT_PREFIXES = ("int2", "int4", "uint2", "uint4")


def dtype_category(dtype: Any) -> str:
    """`"float"`, `"int"`, `"bool"`, `"complex"` or `"other"`, for a numpy or framework dtype."""
    name = str(dtype).rsplit(".", 1)[-1]
    if name.startswith(_NARROW_FLOAT_PREFIXES):
        return "float"
    if name.startswith(_NARROW_INT_PREFIXES):
        return "int"
    if name in ("half", "float", "double"):  # torch spells some as C types
        return "float"
    if name in ("short", "int", "long", "uint8", "int8"):
        return "int"
    if name in ("cfloat", "cdouble", "chalf"):
        return "complex"
    try:
        kind = np.dtype(name).kind
    except TypeError:
        return "other"
    return {"f": "float", "i": "int", "u": "int", "b": "bool", "c": "complex"}.get(kind, "other")


def check_x_spec(shape: tuple[int, ...], dtype: Any) -> int:
    """Check x's shape and dtype (all that a traced x reveals); return D."""
    category = dtype_category(dtype)
    if category not in ("float", "int"):
        raise TypeError(f"x must have a real floating or integer dtype, got {dtype}")
    shape = tuple(shape)
    if len(shape) != 1:
        raise ValueError(f"x must be a vector of shape (D,), got shape {shape}")
    if shape[0] < 1:
        raise ValueError("x must not be empty (D >= 1), got shape (0,)")
    if shape[0] > MAX_ELEMENTS:
        raise SizeLimitError(f"x is too large: D={shape[0]} elements, past {_ELEMENTS_LIMIT}")
    return int(shape[0])


def check_x(x: Any) -> np.ndarray:
    """x as a fresh float32 `(D,)` numpy array; raise naming `x` for anything else.

    Accepts lists, tuples and anything `np.asarray` reads (numpy, jax, a torch
    tensor that needs no grad). The result is always a copy, so nothing done
    to it can reach the caller's data.
    """
    try:
        array = np.asarray(x)
    except (ValueError, TypeError) as error:
        raise TypeError(f"x must be a real array-like of shape (D,): {error}") from None
    check_x_spec(array.shape, array.dtype)
    return check_x_values(array)


def check_x_values(array: np.ndarray) -> np.ndarray:
    """A float32 copy of a checked numpy x, which must be finite after the cast."""
    with np.errstate(over="ignore"):  # overflow to inf is reported just below
        converted = np.array(array, dtype=np.float32, copy=True)
    if not np.isfinite(converted).all():
        bad = int(np.flatnonzero(~np.isfinite(converted))[0])
        raise ValueError(
            f"x must be finite in float32; x[{bad}] = {array[bad]!r} is not"
            " (NaN, inf, or beyond float32's range)"
        )
    return converted


# ---------------------------------------------------------------------------
# Size limits
# ---------------------------------------------------------------------------


class SizeLimitError(ValueError):
    """A call too big to run: past a hard element limit or the byte budget (`check_sizes`)."""


#: The most elements any one array may hold: frameworks count them in int32.
MAX_ELEMENTS = 2**31 - 1
#: The largest F whose `(F, F)` kernel stays within `MAX_ELEMENTS`.
MAX_FEATURES = math.isqrt(MAX_ELEMENTS)  # 46340
#: The byte budget's floor, and the budget where physical memory cannot be read.
MIN_MAX_BYTES = 2 * 2**30
_ELEMENTS_LIMIT = "2**31 - 1 per array (frameworks count elements in int32)"
_FLOAT32 = 4  # bytes


@contextlib.contextmanager
def byte_budget(limit: int | None) -> Iterator[None]:
    """`max_bytes()` is `limit` for the block (unchanged for None), then what it was.

    Set through `REMAT_MAX_BYTES`, the one place `max_bytes` reads, so that the
    budget holds inside frameworks' own calls as well.
    """
    if limit is None:
        yield
        return
    saved = os.environ.get("REMAT_MAX_BYTES")
    os.environ["REMAT_MAX_BYTES"] = str(limit)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["REMAT_MAX_BYTES"]
        else:
            os.environ["REMAT_MAX_BYTES"] = saved


def max_bytes() -> int:
    """The byte budget of one call: `REMAT_MAX_BYTES`, else a quarter of physical memory.

    Read at every call, so that a change of the variable takes effect at once.
    """
    setting = os.environ.get("REMAT_MAX_BYTES", "").strip()
    if setting:
        try:
            value = int(setting)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(
                f"REMAT_MAX_BYTES must be a positive integer number of bytes, got {setting!r}"
            )
        return value
    memory = physical_memory()
    return max(MIN_MAX_BYTES, memory // 4) if memory else MIN_MAX_BYTES


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name
        return None


def call_bytes(dim: int, features: int) -> tuple[int, int]:
    """`(parameter bytes, activation bytes)` of one call at input width D and width F."""
    parameters = _FLOAT32 * (dim * features + features * features + 2 * features)
    activations = _FLOAT32 * (dim + 3 * features)  # x, the hidden layer twice, the output
    return parameters, activations


def check_sizes(dim: int, features: int, *, dim_name: str = "x") -> None:
    """Raise `SizeLimitError` naming `features` and D's argument when a call cannot fit.

    `dim` and `features` must be checked already (`check_x_spec` or
    `check_dim`, and `check_features`); `dim_name` is the argument that gave D
    ("x" for the exercise, "dim" for `init_params`). Call it before anything
    is allocated or compiled: it reads only the two integers.
    """
    what = f"features={features} with {dim_name} of D={dim}"
    if dim * features > MAX_ELEMENTS:
        raise SizeLimitError(
            f"{what} is too large: the (D, F) kernel would hold {dim * features:.3g} "
            f"elements, past {_ELEMENTS_LIMIT}"
        )
    parameters, activations = call_bytes(dim, features)
    limit = max_bytes()
    if parameters + activations > limit:
        raise SizeLimitError(
            f"{what} needs {_size(parameters)} of parameters and {_size(activations)} of "
            f"activations; the limit is {_size(limit)} ({_budget_source()})"
        )


def _budget_source() -> str:
    if os.environ.get("REMAT_MAX_BYTES", "").strip():
        return "REMAT_MAX_BYTES"
    return "a quarter of physical memory, at least 2 GiB; set REMAT_MAX_BYTES to change it"


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


# ---------------------------------------------------------------------------
# The catalogue of bad inputs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BadInput:
    """One bad call of `nn_checkpoint_forward`, and the error every port must raise.

    `x` is a factory taking the port's `from_numpy`, so that the bad x
    can arrive both as numpy and as the framework's own array. `max_bytes`,
    where set, is the byte budget (`REMAT_MAX_BYTES`) for the call, so that
    an overrun is an overrun on every machine.
    """

    label: str
    argument: str
    error: type[Exception]
    seed: Any = 0
    features: Any = 3
    x: Callable[[Callable[[np.ndarray], Any]], Any] = lambda native: native(
        np.array([1.0, -2.0], np.float32)
    )
    max_bytes: int | None = None


def _raw(value: Any) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    return lambda native: value


def _native(array: np.ndarray) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    return lambda native: native(array)


def _huge(dim: int) -> Callable[[Callable[[np.ndarray], Any]], Any]:
    # A float32 (D,) numpy array with no data: every element is one stored
    # zero (stride 0), so D = 2**31 costs 4 bytes. It is numpy in both forms:
    # a framework's copy of it would allocate D elements.
    return lambda native: np.broadcast_to(np.zeros((), np.float32), (dim,))


BAD_INPUTS: tuple[BadInput, ...] = (
    BadInput("seed is True", "seed", ValueError, seed=True),
    BadInput("seed is numpy bool", "seed", ValueError, seed=np.bool_(False)),
    BadInput("seed is 1.5", "seed", ValueError, seed=1.5),
    BadInput("seed is NaN", "seed", ValueError, seed=float("nan")),
    BadInput("seed is inf", "seed", ValueError, seed=float("inf")),
    BadInput("seed is -inf", "seed", ValueError, seed=float("-inf")),
    BadInput("seed is -1", "seed", ValueError, seed=-1),
    BadInput("seed is -1.0", "seed", ValueError, seed=-1.0),
    BadInput("seed is 2**63", "seed", ValueError, seed=2**63),
    BadInput("seed is a string", "seed", TypeError, seed="3"),
    BadInput("seed is None", "seed", TypeError, seed=None),
    BadInput("seed is a (1,) array", "seed", TypeError, seed=np.array([3])),
    BadInput("features is True", "features", ValueError, features=True),
    BadInput("features is 2.5", "features", ValueError, features=2.5),
    BadInput("features is NaN", "features", ValueError, features=float("nan")),
    BadInput("features is inf", "features", ValueError, features=float("inf")),
    BadInput("features is 0", "features", ValueError, features=0),
    BadInput("features is -3", "features", ValueError, features=-3),
    BadInput("features is numpy 0.5", "features", ValueError, features=np.float32(0.5)),
    # Sizes: past an int32 element count (XLA aborts the interpreter), or the byte budget.
    BadInput("features is 2**31", "features", ValueError, features=2**31),
    BadInput("features is 46341: (F, F) past 2**31", "features", ValueError, features=46341),
    BadInput(
        "features is 10**7, D is 10**4", "features", ValueError, features=10**7, x=_huge(10**4)
    ),
    BadInput("x has 2**31 elements", "x", ValueError, x=_huge(2**31)),
    BadInput("x has 2**40 elements", "x", ValueError, x=_huge(2**40)),
    BadInput(
        "D * F past 2**31", "x", ValueError, features=46340, x=_native(np.ones(46342, np.float32))
    ),
    BadInput(
        "parameters past the byte budget",
        "features",
        ValueError,
        features=256,
        x=_native(np.ones(256, np.float32)),
        max_bytes=2**16,  # they need 526 kB
    ),
    BadInput(
        "activations past the byte budget",
        "x",
        ValueError,
        features=1,
        x=_native(np.ones(2**11, np.float32)),
        max_bytes=2**12,  # x alone is 8 kB
    ),
    BadInput("x is bool", "x", TypeError, x=_native(np.array([True, False]))),
    BadInput("x is complex", "x", TypeError, x=_native(np.array([1 + 2j, 3j], np.complex64))),
    BadInput("x is object", "x", TypeError, x=_raw(np.array([1.0, None], dtype=object))),
    BadInput("x is a list of strings", "x", TypeError, x=_raw(["a", "b"])),
    BadInput("x is 0-d", "x", ValueError, x=_native(np.array(1.0, np.float32))),
    BadInput("x is 2-d", "x", ValueError, x=_native(np.ones((2, 3), np.float32))),
    BadInput("x is empty", "x", ValueError, x=_native(np.zeros((0,), np.float32))),
    BadInput("x holds NaN", "x", ValueError, x=_native(np.array([1.0, np.nan], np.float32))),
    BadInput("x holds inf", "x", ValueError, x=_native(np.array([np.inf, 1.0], np.float32))),
    BadInput("x holds -inf", "x", ValueError, x=_raw([1.0, float("-inf")])),
    BadInput("x overflows float32", "x", ValueError, x=_raw(np.array([1e39, 0.0]))),
    BadInput("x is ragged", "x", TypeError, x=_raw([[1.0], [1.0, 2.0]])),
)
