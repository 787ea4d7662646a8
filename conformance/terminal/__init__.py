"""The run's report: the terminal tables, their style, and JSON conversion."""
