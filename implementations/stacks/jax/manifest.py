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


def _canonical_mutant(
    name: str, target: str, bug: str, first: tuple[str, ...] = (), killed_by: str = ""
) -> MutantEntry:
    """The canonical port with one bug, hunted in its worker; `killed_by`, the letter of the
    property that must reject it."""
    return MutantEntry(name, target, bug, "flax_linen", first, killed_by=killed_by)


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
    reads=("JAX_PLATFORMS", "JAX_ENABLE_X64", "XLA_FLAGS"),
    # A worker with one core runs XLA without Eigen's pool (its barriers stall a shared core).
    one_thread={"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"},
    bench=(
        BenchEntry(
            "jax",
            f"{_HERE}.block",
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
    # The canonical port's mutants, each with the property that looks at its bug (killed_by).
    # The precision tier's are hunted by it first: it must kill them at D = F = 256 or 1024
    # (tests/core/checking/test_precision.py proves both sizes). The policy ones are exact
    # under checkpoint=True/False and wrong under a policy.
    mutants=(
        _canonical_mutant(
            "no_checkpoint",
            f"{_HERE}.flax_linen_mutants:NoCheckpoint",
            "plain MLP, no checkpoint anywhere",
            killed_by="e",
        ),
        _canonical_mutant(
            "checkpoint_off_grad_path",
            f"{_HERE}.flax_linen_mutants:CheckpointOffGradPath",
            "inits the checkpointed MLP, applies the plain one",
            killed_by="e",
        ),
        _canonical_mutant(
            "saves_everything",
            f"{_HERE}.flax_linen_mutants:SavesEverything",
            "a checkpoint policy that saves everything",
            killed_by="e",
        ),
        _canonical_mutant(
            "default_init",
            f"{_HERE}.flax_linen_mutants:UniformInit",
            "a uniform init with non-zero biases (Linear's elsewhere)",
            killed_by="f",
        ),
        _canonical_mutant(
            "dropped_bias",
            f"{_HERE}.flax_linen_mutants:DroppedBias",
            "the second layer ignores its bias",
            killed_by="b",
        ),
        _canonical_mutant(
            "bias_off_by_1e-3",
            f"{_HERE}.flax_linen_mutants:BiasOffByAThousandth",
            "biases scaled by 1 + 1e-3",
            killed_by="b",
        ),
        _canonical_mutant(
            "relu_after_last_layer",
            f"{_HERE}.flax_linen_mutants:ReluAfterLastLayer",
            "a relu after Dense_1",
            killed_by="f",
        ),
        _canonical_mutant(
            "bf16_compute",
            f"{_HERE}.flax_linen_mutants:Bfloat16Compute",
            "Dense layers compute in bfloat16",
            killed_by="f",
        ),
        _canonical_mutant(
            "f16_compute",
            f"{_HERE}.flax_linen_mutants:Float16Compute",
            "Dense layers compute in float16",
            killed_by="f",
        ),
        _canonical_mutant(
            "seed_plus_one",
            f"{_HERE}.flax_linen_mutants:SeedPlusOne",
            "PRNGKey(seed + 1)",
            killed_by="f",
        ),
        _canonical_mutant(
            "transposed_kernel",
            f"{_HERE}.flax_linen_mutants:TransposedKernel",
            "uses Dense_1's kernel transposed",
            killed_by="f",
        ),
        _canonical_mutant(
            "mutates_x",
            f"{_HERE}.flax_linen_mutants:MutatesX",
            "clamps the caller's x in place",
            killed_by="h",
        ),
        _canonical_mutant(
            "not_flattened",
            f"{_HERE}.flax_linen_mutants:NotFlattened",
            "returns shape (1, F)",
            killed_by="h",
        ),
        _canonical_mutant(
            "truncates_seed",
            f"{_HERE}.flax_linen_mutants:TruncatesSeed",
            "int(seed) unchecked: 1.5 runs as 1",
            killed_by="g",
        ),
        _canonical_mutant(
            "wrong_error_type",
            f"{_HERE}.flax_linen_mutants:WrongErrorType",
            "TypeError for a non-finite x",
            killed_by="g",
        ),
        _canonical_mutant(
            "vague_errors",
            f"{_HERE}.flax_linen_mutants:VagueErrors",
            "a bad x's error says only 'expected a valid input'",
            killed_by="g",
        ),
        _canonical_mutant(
            "not_repeatable",
            f"{_HERE}.flax_linen_mutants:NotRepeatable",
            "each call drifts by an ulp",
            killed_by="h",
        ),
        _canonical_mutant(
            "unchecked_sizes",
            f"{_HERE}.flax_linen_mutants:UncheckedSizes",
            "no size limits: MemoryError past int32 counts, the byte budget ignored",
            killed_by="g",
        ),
        _canonical_mutant(
            "tf32_matmul",
            f"{_HERE}.flax_linen_mutants:Tf32Matmul",
            "matmul operands rounded to TF32's 10 bits",
            ("i",),
            killed_by="i",
        ),
        _canonical_mutant(
            "f16_inputs",
            f"{_HERE}.flax_linen_mutants:Float16Inputs",
            "x rounded to float16 on the way in",
            ("i",),
            killed_by="i",
        ),
        _canonical_mutant(
            "bf16_weights_only",
            f"{_HERE}.flax_linen_mutants:Bfloat16WeightsOnly",
            "kernels kept in bfloat16, arithmetic in float32",
            ("i",),
            killed_by="i",
        ),
        _canonical_mutant(
            "bias_off_by_1e-4",
            f"{_HERE}.flax_linen_mutants:BiasOffByATenThousandth",
            "biases scaled by 1 + 1e-4",
            ("i",),
            killed_by="i",
        ),
        _canonical_mutant(
            "drops_policy",
            f"{_HERE}.flax_policy_mutants:DropsPolicy",
            "runs full for every policy",
            killed_by="j",
        ),
        _canonical_mutant(
            "none_for_save_dots",
            f"{_HERE}.flax_policy_mutants:NoneForSaveDots",
            "runs none for save_dots",
            killed_by="j",
        ),
        _canonical_mutant(
            "saves_y_for_named",
            f"{_HERE}.flax_policy_mutants:SavesYForNamed",
            "save_named saves y, not h",
            killed_by="j",
        ),
        _canonical_mutant(
            "contradictory_expectations",
            f"{_HERE}.flax_policy_mutants:ContradictoryExpectations",
            "declares its own expectations, full remat keeping d1 (against the vocabulary)",
            killed_by="j",
        ),
        _canonical_mutant(
            "twice_wraps_once",
            f"{_HERE}.flax_linen_mutants:TwiceWrapsOnce",
            "declares nn.checkpoint(nn.checkpoint(MLP)) and wraps once",
            killed_by="k",
        ),
        # Last of its family's: the rest of its worker's request meets the patched flax.
        MutantEntry(
            "patches_flax_on_import",
            f"{_HERE}.outside_mutants:PatchesFlaxOnImport",
            "an outside package's port that sets flax.linen.relu to a leaky relu on import",
            "flax_linen",
            outside=True,
            killed_by="b",
        ),
        MutantEntry(
            "haiku_no_remat",
            f"{_HERE}.haiku_mutants:HaikuNoRemat",
            "Haiku MLP without hk.remat",
            "haiku",
            killed_by="e",
        ),
        MutantEntry(
            "jax_own_exercise_no_checkpoint",
            f"{_HERE}.jax_checkpoint_mutants:OwnExerciseWithoutCheckpoint",
            "forward and nn_checkpoint_forward of its own, never checkpointed (apply still is)",
            "jax_checkpoint",
            killed_by="e",
        ),
        *(
            MutantEntry(
                name,
                f"{_HERE}.jax_checkpoint_state_mutants:{target}",
                bug,
                "jax_checkpoint",
                killed_by="l",
            )
            for name, target, bug in (
                (
                    "state_fresh_mask_on_recompute",
                    "FreshMaskOnRecompute",
                    "the stateful block's recompute draws a fresh dropout mask",
                ),
                (
                    "state_updated_twice",
                    "UpdatedTwice",
                    "the running statistics updated twice under the checkpoint, declared once",
                ),
                (
                    "state_dropout_unscaled",
                    "DropoutUnscaled",
                    "dropout keeps its elements without the 1 / (1 - rate) scale",
                ),
                (
                    "state_dropout_keeps_the_rate",
                    "DropoutKeepsTheRate",
                    "dropout keeps an element with the probability rate, not 1 - rate",
                ),
                (
                    "state_checkpoint_advances_rng",
                    "CheckpointAdvancesRng",
                    "the checkpoint splits the RNG key once more",
                ),
                (
                    "state_momentum_convention_swapped",
                    "MomentumConventionSwapped",
                    "momentum 0.99 applied in torch's convention (0.99 of the batch taken)",
                ),
            )
        ),
        MutantEntry(
            "spmd_no_checkpoint",
            f"{_HERE}.jax_spmd_mutants:SpmdNoCheckpoint",
            "JAX SPMD (NamedSharding) MLP with jax.checkpoint removed",
            "jax_spmd",
            killed_by="e",
        ),
    ),
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
)
