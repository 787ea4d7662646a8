"""How Flax derives each parameter's PRNG key. Imports the standard library only.

Flax never splits keys for parameters. Inside scope `Dense_k`, the n-th call
of `make_rng('params')` (n = 1 for the kernel, 2 for the bias) folds into the
root key `PRNGKey(seed)` one uint32: the first four bytes, big-endian, of
`SHA-1(b"Dense_k" + n as minimal big-endian bytes)`. This is
`flax.core.scope._fold_in_static` with `flax_fix_rng_separator` False, its
default. Ports that reproduce Flax's init without Flax share this.
"""

from __future__ import annotations

import functools
import hashlib

KERNEL_COUNTER = 1  # Dense asks for the kernel's rng first ...
BIAS_COUNTER = 2  # ... and then the bias's, though zeros ignore it.


def static_fold_value(*data: str | int) -> int:
    """The uint32 that Flax folds into a key for static data (scope names, rng counters)."""
    digest = hashlib.sha1()
    for item in data:
        if isinstance(item, str):
            digest.update(item.encode("utf-8"))
        else:
            digest.update(item.to_bytes((item.bit_length() + 7) // 8, byteorder="big"))
    return int.from_bytes(digest.digest()[:4], byteorder="big")


@functools.cache
def dense_kernel_fold_value(layer: int) -> int:
    """The value folded into `PRNGKey(seed)` to get the kernel key of `Dense_{layer}`."""
    return static_fold_value(f"Dense_{layer}", KERNEL_COUNTER)
