"""Keras 3's tests: each file is skipped, with the reason, where Keras 3 is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("keras", "Keras 3", "keras")
