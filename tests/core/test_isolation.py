"""Each port imports only its own stack; the packages themselves import none.

Every port runs in a fresh interpreter in which every other framework is
unimportable (`sys.modules[name] = None`): its exercise, a VJP and its
evidence must work, and no other framework may load. Ports of the same stack
(blocked from the same frameworks) share one interpreter, one after another.
The output is checked against the float64 reference on Flax's parameters from
the numpy init, so no framework is needed to judge it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conformance.checking.tolerance import analyse_forward
from implementations import SHARDED, manifests
from implementations.stacks.numpy import canonical_params
from tests import reference
from tests.helpers import ROOT


def _own_stack(modules: tuple[str, ...]) -> tuple[str, ...]:
    # jaxlib comes with jax: blocking it would block jax.
    return (*modules, "jaxlib") if "jax" in modules else modules


# Each port's own stack (its manifest entry's modules): everything else in FRAMEWORKS is made
# unimportable. Keras imports jax, torch or tensorflow when it finds them (e.g. jax for its
# Orbax callback), and tolerates each being unimportable. A process port (tfjs) is a program
# of its own: every Python framework is blocked.
OWN_STACK = {name: _own_stack(entry.modules) for name, (_, entry) in manifests.ports().items()}
FRAMEWORKS = tuple(dict.fromkeys(m for modules in OWN_STACK.values() for m in modules))

SEED, FEATURES = 2**40 + 5, 4
X = [0.5, -1.25, 2.0, 0.0, 3.0, -0.5]

ISOLATED = textwrap.dedent(
    """
    import json, sys
    blocked = json.loads(sys.argv[2])
    for name in blocked:
        sys.modules[name] = None  # any import of it now raises ImportError

    import numpy as np
    from implementations import load

    seed, x, features = json.loads(sys.argv[3])
    x = np.array(x, np.float32)
    found = {}
    for name in json.loads(sys.argv[1]):
        port = load(name)  # the registry path
        y = port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), features))
        params = port.init_params(seed, x.shape[0], features)
        grads = port.vjp(params, x, np.ones(features, np.float32))
        record = port.exercise_record(seed, x, features)
        leaked = sorted(
            m for m in sys.modules
            if m.split(".")[0] in blocked and sys.modules[m] is not None
        )
        found[name] = {
            "y": y.tolist(),
            "dx": grads.x.tolist(),
            "recomputed": sum(record.recomputed.values()),
            "activations": len(record.saved_by_origin("activation")),
            "leaked": leaked,
        }
    print(json.dumps(found))
    """
)


def run_isolated(names: list[str], blocked: list[str]) -> dict[str, dict]:
    """Each of `names` (ports of one stack) in turn, in one interpreter where `blocked` is
    unimportable: what each computed and which blocked module had loaded after it."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            ISOLATED,
            json.dumps(names),
            json.dumps(blocked),
            json.dumps([SEED, X, FEATURES]),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def isolated():
    """The ports' results, one interpreter per stack: the ports of one stack (torch's eager
    and compiled ports, Flax's two) are blocked from the same frameworks, so they share it."""
    found: dict[str, dict] = {}

    def result(name: str) -> dict:
        if name not in found:
            # A sharded port alone: it sets up its devices before its framework's import.
            same = [n for n, stack in OWN_STACK.items() if stack == OWN_STACK[name]]
            names = [name] if name in SHARDED else sorted(set(same) - SHARDED)
            blocked = [f for f in FRAMEWORKS if f not in OWN_STACK[name]]
            found.update(run_isolated(names, blocked))
        return found[name]

    return result


@pytest.mark.parametrize("name", sorted(OWN_STACK))
def test_a_port_runs_with_every_other_framework_unimportable(isolated, name):
    # Skip where the port's own stack is missing. Asked of the installed
    # packages, not by loading the port here: a Keras port would claim this
    # process's Keras backend.
    missing = [m for m in OWN_STACK[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    result = isolated(name)
    assert result["leaked"] == []
    assert result["recomputed"] > 0
    assert result["activations"] == 0
    x = np.array(X, np.float32)
    params = canonical_params(SEED, x.shape[0], FEATURES)
    # The port's own init may differ from Flax's by 2 ulp, as the suite allows.
    error = np.abs(np.asarray(result["y"], np.float64) - reference.forward(params, x))
    assert np.all(error <= analyse_forward(params, x, param_ulps=2).e2)


def test_importing_the_packages_imports_no_framework():
    code = f"""
        import sys
        import implementations, conformance, conformance.checking.tolerance, conformance.cli
        import implementations.stacks, implementations.stacks.base
        from implementations import manifests
        for name in implementations.stacks.NAMES:  # each stack's package and manifest
            __import__(f"implementations.stacks.{{name}}")
        manifests.manifests()
        from conformance.running import devices, machine
        implementations.registered()
        machine.describe()  # the parent's side of the machine fields
        devices.port_environment(type("P", (), {{"framework": "jax"}})())
        loaded = [m for m in {FRAMEWORKS!r} if m in sys.modules]
        assert not loaded, loaded
        print("ok")
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
