"""The torch-based ports on the block with variables and RNGs (issue 78), held to their
declarations (`implementations/stacks/torch/state_declarations.py`) by numbers: each step's
output and gradients against the numpy block for the mask the instrument saw, the masks the
recompute drew, the RNG stream, and the running statistics against the count model (the
canonical's update, `updates` times, in torch's momentum and unbiased variance).
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conformance.checking import strategies  # noqa: E402
from conformance.checking.checks import ConformanceError  # noqa: E402
from conformance.checking.properties import l_state  # noqa: E402
from implementations import stateful_reference  # noqa: E402
from implementations.stacks.numpy import canonical_params  # noqa: E402
from implementations.stacks.torch import state_declarations as declared  # noqa: E402
from implementations.stacks.torch import stateful  # noqa: E402
from implementations.stacks.torch.instrument import Ops  # noqa: E402
from tests.support.helpers import ROOT  # noqa: E402

B, D, F, RATE, SEED = 8, 5, 4, 0.5, 3
#: The observed (eager) ports: (module, class, its stack, its name).
EAGER = [
    ("implementations.stacks.torch.pytorch", "PyTorch", "torch", "pytorch"),
    (
        "implementations.stacks.torch.torch_ac_wrapper",
        "TorchAcWrapper",
        "torch",
        "torch_ac_wrapper",
    ),
    (
        "implementations.stacks.transformers.hf_transformers",
        "HfTransformers",
        "transformers",
        "hf_transformers",
    ),
    ("implementations.stacks.deepspeed.deepspeed", "DeepSpeed", "deepspeed", "deepspeed"),
]


def _declared(stack: str) -> dict:
    """A stack's declarations of the block (its expectations module imports no framework)."""
    module = importlib.import_module(f"implementations.stacks.{stack}.expectations")
    return module.EXPECTATIONS.stateful


CASES = [
    pytest.param(m, c, _declared(stack)[name], v, id=f"{c}-{v}")
    for m, c, stack, name in EAGER
    for v in _declared(stack)[name]
]


def _port(module: str, cls: str):
    if "transformers" in module:
        pytest.importorskip("transformers")
    if "deepspeed" in module:
        pytest.importorskip("deepspeed")
    return getattr(importlib.import_module(module), cls)()


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, D)).astype(np.float32), rng.normal(size=(B, F)).astype(np.float32)


def _arrays() -> dict[str, np.ndarray]:
    p = canonical_params(SEED, D, F)
    ones, zeros = np.ones(F, np.float32), np.zeros(F, np.float32)
    return {"w1": p.w1, "b1": p.b1, "gamma": ones, "beta": zeros, "w2": p.w2, "b2": p.b2}


def _within(found, expected, bound, what):
    excess = np.abs(np.asarray(found, np.float64) - expected) - bound
    assert np.all(excess <= 0), f"{what}: beyond the bound by {excess.max():.3g}"


def test_the_block_holds_the_canonical_parameters_and_torch_s_statistics():
    block = stateful.build_block(SEED, D, F, RATE)
    arrays = _arrays()
    assert np.array_equal(block.fc1.weight.detach().numpy(), arrays["w1"].T)
    assert np.array_equal(block.fc2.weight.detach().numpy(), arrays["w2"].T)
    assert np.array_equal(block.fc1.bias.detach().numpy(), arrays["b1"])
    assert np.array_equal(block.bn.weight.detach().numpy(), arrays["gamma"])
    assert np.array_equal(block.bn.bias.detach().numpy(), arrays["beta"])
    assert np.array_equal(block.bn.running_mean.numpy(), np.zeros(F))
    assert np.array_equal(block.bn.running_var.numpy(), np.ones(F))
    assert block.bn.momentum == declared.MOMENTUM.value
    assert declared.MOMENTUM.kept == pytest.approx(0.99)  # Flax's momentum, converted
    assert block.drop.p == RATE
    assert block.training


def test_torch_declares_its_three_ports():
    assert _declared("torch") == {
        "pytorch": declared.PYTORCH,
        "torch_compile": declared.TORCH_COMPILE,
        "torch_ac_wrapper": declared.TORCH_AC_WRAPPER,
    }


