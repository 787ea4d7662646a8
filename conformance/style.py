"""How the reports mark a port's state, in one place (rich markup).

- **available**: the port loaded and was checked.
- **unavailable**: its framework is not installed; it is skipped, with the reason.
- **broken**: it cannot load for another reason; that fails the run.
"""

from __future__ import annotations

STATE_COLOURS = {"available": "green", "unavailable": "yellow", "broken": "bold red"}


def state_markup(state: str) -> str:
    """A port state in its colour (any state not listed above is an error: bold red)."""
    return f"[{STATE_COLOURS.get(state, 'bold red')}]{state}[/]"
