"""Every port side by side on one seed and shape: accuracy, residuals, time, versions.

- `measure`: the comparison itself (`run`) and its data (`Comparison`).
- `lanes`: the processes it measures in, one per framework; `rows`: extra rows (a
  framework's process-wide mode); `policy_matrix`: port x remat policy.
- `first_call`: a port's first use, timed in a fresh process (`running.isolation`).
- `render`: the tables.

The command line is `conformance.commands.compare`; the Python API is `conformance.compare`.
"""

from .measure import Comparison, PortComparison, failed, run
from .render import print_comparison

__all__ = ["Comparison", "PortComparison", "failed", "print_comparison", "run"]
