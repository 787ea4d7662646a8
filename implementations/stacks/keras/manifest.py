"""The Keras stack's manifest: `keras.RematScope` on each of three backends."""

from implementations.manifests import CiJob, Manifest, MutantEntry, PortEntry
from implementations.stacks.torch.manifest import CPU_WHEELS

_HERE = "implementations.stacks.keras"
_BACKENDS = ("jax", "torch", "tensorflow")

MANIFEST = Manifest(
    stack="keras",
    engine="keras",
    # Keras picks one backend per process (read once, from KERAS_BACKEND): each port is
    # measured in a process of its own, computes with its backend, and is held to its
    # backend's instrument.
    ports=(
        PortEntry(
            "keras_jax",
            f"{_HERE}.keras_jax:KerasJax",
            "keras,jax",
            ("keras", "jax"),
            engine="jax",
            lane="keras_jax",
            family="jax",
        ),
        PortEntry(
            "keras_torch",
            f"{_HERE}.keras_torch:KerasTorch",
            "keras,torch",
            ("keras", "torch"),
            engine="torch",
            lane="keras_torch",
            family="torch",
        ),
        PortEntry(
            "keras_tensorflow",
            f"{_HERE}.keras_tensorflow:KerasTensorFlow",
            "keras,tensorflow",
            ("keras", "tensorflow"),
            engine="tensorflow",
            lane="keras_tensorflow",
            family="tensorflow",
        ),
    ),
    reads=("KERAS_BACKEND",),
    mutants=(
        *(
            MutantEntry(
                f"keras_{backend}_remat_none",
                f"{_HERE}.keras_{backend}_mutants:RematScopeNone",
                f"keras_{backend} with RematScope(mode=None)",
                f"keras_{backend}",
                killed_by="e",
            )
            for backend in _BACKENDS
        ),
        MutantEntry(
            "keras_torch_own_model_no_checkpoint",
            f"{_HERE}.keras_torch_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward of its own in plain torch, never "
            "checkpointed (the Keras model still is)",
            "keras_torch",
            killed_by="e",
        ),
    ),
    built_on=("keras",),
    ci=CiJob("linux-cpu-tensorflow-keras", "ubuntu-24.04", CPU_WHEELS),
)
