"""Old module names, kept importable until 0.3.0 with a `DeprecationWarning` naming the new one.

Two moves left old names behind (the policy: docs/PORTING.md, *Deprecated names*):

- 0.1's layouts: the flat modules (`implementations.jax_port`, `jax_flax_init`, `jax_inputs`,
  `jax_evidence`, `canonical_init`, `flax_rng`), the stable surface `implementations.porting.*`
  and the private rooms (`_jax`, `_torch`, `_tensorflow`, `_mlx`, `_keras`, `_canonical_init`,
  `_out_in`), all now in `implementations.stacks.<framework>`;
- 0.2.0 moved every port into its framework's folder (`implementations.pytorch` is now
  `implementations.stacks.torch.pytorch`).

`import implementations.jax_flax_init` (or `from implementations import jax_flax_init`) gives a
module holding everything the new one holds, and warns once with the name to use instead. A
name the old module held that has no home any more raises an `ImportError` naming what to
import instead (`GONE`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: The release that removes the old names.
REMOVED_IN = "0.3.0"

_STACKS = "implementations.stacks"

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


def _room(old: str, stack: str, modules: dict[str, str]) -> dict[str, str]:
    """A private room of 0.1 (`implementations._jax`) and its modules, each now in `stack`."""
    moved = {f"implementations.{old}": f"{_STACKS}.{stack}"}
    for was, now in modules.items():
        moved[f"implementations.{old}.{was}"] = f"{_STACKS}.{stack}.{now}"
    return moved


#: 0.1's names (read off the tree at 470daa5^ and 744dd47^) -> the module holding each now.
OLD_LAYOUTS = {
    "implementations.jax_port": f"{_STACKS}.jax.port",
    "implementations.jax_flax_init": f"{_STACKS}.jax.flax_init",
    "implementations.jax_inputs": f"{_STACKS}.jax.inputs",
    "implementations.jax_evidence": f"{_STACKS}.jax.instrument",
    "implementations.canonical_init": f"{_STACKS}.numpy.init",
    "implementations.flax_rng": f"{_STACKS}.numpy.keys",
    "implementations.porting": _STACKS,
    **{f"implementations.porting.{s}": f"{_STACKS}.{s}" for s in ("jax", "numpy", "torch", "mlx")},
    **_room(
        "_jax",
        "jax",
        {"port": "port", "evidence": "instrument", "flax_init": "flax_init", "inputs": "inputs"},
    ),
    **_room(
        "_torch",
        "torch",
        {
            "arrays": "arrays",
            "compiled": "compiled",
            "evidence": "stack",
            "mlp": "mlp",
            "port": "port",
        },
    ),
    **_room(
        "_tensorflow",
        "tensorflow",
        {
            "stack": "runtime",
            "arrays": "arrays",
            "evidence": "instrument",
            "flax_init": "flax_init",
        },
    ),
    **_room("_mlx", "mlx", {"arrays": "arrays", "evidence": "instrument"}),
    **_room("_keras", "keras", {"backend": "backend", "model": "model"}),
    **_room("_canonical_init", "numpy", {"numpy_init": "init", "keys": "keys"}),
    "implementations._out_in": f"{_STACKS}.numpy.out_in",
}

#: old name -> the module holding it now
MOVED = {
    **{f"implementations.{port}": f"{_STACKS}.{stack}.{port}" for port, stack in _PORTS.items()},
    **OLD_LAYOUTS,
}

_CONTRACT = "implementations.contract"
#: Public names an old module held that its new one does not: name -> what to import instead.
GONE = {
    "implementations.jax_port": {
        "Implementation": f"{_CONTRACT}.Implementation",
        "check_features": f"{_CONTRACT}.check_features",
        "jax_evidence": f"{_STACKS}.jax.instrument",
    },
    "implementations._jax.port": {
        "Implementation": f"{_CONTRACT}.Implementation",
        "check_features": f"{_CONTRACT}.check_features",
        "evidence": f"{_STACKS}.jax.instrument",
        "flax_init": f"{_STACKS}.jax.flax_init",
    },
    "implementations._torch.mlp": {
        "canonical_arrays": f"{_STACKS}.torch.state_to_params (a Params of the same arrays)",
    },
    "implementations._torch.port": {
        "Implementation": f"{_CONTRACT}.Implementation",
        "canonical_arrays": f"{_STACKS}.torch.state_to_params (a Params of the same arrays)",
        "canonical_params": f"{_STACKS}.numpy.canonical_params",
        "from_host_array": f"{_STACKS}.torch.from_host_array",
        "arrays": f"{_STACKS}.torch.arrays",
    },
    "implementations._tensorflow.evidence": {
        "cached": "functools.cache (a port keeps its own records)",
    },
}


def stable_name(current: str) -> str:
    """The package a porter imports for `current` (docs/PORTING.md, the stable API)."""
    parts = current.split(".")
    if parts[:2] == ["implementations", "stacks"] and len(parts) > 3:
        return ".".join(parts[:3])
    return current


def _warning(old: str) -> str:
    current = MOVED[old]
    stable = stable_name(current)
    also = f"its names are also in {stable}; " if stable != current and old in OLD_LAYOUTS else ""
    return (
        f"{old} has moved: import from {current} instead ({also}the old name goes in {REMOVED_IN})"
    )


def _lookup(old: str, new):
    """The module `__getattr__` of a moved module: the new module's names, lazy ones included
    (a stack's package imports its names on first use), and a name that is gone says what
    replaces it."""

    def __getattr__(name: str):
        if name in GONE.get(old, {}):
            raise ImportError(
                f"{old}.{name} was removed: import {GONE[old][name]} instead", name=old
            )
        if f"{old}.{name}" in MOVED:  # an old submodule: imported under its old name, warned
            return importlib.import_module(f"{old}.{name}")
        try:
            return getattr(new, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None

    return __getattr__


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names, and loads each as a copy of its new module's namespace."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            # A package (`__path__` empty) when old names live under it: `implementations.
            # porting.jax` is found under `implementations.porting`, itself a moved module.
            parent = any(name.startswith(fullname + ".") for name in MOVED)
            return importlib.util.spec_from_loader(fullname, self, is_package=parent)
        return None

    def create_module(self, spec):
        return None  # a plain new module, filled in by exec_module

    def exec_module(self, module) -> None:
        old = module.__name__
        current = MOVED[old]
        # stacklevel 2 skips importlib's own frames: the warning names the importer.
        warnings.warn(_warning(old), DeprecationWarning, stacklevel=2)
        new = importlib.import_module(current)
        # Not the new package's submodules: `from implementations.porting import jax` must
        # import (and warn about) the old name, found by the module's __getattr__.
        module.__dict__.update(
            {
                k: v
                for k, v in vars(new).items()
                if not k.startswith("__")
                and not getattr(v, "__name__", "").startswith(current + ".")
            }
        )
        module.__doc__ = f"Moved to {current} (the old name goes in {REMOVED_IN}).\n\n{new.__doc__}"
        module.__getattr__ = _lookup(old, new)
        module.__dir__ = lambda: sorted({*vars(module), *dir(new)})


def install() -> None:
    """Put the finder first on `sys.meta_path`, once: an old name must never be found as a
    file (a stale checkout, an editable install of an older tree) before it is found here."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
