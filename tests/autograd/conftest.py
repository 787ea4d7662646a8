"""HIPS autograd's tests: each file is skipped, with the reason, where autograd is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("autograd", "HIPS autograd", "autograd")
