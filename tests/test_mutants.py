"""The suite rejects every mutant, with the property aimed at its bug (100% required)."""

from __future__ import annotations

import pytest

import implementations
from conformance import mutants
from conformance.mutation import MUTANT_EXAMPLES, hunt

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
    # Hunted by the precision tier first (their MutantSpec.first): it must kill
    # them at D = F = 256 or 1024 (tests/test_precision.py proves both sizes).
    "tf32_matmul": "i_precision",
    "f16_inputs": "i_precision",
    "bf16_weights_only": "i_precision",
    "bias_off_by_1e-4": "i_precision",
    "haiku_no_remat": "e_evidence",
    "mlx_no_checkpoint": "e_evidence",
}


def test_every_mutant_has_an_expected_killer():
    assert set(KILLED_BY) == set(mutants.MUTANTS)
    assert len(mutants.MUTANTS) >= 10


@pytest.mark.parametrize("mutant", mutants.load_all(), ids=lambda m: m.name)
def test_the_suite_rejects_the_mutant(mutant):
    assert mutant.port is not None, mutant.reason
    canonical = implementations.load(implementations.CANONICAL)
    result = hunt(mutant, canonical, MUTANT_EXAMPLES)
    assert result.status == "killed", f"{mutant.name} survived {result.examples} examples"
    assert result.killed_by == KILLED_BY[mutant.name], result.message
    # Killed by a failed check, not by crashing the suite.
    assert not result.message.startswith(f"[{mutant.name}] raised"), result.message
