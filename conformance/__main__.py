"""`python -m conformance`: see `conformance.cli`."""

from .cli import main
from .running.processes import exit_now

exit_now(main())
