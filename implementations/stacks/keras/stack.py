"""`KerasStack`: Keras 3 over one backend's stack. Imports Keras and the backend's framework.

The arrays, the precision pin, the canonical init and the instrument are the
backend's (Keras runs the backend's ops); a `keras.Variable` is unwrapped
first, and the precision report says what Keras calls on that backend.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from ..base import Stack
from . import backend


class KerasStack(Stack):
    """Keras on `backend_name` ("jax", "torch" or "tensorflow"): that backend's duties."""

    def __init__(self, backend_name: str):
        self.keras = backend.load(backend_name)
        self.backend_name = backend_name
        self.backend: Stack = importlib.import_module(f"..{backend_name}", __package__).STACK
        own = vars(self.backend)
        duties = {k: own[k] for k in _DUTIES}
        super().__init__("keras", **duties, distributions=("keras", *self.backend.distributions))
        # The backend's setting before anyone pins it, for `matmul_precision()`.
        self._default = _precision(backend_name)

    def to_numpy(self, array: Any) -> np.ndarray:
        if isinstance(array, self.keras.Variable):
            array = array.value
        return super().to_numpy(array)

    def matmul_precision(self) -> dict[str, str]:
        if self.backend_name == "tensorflow":  # Keras calls tf.matmul: TensorFlow's own report
            return super().matmul_precision()
        return {"default": self._default, "pinned": _precision(self.backend_name)} | {
            "note": _NOTES[self.backend_name]
        }

    def __repr__(self) -> str:
        return f"<keras stack on {self.backend_name}>"


_DUTIES = ("arrays", "precision", "init", "instrument", "installed")


def _precision(backend_name: str) -> str:
    """The backend's float32 matmul setting as Keras meets it, in the backend's words."""
    if backend_name == "tensorflow":
        return ""  # TensorFlow reports through its own stack (and torch may be absent)
    if backend_name == "jax":
        import jax

        return f"jax_default_matmul_precision={jax.config.jax_default_matmul_precision}"
    import torch

    return (
        f"float32_matmul_precision={torch.get_float32_matmul_precision()}, "
        f"cuda.matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}, "
        f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}"
    )


_NOTES = {
    # Keras on JAX calls jnp.matmul, which follows JAX's flag; Keras has no switch of its own.
    "jax": "None means the backend's default: float32 on a CPU, bfloat16 passes on "
    "a TPU; 'highest' is float32 everywhere",
    "torch": "TF32 exists on NVIDIA Ampere and later GPUs only; on a CPU torch "
    "computes float32 matmuls in float32 either way",
}
