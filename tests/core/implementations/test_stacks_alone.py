"""Every port, in one interpreter per stack in which every other framework is unimportable:
it runs alone (isolation), no size aborts it (sizes), it passes the golden vectors (vectors),
and it declares what the registry and the README say (declarations).

**Isolation.** Each port imports only its own stack: its exercise, a VJP and its evidence must
work with every other framework blocked (`sys.modules[name] = None`), and no other framework
may load. The output is checked against the float64 reference on Flax's parameters from the
numpy init, so no framework is needed to judge it.

**Sizes** are part of the contract: limits checked before anything is allocated, in every
port. Without them, `features=2**31` aborted the interpreter (SIGABRT, XLA's "overflow in
static extent product") in every JAX port, and keras_jax aborted at `features=10**7`.

**Golden vectors** are checked there too, through `vectors check`: a port can be held to the
canonical answers where JAX is not installed.

**Declarations** are read off the loaded port class: its name, framework, stack and checkpoint
API, held to the registry (the stacks' manifests, a lazy list so that listing ports imports no
framework) and to the README's ports table (tests/core/implementations/test_declarations.py checks
the rest of
the table without loading anything).

Ports of the same stack (torch's eager and compiled ports, Flax's two: blocked from the same
frameworks) share one interpreter, one after another; a sharded port runs alone, since it
sets up its devices before its framework's import. A port that aborts the interpreter fails
its own tests, with the exit code and what it wrote last; the ports before it keep theirs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import implementations
import implementations.stacks
from conformance.checking.tolerance import analyse_forward
from implementations import SHARDED
from implementations.stacks.numpy import canonical_params
from tests.support import reference
from tests.support.helpers import ROOT, ports_own_stacks, readme_ports_table

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

#: The stack whose interpreter the fast tier starts: numpy's autograd, the quickest to load.
#: Every other stack's is the full tier's (each loads its framework and traces every size).
FAST_TIER_PORT = "hips_autograd"
ALONE = pytest.mark.slow(
    reason="54 s alone for every stack: one interpreter per stack, each loads its framework"
)

# Each port's own stack (its manifest entry's modules): everything else in FRAMEWORKS is made
# unimportable. Keras imports jax, torch or tensorflow when it finds them (e.g. jax for its
# Orbax callback), and tolerates each being unimportable. A process port (tfjs) is a program
# of its own: every Python framework is blocked.
OWN_STACK = ports_own_stacks()
FRAMEWORKS = tuple(dict.fromkeys(m for modules in OWN_STACK.values() for m in modules))
PORTS = [
    pytest.param(name, marks=() if name == FAST_TIER_PORT else ALONE) for name in sorted(OWN_STACK)
]

SEED, FEATURES = 2**40 + 5, 4
X = [0.5, -1.25, 2.0, 0.0, 3.0, -0.5]

# Each size call gives the argument its ValueError must name. x stand-ins are stride-0 numpy
# arrays (no data); "native" x is the port's own array of a size that is cheap to make.
# `budget` sets REMAT_MAX_BYTES for the call.
PROBE = textwrap.dedent(
    """
    import contextlib, io, json, os, re, sys
    blocked = json.loads(sys.argv[2])
    for name in blocked:
        sys.modules[name] = None  # any import of it now raises ImportError

    import numpy as np
    import implementations, implementations.stacks
    from implementations import collector


    def results_of(port):
        def huge(dim):
            return np.broadcast_to(np.zeros((), np.float32), (dim,))

        def native(dim):
            return port.from_numpy(np.ones(dim, np.float32))

        fwd, init = port.nn_checkpoint_forward, port.init_params
        ones8 = np.ones(8, np.float32)
        CALLS = [  # (label, argument to name, REMAT_MAX_BYTES or None, function, arguments)
            ("features=2**31", "features", None, fwd, (0, ones8, 2**31)),
            ("features=2**31, native x", "features", None, fwd, (0, native(8), 2**31)),
            ("features=10**7, D=10**4", "features", None, fwd, (0, native(10**4), 10**7)),
            ("features=46341", "features", None, fwd, (0, native(8), 46341)),
            ("D=2**31", "x", None, fwd, (0, huge(2**31), 3)),
            ("D=2**40", "x", None, fwd, (0, huge(2**40), 3)),
            ("D*F=2**31, native x", "x", None, fwd, (0, native(2**21), 2**10)),
            ("D=F=46340: 17 GB, budget 8 GiB", "x", 2**33, fwd, (0, huge(46340), 46340)),
            ("8 MB, budget 1 MiB, native x", "x", 2**20, fwd, (0, native(1024), 1024)),
            ("init_params features=2**31", "features", None, init, (0, 8, 2**31)),
            ("init_params dim=2**31", "dim", None, init, (0, 2**31, 3)),
            ("init_params dim*features=2**31", "dim", None, init, (0, 2**21, 2**10)),
            ("init_params 8 MB, budget 1 MiB", "dim", 2**20, init, (0, 1024, 1024)),
        ]

        if port.framework in ("jax", "flax", "equinox", "dm-haiku") or port.name == "keras_jax":
            import jax, jax.numpy as jnp

            def under_jit(dim, features):
                # jit with static F, x abstract: traced, never allocated nor run.
                run = jax.jit(fwd, static_argnums=(0, 2))
                return jax.eval_shape, (run, 0, jax.ShapeDtypeStruct((dim,), jnp.float32), features)

            CALLS += [
                ("jit, features=2**31", "features", None, *under_jit(8, 2**31)),
                ("jit, D=2**31", "x", None, *under_jit(2**31, 3)),
                ("jit, D*F=2**31", "x", None, *under_jit(2**21, 2**10)),
            ]
        if port.framework == "keras":
            import keras

            def symbolic(dim):
                return keras.KerasTensor((dim,), "float32")

            CALLS += [
                ("KerasTensor, features=2**31", "features", None, fwd, (0, symbolic(8), 2**31)),
                ("KerasTensor, D*F=2**31", "x", None, fwd, (0, symbolic(2**21), 2**10)),
            ]

        results = []
        for label, argument, budget, function, arguments in CALLS:
            if budget is not None:
                os.environ["REMAT_MAX_BYTES"] = str(budget)
            try:
                function(*arguments)
                results.append((label, "accepted"))
            except Exception as error:
                named = re.search(rf"\\b{argument}\\b", str(error))
                ok = isinstance(error, ValueError) and named
                said = f"{type(error).__name__}: {str(error)[:200]}"
                results.append((label, "ok" if ok else said))
            finally:
                os.environ.pop("REMAT_MAX_BYTES", None)
        return results


    def leaked():
        # The blocked frameworks' modules, loaded all the same.
        return sorted(
            m for m in sys.modules
            if m.split(".")[0] in blocked and sys.modules[m] is not None
        )


    def isolated(port, seed, x, features):
        y = port.to_numpy(port.nn_checkpoint_forward(seed, port.from_numpy(x), features))
        params = port.init_params(seed, x.shape[0], features)
        grads = port.vjp(params, x, np.ones(features, np.float32))
        record = port.exercise_record(seed, x, features)
        return {
            "y": y.tolist(),
            "dx": grads.x.tolist(),
            "recomputed": sum(record.recomputed.values()),
            "activations": len(record.saved_by_origin("activation")),
            "leaked": leaked(),
        }


    def vector_checks(name):
        # As a user without the canonical stack checks a port: `vectors check --json`.
        from conformance.cli import main

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = main(["vectors", "check", "--implementation", name, "--json"])
        return {"status": status, "checks": json.loads(printed.getvalue()), "leaked": leaked()}


    def declared(port):
        return {
            "class": type(port).__module__ + ":" + type(port).__qualname__,
            "name": port.name, "framework": port.framework,
            "checkpoint_api": port.checkpoint_api,
            "stack": port.stack.name if hasattr(port, "stack") else None,
            "is_port": isinstance(port, implementations.stacks.Port),
        }


    seed, x, features = json.loads(sys.argv[3])
    x = np.array(x, np.float32)
    for name in json.loads(sys.argv[1]):
        try:
            # The registry path; what it loads frozen out of the collector's later scans, as
            # the suite's workers do (a third of TensorFlow's load and first calls).
            with collector.paused(freeze=True):
                port = implementations.load(name)
        except implementations.PortUnavailable as error:
            if not error.missing:
                raise
            print(f"UNAVAILABLE {name} " + json.dumps(error.reason), flush=True)
            continue
        print(f"DECLARED {name} " + json.dumps(declared(port)), flush=True)
        print(f"ISOLATED {name} " + json.dumps(isolated(port, seed, x, features)), flush=True)
        print(f"SIZES {name} " + json.dumps(results_of(port)), flush=True)
        print(f"VECTORS {name} " + json.dumps(vector_checks(name)), flush=True)
    """
)


#: What the probe prints about each port, a line each: `KIND name json`.
KINDS = ("DECLARED", "ISOLATED", "SIZES", "VECTORS", "UNAVAILABLE")


def _same_stack(name: str) -> list[str]:
    """The ports on exactly the stack `name` is on, or `name` alone where it is sharded."""
    if name in SHARDED:
        return [name]
    return sorted({n for n, stack in OWN_STACK.items() if stack == OWN_STACK[name]} - SHARDED)


#: How many stacks' interpreters run at once: two, so that one computes while the other
#: waits on the disk or on its framework's import, or while the other xdist worker waits.
AT_ONCE = 2


def _run_probe(
    names: list[str], blocked: list[str], cwd
) -> tuple[subprocess.CompletedProcess, dict]:
    """The probe of `names` (one stack), and what it printed by port and kind."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REMAT_MAX_BYTES", None)  # the machine's budget but where a call sets one
    arguments = [json.dumps(names), json.dumps(blocked), json.dumps([SEED, X, FEATURES])]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=600,
    )  # fmt: skip
    return done, _printed_lines(done)


