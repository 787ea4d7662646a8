"""Where a run ran: the machine's fields (parent side, `machine`) and a port's device (its
worker's side, `devices`)."""

from __future__ import annotations

import json
import pickle
import sys

import pytest

from conformance.running import devices, machine
from conformance.running.results import to_json
from conformance.running.suite import SuiteReport
from implementations import device_report

FRAMEWORKS = ("jax", "torch", "tensorflow", "mlx", "keras", "flax", "equinox")

# Field -> the types it may have (None where the OS may not say).
MACHINE_FIELDS = {
    "system": (str,),
    "os": (str,),
    "release": (str,),
    "platform": (str,),
    "architecture": (str,),
    "cpu": (str,),
    "cores": (int, type(None)),
    "usable_cores": (int, type(None)),
    "memory_bytes": (int, type(None)),
    "python": (str,),
    "python_implementation": (str,),
    "packages": (dict,),
    "variables": (dict,),
}


def test_the_machine_fields_are_present_and_typed():
    found = machine.describe()
    assert set(found) == set(MACHINE_FIELDS)
    for name, types in MACHINE_FIELDS.items():
        assert isinstance(found[name], types), (name, found[name])
    assert found["python"] == ".".join(map(str, sys.version_info[:3]))
    assert found["cpu"].strip()
    assert set(found["packages"]) == {"remat-conformance", "numpy", "hypothesis"}
    assert all(isinstance(v, str) for v in found["variables"].values())
    if sys.platform.startswith("linux"):
        assert found["cores"] >= 1
        assert 1 <= found["usable_cores"] <= found["cores"]
        assert found["memory_bytes"] > 2**26  # more than 64 MiB: bytes, not kB
    json.dumps(found)  # plain data


def test_no_hostname_is_recorded():
    import socket

    text = json.dumps(machine.describe())
    host = socket.gethostname()
    if len(host) >= 4:  # a very short name could appear in any string by chance
        assert host not in text


def test_run_json_carries_the_machine():
    report = SuiteReport("dev", 2, "menu", "flax_linen", [], None)
    data = to_json(report)
    assert data["machine"] == machine.describe()
    assert list(data)[:3] == ["kind", "schema", "machine"]  # what it is, then where it ran


X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model\t\t: 85
model name\t: Intel(R) Xeon(R)   Platinum 8272CL CPU @ 2.60GHz
"""
RASPBERRY = """processor\t: 0
BogoMIPS\t: 108.00
Hardware\t: BCM2835
Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""
POWER = "processor\t: 0\ncpu\t\t: POWER9, altivec supported\n"
ARM_SERVER = "processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (X86, "Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz"),
        (RASPBERRY, "Raspberry Pi 4 Model B Rev 1.4"),
        (POWER, "POWER9, altivec supported"),
    ],
)
def test_the_cpu_model_is_read_from_cpuinfo(text, expected):
    assert machine.cpu_model(text) == expected


def test_a_cpuinfo_without_a_name_still_gives_a_name():
    # ARM servers list part numbers only; an index ("processor: 0") is not a name.
    model = machine.cpu_model(ARM_SERVER)
    assert model
    assert model != "0"


def broken_probe():
    raise RuntimeError("no device today")


def test_a_failing_probe_is_reported_not_raised(monkeypatch):
    engine, (module, _) = next(iter(devices.probes().items()))
    monkeypatch.setitem(sys.modules, module, object())  # "imported", and useless
    probes = {engine: (module, f"{__name__}:broken_probe")}
    monkeypatch.setattr(devices, "probes", lambda: probes)
    found = devices.port_environment(type("P", (), {"framework": engine})())
    assert "no device today" in found["frameworks"][engine]["error"]
    assert found["device"]["framework"] == engine


class _Port:
    framework = "numpy"

    def __init__(self, precision):
        self._precision = precision

    def matmul_precision(self):
        if isinstance(self._precision, Exception):
            raise self._precision
        return self._precision


