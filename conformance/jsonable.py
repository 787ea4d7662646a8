"""One way to turn the reports into JSON: dataclasses as objects, numpy values as numbers.

Every JSON the package writes (`run --json`, `compare --json`, `bench`,
`vectors check --json`, `merge`) goes through `to_data`, so they all spell
things the same way. Non-finite floats, which JSON cannot hold, become the
strings "inf", "-inf" and "nan".
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def to_data(value: Any) -> Any:
    """`value` as plain JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_data(item) for item in value]
    if isinstance(value, np.ndarray):
        return to_data(value.tolist())
    if isinstance(value, np.generic):
        return to_data(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(value: Any) -> str:
    """`value` as indented JSON text."""
    return json.dumps(to_data(value), indent=2, allow_nan=False)
