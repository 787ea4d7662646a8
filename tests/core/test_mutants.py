"""The suite rejects every mutant, with the property aimed at its bug (100% required).

The mutants are hunted as a run hunts them: each in a worker process of its
family's port (Keras allows one backend per process), by `run_suite`.
"""

from __future__ import annotations

import pytest

from conformance import mutants
from conformance.running import profiles
from conformance.running.suite import RunConfig, run_suite

pytest.importorskip("jax")
pytest.importorskip("flax")

# Which property must reject each mutant: the one that looks at its bug.
# (A kill by a crash, or by another property, would be a weaker proof.)
KILLED_BY = {
    "no_checkpoint": "e_evidence",
    "checkpoint_off_grad_path": "e_evidence",
    "saves_everything": "e_evidence",
    "default_init": "f_end_to_end",
    "dropped_bias": "b_forward",
    "bias_off_by_1e-3": "b_forward",
    "relu_after_last_layer": "f_end_to_end",
    "bf16_compute": "f_end_to_end",
    "f16_compute": "f_end_to_end",
    "seed_plus_one": "f_end_to_end",
    "transposed_kernel": "f_end_to_end",
    "mutates_x": "h_hygiene",
    "not_flattened": "h_hygiene",
    "truncates_seed": "g_bad_inputs",
    "wrong_error_type": "g_bad_inputs",
    "vague_errors": "g_bad_inputs",
    "not_repeatable": "h_hygiene",
    "unchecked_sizes": "g_bad_inputs",
    # Hunted by the precision tier first (their MutantSpec.first): it must kill
    # them at D = F = 256 or 1024 (tests/core/test_precision.py proves both sizes).
    "tf32_matmul": "i_precision",
    "f16_inputs": "i_precision",
    "bf16_weights_only": "i_precision",
    "bias_off_by_1e-4": "i_precision",
    # Remat policies (issue 21): exact under checkpoint=True/False, wrong under a policy.
    "drops_policy": "j_policies",
    "none_for_save_dots": "j_policies",
    "saves_y_for_named": "j_policies",
    "budget_ignored": "j_policies",
    "stateful_policy_under_compile": "j_policies",
    "haiku_no_remat": "e_evidence",
    "mlx_no_checkpoint": "e_evidence",
    "compiled_without_checkpoint": "e_evidence",
    "tf_no_recompute_grad": "e_evidence",
    "keras_jax_remat_none": "e_evidence",
    "keras_torch_remat_none": "e_evidence",
    "keras_tensorflow_remat_none": "e_evidence",
    "tfjs_no_custom_grad": "e_evidence",
    # The sharded ports' mutants, hunted by the scale profile (their ranks cost start-ups).
    "spmd_no_checkpoint": "e_evidence",
    "fsdp_no_checkpoint": "e_evidence",
    "paddle_no_recompute": "e_evidence",
    "mindspore_no_recompute": "e_evidence",
    "deepspeed_no_checkpoint": "e_evidence",
}


def test_every_mutant_has_an_expected_killer():
    assert set(KILLED_BY) == set(mutants.MUTANTS)
    assert len(mutants.MUTANTS) >= 10


@pytest.fixture(scope="module")
def mutation_run() -> dict:
    """Every mutant hunted once, in its family's worker processes: the sharded ports' by
    the scale profile, the others by the profile of this session."""
    found = {}
    for profile in (profiles.load(), profiles.SCALE):
        report = run_suite(RunConfig(ports=(), profile=profile, mutants=True, jobs=2))
        found.update({result.name: result for result in report.mutants})
    return found


@pytest.mark.parametrize("name", sorted(mutants.MUTANTS))
def test_the_suite_rejects_the_mutant(mutation_run, name):
    result = mutation_run[name]
    if result.status == "unavailable":
        pytest.skip(result.message)  # its framework is not installed
    assert result.status == "killed", f"{name} {result.status}: {result.message}"
    assert result.killed_by == KILLED_BY[name], result.message
    # Killed by a failed check, not by crashing the suite.
    assert not result.message.startswith(f"[{name}] raised"), result.message
