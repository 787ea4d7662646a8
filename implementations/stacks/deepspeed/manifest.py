"""The DeepSpeed stack's manifest: `deepspeed.checkpointing.checkpoint` on torch."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.deepspeed"

MANIFEST = Manifest(
    stack="deepspeed",
    engine="torch",
    ports=(
        PortEntry("deepspeed", f"{_HERE}.deepspeed:DeepSpeed", "deepspeed", ("torch", "deepspeed")),
    ),
    bench=(
        BenchEntry(
            "deepspeed",
            f"{_HERE}.block",
            notes={
                "saved_bytes": "torch's outer saved_tensors_hooks plus the inputs each "
                "checkpoint node keeps"
                " in ctx.deepspeed_saved_tensors, where no hook sees them",
                "temp_bytes": "none: eager",
                "peak_bytes": "as torch, from the outermost torch.autograd.backward",
                "matmuls": "aten matmuls, as torch (a nested region's forward in its outer's "
                "rerun counted as a rerun)",
                "save-mm": "not run: deepspeed.checkpointing.checkpoint takes no policy",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "deepspeed_own_model_no_checkpoint",
            f"{_HERE}.deepspeed_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's model goes through deepspeed.checkpointing.checkpoint",
            "deepspeed",
            killed_by="e",
        ),
        MutantEntry(
            "deepspeed_no_checkpoint",
            f"{_HERE}.deepspeed_mutants:DeepSpeedNoCheckpoint",
            "torch MLP without deepspeed.checkpointing.checkpoint",
            "deepspeed",
            killed_by="e",
        ),
    ),
    built_on=("deepspeed",),
    ci=CiJob("linux-cpu-engines", "ubuntu-24.04", CPU_WHEELS),
    # Sdists only: setup.py imports torch while it builds.
    build_requires=("torch", "setuptools", "wheel"),
)
