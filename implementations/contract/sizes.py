"""The size limits: hard element limits and the byte budget (the package docstring explains them).

Standard library only (and `environment`, which imports it only).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator

from ..environment import variable_set


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
    with variable_set("REMAT_MAX_BYTES", str(limit)):
        yield


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
