"""The JAX SPMD port (`jax_spmd`): per-device evidence, the one-jit merge, the device setting.

The port needs its forced host devices, made only where it imports jax
first: `tests/support/spmd_probe.py` runs in a fresh interpreter and the tests here
judge what it saw. Expected byte counts are computed here from the shapes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import implementations
from tests.support.helpers import ROOT
from tests.support.spmd_probe import B, D, F

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

FLOAT32 = 4


def probe(devices: int) -> dict:
    env = {**os.environ, "REMAT_SPMD_DEVICES": str(devices)}
    env.pop("XLA_FLAGS", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.spmd_probe"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=[4, 2], ids=["4 devices", "2 devices"])
def seen(request) -> tuple[int, dict]:
    return request.param, probe(request.param)


# The JAX fronts' table of issue 21, written by hand: jax.checkpoint's policy= is the same
# under NamedSharding. (roles kept, roles on the host, backward matmuls)
POLICY_ROLES = {
    "none": (["a", "mask", "x"], [], 4),
    "full": (["x"], [], 5),
    "save_dots": (["d1", "x"], [], 4),
    "save_named": (["h", "x"], [], 4),
    "offload_dots": (["d1", "x"], ["d1"], 4),
}


def test_each_declared_policy_keeps_the_jax_fronts_roles(seen):
    _, observed = seen
    got = {
        name: (o["roles"], o["host"], o["backward_matmuls"])
        for name, o in observed["policies"].items()
    }
    assert got == POLICY_ROLES


def test_the_device_setting_reaches_the_port(seen):
    devices, observed = seen
    assert observed["ranks"] == devices
    assert observed["devices"] == devices
    assert len(observed["batch_True"]) == devices


def test_with_the_checkpoint_each_device_keeps_its_shard_of_x_only(seen):
    devices, observed = seen
    for record in observed["batch_True"]:  # rows split: B/N rows of x per device
        assert record["kept_bytes"] == record["input_bytes"] == B // devices * D * FLOAT32
    for record in observed["feature_True"]:  # x replicated: all of it on every device
        assert record["kept_bytes"] == record["input_bytes"] == B * D * FLOAT32


def test_without_the_checkpoint_each_device_keeps_activations(seen):
    devices, observed = seen
    for layout, rows, width in (("batch", B // devices, F), ("feature", B, F // devices)):
        for record in observed[f"{layout}_False"]:
            # at least the relu's output, (rows, width) float32 on this device
            assert record["kept_bytes"] - record["input_bytes"] >= rows * width * FLOAT32
            assert record["backward_ops"] == {}


def test_backward_reruns_the_first_matmul_on_every_device(seen):
    _, observed = seen
    for layout in ("batch", "feature"):
        for on, off in zip(observed[f"{layout}_True"], observed[f"{layout}_False"], strict=True):
            assert on["backward_ops"].get("dot_general") == 1
            assert on["backward_matmuls"] == off["backward_matmuls"] + 1


def test_one_jit_merges_the_recomputation_away_on_xla_cpu(seen):
    """Pinned: compiled as ONE jit, XLA:CPU drops the checkpoint's optimization barrier, so
    the step runs as many matmuls with the checkpoint as without. This fails the day XLA
    keeps the barrier; then the per-device evidence may come from one program too."""
    _, observed = seen
    assert observed["merged_True"] == observed["merged_False"]


def test_the_mutant_without_jax_checkpoint_is_rejected_by_the_rank_evidence(seen):
    _, observed = seen
    assert observed["mutant"] != "passed"
    assert "rank evidence" in observed["mutant_ranks"]
    assert "rank 0" in observed["mutant_ranks"]


def test_where_jax_came_first_with_too_few_devices_the_port_loads_elsewhere():
    import jax

    if len(jax.devices()) >= 4:
        pytest.skip("this process has 4 devices already")
    implementations.load.cache_clear()
    try:
        with pytest.raises(implementations.PortUnavailable, match="process of its own") as found:
            implementations.load("jax_spmd")
    finally:
        implementations.load.cache_clear()
    assert found.value.held
