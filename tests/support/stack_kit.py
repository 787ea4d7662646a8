"""The tests several stacks share, written once: each stack's test file subclasses a kit
with its specifics (its port, its bench module, its expected sets, its units).

A kit is a class whose name does not start with `Test`, in a module pytest does not collect;
a stack's file declares `class TestXxx(Kit)` and pytest collects the kit's tests there, in the
stack's own folder, whose conftest skips them where the framework is missing
(`tests.support.stack_folder`). So this module imports no framework: what a test needs of one comes
from the subclass (functions as `staticmethod`s).

- `ReferencePortKit`: a port's forward and VJP against the float64 reference, its init, its
  x converted, and its instrument against an independent count of the block's runs
  (MindSpore, Paddle).
- `NoneAndFullKit`: a port that declares the policies none and full only, says why not each
  of the rest, and refuses them by name (MindSpore, Paddle, autograd, MLX);
  `HookPolicyKit` adds the roles that a hook instrument names (MindSpore, Paddle).
- `PoolKit`: a port whose models are lent from a pool, never carrying anything from one call
  to the next (MindSpore, Paddle).
- `BenchKit`: a bench stack at small sizes against hand-derived counts and numpy (MindSpore,
  Paddle, DeepSpeed, autograd).
- `ArrayPortKit`: a port whose exercise takes and returns arrays (autograd, MLX).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.benchmark import measure, policies
from conformance.benchmark.measure import Settings
from conformance.checking.tolerance import analyse_forward, vjp_bounds
from implementations import contract
from implementations.contract import Params
from implementations.policies import POLICY_NAMES, Policy
from implementations.stacks.numpy import canonical_params
from tests.support import reference
from tests.support.bench_reference import (
    UNIT,
    B,
    F,
    assert_grads_match,
    kept_activations,
    small_data,
)
from tests.support.helpers import same_bits

#: The shapes (D, F) the reference tests run, D = F = 1 and D < F and D > F among them.
SHAPES = [(1, 1), (3, 4), (16, 16), (7, 33)]
#: The modes of a stack whose checkpoint takes no policy.
MODES = ("none", "full")


def normal_x(seed: int, dim: int) -> np.ndarray:
    """A float32 `(dim,)` drawn from a standard normal."""
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


# ---------------------------------------------------------------------------
# A port against the float64 reference
# ---------------------------------------------------------------------------


class ReferencePortKit:
    """A port's init, forward and VJP, x's conversion and its instrument.

    A subclass sets `PORT` and `RECOMPUTED` (the block's layers, by class, that a backward
    pass reruns under the checkpoint) and defines `block_runs(params, x, checkpoint)`
    (how many times the block ran in one forward and backward pass of a fresh model,
    counted without the stack's hooks) and `float64_and_integer_x(x)` (the framework's
    tensors of x, float64 and integer).
    """

    PORT: Any
    RECOMPUTED: ClassVar[dict[str, int]]

    def block_runs(self, params: Params, x: np.ndarray, checkpoint: bool) -> int:
        raise NotImplementedError

    def float64_and_integer_x(self, x: np.ndarray) -> Iterable[Any]:
        raise NotImplementedError

    def test_init_is_the_canonical_init_through_the_model(self):
        for dim, features in SHAPES:
            ours = self.PORT.init_params(9, dim, features)
            numpy_init = canonical_params(9, dim, features)
            for name in ("w1", "b1", "w2", "b2"):
                np.testing.assert_array_equal(getattr(ours, name), getattr(numpy_init, name))

    @pytest.mark.parametrize("checkpoint", [True, False])
    @pytest.mark.parametrize(("dim", "features"), SHAPES)
    def test_forward_and_vjp_match_the_float64_reference(self, checkpoint, dim, features):
        params, x = canonical_params(dim, dim, features), normal_x(dim, dim)
        cotangent = normal_x(features + 100, features)
        out = self.PORT.forward(params, x, checkpoint=checkpoint)
        assert np.all(np.abs(out - reference.forward(params, x)) <= analyse_forward(params, x).e2)
        grads = self.PORT.vjp(params, x, cotangent, checkpoint=checkpoint).as_dict()
        expected, bounds = reference.vjp(params, x, cotangent), vjp_bounds(params, x, cotangent)
        for name, value in grads.items():
            assert np.all(np.abs(value - expected[name]) <= bounds[name]), name

    def test_recompute_gives_the_same_bits_as_plain_autograd(self):
        params, x, cotangent = canonical_params(4, 7, 6), normal_x(1, 7), normal_x(2, 6)
        on = self.PORT.vjp(params, x, cotangent)
        off = self.PORT.vjp(params, x, cotangent, checkpoint=False)
        for name, value in on.as_dict().items():
            np.testing.assert_array_equal(value, off.as_dict()[name])

    @pytest.mark.parametrize("checkpoint", [True, False])
    def test_the_instrument_reads_what_recompute_keeps_and_reruns(self, checkpoint):
        params, x = canonical_params(5, 6, 5), normal_x(3, 6)
        record = self.PORT.backward_record(params, x, checkpoint=checkpoint)
        runs = self.block_runs(params, x, checkpoint)
        if checkpoint:
            # The forward keeps x alone; the backward pass reruns the whole block.
            assert [(t.origin, t.shape) for t in record.saved] == [("input", (6,))]
            assert record.recomputed == self.RECOMPUTED
            assert runs == 2
        else:
            origins = sorted(t.origin for t in record.saved)
            assert origins == ["activation", "input", "parameter", "parameter"], record.saved
            assert record.recomputed == {}
            assert runs == 1

    def test_the_exercise_record_shows_the_recompute(self):
        record = self.PORT.exercise_record(2, normal_x(4, 5), 3)
        assert not record.saved_by_origin("activation")
        assert record.recomputed == self.RECOMPUTED

    def test_float64_and_integer_x_are_converted(self):
        x = np.array([1.0, -2.0, 3.0])
        port = self.PORT
        expected = port.to_numpy(port.nn_checkpoint_forward(1, x.astype(np.float32), 2))
        for tensor in self.float64_and_integer_x(x):
            out = port.to_numpy(port.nn_checkpoint_forward(1, tensor, 2))
            assert out.dtype == np.float32
            np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------------------
# Policies: none and full only
# ---------------------------------------------------------------------------


def record_under(port: Any, policy: Policy):
    """`port`'s backward record of a fixed (D, F) = (3, 4) case under `policy`."""
    params = reference.random_params(np.random.default_rng(0), 3, 4)
    return port.backward_record(params, np.ones(3, np.float32), checkpoint=policy)


