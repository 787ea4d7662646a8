"""The exercise's block in TensorFlow.js, and the one builder that places it over L blocks:
the Python side of a Node child (`bench.js`) that runs `block.js`, on tfjs's pure-JS CPU
backend. Imports numpy, the standard library and the process protocol's Python side.

- `from_numpy(array)`: the array kept in the child, as a `Tensor` (its id; `np.asarray` reads
  it back). `place(placement)`: the placement built in the child (`block.js`'s `place`: each
  outermost region a `tf.customGrad`, inner ones rerun by hand in its gradient).
  `vjp(run, params, x, cotangent, wrt)`: the call measured, in the child; y and the gradients
  stay there as `Tensor`s, so a timed call carries ids, not arrays.
- The child is `load.js`'s tfjs (the `npm ci` into `<REMAT_CACHE>/node/tfjs-<lock hash>` that
  the `tfjs` port's first start runs, or reuses); where it cannot start, importing this module
  raises `ImportError` with the reason (the bench then skips tfjs as it skips a framework that
  is not installed).

Declarations (`implementations.measuring.driver` reads them): `POLICIES` (save-mm written out:
tfjs has no policy API), what it cannot express and why (`NOT_EXPRESSIBLE`), and no
`DEPARTURES`: its counts are the model's, and its peak is not observable (`instrument`).
"""

from __future__ import annotations

import os
import shutil
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from implementations.measuring.placement import Placement
from implementations.process import ProcessPort, ProcessPortError, ProtocolViolation
from implementations.process.adapter import _timeout, expand_command
from implementations.process.wire import decode_array, encode_array, field
from implementations.schedules import Region

FRAMEWORK = "tfjs"
COMMAND = "node {implementations}/stacks/tfjs/bench.js"
#: Policy -> how a region runs it: save-mm is written out (block.js's `savingMatmul`).
POLICIES = {"save-mm": "x @ W1 outside a tf.customGrad region that reruns bias and relu"}
SAVE_MM_POLICY = "save-mm"
REGION = "a tf.customGrad keeping its input, inner regions rerun by hand in its gradient"
NOT_EXPRESSIBLE = {
    "save_dots": "tfjs has no remat policy API: tf.customGrad keeps what it is told to save()",
    "save_named": "tfjs cannot name a tensor for a policy: it has no policy API",
    "offload_dots": "tfjs has no host offload of saved tensors",
    "budget": "tfjs has no memory-budget solver: tf.customGrad takes no budget",
}
#: No schedule departs on its peak: tfjs's peak is not observable (`instrument.PEAK`).
DEPARTURES: dict[str, Any] = {}
#: What tfjs's gradients keep in a plain block beside the model's x and a, and why
#: (tfjs-core 4.22, src/gradients/): a departure in saved units (`saved_departure`).
KEPT_BY_PLAIN_BLOCK = {
    "x @ W1": "Add_grad.ts: the Add gradient saves both inputs, for their shapes (broadcast)",
    "h": "Relu_grad.ts: the Relu gradient saves its input x (dy * step(x))",
    "a @ W2": "Add_grad.ts: as above, for the second bias",
}


class _Child(ProcessPort):
    """The bench child: `ProcessPort`'s start, `hello` and containment, with its own requests;
    each request carries what the finalizers let go of since the last."""

    def __init__(self, *args: Any, **keywords: Any):
        self.released: list[int] = []  # tensor ids whose handles are gone
        self.programs: list[int] = []  # likewise, program ids
        super().__init__(*args, **keywords)

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        release = {"tensors": self.released[:], "programs": self.programs[:]}
        self.released.clear()
        self.programs.clear()
        return self._request(op, release=release, **arguments)


def _answer_timeout() -> float:
    # The port's 120 s is too short here: at the defaults a step of L = 32 takes about 2
    # minutes. REMAT_PROCESS_TIMEOUT still decides where it is set.
    return _timeout() if os.environ.get("REMAT_PROCESS_TIMEOUT", "").strip() else 1800.0


def _start() -> _Child:
    if shutil.which("node") is None:
        raise ImportError("Node.js is not installed: tfjs needs `node` (and npm) on PATH")
    try:
        return _Child("tfjs-bench", expand_command(COMMAND), timeout=_answer_timeout())
    except (ProcessPortError, ProtocolViolation) as error:
        raise ImportError(f"tfjs cannot run: {error}") from None


