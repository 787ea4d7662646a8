"""The MindSpore stack's manifest: `Cell.recompute()`, PyNative, and graph mode as an extra
row of compare and bench."""

from implementations.manifests import (
    BenchEntry,
    CiJob,
    Manifest,
    MutantEntry,
    PortEntry,
    RowEntry,
)
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.mindspore"

MANIFEST = Manifest(
    stack="mindspore",
    engine="mindspore",
    ports=(PortEntry("mindspore", f"{_HERE}.mindspore:MindSpore", "mindspore", ("mindspore",)),),
    load_first=0,
    load_first_why="MindSpore fails to load after Paddle: both ship oneDNN (MindSpore 2.10.0)",
    bench=(
        BenchEntry(
            "mindspore",
            f"{_HERE}.block",
            # Its step costs Python dispatch per op, whatever the size: the sweep's defaults
            # cannot make it shorter.
            schedules_opt_in="PyNative dispatches every op from Python, so its sweep at the "
            "defaults takes longer than all the other stacks' together",
            notes={
                "saved_bytes": "its instrument's saved_tensors_hooks around the block's "
                "mindspore.vjp (PyNative), one per storage, told by values",
                "temp_bytes": "none: eager",
                "peak_bytes": "not observable: its memory statistics cover device pools only "
                "(mindspore.runtime.max_memory_allocated() and memory_stats() read 0 on the "
                "CPU)",
                "matmuls": "not observable: the gradient's MatMul kernels run in PyNative's C++ "
                "backward, which no Python hook reaches",
                "save-mm": "not run: Cell.recompute takes no policy",
            },
        ),
        # Graph mode is process-global: the stack runs in a process of its own.
        BenchEntry(
            "mindspore_graph",
            f"{_HERE}.graph_bench",
            isolated=True,
            notes={
                "saved_bytes": "the forward values that backward nodes read in the graph-mode "
                "IR after "
                "MindSpore's add_recomputation pass",
                "temp_bytes": "none: graph mode reports no buffer assignment",
                "peak_bytes": "none, as for PyNative: the CPU's memory statistics read 0",
                "matmuls": "the MatMul nodes, forward and backward, of the graph-mode IR after the "
                "add_recomputation pass",
                "save-mm": "Primitive.recompute() on each block's adds and relu, not its matmuls",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "mindspore_own_model_no_recompute",
            f"{_HERE}.mindspore_mutants:OwnModelWithoutRecompute",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's cell recomputes",
            "mindspore",
            killed_by="e",
        ),
        MutantEntry(
            "mindspore_no_recompute",
            f"{_HERE}.mindspore_mutants:MindSporeNoRecompute",
            "MindSpore MLP cell without Cell.recompute()",
            "mindspore",
            killed_by="e",
        ),
    ),
    rows=(RowEntry("mindspore_graph", f"{_HERE}.graph_row:GraphRow", ("mindspore",)),),
    ci=CiJob("linux-cpu-engines", "ubuntu-24.04", CPU_WHEELS),
)
