"""Every flag and environment variable of the commands, checked before any work.

The `type=` functions here (`positive_int`, `seed`, `positive_seconds`,
`jobs`, `writable_directory`, `writable_file`, `existing_directory`,
`existing_file`, `port_name`, `property_key`, `profile_name`, `replay_blob`)
raise `argparse.ArgumentTypeError` with a message that starts "must" (or
"is"), and `Parser.error` prints it as one line naming the flag, then exits
2: `python -m conformance run: error: --timeout must be a positive number of
seconds, got 'nan'`. The pytest plugin calls the same functions through
`check`, so its options say the same things.

Output paths are probed by writing (a temporary file, removed at once), not
by `os.access`: root passes `os.access` on a read-only or virtual file system,
and the point is to fail before a long sweep, not after it.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

import implementations
from implementations import manifests

from ..checking.properties import BY_ID, BY_KEY
from ..running import replays
from ..running.profiles import DEFAULT, ENV_VAR, PROFILES

#: The largest seed the contract takes (`docs/PORTING.md`: seeds in [0, 2**63 - 1]).
MAX_SEED = 2**63 - 1

Invalid = argparse.ArgumentTypeError


class UsageError(Exception):
    """A bad argument found after parsing (an environment variable, two flags together)."""


class Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line naming the flag (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def one_line(message: str) -> str:
    """argparse's "argument --x: must be ..." as "--x must be ...", on one line."""
    message = re.sub(r"^argument ([^:]+): (must|is) ", r"\1 \2 ", message)
    message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
    return " ".join(message.split())


def usage_exit(prog: str, message: str) -> NoReturn:
    """Print `prog: error: message` on one line and exit 2, as `Parser.error` does."""
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    raise SystemExit(2)


def check(kind: Callable[[str], Any], value: Any, flag: str) -> Any:
    """`kind(value)` for a value that did not come through argparse; `UsageError` names `flag`."""
    try:
        return kind(str(value))
    except Invalid as error:
        raise UsageError(one_line(f"argument {flag}: {error}")) from None


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------


