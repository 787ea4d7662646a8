"""(e) The framework's own instrument shows the checkpoint on the grad path."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import strategies as st

from implementations.contract import BackwardRecord, Implementation, Params
from implementations.stacks.numpy import canonical_params

from .. import strategies
from ..checks import fail
from .schema import on_port
from .shared import SHAPE_BOUND_SHARE, record_of
from .spec import Property


def _expect_checkpointed(port: str, what: str, record: BackwardRecord) -> None:
    activations = record.saved_by_origin("activation")
    if activations:
        listed = ", ".join(f"{t.shape} {t.dtype} ({t.note})" for t in activations)
        fail(port, what, f"saves {len(activations)} activation(s) for backward: {listed}")
    if record.recomputed_count == 0:
        fail(port, what, "the backward pass recomputes nothing: no checkpoint on the grad path")
    if record.checkpoint_regions is not None and record.checkpoint_regions < 1:
        fail(port, what, f"{record.instrument} finds no checkpoint region")


def check_evidence(port: Implementation, reference: None, case) -> None:
    """(e) The framework's own instrument shows the checkpoint on the grad path."""
    param_case, seed = case
    params, x = param_case.params, param_case.x
    on = record_of(port, "backward_record", port.backward_record(params, x, checkpoint=True))
    _expect_checkpointed(port.name, "VJP with checkpoint on", on)

    off = record_of(port, "backward_record", port.backward_record(params, x, checkpoint=False))
    if not off.saved_by_origin("activation"):
        fail(
            port.name,
            "VJP with checkpoint off",
            "saves no activation: the instrument proves nothing",
        )
    if off.recomputed_count:
        fail(port.name, "VJP with checkpoint off", f"recomputes {dict(off.recomputed)}")
    if off.checkpoint_regions:
        fail(
            port.name,
            "VJP with checkpoint off",
            f"has {off.checkpoint_regions} checkpoint region(s)",
        )

    exercise = record_of(port, "exercise_record", port.exercise_record(seed, x, params.features))
    _expect_checkpointed(port.name, "grad of nn_checkpoint_forward", exercise)
    if hasattr(port, "rank_records"):  # a sharded port: each rank's own evidence too
        _check_ranks(port, params, x)


#: The least width of the rank evidence's shapes: XLA turns a matmul that contracts one
#: element into a multiply, which would hide a rerun matmul from the count.
RANK_EVIDENCE_MIN_WIDTH = 8


def _check_ranks(port: Implementation, params: Params, x: np.ndarray) -> None:
    """(e) on a sharded port (`implementations.sharding`), in each of its layouts, on a batch
    of 2N rows (D and F at least `RANK_EVIDENCE_MIN_WIDTH`, F a multiple of N so that every
    shard is whole): every rank keeps x's shard only, at most 1/N of what the port keeps of
    the same batch unsharded (its own record of one example, times the rows) where the layout
    splits x, and reruns forward matmuls that it does not run without the checkpoint."""
    ranks = int(port.ranks)
    dim = max(params.dim, RANK_EVIDENCE_MIN_WIDTH)
    features = -(-max(params.features, RANK_EVIDENCE_MIN_WIDTH) // ranks) * ranks
    shaped = canonical_params(0, dim, features)
    x = np.resize(x, dim).astype(np.float32)
    single = record_of(port, "backward_record", port.backward_record(shaped, x, checkpoint=False))
    batch = np.stack([x * (1 + i / (2 * ranks)) for i in range(2 * ranks)]).astype(np.float32)
    unsharded = len(batch) * single.saved_bytes
    for layout in port.layouts:
        on = port.rank_records(shaped, batch, layout, checkpoint=True)
        off = port.rank_records(shaped, batch, layout, checkpoint=False)
        what = f"rank evidence, {layout} layout, {ranks} ranks"
        if len(on) != ranks or len(off) != ranks:
            fail(port.name, what, f"records for {len(on)} and {len(off)} ranks, not {ranks}")
        for with_, without in zip(on, off, strict=True):
            # The rank, with its node and its process where the record says them.
            where = f"{what}, {getattr(with_, 'where', f'rank {with_.rank}')}"
            if with_.kept_bytes != with_.x_shard_bytes:
                fail(
                    port.name, where,
                    f"keeps {with_.kept_bytes} bytes with the checkpoint "
                    f"({with_.activation_bytes} of activations); x's shard is "
                    f"{with_.x_shard_bytes}",
                )  # fmt: skip
            if layout == "batch" and with_.kept_bytes * ranks > unsharded:
                fail(
                    port.name, where,
                    f"keeps {with_.kept_bytes} bytes, more than 1/{ranks} of the "
                    f"{unsharded} the unsharded VJP keeps of the same batch",
                )  # fmt: skip
            if without.activation_bytes <= 0:
                fail(port.name, where, "keeps no activation without the checkpoint: "
                     "the instrument proves nothing")  # fmt: skip
            if not with_.backward_ops or with_.backward_matmuls <= without.backward_matmuls:
                fail(
                    port.name, where,
                    f"backward reruns {with_.backward_ops or 'nothing'} and runs "
                    f"{with_.backward_matmuls} matmuls, {without.backward_matmuls} without "
                    "the checkpoint: no recomputation on this rank",
                )  # fmt: skip
            if without.backward_ops:
                fail(port.name, where, f"reruns {without.backward_ops} without the checkpoint")


def _evidence_cases(scope: str) -> st.SearchStrategy:
    return st.tuples(strategies.param_cases(scope), strategies.seeds())


#: What (e) reads beyond the contract: a sharded port's own evidence, per rank.
READS = (
    on_port("rank_records", Callable,
            "a sharded port's records of each rank (params, batch, layout, checkpoint) -> "
            "one RankRecord a rank (implementations.sharding)"),
    on_port("ranks", int, "a sharded port's ranks"),
    on_port("layouts", Sequence[str], "a sharded port's layouts, each checked"),
)  # fmt: skip


#: A stack's mutant that declares `killed_by="e"` in its manifest (`MutantEntry`) must be
#: rejected by this property alone (`conformance.mutants` hunts it so); here, only the
#: suite's own mutants it must kill: none.
MUTANTS: tuple[str, ...] = ()

PROPERTY = Property(
    "e", "evidence", "the framework's instrument shows the checkpoint", check_evidence,
    strategy=_evidence_cases, needs_canonical=False, share=SHAPE_BOUND_SHARE, cost=30,
    reads=READS, mutants=MUTANTS,
)  # fmt: skip