CHILD = _start()


class Tensor:
    """A float32 tensor kept in the child: its id and shape; `np.asarray` reads its values."""

    def __init__(self, tensor: int, shape: tuple[int, ...]):
        self.id, self.shape = tensor, shape
        weakref.finalize(self, CHILD.released.append, tensor).atexit = False

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        what = "tfjs-bench: the answer to 'read'"
        array = decode_array(field(CHILD.call("read", tensor=self.id), "array", what), what)
        return array if dtype is None else array.astype(dtype)


class Program:
    """A placement built in the child."""

    def __init__(self, program: int, placement: Placement):
        self.id, self.placement = program, placement
        weakref.finalize(self, CHILD.programs.append, program).atexit = False


def from_numpy(array: np.ndarray) -> Tensor:
    """The array, float32, kept in the child."""
    array = np.asarray(array, np.float32)
    answer = CHILD.call("tensor", array=encode_array(array))
    return Tensor(int(field(answer, "tensor", "tfjs-bench: the answer to 'tensor'")), array.shape)


def saved_departure(placement: Placement) -> int:
    """Units a placement keeps beyond the model's (a plain block's x and a, a region's input):
    `KEPT_BY_PLAIN_BLOCK` in every block outside a region (a region saves only its input)."""
    plain = sum(1 for item in placement.items if not isinstance(item, Region))
    return len(KEPT_BY_PLAIN_BLOCK) * plain


def _tree(items: tuple) -> list:
    """A placement as JSON: a block index as it is, a region as the array of its items."""
    return [_tree(item.items) if isinstance(item, Region) else int(item) for item in items]


def place(placement: Placement) -> Program:
    """The placement's blocks and regions, built in the child (4 parameters a block)."""
    policies = [placement.policy_of(n) for n, _ in enumerate(placement.regions())]
    wanted = sorted(set(policies) - {"", *POLICIES})
    if wanted:
        raise ValueError(
            f"placement: policy {wanted[0]!r} is not expressible in tfjs: "
            f"{NOT_EXPRESSIBLE.get(wanted[0], 'tfjs has no remat policy API')}"
        )
    answer = CHILD.call(
        "place", placement=_tree(placement.items), depth=placement.depth, policies=policies
    )
    return Program(int(field(answer, "program", "tfjs-bench: the answer to 'place'")), placement)


def call(
    run: Program, params: Sequence[Tensor], x: Tensor, cotangent: Tensor, wrt: str, watch: bool
) -> dict[str, Any]:
    """The child's answer to one `vjp`: ids of y and the gradients, and the record if watched."""
    if wrt not in ("params", "x"):
        raise ValueError(f"wrt must be 'params' or 'x', got {wrt!r}")
    return CHILD.call(
        "vjp",
        program=run.id,
        params=[p.id for p in params],
        x=x.id,
        cotangent=cotangent.id,
        wrt=wrt,
        watch=watch,
    )


#: The instrument's hook: where a watched call's record goes (`instrument.watch` sets it).
WATCHING: list[dict[str, Any]] = []


def vjp(
    run: Program, params: Sequence[Tensor], x: Tensor, cotangent: Tensor, wrt: str
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """`(y, gradients)` of the placed stack with respect to the parameters (`wrt="params"`) or
    x (`wrt="x"`), the cotangent pulled back: the call measured, run in the child."""
    answer = call(run, params, x, cotangent, wrt, watch=bool(WATCHING))
    what = "tfjs-bench: the answer to 'vjp'"
    try:
        y = Tensor(int(field(answer, "y", what)), x.shape)
        shapes = [p.shape for p in params] if wrt == "params" else [x.shape]
        ids = [int(g) for g in field(answer, "grads", what)]
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolViolation(f"{what}: malformed ({type(error).__name__}: {error})") from None
    if len(ids) != len(shapes):
        raise ProtocolViolation(f"{what}: {len(ids)} gradients for {len(shapes)} arguments")
    for watch in WATCHING:
        watch.update(field(answer, "record", what) or {})
    return y, tuple(Tensor(g, s) for g, s in zip(ids, shapes, strict=True))


def versions() -> dict[str, str]:
    """tfjs's version, Node's, and the backend, as the child reports them."""
    found = field(CHILD.hello, "versions", "tfjs-bench: the answer to 'hello'")
    return {str(k): str(v) for k, v in found.items()}
