"""docs/PROTOCOL.md's op table held to the adapter: every argument the adapter sends with each
op, under protocol 3, is in the op's row and the row names nothing it does not send; every
result field it reads is in the row; `hello`'s required and optional fields are the ones the
adapter requires and reads. And the message the protocol quotes for a count not reported is
the check's.

The adapter (`implementations.process.ProcessPort`) runs without a process: its requests are
recorded, and its answers are dicts that record which fields the adapter reads.
"""

from __future__ import annotations

import json
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from conformance.checking.checks import ConformanceError, check_count
from conformance.checking.properties import k_composition as composed
from implementations.composition import Composed, Nesting
from implementations.contract import Params
from implementations.policies import FULL, NONE
from implementations.process import adapter
from implementations.process.wire import decode_record, encode_array
from implementations.stateful import STATE_GRAD_NAMES, StateStep
from tests.support.helpers import ROOT

DOC = (ROOT / "docs" / "PROTOCOL.md").read_text()
D, F = 3, 4


class _Read(dict):
    """A dict that records the keys read from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def _row(op: str) -> tuple[str, str]:
    found = re.search(rf"^\| `{op}` \| (.*?) \| (.*?) \|$", DOC, re.MULTILINE)
    assert found, f"the op table has no row for {op}"
    return found.group(1), found.group(2)


def _named(cell: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", cell))


def _array(shape) -> dict:
    return encode_array(np.zeros(shape, np.float32))


HELLO = {
    "name": "recorded",
    "framework": "numpy",
    "versions": {"numpy": np.__version__},
    "protocol": 3,
    "checkpoint_api": "by hand",
    "compositions": {"once": "by hand", "twice": "by hand twice"},
    "state_variants": {"default": "by hand"},
}
B = 2
RESULTS = {
    "init_params": lambda: {
        "params": {"w1": _array((D, F)), "b1": _array(F), "w2": _array((F, F)), "b2": _array(F)}
    },
    "forward": lambda: {"y": _array(F)},
    "nn_checkpoint_forward": lambda: {"y": _array(F)},
    "vjp": lambda: {
        k: _array(s) for k, s in {"w1": (D, F), "b1": F, "w2": (F, F), "b2": F, "x": D}.items()
    },
    "evidence": lambda: {"instrument": "mine", "saved": [], "recomputed": {}},
    "state_step": lambda: StateStep(
        y=np.zeros((B, F), np.float32),
        grads={n: np.zeros(1, np.float32) for n in STATE_GRAD_NAMES},
        mask=np.ones((B, F), bool),
        recompute_masks=(np.ones((B, F), bool),),
        running_mean=np.zeros(F, np.float32),
        running_var=np.ones(F, np.float32),
        updates=1,
        rng_before=(0, 1),
        rng_after=(0, 1),
    ).to_wire(),
}


@pytest.fixture(scope="module")
def recorded() -> tuple[adapter.ProcessPort, dict[str, set[str]], dict[str, set[str]]]:
    """A protocol-3 port whose every contract call ran: (port, op -> the arguments sent,
    op -> the result fields read)."""
    sent: dict[str, set[str]] = {}
    read: dict[str, set[str]] = {}
    port = adapter.ProcessPort.__new__(adapter.ProcessPort)

    def request(op, **arguments):
        sent.setdefault(op, set()).update(arguments)
        result = _Read(RESULTS[op]())
        read.setdefault(op, set())
        results.append((op, result))
        return result

    results: list[tuple[str, _Read]] = []
    port._start = lambda: _Read(HELLO)
    port._request = request
    port.close = lambda: None
    adapter.ProcessPort.__init__(port, "recorded", [sys.executable])
    port.matmul_precision(), port.versions()
    params = Params(*(np.zeros(s, np.float32) for s in ((D, F), F, (F, F), F)))
    x, cotangent = np.ones(D, np.float32), np.ones(F, np.float32)
    port.init_params(0, D, F)
    port.nn_checkpoint_forward(0, x, F)
    port.exercise_record(0, x, F)
    for checkpoint in (NONE, FULL, Nesting("twice")):
        port.forward(params, x, checkpoint=checkpoint)
        port.vjp(params, x, cotangent, checkpoint=checkpoint)
        port.backward_record(params, x, checkpoint=checkpoint)
    port.state_step(0, np.ones((B, D), np.float32), F, 0.5, np.ones((B, F), np.float32))
    for op, result in results:  # the top level: `params`' own fields are in *Values*
        read[op] |= result.read
    return port, sent, read


def test_every_argument_the_adapter_sends_is_in_its_ops_row(recorded):
    _, sent, _ = recorded
    assert set(sent) == {
        "init_params", "forward", "vjp", "nn_checkpoint_forward", "evidence", "state_step"
    }  # fmt: skip
    for op, arguments in sent.items():
        assert _named(_row(op)[0]) == arguments, op


def test_every_result_field_the_adapter_reads_is_in_its_ops_row(recorded):
    _, _, read = recorded
    for op, fields in read.items():
        if op == "evidence":  # a record: *Evidence records* lists its fields
            continue
        assert fields <= _named(_row(op)[1]), (op, fields - _named(_row(op)[1]))


def test_hellos_row_names_its_required_and_optional_fields_as_the_adapter_reads_them(recorded):
    port, _, _ = recorded
    answer = _row("hello")[1]
    required, _, optional = answer.partition("optionally")
    assert _named(required) == set(adapter.HELLO_FIELDS)
    assert _named(optional) == port.hello.read - set(adapter.HELLO_FIELDS)
    assert _named(_row("hello")[0]) == {"protocol", "protocols"}


def test_the_quoted_message_for_a_count_not_reported_is_the_checks():
    found = re.search(r"<!-- unreported-count -->`(.*?)`<!-- /unreported-count -->", DOC)
    assert found, "PROTOCOL.md does not quote the message for a count not reported"
    with pytest.raises(ConformanceError) as raised:
        check_count("p", "q", "matmuls in backward", "backward_matmuls", None, 5, "")
    assert f"[p] q: {found.group(1)}" in str(raised.value)


def test_the_evidence_example_is_a_record_the_adapter_decodes_with_both_counts():
    section = DOC[DOC.index("### Evidence records") :]
    example = re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1)
    record = decode_record(json.loads(example), "the example")
    assert (record.backward_matmuls, record.forward_matmuls) == (5, 2)
    assert record.saved_roles == {"x"}


def test_a_nested_case_in_one_region_fails_as_the_protocol_says():
    found = re.search(r"<!-- dropped-region -->(.*?)<!-- /dropped-region -->", DOC)
    assert found, "PROTOCOL.md does not say what a nested case in one region reads"

    port = SimpleNamespace(
        name="p",
        instrument_family="mine",
        composition_expectations={
            "once": Composed(frozenset({"x"}), 2, 1, "mine"),
            "twice": Composed(frozenset({"x"}), 2, 2, "mine"),
        },
    )
    x = {"shape": [3], "dtype": "float32", "origin": "input", "role": "x"}
    answer = {"instrument": "mine", "saved": [x], "recomputed": {}}
    answer |= {"backward_matmuls": 6, "forward_matmuls": 2}  # reruns 2, as declared
    plain = decode_record({**answer, "backward_matmuls": 4}, "plain")
    with pytest.raises(ConformanceError, match=re.escape(found.group(1))):
        composed.check_record(
            port, "twice", decode_record({**answer, "checkpoint_regions": 1}, ""), plain
        )
    for regions in (2, None):  # both regions, or an instrument that cannot count them
        record = decode_record({**answer, "checkpoint_regions": regions}, "twice")
        composed.check_record(port, "twice", record, plain)
