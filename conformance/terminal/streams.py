"""Output streams that cannot fail on a character: ASCII where stdout cannot encode the rest.

The reports use a few characters outside ASCII (a middle dot, a check mark, plus-minus,
arrows, box rules). Under a C or POSIX locale without Python's UTF-8 mode (`LC_ALL=C
PYTHONUTF8=0`, or `PYTHONIOENCODING=ascii`) stdout's encoding is ASCII, and one such
character ended a command with `UnicodeEncodeError`. `degrade_to_ascii` (the CLI calls it
once, before any command) gives such a stream an error handler that writes an ASCII
stand-in for each character it cannot encode (the middle dot as `-`, the check mark as
`+`, ...; an accented letter as its base letter; anything else as `?`),
so every command prints, in ASCII.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import sys
import unicodedata

HANDLER = "remat-ascii"

#: The report's own characters, each with what it reads as in ASCII.
STAND_INS = {
    "\u00b7": "-",  # middle dot
    "\u2713": "+",  # check mark
    "\u2717": "x",  # ballot x
    "\u00d7": "x",  # multiplication sign
    "\u00b1": "+-",  # plus-minus sign
    "\u2192": "->",  # rightwards arrow
    "\u2190": "<-",  # leftwards arrow
    "\u2264": "<=",  # less-than or equal to
    "\u2265": ">=",  # greater-than or equal to
    "\u2248": "~",  # almost equal to
    "\u2026": "...",  # horizontal ellipsis
    "\u2014": "--",  # em dash
    "\u2013": "-",  # en dash
    "\u2212": "-",  # minus sign
    "\u00b5": "u",  # micro sign
    "\u2018": "'",  # left single quotation mark
    "\u2019": "'",  # right single quotation mark
    "\u201c": '"',  # left double quotation mark
    "\u201d": '"',  # right double quotation mark
    "\u2500": "-",  # box drawings light horizontal
    "\u2501": "-",  # box drawings heavy horizontal
    "\u2502": "|",  # box drawings light vertical
    "\u2503": "|",  # box drawings heavy vertical
}


def stand_in(character: str) -> str:
    """ASCII for one character: its listed stand-in, else its base letter, else `?`."""
    if character in STAND_INS:
        return STAND_INS[character]
    if unicodedata.category(character).startswith("Z"):  # a non-breaking or thin space
        return " "
    base = unicodedata.normalize("NFKD", character).encode("ascii", "ignore").decode()
    return base or "?"


def _replace(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(stand_in(c) for c in text), error.end


codecs.register_error(HANDLER, _replace)


def cannot_encode(stream: io.TextIOBase, sample: str = "·✓─") -> bool:
    """Whether `stream`'s encoding fails on the report's characters."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        sample.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def degrade_to_ascii() -> None:
    """Give stdout and stderr the ASCII stand-ins where their encoding cannot take the report's
    characters (a stream that cannot be reconfigured, such as a test's capture, is left)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and cannot_encode(stream):
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors=HANDLER)
