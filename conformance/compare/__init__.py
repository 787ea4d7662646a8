"""Every port side by side on one seed and shape: accuracy, residuals, time, versions.

- `measure`: the comparison itself (`run`) and its data (`Comparison`).
- `first_call`: a port's first use, timed in a fresh process (`running.isolation`).
- `render`: the tables.

The command line is `conformance.commands.compare`. Called,
`conformance.compare(...)` is `conformance.api.compare` (the Python API).
"""

from ..api import compare as _compare
from ..callable_package import make_callable
from .measure import Comparison, PortComparison, failed, run
from .render import print_comparison

make_callable(__name__, _compare)

__all__ = ["Comparison", "PortComparison", "failed", "print_comparison", "run"]