def test_the_port_precision_is_read_defensively():
    assert devices.port_precision(object()) == {}
    given = {"default": "tf32", "pinned": "highest", "flags": {"cudnn": False}, "n": (1, 2)}
    assert devices.port_precision(_Port(given)) == {
        "default": "tf32",
        "pinned": "highest",
        "flags": {"cudnn": False},
        "n": [1, 2],
    }
    assert devices.port_precision(_Port({"pinned": object})) == {"pinned": str(object)}
    assert "RuntimeError" in devices.port_precision(_Port(RuntimeError("no")))["error"]
    assert "not a dict" in devices.port_precision(_Port(["highest"]))["error"]


def test_a_port_without_a_framework_computes_on_the_cpu(monkeypatch):
    for module, _ in devices.probes().values():
        monkeypatch.delitem(sys.modules, module, raising=False)
    found = devices.port_environment(_Port({"default": "a", "pinned": "b"}))
    assert found == {
        "device": {"kind": "cpu", "name": "cpu", "framework": "numpy"},
        "frameworks": {},
        "precision": {"default": "a", "pinned": "b"},
    }


@pytest.mark.parametrize(
    ("framework", "imported", "expected"),
    [
        ("torch", ["jax", "torch"], "torch"),
        ("flax", ["jax"], "jax"),
        ("dm-haiku", ["torch", "jax"], "jax"),
        ("equinox", [], ""),
        ("something", ["tensorflow"], "tensorflow"),
    ],
)
def test_the_primary_framework(framework, imported, expected):
    assert devices.primary_framework(framework, imported) == expected


def test_a_port_computes_with_its_manifests_engine():
    # A Keras port's engine is its backend (its manifest entry says which).
    assert devices.primary_framework("keras", ["jax", "torch"], "torch") == "torch"
    assert devices.primary_framework("keras", ["jax", "torch"], "tensorflow") == "jax"


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("cpu", "cpu", {"kind": "cpu", "name": "cpu"}),
        ("gpu", "NVIDIA A100", {"kind": "gpu", "name": "NVIDIA A100"}),
        ("cuda", "NVIDIA A100", {"kind": "gpu", "name": "NVIDIA A100", "api": "cuda"}),
        ("METAL", "Apple M2", {"kind": "gpu", "name": "Apple M2", "api": "metal"}),
        ("tpu", "TPU v4", {"kind": "tpu", "name": "TPU v4"}),
    ],
)
def test_device_kinds_are_normalised(kind, name, expected):
    assert device_report.device(kind, name) == expected


def test_identical_devices_are_counted_once():
    gpu = {"kind": "gpu", "name": "NVIDIA H100"}
    cpu = device_report.CPU
    counted = device_report.counted([dict(cpu), dict(gpu), dict(gpu)])
    assert counted == [{**cpu, "count": 1}, {**gpu, "count": 2}]


def _pinned_environment(framework: str, port_name: str) -> dict:
    """What a worker reports of the port's environment, once the port pinned its precision."""
    pytest.importorskip(framework)
    from tests.support.helpers import port_or_skip

    port = port_or_skip(port_name)
    port.pin_matmul_precision()
    return devices.port_environment(port)


def test_a_torch_port_reports_its_device_and_pinned_precision():
    found = _pinned_environment("torch", "pytorch")
    torch_entry = found["frameworks"]["torch"]
    assert found["device"]["framework"] == "torch"
    assert torch_entry["matmul_precision"] == "highest"  # what pin_matmul_precision set
    assert torch_entry["allow_tf32"] == {"cuda.matmul": False, "cudnn": False}
    assert {"kind": "cpu", "name": "cpu", "count": 1} in torch_entry["devices"]
    # It crosses a pipe from the worker and lands in the JSON report.
    assert pickle.loads(pickle.dumps(found)) == found
    json.dumps(found)


def test_a_jax_port_reports_its_backend():
    found = _pinned_environment("jax", "jax_checkpoint")
    jax_entry = found["frameworks"]["jax"]
    import jax

    assert found["device"]["framework"] == "jax"
    assert found["device"]["kind"] == jax.devices()[0].platform.lower()
    assert jax_entry["backend"] == jax.default_backend()
    assert jax_entry["matmul_precision"] == "highest"
