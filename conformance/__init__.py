"""The conformance suite: every port held to the canonical Flax linen port.

Importing this package imports no ML framework, and nothing else heavy: the
API below loads on first use, and ports load lazily through the registry in
`implementations`.

The Python API (each returns the report its command prints; `.to_json()` is
the data of the command's `--json`; see the README's "Python API"):

- `conformance.run(ports=None, *, properties=None, profile=None, examples=None,
  mutants=False, ...)` -> `SuiteReport`: the suite, as `python -m conformance run`;
- `conformance.compare(ports=None, *, seed=0, dim=256, features=256, repeats=9,
  first_calls=False, ...)` -> `Comparison`, as `python -m conformance compare`;
- `conformance.bench(frameworks=None, *, depths=None, batch=None, ...)` ->
  `BenchReport`, as `python -m conformance bench`;
- `conformance.report(reports=(), *, html_path=None, markdown_path=None, pictures=True)`
  -> `Report` (`.html`, `.markdown`): one self-contained page from run, compare
  and bench reports (paths, parsed JSON, or the objects above), as
  `python -m conformance report`.

They are the functions of `conformance.api`. The packages that implement the commands,
`conformance.comparison`, `conformance.benchmark` and `conformance.page`, are named apart
from them.
"""

__all__ = ["bench", "compare", "report", "run"]


def __getattr__(name):
    if name in __all__:
        # Lazy: `import conformance` stays cheap; the first use imports the implementation.
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    # The API, and the module's own attributes: no helper names.
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
