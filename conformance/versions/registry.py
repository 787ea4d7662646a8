"""The versions the package index serves, as pip sees them from here: `pip index versions`.

pip lists only versions it could install on this interpreter and platform (a wheel for its
tags, or an sdist), from every index pip is configured with (`--index-url`,
`--extra-index-url`, `--find-links`, as set in pip's configuration or `PIP_*` variables).
Pre-releases are left out, as pip leaves them out of an install.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys

from .project import packaging_lib


class RegistryError(RuntimeError):
    """The index could not be asked, or serves nothing that fits; the message says which."""


@functools.cache
def served(name: str, python: str = sys.executable) -> tuple[str, ...]:
    """Every version of distribution `name` the index serves here, newest first."""
    command = [python, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RegistryError(f"cannot ask the index for {name}: {error}") from None
    match = re.search(r"^Available versions: (.*)$", done.stdout, flags=re.M)
    if done.returncode != 0 or match is None:
        errors = [line for line in (done.stderr + done.stdout).splitlines() if "ERROR" in line]
        said = errors[-1].replace("ERROR: ", "") if errors else f"pip exited {done.returncode}"
        raise RegistryError(f"the index serves no {name} here ({said})")
    return tuple(v.strip() for v in match.group(1).split(",") if v.strip())


def newest(name: str) -> str:
    """The newest version of `name` the index serves here."""
    return served(name)[0]


def lowest(name: str, specifier: str) -> str:
    """The lowest version of `name` the index serves here that `specifier` allows."""
    lib = packaging_lib()
    allowed = lib.specifiers.SpecifierSet(specifier)
    fitting = {}
    for text in served(name):
        try:
            version = lib.version.Version(text)
        except lib.version.InvalidVersion:
            continue
        if not version.is_prerelease and version in allowed:
            fitting[version] = text
    if not fitting:
        raise RegistryError(f"the index serves no {name}{specifier} here")
    return fitting[min(fitting)]
