"""What a suite run is asked to do: `RunConfig`, made by `run_config` for the CLI, the API and
the pytest plugin alike, so the three pick the same ports, profile and examples."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import settings as hypothesis_settings

import implementations

from ..checking.properties import PROPERTIES, Property
from . import environment, profiles
from .worker import Settings

# A worker that sends no message but computes (compiling) may go on for this many timeouts
# (an example's: `--compute-timeout` sets its limit in seconds instead).
BUSY_LIMIT = 10

Progress = Callable[[str, str, Any], None]  # (task, kind, value)


@dataclass(frozen=True)
class Patience:
    """How long a worker may go without a message: `quiet` seconds doing nothing (a hang),
    `computing` seconds computing (a compile); `source` says where `computing` came from."""

    quiet: float
    computing: float
    source: str

    @classmethod
    def of(cls, timeout: float, compute_timeout: float | None = None) -> Patience:
        if compute_timeout is not None:
            return cls(timeout, compute_timeout, "--compute-timeout")
        return cls(timeout, BUSY_LIMIT * timeout, f"{BUSY_LIMIT} times the {timeout:g} s timeout")


@dataclass(frozen=True)
class RunConfig:
    """Everything a suite run needs; `run_config` makes one with the shared defaults.

    **Arguments:**

    - `ports`: the ports to check, by registered name.
    - `profile`: the Hypothesis profile (`profiles.PROFILES`).
    - `max_examples`: examples per property (None: the profile's).
    - `properties`: the property keys to run (empty: all of them).
    - `mutants`: whether to hunt the mutants too.
    - `jobs`: worker processes at a time.
    - `timeout`: seconds one example may go without progress (None: the profile's).
    - `load_timeout`: the same for loading a port (None: the profile's timeout, or
      `timeout` if longer). Loading is not an example: on a loaded machine an import
      can wait on the disk for seconds with no CPU time or read of its own.
    - `compute_timeout`: the longest one example may compute without a message, as a
      slow first compile does (None: `BUSY_LIMIT` times the example timeout).
    - `in_process`: run here, without workers (for debugging).
    - `expectations_dir`: read expected failures from `<dir>/<port>.txt`.
    - `canonical`: the reference port.
    - `reproduce`: a Hypothesis blob that replays one failing example.
    - `shrink`: shrink a failure to a minimal example (False: report the first one found).
    """

    ports: tuple[str, ...]
    profile: str = profiles.DEFAULT
    max_examples: int | None = None
    properties: tuple[str, ...] = ()
    mutants: bool = True
    jobs: int = 2
    timeout: float | None = None
    load_timeout: float | None = None
    compute_timeout: float | None = None
    in_process: bool = False
    expectations_dir: Path | None = None
    canonical: str = implementations.CANONICAL
    reproduce: str = ""
    shrink: bool = True

    @property
    def scope(self) -> str:
        return "wide" if self.profile == "thorough" else "menu"

    @property
    def example_timeout(self) -> float:
        return self.timeout if self.timeout is not None else profiles.TIMEOUTS[self.profile]

    @property
    def example_patience(self) -> Patience:
        return Patience.of(self.example_timeout, self.compute_timeout)

    @property
    def port_load_timeout(self) -> float:
        if self.load_timeout is not None:
            return self.load_timeout
        return max(self.example_timeout, profiles.TIMEOUTS[self.profile])

    @property
    def load_patience(self) -> Patience:
        return Patience.of(self.port_load_timeout)

    @property
    def selected(self) -> tuple[Property, ...]:
        keys = set(self.properties)
        return tuple(p for p in PROPERTIES if not keys or p.key in keys)

    def settings(self) -> Settings:
        """What the workers need to know."""
        keeps = self.profile in profiles.KEEPS_EXAMPLES
        return Settings(
            canonical=self.canonical,
            profile=self.profile,
            max_examples=self.max_examples,
            scope=self.scope,
            database=environment.hypothesis_dir() / "examples" if keeps else None,
            reproduce=self.reproduce,
            shrink=self.shrink,
            # The cores shared out among the workers that run at once.
            threads=None if self.in_process else max(1, (os.cpu_count() or 1) // self.jobs),
            timeout=None if self.in_process else self.example_timeout,
        )


def run_config(
    ports: Iterable[str] | None = None,
    *,
    profile: str | None = None,
    examples: int | None = None,
    jobs: int | None = None,
    canonical: str | None = None,
    **rest: Any,
) -> RunConfig:
    """The run asked for, with the defaults the CLI, the API and the pytest plugin share.

    - `profile`: the Hypothesis profile (None: `$REMAT_PROFILE`, else `profiles.DEFAULT`),
      made active here;
    - `ports`: the ports named, each once (None or none: the profile's, `profiles.default_ports`:
      the sharded ports under `scale` only, every other port under the other profiles);
    - `examples`: examples per property (None: the profile's count);
    - `jobs`: worker processes at a time (None: one per core);
    - `canonical`: the reference port (None: `implementations.CANONICAL`);
    - `rest`: any other field of `RunConfig` (its default where not given).
    """
    active = profiles.load(profile)
    named = tuple(dict.fromkeys(ports or ()))
    return RunConfig(
        ports=named or tuple(profiles.default_ports(active, implementations.registered())),
        profile=active,
        max_examples=examples if examples is not None else hypothesis_settings().max_examples,
        jobs=jobs if jobs is not None else os.cpu_count() or 1,
        canonical=canonical or implementations.CANONICAL,
        **rest,
    )


def examples_per_property(prop: Property, max_examples: int | None) -> int:
    """How many examples a property will run (for progress totals)."""
    if prop.cases is not None:
        return len(prop.cases())
    if max_examples is not None or prop.examples is not None or prop.share is not None:
        return prop.capped(max_examples)
    return hypothesis_settings().max_examples
