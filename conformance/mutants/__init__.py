"""Deliberately broken ports. The suite must reject every one of them.

Each mutant is a port with one realistic bug. A mutant that passes every
property means the suite has a blind spot. Mutants load lazily, like ports,
so that a missing framework skips its mutants rather than breaking the run.
A Keras mutant loads Keras on its backend: where Keras runs on another
backend already, it is marked `elsewhere`, to be run in a process of its own.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from implementations.contract import Implementation, StackUnavailable

# name -> ("module:class", the bug in a few words)
MUTANTS: dict[str, tuple[str, str]] = {
    "no_checkpoint": ("flax_mutants:NoCheckpoint", "plain MLP, no checkpoint anywhere"),
    "checkpoint_off_grad_path": (
        "flax_mutants:CheckpointOffGradPath",
        "inits the checkpointed MLP, applies the plain one",
    ),
    "saves_everything": (
        "flax_mutants:SavesEverything",
        "a checkpoint policy that saves everything",
    ),
    "default_init": ("flax_mutants:TorchStyleInit", "torch-style uniform init, non-zero biases"),
    "dropped_bias": ("flax_mutants:DroppedBias", "the second layer ignores its bias"),
    "bias_off_by_1e-3": ("flax_mutants:BiasOffByAThousandth", "biases scaled by 1 + 1e-3"),
    "relu_after_last_layer": ("flax_mutants:ReluAfterLastLayer", "a relu after Dense_1"),
    "bf16_compute": ("flax_mutants:Bfloat16Compute", "Dense layers compute in bfloat16"),
    "f16_compute": ("flax_mutants:Float16Compute", "Dense layers compute in float16"),
    "seed_plus_one": ("flax_mutants:SeedPlusOne", "PRNGKey(seed + 1)"),
    "transposed_kernel": ("flax_mutants:TransposedKernel", "uses Dense_1's kernel transposed"),
    "mutates_x": ("flax_mutants:MutatesX", "clamps the caller's x in place"),
    "not_flattened": ("flax_mutants:NotFlattened", "returns shape (1, F)"),
    "truncates_seed": ("flax_mutants:TruncatesSeed", "int(seed) unchecked: 1.5 runs as 1"),
    "wrong_error_type": ("flax_mutants:WrongErrorType", "TypeError for a non-finite x"),
    "not_repeatable": ("flax_mutants:NotRepeatable", "each call drifts by an ulp"),
    "tf_no_recompute_grad": (
        "tensorflow_mutants:NoRecomputeGrad",
        "tensorflow port without tf.recompute_grad",
    ),
    "keras_jax_remat_none": (
        "keras_jax_mutants:RematScopeNone",
        "keras_jax with RematScope(mode=None)",
    ),
    "keras_torch_remat_none": (
        "keras_torch_mutants:RematScopeNone",
        "keras_torch with RematScope(mode=None)",
    ),
    "keras_tensorflow_remat_none": (
        "keras_tensorflow_mutants:RematScopeNone",
        "keras_tensorflow with RematScope(mode=None)",
    ),
}


@dataclass(frozen=True)
class Mutant:
    """A mutant's name, its bug, and the loaded port (None, with a reason, when it cannot load).

    `elsewhere` is True when its stack is installed but cannot load in this
    process (Keras on another backend): it loads in a fresh one.
    """

    name: str
    bug: str
    port: Implementation | None
    reason: str = ""
    elsewhere: bool = False


def load(name: str) -> Mutant:
    """One mutant, loaded if its framework is installed and can load in this process."""
    target, bug = MUTANTS[name]
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except StackUnavailable as error:
        return Mutant(name, bug, None, str(error), elsewhere=True)
    except ModuleNotFoundError as error:
        return Mutant(name, bug, None, f"needs {error.name!r}, not installed")
    port = getattr(module, attr)()
    port.name = name  # reports and messages name the mutant
    return Mutant(name, bug, port)


def load_all() -> list[Mutant]:
    """Every mutant, loaded if its framework is installed (see `load`)."""
    return [load(name) for name in MUTANTS]
