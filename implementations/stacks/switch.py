"""`checkpoint_on(checkpoint)`: the contract's `checkpoint=` as on or off, for ports that
express only the policies `none` and `full`. Imports nothing.

The contract's keyword takes `True`, `False`, or (issue 21) a remat `Policy`
whose `name` is `"none"` or `"full"`. A Policy is truthy unless it is `none`
(`Policy.__bool__`), so a port that tested `if checkpoint:` would run every
other policy, `save_dots` say, as full remat: the silent failure property (j)
exists to catch. `checkpoint_on` refuses those instead.
"""

from __future__ import annotations

from typing import Any


def checkpoint_on(checkpoint: Any) -> bool:
    """True for `True` or a `full` policy, False for `False` or a `none` policy; `ValueError`
    naming `checkpoint` for any other policy (these ports express none and full only)."""
    name = getattr(checkpoint, "name", None)
    if name is None:
        return bool(checkpoint)
    if name not in ("none", "full"):
        raise ValueError(f"checkpoint={name}: this port expresses the policies none and full only")
    return name == "full"