@pytest.mark.parametrize(("module", "cls", "table", "variant"), CASES)
def test_each_eager_variant_does_what_it_declares_to_the_count(module, cls, table, variant):
    port = _port(module, cls)
    declaration = table[variant]
    assert set(port.state_variants) == set(table)
    assert port.state_variants[variant] == declaration.spelling
    x, cotangent = _inputs()
    on = port.state_step(SEED, x, F, RATE, cotangent, checkpoint=True, variant=variant)
    off = port.state_step(SEED, x, F, RATE, cotangent, checkpoint=False, variant=variant)
    arrays = _arrays()
    assert off.recompute_masks == ()
    assert off.updates == 1
    assert np.array_equal(on.mask, off.mask)  # the same RNG state: the same forward mask
    assert 0 < on.mask.mean() < 1
    # (l.1) replay: a fresh mask is the degradation's count of recomputes that drew another
    fresh = [m for m in on.recompute_masks if not np.array_equal(m, on.mask)]
    degradation = declaration.degradation("replay")
    assert len(on.recompute_masks) == 1
    assert len(fresh) == (degradation.count if degradation else 0), on.recompute_masks
    # the forward follows the forward's mask; the gradients, the mask the recompute drew
    forward = stateful_reference.step(arrays, x, on.mask, RATE, cotangent)
    bounds = stateful_reference.bounds(arrays, x, on.mask, RATE, cotangent, forward)
    _within(on.y, forward.y, bounds["y"], "y")
    followed = on.recompute_masks[-1]
    backward = stateful_reference.step(arrays, x, followed, RATE, cotangent)
    grad_bounds = stateful_reference.bounds(arrays, x, followed, RATE, cotangent, backward)
    for name, grad in backward.grads.items():
        _within(on.grads[name], grad, grad_bounds[name], name)
    # (l.2) the stream
    assert on.rng_before == off.rng_before
    assert (on.rng_after == off.rng_after) == declaration.stream_kept
    # (l.3) the state: written `updates` times, counted so, and the count model's values
    assert on.updates == declaration.updates
    assert on.counters == {"num_batches_tracked": declaration.updates}
    mean, var = stateful_reference.running(
        forward.mean, forward.var, B, declaration.updates, declared.MOMENTUM, "unbiased"
    )
    _within(on.running_mean, mean, declaration.updates * bounds["mean"], "running mean")
    _within(on.running_var, var, declaration.updates * bounds["var"], "running var")


def test_a_fresh_mask_changes_the_gradients_and_not_the_forward():
    port = _port("implementations.stacks.torch.pytorch", "PyTorch")
    x, cotangent = _inputs()
    off = port.state_step(SEED, x, F, RATE, cotangent, checkpoint=False, variant="no_rng_state")
    on = port.state_step(SEED, x, F, RATE, cotangent, checkpoint=True, variant="no_rng_state")
    assert np.array_equal(on.y, off.y)
    gap = max(np.abs(on.grads[n] - off.grads[n]).max() for n in on.grads)
    assert gap > 0.1, gap
    assert 0 < np.mean(on.recompute_masks[0] != on.mask) < 1


@pytest.mark.slow(reason="86 s alone: inductor compiles the block and (l) in C++ (21 s warm)")
def test_compiled_variants_update_once_and_budget_zero_redraws():
    port = _port("implementations.stacks.torch.torch_compile", "TorchCompile")
    x, cotangent = _inputs()
    steps = {
        (variant, checkpoint): port.state_step(SEED, x, F, RATE, cotangent, checkpoint, variant)
        for variant in declared.TORCH_COMPILE
        for checkpoint in (False, True)
    }
    # What `COMPILED_UNSEEN` says: with the checkpoint, the forward saves no mask, only the
    # draw's int64 seed (x and the parameters besides); the backward draws again from it.
    saved = []
    block = stateful.build_block(SEED, D, F, RATE)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        stateful.compiled_checkpoint(block, torch.from_numpy(x).requires_grad_(True))
    assert [t.shape for t in saved if t.dtype == torch.int64] == [(1,)]
    assert (B, F) not in [tuple(t.shape) for t in saved]
    for variant, declaration in declared.TORCH_COMPILE.items():
        off, step = steps[variant, False], steps[variant, True]
        assert step.counters == off.counters == {"num_batches_tracked": declaration.updates}
        watched = stateful.COMPILED_VARIANTS[variant].inside
        assert watched == (variant in port.state_variants)  # (l) is offered what is watched
        if not watched:
            assert str(step.mask) == f"not observable: {stateful.COMPILED_UNSEEN}"
        assert step.rng_before == off.rng_before
        assert (step.rng_after == off.rng_after) == declaration.stream_kept
        assert np.array_equal(step.y, off.y)  # the forward's mask is the same
        same = all(np.allclose(step.grads[n], off.grads[n], atol=1e-6) for n in step.grads)
        assert same == declaration.replay, variant
        mean = np.asarray(off.running_mean)
        assert np.array_equal(step.running_mean, mean)  # one update, as without a checkpoint
    # Watched from inside: the forward's mask, the recompute's the same (replayed), and with
    # fallback_random inductor draws eager torch's very mask from the same seed.
    watched = steps["fallback_random", True]
    assert [np.array_equal(m, watched.mask) for m in watched.recompute_masks] == [True]
    assert str(watched.updates) == f"not observable: {stateful.UPDATES_COMPILED}"
    eager = _port("implementations.stacks.torch.pytorch", "PyTorch")
    assert np.array_equal(eager.state_step(SEED, x, F, RATE, cotangent).mask, watched.mask)
    # (l) on fallback_random as the suite runs it: its examples and its law at one nonzero
    # rate, after the steps above at 0.5 (the test below holds every step to eager's at three).
    assert l_state.check_state_property(port, None, _case(l_state.LAW_RATE)) < 1


