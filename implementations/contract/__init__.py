"""The contract every port satisfies. Imports numpy only.

Data crosses between frameworks as float32 numpy arrays in the canonical
layout, which is Flax's: a kernel is `(in, out)`. Each port converts into and
out of its own layout next to its own code.

**Contents**, one module per job, every name importable from here:

- `records`: `Params`, `Grads`: the canonical parameter layout and a VJP's
  result; `PARAM_NAMES`, `param_shapes`. `SavedTensor`, `BackwardRecord`:
  what a backward pass saved and recomputed (by role and memory space where
  the instrument can tell; backward matmuls).
- `implementation`: `Implementation`, the protocol, as an abstract base
  class; `StackUnavailable`: what a port's import raises when its stack is
  installed but cannot run in this process (Keras already on another
  backend); `PortWarning`: a line for the user about a port's setup;
  `installed_versions`, `NOT_REPORTED`.
- `inputs`: `check_seed`, `check_features`, `check_exercise`, `check_x`, `check_x_spec`,
  `check_x_values`, `check_dim`, `dtype_category`, `SEED_MAX`: input
  validation, shared so that every port raises the same error for the same
  bad input.
- `sizes`: `SizeLimitError`, `MAX_ELEMENTS`, `MAX_FEATURES`, `max_bytes`,
  `check_sizes`, `byte_budget`: the size limits.
- `bad_inputs`: `BAD_INPUTS`: the catalogue of bad inputs that the suite
  feeds every port.

**Size limits** (`sizes`). Every port raises `SizeLimitError` (a `ValueError`) naming
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

from .bad_inputs import BAD_INIT_INPUTS, BAD_INPUTS, BadInput
from .implementation import (
    NOT_REPORTED,
    Implementation,
    PortWarning,
    StackUnavailable,
    installed_versions,
)
from .inputs import (
    SEED_MAX,
    check_dim,
    check_exercise,
    check_features,
    check_seed,
    check_x,
    check_x_spec,
    check_x_values,
    dtype_category,
)
from .inputs import _integer_scalar as _integer_scalar  # for implementations.process.adapter
from .records import (
    MEASURED_BY_BASE,
    MEASURED_BY_PORT,
    MEASURED_BY_SUITE,
    PARAM_NAMES,
    BackwardRecord,
    Grads,
    Params,
    SavedTensor,
    param_shapes,
)
from .sizes import (
    MAX_ELEMENTS,
    MAX_FEATURES,
    MIN_MAX_BYTES,
    SizeLimitError,
    byte_budget,
    call_bytes,
    check_sizes,
    max_bytes,
    physical_memory,
)

# The classes keep this package as their module, as when it was one file: the bank's files
# name a class by `__module__.__qualname__` (`conformance.running.cache_files`), in its
# content and in the keys made from it, so the entries written before the split still
# read; and tracebacks and reprs read as they did.
for _class in (
    Params,
    Grads,
    SavedTensor,
    BackwardRecord,
    Implementation,
    StackUnavailable,
    PortWarning,
    SizeLimitError,
    BadInput,
):
    _class.__module__ = __name__
del _class

__all__ = [
    "BAD_INIT_INPUTS",
    "BAD_INPUTS",
    "MAX_ELEMENTS",
    "MAX_FEATURES",
    "MEASURED_BY_BASE",
    "MEASURED_BY_PORT",
    "MEASURED_BY_SUITE",
    "MIN_MAX_BYTES",
    "NOT_REPORTED",
    "PARAM_NAMES",
    "SEED_MAX",
    "BackwardRecord",
    "BadInput",
    "Grads",
    "Implementation",
    "Params",
    "PortWarning",
    "SavedTensor",
    "SizeLimitError",
    "StackUnavailable",
    "byte_budget",
    "call_bytes",
    "check_dim",
    "check_exercise",
    "check_features",
    "check_seed",
    "check_sizes",
    "check_x",
    "check_x_spec",
    "check_x_values",
    "dtype_category",
    "installed_versions",
    "max_bytes",
    "param_shapes",
    "physical_memory",
]
