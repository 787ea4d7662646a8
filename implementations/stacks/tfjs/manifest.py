"""The TensorFlow.js stack's manifest: a process port (docs/PROTOCOL.md) in Node."""

from implementations.manifests import BenchEntry, CiJob, Manifest, MutantEntry, PortEntry

_HERE = "implementations.stacks.tfjs"
#: The port's program; `{implementations}` is the installed package's folder.
COMMAND = "node {implementations}/stacks/tfjs/port.js"

MANIFEST = Manifest(
    stack="tfjs",
    engine="tfjs",
    ports=(
        # Node.js and npm come from the system; its extra is empty (pip cannot install them).
        PortEntry("tfjs", f"exec:{COMMAND}", "tfjs", family="@tensorflow/tfjs"),
    ),
    bench=(
        BenchEntry(
            "tfjs",
            f"{_HERE}.block",
            opt_in=True,
            notes={
                "saved_bytes": "the tensors the nodes of its tape hold when the differentiated "
                "function returns, one per tensor datum (instrument.js)",
                "temp_bytes": "none: eager",
                "peak_bytes": "not observable: tfjs frees a step's intermediates only when "
                "its tf.tidy ends, so tf.profile's peakBytes is all the step allocated",
                "matmuls": "the BatchMatMul kernels tf.profile sees in one call, both passes",
                "save-mm": "no policy API: the first matmul outside a tf.customGrad region",
            },
            why="its pure-JS CPU backend takes seconds per step at the default sizes: hours "
            "for the default sweep",
        ),
    ),
    mutants=(
        MutantEntry(
            "tfjs_no_custom_grad",
            f"{_HERE}.tfjs_mutants:TfjsNoCustomGrad",
            "TensorFlow.js MLP without tf.customGrad (a process port)",
            "tfjs",
            killed_by="e",
        ),
    ),
    # A process port: Node.js and npm come with the runner; the port runs `npm ci` on its
    # committed package-lock.json at its first start.
    ci=CiJob("linux-node-tfjs", "ubuntu-24.04"),
    tests="process",
)
