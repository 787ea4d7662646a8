"""The PaddlePaddle stack's manifest: `fleet.utils.recompute`, dygraph."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.paddle"

MANIFEST = Manifest(
    stack="paddle",
    engine="paddle",
    ports=(PortEntry("paddle", f"{_HERE}.paddle:Paddle", "paddle", ("paddle",)),),
    distributions={"paddle": ("paddlepaddle",)},
    load_first=1,
    load_first_why="Paddle segfaults when imported after TensorFlow (Paddle 3.3.1, TF 2.21)",
    bench=(
        BenchEntry(
            "paddle",
            f"{_HERE}.block",
            notes={
                "saved_bytes": "its own saved_tensors_hooks around the call, one per storage "
                "packed before the engine's first entry",
                "temp_bytes": "none: eager",
                "peak_bytes": "its host allocator's statistic, "
                "core.host_memory_stat_peak_value('Allocated', 0) over the backward pass "
                "(reset as it starts, read as it ends) above the current value before the "
                "step (gradients included; "
                "paddle.device.max_memory_allocated refuses CPU builds)",
                "matmuls": "none: Paddle's operator statistics count no grad kernel, and its "
                "dygraph has no dispatch hook over the backward kernels",
                "save-mm": "not run: recompute takes no policy",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "paddle_own_model_no_recompute",
            f"{_HERE}.paddle_mutants:OwnModelWithoutRecompute",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's model recomputes",
            "paddle",
            killed_by="e",
        ),
        MutantEntry(
            "paddle_no_recompute",
            f"{_HERE}.paddle_mutants:PaddleNoRecompute",
            "Paddle MLP without fleet.utils.recompute",
            "paddle",
            killed_by="e",
        ),
    ),
    built_on=("paddlepaddle",),
    ci=CiJob("linux-cpu-engines", "ubuntu-24.04", CPU_WHEELS),
)
