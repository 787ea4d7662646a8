"""MindSpore's tests: each file is skipped, with the reason, where MindSpore is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("mindspore", "MindSpore", "mindspore")
