"""The JAX stack's manifest: the canonical port (Flax linen) and every JAX front end."""

from implementations.manifests import (
    BenchEntry,
    CacheEntry,
    CiJob,
    Manifest,
    MutantEntry,
    PortEntry,
)

_HERE = "implementations.stacks.jax"

MANIFEST = Manifest(
    stack="jax",
    engine="jax",
    ports=(
        PortEntry("flax_linen", f"{_HERE}.flax_linen:FlaxLinen", "flax", ("jax", "flax")),
        PortEntry("equinox_jax", f"{_HERE}.equinox_jax:EquinoxJax", "equinox", ("jax", "equinox")),
        PortEntry("flax_nnx", f"{_HERE}.flax_nnx:FlaxNnx", "nnx", ("jax", "flax")),
        PortEntry("jax_checkpoint", f"{_HERE}.jax_checkpoint:JaxCheckpoint", "jax", ("jax",)),
        PortEntry("haiku", f"{_HERE}.haiku:Haiku", "haiku", ("jax", "haiku")),
        # Host devices are forced before jax is imported: a process of its own, by profile.
        PortEntry(
            "jax_spmd",
            f"{_HERE}.jax_spmd:JaxSpmd",
            "jax",
            ("jax",),
            profile="scale",
            ranks_variable="REMAT_SPMD_DEVICES",
        ),
    ),
    distributions={"haiku": ("dm-haiku",)},
    # On a GPU, JAX's default float32 matmul takes bfloat16 passes: pinned before import.
    environment={"JAX_DEFAULT_MATMUL_PRECISION": "highest"},
    bench=(
        BenchEntry(
            "jax",
            f"{_HERE}.bench",
            quick=True,
            notes={
                "saved_bytes": "the residual leaves of jax.vjp, one per jaxpr variable",
                "temp_bytes": "XLA's compiled temporary buffers, "
                "jit(step).lower().compile().memory_analysis().temp_size_in_bytes",
                "peak_bytes": "none: JAX's CPU runtime has no allocation profiler",
                "matmuls": "dot ops in the optimized HLO (a loop body times its known trip count)",
                "save-mm": "jax.checkpoint_policies.dots_saveable",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "haiku_no_remat",
            f"{_HERE}.haiku_mutants:HaikuNoRemat",
            "Haiku MLP without hk.remat",
            "haiku",
            "e_evidence",
        ),
        MutantEntry(
            "spmd_no_checkpoint",
            f"{_HERE}.jax_spmd_mutants:SpmdNoCheckpoint",
            "JAX SPMD (NamedSharding) MLP with jax.checkpoint removed",
            "jax_spmd",
            "e_evidence",
        ),
    ),
    expectations=f"{_HERE}.expectations:EXPECTATIONS",
    devices=f"{_HERE}.devices:probe",
    state=f"{_HERE}.state:settings",
    device_module="jax",
    built_on=("flax", "equinox", "dm-haiku", "haiku"),
    caches=(
        CacheEntry(
            "JAX",
            folder="jax",
            setting="REMAT_JAX_CACHE",
            directory_variable="JAX_COMPILATION_CACHE_DIR",
            turn_off=f"{_HERE}.caches:turn_off",
            # Every compile is kept: the suite's are many and each is short.
            when_on={
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
            },
        ),
    ),
    ci=CiJob("linux-cpu-jax", "ubuntu-24.04"),
    tests="jax",
)