def _printed_lines(done: subprocess.CompletedProcess) -> dict[str, dict]:
    """What the probe printed, by port and kind, among what the frameworks print."""
    found: dict[str, dict] = {}
    for line in done.stdout.splitlines():
        if line.startswith(tuple(f"{kind} " for kind in KINDS)):
            kind, each, value = line.split(" ", 2)
            found.setdefault(each, {})[kind] = json.loads(value)
    return found


@pytest.fixture(scope="module")
def probed(request, tmp_path_factory):
    """`probe(name)`: the probe of `name`'s stack (run once per stack, AT_ONCE stacks at a
    time, in the order the session's tests ask for them: only the stacks of the ports they
    name), and the lines it printed for `name`, by kind (DECLARED, ISOLATED, SIZES,
    VECTORS, UNAVAILABLE)."""
    asked = [
        item.callspec.params.get("name", "")
        for item in request.session.items
        if item.path == request.path and hasattr(item, "callspec")
    ]
    stacks = list(dict.fromkeys(tuple(_same_stack(n)) for n in asked if n in OWN_STACK))
    with ThreadPoolExecutor(AT_ONCE) as pool:
        runs = {}

        def start(names: list[str]) -> None:
            blocked = [f for f in FRAMEWORKS if f not in OWN_STACK[names[0]]]
            run = pool.submit(_run_probe, names, blocked, tmp_path_factory.mktemp("stack"))
            runs.update(dict.fromkeys(names, run))

        for names in stacks:
            start(list(names))

        def probe(name: str) -> tuple[subprocess.CompletedProcess, dict]:
            if name not in runs:  # asked by a test that names no port (every probe's)
                start(_same_stack(name))
            done, printed = runs[name].result()
            return done, printed.get(name, {})

        yield probe
        for run in runs.values():  # the pool's end waits for them: none is left running
            run.cancel()


