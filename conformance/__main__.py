"""`python -m conformance`: see `conformance.cli`."""

from .cli import main

raise SystemExit(main())