@pytest.mark.slow(reason="40 s alone: inductor compiles the block at three rates, no cache")
def test_a_compiled_step_runs_its_own_rate_after_others(tmp_path, monkeypatch):
    # torch's default made the rate a symbolic float at its second value, and AOTAutograd's
    # cache served that graph to the third (`stateful.STATIC`). Here from an empty cache and
    # dynamo's emptied, the order that showed it: fallback_random draws eager's very masks,
    # and the default variant (inductor's own draws) its forward's mask again without the
    # checkpoint. Without `STATIC` both fail at 0.25.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    port = _port("implementations.stacks.torch.torch_compile", "TorchCompile")
    eager = _port("implementations.stacks.torch.pytorch", "PyTorch")
    x, cotangent = _inputs()
    for rate in (0.1, 0.5, 0.25):
        for variant, expected in (
            ("fallback_random", eager.state_step(SEED, x, F, rate, cotangent)),
            ("default", port.state_step(SEED, x, F, rate, cotangent, False, "default")),
        ):
            step = port.state_step(SEED, x, F, rate, cotangent, variant=variant)
            if variant == "fallback_random":
                assert np.array_equal(step.mask, expected.mask), rate
            np.testing.assert_allclose(step.y, expected.y, atol=1e-5, err_msg=f"{variant} {rate}")
            for name, grad in expected.grads.items():
                np.testing.assert_allclose(
                    step.grads[name], grad, atol=1e-5, err_msg=f"{variant}: {name} at {rate}"
                )
    torch._dynamo.reset()  # no graph of this cache's stays behind


@pytest.mark.slow(reason="15 s alone: inductor compiles the checkpoint at two rates")
def test_past_dynamo_s_recompile_limit_a_compiled_step_fails_and_never_runs_eagerly(monkeypatch):
    # By default, past 8 graphs of one code object dynamo runs the frame eagerly without a
    # word. The steps patch `caches.RECOMPILES` (64, an error); here its limit is 2.
    monkeypatch.setitem(stateful.RECOMPILES, "recompile_limit", 2)
    torch._dynamo.reset()
    port = _port("implementations.stacks.torch.torch_compile", "TorchCompile")
    x, cotangent = _inputs()
    for rate in (0.1, 0.2):
        step = port.state_step(SEED, x, F, rate, cotangent, variant="default")
        assert step.counters == {"num_batches_tracked": 1}, rate
    with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit, match="recompile_limit"):
        port.state_step(SEED, x, F, 0.3, cotangent, variant="default")
    # What the error stands in for: at the limit, dynamo's default runs the frame eagerly, and
    # the eager checkpoint updates BatchNorm twice.
    assert torch._dynamo.config.recompile_limit == 8  # torch's default, as the README says
    monkeypatch.setitem(stateful.RECOMPILES, "fail_on_recompile_limit_hit", False)
    step = port.state_step(SEED, x, F, 0.3, cotangent, variant="default")
    assert step.counters == {"num_batches_tracked": 2}
    torch._dynamo.reset()


def test_a_dispatch_mode_around_a_compiled_step_runs_it_eagerly():
    # Why a compiled step is not watched (`COMPILED_UNSEEN`): under `Ops`, dynamo runs the
    # frame eagerly, and the checkpoint updates BatchNorm twice, as eager torch does.
    block = stateful.build_block(SEED, D, F, RATE)
    x = torch.from_numpy(_inputs()[0]).requires_grad_(True)
    with Ops():
        stateful.compiled_checkpoint(block, x).sum().backward()
    assert int(block.bn.num_batches_tracked) == 2


