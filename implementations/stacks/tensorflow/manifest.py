"""The TensorFlow stack's manifest: `tf.recompute_grad`."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.tensorflow"

MANIFEST = Manifest(
    stack="tensorflow",
    engine="tensorflow",
    ports=(
        PortEntry("tensorflow", f"{_HERE}.tensorflow:TensorFlow", "tensorflow", ("tensorflow",)),
    ),
    distributions={"tensorflow": ("tensorflow", "tensorflow-cpu")},
    reads=("TF_ENABLE_ONEDNN_OPTS",),
    thread_variables=("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"),
    bench=(
        BenchEntry(
            "tensorflow",
            f"{_HERE}.block",
            notes={
                "saved_bytes": "the forward tensors that backward ops read, watched as the step "
                "runs eagerly (an op callback): the eager program's, and the tf.function and XLA "
                "variants' as their Python code runs eagerly",
                "temp_bytes": "none: its XLA path does not expose its buffer assignment",
                "peak_bytes": "none: its CPU allocator statistics (get_memory_info) leave "
                "out allocations under 256 KiB",
                "matmuls": "MatMul ops executed (eager, an op callback), MatMul ops in the "
                "traced step graph (tf.function), or dot ops in the optimized HLO (XLA)",
                "save-mm": "no policies: the first matmul outside tf.recompute_grad",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "tf_own_model_no_checkpoint",
            f"{_HERE}.tensorflow_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's block checkpoints",
            "tensorflow",
            killed_by="e",
        ),
        MutantEntry(
            "tf_no_recompute_grad",
            f"{_HERE}.tensorflow_mutants:NoRecomputeGrad",
            "TensorFlow MLP without tf.recompute_grad",
            "tensorflow",
            killed_by="e",
        ),
    ),
    devices=f"{_HERE}.devices:probe",
    state=f"{_HERE}.state:settings",
    device_module="tensorflow",
    built_on=("tensorflow-cpu",),
    # The Keras job runs it too (the Keras ports need each backend installed anyway).
    ci=CiJob("linux-cpu-tensorflow-keras", "ubuntu-24.04", CPU_WHEELS),
)
