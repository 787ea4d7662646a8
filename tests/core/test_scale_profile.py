"""The sharded ports through the suite, as `python -m conformance --profile scale` runs them.

The default run leaves `jax_spmd` and `torch_fsdp` out (their rank processes
and devices cost start-ups the default budget has no room for); the `scale`
profile runs them, every property, in worker processes of their own. This
is the README's test command's check that they pass.
"""

from __future__ import annotations

import pytest

import implementations
from conformance.checking.properties import PROPERTIES
from conformance.mutants import MUTANTS
from conformance.running import profiles
from conformance.running.suite import RunConfig, plan, run_suite


def test_the_default_run_leaves_the_sharded_ports_and_their_mutants_out(tmp_path):
    registered = implementations.registered()
    default = profiles.default_ports(profiles.DEFAULT, registered)
    assert not set(default) & implementations.SHARDED
    assert set(profiles.default_ports(profiles.SCALE, registered)) == implementations.SHARDED
    jobs = plan(RunConfig(ports=tuple(default), mutants=True), tmp_path)
    hunted = {name for job in jobs for run in job.items for name in run.mutants}
    assert "fsdp_no_checkpoint" not in hunted
    assert "spmd_no_checkpoint" not in hunted
    scale = plan(RunConfig(ports=(), profile=profiles.SCALE, mutants=True), tmp_path)
    assert {name for job in scale for run in job.items for name in run.mutants} == {
        name for name, spec in MUTANTS.items() if spec.family in implementations.SHARDED
    }


@pytest.fixture(scope="module")
def scale_run():
    ports = tuple(sorted(implementations.SHARDED))
    return run_suite(RunConfig(ports=ports, profile=profiles.SCALE, mutants=False, jobs=2))


@pytest.mark.parametrize("name", sorted(implementations.SHARDED))
def test_the_sharded_port_passes_every_property(scale_run, name):
    (report,) = [port for port in scale_run.ports if port.name == name]
    if report.state == "unavailable":
        pytest.skip(report.reason)
    assert report.state == "available", report.reason
    statuses = {o.property: (o.status, o.message) for o in report.outcomes}
    assert set(statuses) == {p.key for p in PROPERTIES}
    assert all(status == "pass" for status, _ in statuses.values()), statuses
