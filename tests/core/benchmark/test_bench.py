"""The bench's measurement code, at small sizes: residual counts derived by hand, outputs made.

Throughout, a block is `x (B, F) -> relu(x @ W1 + b1) @ W2 + b2` and a "unit"
is one `(B, F)` float32 array, `B*F*4` bytes. The analytic minimum is `L`
units: the block inputs.
"""

import gc
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conformance import benchmark as bench
from conformance import cli
from conformance.benchmark import measure, render, targets
from conformance.benchmark.measure import Result, Settings, Static
from conformance.running import timing
from conformance.tables.kinds import bench as bench_tables
from implementations.measuring.driver import bench_module
from tests.support.helpers import ROOT

#: It starts processes (`-m 'not subprocess'` leaves it out).
pytestmark = pytest.mark.subprocess

B, F = 4, 8  # B != F, so that a shape tells an activation (B, F) from a weight (F, F)
UNIT = B * F * 4


def _data(depth: int) -> measure.Data:
    return measure.make_data(Settings(depths=(depth,), batch=B, features=F), depth)


def _kept(saved) -> list:
    # What the bench counts: inputs and activations (parameters live anyway; a
    # constant, such as the zeros JAX keeps for relu's select, holds no data).
    return [t for t in saved if t.origin in ("input", "activation")]


def test_analytic_minimum_is_the_block_inputs():
    assert measure.analytic_minimum(1, 1, 1) == 4
    assert measure.analytic_minimum(16, 1024, 256) == 16 * 1024 * 256 * 4  # 16 MiB
    assert measure.analytic_minimum(2, B, F) == 2 * UNIT


def test_make_data_is_seeded_and_shaped():
    one, two = _data(2), _data(2)
    assert len(one.blocks) == 2
    assert [a.shape for a in one.blocks[0]] == [(F, F), (F,), (F, F), (F,)]
    assert one.x.shape == one.cotangent.shape == (B, F)
    assert all(a.dtype == np.float32 for a in (*one.blocks[0], one.x, one.cotangent))
    np.testing.assert_array_equal(one.blocks[1][0], two.blocks[1][0])


# ---------------------------------------------------------------------------
# JAX: the residual leaves of jax.vjp, by hand
# ---------------------------------------------------------------------------

