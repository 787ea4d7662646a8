"""PaddlePaddle's tests: each file is skipped, with the reason, where Paddle is not installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("paddle", "PaddlePaddle", "paddle")
