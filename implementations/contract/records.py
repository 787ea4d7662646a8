"""The data that crosses between frameworks: parameters, gradients, evidence records. Numpy only.

- `Params`, `Grads`: the canonical parameter layout and a VJP's result.
- `PARAM_NAMES`, `param_shapes`: the parameters' names and canonical shapes.
- `SavedTensor`, `BackwardRecord`: what a backward pass saved and recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from ..policies import ROLES

PARAM_NAMES = ("w1", "b1", "w2", "b2")


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


#: Who measured an evidence record: the suite's own instrument on the port's own call (the
#: computation whose values are checked)...
MEASURED_BY_SUITE = "suite"
#: ...the suite's instrument on the base's model, while the values come from a value method the
#: record never runs (a method overridden on the instance): (e) refuses such evidence...
MEASURED_BY_BASE = "base"
#: ...or the port itself (a process port's answer, or a Python port that overrides its records):
#: self-reported, which the suite cannot check from outside (docs/PROTOCOL.md, trust boundary).
MEASURED_BY_PORT = "port"


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
    - `forward_matmuls`: how many matmuls the forward pass runs, or None where it is not
      counted (property (k) reads how often a composed region runs the forward).
    - `rerun_matmuls`: the forward matmuls the backward pass runs again, where the instrument
      counts them apart (a stack that cannot count the gradient's own matmuls); None: (k)
      reads them as `backward_matmuls` beyond the no-checkpoint pass's.
    - `tags`: the names the block tags tensors with (JAX's `checkpoint_name`),
      or None where the framework has no names; a policy that saves a name
      not among them saves nothing.
    - `not_observable`: what the instrument saw it could not observe in this call, each
      `not observable: <reason>` (a selective checkpoint's cache it was not handed); a
      property failing on the figure says it.
    - `measured_by`: `MEASURED_BY_SUITE`, `MEASURED_BY_BASE` or `MEASURED_BY_PORT`, stamped by
      the suite (`conformance.checking.provenance`), never taken from the port's word; ""
      unstamped.
    """

    instrument: str
    saved: tuple[SavedTensor, ...]
    recomputed: Mapping[str, int] = field(default_factory=dict)
    checkpoint_regions: int | None = None
    backward_matmuls: int | None = None
    tags: tuple[str, ...] | None = None
    forward_matmuls: int | None = None
    rerun_matmuls: int | None = None
    measured_by: str = ""
    not_observable: tuple[str, ...] = ()

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


def _numpy_dtype_name(name: str) -> str:
    # Frameworks spell dtypes their own way ("torch.float32"); keep the last word.
    name = name.rsplit(".", 1)[-1]
    return "float16" if name == "bfloat16" else name  # same itemsize
