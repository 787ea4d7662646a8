"""Root conftest: set up the process before any framework is imported.

`environment.prepare()` pins float32 matmuls on accelerators (JAX may use
bf16 passes, torch TF32; both break the suite's float32 bounds) and turns on
JAX's persistent compilation cache, which the pytest-xdist workers share.
Ports pin their own framework again when they load.
"""

from conformance.running import environment

environment.prepare()
