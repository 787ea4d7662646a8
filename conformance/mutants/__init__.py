"""Deliberately broken ports. The suite must reject every one of them.

Each mutant is a port with one realistic bug. A mutant that passes every
property means the suite has a blind spot. Mutants load lazily, like ports,
so that a missing framework skips its mutants rather than breaking the run.
The suite's own mutants break the canonical port; each stack declares its
own in its manifest. Each names its `family`: the port whose framework it needs. The run hunts
it in that port's worker process (Keras, for one, allows a single backend
per process).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from implementations import manifests
from implementations.contract import Implementation, StackUnavailable
from implementations.manifests import MutantEntry
from implementations.process import ProcessPortUnavailable

#: A registered mutant: `name`, `target` ("module:Class"), `bug`, `family` (the port whose
#: worker hunts it) and `first` (property ids tried before the usual order: the precision
#: tier's mutants break the rigorous bounds on the small shapes the hunt draws, and pass the
#: forward ones, (b) and (f), at D = F = 256 and 1024 (tests/core/test_precision.py), where
#: (i) sees them). The stacks declare theirs in their manifests.
MutantSpec = MutantEntry


def _canonical(name: str, target: str, bug: str, first: tuple[str, ...] = ()) -> MutantSpec:
    """One of the suite's own mutants: the canonical port with one bug (`KILLED_BY` says
    which property must reject it)."""
    family = manifests.CANONICAL_PORT
    return MutantSpec(name, f"{__name__}.{target}", bug, family, KILLED_BY[name], first)


def _flax(name: str, cls: str, bug: str, first: tuple[str, ...] = ()) -> MutantSpec:
    return _canonical(name, f"flax_mutants:{cls}", bug, first)


#: The property that must reject each of the suite's own mutants: the one that looks at its
#: bug. The precision tier's are hunted by it first (their `first`): it must kill them at
#: D = F = 256 or 1024 (tests/core/test_precision.py proves both sizes). The policy ones are
#: exact under checkpoint=True/False and wrong under a policy.
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
    "tf32_matmul": "i_precision",
    "f16_inputs": "i_precision",
    "bf16_weights_only": "i_precision",
    "bias_off_by_1e-4": "i_precision",
    "drops_policy": "j_policies",
    "none_for_save_dots": "j_policies",
    "saves_y_for_named": "j_policies",
    "contradictory_expectations": "j_policies",
    "wire_ignores_policy": "j_policies",
}


#: The suite's own mutants (on the canonical port), then every stack's, by name.
MUTANTS: dict[str, MutantSpec] = {
    spec.name: spec
    for spec in (
        _flax("no_checkpoint", "NoCheckpoint", "plain MLP, no checkpoint anywhere"),
        _flax(
            "checkpoint_off_grad_path",
            "CheckpointOffGradPath",
            "inits the checkpointed MLP, applies the plain one",
        ),
        _flax("saves_everything", "SavesEverything", "a checkpoint policy that saves everything"),
        _flax(
            "default_init",
            "UniformInit",
            "a uniform init with non-zero biases (Linear's elsewhere)",
        ),
        _flax("dropped_bias", "DroppedBias", "the second layer ignores its bias"),
        _flax("bias_off_by_1e-3", "BiasOffByAThousandth", "biases scaled by 1 + 1e-3"),
        _flax("relu_after_last_layer", "ReluAfterLastLayer", "a relu after Dense_1"),
        _flax("bf16_compute", "Bfloat16Compute", "Dense layers compute in bfloat16"),
        _flax("f16_compute", "Float16Compute", "Dense layers compute in float16"),
        _flax("seed_plus_one", "SeedPlusOne", "PRNGKey(seed + 1)"),
        _flax("transposed_kernel", "TransposedKernel", "uses Dense_1's kernel transposed"),
        _flax("mutates_x", "MutatesX", "clamps the caller's x in place"),
        _flax("not_flattened", "NotFlattened", "returns shape (1, F)"),
        _flax("truncates_seed", "TruncatesSeed", "int(seed) unchecked: 1.5 runs as 1"),
        _flax("wrong_error_type", "WrongErrorType", "TypeError for a non-finite x"),
        _flax("vague_errors", "VagueErrors", "a bad x's error says only 'expected a valid input'"),
        _flax("not_repeatable", "NotRepeatable", "each call drifts by an ulp"),
        _flax(
            "unchecked_sizes",
            "UncheckedSizes",
            "no size limits: MemoryError past int32 counts, the byte budget ignored",
        ),
        _flax(
            "tf32_matmul", "Tf32Matmul", "matmul operands rounded to TF32's 10 bits", first=("i",)
        ),
        _flax("f16_inputs", "Float16Inputs", "x rounded to float16 on the way in", first=("i",)),
        _flax(
            "bf16_weights_only",
            "Bfloat16WeightsOnly",
            "kernels kept in bfloat16, arithmetic in float32",
            first=("i",),
        ),
        _flax(
            "bias_off_by_1e-4", "BiasOffByATenThousandth", "biases scaled by 1 + 1e-4", first=("i",)
        ),
        _canonical("drops_policy", "policy_mutants:DropsPolicy", "runs full for every policy"),
        _canonical(
            "none_for_save_dots", "policy_mutants:NoneForSaveDots", "runs none for save_dots"
        ),
        _canonical(
            "saves_y_for_named", "policy_mutants:SavesYForNamed", "save_named saves y, not h"
        ),
        _canonical(
            "contradictory_expectations",
            "policy_mutants:ContradictoryExpectations",
            "declares its own expectations, full remat keeping d1 (against the vocabulary)",
        ),
        _canonical(
            "wire_ignores_policy",
            "wire_port:WireIgnoresPolicy",
            "the canonical port as a process port that reads checkpoint, never the policy name",
        ),
        *(spec for manifest in manifests.manifests() for spec in manifest.mutants),
    )
}


@dataclass(frozen=True)
class Mutant:
    """A mutant's name, its bug, and the loaded port (None, with a reason, when it cannot load);
    `first` and `killed_by` as in `MutantSpec`."""

    name: str
    bug: str
    port: Implementation | None
    reason: str = ""
    first: tuple[str, ...] = ()
    killed_by: str = ""


def load(name: str) -> Mutant:
    """One mutant, loaded if its framework is installed."""
    spec = MUTANTS[name]
    module_name, _, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        return Mutant(name, spec.bug, None, f"needs {error.name!r}, not installed")
    except StackUnavailable as error:  # e.g. Keras, already on another backend here
        return Mutant(name, spec.bug, None, str(error))
    try:
        port = getattr(module, attr)()
    except ProcessPortUnavailable as error:  # a process port whose program cannot run here
        return Mutant(name, spec.bug, None, str(error))
    if not getattr(port, "instrument_family", ""):  # renamed, it keeps its port's family
        entry = manifests.port(spec.family)
        if entry is not None:
            port.instrument_family = entry[0].family_of(entry[1])
    port.name = name  # reports and messages name the mutant
    return Mutant(name, spec.bug, port, first=spec.first, killed_by=spec.killed_by)
