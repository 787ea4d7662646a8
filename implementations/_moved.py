"""The old flat module names, kept importable with a `DeprecationWarning` naming the new ones.

Shared pieces moved from the top of `implementations/` into private rooms
(`_jax/`, `_canonical_init/`); porters import them through
`implementations.porting`. Ports written against the old names keep working:
`import implementations.jax_port` gives a module holding everything the old
one held, and warns once with the stable name to use instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old name -> (the module holding it now, the stable name porters should import)
MOVED = {
    "implementations.jax_port": ("implementations._jax.port", "implementations.porting.jax"),
    "implementations.jax_flax_init": (
        "implementations._jax.flax_init",
        "implementations.porting.jax",
    ),
    "implementations.jax_inputs": ("implementations._jax.inputs", "implementations.porting.jax"),
    "implementations.jax_evidence": (
        "implementations._jax.evidence",
        "implementations.porting.jax",
    ),
    "implementations.canonical_init": (
        "implementations._canonical_init.numpy_init",
        "implementations.porting.numpy",
    ),
    "implementations.flax_rng": (
        "implementations._canonical_init.keys",
        "implementations.porting.numpy",
    ),
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
        current, stable = MOVED[module.__name__]
        # stacklevel 2 skips importlib's own frames: the warning names the importer.
        warnings.warn(
            f"{module.__name__} has moved: import from {stable} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        new = importlib.import_module(current)
        module.__dict__.update({k: v for k, v in vars(new).items() if not k.startswith("__")})
        module.__doc__ = f"Moved to {current}; import from {stable}.\n\n{new.__doc__}"


def install() -> None:
    """Put the finder on `sys.meta_path`, once."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
