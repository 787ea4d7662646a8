"""What `keras_torch` declares for the block with variables and RNGs (property (l)), measured
on CPU with Keras 3.15.1 and torch 2.13 (tests/keras/test_keras_torch_stateful.py holds it).
Imports nothing but the contract."""

from implementations.stateful import StateDeclaration, StateDegradation

#: Keras's `Dropout` seeds a `SeedGenerator` variable that torch's checkpoint does not stash.
UNSTASHED = (
    "keras.remat on torch is torch.utils.checkpoint(use_reentrant=False), whose "
    "preserve_rng_state stashes torch's global generator only: Keras's SeedGenerator is a "
    "Keras variable, not restored (keras/src/backend/torch/core.py remat)"
)
KERAS_TORCH = {
    "default": StateDeclaration(
        'keras.RematScope(mode="full"): Block made inside it, its layers under mode=None',
        "Dropout(rate, seed=seed % 2**31): a SeedGenerator variable [seed, counter] (int32 on "
        "torch), one counter step "
        "a draw, each mask from a torch.Generator seeded by the two",
        replay=False,
        stream_kept=False,
        updates=2,
        degradations=(
            StateDegradation(
                "replay",
                1,
                "none found upstream; " + UNSTASHED,
                "the recompute draws with the counter's next value: 1 fresh mask, which the "
                "gradients follow",
            ),
            StateDegradation(
                "stream",
                1,
                "none found upstream; " + UNSTASHED,
                "the SeedGenerator's counter ends at 2 after one step, 1 without the checkpoint",
            ),
            StateDegradation(
                "updates",
                2,
                "pytorch#96136 (the same rerun of BatchNormalization's call under torch's "
                "checkpoint)",
                "the recompute reruns BatchNormalization's call in training: moving_mean and "
                "moving_variance are assigned a second time",
            ),
        ),
        repro="repros/keras_torch_remat_dropout.py",
    )
}
