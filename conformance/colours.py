"""One colour and one marker per engine, the same in every picture (report, compare, bench).

The engines come from the stacks' manifests (`implementations.manifests`), in their
registration order (the canonical port's engine first), so a new stack gets the next
colour and no engine's colour moves when another is added at the end. The palette is
Okabe and Ito's, which reads for the common colour-vision deficiencies; each engine also
has a marker of its own, so colour is never the only signal. An engine the manifests do
not know (a port from elsewhere) is grey with a plus.
"""

from __future__ import annotations

import functools

from implementations import manifests

#: Okabe-Ito, then two more distinguishable ones; grey is kept for engines from elsewhere.
PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#E69F00",  # orange
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#B8A000",  # dark yellow (Okabe-Ito's yellow is too light on white)
    "#8C564B",  # brown
    "#7F3C8D",  # purple
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">")
OTHER_COLOUR, OTHER_MARKER = "#888888", "+"


@functools.cache
def engines() -> tuple[str, ...]:
    """Every engine the manifests name, in a stable order: the ports' engines in
    registration order, then any stack engine no port computes with."""
    found = [manifests.engine_of(name) for name in manifests.ports()]
    found += [m.engine for m in manifests.manifests()]
    return tuple(dict.fromkeys(found))


def colour(engine: str) -> str:
    """The engine's colour (a hex string matplotlib and CSS both read)."""
    known = engines()
    return PALETTE[known.index(engine) % len(PALETTE)] if engine in known else OTHER_COLOUR


def marker(engine: str) -> str:
    """The engine's matplotlib marker."""
    known = engines()
    return MARKERS[known.index(engine) % len(MARKERS)] if engine in known else OTHER_MARKER


def bench_engine(framework: str) -> str:
    """The engine a bench stack (`bench --framework NAME`) computes with: its manifest's."""
    for manifest in manifests.manifests():
        if any(entry.name == framework for entry in manifest.bench):
            return manifest.engine
    return manifests.engine_of(framework, framework)
