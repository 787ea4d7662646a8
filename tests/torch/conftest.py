"""PyTorch's tests: each file is skipped, with the reason, where PyTorch is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("torch", "PyTorch", "torch")
