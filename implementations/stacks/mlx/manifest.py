"""The MLX stack's manifest: `mlx.nn.utils.checkpoint`."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry

_HERE = "implementations.stacks.mlx"

MANIFEST = Manifest(
    stack="mlx",
    engine="mlx",
    ports=(PortEntry("mlx", f"{_HERE}.mlx:Mlx", "mlx", ("mlx",)),),
    # MLX reads its TF32 switch once, at its first matmul.
    environment={"MLX_ENABLE_TF32": "0"},
    bench=(
        BenchEntry(
            "mlx",
            f"{_HERE}.block",
            notes={
                "saved_bytes": "the forward arrays that backward primitives read in the lazy "
                "graph of "
                "mx.vjp, from mx.export_to_dot",
                "temp_bytes": "none: uncompiled",
                "peak_bytes": "its allocator's counter, mx.get_peak_memory() from the first "
                "mx.eval of the gradients (the forward pass evaluated before it) above "
                "mx.get_active_memory() before the step (gradients included)",
                "matmuls": "the AddMM/Matmul primitives in the step's lazy graph that its "
                "evaluation runs",
                "save-mm": "not run: mx.checkpoint has no policy",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "mlx_own_model_no_checkpoint",
            f"{_HERE}.mlx_mutants:OwnModelWithoutCheckpoint",
            "forward, pullback and nn_checkpoint_forward overridden by a plain MLP of the port's "
            "own, while the base's module checkpoints",
            "mlx",
            killed_by="e",
        ),
        MutantEntry(
            "mlx_no_checkpoint",
            f"{_HERE}.mlx_mutants:MlxNoCheckpoint",
            "MLX MLP without nn.utils.checkpoint",
            "mlx",
            killed_by="e",
        ),
    ),
    devices=f"{_HERE}.devices:probe",
    state=f"{_HERE}.state:settings",
    device_module="mlx.core",
    # Apple silicon, but a virtual machine: Metal is paravirtual there (and MPS absent), so
    # the report's device says what MLX ran on.
    ci=CiJob("macos-arm64-mlx", "macos-14"),
)
