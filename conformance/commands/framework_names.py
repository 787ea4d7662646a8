"""`bench --framework NAME`: a bench's name, or a port's, which names its stack's bench.

`run` and `compare` take port names (`pytorch`) and `bench` takes bench names (`torch`): a
port name is taken here too, for the bench of its stack (`pytorch` -> `torch`), and a name
that is neither is refused with the closest one and every valid choice.
"""

from __future__ import annotations

import difflib

from implementations import manifests

from ..benchmark import FRAMEWORKS
from .arguments import Invalid


def bench_of_port(port: str) -> str | None:
    """The bench a port's name stands for: its own (`torch_compile`), else its stack's
    first; None for a port whose stack has no bench (a Keras port: its engine's is not it)."""
    if port in FRAMEWORKS:
        return port
    found = manifests.port(port)
    if found is None:
        return None
    benches = [entry.name for entry in found[0].bench if not entry.opt_in]
    return benches[0] if benches else None


def bench_framework(text: str) -> str:
    """A bench name, or a port name standing for its stack's bench; else a did-you-mean."""
    bench = bench_of_port(text)
    if bench is not None:
        return bench
    choices = f"benches: {', '.join(FRAMEWORKS)}"
    found = manifests.port(text)
    if found is not None:
        engine = manifests.engine_of(text)
        hint = f"; the bench of its engine is {engine!r}" if engine in FRAMEWORKS else ""
        raise Invalid(f"is a port whose stack has no bench of its own: {text!r}{hint}; {choices}")
    close = difflib.get_close_matches(text, [*FRAMEWORKS, *manifests.ports()], n=1)
    hint = ""
    if close:
        bench = bench_of_port(close[0])
        runs = f", which runs {bench!r}" if bench and bench != close[0] else ""
        hint = f" (did you mean {close[0]!r}{runs}?)"
    raise Invalid(f"is not a known bench or port: {text!r}{hint}; {choices}")