class NoneAndFullKit:
    """A port (`PORT`) whose checkpoint takes no policy: it declares none and full, says why
    not each of the rest, and refuses each of them, naming it (`REFUSAL`: its words after)."""

    PORT: Any
    #: What the port's refusal says after the policy's name.
    REFUSAL = "cannot express"

    def test_the_port_declares_none_and_full_and_says_why_not_the_rest(self):
        assert set(self.PORT.policies) == {"none", "full"}
        assert set(self.PORT.inexpressible) == set(POLICY_NAMES) - {"none", "full"}
        assert all(reason.strip() for reason in self.PORT.inexpressible.values())

    def test_a_policy_the_port_cannot_express_is_refused_with_its_reason(self):
        params, x = canonical_params(1, 3, 4), np.ones(3, np.float32)
        for spelling in ("save_dots", "save_named", "offload_dots", "budget(0.5)"):
            policy = Policy.parse(spelling)
            with pytest.raises(ValueError, match=rf"checkpoint={policy.name}\b.*{self.REFUSAL}"):
                self.PORT.forward(params, x, checkpoint=policy)


class HookPolicyKit(NoneAndFullKit):
    """`NoneAndFullKit` for a hook instrument (`implementations.stacks.hooks_evidence`).

    A subclass sets `EXPECTED` (policy -> `(dim, features) -> [(role, shape)]` of the kept
    tensors, derived by hand from its kernels) and `as_input` (a numpy array as the
    framework's tensor) and `classify` (the stack's), as static methods.
    """

    EXPECTED: ClassVar[Mapping[str, Callable[[int, int], list]]]
    REFUSAL = "expresses the policies none and full only"  # `switch.checkpoint_on`'s words
    as_input: Callable[[np.ndarray], Any]
    classify: Callable[..., tuple]

    @pytest.mark.parametrize("policy", list(MODES))
    @pytest.mark.parametrize(("dim", "features"), [(3, 4), (33, 7)])
    def test_the_instrument_names_every_kept_tensor_by_role(self, policy, dim, features):
        params = canonical_params(1, dim, features)
        x = np.linspace(-1.0, 1.0, dim, dtype=np.float32)
        record = self.PORT.backward_record(params, x, checkpoint=Policy(policy))
        kept = sorted((t.role, t.shape) for t in record.kept)
        assert kept == self.EXPECTED[policy](dim, features), record.saved
        assert record.backward_matmuls is None  # not counted: no hook over the backward kernels

    def test_a_saved_tensor_no_layer_made_stays_unnamed(self):
        x = self.as_input(np.ones(3, np.float32))
        other = self.as_input(np.zeros(3, np.float32)) * 2.0
        (saved,) = self.classify({other.data_ptr(): other}, x, [], lambda ptr: "")
        assert (saved.origin, saved.role) == ("activation", "")


