"""Paddle, imported where it can be: every module of this stack imports it from here.

Importing Paddle after TensorFlow in one process segfaults (Paddle 3.3.1,
TensorFlow 2.21). So where TensorFlow is loaded already, this module raises
`StackUnavailable` instead of importing Paddle: the registry then reports
the port as loading in a process of its own (the suite runs every port in a
worker of its own anyway), and `python -m conformance list` survives.
"""

import warnings

from ..load_order import refuse_after

refuse_after(
    "tensorflow",
    "paddle",
    "Paddle cannot be imported after TensorFlow in one process (it segfaults: "
    "Paddle 3.3.1, TensorFlow 2.21); it loads in a process of its own",
)

with warnings.catch_warnings():
    # Paddle warns at import that no ccache is installed (for its C++ extension builder).
    warnings.filterwarnings("ignore", "No ccache found", UserWarning)
    import paddle

__all__ = ["paddle"]
