"""A count the expectation names is required, and a record without it fails saying "not
reported", naming the field (never "runs None matmuls"): (j)'s `backward_matmuls`, (k)'s
`forward_matmuls` and its reruns. An expectation of null leaves the count unchecked.

The records are decoded as the process adapter decodes a port's answer
(`implementations.process.wire.decode_record`), where an optional field is absent."""

from __future__ import annotations

import re

import pytest

from conformance.checking.checks import ConformanceError
from conformance.checking.properties import k_composition as composed
from conformance.checking.properties.j_policies import check_policy_record
from implementations.composition import Composed
from implementations.expectations import expect
from implementations.policies import FULL
from implementations.process.wire import decode_record

X = {"shape": [3], "dtype": "float32", "origin": "input", "note": "x", "role": "x"}
H = {"shape": [4], "dtype": "float32", "origin": "activation", "note": "h", "role": "h"}
A = {"shape": [4], "dtype": "float32", "origin": "activation", "note": "a", "role": "a"}
FULL_RECORD = {"instrument": "mine", "saved": [X], "recomputed": {"matmul": 1}}
PLAIN_RECORD = {"instrument": "mine", "saved": [X, H, A], "recomputed": {}}


class _Port:
    """An outside port that declares its own expectations, as a process port's hello does."""

    name = "my_port"
    instrument_family = "mine"
    hello = "its hello"  # where its expectations come from, in messages

    def __init__(self, matmuls: int | None = 5, forward: int | None = 2, reruns: int | None = 1):
        self.expectations = {
            "none": expect("x h a", 4, why="relu's gradient reads h"),
            "full": expect("x", matmuls, why="the backward pass reruns x @ W1"),
        }
        self.compositions = {"once": "my recompute"}
        self.composition_expectations = {
            "once": Composed(frozenset({"x"}), forward, reruns, "my own design")
        }


def _record(answer: dict, **counts):
    return decode_record({**answer, **counts}, "evidence")


def test_j_fails_a_record_without_backward_matmuls_saying_not_reported():
    with pytest.raises(ConformanceError) as raised:
        check_policy_record(_Port(), FULL, _record(FULL_RECORD))
    message = str(raised.value)
    assert "matmuls in backward: not reported (its records have no backward_matmuls)" in message
    assert "expected 5 (the backward pass reruns x @ W1" in message
    assert "None" not in message
    check_policy_record(_Port(), FULL, _record(FULL_RECORD, backward_matmuls=5))
    with pytest.raises(ConformanceError, match="runs 4 matmuls in backward, expected 5"):
        check_policy_record(_Port(), FULL, _record(FULL_RECORD, backward_matmuls=4))


def test_j_leaves_a_count_the_expectation_does_not_name_unchecked():
    check_policy_record(_Port(matmuls=None), FULL, _record(FULL_RECORD))


def test_k_fails_a_record_without_forward_matmuls_saying_not_reported():
    record = _record(FULL_RECORD, backward_matmuls=5)
    plain = _record(PLAIN_RECORD, backward_matmuls=4)
    with pytest.raises(ConformanceError) as raised:
        composed.check_record(_Port(), "once", record, plain)
    message = str(raised.value)
    assert re.search(
        r"forward matmuls in the forward pass: not reported \(its records have no "
        r"forward_matmuls\), expected 2 \(my own design",
        message,
    )
    assert "None" not in message
    counted = _record(FULL_RECORD, backward_matmuls=5, forward_matmuls=2)
    assert composed.check_record(_Port(), "once", counted, plain)["rerun_matmuls"] == 1


def test_k_fails_reruns_it_cannot_count_saying_not_reported():
    record = _record(FULL_RECORD, forward_matmuls=2)  # no backward_matmuls: no reruns
    plain = _record(PLAIN_RECORD, backward_matmuls=4)
    with pytest.raises(ConformanceError) as raised:
        composed.check_record(_Port(), "once", record, plain)
    message = str(raised.value)
    assert "forward matmuls again in the backward pass: not reported" in message
    assert "backward_matmuls both with the checkpoint and without), expected 1" in message
    assert "None" not in message


def test_k_leaves_counts_the_expectation_does_not_name_unchecked():
    # What that costs: a record that counts nothing passes on its kept roles alone.
    port = _Port(forward=None, reruns=None)
    measured = composed.check_record(port, "once", _record(FULL_RECORD), _record(PLAIN_RECORD))
    assert (measured["forward_matmuls"], measured["rerun_matmuls"]) == (None, None)
