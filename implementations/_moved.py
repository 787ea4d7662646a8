"""Old module names, kept importable with a `DeprecationWarning` naming the new ones.

Three generations of names: the flat modules at the top of `implementations/`
(`jax_port`, `canonical_init`, ...), then the private rooms (`_jax/`,
`_torch/`, `_tensorflow/`, `_mlx/`, `_keras/`, `_canonical_init/`,
`_out_in`) with their stable surface `implementations.porting.*`; now one
package per framework, `implementations.stacks.<framework>`. Ports written
against an old name keep working: `import implementations.jax_port` gives a
module holding everything the new one holds, and warns once with the name
to use instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

_STACKS = "implementations.stacks"


def _room(old: str, new: str, submodules: dict[str, str]) -> dict[str, tuple[str, str]]:
    """A private room and its modules: each now `new.<module>`, its stable name `new`."""
    moved = {f"implementations.{old}": (f"{_STACKS}.{new}", f"{_STACKS}.{new}")}
    for was, now in submodules.items():
        # `torch.compiled` imports inductor, so the package does not re-export it.
        stable = f"{_STACKS}.{new}.{now}" if now == "compiled" else f"{_STACKS}.{new}"
        moved[f"implementations.{old}.{was}"] = (f"{_STACKS}.{new}.{now}", stable)
    return moved


# old name -> (the module holding it now, the name porters should import)
MOVED = {
    # The flat names came before `porting`: their warning names both, as it always named
    # `porting` (external ports and their tests match it).
    "implementations.jax_port": (f"{_STACKS}.jax.port", "implementations.porting.jax"),
    "implementations.jax_flax_init": (f"{_STACKS}.jax.flax_init", "implementations.porting.jax"),
    "implementations.jax_inputs": (f"{_STACKS}.jax.inputs", "implementations.porting.jax"),
    "implementations.jax_evidence": (f"{_STACKS}.jax.evidence", "implementations.porting.jax"),
    "implementations.canonical_init": (f"{_STACKS}.numpy.init", "implementations.porting.numpy"),
    "implementations.flax_rng": (f"{_STACKS}.numpy.keys", "implementations.porting.numpy"),
    # The stable surface before the stacks.
    "implementations.porting": (_STACKS, _STACKS),
    **{
        f"implementations.porting.{name}": (f"{_STACKS}.{name}", f"{_STACKS}.{name}")
        for name in ("jax", "numpy", "torch", "mlx")
    },
    # The private rooms.
    **_room("_jax", "jax", {m: m for m in ("port", "evidence", "flax_init", "inputs")}),
    **_room("_torch", "torch", {m: m for m in ("arrays", "compiled", "evidence", "mlp", "port")}),
    **_room(
        "_tensorflow",
        "tensorflow",
        {"stack": "runtime", "arrays": "arrays", "evidence": "evidence", "flax_init": "flax_init"},
    ),
    **_room("_mlx", "mlx", {"arrays": "arrays", "evidence": "evidence"}),
    **_room("_keras", "keras", {"backend": "backend", "model": "model"}),
    **_room("_canonical_init", "numpy", {"numpy_init": "init", "keys": "keys"}),
    "implementations._out_in": (f"{_STACKS}.numpy.out_in", f"{_STACKS}.numpy"),
}

# Where the `porting` names live now, for the flat names' warning.
_NOW = {f"implementations.porting.{name}": f"{_STACKS}.{name}" for name in ("jax", "numpy")}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names, and loads each as a copy of its new module's namespace."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            # A package spec (`__path__` empty): `implementations.porting.jax` is found
            # under `implementations.porting`, itself a moved module.
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return None  # a plain new module, filled in by exec_module

    def exec_module(self, module) -> None:
        current, stable = MOVED[module.__name__]
        # stacklevel 2 skips importlib's own frames: the warning names the importer.
        now = f" (now {_NOW[stable]})" if stable in _NOW else ""
        warnings.warn(
            f"{module.__name__} has moved: import from {stable}{now} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        new = importlib.import_module(current)
        module.__dict__.update({k: v for k, v in vars(new).items() if not k.startswith("__")})
        module.__doc__ = f"Moved to {current}; import from {stable}.\n\n{new.__doc__}"


def install() -> None:
    """Put the finder first on `sys.meta_path`, once: an old name must never be found as a
    file (a stale checkout, an editable install of an older tree) before it is found here."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
