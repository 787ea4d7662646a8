"""What `keras_torch` declares for the block with variables and RNGs (property (l)), measured
on CPU with Keras 3.15.1 and torch 2.13 (tests/keras/test_keras_torch_stateful.py holds it).
Imports nothing but the contract and its declarations."""

from implementations.stateful import StateDegradation
from implementations.stateful_port import redraws

#: Keras's `Dropout` seeds a `SeedGenerator` variable that torch's checkpoint does not stash.
UNSTASHED = (
    "keras.remat on torch is torch.utils.checkpoint(use_reentrant=False), whose "
    "preserve_rng_state stashes torch's global generator only: Keras's SeedGenerator is a "
    "Keras variable, not restored (keras/src/backend/torch/core.py remat)"
)
KERAS_TORCH = {
    "default": redraws(
        'keras.RematScope(mode="full"): Block made inside it, its layers under mode=None',
        "Dropout(rate, seed=seed % 2**31): a SeedGenerator variable [seed, counter] (int32 on "
        "torch), one counter step "
        "a draw, each mask from a torch.Generator seeded by the two",
        "none found upstream; " + UNSTASHED,
        replay="the recompute draws with the counter's next value: 1 fresh mask, which the "
        "gradients follow",
        stream="the SeedGenerator's counter ends at 2 after one step, 1 without the checkpoint",
        updates=StateDegradation(
            "updates",
            2,
            "pytorch#96136 (the same rerun of BatchNormalization's call under torch's checkpoint)",
            "the recompute reruns BatchNormalization's call in training: moving_mean and "
            "moving_variance are assigned a second time",
        ),
        repro="repros/keras_torch_remat_dropout.py",
    )
}
