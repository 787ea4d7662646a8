"""The HIPS autograd stack's manifest: `autograd.checkpoint`'s recipe, its VJP traced in
backward, on numpy."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry

_HERE = "implementations.stacks.autograd"

MANIFEST = Manifest(
    stack="autograd",
    engine="autograd",
    ports=(
        PortEntry(
            "hips_autograd", f"{_HERE}.hips_autograd:HipsAutograd", "autograd", ("autograd",)
        ),
    ),
    bench=(
        BenchEntry(
            "autograd",
            f"{_HERE}.block",
            notes={
                "saved_bytes": "the arrays reachable from make_vjp's backward graph (its nodes' "
                "VJP closures) once the forward pass has run",
                "temp_bytes": "none: eager numpy",
                "peak_bytes": "tracemalloc's peak during the backward pass of one step above its "
                "count before the step (numpy reports its array allocations to tracemalloc; "
                "gradients included)",
                "matmuls": "calls of autograd's matmul primitives and adjoints on plain arrays "
                "during one step, seen by sys.setprofile",
                "save-mm": "not run: autograd.checkpoint has no policy",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "autograd_own_model_no_checkpoint",
            f"{_HERE}.hips_autograd_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's block checkpoints",
            "hips_autograd",
            killed_by="e",
        ),
        MutantEntry(
            "autograd_no_checkpoint",
            f"{_HERE}.hips_autograd_mutants:AutogradNoCheckpoint",
            "autograd MLP without the checkpoint",
            "hips_autograd",
            killed_by="e",
        ),
        MutantEntry(
            "autograd_upstream_checkpoint",
            f"{_HERE}.hips_autograd_mutants:AutogradUpstreamCheckpoint",
            "autograd.checkpoint as shipped: traced in the forward pass, activations kept",
            "hips_autograd",
            killed_by="e",
        ),
    ),
    ci=CiJob("linux-cpu-autograd", "ubuntu-24.04"),
)
