"""The tfjs process port: its pinned dependency, its init in JavaScript, its evidence from tfjs
itself (and the tfjs internals that evidence reads), its mutant, and how it is unavailable.

Expected init values come from the numpy canonical init (itself held bit for bit to Flax in
tests/core/implementations/test_canonical_init.py), never from the port. The cross-framework
properties run in
the conformance suite (tests/core/running/test_conformance.py collects every registered port).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import implementations
from conformance.mutants import load as load_mutant
from implementations.contract import PortWarning
from implementations.process import ProcessPort
from implementations.stacks.numpy import canonical_params
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Node.js and npm: the tfjs port's own install, start and faults"),
]

TFJS = ROOT / "implementations" / "stacks" / "tfjs"


@pytest.fixture(scope="module")
def tfjs(node):
    try:
        return implementations.load("tfjs")
    except implementations.PortUnavailable as error:
        pytest.fail(f"node is installed, yet tfjs is unavailable: {error}")


def test_the_lock_pins_tfjs_4_22_0():
    package = json.loads((TFJS / "package.json").read_text())
    lock = json.loads((TFJS / "package-lock.json").read_text())
    assert package["dependencies"] == {"@tensorflow/tfjs": "4.22.0"}
    assert lock["packages"]["node_modules/@tensorflow/tfjs"]["version"] == "4.22.0"


def test_hello_reports_the_pinned_versions(tfjs):
    assert tfjs.framework == "@tensorflow/tfjs"
    assert tfjs.versions()["@tensorflow/tfjs"] == "4.22.0"
    assert tfjs.checkpoint_api == "tf.customGrad"


@pytest.mark.parametrize(
    ("seed", "dim", "features"),
    [(0, 1, 1), (42, 16, 16), (2**32 + 5, 3, 4), (2**63 - 1, 300, 7), (12345, 64, 128)],
)
def test_the_javascript_init_equals_the_canonical_bit_for_bit(tfjs, seed, dim, features):
    mine, expected = tfjs.init_params(seed, dim, features), canonical_params(seed, dim, features)
    for name in ("w1", "b1", "w2", "b2"):
        got, want = getattr(mine, name), getattr(expected, name)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)


def _params_and_x():
    params = canonical_params(7, 5, 4)
    return params, np.array([0.5, -1.0, 2.0, 0.25, -3.0], np.float32)


def test_with_the_checkpoint_the_tape_keeps_only_the_inputs(tfjs):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=True)
    origins = sorted(t.origin for t in record.saved)
    assert origins == ["input", "parameter", "parameter", "parameter", "parameter"]
    assert record.checkpoint_regions == 1  # tf.customGrad's node on tfjs's tape
    assert dict(record.recomputed) == {"Relu": 1, "Add": 1}
    assert "BatchMatMul 5" in record.instrument  # 4 gradient matmuls + the recomputed one


def test_without_the_checkpoint_the_tape_keeps_the_hidden_activations(tfjs):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=False)
    notes = sorted(t.note for t in record.saved if t.origin == "activation")
    # relu's input and output, and the hidden layer for the second matmul and the adds
    assert notes == ["saved by Add", "saved by Add", "saved by BatchMatMul", "saved by Relu"]
    assert record.checkpoint_regions == 0
    assert dict(record.recomputed) == {}
    assert "BatchMatMul 4" in record.instrument


# Written from tfjs-core 4.22's gradient configs, not from the port: BatchMatMul saves both
# inputs (x; a), Add both (d1 = x @ W1; a @ W2, which the record names y), Relu its input h.
# Backward matmuls: dW2, da, dW1, dx (4); tf.customGrad's gradient reruns x @ W1 (5).
ROLES_BY_NOTE = {
    "none": [
        ("a", "saved by BatchMatMul"),
        ("d1", "saved by Add"),
        ("h", "saved by Relu"),
        ("x", "saved by BatchMatMul"),
        ("y", "saved by Add"),
    ],
    "full": [("x", "saved by forward")],  # forward: tf.customGrad's node
}


@pytest.mark.parametrize(("policy", "matmuls"), [("none", 4), ("full", 5)])
def test_the_tape_names_the_role_of_each_kept_tensor(tfjs, policy, matmuls):
    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=policy == "full")
    assert sorted((t.role, t.note) for t in record.kept) == ROLES_BY_NOTE[policy]
    assert all(t.role == "" for t in record.saved_by_origin("parameter"))
    assert record.backward_matmuls == matmuls


def test_hello_speaks_protocol_3_and_declares_none_and_full_and_why_not_the_rest(tfjs):
    assert tfjs.protocol == 3
    assert set(tfjs.policies) == {"none", "full"}
    assert set(tfjs.inexpressible) == {"save_dots", "save_named", "offload_dots", "budget"}
    assert all("tfjs" in why and "protocol" not in why for why in tfjs.inexpressible.values())
    assert tfjs.instrument_family == "@tensorflow/tfjs"


def test_a_policy_name_reaches_the_port_and_one_it_does_not_declare_is_refused(tfjs):
    from implementations.policies import FULL, Policy

    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=FULL)
    assert record.saved_roles == {"x"}
    assert record.measured_by == "port"
    with pytest.raises(ValueError, match="cannot express it"):
        tfjs.forward(params, x, checkpoint=Policy("save_dots"))


def test_the_mutant_without_custom_grad_saves_activations(tfjs):
    mutant = load_mutant("tfjs_no_custom_grad")
    assert mutant.port is not None, mutant.reason
    params, x = _params_and_x()
    record = mutant.port.backward_record(params, x, checkpoint=True)
    assert record.saved_by_origin("activation")
    assert record.checkpoint_regions == 0
    # and it computes the same function
    np.testing.assert_array_equal(mutant.port.forward(params, x), tfjs.forward(params, x))
    mutant.port.close()


def test_without_node_tfjs_is_unavailable_with_the_reason(tmp_path):
    code = "import implementations; s, = implementations.status(['tfjs']); print(s.state, s.reason)"
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "unavailable needs 'node', not found on PATH", result.stderr


def _hello(node, env: dict, cwd) -> tuple[dict, str]:
    """port.js asked `hello`, then to shut down: (its answer to hello, its stderr)."""
    done = subprocess.run(
        [node, str(TFJS / "port.js")],
        input='{"id":1,"op":"hello","protocol":1}\n{"id":2,"op":"shutdown"}\n',
        env=env, capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[0]), done.stderr


def test_without_npm_and_without_tfjs_hello_says_unavailable(node, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)  # node, and no npm
    env = {**os.environ, "PATH": str(bin_dir), "REMAT_CACHE": str(tmp_path / "cache")}
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here")
    first, _ = _hello(node, env, tmp_path)
    assert first["error"]["type"] == "Unavailable"
    assert "npm is not on PATH" in first["error"]["message"]


@pytest.mark.parametrize(("program", "asked"), [
    ("port.js", '{"id":2,"op":"forward","checkpoint":true}'),
    ("bench.js", '{"id":2,"op":"place","placement":[0],"depth":1,"policies":[]}'),
])  # fmt: skip
def test_without_tfjs_every_request_but_shutdown_is_unavailable(node, tmp_path, program, asked):
    """The loop both programs serve (serve.js): a start that cannot load tfjs answers every
    request Unavailable, an unknown op still a ProtocolError, and shuts down when asked."""
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)  # node, and no npm
    env = {**os.environ, "PATH": str(bin_dir), "REMAT_CACHE": str(tmp_path / "cache")}
    lines = ['{"id":1,"op":"hello","protocol":1}', asked, '{"id":3,"op":"nope"}']
    done = subprocess.run(
        [node, str(TFJS / program)], input="\n".join([*lines, '{"id":4,"op":"shutdown"}', ""]),
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr[-3000:]
    assert [a["id"] for a in answers] == [1, 2, 3, 4]
    for answer in answers[:2]:
        assert answer["error"]["type"] == "Unavailable", answer
        assert "npm is not on PATH" in answer["error"]["message"], answer
    assert answers[2]["error"] == {"type": "ProtocolError", "message": 'unknown op "nope"'}
    assert answers[3] == {"id": 4, "result": {}}


def _line_with(stream, text: str) -> str:
    """The first line of `stream` that holds `text` (fails at its end, with what it read)."""
    seen = []
    for line in stream:
        if text in line:
            return line
        seen.append(line)
    pytest.fail(f"no line with {text!r}; read:\n{''.join(seen)}")


def _with_fake_npm(node, tmp_path, npm_ci: str) -> tuple[dict, str]:
    """(env, install): an environment whose npm runs the shell `npm_ci` for `npm ci`, its
    cache in tmp_path, and the directory a start installs tfjs into there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    (bin_dir / "npm").write_text('#!/bin/sh\n[ "$1" = --version ] && exit 0\n' + npm_ci)
    (bin_dir / "npm").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "REMAT_CACHE": str(tmp_path)}
    where = f"console.log(require({str(TFJS / 'load.js')!r}).installDirectory())"
    install = subprocess.run(
        [node, "-e", where], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return env, install


def _lock_held_by(install: str, pid: int) -> Path:
    """The install's lock, as a start with `pid` on this host holds it."""
    lock = Path(f"{install}.lock")
    lock.mkdir(parents=True)
    (lock / "holder").write_text(f"{socket.gethostname()} {pid}")
    return lock


@pytest.mark.timeout(120)
@pytest.mark.parametrize("holder", ["running", "not-yet-written"])
def test_a_first_start_logs_progress_while_it_waits_for_npm_ci_and_while_it_runs(
    node, tmp_path, holder
):
    """The adapter waits for `hello` as long as the port logs (docs/PROTOCOL.md): both waits
    of a first start log. A fake npm holds each state until the test has seen its line. Its
    half-written install is in a staging directory, never where another start would read it,
    and is removed once npm fails. A lock just made, its holder not yet written, is waited
    for like a running holder's."""
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here: no first start")
    release = tmp_path / "release"
    env, install = _with_fake_npm(
        node,
        tmp_path,
        "mkdir -p node_modules/@tensorflow/tfjs\n"
        "printf '{\"name\": ' > node_modules/@tensorflow/tfjs/package.json\n"
        f"while [ ! -e {release} ]; do sleep 0.1; done\n"
        "echo 'npm ci: the fake npm fails' >&2\nexit 3\n",
    )
    if holder == "running":
        lock = _lock_held_by(install, os.getpid())  # another start's npm ci
    else:
        lock = Path(f"{install}.lock")
        lock.mkdir(parents=True)  # another start, about to name itself
    port = subprocess.Popen(
        [node, str(TFJS / "port.js")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        port.stdin.write('{"id":1,"op":"hello","protocol":1}\n')
        port.stdin.flush()
        _line_with(port.stderr, "for another start's npm ci")
        shutil.rmtree(lock)  # that start is done
        _line_with(port.stderr, "tfjs: npm ci still running")
        (staging,) = Path(install).parent.glob(f"{Path(install).name}.staging-*")
        assert (staging / "node_modules" / "@tensorflow" / "tfjs" / "package.json").exists()
        assert not Path(install).exists()  # a start reading it now finds nothing half-written
        release.touch()  # npm ends, failing
        answer = json.loads(port.stdout.readline())
    finally:
        port.kill()
        port.wait()
    assert answer["error"]["type"] == "Unavailable"
    assert "npm ci exited with code 3" in answer["error"]["message"]
    assert sorted(p.name for p in Path(install).parent.iterdir()) == []


def _lock_of_an_ended_start(install: str) -> Path:
    """The install's lock, as a start that has ended left it: its pid no longer runs."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return _lock_held_by(install, ended.pid)


def _lock_with_no_holder(install: str) -> Path:
    """The install's lock, as a start killed before it named itself left it a minute ago."""
    lock = Path(f"{install}.lock")
    lock.mkdir(parents=True)
    a_minute_ago = time.time() - 60
    os.utime(lock, (a_minute_ago, a_minute_ago))
    return lock


@pytest.mark.timeout(60)  # not taken over, the start would wait 10 minutes
@pytest.mark.parametrize(
    ("left_by", "said"),
    [
        (_lock_of_an_ended_start, "has ended ("),
        (_lock_with_no_holder, "has ended (no holder written in "),
    ],
    ids=["holder-ended", "no-holder"],
)
def test_a_lock_whose_holder_has_ended_is_taken_over(node, tmp_path, left_by, said):
    """A start killed during its npm ci (Ctrl-C, a timeout) leaves its lock: the next start
    takes it over at once, instead of waiting 10 minutes for it. So does a lock with no
    holder written for 30 s (a start killed between making the lock and naming itself)."""
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here: no first start")
    env, install = _with_fake_npm(node, tmp_path, "echo 'npm ci: the fake npm fails' >&2\nexit 3\n")
    lock = left_by(install)
    answer, stderr = _hello(node, env, tmp_path)
    assert "npm ci exited with code 3" in answer["error"]["message"], answer  # it ran npm
    assert f"{lock} was held by a start that {said}" in stderr
    assert "for another start's npm ci" not in stderr
    assert not lock.exists()


def test_a_cache_that_cannot_be_written_is_named_in_the_unavailable_answer(node, tmp_path):
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here: the cache is not read")
    (tmp_path / "a file").write_text("")
    cache = tmp_path / "a file" / "cache"  # no directory can be made there, even by root
    env = {**os.environ, "REMAT_CACHE": str(cache)}
    answer, _ = _hello(node, env, tmp_path)
    assert answer["error"]["type"] == "Unavailable", answer
    assert f"{cache / 'node'} is not writable" in answer["error"]["message"], answer
    assert "REMAT_CACHE" in answer["error"]["message"], answer


@pytest.mark.timeout(600)
def test_a_cached_install_that_does_not_load_is_installed_again_and_said(
    node, tmp_path, monkeypatch
):
    """A broken cache (a flipped bit) is the cache's fault: tfjs installs it again, in place
    of the broken one, and answers hello; its warning, naming the cache, reaches the adapter's
    caller as a `PortWarning` (a run says it on its stderr). Nothing is left beside it."""
    if (TFJS / "node_modules").exists():
        pytest.skip("a node_modules beside port.js provides tfjs here: the cache is not read")
    monkeypatch.setenv("REMAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # left as it was found
    (tmp_path / "tmp").mkdir()
    where = f"console.log(require({str(TFJS / 'load.js')!r}).installDirectory())"
    install = subprocess.run(
        [node, "-e", where], capture_output=True, text=True, check=True
    ).stdout.strip()
    broken = Path(install) / "node_modules" / "@tensorflow" / "tfjs" / "package.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"name": "@tensorflow/tfjs", "main": ')  # cut short
    said = f"tfjs: the cached tfjs in {install} did not load"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        port = ProcessPort.from_command("tfjs", f"{node} {TFJS / 'port.js'}")
        port.close()  # its stderr read to the end
    assert port.hello["versions"]["@tensorflow/tfjs"] == "4.22.0"
    (warning,) = [str(w.message) for w in caught if issubclass(w.category, PortWarning)]
    assert warning.startswith(said), warning
    assert warning.endswith(": installed again there"), warning
    assert json.loads(broken.read_text())["version"] == "4.22.0"
    assert sorted(p.name for p in Path(install).parent.iterdir()) == [Path(install).name]
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == []


# mlp.js driven from Node itself: what forward and vjp leave behind in tfjs's engine.
_MLP_CALLS = """
const path = require("path");
const dir = process.argv[1];
const tf = require(path.join(dir, "load.js")).loadTf();
(async () => {
  await tf.setBackend("cpu");
  const mlp = require(path.join(dir, "mlp.js"))(tf, { customGrad: true });
  const params = {
    w1: Float32Array.from([0.5, -1, 2, 0.25, 1, -0.5]), b1: Float32Array.from([0.1, -0.2]),
    w2: Float32Array.from([1, 2, -3, 0.5]), b2: Float32Array.from([0.3, 0.4]),
  };
  const x = Float32Array.from([1, 2, 3]);
  const dy = Float32Array.from([1, -1]);
  mlp.forward(params, x, true);  // tfjs's first call keeps tensors of its own
  const before = tf.memory().numTensors;
  const first = {
    on: mlp.vjp(params, x, dy, true), off: mlp.vjp(params, x, dy, false),
    twice: mlp.vjp(params, x, dy, "twice"),
  };
  const y = mlp.forward(params, x, true);
  const yOff = mlp.forward(params, x, false);
  const leaked = tf.memory().numTensors - before;
  const kinds = [y, yOff, ...Object.values(first.on)].map((a) => a.constructor.name);
  first.on.w1.fill(7);  // the caller owns what it got: a later call must not see it
  y.fill(7);
  const again = mlp.vjp(params, x, dy, true);
  const list = (a) => Array.from(a);
  console.log(JSON.stringify({
    leaked, kinds, y: list(mlp.forward(params, x, true)), yOff: list(yOff),
    on: Object.fromEntries(Object.entries(again).map(([k, v]) => [k, list(v)])),
    off: Object.fromEntries(Object.entries(first.off).map(([k, v]) => [k, list(v)])),
    twice: Object.fromEntries(Object.entries(first.twice).map(([k, v]) => [k, list(v)])),
  }));
})();
"""


def test_forward_and_vjp_leave_no_tensor_behind_and_return_owned_copies(node):
    done = subprocess.run(
        [node, "-e", _MLP_CALLS, str(TFJS)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["leaked"] == 0
    assert set(got["kinds"]) == {"Float32Array"}
    # Written out by hand: h = x @ W1 + b1 = (7.6, -2.2), a = (7.6, 0), y = a @ W2 + b2.
    np.testing.assert_allclose(got["y"], [7.9, 15.6], rtol=1e-6)
    assert got["yOff"] == got["y"]
    # dy = (1, -1): da = dy @ W2.T = (-1, -3.5), dh = (-1, 0); dW1 = outer(x, dh), dW2 =
    # outer(a, dy), dx = dh @ W1.T. The caller's fill(7) of an earlier answer is not seen.
    expected = {
        "w1": [-1, 0, -2, 0, -3, 0], "b1": [-1, 0], "w2": [7.6, -7.6, 0, 0], "b2": [1, -1],
        "x": [-0.5, -2, -1],
    }  # fmt: skip
    for name, values in expected.items():
        np.testing.assert_allclose(got["on"][name], values, rtol=1e-6, err_msg=name)
    assert got["on"] == got["off"] == got["twice"]


# -- composition (k), protocol 3 --------------------------------------------------------------
# Written from tfjs-core 4.22's engine.js, not from the port: a tf.customGrad's function runs
# with the tape off (runKernelFunc raises kernelDepth; isTapeOn() needs it 0), so a region
# inside another saves nothing (its save() returns at once) and leaves no tape node. Forward:
# x @ W1 and a @ W2 (2 BatchMatMul); backward: 4 gradient matmuls, and the port's gradFunc
# reruns x @ W1 (5). Identity kernels in backward are the clones of what save() keeps: the
# outer region's five inputs, never the inner's.
COMPOSED_ROWS = {
    "once": (["x"], 2, 5, 1, "Identity 5"),
}


def test_hello_declares_once_and_why_neither_nesting(tfjs):
    assert set(tfjs.compositions) == {"once"}
    assert set(tfjs.not_composable) == {"twice", "under_trainer"}
    assert "tape off" in tfjs.not_composable["twice"]
    assert "tf.grads" in tfjs.not_composable["under_trainer"]
    assert tfjs.composition_expectations == {}  # held to the suite's table for its family


# tf.customGrad(tf.customGrad(f)), run by the port's own mlp.js: one region reaches the tape,
# the inner one is flattened away (the reason `twice` is not composable in tfjs).
_TWICE_RECORD = """
const path = require("path");
const tf = require(path.join(process.argv[1], "load.js")).loadTf();
const mlp = require(path.join(process.argv[1], "mlp.js"))(tf, { customGrad: true });
(async () => {
  await tf.setBackend("cpu");
  const params = {
    w1: Float32Array.from([0.5, -1, 2, 0.25, 1, -0.5]), b1: Float32Array.from([0.1, -0.2]),
    w2: Float32Array.from([1, 2, -3, 0.5]), b2: Float32Array.from([0.3, 0.4]),
  };
  const record = await mlp.vjpRecord(params, Float32Array.from([1, 2, 3]), "twice");
  console.log(JSON.stringify(record));
})();
"""


def test_twice_flattens_the_inner_region_away(node):
    done = subprocess.run(
        [node, "-e", _TWICE_RECORD, str(TFJS)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["checkpoint_regions"] == 1
    assert (record["forward_matmuls"], record["backward_matmuls"]) == (2, 5)
    assert "Identity 5" in record["instrument"]  # the outer region's saves, never the inner's


@pytest.mark.parametrize("case", sorted(COMPOSED_ROWS))
def test_each_composition_case_keeps_x_and_reruns_x_at_w1_once(tfjs, case):
    from implementations.composition import Nesting

    params, x = _params_and_x()
    record = tfjs.backward_record(params, x, checkpoint=Nesting(case))
    roles, forward, backward, regions, clones = COMPOSED_ROWS[case]
    assert sorted(record.saved_roles) == roles
    assert (record.forward_matmuls, record.backward_matmuls) == (forward, backward)
    assert record.checkpoint_regions == regions  # the inner region never reaches the tape
    assert clones in record.instrument, record.instrument
    plain = tfjs.backward_record(params, x, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)


def test_the_suites_table_for_tfjs_is_the_measured_rows():
    from conformance.checking.properties.k_composition import tables

    table = tables()["@tensorflow/tfjs"]
    assert set(table) == set(COMPOSED_ROWS)
    for case, (roles, forward, backward, _, _) in COMPOSED_ROWS.items():
        row = (sorted(table[case].roles), table[case].forward_matmuls, table[case].rerun_matmuls)
        assert row == (roles, forward, backward - 4), case


def test_k_holds_tfjs_once_and_says_why_not_nested(tfjs):
    """(k) on the port: canonical values and the declared row for `once`; the nested cases are
    not composable, each with its reason."""
    pytest.importorskip("flax")
    from conformance.checking.properties import k_composition as records
    from conformance.checking.properties.k_composition import check_composition, prepare_composition

    class Case:
        params = canonical_params(3, 6, 5)
        x = np.linspace(-2, 2, 6).astype(np.float32)
        cotangent = np.linspace(1, -1, 5).astype(np.float32)

    # Neither nested case is expressible, so the run skips (k), saying why; the check itself
    # still holds the one case tfjs declares.
    assert records.not_expressible(tfjs).startswith("not expressible: twice: tfjs flattens")
    worst = check_composition(
        tfjs, prepare_composition(implementations.load("flax_linen"), Case), Case
    )
    assert 0 <= worst < 1


# A trainer's region over a model call it did not write: tf.customGrad needs the model's VJP in
# its gradFunc, and tfjs's tf.grads there ends the one global tape (engine.gradients sets
# activeTape to null at gradientDepth 0), so the outer backward crashes on it.
_TRAINER_REGION = """
const path = require("path");
const tf = require(path.join(process.argv[1], "load.js")).loadTf();
(async () => {
  await tf.setBackend("cpu");
  const model = (x, w) => tf.relu(tf.matMul(x, w));
  const trainer = tf.customGrad((x, w, save) => {
    save([x, w]);
    return { value: model(x, w), gradFunc: (dy, saved) => tf.grads(model)(saved, dy) };
  });
  try {
    tf.grads(trainer)([tf.tensor2d([[1, 2]]), tf.eye(2)]);
    console.log("no error");
  } catch (error) {
    console.log(error.message);
  }
})();
"""


def test_a_trainers_region_over_a_model_call_crashes_tfjs_so_it_is_not_composable(node):
    done = subprocess.run(
        [node, "-e", _TRAINER_REGION, str(TFJS)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip().splitlines()[-1]
    assert said == "Cannot read properties of null (reading 'forEach')"


@pytest.mark.parametrize("version", [2, 1])
def test_an_older_conversation_still_runs_with_k_not_expressible(node, monkeypatch, version):
    from conformance.checking.properties import k_composition as records
    from implementations.composition import Nesting
    from implementations.process import adapter
    from implementations.stacks.tfjs.manifest import COMMAND

    monkeypatch.setattr(adapter, "PROTOCOL_VERSION", version)  # offered: [1, ..., version]
    port = ProcessPort.from_command("tfjs", COMMAND)
    try:
        assert port.protocol == version
        assert "compositions" not in port.hello
        cannot = f"protocol {version} carries no nesting (protocol 3 does)"
        assert records.not_expressible(port) == (
            f"not expressible: twice: {cannot}; under_trainer: {cannot}"
        )
        params, x = _params_and_x()
        assert port.backward_record(params, x, checkpoint=True).backward_matmuls == 5
        with pytest.raises(ValueError, match="checkpoint=twice: port tfjs cannot"):
            port.forward(params, x, checkpoint=Nesting("twice"))
    finally:
        port.close()
