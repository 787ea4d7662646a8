"""The thorough profile's hunt: random examples, shapes up to 300, on one port of each kind of
stack (a JAX front, eager torch, numpy's autograd); 300 examples a property (the profile's
1,000 took over 8 minutes here), new ones on every run.

The fast tier runs every port at the dev profile, derandomized: the same 10 examples each
time. This hunt draws new ones on every run (the thorough profile stays random), so a bound
too tight for some shape, or a port wrong on a rare one, is found here first; its failure
prints the `--reproduce` blob that replays it.
"""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import run_cli

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="119 s alone: 300 random examples a property on three ports"),
]

PORTS = ("jax_checkpoint", "pytorch", "hips_autograd")
EXAMPLES = 300


@pytest.fixture(scope="module")
def hunt():
    pytest.importorskip("jax")  # the canonical port's framework
    args = ["run", "--profile", "thorough", "--examples", str(EXAMPLES), "--no-mutants", "--json"]
    for name in PORTS:
        args += ["--implementation", name]
    done = run_cli(*args, timeout=1800)
    return done, json.loads(done.stdout)


def test_the_hunt_passes_every_property_on_every_installed_port(hunt):
    done, report = hunt
    assert report["profile"] == "thorough"
    ran = [port for port in report["ports"] if port["state"] == "available"]
    assert ran, "no port of the hunt was installed"
    # What the hunt found, whole (each failure's message holds its --reproduce command): a
    # random find is seen once, so the failure must say all of it.
    found = [
        (port["name"], outcome)
        for port in ran
        for outcome in port["outcomes"]
        if outcome["status"] not in ("pass", "reference")
    ]
    assert not found, json.dumps(found, indent=1)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_hunt_ran_its_number_of_random_examples(hunt):
    _, report = hunt
    assert report["max_examples"] == EXAMPLES
    for port in report["ports"]:
        if port["state"] != "available":
            continue
        counts = {o["property"]: o["examples"] for o in port["outcomes"] if o["status"] == "pass"}
        # (d) runs half the examples, (e) and (h) a quarter; the rest all of them, unless
        # the property is one whose example space is smaller than that (Hypothesis stops).
        assert max(counts.values()) >= EXAMPLES // 2, (port["name"], counts)
