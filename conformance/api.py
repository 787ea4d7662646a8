"""The Python API: the commands as functions that return report objects.

`conformance.run`, `conformance.compare`, `conformance.bench` and
`conformance.report` are these functions (`conformance/__init__.py` exports
them lazily). Each returns the report the command prints, with `.to_json()`
giving exactly the data of the command's `--json`. Nothing is printed on stdout;
`compare` and `bench`, which take minutes, show their progress on stderr (a bar on a
terminal, a line every few seconds off one; `progress=False`: none).

Bad arguments raise `ValueError` (or `TypeError`) naming the argument, before
any work, with the command line's own messages.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import benchmark as sweep
from .benchmark import (
    DEFAULT_FRAMEWORKS,
    DEFAULTS,
    BenchReport,
    load_average,
    load_frameworks,
)
from .benchmark.measure import Settings
from .commands import arguments
from .commands.framework_names import bench_framework
from .comparison import measure
from .comparison.measure import Comparison
from .page import Report, build
from .running.config import RunConfig, run_config
from .running.suite import SuiteReport, run_suite
from .terminal import style as terminal_style
from .terminal.progress import Steps


def _check(kind, value: Any, name: str) -> Any:
    """`kind(value)` as the CLI checks a flag; a bad value is a `ValueError` naming `name`."""
    try:
        return kind(str(value))
    except arguments.Invalid as error:
        raise ValueError(f"{name} {error}") from None


def _names(values: str | Iterable[str] | None, kind, name: str) -> list[str] | None:
    """A list of checked names (a single string is one name), or None for "all"."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    checked = [_check(kind, value, name) for value in values]
    return list(dict.fromkeys(checked)) or None


def _steps(shown: bool, title: str, total: int | None = None) -> Steps:
    """The progress of a long call on stderr (`shown` False: a console that prints nothing)."""
    return Steps(terminal_style.console(stderr=True, quiet=not shown), title, total)


