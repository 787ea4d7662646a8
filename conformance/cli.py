"""`python -m conformance` (also installed as `remat-conformance`).

Commands (each in `conformance.commands`, which owns its flags):

- `run` (the default): every property on every available port, the
  side-by-side matrix, and the mutation score.
- `list`: the registered ports and whether they load.
- `vectors export PATH` / `vectors check --implementation NAME`: golden vectors.
- `compare`, `bench`: frameworks side by side (outputs, gradients, residuals,
  memory and time).
- `plan --depth L --memory M`: where to put the regions over L blocks within M, from the
  true optimum, per framework (`--measure`: run and measured against the prediction).
- `merge REPORT.json ...`: many runs' `--json` reports (one per CI job) as
  one matrix, grouped by machine and device; Markdown and JSON too.
- `report REPORT.json ...`: one self-contained HTML page (and Markdown) from
  run, compare, bench and versions reports.
- `versions EXTRA`: one extra's version sets, each installed into a venv of its
  own and run there: one matrix of port x version.

Every command but `vectors` (whose `export` and `check` take them) has the
output flags `--width N`, `--plain`, `--no-color` and `--verbose` (what the frameworks
print, kept in a log otherwise: `conformance.terminal.noise`)
(`conformance.terminal.style`); `--version` prints the version.
A word that is not a command is refused with the closest command named.

Exit codes: 0 success, 1 a check failed, 2 a usage error (one line naming
the flag, before any work: `conformance.commands.arguments`); 130, 143 and 129 when SIGINT,
SIGTERM or SIGHUP stopped it (every worker process stopped, no traceback; `run
--json` still prints its one document, marked `"interrupted": true`). Output
into a closed pipe (`... --json | head`) ends quietly, with the exit code of
SIGPIPE.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import signal
import sys
from collections.abc import Iterator

from .commands import (
    arguments,
    bench,
    compare,
    list_ports,
    merge,
    plan,
    report,
    run,
    vectors,
    versions,
)
from .distribution import version
from .running import environment, interrupts, isolation, scratch
from .terminal import noise, streams
from .terminal import style as terminal_style

COMMANDS = {
    "run": run,
    "list": list_ports,
    "vectors": vectors,
    "compare": compare,
    "bench": bench,
    "merge": merge,
    "plan": plan,
    "report": report,
    "versions": versions,
}


def parser() -> argparse.ArgumentParser:
    """The whole command line: one subcommand per module of `conformance.commands`."""
    top = arguments.Parser(
        prog="python -m conformance",
        description="Check every port of the nn.checkpoint exercise against the canonical "
        "Flax linen port. With no command, runs the suite.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = top.add_subparsers(dest="command")
    for name, module in COMMANDS.items():
        command = commands.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(command)
        if name != "vectors":  # its subcommands take them
            arguments.add_output_arguments(command)
    return top


def _not_a_command(word: str) -> str | None:
    """The error for a first word that is neither a command nor a flag (None: it is fine)."""
    if word in COMMANDS or word.startswith("-"):
        return None
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{word!r} is not a command{hint}; commands: {', '.join(COMMANDS)}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    streams.degrade_to_ascii()  # an ASCII stdout (LC_ALL=C) prints stand-ins, never fails
    if argv and (problem := _not_a_command(argv[0])):
        arguments.usage_exit("python -m conformance", problem)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "run")
    with interrupts.handled():
        try:
            args = parser().parse_args(argv)
            command = COMMANDS[args.command]
            args.argv = argv  # as given, for a report's title
            terminal_style.configure(
                getattr(args, "width", None),
                getattr(args, "plain", False),
                getattr(args, "no_color", False),
            )
            validate = getattr(command, "validate", None)
            if validate is not None:
                try:
                    validate(args)
                except arguments.UsageError as error:
                    words = [args.command, getattr(args, "vectors_command", None)]
                    prog = " ".join(["python -m conformance", *filter(None, words)])
                    arguments.usage_exit(prog, str(error))
            try:
                with _broken_pipes_raise():
                    environment.prepare()
                    with _framework_output_kept(args) as log:
                        # A signal whose exception a library swallowed still decides the code.
                        code = interrupts.exit_code(command.run(args))
                        sys.stdout.flush()  # a closed pipe shows here, not at exit
                        if code != 0:
                            noise.show_tail(log)
                return code
            except BrokenPipeError:
                return _closed_pipe()
            except scratch.RunError as error:  # the machine's (a full disk), not a port's
                isolation.kill_all()
                print(f"python -m conformance: error: {error}", file=sys.stderr)
                return 2
        except interrupts.Interrupted as stop:  # not inside a run's supervisor: stop here
            isolation.kill_all()
            print(f"{stop}: stopped", file=sys.stderr)
            return stop.exit_code


def _framework_output_kept(args: argparse.Namespace):
    """Frameworks' log lines kept out of the terminal (`terminal.noise`) for the commands
    that load frameworks here, unless `--verbose`; a run's workers keep theirs already."""
    quiet = args.command in noise.FRAMEWORK_COMMANDS and not getattr(args, "verbose", False)
    return noise.kept() if quiet else contextlib.nullcontext()


@contextlib.contextmanager
def _broken_pipes_raise() -> Iterator[None]:
    """Let rich's consoles raise `BrokenPipeError` too, for `main` to handle.

    rich's own handler (`Console.on_broken_pipe`, meant to be overridden) exits
    with 1, which means "a check failed" here.
    """
    from rich.console import Console

    def on_broken_pipe(console: Console) -> None:
        console.quiet = True  # print nothing more, and do not retry
        raise BrokenPipeError

    default = Console.on_broken_pipe
    Console.on_broken_pipe = on_broken_pipe
    try:
        yield
    finally:
        Console.on_broken_pipe = default


def _closed_pipe() -> int:
    """The reader went away (`| head`): stop quietly, as a process killed by SIGPIPE would."""
    # Python would flush stdout again at exit and print the error: point it at /dev/null.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + getattr(signal, "SIGPIPE", 13)  # 141, as a shell reports it
