"""Root conftest: pin float32 matmuls before any framework is imported.

On a GPU, JAX may compute float32 matmuls with bf16 passes and torch with
TF32; both break the suite's float32 error bounds. On the CPU this changes
nothing. Ports pin their own framework again when they load.
"""

import os

os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