# ---------------------------------------------------------------------------
# A port's model pool
# ---------------------------------------------------------------------------


def pool_case(seed: int, dim: int = 6, features: int = 5):
    """`(params, x, cotangent)` for one pooled call, all drawn from `seed`."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=dim).astype(np.float32)
    return canonical_params(seed, dim, features), x, rng.normal(size=features).astype(np.float32)


class PoolKit:
    """A port whose models are lent from a pool, one call at a time.

    A subclass sets `PORT`, `MUTANT` (a mutant class of the port, with a pool of its own) and
    `RECOMPUTED` (as `ReferencePortKit`'s), and defines `fresh(params, x, cotangent,
    checkpoint)`: a freshly built model's (no pool) output and gradients, name -> array;
    and `same(record)` where less than the whole record repeats.
    """

    PORT: Any
    MUTANT: type
    RECOMPUTED: ClassVar[dict[str, int]]

    def fresh(self, params, x, cotangent, checkpoint) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        raise NotImplementedError

    def test_each_call_sees_its_own_parameters_and_a_fresh_gradient(self):
        for checkpoint in (True, False):
            for seed in (1, 2, 3, 3):  # one shape: the pool's model serves all four
                params, x, cotangent = pool_case(seed)
                got = self.PORT.vjp(params, x, cotangent, checkpoint=checkpoint)
                out, expected = self.fresh(params, x, cotangent, checkpoint)
                assert set(expected) == set(contract.Grads.__dataclass_fields__)
                for name, value in expected.items():
                    np.testing.assert_array_equal(getattr(got, name), value, err_msg=name)
                bound = vjp_bounds(params, x, cotangent)["x"]
                assert np.all(np.abs(got.x - reference.vjp(params, x, cotangent)["x"]) <= bound)
                np.testing.assert_array_equal(
                    self.PORT.forward(params, x, checkpoint=checkpoint), out
                )

    def test_gradients_do_not_accumulate_over_calls(self):
        params, x, cotangent = pool_case(4)
        first = self.PORT.vjp(params, x, cotangent)
        for _ in range(3):
            again = self.PORT.vjp(params, x, cotangent)
            for name, value in first.as_dict().items():
                np.testing.assert_array_equal(getattr(again, name), value, err_msg=name)

    def test_the_callers_parameters_are_never_written(self):
        params, x, cotangent = pool_case(5)
        kept = {name: value.copy() for name, value in params.as_dict().items()}
        self.PORT.vjp(params, x, cotangent)
        self.PORT.backward_record(params, x)
        other, _, _ = pool_case(6)
        self.PORT.vjp(other, x, cotangent)  # the pooled model now holds other's values
        for name, value in kept.items():
            np.testing.assert_array_equal(getattr(params, name), value, err_msg=name)

    def test_records_repeat_so_no_hook_is_left_on_a_pooled_model(self):
        params, x, _ = pool_case(7)
        records = [self.PORT.backward_record(params, x, checkpoint=True) for _ in range(3)]
        for record in records:
            assert record.recomputed == self.RECOMPUTED
            assert not record.saved_by_origin("activation")
        off = [self.PORT.backward_record(params, x, checkpoint=False) for _ in range(2)]
        assert [record.recomputed for record in off] == [{}, {}]
        for repeated in (records, off):
            assert all(self.same(record) == self.same(repeated[0]) for record in repeated)

    @staticmethod
    def same(record) -> Any:
        """What of a record repeats exactly, call after call: all of it, where no note names
        a tensor by a name its framework makes afresh each call."""
        return record

    def test_a_mutant_never_gets_the_ports_models_nor_the_port_the_mutants(self):
        params, x, _ = pool_case(8)
        mutant = self.MUTANT()
        for _ in range(2):
            assert not self.PORT.backward_record(params, x).saved_by_origin("activation")
            assert mutant.backward_record(params, x).saved_by_origin("activation")


# ---------------------------------------------------------------------------
# A bench stack at small sizes
# ---------------------------------------------------------------------------


def gradient_bytes(depth: int) -> int:
    """What the gradients of one step take at the least: 2 weights and 2 biases per block."""
    return depth * (2 * F * F + 2 * F) * 4


def peaks_at(stack: ModuleType, depth: int) -> tuple[dict[str, int], int]:
    """`stack`'s peak bytes per mode at `depth` blocks of B = 256, F = 32 (where the
    activations dominate), and the bytes of one (B, F) float32 unit there."""
    data = measure.make_data(Settings(depths=(depth,), batch=256, features=32), depth)
    return {mode: stack.build("", mode, data).peak_bytes() for mode in MODES}, 256 * 32 * 4


class BenchKit:
    """A bench stack with the modes none and full.

    A subclass sets `stack` (the bench module) and `UNITS` (mode -> the (B, F) arrays the
    step keeps at L blocks, derived by hand), and defines, as static methods, `grads(case)`
    (one step's gradients as numpy, flat and canonical as `tests.support.bench_reference`'s) and
    `save_mm()` (asks the stack for save-mm, which it refuses); `between_steps(case)` runs
    between two checked steps (default: nothing) and `check_kept(case, kept, mode, depth)`
    checks the kept tensors further (default: nothing).
    """

    stack: ModuleType
    UNITS: ClassVar[Mapping[str, Callable[[int], int]]]
    grads: Callable[[Any], list]
    save_mm: Callable[[], Any]

    @staticmethod
    def between_steps(case) -> None:
        pass

    @staticmethod
    def check_kept(case, kept: list, mode: str, depth: int) -> None:
        pass

    @pytest.mark.parametrize("depth", [1, 2, 3])
    @pytest.mark.parametrize("mode", list(MODES))
    def test_residuals_match_hand_derived_counts(self, mode, depth):
        case = self.stack.build("", mode, small_data(depth))
        self.check_kept(case, kept_activations(case, self.UNITS[mode](depth)), mode, depth)

    @pytest.mark.parametrize("mode", list(MODES))
    def test_gradients_match_numpy_step_after_step(self, mode):
        data = small_data(3)
        case = self.stack.build("", mode, data)
        assert_grads_match(self.grads(case), data)
        self.between_steps(case)
        assert_grads_match(self.grads(case), data)  # a second step: nothing accumulated

    def test_a_checkpointed_step_equals_the_plain_one_bit_for_bit(self):
        data = small_data(2)
        plain, recomputed = (self.grads(self.stack.build("", mode, data)) for mode in MODES)
        for i, (a, b) in enumerate(zip(plain, recomputed, strict=True)):
            assert same_bits(a, b), f"grad {i}"

    def test_no_save_mm_and_the_policy_bench_runs_none_and_full(self):
        assert self.stack.configurations() == [("", "none"), ("", "full")]
        with pytest.raises(ValueError, match="save-mm"):
            self.save_mm()
        assert self.stack.POLICIES == policies.policies_of(self.stack) == MODES
        results, failed = policies.run(
            Settings(depths=(2,), batch=B, features=F, repeats=1, max_repeats=1),
            {self.stack.FRAMEWORK: self.stack},
        )
        assert failed == {}
        saved = [(r.policy, r.saved_bytes) for r in results]
        assert saved == [("none", 4 * UNIT), ("full", 2 * UNIT)]


# ---------------------------------------------------------------------------
# A port of arrays in and out (autograd, MLX)
# ---------------------------------------------------------------------------

DIM, FEATURES = 3, 4  # D != F: a shape tells the layers apart
X = np.array([0.5, -1.25, 2.0], np.float32)
G = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def random_params(seed: int, dim: int = DIM, features: int = FEATURES) -> Params:
    """Parameters drawn from `seed` (`tests.support.reference.random_params`)."""
    return reference.random_params(np.random.default_rng(seed), dim, features)


@st.composite
def any_params(draw, max_side: int = 5) -> Params:
    """Parameters of any (D, F) up to `max_side`, of any float32 bits."""
    dim, features = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    floats = hnp.from_dtype(np.dtype(np.float32))  # NaN, inf, -0 and subnormals too
    shapes = contract.param_shapes(dim, features)
    return Params(
        **{n: draw(hnp.arrays(np.float32, s, elements=floats)) for n, s in shapes.items()}
    )


#: Arrays `from_numpy` must keep as they are: bool, complex, a small integer, and float64
#: beyond float32's range (an array made float32 would hold inf).
ODD_ARRAYS = (
    np.array([True, False]),
    np.array([1 + 2j], np.complex64),
    np.arange(3, dtype=np.int16),
    np.array([1e39, 0.0]),
)


def records_on_and_off(port: Any) -> tuple[Any, Any]:
    """`port`'s backward records at X of parameters drawn from seed 9: with the checkpoint,
    then without."""
    params = random_params(9)
    on = port.backward_record(params, X, checkpoint=True)
    return on, port.backward_record(params, X, checkpoint=False)


def assert_exercise_output(out: Any) -> None:
    """`nn_checkpoint_forward(4, X, FEATURES)`'s output, as the framework gave it, within the
    float64 reference's bound."""
    params = canonical_params(4, DIM, FEATURES)
    error = np.abs(np.array(out, np.float64) - reference.forward(params, X))
    assert np.all(error <= analyse_forward(params, X).e2)


def assert_x_gradient(dx: Any) -> None:
    """`dx`, the gradient at X of `sum(nn_checkpoint_forward(7, x, FEATURES) * G)` as the
    framework gave it, within half the reference's bound."""
    params = canonical_params(7, DIM, FEATURES)
    exact = reference.vjp(params, X, G)["x"]
    assert np.all(np.abs(np.array(dx) - exact) <= vjp_bounds(params, X, G)["x"] / 2 + 1e-7)


class ArrayPortKit:
    """A port whose exercise takes and returns the framework's arrays.

    A subclass sets `PORT`, `port_module` (the port's module, with `nn_checkpoint_forward`)
    and `SCALARS` (0-d arrays of the framework, as (seed, features), that it accepts).
    """

    PORT: Any
    port_module: ModuleType
    SCALARS: ClassVar[tuple[Any, Any]]

    def test_init_is_the_canonical_init_through_the_converters(self):
        for seed, dim, features in [(2**32 + 9, 3, 4), (0, 16, 16), (7, 1, 1)]:
            ours = self.PORT.init_params(seed, dim, features)
            expected = canonical_params(seed, dim, features)
            for name in contract.PARAM_NAMES:
                assert same_bits(getattr(ours, name), getattr(expected, name))

    @pytest.mark.parametrize("checkpoint", [True, False])
    def test_forward_and_vjp_match_the_float64_reference(self, checkpoint):
        params = random_params(3)
        out = self.PORT.forward(params, X, checkpoint=checkpoint)
        assert (out.shape, out.dtype) == ((FEATURES,), np.float32)
        error = np.abs(out.astype(np.float64) - reference.forward(params, X))
        assert np.all(error <= analyse_forward(params, X).e2)
        grads = self.PORT.vjp(params, X, G, checkpoint=checkpoint).as_dict()
        exact, bounds = reference.vjp(params, X, G), vjp_bounds(params, X, G)
        for name, got in grads.items():
            assert got.dtype == np.float32, name  # the VJPs keep float32
            assert np.all(np.abs(got - exact[name]) <= bounds[name] / 2), name

    def test_the_checkpoint_keeps_its_inputs_x_and_the_parameters(self):
        on, _ = records_on_and_off(self.PORT)
        assert sorted(t.origin for t in on.saved) == ["input"] + ["parameter"] * 4

    def test_seed_and_features_may_be_floats_numpy_or_0d_arrays(self):
        def run(seed, x, features) -> np.ndarray:
            return np.array(self.port_module.nn_checkpoint_forward(seed, x, features))

        expected = run(3, X, 2)
        for seed, features in [(3.0, 2.0), (np.int64(3), np.float32(2)), self.SCALARS]:
            assert same_bits(run(seed, X, features), expected)
        assert same_bits(run(2**32 + 3, X, 2), expected)