# Per block, with no checkpoint, the backward pass needs: x_l for dW1 = x_l^T dh,
# relu's mask for dh = da * (h > 0) (jax.nn.relu's custom JVP keeps a bool),
# and a_l = relu(h) for dW2 = a_l^T dy. That is 4 + 1 + 4 bytes per element.
# x_{l+1} is block l's output, so it is counted once, as block l+1's input.
# With a checkpoint per block only x_l is kept; with dots_saveable, x_l and
# the first matmul's output x_l @ W1 (the second matmul's output is not
# needed: a matmul's backward needs its inputs, not its output).
# JAX's block places a lone block as it is (L = 1: one array per residual, x an argument)
# and two or more alike under lax.scan (their residuals stacked along L: one array per kind).
JAX_ONE = {  # mode -> (count, bytes) at L = 1
    "none": (3, UNIT + UNIT // 4 + UNIT),
    "full": (1, UNIT),
    "save-mm": (2, 2 * UNIT),
}
JAX_SCAN = {  # mode -> (count, bytes) for depth L >= 2
    "none": lambda L: (3, L * (UNIT + UNIT // 4 + UNIT)),
    "full": lambda L: (1, L * UNIT),
    "save-mm": lambda L: (2, 2 * L * UNIT),
}


def _jax_bench():
    pytest.importorskip("jax")
    from implementations.measuring.driver import bench_module

    return bench_module("implementations.stacks.jax.block")


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("mode", measure.MODES)
def test_jax_residuals_match_hand_derived_counts(mode, depth):
    saved = _jax_bench().build("", mode, _data(depth)).residuals()
    kept = _kept(saved)
    expected = JAX_ONE[mode] if depth == 1 else JAX_SCAN[mode](depth)
    assert (len(kept), sum(t.nbytes for t in kept)) == expected, kept
    # x is block 0's input, and it counts (as an argument alone, stacked under scan).
    if depth == 1:
        assert [t.origin for t in kept].count("input") == 1
    # Every parameter residual is a weight or bias (or stacked ones), never an activation.
    assert all(t.shape[-1] == F for t in saved)


def test_jax_full_checkpoint_keeps_exactly_the_analytic_minimum():
    settings = Settings(depths=(2,), batch=B, features=F)
    for depth in (1, 2):
        case = _jax_bench().build("", "full", _data(depth))
        result = measure.result_of(case, Static(case.residuals()), depth, settings)
        assert result.saved_bytes == result.analytic_minimum
        assert result.saved_ratio == 1.0


@pytest.mark.parametrize("remat", [False, True])
def test_a_flax_linen_stack_saves_what_the_plain_jax_stack_saves(remat):
    # The bench writes the stack with jax.checkpoint; Flax's nn.checkpoint lowers
    # to it, so a linen stack of the same blocks keeps the same residuals.
    pytest.importorskip("flax")
    import flax.linen as nn
    import jax

    from implementations.stacks.jax import saved_tensors

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):  # (B, F) -> (B, F)
            return nn.Dense(F)(nn.relu(nn.Dense(F)(x)))

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            block = nn.checkpoint(Block) if remat else Block
            for _ in range(2):
                x = block()(x)
            return x

    x = _data(2).x
    variables = Stack().init(jax.random.PRNGKey(0), x)
    kept = _kept(saved_tensors(Stack().apply, (variables, x), ("parameter", "input")))
    count, per_block = JAX_ONE["full" if remat else "none"]
    assert (len(kept), sum(t.nbytes for t in kept)) == (2 * count, 2 * per_block)


def test_jax_measure_reports_compiled_memory_and_matmuls():
    depth = 2
    stack = _jax_bench()
    found = {mode: stack.build("", mode, _data(depth)).measure() for mode in measure.MODES}
    assert all(s.temp_bytes is not None and s.temp_bytes >= 0 for s in found.values())
    assert all(s.peak_bytes is None for s in found.values())  # no allocation profiler
    mm = {mode: s.matmuls for mode, s in found.items()}
    # Forward 2 matmuls per block; backward 4 (dW1, dW2, and dx through each layer).
    # A loop body cannot drop block 0's dx: 6 per block. A checkpoint
    # recomputes x @ W1 only (the backward needs relu's input, not the
    # block's output): 7 per block, 7/6 of the work, below the 4/3 bound.
    assert mm == {"none": 6 * depth, "full": 7 * depth, "save-mm": 6 * depth}


# ---------------------------------------------------------------------------
# torch: an outer saved_tensors_hooks plus the selective checkpoint's cache
# ---------------------------------------------------------------------------

# Per block with no checkpoint: addmm keeps its input x_l (for dW1) and the
# weight (a transposed view of a parameter: left out); relu keeps its output,
# which addmm 2 keeps too (same storage: counted once). 2 units per block.
# A non-reentrant checkpoint per block keeps its input only: 1 unit per block.
# Saving mm/addmm outputs keeps each block's input (hook) and caches h_l and
# y_l; y_l is block l+1's input (same storage), so L inputs + L h's + y_{L-1}.
TORCH = {
    "none": lambda L: 2 * L,
    "full": lambda L: L,
    "save-mm": lambda L: 2 * L + 1,
}


def test_torch_measure_counts_matmuls_and_peak():
    pytest.importorskip("torch")
    from implementations.measuring.driver import bench_module

    torch_stack = bench_module("implementations.stacks.torch.block")
    depth = 2
    found = {mode: torch_stack.build("", mode, _data(depth)).measure() for mode in measure.MODES}
    # 2 addmm forward; backward: dW and dx per layer, but no dx for block 0's x.
    # The checkpoint recomputes addmm 1 only: its early stop ends the rerun
    # when the last saved tensor is packed, before addmm 2 computes.
    assert {m: s.matmuls for m, s in found.items()} == {
        "none": 6 * depth - 1,
        "full": 7 * depth - 1,
        "save-mm": 6 * depth - 1,
    }
    for static in found.values():
        assert static.temp_bytes is None
        # At least the gradients the step returns: 2 weights and 2 biases per block.
        assert static.peak_bytes is None or static.peak_bytes >= depth * (2 * F * F + 2 * F) * 4


def test_torch_checkpointed_gradients_equal_plain_ones():
    torch = pytest.importorskip("torch")
    from implementations.measuring.driver import bench_module

    torch_stack = bench_module("implementations.stacks.torch.block")
    grads = {mode: torch_stack.build("", mode, _data(2)).call()[1] for mode in measure.MODES}
    for mode in ("full", "save-mm"):
        for a, b in zip(grads[mode], grads["none"], strict=True):
            torch.testing.assert_close(a, b)


# ---------------------------------------------------------------------------
# MLX: the lazy graph of mx.vjp, and MLX's allocator
# ---------------------------------------------------------------------------

# Per block with no checkpoint, MLX's backward reads x_l (for dW1 = x_l^T dh),
# h = x_l W1^T + b1 (Maximum's VJP compares its input with 0: relu's mask is
# made in the backward pass, from h) and relu's output (for dW2): 3 units. A
# checkpoint per block keeps its inputs only: x_l, block l-1's output.
MLX = {"none": lambda L: 3 * L, "full": lambda L: L}


# The eager stacks' residuals, each against its own hand-derived counts: the
# modes it runs and the B x F float32 units each mode keeps.
EAGER_UNITS = {"torch": TORCH, "mlx": MLX}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(
    ("stack", "mode"), [(stack, mode) for stack, units in EAGER_UNITS.items() for mode in units]
)
def test_eager_residuals_match_hand_derived_counts(stack, mode, depth):
    pytest.importorskip(stack)
    stack_module = bench_module(bench.FRAMEWORKS[stack])

    saved = stack_module.build("", mode, _data(depth)).residuals()
    kept = _kept(saved)
    units = EAGER_UNITS[stack][mode](depth)
    assert (len(kept), sum(t.nbytes for t in kept)) == (units, units * UNIT), kept
    assert all(t.shape == (B, F) and t.dtype == "float32" for t in kept)
    assert [t.origin for t in kept].count("input") == 1  # x: block 0's input
    params = [t for t in saved if t.origin == "parameter"]
    if stack == "torch":
        # The parameters kept are recognised as such. Unwrapped, addmm keeps its
        # weight only for dx, and x needs no grad: all weights but block 0's W1.
        # A checkpoint keeps every tensor argument: the block's 4 parameters.
        assert len(params) == (2 * depth - 1 if mode == "none" else 4 * depth)
    else:
        assert all(t.shape in ((F, F), (F,)) for t in params)


def _mlx():
    pytest.importorskip("mlx")
    return bench_module("implementations.stacks.mlx.block")


def test_mlx_runs_no_save_mm():
    mlx_stack = _mlx()
    assert mlx_stack.configurations() == [("", "none"), ("", "full")]  # no checkpoint policy
    with pytest.raises(ValueError, match="save-mm"):
        mlx_stack.build("", "save-mm", _data(1))


@pytest.mark.parametrize("depth", [1, 3])
def test_mlx_allocator_agrees_with_the_graph(depth):
    # MLX's own counter between the passes: what the forward pass allocated and
    # is still active once the output is evaluated, the gradients pending. x
    # predates it and the output y is alive: the graph's saved bytes, less x, plus
    # y where mx.checkpoint's Depends holds it (none saves y_{L-1} nowhere). Each
    # block also allocates relu's scalar 0 (4 bytes), so allow a few bytes a block.
    mx = pytest.importorskip("mlx.core")
    data = measure.make_data(Settings(depths=(depth,), batch=64, features=32), depth)
    unit = 64 * 32 * 4
    for mode in ("none", "full"):
        case = _mlx().build("", mode, data)
        graph = sum(t.nbytes for t in _kept(case.residuals()))
        gc.collect()  # the watch's names for the graph's arrays, let go
        mx.synchronize()
        before = mx.get_active_memory()
        outputs, grads = mx.vjp(lambda *p, c=case: [c.run(c.x, *p)], case.params, [case.cotangent])
        mx.eval(outputs)
        mx.synchronize()
        held = mx.get_active_memory() - before
        mx.eval(grads)
        del outputs, grads  # before the next mode's measurement starts
        x_before, y_alive = unit, unit
        assert 0 <= held - (graph - x_before + y_alive) <= 16 * depth, mode


def test_mlx_measure_counts_matmuls_and_peak():
    depth = 2
    found = {m: _mlx().build("", m, _data(depth)).measure() for m in ("none", "full")}
    # As torch: no dx for block 0's x; the lazy graph needs only addmm 1 again
    # (relu's mask and dW2's input), so the recomputed addmm 2 is never run.
    assert {m: s.matmuls for m, s in found.items()} == {
        "none": 6 * depth - 1,
        "full": 7 * depth - 1,
    }
    for static in found.values():
        assert static.temp_bytes is None
        assert static.peak_bytes >= depth * (2 * F * F + 2 * F) * 4  # at least the gradients


def test_mlx_checkpointed_gradients_equal_plain_ones():
    grads = {m: _mlx().build("", m, _data(2)).call()[1] for m in ("none", "full")}
    for a, b in zip(grads["full"], grads["none"], strict=True):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-6, atol=1e-6)


# compiled torch: AOTAutograd's partitioned forward graph, as inductor compiled it
# ---------------------------------------------------------------------------

# The partitioner keeps only what the backward graph reads. With no checkpoint:
# each block's input and relu's output (2 units per block). A checkpoint per
# block: the block inputs. Saving matmul outputs: x, each block's h_l and each
# block output y_l the next block reads (y_{L-1} is read by no backward, and
# unlike eager's cache the partition drops it): 2L units.
TORCH_COMPILED = {"none": lambda L: 2 * L, "full": lambda L: L, "save-mm": lambda L: 2 * L}


@pytest.mark.parametrize("mode", measure.MODES)
def test_compiled_torch_residuals_and_matmuls_match_hand_derived_counts(mode):
    pytest.importorskip("torch")
    from implementations.stacks.torch import compiled_bench as torch_compile_stack

    depth = 2
    static = torch_compile_stack.build("compiled", mode, _data(depth)).measure()
    kept = _kept(static.saved)
    units = TORCH_COMPILED[mode](depth)
    assert (len(kept), sum(t.nbytes for t in kept)) == (units, units * UNIT), kept
    assert [t.origin for t in kept].count("input") == 1  # x
    # As eager: a checkpoint recomputes the first matmul of each block.
    assert static.matmuls == {"none": 6, "full": 7, "save-mm": 6}[mode] * depth - 1


# TensorFlow: forward tensors the backward ops of the traced step read
# ---------------------------------------------------------------------------

# Per block with no checkpoint: MatMul 1's gradient (dW1 = x^T dh) reads x_l;
# ReluGrad and dW2 read relu's output. 2 units per block (x_{l+1}, block l's
# output, is read as block l+1's MatMul input: counted once). A recompute_grad
# per block keeps the region's arguments: x_l, 1 unit. The first matmul
# outside the region keeps x_l (for dW1) and x_l @ W1 (the region's input).
TENSORFLOW = {"none": lambda L: 2 * L, "full": lambda L: L, "save-mm": lambda L: 2 * L}


@pytest.mark.parametrize("mode", measure.MODES)
def test_tensorflow_residuals_match_hand_derived_counts(mode):
    pytest.importorskip("tensorflow")
    tensorflow_stack = bench_module("implementations.stacks.tensorflow.block")

    depth = 2
    kept = _kept(tensorflow_stack.build("function", mode, _data(depth)).residuals())
    units = TENSORFLOW[mode](depth)
    assert (len(kept), sum(t.nbytes for t in kept)) == (units, units * UNIT), kept
    assert all(t.shape == (B, F) and t.dtype == "float32" for t in kept)
    assert [t.origin for t in kept].count("input") == 1  # x: block 0's input


def test_tensorflow_measure_counts_matmuls_per_variant():
    pytest.importorskip("tensorflow")
    tensorflow_stack = bench_module("implementations.stacks.tensorflow.block")

    depth = 2
    found = {
        (variant, mode): tensorflow_stack.build(variant, mode, _data(depth)).measure().matmuls
        for variant, mode in tensorflow_stack.configurations()
    }
    # No checkpoint: 2 forward, dW1, dW2 and dx through layer 2 per block, and
    # dx through layer 1 for every block but block 0 (x needs no gradient).
    # recompute_grad reruns both matmuls and differentiates the rerun with
    # respect to every region argument, x_l included: 8 per block. Outside a
    # region, the first matmul is not rerun: 7 per block, less block 0's dx.
    for variant in ("eager", "function"):
        assert found[variant, "none"] == 6 * depth - 1
        assert found[variant, "full"] == 8 * depth
        assert found[variant, "save-mm"] == 7 * depth - 1
    # XLA drops what no output needs (the rerun second matmul, block 0's dx) but
    # keeps the rerun first matmul: recompute_grad ties it to the cotangent.
    assert found["xla", "none"] == found["xla", "save-mm"] == 6 * depth - 1
    assert found["xla", "full"] == 7 * depth - 1


def test_tensorflow_checkpointed_gradients_equal_plain_ones():
    pytest.importorskip("tensorflow")
    tensorflow_stack = bench_module("implementations.stacks.tensorflow.block")

    grads = {}
    for mode in measure.MODES:
        case = tensorflow_stack.build("function", mode, _data(2))
        grads[mode] = [g.numpy() for g in case.call()[1]]
    for mode in ("full", "save-mm"):
        for a, b in zip(grads[mode], grads["none"], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# Framework-free parts
# ---------------------------------------------------------------------------

HLO = """\
HloModule m, entry_computation_layout={()->f32[]}

%fused (p0: f32[2,2], p1: f32[2,2]) -> f32[2,2] {
  ROOT %dot.1 = f32[2,2]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%body (t: (s32[], f32[2,2])) -> (s32[], f32[2,2]) {
  %f = f32[2,2]{1,0} fusion(%a, %b), kind=kCustom, calls=%fused
  %dot.2 = f32[2,2]{1,0} dot(%f, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%cond (t: (s32[], f32[2,2])) -> pred[] {
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (x: f32[2,2]) -> f32[2,2] {
  %dot.3 = f32[2,2]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %w = (s32[], f32[2,2]) while(%t), condition=%cond, body=%body, backend_config={TRIPS}
}
""".replace("{TRIPS}", '{"known_trip_count":{"n":"5"}}')


def test_hlo_dot_count_follows_fusions_and_loops():
    from implementations.stacks.hlo import hlo_dot_count  # no framework needed

    assert hlo_dot_count(HLO) == 1 + 5 * 2  # the entry's dot, and 2 per loop iteration
    unknown = HLO.replace(', backend_config={"known_trip_count":{"n":"5"}}', "")
    assert hlo_dot_count(unknown) is None
    assert hlo_dot_count("not HLO") is None


class _FakeCase:
    def __init__(self, name: str, log: list):
        self.name, self.log = name, log

    def step(self) -> None:
        self.log.append(self.name)


def test_time_interleaved_samples_every_case_in_a_new_order(monkeypatch):
    monkeypatch.setattr(timing, "MIN_SAMPLE_SECONDS", 0.0)  # one step per sample
    log: list[str] = []
    cases = [_FakeCase(n, log) for n in "abcde"]
    samples = timing.time_interleaved([case.step for case in cases], repeats=6)
    assert [len(s) for s in samples] == [6] * 5
    assert log[:10] == list("abcde" * 2)  # a warm-up and a calibration step each
    orders = ["".join(log[10 + 5 * r : 15 + 5 * r]) for r in range(6)]
    assert all(sorted(order) == list("abcde") for order in orders)  # each case once a repeat
    assert len(set(orders)) > 1  # not one fixed order
    assert len({order[0] for order in orders}) > 1


def _result(framework, variant, mode, depth, saved, times) -> Result:
    return Result(
        framework=framework,
        variant=variant,
        mode=mode,
        depth=depth,
        batch=B,
        features=F,
        saved_count=saved,
        saved_bytes=saved * UNIT,
        analytic_minimum=depth * UNIT,
        temp_bytes=None,
        peak_bytes=123,
        matmuls=6 * depth,
        residuals=[],
        step_seconds=list(times),
    )


def test_ratios_are_per_repeat_medians_and_targets_are_checked():
    results = [
        _result("torch", "", "none", 2, 4, [1.0, 2.0, 1.0]),
        _result("torch", "", "full", 2, 2, [1.3, 2.2, 1.6]),
        _result("torch", "", "save-mm", 2, 5, [1.1, 2.2, 1.1]),
    ]
    measure.attach_timings(results, [r.step_seconds for r in results])
    assert results[1].time_ratio == pytest.approx(1.3)  # median of 1.3, 1.1, 1.6
    assert results[1].saved_ratio == 1.0
    (target,) = targets.targets(results)
    assert target["saved_target_met"]
    # 1.1, 1.3, 1.6: half their range is ±19% of 1.3, too wide to call under 1.4.
    assert target["time_verdict"] == "inconclusive"
    assert target["time_target_met"] is None
    assert target["time_ratio_worst"] == pytest.approx(1.3)


def test_markdown_has_a_row_per_result_and_the_definitions():
    results = [_result("jax", "scan", m, d, 1, [0.01]) for d in (1, 2) for m in measure.MODES]
    measure.attach_timings(results, [r.step_seconds for r in results])
    report = bench.BenchReport(Settings(depths=(1, 2), batch=B, features=F), results)
    text = render.markdown(report)
    table = [line for line in text.splitlines() if line.startswith("| ") and "jax scan" in line]
    assert len(table) == len(results) + 1  # + the targets row
    for key in measure.definitions():
        assert f"\n- {key}: " in text


def test_a_tiny_bench_writes_json_markdown_and_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    # Two frameworks: the command's files, not every stack (each stack's bench has its own
    # tests in its folder, and test_bench_stacks.py loads them all in their order).
    named = [name for name in ("jax", "autograd") if name in bench.DEFAULT_FRAMEWORKS]
    argv = ["bench", "--out", str(tmp_path), "--depths", "1", "2", "--batch", str(B)]
    argv += ["--features", str(F), "--repeats", "3", "--max-repeats", "3", "--json"]
    argv += ["--csv", str(tmp_path / "bench.csv")]
    for name in named:
        argv += ["--framework", name]
    args = cli.parser().parse_args(argv)
    assert cli.COMMANDS["bench"].run(args) == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert json.loads(capsys.readouterr().out) == data
    loaded, skipped = bench.load_frameworks(named)
    per_depth = sum(len(m.configurations()) for m in loaded.values())
    assert len(data["results"]) == 2 * per_depth
    assert set(data["skipped"]) == set(skipped)
    for row in data["results"]:
        assert row["analytic_minimum"] == row["depth"] * UNIT
        assert row["saved_bytes"] > 0
        assert len(row["step_seconds"]) == row["n"] == 3
        assert row["time_ratio"] is not None
        # Three repeats still carry a spread (half their range), never a silent null.
        assert row["step_spread"] is not None
        assert row["time_ratio_spread"] is not None
    assert "| L | stack | mode |" in (tmp_path / "bench.md").read_text()
    csv_rows = (tmp_path / "bench.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + len(data["results"])  # a header, then a row per result
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )


def test_importing_the_bench_imports_no_framework():
    result = _run(
        """
        import sys
        import conformance.benchmark, conformance.benchmark.measure, conformance.benchmark.render
        import conformance.comparison
        frameworks = ("jax", "torch", "flax", "equinox", "mlx", "matplotlib")
        loaded = [m for m in frameworks if m in sys.modules]
        assert not loaded, loaded
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_missing_framework_is_skipped_with_a_reason():
    result = _run(
        """
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        from conformance import benchmark as bench, cli
        loaded, skipped = bench.load_frameworks(["torch", "nonsense"])
        print(sorted(loaded), "|", skipped["torch"], "|", skipped["nonsense"])
        """
    )
    assert result.returncode == 0, result.stderr
    loaded, torch_reason, other = result.stdout.strip().split(" | ")
    assert loaded == "[]"
    assert "not installed" in torch_reason
    assert "no bench" in other


def test_the_spread_is_half_the_interquartile_range_over_the_median():
    assert measure.relative_spread([1.0]) is None  # one sample: no spread to tell
    # Fewer than 4: half the whole range, the cautious figure (the issue: --repeats 3
    # --max-repeats 3 left the spread null and silently omitted).
    assert measure.quartiles([2.0, 1.0]) == (1.0, 1.5, 2.0)
    assert measure.quartiles([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)
    assert measure.relative_spread([3.0, 1.0, 2.0]) == pytest.approx((3 - 1) / 2 / 2)
    spread = measure.relative_spread([0.9, 1.0, 1.0, 1.0, 1.1])
    q1, median, q3 = 0.95, 1.0, 1.05  # statistics.quantiles' exclusive method
    assert spread == pytest.approx((q3 - q1) / 2 / median)
    noisy = Result("jax", "scan", "full", 1, 8, 4, 1, 32, 32, None, None, None, [])
    noisy.time_ratios = [0.8, 1.0, 1.3, 1.6, 0.9]
    # An IQR over half the median is noise, said in a word (not "±30%!").
    assert bench_tables.ratio_with_spread(noisy.to_json()) == "1.00 noise"
    loose = Result("jax", "scan", "full", 1, 8, 4, 1, 32, 32, None, None, None, [])
    loose.time_ratios = [1.1, 1.3, 1.35, 1.5, 1.3]
    assert bench_tables.ratio_with_spread(loose.to_json()).endswith("!")  # over ±5%
    steady = Result("jax", "scan", "full", 1, 8, 4, 1, 32, 32, None, None, None, [])
    steady.time_ratios = [1.30, 1.31, 1.30, 1.29, 1.30]
    assert bench_tables.ratio_with_spread(steady.to_json()) == "1.30 ±0%"


def test_a_verdict_needs_a_spread_within_the_target_and_a_band_clear_of_it():
    assert measure.verdict(1.2, 0.04, 1.4, 0.05) == "met"  # 1.248 <= 1.4
    assert measure.verdict(1.6, 0.04, 1.4, 0.05) == "missed"  # 1.536 > 1.4
    assert measure.verdict(1.38, 0.04, 1.4, 0.05) == "inconclusive"  # band 1.32..1.44
    assert measure.verdict(2.34, 1.6, 1.4, 0.05) == "inconclusive"  # the issue's ±160%
    assert measure.verdict(1.0, 0.06, 1.4, 0.05) == "inconclusive"  # spread over target
    assert measure.verdict(1.0, None, 1.4, 0.05) == "inconclusive"  # one repeat
    assert measure.verdict(None, 0.01, 1.4, 0.05) == "inconclusive"


def _timed(mode, depth, ratios, framework="torch", variant=""):
    result = _result(framework, variant, mode, depth, 1, [1.0] * len(ratios))
    result.time_ratios = list(ratios)
    return result


def test_a_noisy_ratio_reads_inconclusive_never_a_tick_or_a_cross():
    # The issue: "time/none <= 1.4 at deepest L: 2.34 ✗" from ±160% data.
    noisy = [0.5, 1.0, 2.34, 5.0, 8.0]  # median 2.34, quartiles 0.75 and 6.5: ±123%
    steady_over = [2.30, 2.33, 2.34, 2.35, 2.36]
    steady_under = [1.10, 1.11, 1.12, 1.13, 1.14]
    for ratios, expected in ((noisy, "inconclusive"), (steady_over, "missed"),
                             (steady_under, "met")):  # fmt: skip
        (target,) = targets.targets([_timed("full", 4, ratios)])
        assert target["time_verdict"] == expected
        assert target["time_target_met"] == {"met": True, "missed": False}.get(expected)
        assert target["time_ratio_deepest_n"] == 5
        assert target["time_ratio_deepest_spread"] is not None


def test_every_l_targets_miss_on_one_clear_miss_and_meet_only_when_all_meet():
    clear_under, clear_over, noisy = [1.0] * 5, [1.5] * 5, [0.5, 1.0, 1.1, 3.0, 4.0]
    for ratios, expected in (
        ((clear_under, clear_under), "met"),
        ((clear_under, noisy), "inconclusive"),
        ((noisy, clear_over), "missed"),
    ):
        results = [
            _timed("full", depth, r, variant="compiled")
            for depth, r in zip((1, 2), ratios, strict=True)
        ]
        for result in results:  # a stack held to its target at every depth says so
            result.time_target_every_depth = 1.2
        (target,) = targets.targets(results)
        assert target["time_target_at"] == "every L"
        assert target["time_verdict"] == expected


def _console_text(report) -> str:
    import io

    from rich.console import Console

    out = io.StringIO()
    render.print_report(report, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_the_terminal_and_markdown_say_inconclusive_and_warn_of_load():
    results = [_timed("none", 2, [1.0] * 5), _timed("full", 2, [0.5, 1.0, 2.34, 5.0, 8.0])]
    loaded = bench.BenchReport(Settings(depths=(2,), batch=B, features=F), results)
    cores = os.cpu_count()
    loaded.load = {"before": cores + 4.9, "after": cores + 5.9}
    text = _console_text(loaded)
    # The targets table's row: the line, its saved ratio, its time ratios, target, verdict.
    (line,) = [row for row in text.splitlines() if row.startswith("torch · full")]
    assert line.rstrip().endswith("inconclusive")
    assert "✓" not in line.split("≤")[-1]
    assert "✗" not in line
    assert "2.34 noise" in line  # a spread past half the median, said in a word
    assert "(n=5)" in line
    assert "Warning: the machine was loaded" in text
    assert f"{cores + 4.9:.1f} before" in text
    markdown = render.markdown(loaded)
    assert "inconclusive" in markdown
    assert "**Warning: the machine was loaded" in markdown
    quiet = bench.BenchReport(loaded.settings, results, load={"before": 0.0, "after": 0.0})
    assert "loaded" not in _console_text(quiet)
    assert "Warning" not in render.markdown(quiet)


def test_a_bench_report_reads_back_from_its_json():
    results = [_timed("none", 2, [1.0] * 3), _timed("full", 2, [1.1, 1.2, 1.3])]
    report = bench.BenchReport(Settings(depths=(2,), batch=B, features=F), results)
    report.load = {"before": 0.5, "after": 0.7}
    back = bench.from_json(json.loads(json.dumps(report.to_json())))
    assert back.settings == report.settings
    assert [r.time_ratios for r in back.results] == [r.time_ratios for r in results]
    assert back.load == report.load
    with pytest.raises(ValueError, match="not a bench report: no results"):
        bench.from_json({"settings": {}})


def test_the_plot_has_a_row_per_framework_and_one_metric_per_memory_axis():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from conformance.benchmark import plot

    data = json.loads((ROOT / "docs" / "bench.json").read_text())
    report = bench.from_json(data)
    frameworks = list(dict.fromkeys(r.framework for r in report.results))
    drawing = plot.figure(report)
    axes = drawing.axes
    titles = [a.get_title() for a in axes if a.get_title()]
    columns = len(titles)
    assert len(axes) == columns * len(frameworks)
    assert [a.get_ylabel() for a in axes[::columns]] == frameworks
    # XLA temp and the allocator peak are columns of their own, never one axis.
    assert any("XLA compiled temp" in t for t in titles)
    assert any("allocation peak" in t for t in titles)
    assert not any("temp" in t and "peak" in t for t in titles)
    lines_per_axis = [
        len([line for line in a.get_lines() if len(line.get_xdata()) > 1]) for a in axes
    ]
    assert max(lines_per_axis) <= 3 * 3 + 1  # a framework's variants x modes, + the minimum
    assert not any(a.get_legend() for a in axes)  # the legend is the figure's, below
    assert len(drawing.legends) == 1
    # Error bands on every time panel that has lines; plain tick labels, no 2^11.
    time_axes = [a for i, a in enumerate(axes) if "step time" in titles[i % columns]]
    assert all(a.collections for a in time_axes)
    drawing.canvas.draw()
    for axis in time_axes:
        labels = [t.get_text() for t in axis.get_yticklabels() if t.get_text()]
        assert labels
        assert all(label.replace(".", "").isdigit() for label in labels), labels
