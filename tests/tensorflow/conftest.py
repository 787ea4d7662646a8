"""TensorFlow's tests: each file is skipped, with the reason, where TensorFlow is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("tensorflow", "TensorFlow", "tensorflow")
