"""TensorFlow, imported quietly, and its float32 matmul switch. Imports TensorFlow only.

TensorFlow's C++ libraries log while they load (absl's "All log messages
before absl::InitializeLog()" and oneDNN's "custom operations are on", twice),
and `TF_CPP_MIN_LOG_LEVEL` does not reach those lines. So the first import
runs with file descriptor 2 pointed at a temporary file; what it caught is
written back to stderr, less the C++ log lines. Later C++ logs obey
`TF_CPP_MIN_LOG_LEVEL` (set here unless the user set it), and TensorFlow's
Python logger is turned down to errors. oneDNN stays on, as TensorFlow's
default is: `TF_ENABLE_ONEDNN_OPTS=0` would silence it too, but would change
which kernels run.

The import also keeps Keras out (`_keras_hidden`): TensorFlow imports Keras
while it loads, and Keras would then hold this process on its TensorFlow
backend, so that no Keras port on JAX or torch could load here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator

from ..native_stderr import captured_fd2

# INFO and WARNING lines of TensorFlow's C++ runtime stay out; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# An absl C++ log line (`I0000 00:00:1796032959.93 13012 port.cc:153] ...`: before
# absl is initialised the seconds count from the epoch) or absl's preamble.
_CPP_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d+:\d+:\d+\.\d+\s+\d+ \S+:\d+\] |WARNING: All log messages before absl)"
)


@contextlib.contextmanager
def _quiet_fd2() -> Iterator[None]:
    """Point fd 2 at a temporary file; write back what is not a C++ log line."""
    if "tensorflow" in sys.modules:  # loaded already: nothing left to hide
        yield
        return
    caught: list[str] = []
    try:
        with captured_fd2(caught):
            yield
    finally:
        kept = _without_cpp_logs("".join(caught))
        if kept:
            sys.stderr.write(kept)


def _without_cpp_logs(text: str) -> str:
    """`text` less its C++ log lines and their continuation lines (cpu_feature_guard's
    message goes on in a second line, "To enable the following instructions: ...")."""
    kept, in_log = [], False
    for line in text.splitlines(keepends=True):
        if _CPP_LOG_LINE.match(line):
            in_log = True
        elif in_log and line.startswith(("To enable the following", " ")):
            pass  # the rest of a multi-line log message
        else:
            in_log = False
            kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def _keras_hidden() -> Iterator[None]:
    """Keep Keras out of TensorFlow's import.

    TensorFlow's `__init__` imports Keras ("an eager load for Keras' code"),
    and Keras then fixes its backend for the life of the process: the one
    `KERAS_BACKEND` names, "tensorflow" by default. So a process that only
    used TensorFlow could no longer run Keras on JAX or torch. With `keras`
    marked unimportable meanwhile, TensorFlow catches the ImportError, as it
    does where Keras is not installed; `tf.keras` still imports Keras on
    first use. TensorFlow also puts Keras's API directories on its
    `__path__`, found without importing Keras: they are put back after.
    """
    if "keras" in sys.modules:  # loaded already, or blocked: nothing to hide
        yield
        return
    sys.modules["keras"] = None
    try:
        yield
    finally:
        del sys.modules["keras"]
        _restore_keras_api_path()


def _restore_keras_api_path() -> None:
    module = sys.modules.get("tensorflow")
    if module is None or None not in getattr(module, "__path__", ()):
        return
    from tensorflow.python.tools import module_util

    legacy = os.environ.get("TF_USE_LEGACY_KERAS", None) in ("true", "True", "1")
    api = "tf_keras.api._v2.keras" if legacy else "keras.api._v2.keras"
    # TensorFlow prepends the "keras._tf_keras" directory, then the API one.
    api_dir = module_util.get_parent_dir_for_name(api)
    found = iter([api_dir, module_util.get_parent_dir_for_name("keras._tf_keras.keras")])
    restored = [next(found, None) if entry is None else entry for entry in module.__path__]
    module.__path__ = [entry for entry in restored if entry is not None]


with _quiet_fd2(), _keras_hidden():
    import tensorflow as tf

logging.getLogger("tensorflow").setLevel(logging.ERROR)

# TensorFlow's own setting before anyone pins it, for `matmul_precision()`.
_DEFAULT_TF32 = tf.config.experimental.tensor_float_32_execution_enabled()


def installed(versions: dict[str, str]) -> dict[str, str]:
    """A port's distribution versions less the ones not installed: TensorFlow ships as
    `tensorflow` or as `tensorflow-cpu`, and a port names both. TensorFlow's own
    version stands in when neither distribution is found (a source build)."""
    found = {name: v for name, v in versions.items() if v != "not installed"}
    if not any(name.startswith("tensorflow") for name in found):
        found["tensorflow"] = tf.__version__
    return found


def pin_matmul_precision() -> None:
    """float32 matmuls in float32 on GPUs: no TensorFloat-32 (TensorFlow allows it by default)."""
    tf.config.experimental.enable_tensor_float_32_execution(False)


def matmul_precision() -> dict[str, str]:
    """TensorFlow's float32 matmul setting before pinning and now, as TensorFlow reports it."""

    def describe(tf32: bool) -> str:
        return "tensor_float_32 allowed" if tf32 else "float32"

    return {
        "default": describe(_DEFAULT_TF32),
        "pinned": describe(tf.config.experimental.tensor_float_32_execution_enabled()),
        "note": "TensorFloat-32 exists on NVIDIA Ampere and later GPUs only; on a CPU "
        "both settings compute in float32",
    }


__all__ = ["installed", "matmul_precision", "pin_matmul_precision", "tf"]
