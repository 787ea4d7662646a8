"""Probes of TensorFlow's documented degradation (`expectations.py`): each runs the degraded
call and says whether it still degrades, `(holds, seen)`. Imports TensorFlow.

The version sweep (`python -m conformance versions`) runs them at every version it installs;
tests/tensorflow/test_tf_policies.py pins them at the tested one.
"""

from __future__ import annotations

import numpy as np

from ...policies import FULL
from ..numpy import canonical_params


def recompute_grad_reruns_both_matmuls() -> tuple[bool, str]:
    """`tf.recompute_grad` reruns both MatMuls, the second of which the gradient never needs."""
    from .tensorflow import TensorFlow  # imports TensorFlow: only where a probe runs

    record = TensorFlow().backward_record(
        canonical_params(0, 3, 4), np.ones(3, np.float32), checkpoint=FULL
    )
    recomputed = dict(sorted(record.recomputed.items()))
    return recomputed.get("MatMul") == 2, f"full recomputes {recomputed}"