def _printed(probed, name: str, kind: str):
    """What the probe printed of `kind` for the port: a skip where its stack is not
    installed, a failure (the exit code, the end of stderr) where it never got there."""
    done, lines = probed(name)
    if "UNAVAILABLE" in lines:
        pytest.skip(lines["UNAVAILABLE"])  # its framework is not installed
    assert kind in lines, f"exited {done.returncode} before {name}'s {kind}:\n{done.stderr[-3000:]}"
    return lines[kind]


@pytest.mark.parametrize("name", PORTS)
def test_a_port_runs_with_every_other_framework_unimportable(probed, name):
    # Skip where the port's own stack is missing. Asked of the installed
    # packages, not by loading the port here: a Keras port would claim this
    # process's Keras backend.
    missing = [m for m in OWN_STACK[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    result = _printed(probed, name, "ISOLATED")
    assert result["leaked"] == []
    assert result["recomputed"] > 0
    assert result["activations"] == 0
    x = np.array(X, np.float32)
    params = canonical_params(SEED, x.shape[0], FEATURES)
    # The port's own init may differ from Flax's by 2 ulp, as the suite allows.
    error = np.abs(np.asarray(result["y"], np.float64) - reference.forward(params, x))
    assert np.all(error <= analyse_forward(params, x, param_ulps=2).e2)


@pytest.mark.parametrize("name", PORTS)
def test_no_size_makes_a_port_abort_and_each_names_its_argument(probed, name):
    value = _printed(probed, name, "SIZES")
    assert len(value) >= 13
    wrong = [(label, outcome) for label, outcome in value if outcome != "ok"]
    assert not wrong, wrong


@pytest.mark.parametrize("name", PORTS)
def test_the_golden_vectors_check_the_port_with_every_other_framework_unimportable(probed, name):
    """`vectors check` needs only numpy and the port's own stack: no JAX where the port is
    not a JAX port."""
    value = _printed(probed, name, "VECTORS")
    failures = [c["message"] for c in value["checks"] if not c["passed"]]
    assert value["status"] == 0, failures[:3]
    assert not failures, failures[:3]
    assert len(value["checks"]) >= 60  # 18 vectors, each checked three or four ways
    assert {c["check"] for c in value["checks"]} == {"init", "end_to_end", "forward", "vjp"}
    assert value["leaked"] == []


@pytest.mark.parametrize("name", PORTS)
def test_the_port_declares_what_the_registry_and_the_readme_say(probed, name):
    port = _printed(probed, name, "DECLARED")
    assert port["name"] == name
    assert port["checkpoint_api"], name
    if implementations.BUILTIN[name].startswith(implementations.EXEC_PREFIX):
        # A process port (docs/PROTOCOL.md): its program declares itself in `hello`.
        assert port["class"] == "implementations.process.adapter:ProcessPort", name
    else:
        module, _, cls = implementations.BUILTIN[name].partition(":")
        assert port["class"] == f"{module}:{cls}", name
        assert port["is_port"], f"{name} is not written against implementations.stacks.Port"
        assert port["stack"] in implementations.stacks.NAMES, name
    api, _ = readme_ports_table()[name]
    assert port["checkpoint_api"] in api, (name, api)


@ALONE
def test_every_probe_ended_cleanly(probed):
    """Each stack's interpreter exited 0 once its ports were done (no crash at exit)."""
    for name in OWN_STACK:
        done, lines = probed(name)
        if "VECTORS" in lines or "UNAVAILABLE" in lines:
            assert done.returncode == 0, (
                f"{name}'s stack exited {done.returncode}:\n{done.stderr[-3000:]}"
            )


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
