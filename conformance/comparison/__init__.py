"""Every port side by side on one seed and shape: accuracy, residuals, time, versions.

- `measure`: the comparison itself (`run`) and its data (`Comparison`).
- `lanes`: the processes it measures in, one per framework; `rows`: extra rows (a
  framework's process-wide mode); `policy_matrix`: port x remat policy.
- `first_call`: a port's first use, timed in a fresh process (`running.isolation`).

It measures; its tables are `conformance.tables.kinds.compare` (and `compare_grids`,
`compare_matrices`), which `print_comparison` prints.

The command line is `conformance.commands.compare`; the Python API is `conformance.compare`.
"""

from ..tables.kinds.compare import print_comparison
from .measure import Comparison, PortComparison, failed, run

__all__ = ["Comparison", "PortComparison", "failed", "print_comparison", "run"]
