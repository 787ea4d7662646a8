"""Paddle after TensorFlow: the Paddle stack refuses to import Paddle (it would segfault) and the
bench and registry say why, never exit 139."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess


def test_paddle_after_tensorflow_is_skipped_with_the_reason_never_a_segfault():
    pytest.importorskip("tensorflow")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import tensorflow
                from conformance import benchmark as bench
                loaded, skipped = bench.load_frameworks(["paddle"])
                print(list(loaded), "|", skipped["paddle"])
                """
            ),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, reason = done.stdout.strip().splitlines()[-1].split(" | ")
    assert loaded == "[]"
    assert reason.startswith("cannot load in this process (Paddle cannot be imported after")
