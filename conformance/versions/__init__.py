"""The version sweep: which framework versions conform, in one matrix (`python -m conformance
versions EXTRA`).

For one framework's extra it takes version sets (by default `lowest`, `pin` and `newest`),
installs each into a virtualenv of its own under the cache with pip (the constraints holding
everything else), runs the suite there (`run --json`), probes each port under every remat
policy and each documented degradation of its stack, and gathers one matrix: rows are port x
version set, columns the properties and the policies. The `installed` set is the versions
the running interpreter has, swept in it: no venv, no install. docs/VERSIONS.md has the
results measured here and the document's fields.

- `project`: the extras, the constraints and the manifests, read without any framework;
- `registry`: the versions the index serves (`pip index versions`);
- `plan`: the sweep's extra, ports and version sets, resolved to pins;
- `venvs`: one venv per set, made, reused, removed, installed with pins released on conflict
  (for `installed`, the running interpreter);
- `sweep`: each set installed, run and probed (`run`); `probe` runs inside a venv;
- `summary`: the sweep as data (its JSON); `render`: the sweep on a terminal and as Markdown
  (its document: `conformance.tables.kinds.versions`, the report page's too).
"""

from .plan import DEFAULT, KEYWORDS, Plan, PlanError, VersionSet, make, resolve
from .sweep import Options, Sweep, run

__all__ = [
    "DEFAULT",
    "KEYWORDS",
    "Options",
    "Plan",
    "PlanError",
    "Sweep",
    "VersionSet",
    "make",
    "resolve",
    "run",
]
