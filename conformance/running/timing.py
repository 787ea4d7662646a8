"""Timing by interleaved samples, for `compare` and `bench`.

Every repeat runs each call once, in a new random order (seeded): a call
right after another framework's runs slower (cold caches, the other's
threads still spinning; about 25% for a 7 ms step here), so a fixed order
would always charge that to the same call. A short call is repeated within
a sample so that the sample lasts `MIN_SAMPLE_SECONDS`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

MIN_SAMPLE_SECONDS = 0.02


def time_interleaved(
    calls: Sequence[Callable[[], Any]],
    repeats: int,
    on_sample: Callable[[], None] | None = None,
    *,
    seed: int = 0,
    warm_up: bool = True,
) -> list[list[float]]:
    """Seconds per call of each callable, `repeats` samples each, interleaved.

    Each call runs once first as a warm-up (compile, allocate, fill caches;
    `warm_up=False` where the caller ran each already) and once more to size
    its samples.

    **Returns:** for each call, its `repeats` samples (seconds per call).
    """
    for call in calls if warm_up else ():
        call()
    inner = [_repeats_per_sample(call) for call in calls]
    samples: list[list[float]] = [[] for _ in calls]
    shuffle = random.Random(seed).shuffle
    for _ in range(repeats):
        order = list(range(len(calls)))
        shuffle(order)
        for i in order:
            started = time.perf_counter()
            for _ in range(inner[i]):
                calls[i]()
            samples[i].append((time.perf_counter() - started) / inner[i])
            if on_sample:
                on_sample()
    return samples


def _repeats_per_sample(call: Callable[[], Any]) -> int:
    started = time.perf_counter()
    call()
    seconds = time.perf_counter() - started
    return max(1, math.ceil(MIN_SAMPLE_SECONDS / max(seconds, 1e-7)))
