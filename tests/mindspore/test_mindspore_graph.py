"""MindSpore's graph mode: the IR evidence, the compare row and the bench stack.

Graph mode is process-global, so whatever enters it runs in a child process
(`tests/mindspore/graph_probe.py` through `running.isolation`, or the bench
stack's own child); this process stays in PyNative for the other MindSpore
tests. Expected values are facts read off MindSpore 2.10.0's IR by hand (the
raw text of `*_add_recomputation_*.ir`, counted here with plain string
searches, not the parser under test) or derived by hand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from conformance import comparison as compare
from conformance.comparison import measure
from conformance.running import isolation
from implementations.stacks.mindspore import graph
from tests.support import row_alone

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.slow(reason="16 s alone: MindSpore's graph mode compiled in processes of its own"),
]

PROBE = "tests.mindspore.graph_probe"
D, F = 8, 16


def _probe(function: str, *args):
    done = isolation.run(f"{PROBE}:{function}", args, timeout=600)
    assert done.status == "returned", (done.error, done.output)
    return done.value


@pytest.fixture(scope="module")
def ir():
    return _probe("ir_texts_and_evidence", D, F)


def _count(text: str, op: str) -> int:
    return len(re.findall(rf"= PrimFunc_{op}\(", text))


def test_the_raw_ir_shows_one_more_matmul_and_relu_with_the_checkpoint(ir):
    # The facts, in the text itself: MatMul 6 -> 7, ReLU 1 -> 2 (and Add 2 -> 3).
    off, on = ir["off"][0], ir["on"][0]
    assert (_count(off, "MatMulExt"), _count(on, "MatMulExt")) == (6, 7)
    assert (_count(off, "ReLU"), _count(on, "ReLU")) == (1, 2)
    assert (_count(off, "Add"), _count(on, "Add")) == (2, 3)
    assert "duplicated: Bool(1)" not in off
    copies = [line for line in on.splitlines() if "duplicated: Bool(1)" in line]
    assert len(copies) == 3
    for line in copies:  # each copy shares its recompute_id with one original
        (ident,) = re.findall(r"recompute_id: I64\((\d+)\)", line)
        originals = [
            other
            for other in on.splitlines()
            if f"recompute_id: I64({ident})" in other
            and re.search(r"\brecompute: Bool\(1\)", other)  # the forward node it copies
        ]
        assert len(originals) == 1, (line, originals)
    assert "Gradients/recompute_Default" in on
    assert "relu-ReLU/Grad_ReLU" in on


def test_the_evidence_reads_the_copies_kinds_and_what_backward_reads(ir):
    off, on = ir["off"][1], ir["on"][1]
    assert off.recomputed == {}
    assert on.recomputed == {"MatMulExt": 1, "Add": 1, "ReLU": 1}
    assert all(paired for _, _, paired in on.copies)
    assert any(scope.endswith("relu-ReLU/Grad_ReLU") for scope in on.copy_readers)
    # The forward is the same; the backward gains the copies: the raw counts, split.
    assert off.forward == on.forward == {"MatMulExt": 2, "Add": 2, "ReLU": 1}
    assert (off.backward_matmuls, on.backward_matmuls) == (4, 5)
    # Without it, backward reads x (for dW1) and relu's output a (for dW2 and ReluGrad);
    # with it, x alone.
    kept_off = {t.role: t.shape for t in off.record().kept}
    kept_on = {t.role: t.shape for t in on.record().kept}
    assert kept_off == {"x": (D,), "a": (F,)}
    assert kept_on == {"x": (D,)}
    assert (off.record().saved_bytes, on.record().saved_bytes) == (4 * (D + F), 4 * D)


def test_a_missing_ir_file_is_said_plainly_never_read_as_zeros():
    message = _probe("missing_ir")
    assert "wrote no *no_such_pass*.ir" in message
    assert "MindSpore 2" in message


def test_text_that_is_no_ir_raises():
    with pytest.raises(graph.IRMissing, match="holds no node"):
        graph.parse_ir("# IR entry: nothing here\n", "empty.ir")


SMALL_IR = """
%para1_x: <Tensor[Float32], (3)> : [3]
%para2_s: <Tensor[Float32], (2)> : [2]
%para3_w: <Ref[Tensor[Float32]], (3, 2), ref_key=w, is_parameter>  :  has_default
subgraph @g() {
  %0(a) = Load(%para3_w, UMonad[U]) cnode_attrs: {checkpoint: Bool(1)}
      : (<Ref[Tensor[Float32]], (3, 2)>, <UMonad, NoShape>) -> (<Tensor[Float32], (3, 2)>)
      # Scope: (Default)
  %1(b) = PrimFunc_MatMulExt(%para1_x, %0) cnode_attrs: {recompute_id: I64(1), recompute: Bool(1)}
      : (<Tensor[Float32], (3)>, <Tensor[Float32], (3, 2)>) -> (<Tensor[Float32], (2)>)
      # Scope: (recompute_Default/net)
  %2(c) = PrimFunc_ReLU(%1) cnode_attrs: {recompute_id: I64(2), recompute: Bool(1)}
      : (<Tensor[Float32], (2)>) -> (<Tensor[Float32], (2)>)
      # Scope: (recompute_Default/net)
  %3(d) = Depend(%para1_x, %2) cnode_attrs: {recompute_depend: Bool(1)}
      # Scope: (Default)
  %4(e) = PrimFunc_MatMulExt(%3, %0) cnode_attrs: {recompute_id: I64(1), duplicated: Bool(1)}
      : (<Tensor[Float32], (3)>, <Tensor[Float32], (3, 2)>) -> (<Tensor[Float32], (2)>)
      # Scope: (recompute_Default/net)
  %5(f) = PrimFunc_ReluGrad(%para2_s, %4) cnode_attrs: {checkpoint: Bool(1)}
      : (<Tensor[Float32], (2)>, <Tensor[Float32], (2)>) -> (<Tensor[Float32], (2)>)
      # Scope: (Gradients/recompute_Default/net/Grad_ReLU)
  Return(%5)
}
"""


def test_the_parser_reads_a_small_ir_by_hand():
    # One copy of a matmul (recompute_id 1, as its original), reached through a Depend on x,
    # read by a ReluGrad: backward reads x alone; relu's output is read by no backward node.
    found = graph.parse_ir(SMALL_IR, "small.ir")
    assert found.forward == {"MatMulExt": 1, "ReLU": 1}
    assert found.backward == {"MatMulExt": 1, "ReluGrad": 1}
    assert found.recomputed == {"MatMulExt": 1}
    assert found.copies == [("MatMulExt", 1, True)]
    assert found.copy_readers == ["Gradients/recompute_Default/net/Grad_ReLU"]
    assert [(t.origin, t.role, t.shape) for t in found.saved] == [("input", "x", (3,))]
    assert found.record().backward_matmuls == 1


def test_graph_mlp_refuses_pynative_mode():
    from implementations.stacks.numpy import canonical_params

    with pytest.raises(RuntimeError, match="graph mode"):
        graph.GraphMLP(canonical_params(0, 3, 2), checkpoint=True)


def test_the_remat_verdict_catches_a_recompute_that_does_nothing():
    # The mutant of the PyNative port (Cell.recompute a no-op), compiled in graph mode.
    verdicts = _probe("remat_verdicts")
    assert verdicts["mlp"] == (True, {"MatMulExt": 1, "Add": 1, "ReLU": 1})
    assert verdicts["mutant"] == (False, {})


# ---------------------------------------------------------------------------
# compare's row
# ---------------------------------------------------------------------------


def test_compare_row_in_graph_mode_agrees_and_shows_its_evidence():
    pytest.importorskip("flax")
    import implementations

    canonical = implementations.load(implementations.CANONICAL)
    canonical.pin_matmul_precision()
    params = canonical.init_params(0, 4, 3)
    x, cotangent = measure.make_inputs(0, 4, 3)
    exact = measure.exact_results(params, x, cotangent)
    expected = measure.expected_results(canonical, params, x, cotangent, 0)
    row = row_alone.compare_row(
        "mindspore_graph", params, x, cotangent, 0, 2, exact, expected, first_calls=True
    )
    assert (row.name, row.state, row.error) == ("mindspore_graph", "available", "")
    assert row.lane == "mindspore_graph"
    assert row.versions["mindspore"].startswith("2.")
    assert row.matmul_precision["mode"] == "GRAPH_MODE"
    assert row.output.worst_ratio <= 1.0
    assert row.exercise.worst_ratio <= 1.0
    assert set(row.gradients) == {"w1", "b1", "w2", "b2", "x"}
    assert all(d.worst_ratio <= 1.0 for d in row.gradients.values())
    assert all(b.ratio <= 1.0 for b in row.precision.values())
    off, on = row.residuals["off"], row.residuals["on"]
    assert (on.count, on.bytes) == (1, 16)  # x, (4,) float32, as every port
    assert (off.count, off.bytes) == (2, 16 + 12)  # x and a (3,)
    assert on.recomputed == {"MatMulExt": 1, "Add": 1, "ReLU": 1}
    assert "add_recomputation" in on.instrument
    assert "backward ops: Add x1" in on.instrument
    assert row.warm_forward_seconds > 0
    assert row.warm_vjp_seconds > 0
    assert row.warm_samples == 2
    assert set(row.first_call) == {"import", "forward", "vjp"}
    assert all(seconds > 0 for seconds in row.first_call.values())
    assert not compare.failed(compare.Comparison(0, 4, 3, "flax_linen", [row]))


# ---------------------------------------------------------------------------
# bench's stack
# ---------------------------------------------------------------------------

B, BF = 4, 8  # B != F: an activation (B, F) is no weight (F, F)
UNIT = B * BF * 4
# By hand, per block l: the backward reads x_l (dW1), relu's output a_l (ReluGrad reads
# the output, and dW2), and nothing of y_l but as block l+1's input: none keeps x and, per
# block, a_l and y_l but the last y: 2L units. full keeps the block inputs: L units.
# save-mm keeps x_l @ W1 and the block input (an input past the first is rebuilt from the
# previous block's a @ W2, which is kept, since its add is recomputed): 2L units.
# Matmuls: forward 2L; backward dW1, dW2, da per block and dx above block 0: 4L - 1. With
# full, each block's first matmul again (its second's output is read by no backward node).
BENCH = {
    "none": lambda L: (2 * L, 2 * L * UNIT, 6 * L - 1),
    "full": lambda L: (L, L * UNIT, 7 * L - 1),
    "save-mm": lambda L: (2 * L, 2 * L * UNIT, 6 * L - 1),
}


@pytest.fixture(scope="module")
def stack():
    # Graph mode is process-wide: the stack runs in a process of its own, as the bench runs it.
    from conformance.benchmark import FRAMEWORKS, ISOLATED
    from conformance.benchmark.isolated import IsolatedStack

    assert "mindspore_graph" in ISOLATED
    isolated = IsolatedStack(FRAMEWORKS["mindspore_graph"])
    yield isolated
    isolated.close()


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("mode", ["none", "full", "save-mm"])
def test_bench_stack_saves_and_multiplies_as_derived_by_hand(stack, mode, depth):
    from conformance.benchmark import measure as bench_measure

    settings = bench_measure.Settings(depths=(depth,), batch=B, features=BF)
    case = stack.build("", mode, bench_measure.make_data(settings, depth))
    static = case.measure()
    kept = [t for t in static.saved if t.origin in ("input", "activation")]
    count, nbytes, matmuls = BENCH[mode](depth)
    assert len(kept) == count
    assert sum(t.nbytes for t in kept) == nbytes
    assert all(t.shape == (B, BF) for t in kept)
    assert static.matmuls == matmuls
    assert static.peak_bytes is None  # not measurable on the CPU: None, never 0
    case.step()


def test_bench_stack_reports_versions_and_refuses_unknown_modes(stack):
    from conformance.benchmark import measure as bench_measure

    assert stack.versions()["mode"] == "GRAPH_MODE"
    assert stack.configurations() == [("", mode) for mode in bench_measure.MODES]
    data = bench_measure.make_data(bench_measure.Settings(depths=(1,), batch=B, features=BF), 1)
    with pytest.raises(ValueError, match="unknown mode 'fast'"):
        stack.build("", "fast", data)
    with pytest.raises(ValueError, match="unknown variant 'xla'"):
        stack.build("xla", "none", data)
    before = [a.copy() for a in (data.x, data.cotangent, *data.blocks[0])]
    stack.build("", "full", data).step()
    for old, now in zip(before, (data.x, data.cotangent, *data.blocks[0]), strict=True):
        np.testing.assert_array_equal(old, now)  # the caller's data is never modified


def test_bad_inputs_get_errors_naming_the_argument():
    said = _probe("bad_inputs")
    assert set(said) == {"x", "cotangent", "params"}
    assert said["x"].startswith("x ")
    assert said["cotangent"] == "cotangent must have shape (3,), got (5,)"
    assert said["params"].startswith("params: shape (5, 3)")


def test_bench_stack_checkpointed_gradients_equal_plain_ones(stack):
    from conformance.benchmark import measure as bench_measure

    data = bench_measure.make_data(bench_measure.Settings(depths=(2,), batch=B, features=BF), 2)
    plain = stack.build("", "none", data).gradients()
    assert len(plain) == 4 * 2
    for mode in ("full", "save-mm"):
        for a, b in zip(plain, stack.build("", mode, data).gradients(), strict=True):
            np.testing.assert_array_equal(a, b)  # recomputing runs the same kernels


ALONE = """
import json
import numpy as np
from conformance.comparison import measure
from implementations.stacks.numpy import canonical_params
from tests.support import reference
from tests.support.row_alone import compare_row

params = canonical_params(0, 4, 3)
x, cotangent = measure.make_inputs(0, 4, 3)
f32 = lambda a: np.asarray(a, np.float32)
grads = {k: f32(v) for k, v in reference.vjp(params, x, cotangent).items()}
out = f32(reference.forward(params, x))
expected = measure.Expected(out, out, grads)
exact = measure.exact_results(params, x, cotangent)
row = compare_row("mindspore_graph", params, x, cotangent, 0, 1, exact, expected)
print(json.dumps([row.state, row.error, row.residuals["on"].recomputed]))
"""


def test_the_row_loads_mindspore_alone_with_every_other_framework_blocked(tmp_path):
    import json
    import subprocess
    import sys

    from tests.support.helpers import ROOT, without_frameworks

    others = ["jax", "jaxlib", "flax", "torch", "tensorflow", "keras", "paddle", "mlx"]
    env = without_frameworks(tmp_path / "blocked", others)
    done = subprocess.run(
        [sys.executable, "-c", ALONE], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    state, error, recomputed = json.loads(done.stdout.strip().splitlines()[-1])
    assert (state, error) == ("available", "")
    assert recomputed == {"MatMulExt": 1, "Add": 1, "ReLU": 1}
