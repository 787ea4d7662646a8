"""Old module names, kept importable for one release with a `DeprecationWarning` naming the new
one and the release that removes the old.

Version 0.2.0 moved every port into its framework's folder
(`implementations.pytorch` is now `implementations.stacks.torch.pytorch`).
A port or script written against an old name keeps working until 0.3.0:
`import implementations.pytorch` gives a module holding everything the new
one holds, and warns once with the name to use instead. (The names of 0.1's
earlier layouts, `implementations.porting.*` and the private `_jax`-style
rooms, were removed in 0.2.0.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: The release that removes the old names.
REMOVED_IN = "0.3.0"

#: The stack folder of each port that moved in 0.2.0.
_PORTS = {
    "flax_linen": "jax",
    "equinox_jax": "jax",
    "flax_nnx": "jax",
    "jax_checkpoint": "jax",
    "haiku": "jax",
    "jax_spmd": "jax",
    "pytorch": "torch",
    "torch_compile": "torch",
    "torch_fsdp": "torch",
    "tensorflow": "tensorflow",
    "keras_jax": "keras",
    "keras_torch": "keras",
    "keras_tensorflow": "keras",
    "mlx": "mlx",
    "paddle": "paddle",
    "mindspore": "mindspore",
    "deepspeed": "deepspeed",
}

#: old name -> the module holding it now
MOVED = {
    f"implementations.{port}": f"implementations.stacks.{stack}.{port}"
    for port, stack in _PORTS.items()
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names, and loads each as a copy of its new module's namespace."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a plain new module, filled in by exec_module

    def exec_module(self, module) -> None:
        current = MOVED[module.__name__]
        # stacklevel 2 skips importlib's own frames: the warning names the importer.
        warnings.warn(
            f"{module.__name__} has moved: import from {current} instead "
            f"(the old name goes in {REMOVED_IN})",
            DeprecationWarning,
            stacklevel=2,
        )
        new = importlib.import_module(current)
        module.__dict__.update({k: v for k, v in vars(new).items() if not k.startswith("__")})
        module.__doc__ = f"Moved to {current} (the old name goes in {REMOVED_IN}).\n\n{new.__doc__}"


def install() -> None:
    """Put the finder first on `sys.meta_path`, once: an old name must never be found as a
    file (a stale checkout, an editable install of an older tree) before it is found here."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