def test_bad_arguments_are_named_and_the_caller_s_state_is_kept():
    port = _port("implementations.stacks.torch.pytorch", "PyTorch")
    x, cotangent = _inputs()
    kept_x, stream = x.copy(), torch.get_rng_state()
    port.state_step(SEED, x, F, RATE, cotangent)
    assert np.array_equal(x, kept_x)
    assert torch.equal(torch.get_rng_state(), stream)  # the step's seeding is its own
    for wrong, name in (
        ({"variant": "fast"}, "variant"),
        ({"rate": 1.0}, "rate"),
        ({"cotangent": cotangent[:, :2]}, "cotangent"),
        ({"x": x[0]}, "x"),
    ):
        arguments = {"seed": SEED, "x": x, "features": F, "rate": RATE, "cotangent": cotangent}
        with pytest.raises(ValueError, match=name):
            port.state_step(**{**arguments, **wrong})


def test_without_dropout_the_step_is_the_numpy_block():
    port = _port("implementations.stacks.torch.pytorch", "PyTorch")
    x, cotangent = _inputs()
    step = port.state_step(SEED, x, F, 0.0, cotangent, checkpoint=True)
    assert step.mask.all()
    assert step.recompute_masks == ()
    expected = stateful_reference.step(_arrays(), x, step.mask, 0.0, cotangent)
    bounds = stateful_reference.bounds(_arrays(), x, step.mask, 0.0, cotangent, expected)
    _within(step.y, expected.y, bounds["y"], "y")


# -- property (l) itself on the torch ports: passes as declared, fails the part a wrong
# -- declaration names, held to the count


def _case(rate: float = RATE) -> strategies.StateCase:
    x, cotangent = _inputs()
    return strategies.StateCase(SEED, x, F, rate, cotangent)


@pytest.mark.parametrize(("module", "cls"), [pytest.param(m, c, id=c) for m, c, _, _ in EAGER])
def test_property_l_passes_every_variant_a_torch_port_declares(module, cls):
    port = _port(module, cls)
    assert l_state.check_state_property(port, None, _case()) < 1


def _declaring(variant: str, **changes):
    port = _port("implementations.stacks.torch.pytorch", "PyTorch")
    port.state_runs = {variant: port.state_runs[variant]}  # this variant alone
    port.state_variants = {variant: port.state_variants[variant]}
    port.state_declarations = {variant: dataclasses.replace(declared.PYTORCH[variant], **changes)}
    return port


@pytest.mark.parametrize(
    ("variant", "changes", "message"),
    [
        pytest.param(
            "no_rng_state",
            {"replay": True, "stream_kept": False, "degradations": declared.NO_RNG_STATE.
             degradations[1:]},
            r"\(l\.1\) replay: the recompute drew a fresh mask: \d+% of its elements changed "
            r"\(1 of 1 recomputes\)",
            id="fresh-mask-declared-replayed",
        ),
        pytest.param(
            "no_rng_state",
            {"stream_kept": True, "degradations": (declared.NO_RNG_STATE.degradations[0],
                                                    declared.TWICE)},
            r"\(l\.2\) the stream: the RNG state after one step differs",
            id="moved-stream-declared-kept",
        ),
        pytest.param(
            "default",
            {"updates": 1, "degradations": (), "fix": "", "repro": ""},
            r"\(l\.3\) state once, checkpoint on: the running mean is 2 of the canonical's "
            r"updates, expected 1",
            id="twice-declared-once",
        ),
        pytest.param(
            "stats_outside",
            {"updates": 2, "degradations": (declared.TWICE,)},
            r"\(l\.3\) state once, checkpoint on: the running mean is 1 of the canonical's "
            r"updates, expected 2",
            id="once-declared-twice",
        ),
    ],
)  # fmt: skip
def test_a_wrong_declaration_fails_the_part_it_names(variant, changes, message):
    with pytest.raises(ConformanceError, match=message):
        l_state.check_state_property(_declaring(variant, **changes), None, _case())


def state_table() -> str:
    """The torch README's table of the block's variants, as the declarations say."""
    rows = [
        "| port:variant | replay | stream kept | updates | degradations (count, reference) "
        "| fix | repro |",
        "|---|---|---|---|---|---|---|",
    ]
    for port, table in _declared("torch").items():
        for variant, said in table.items():
            found = "; ".join(f"{d.part} {d.count} ({d.upstream})" for d in said.degradations)
            fix, repro = (f"`{v}`" if v else "" for v in (said.fix, said.repro))
            rows.append(
                f"| `{port}:{variant}` | {'yes' if said.replay else 'no'} | "
                f"{'yes' if said.stream_kept else 'no'} | {said.updates} | {found or 'none'} | "
                f"{fix} | {repro} |"
            )
    return "\n".join(rows)


def test_the_readme_table_is_the_declarations():
    text = (ROOT / "implementations" / "stacks" / "torch" / "README.md").read_text()
    listed = text.split("<!-- torch-state -->", 1)[1].split("<!-- /torch-state -->", 1)[0]
    assert listed.strip() == state_table(), f"put this in the torch README:\n{state_table()}"
