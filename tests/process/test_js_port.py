"""A process port in plain Node.js (`js_port/port.js`, no npm packages), written from
docs/PROTOCOL.md alone, under its own instrument family (`js_plain`) and the expectations its
hello declares: it passes every property but (l), skipped (it offers no stateful block), and
`vectors check`, as a user's port would,
registered through an `exec:` entry point. It speaks protocol 3 (composition, (k)), and 2 where
only 1 and 2 are offered.

Its variants show where the trust boundary lies: one keeps its activations under the
checkpoint but reports what an honest checkpoint would (it passes: its evidence reads
self-reported, which is all the suite can say), one keeps them and says so (it fails (e) and
(j)), one ignores the policy name (it fails (j)), one declares expectations that contradict the
policy vocabulary (it fails (j), naming the contradiction).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.helpers import make_distribution, run_python

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="needs Node.js: a plain node port through the protocol"),
]

PORT = Path(__file__).parent / "js_port" / "port.js"
VARIANTS = {
    "js_plain": "",
    "js_cheat": "cheat",
    "js_keeper": "keeper",
    "js_ignore_policy": "ignore_policy",
    "js_contradicts": "contradicts",
}


@pytest.fixture(scope="module")
def js_distribution(node, tmp_path_factory) -> Path:
    points = {}
    for name, variant in VARIANTS.items():
        flags = f" --name={name}" + (f" --variant={variant}" if variant else "")
        points[name] = f"exec:{node} {PORT}{flags}"
    return make_distribution(tmp_path_factory.mktemp("js_dist"), "js-port", points, {})


#: What the variants differ in: the evidence they report (e) and the policies they run (j).
#: The other properties are the plain port's code, which runs them all ((l) skipped).
VARIANT_PROPERTIES = ("e", "j")


def _run(js_distribution: Path, names: list[str], extra: list[str]) -> dict:
    args = ["-m", "conformance", "run", "--profile", "dev", "--no-mutants", "--json"]
    # Six examples a property: the variants' verdicts do not depend on the example (their
    # lies and keeps are in every call), and the plain port computes the init in plain JS.
    args += ["--jobs", "2", "--examples", "6", *extra]
    for name in names:
        args += ["--implementation", name]
    done = run_python(args, js_distribution, timeout=1500)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return {port["name"]: port for port in report["ports"]}


@pytest.fixture(scope="module")
def suite_run(js_distribution) -> dict:
    """The plain port on every property; its variants on the two they differ in."""
    variants = [name for name in VARIANTS if name != "js_plain"]
    only = [flag for key in VARIANT_PROPERTIES for flag in ("--property", key)]
    # Their failures are in every call: a minimal example would say no more (--no-shrink).
    return _run(js_distribution, ["js_plain"], []) | _run(
        js_distribution, variants, [*only, "--no-shrink"]
    )


def _statuses(port: dict) -> dict[str, str]:
    assert port["state"] == "available", port["reason"]
    return {o["property"]: o["status"] for o in port["outcomes"]}


@pytest.mark.timeout(1800)
def test_the_plain_node_port_passes_every_property_under_its_own_family(suite_run):
    port = suite_run["js_plain"]
    statuses = _statuses(port)
    assert len(statuses) == 12
    assert statuses["k_composition"] == "pass"  # run, not skipped
    # It offers no stateful block (docs/PROTOCOL.md): skipped, saying so, never passed.
    assert statuses.pop("l_state") == "skip"
    assert set(statuses.values()) == {"pass"}, {
        o["property"]: o["message"] for o in port["outcomes"] if o["status"] != "pass"
    }
    evidence = port["environment"]["evidence"]
    assert evidence["measured_by"] == "port"
    assert evidence["family"] == "js_plain"
    assert evidence["expectations"] == (
        "the js_plain instrument's, declared by the port itself (its hello)"
    )


@pytest.mark.timeout(1800)
def test_a_port_that_lies_about_its_evidence_passes_and_reads_self_reported(suite_run):
    port = suite_run["js_cheat"]
    statuses = _statuses(port)
    assert set(statuses) == {"e_evidence", "j_policies"}
    assert set(statuses.values()) == {"pass"}
    assert port["environment"]["evidence"]["measured_by"] == "port"


@pytest.mark.timeout(1800)
def test_a_port_that_keeps_activations_and_says_so_fails_e_and_j(suite_run):
    port = suite_run["js_keeper"]
    failed = {k for k, v in _statuses(port).items() if v != "pass"}
    assert failed == {"e_evidence", "j_policies"}
    (j,) = [o for o in port["outcomes"] if o["property"] == "j_policies"]
    assert "held to the js_plain instrument's, declared by the port itself" in j["message"]


@pytest.mark.timeout(1800)
def test_a_port_that_ignores_the_policy_name_fails_j(suite_run):
    port = suite_run["js_ignore_policy"]
    failed = {k for k, v in _statuses(port).items() if v != "pass"}
    assert failed == {"j_policies"}
    (j,) = [o for o in port["outcomes"] if o["property"] == "j_policies"]
    assert "policy save_dots: saves {x}, expected {d1, x}" in j["message"]


@pytest.mark.timeout(1800)
def test_a_port_whose_expectations_contradict_the_vocabulary_fails_j(suite_run):
    port = suite_run["js_contradicts"]
    failed = {k for k, v in _statuses(port).items() if v != "pass"}
    assert failed == {"j_policies"}
    (j,) = [o for o in port["outcomes"] if o["property"] == "j_policies"]
    assert "contradict the policy vocabulary: full: keeps {a, x}: more than" in j["message"]


@pytest.mark.timeout(600)
def test_the_plain_node_port_passes_vectors_check(js_distribution):
    done = run_python(
        ["-m", "conformance", "vectors", "check", "--implementation", "js_plain"],
        js_distribution,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.timeout(600)
def test_compares_policy_matrix_runs_every_policy_the_process_port_declares(node):
    """compare's policy matrix takes a protocol-2 port as it takes a Python one: each declared
    policy measured against the canonical port under the same policy, as expected."""
    pytest.importorskip("flax")
    import numpy as np

    import implementations
    from conformance.comparison import policy_matrix
    from implementations.process import ProcessPort
    from implementations.stacks.numpy import canonical_params

    port = ProcessPort("js_plain", [node, str(PORT)])
    canonical = implementations.load("flax_linen")
    params = canonical_params(0, 5, 6)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    cotangent = np.ones(6, np.float32)
    try:
        cells = {c.policy: c for c in policy_matrix.measure(port, canonical, params, x, cotangent)}
    finally:
        port.close()
    assert {p for p, c in cells.items() if c.expressible} == {
        "none", "full", "save_dots", "save_named",
    }  # fmt: skip
    for name in ("none", "full", "save_dots", "save_named"):
        assert not policy_matrix.failed(cells[name]), (name, cells[name])
    assert cells["save_dots"].roles == ["d1", "x"]
    assert (
        cells["offload_dots"].spelling == "one process, one memory: there is no host to offload to"
    )


# Written from the port's recompute, not read off it: the forward pass runs x @ W1 and a @ W2
# (2); the gradient's own matmuls are dW2, da, dW1 and dx (4); one region reruns x @ W1 (5);
# a nested case's outer region reruns its whole body (2) before the inner reruns x @ W1 (7).
COMPOSED_ROWS = {
    "once": (["x"], 2, 5),
    "twice": (["x"], 2, 7),
    "under_trainer": (["x"], 2, 7),
}


@pytest.fixture(scope="module")
def js_port(node):
    from implementations.process import ProcessPort

    port = ProcessPort("js_plain", [node, str(PORT)])
    yield port
    port.close()


def _params_and_x():
    import numpy as np

    from implementations.stacks.numpy import canonical_params

    return canonical_params(4, 5, 6), np.linspace(-1, 1, 5).astype(np.float32)


@pytest.mark.parametrize("case", sorted(COMPOSED_ROWS))
def test_each_composition_case_shows_the_measured_row(js_port, case):
    from implementations.composition import Nesting

    params, x = _params_and_x()
    record = js_port.backward_record(params, x, checkpoint=Nesting(case))
    roles, forward, backward = COMPOSED_ROWS[case]
    assert (sorted(record.saved_roles), record.forward_matmuls) == (roles, forward)
    assert record.backward_matmuls == backward
    plain = js_port.backward_record(params, x, checkpoint=False)
    assert (plain.forward_matmuls, plain.backward_matmuls) == (2, 4)


def test_hello_declares_the_measured_rows_and_they_keep_the_rules(js_port):
    from implementations.composition import contradictions

    assert js_port.protocol == 3
    table = js_port.composition_expectations
    assert contradictions(table) == []
    for case, (roles, forward, backward) in COMPOSED_ROWS.items():
        row = (sorted(table[case].roles), table[case].forward_matmuls, table[case].rerun_matmuls)
        assert row == (roles, forward, backward - 4), case
    assert [c for c in COMPOSED_ROWS if table[c].degradation] == ["twice", "under_trainer"]


def test_a_protocol_2_conversation_still_runs_with_k_not_expressible(node, monkeypatch):
    from conformance.checking.properties import k_composition as records
    from implementations.composition import Nesting
    from implementations.process import ProcessPort, adapter

    monkeypatch.setattr(adapter, "PROTOCOL_VERSION", 2)  # the adapter offers [1, 2]
    port = ProcessPort("js_plain", [node, str(PORT)])
    try:
        assert port.protocol == 2
        assert "compositions" not in port.hello
        assert port.composition_expectations == {}
        cannot = "protocol 2 carries no nesting (protocol 3 does)"
        assert records.not_expressible(port) == (
            f"not expressible: twice: {cannot}; under_trainer: {cannot}"
        )
        params, x = _params_and_x()
        assert port.backward_record(params, x, checkpoint=True).backward_matmuls == 5
        with pytest.raises(ValueError, match="checkpoint=twice: port js_plain cannot"):
            port.forward(params, x, checkpoint=Nesting("twice"))
    finally:
        port.close()


def test_the_documented_protocol_version_is_the_adapters_and_the_plain_port_speaks_it(js_port):
    import re

    from implementations.process.wire import PROTOCOL_VERSION, PROTOCOL_VERSIONS
    from tests.support.helpers import ROOT

    text = (ROOT / "docs" / "PROTOCOL.md").read_text()
    found = re.search(r"Protocol version: \*\*(\d)\*\*; the\s+adapter still speaks (.*?) \(", text)
    assert found, "docs/PROTOCOL.md no longer states its protocol version"
    older = [int(v) for v in re.findall(r"\*\*(\d)\*\*", found.group(2))]
    assert (int(found.group(1)), sorted(older)) == (PROTOCOL_VERSION, list(PROTOCOL_VERSIONS[:-1]))
    assert js_port.protocol == PROTOCOL_VERSION
