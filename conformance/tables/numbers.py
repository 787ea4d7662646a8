"""One formatter per kind of number, for every report: ratios (error/bound, time over a
baseline), bytes, seconds. A report that shows a number calls one of these, so two reports
never spell the same number two ways."""

from __future__ import annotations

import math
from typing import Any

KIB = 1024
MIB = 2**20


def number(value: Any) -> float | None:
    """A JSON number back to a float: `"inf"`, `"nan"` strings too (jsonable's convention);
    None when it is none."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def ratio(value: Any, digits: int = 3, missing: str = "") -> str:
    """An error over its bound, or any ratio: `0`, `<0.001` (under the last digit shown),
    `0.123`, `inf`, `nan`; `missing` when there is none."""
    found = number(value)
    if found is None:
        return missing
    if math.isnan(found) or math.isinf(found):
        return str(found)
    if found == 0:
        return "0"
    if 0 < found < 10**-digits:
        return f"<{10**-digits:.{digits}f}"
    return f"{found:.{digits}f}"


def kib(nbytes: Any, missing: str = "-") -> str:
    """KiB, three significant figures: 128 bytes is 0.125, not 0.1."""
    found = number(nbytes)
    return missing if found is None else f"{found / KIB:.3g}"


def mib(nbytes: Any, missing: str = "-") -> str:
    """MiB with two decimals."""
    found = number(nbytes)
    return missing if found is None else f"{found / MIB:.2f}"


def size(nbytes: Any, missing: str = "-") -> str:
    """Bytes in the unit that reads best: `96 B`, `1.5 KiB`, `3.2 MiB`."""
    found = number(nbytes)
    if found is None:
        return missing
    if found < KIB:
        return f"{found:.0f} B"
    if found < MIB:
        return f"{found / KIB:.3g} KiB"
    return f"{found / MIB:.3g} MiB"


def grouped(nbytes: Any, missing: str = "-") -> str:
    """An exact count of bytes with thousands separators: `1,048,576`."""
    found = number(nbytes)
    return missing if found is None else f"{int(found):,}"


def ms(seconds: Any, figures: int = 3, missing: str = "-") -> str:
    """Seconds as milliseconds, `figures` significant figures (these are noisy measurements;
    a spread needs two); `?` when not finite."""
    found = number(seconds)
    if found is None:
        return missing
    if not math.isfinite(found):
        return "?"
    value = found * 1e3
    return f"{value:.{figures}g}" if value < 10**figures else f"{value:.0f}"


def seconds(value: Any, missing: str = "-") -> str:
    """A duration: `1.23 s` from a second up, `12 ms` under it."""
    found = number(value)
    if found is None:
        return missing
    return f"{found:.2f} s" if found >= 1 else f"{found * 1e3:.0f} ms"


def wall(value: Any, missing: str = "") -> str:
    """Whole seconds of wall time: `12`."""
    found = number(value)
    return missing if found is None else f"{found:.0f}"
