"""The test session's own set-up leaves the environment as the user's shell gave it, so the
processes its tests start run as a user's would."""

from __future__ import annotations

import os
import sys

import pytest

from tests import conftest

#: What loading the first stacks writes: MindSpore's protobuf and library path.
WRITTEN_BY_THE_FIRST_STACKS = ("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "LD_LIBRARY_PATH")


def test_loading_the_first_stacks_leaves_the_environment_as_it_was():
    loaded = [m.engine for m in conftest._FIRST if m.engine in sys.modules]
    if not loaded:
        pytest.skip("this session did not load MindSpore or Paddle first (their folders unused)")
    now = {name: os.environ.get(name) for name in WRITTEN_BY_THE_FIRST_STACKS}
    assert now == {name: conftest.ENVIRONMENT_AT_START.get(name) for name in now}, loaded


def test_what_collection_loaded_is_frozen_out_of_the_collector_s_scans():
    """`conftest.pytest_collection`: the collector is on again, and the objects collection
    left alive (the frameworks' modules, at least the test modules' own) are frozen, so a
    `gc.collect()` in a test no longer walks them."""
    import gc

    assert gc.isenabled()
    assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()
