"""The command line, one module per command: each owns its flags and its glue.

Every module here has `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int` (the exit code). The work itself lives in the engines
(`suite`, `vectors`, `compare`, `bench`, `merge`), which parse nothing.
`conformance.cli` puts the commands together.
"""
