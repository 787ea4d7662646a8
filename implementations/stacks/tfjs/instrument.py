"""tfjs's instrument: a context around the very call that is checked (`block.vjp`), giving a
`Record`. Its hooks run in the child (`instrument.js`); this module asks for them and reads
the answer. Imports numpy and the process protocol's Python side.

- **Saved:** the tensors the nodes of tfjs's one tape hold at the end of the forward pass
  (`engine().state.activeTape`, read inside `tf.grads` when the differentiated function
  returns), one per tensor datum, x and the parameters marked by their data. Memory space:
  `device`, the CPU backend's memory (tfjs has no other to offload to). tfjs's `Add` gradient
  keeps both inputs (for their shapes), so a plain block keeps five units: x, x @ W1, h,
  relu(h), relu(h) @ W2.
- **Matmuls:** the `BatchMatMul` kernels `tf.profile` sees, split where the differentiated
  function returns. **Evaluations, regions, reruns:** `block.js`'s notes (each block
  evaluation with the matmuls it ran; regions entered in the forward pass; region gradients
  run in the backward pass).
- **Peak:** not observable (`PEAK`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from implementations.measuring.record import Evaluation, NotObservable, Record
from implementations.process import ProtocolViolation
from implementations.process.wire import decode_saved

from . import block

INSTRUMENT = (
    "the child's tf.grads of the placed stack: the tape's saved tensors when the forward "
    "pass returns, tf.profile's BatchMatMul kernels per phase, block.js's notes"
)
METHODS = {
    "saved": "tensors the tape's nodes hold when the differentiated function returns",
    "evaluations": "block.js's block evaluations, by index, with the matmuls each ran",
    "forward_matmuls": "tf.profile's BatchMatMul kernels before the function returns",
    "backward_matmuls": "tf.profile's BatchMatMul kernels after the function returns",
    "regions": "regions block.js entered in the forward pass (tf.customGrad and inner)",
    "reruns": "region gradients block.js ran in the backward pass",
}
#: Why the peak is not a figure: what tfjs holds is what the step allocated.
PEAK = (
    "tfjs frees a step's intermediates only when its tf.tidy ends, so tf.profile's peakBytes "
    "is all the step allocated (6 to 624 times the model at L = 64), not what the backward "
    "pass needs"
)
#: Its peak is not split by batch either (`driver.split_peak`).
PEAK_NOT_SPLIT = PEAK
RECOMPUTED = "tfjs's tape names kernels, not the block's operations: its reruns are evaluations"


class Watch:
    """One watched call: the child's record (`block.vjp` fills it)."""

    def __init__(self):
        self.answer: dict[str, Any] = {}

    def update(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def record(self) -> Record:
        what = "tfjs-bench: the record of 'vjp'"
        found = self.answer
        if not found:
            raise ValueError("watch: no call of block.vjp was made under it")
        unseen = NotObservable(PEAK)
        try:
            evaluations = tuple(
                Evaluation(int(e["block"]), str(e["phase"]), tuple(e["ran"]))
                for e in found["evaluations"]
            )
            counts = {k: int(found[k]) for k in ("forward_matmuls", "backward_matmuls")}
            return Record(
                INSTRUMENT,
                METHODS,
                saved=decode_saved(found["saved"]),
                evaluations=evaluations,
                recomputed=NotObservable(RECOMPUTED),
                regions=int(found["regions"]),
                reruns=int(found["reruns"]),
                peak_bytes=unseen,
                peak_batch_bytes=unseen,
                peak_fixed_bytes=unseen,
                **counts,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolViolation(
                f"{what}: malformed ({type(error).__name__}: {error})"
            ) from None


@contextmanager
def watch(x: Any, params: Any) -> Iterator[Watch]:
    """Around one `block.vjp`: its record, read in the child."""
    seen = Watch()
    block.WATCHING.append(seen)
    try:
        yield seen
    finally:
        block.WATCHING.remove(seen)


class Peak:
    """The call's peak: not observable (`PEAK`)."""

    def record(self) -> Record:
        reason = NotObservable(PEAK)
        return Record(
            INSTRUMENT, {}, peak_bytes=reason, peak_batch_bytes=reason, peak_fixed_bytes=reason
        )


@contextmanager
def peak() -> Iterator[Peak]:
    """Around one call: its peak, which tfjs cannot show (`PEAK`)."""
    yield Peak()
