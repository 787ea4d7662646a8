"""The TensorFlow.js stack: L blocks `Dense -> relu -> Dense`, (B, F) -> (B, F), on tfjs's
pure-JS CPU backend in a Node child process. Imports no ML framework: numpy, the standard
library and the process protocol's Python side (`implementations.process`).

The blocks run in `implementations/stacks/tfjs/bench.js`, which shares the port's code:
mlp.js's plain MLP and its remat (`tf.customGrad`), and load.js's tfjs (the `npm ci` into
`<REMAT_CACHE>/node/tfjs-<lock hash>` that the `tfjs` port's first start runs, or reuses).
This module speaks JSON lines to it through `ProcessPort`'s machinery, so a crash, a hang or a
protocol violation of the child is an error that names the request.

- `none`: the blocks as they are;
- `full`: mlp.js's `tf.customGrad` remat around every block;
- `save-mm`: tfjs has no checkpoint policies, so this is written out: the block's first matmul
  runs outside the region, which keeps its output, and a `tf.customGrad` region recomputes
  bias, relu and the second layer (as the TensorFlow stack does).

**Instruments.**

- *saved*: the tensors the nodes of tfjs's one tape hold at the end of the forward pass (read
  inside `tf.grads`, as mlp.js's evidence does), one per tensor datum, x and the parameters
  marked by their data. tfjs's `Add` gradient keeps both inputs (for their shapes, to undo
  broadcasting), so a plain block keeps five (B, F) tensors: x, x @ W1, h, relu(h), relu(h) @ W2.
- *matmuls*: the `BatchMatMul` kernels `tf.profile` sees in one step.
- *peak*: `tf.profile`'s peakBytes during one step (the engine's total after the kernel that
  peaked) above `tf.memory().numBytes` before it; gradients included.
- *step*: the Python call, a round trip to the child included (well under a millisecond; a
  step at the default B and F takes seconds).

**Not in the default sweep.** The CPU backend computes in plain JavaScript: one step of one
block at the default B = 1024, F = 256 takes about 3 s, so the default depths would take hours.
`--framework tfjs` runs it; choose a small `--batch` and `--features`.
"""

from __future__ import annotations

import os
import shutil
import weakref
from typing import Any

from implementations.bench_case import MODES, Data, ScheduleStatic, Static, Values
from implementations.process import ProcessPort, ProcessPortError, ProtocolViolation
from implementations.process.adapter import _timeout, expand_command
from implementations.process.wire import decode_array, decode_saved, encode_array, field
from implementations.schedules import Region, Schedule

FRAMEWORK = "tfjs"
VARIANTS = ("",)  # the CPU backend, eager: one way to run the stack
COMMAND = "node {implementations}/stacks/tfjs/bench.js"


class _BenchProcess(ProcessPort):
    """The bench child: `ProcessPort`'s start, `hello` and containment, with its own requests."""

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        return self._request(op, **arguments)


def _answer_timeout() -> float:
    # The port's 120 s is too short here: at the defaults a step of L = 32 takes about 2
    # minutes, and `measure` runs two. REMAT_PROCESS_TIMEOUT still decides where it is set.
    return _timeout() if os.environ.get("REMAT_PROCESS_TIMEOUT", "").strip() else 1800.0


def _start() -> _BenchProcess:
    """The child, started and greeted; `ImportError` with the reason where it cannot run (so
    that `load_frameworks` skips tfjs as it skips a framework that is not installed)."""
    if shutil.which("node") is None:
        raise ImportError("Node.js is not installed: tfjs needs `node` (and npm) on PATH")
    try:
        return _BenchProcess("tfjs-bench", expand_command(COMMAND), timeout=_answer_timeout())
    except (ProcessPortError, ProtocolViolation) as error:
        raise ImportError(f"tfjs cannot run: {error}") from None


_process = _start()


def versions() -> dict[str, str]:
    """tfjs's version, Node's, and the backend, as the child reports them."""
    found = field(_process.hello, "versions", "tfjs-bench: the answer to 'hello'")
    return {str(k): str(v) for k, v in found.items()}


def configurations() -> list[tuple[str, str]]:
    """Every `(variant, mode)` this framework runs."""
    return [(variant, mode) for variant in VARIANTS for mode in MODES]


def _drop(process: _BenchProcess, case: int) -> None:
    # A finalizer: the child may be gone already (the sweep ended, or it crashed).
    try:
        if process._child is not None:
            process.call("drop", case=case)
    except Exception:  # freeing is best effort, never an error of its own
        pass


