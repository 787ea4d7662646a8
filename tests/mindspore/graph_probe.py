"""Run in a child process by tests/mindspore/test_mindspore_graph.py: MindSpore's graph mode is
process-global, so the test process (PyNative, for the other MindSpore tests) never enters it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np


def _inputs(dim: int, features: int):
    from implementations.stacks.numpy import canonical_params

    rng = np.random.default_rng(1)
    x = rng.standard_normal(dim).astype(np.float32)
    cotangent = rng.standard_normal(features).astype(np.float32)
    return canonical_params(7, dim, features), x, cotangent


def ir_texts_and_evidence(dim: int, features: int) -> dict:
    """Per checkpoint "off"/"on": the raw `*_add_recomputation_*.ir` text of one compile,
    and `graph.ir_evidence` of another."""
    from implementations.stacks.mindspore import graph

    graph.enter()
    params, x, cotangent = _inputs(dim, features)
    found = {}
    for label, on in (("off", False), ("on", True)):
        with tempfile.TemporaryDirectory() as scratch:
            with graph.saving_graphs(Path(scratch)):
                graph.GraphMLP(params, checkpoint=on).vjp(x, cotangent)
            (path,) = Path(scratch).glob("*add_recomputation*.ir")
            text = path.read_text()
        found[label] = (text, graph.ir_evidence(params, x, cotangent, checkpoint=on))
    return found


def missing_ir() -> str:
    """`ir_evidence`'s error where no IR file of that name appears (as in another version)."""
    from implementations.stacks.mindspore import graph

    graph.enter()
    graph.IR_PATTERN = "*no_such_pass*.ir"
    try:
        graph.ir_evidence(*_inputs(4, 3), checkpoint=True)
    except graph.IRMissing as error:
        return str(error)
    return "no error"


def remat_verdicts() -> dict:
    """The compare row's remat verdict from the IR, for the MLP and for the mutant whose
    `Cell.recompute()` does nothing (implementations.stacks.mindspore.mindspore_mutants)."""
    from conformance.comparison import measure
    from conformance.tables.kinds.compare import verdict
    from implementations.stacks.mindspore import MLP
    from implementations.stacks.mindspore.graph_row import GraphRow
    from implementations.stacks.mindspore.mindspore_mutants import MindSporeNoRecompute

    params, x, _ = _inputs(4, 3)
    verdicts = {}
    for label, mlp in (("mlp", MLP), ("mutant", MindSporeNoRecompute.mlp)):
        instrument = type("Row", (GraphRow,), {"mlp": mlp})()
        row = measure.PortComparison(label, "available")
        for key, on in (("off", False), ("on", True)):
            record = instrument.backward_record(params, x, checkpoint=on)
            row.residuals[key] = measure.residuals(record)
        verdicts[label] = (verdict(row)["remat"], row.residuals["on"].recomputed)
    return verdicts


def bad_inputs() -> dict:
    """What `GraphMLP` says to a wrong x, cotangent or parameter shape (before compiling)."""
    from implementations.stacks.mindspore import graph
    from implementations.stacks.numpy import canonical_params

    graph.enter()
    params, x, cotangent = _inputs(4, 3)
    model = graph.GraphMLP(params, checkpoint=True)
    said = {}
    for label, call in (
        ("x", lambda: model.vjp(np.ones((2, 2), np.float32), cotangent)),
        ("cotangent", lambda: model.vjp(x, np.ones(5, np.float32))),
        ("params", lambda: model.load(canonical_params(0, 5, 3))),
    ):
        try:
            call()
        except (TypeError, ValueError) as error:
            said[label] = str(error)
    return said
