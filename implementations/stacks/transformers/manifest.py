"""The transformers stack's manifest: Hugging Face's switch, on torch."""

from implementations.manifests import CiJob, Manifest, MutantEntry, PortEntry
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.transformers"

MANIFEST = Manifest(
    stack="transformers",
    engine="torch",  # the torch worker imports transformers, once
    ports=(
        PortEntry(
            "hf_transformers",
            f"{_HERE}.hf_transformers:HfTransformers",
            "transformers",
            ("torch", "transformers"),
        ),
    ),
    mutants=(
        MutantEntry(
            "hf_eval_mode",
            f"{_HERE}.hf_transformers_mutants:LeftInEvalMode",
            "the switch on, the model left in eval(): transformers skips the checkpoint",
            "hf_transformers",
            killed_by="e",
        ),
        MutantEntry(
            "hf_switch_never_flipped",
            f"{_HERE}.hf_transformers_mutants:SwitchNeverFlipped",
            "activation_checkpointing_enable never called",
            "hf_transformers",
            killed_by="e",
        ),
        MutantEntry(
            "hf_reentrant_input_without_grad",
            f"{_HERE}.hf_transformers_mutants:ReentrantInputWithoutGrad",
            "use_reentrant=True with an input that needs no grad: no gradient flows to x",
            "hf_transformers",
            killed_by="c",
        ),
    ),
    built_on=("transformers",),
    ci=CiJob("linux-cpu-torch", "ubuntu-24.04", CPU_WHEELS),
)
