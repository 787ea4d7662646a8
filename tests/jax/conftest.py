"""JAX's tests: each file is skipped, with the reason, where JAX is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("jax", "JAX", "jax")
