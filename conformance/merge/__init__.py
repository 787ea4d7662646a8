"""Many `run --json` reports as one matrix: ports grouped by machine, versions and device.

A CI matrix runs the suite on machines one runner does not have (CUDA GPUs,
Apple silicon, TPUs); each job writes a `run --json` report, and `merge`
puts them together (`python -m conformance merge REPORT.json ...`).

- `read`: one report file, its schema checked (`ReportError` names the file).
- `combine`: the reports as groups of rows, and the conflicts between them.
- `render`: the matrix for the terminal (rich) and as Markdown, the same for
  `merge --markdown` and `run --markdown` (its document: `conformance.tables.kinds.merge`).

A *machine* is what the report's `machine` object describes (OS, architecture,
CPU, cores, memory, Python); a *device* is what a port computed on, from its
`environment`; a *version set* gathers the reports whose ports' versions agree
(`V1`, `V2`, ...: a version sweep's reports, `versions --reports DIR`). The same
port on the same machine, versions and device in more than one report gets a row
per report, side by side, and differing statuses are marked as a conflict:
nothing is averaged away.
"""

from __future__ import annotations

from .combine import Conflict, Group, Merged, Row, combine, report_versions, to_json, version_sets
from .read import OLDEST_SCHEMA, ReportError, Source, read, read_all
from .render import markdown, print_merged

__all__ = [
    "OLDEST_SCHEMA",
    "Conflict",
    "Group",
    "Merged",
    "ReportError",
    "Row",
    "Source",
    "combine",
    "markdown",
    "print_merged",
    "read",
    "read_all",
    "report_versions",
    "to_json",
    "version_sets",
]