class TfjsCase:
    """One tfjs configuration at one depth, its tensors held by the child.

    **Arguments:**

    - `variant`: `""` (the CPU backend is the only way here).
    - `mode`: see the module docstring.
    - `data`: the depth's `measure.Data`, sent once (kernels `(in, out)`, as tfjs's matMul
      takes them). x needs no gradient, as a batch of data would not.
    """

    framework = FRAMEWORK

    def __init__(self, variant: str, mode: str, data: Data):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; tfjs runs its CPU backend only")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self.variant, self.mode = variant, mode
        answer = _process.call(
            "build",
            mode=mode,
            blocks=[[encode_array(a) for a in arrays] for arrays in data.blocks],
            x=encode_array(data.x),
            cotangent=encode_array(data.cotangent),
        )
        self.case = int(field(answer, "case", "tfjs-bench: the answer to 'build'"))
        # Freed in the child when the sweep lets go of the case (not at exit: the child ends).
        weakref.finalize(self, _drop, _process, self.case).atexit = False

    def measure(self) -> Static:
        what = "tfjs-bench: the answer to 'measure'"
        answer = _process.call("measure", case=self.case)
        try:
            saved = decode_saved(field(answer, "saved", what))
            matmuls = int(field(answer, "matmuls", what))
            peak = int(field(answer, "peak_bytes", what))
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolViolation(
                f"{what}: malformed ({type(error).__name__}: {error})"
            ) from None
        return Static(saved, peak_bytes=peak, matmuls=matmuls)

    def step(self) -> None:
        _process.call("step", case=self.case)  # answers once the gradients' data is read


def build(variant: str, mode: str, data: Data) -> TfjsCase:
    """The case for one configuration (its tensors made in the child)."""
    return TfjsCase(variant, mode, data)


#: `bench --policies`: what its port expresses (none and full, its depth cases); tfjs has no
#: remat policy API for the rest (the port's hello says the same, docs/PROTOCOL.md).
POLICIES = ("none", "full")
NOT_EXPRESSIBLE = {
    "save_dots": "tfjs has no remat policy API: tf.customGrad keeps what it is told to save()",
    "save_named": "tfjs cannot name a tensor for a policy: it has no policy API",
    "offload_dots": "tfjs has no host offload of saved tensors",
}


# bench --schedules (docs/PROTOCOL.md, Schedules): the child declares them in its hello and
# builds a case from the placement tree the suite sends (bench.js, schedules.js).
def _declared(key: str) -> dict[str, str]:
    found = _process.hello.get(key, {})
    if not isinstance(found, dict):
        raise ProtocolViolation(f"tfjs-bench: hello's {key!r} must be an object, got {found!r}")
    return {str(k): str(v) for k, v in found.items()}


SCHEDULES = _declared("schedules")
SCHEDULES_NOT_EXPRESSIBLE = _declared("schedules_not_expressible")


def _tree(items: tuple) -> list:
    """A placement as JSON: a block index as it is, a region as the array of its items."""
    return [_tree(item.items) if isinstance(item, Region) else int(item) for item in items]


class TfjsScheduleCase:
    """One schedule at one depth, its tensors and regions held by the child (`schedule_case`)."""

    framework = FRAMEWORK

    def __init__(self, schedule: Schedule, data: Data):
        self.schedule = schedule.label
        answer = _process.call(
            "schedule",
            placement=_tree(schedule.placement(len(data.blocks))),
            blocks=[[encode_array(a) for a in arrays] for arrays in data.blocks],
            x=encode_array(data.x),
            cotangent=encode_array(data.cotangent),
        )
        self.case = int(field(answer, "case", "tfjs-bench: the answer to 'schedule'"))
        weakref.finalize(self, _drop, _process, self.case).atexit = False

    def measure(self) -> ScheduleStatic:
        what = "tfjs-bench: the answer to 'measure' (a schedule case)"
        answer = _process.call("measure", case=self.case)
        try:
            forward, backward = (int(n) for n in field(answer, "forward_matmuls", what))
            regions = int(field(answer, "regions", what))
            peak = field(answer, "peak_bytes", what)
            peak = None if peak is None else int(peak)
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolViolation(
                f"{what}: malformed ({type(error).__name__}: {error})"
            ) from None
        return ScheduleStatic((forward, backward), peak, PEAK_METHOD, regions)

    def values(self) -> Values:
        what = "tfjs-bench: the answer to 'schedule_values'"
        answer = _process.call("schedule_values", case=self.case)
        try:
            y = decode_array(field(answer, "y", what), f"{what}: y")
            grads = [
                tuple(decode_array(a, f"{what}: grads") for a in block)
                for block in field(answer, "grads", what)
            ]
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolViolation(
                f"{what}: malformed ({type(error).__name__}: {error})"
            ) from None
        return Values(y, grads)

    def step(self) -> None:
        _process.call("step", case=self.case)


PEAK_METHOD = (
    "none: tfjs frees a step's intermediates only when its tf.tidy ends, so tf.profile's "
    "peakBytes is all the step allocated"
)


def schedule_case(schedule: str | Schedule, data: Data) -> TfjsScheduleCase:
    """The stack of `len(data.blocks)` blocks under `schedule`, built in the child."""
    parsed = Schedule.parse(schedule)
    if parsed.name in SCHEDULES_NOT_EXPRESSIBLE:
        raise ValueError(
            f"schedule {parsed.label!r} is not expressible in tfjs: "
            f"{SCHEDULES_NOT_EXPRESSIBLE[parsed.name]}"
        )
    parsed.placement(len(data.blocks))  # a bad depth is refused here, naming the argument
    return TfjsScheduleCase(parsed, data)
