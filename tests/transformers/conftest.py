"""transformers' tests: each file is skipped, with the reason, where transformers is not
installed."""

from tests.support.stack_folder import skip_without

pytest_pycollect_makemodule = skip_without("transformers", "transformers", "transformers")