def _count(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    return _check(arguments.positive_int, value, name)


def run(
    ports: str | Iterable[str] | None = None,
    *,
    properties: str | Iterable[str] | None = None,
    profile: str | None = None,
    examples: int | None = None,
    mutants: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    canonical: str | None = None,
    expectations: str | Path | None = None,
) -> SuiteReport:
    """Run the suite, as `python -m conformance run` does, and return its report.

    **Arguments:**

    - `ports`: a port name or names (default: the profile's ports, as the CLI picks them:
      every registered port but the sharded ones, which only the `scale` profile runs).
    - `properties`: letters ("c") or keys ("c_vjp") (default: every property, (a) to (l)).
    - `profile`: the Hypothesis profile (default: `$REMAT_PROFILE`, else "ci").
    - `examples`: examples per property (default: the profile's).
    - `mutants`: also hunt the mutants (default False here: the CLI's
      default is True; a script usually wants its ports only).
    - `jobs`: worker processes at a time (default: one per core).
    - `timeout`: seconds one example may take (default: the profile's).
    - `canonical`: the reference port (default: flax_linen).
    - `expectations`: a directory of `<port>.txt` expected failures.

    **Returns:** a `SuiteReport`: `.ports` (each with `.outcomes`), `.mutants`,
    `.failed`, `.verdict` ("passed" only when something was checked and nothing failed; else
    "failed", "nothing checked" or "interrupted"), and `.to_json()`, the data of `run --json`.
    """
    config = suite_config(
        ports,
        properties=properties,
        profile=profile,
        examples=examples,
        mutants=mutants,
        jobs=jobs,
        timeout=timeout,
        canonical=canonical,
        expectations=expectations,
    )
    return run_suite(config, lambda task, kind, value: None)


def suite_config(
    ports: str | Iterable[str] | None = None,
    *,
    properties: str | Iterable[str] | None = None,
    profile: str | None = None,
    examples: int | None = None,
    mutants: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    canonical: str | None = None,
    expectations: str | Path | None = None,
) -> RunConfig:
    """`run`'s arguments checked, as the run they ask for (`running.config.run_config`: the
    CLI's and the pytest plugin's defaults)."""
    chosen = arguments.profile_from_environment(
        None if profile is None else _check(arguments.profile_name, profile, "profile")
    )
    if timeout is not None:
        timeout = _check(arguments.positive_seconds, timeout, "timeout")
    if expectations is not None:
        expectations = _check(arguments.existing_directory, expectations, "expectations")
    if canonical is not None:
        canonical = _check(arguments.port_name, canonical, "canonical")
    return run_config(
        _names(ports, arguments.port_name, "ports"),
        profile=chosen,
        examples=_count(examples, "examples"),
        jobs=_count(jobs, "jobs"),
        canonical=None
        if canonical is None
        else _check(arguments.port_name, canonical, "canonical"),
        properties=tuple(_names(properties, arguments.property_key, "properties") or ()),
        mutants=bool(mutants),
        timeout=timeout,
        expectations_dir=expectations,
    )


def compare(
    ports: str | Iterable[str] | None = None,
    *,
    seed: int = 0,
    dim: int = 256,
    features: int = 256,
    repeats: int = 9,
    first_calls: bool = False,
    progress: bool = True,
) -> Comparison:
    """Compare ports side by side, as `python -m conformance compare` does.

    **Arguments:**

    - `ports`: a port name or names (default: every registered port; the
      canonical port is always there, as the reference). MindSpore in graph
      mode, a row of its own (`mindspore_graph`), joins the default and any
      comparison that names `mindspore`.
    - `seed`: from 0 to 2**63 - 1; `dim` (D) and `features` (F): the shape.
    - `repeats`: interleaved samples per warm timing.
    - `first_calls`: also time each port's first call in a fresh process
      (about a minute per port on a 2-core machine).
    - `progress`: show what runs now on stderr (`conformance.terminal.progress`).

    **Returns:** a `Comparison`: `.ports` (a `PortComparison` each: the
    differences, bits, residuals and times), `.load`, and `.to_json()`,
    the data of `compare --json`. `conformance.comparison.failed(c)` says
    whether a port fails; `conformance.comparison.print_comparison(c, console)`
    prints the report.
    """
    names = _names(ports, arguments.port_name, "ports")
    checked = (_check(arguments.seed, seed, "seed"), _count(dim, "dim"))
    repeats, features = _count(repeats, "repeats"), _count(features, "features")
    with _steps(progress, "compare") as steps:
        return measure.run(
            *checked,
            features,
            names,
            repeats=repeats,
            first_calls=bool(first_calls),
            progress=lambda message: steps.update(description=message),
        )


def bench(
    frameworks: str | Iterable[str] | None = None,
    *,
    depths: Iterable[int] | None = None,
    batch: int | None = None,
    features: int | None = None,
    repeats: int | None = None,
    max_repeats: int | None = None,
    seed: int | None = None,
    progress: bool = True,
) -> BenchReport:
    """Memory and time of an L-block stack against L, as `python -m conformance bench` does.

    **Arguments:**

    - `frameworks`: bench names (`conformance.benchmark.FRAMEWORKS`, one or more per
      stack, as the stacks' manifests declare them), or port names, each standing for its
      stack's bench (`pytorch`: `torch`); default: all installed but the
      opt-in ones, `conformance.benchmark.OPT_IN`, which run only when named).
    - `depths`, `batch`, `features`, `repeats`, `max_repeats`, `seed`: as the
      flags of the same names (defaults: `conformance.benchmark.DEFAULTS`).
    - `progress`: show the steps done and what runs now on stderr.

    **Returns:** a `BenchReport`: `.results`, `.skipped`, `.load`, and
    `.to_json()`, the data of `bench --json`. Writes no files:
    `conformance.benchmark.render` has the Markdown (its document:
    `conformance.tables.kinds.bench`) and the plot.
    """
    import time

    if isinstance(frameworks, str):
        frameworks = [frameworks]
    chosen = list(frameworks) if frameworks is not None else list(DEFAULT_FRAMEWORKS)
    # A port's name stands for its stack's bench, as `bench --framework pytorch` does.
    chosen = list(dict.fromkeys(_check(bench_framework, name, "frameworks") for name in chosen))
    repeats = _count(repeats, "repeats") or DEFAULTS.repeats
    max_repeats = _count(max_repeats, "max_repeats") or max(DEFAULTS.max_repeats, repeats)
    if max_repeats < repeats:
        raise ValueError(f"max_repeats must be at least repeats ({repeats}), got {max_repeats}")
    settings = Settings(
        depths=tuple(_count(d, "depths") for d in depths) if depths else DEFAULTS.depths,
        batch=_count(batch, "batch") or DEFAULTS.batch,
        features=_count(features, "features") or DEFAULTS.features,
        repeats=repeats,
        max_repeats=max_repeats,
        seed=DEFAULTS.seed if seed is None else _check(arguments.seed, seed, "seed"),
    )
    loaded, skipped = load_frameworks(chosen)
    report = BenchReport(settings, skipped=skipped)
    report.versions = {name: module.versions() for name, module in loaded.items()}
    report.load["before"] = load_average()
    started = time.perf_counter()
    with _steps(progress, "bench", sweep.total_steps(settings, loaded)) as steps:
        report.results = sweep.run(
            settings,
            loaded,
            progress=lambda description, advance: steps.update(advance, description),
        )
    report.seconds = time.perf_counter() - started
    report.load["after"] = load_average()
    return report


def report(
    reports: Iterable[Any] = (),
    *,
    html_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
    pictures: bool = True,
) -> Report:
    """One self-contained page from run, compare and bench reports, as
    `python -m conformance report` does.

    **Arguments:** `reports`: paths, parsed JSON, or the objects the functions above
    return; `html_path`, `markdown_path`, `pictures`: as `conformance.page.build`'s.

    **Returns:** a `Report` (`.html`, `.markdown`), written only where the paths say.
    """
    return build(list(reports), html_path=html_path, markdown_path=markdown_path, pictures=pictures)