def _integer(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise Invalid(f"must be {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (a count: examples, repeats, a batch, a width)."""
    value = _integer(text, "a positive integer")
    if value < 1:
        raise Invalid(f"must be a positive integer, got {text!r}")
    return value


def seed(text: str) -> int:
    """A seed the contract takes: an integer in [0, 2**63 - 1]."""
    value = _integer(text, f"an integer from 0 to 2**63 - 1 ({MAX_SEED})")
    if not 0 <= value <= MAX_SEED:
        raise Invalid(f"must be an integer from 0 to 2**63 - 1 ({MAX_SEED}), got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (nan or inf would turn the timeout off)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise Invalid(f"must be a positive number of seconds, got {text!r}")
    return value


def jobs(text: str) -> int:
    """A positive number of worker processes, or "auto" (one per core)."""
    if text.strip() == "auto":
        return os.cpu_count() or 1
    try:
        return positive_int(text)
    except Invalid:
        raise Invalid(f"must be a positive integer or 'auto', got {text!r}") from None


# ---------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------


def _probe(directory: Path) -> str | None:
    """Why a new file cannot be made in `directory` (None: it can); leaves nothing behind."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".remat-probe-"):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def writable_directory(text: str) -> Path:
    """A directory to write into: existing and writable, or creatable (refuses a file)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise Invalid(f"must be a directory, and {text} is a file")
    existing = path
    while not existing.exists():  # the nearest existing ancestor, where mkdir would start
        existing = existing.parent
    if not existing.is_dir():
        raise Invalid(f"must be a directory, and {existing} is a file")
    reason = _probe(existing)
    if reason is not None:
        raise Invalid(
            f"must be a directory this process can write to, and it cannot create files in "
            f"{existing} ({reason})"
        )
    return path


def writable_file(text: str) -> Path:
    """A file to write: in an existing, writable directory; an existing file is replaced."""
    path = Path(text)
    if path.is_dir():
        raise Invalid(f"must be a file, and {text} is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise Invalid(f"must be in an existing directory: no directory {str(parent)!r}")
    if path.exists():
        try:
            with open(path, "ab"):  # opens for writing, changes nothing
                pass
        except OSError as error:
            raise Invalid(f"must be a file this process can write: {text}: "
                          f"{error.strerror}") from None  # fmt: skip
        return path
    reason = _probe(parent)
    if reason is not None:
        raise Invalid(
            f"must be in a directory this process can write to, and it cannot create files in "
            f"{parent} ({reason})"
        )
    return path


def existing_directory(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise Invalid(f"must be an existing directory, got {text!r}")
    return path


def existing_file(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise Invalid(f"must be an existing file, got {text!r}")
    return path


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


def known_name(text: str, known: Iterable[str], what: str) -> str:
    """`text` if it is one of `known`; else an error that lists them (and the closest)."""
    known = list(known)
    if text in known:
        return text
    close = difflib.get_close_matches(text, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise Invalid(f"is not a known {what}: {text!r}{hint}; known: {', '.join(known)}")


def port_name(text: str) -> str:
    """A registered port (built-in or from an entry point); imports no framework. A
    framework's name (`jax`, `torch`) is answered with its ports."""
    registered = implementations.registered()
    on = [] if text in registered else ports_on(text)
    if not on:  # a port, or a misspelt one (the closest is suggested)
        return known_name(text, registered, "port")
    raise Invalid(
        f"is not a known port: {text!r} (did you mean the {text} ports: {', '.join(on)}?); "
        f"known: {', '.join(registered)}"
    )


def ports_on(framework: str) -> list[str]:
    """The built-in ports on a framework, named as a stack, an engine or a pip extra is
    (`jax`: the JAX ports, Keras's on JAX among them)."""
    return [
        name
        for name, (manifest, port) in manifests.ports().items()
        if framework in (manifest.stack, manifest.engine_of(port), *port.extra.split(","))
    ]


def property_key(text: str) -> str:
    """A property by letter ("c") or key ("c_vjp"); returns the key."""
    found = BY_ID.get(text) or BY_KEY.get(text)
    if found is None:
        known_name(text, [*BY_KEY, *BY_ID], "property (a letter or a key)")
    return found.key


def profile_name(text: str) -> str:
    return known_name(text, PROFILES, "profile")


def profile_from_environment(given: str | None) -> str:
    """The profile to use: `given`, else `$REMAT_PROFILE`, checked, else the default."""
    if given is not None:
        return given
    value = os.environ.get(ENV_VAR)
    return check(profile_name, value, ENV_VAR) if value else DEFAULT


def replay_blob(text: str) -> str:
    """`PORT:PROPERTY:VERSION:BLOB` from a failure's replay command (or the older
    `VERSION:BLOB`), for this Hypothesis, and decodable (`conformance.running.replays`)."""
    import hypothesis
    from hypothesis.core import decode_failure
    from hypothesis.errors import InvalidArgument

    try:
        version, blob = replays.parse(text).hypothesis
    except ValueError as error:
        raise Invalid(str(error)) from None
    if version != hypothesis.__version__:
        raise Invalid(
            f"is from Hypothesis {version}, and this is Hypothesis {hypothesis.__version__}: "
            "a blob replays only on the version that wrote it"
        )
    try:
        decode_failure(blob)
    except (InvalidArgument, ValueError, TypeError):
        raise Invalid(f"is not a blob Hypothesis can decode: {blob!r}") from None
    return text


# ---------------------------------------------------------------------------
# Flags shared by the commands
# ---------------------------------------------------------------------------


#: A flag that takes several values: `--implementation a b` and `--implementation a
#: --implementation b` alike (argparse's "append" takes one value per flag).
SEVERAL = {"nargs": "+", "action": "extend"}


def add_port_argument(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    """`--implementation NAME ...`, with `--port` as its alias (the pytest plugin's name)."""
    options = {**SEVERAL, **kwargs}
    if options["action"] == "store":  # one port: no nargs
        options.pop("nargs")
    parser.add_argument(
        "--implementation",
        "--port",
        dest="implementation",
        type=port_name,
        metavar="NAME",
        help=help,
        **options,
    )


#: Where `PortsThenFiles` puts the files after the ports, for the command to add to its
#: positional's (`report.validate`).
FILES_AFTER_PORTS = "files_after_ports"


class PortsThenFiles(argparse.Action):
    """`--implementation a b REPORT.json`: port names, then, from the first value that is an
    existing file and no port, files for the positional (`FILES_AFTER_PORTS`): argparse's
    "+" would take them as ports, though the user put the positional after the flag."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        ports, files = list(getattr(namespace, self.dest, None) or []), []
        registered = implementations.registered()
        try:
            for value in values:
                if files or (value not in registered and Path(value).is_file()):
                    files.append(existing_file(value))
                else:
                    ports.append(port_name(value))
        except Invalid as error:
            raise argparse.ArgumentError(self, str(error)) from None
        setattr(namespace, self.dest, ports)
        # Kept apart: argparse sets the positional after the flags, over anything put there.
        later = getattr(namespace, FILES_AFTER_PORTS, None) or []
        setattr(namespace, FILES_AFTER_PORTS, [*later, *files])


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """`--width`, `--plain`, `--no-color`: how a report is laid out (`terminal.style`);
    `--verbose`: the frameworks' own output shown (`terminal.noise`)."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--width",
        type=positive_int,
        default=None,
        metavar="N",
        help="lay out for N columns; a table that cannot fit is printed wider, never cut "
        "(default: the terminal's width, or 80 off a terminal)",
    )
    group.add_argument(
        "--plain",
        action="store_true",
        help="for logs: no colour or escape codes, ASCII rules, no progress display",
    )
    group.add_argument(
        "--no-color",
        action="store_true",
        help="no colour or any other escape code (as the NO_COLOR variable does)",
    )
    group.add_argument(
        "--verbose",
        action="store_true",
        help="show what the frameworks print as they load and run (log lines); without it "
        "they are kept in a log, whose last lines a failed command shows",
    )
