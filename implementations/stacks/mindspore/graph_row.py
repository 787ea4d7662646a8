"""MindSpore in graph mode as a row of `compare` (`mindspore_graph`; its manifest's `rows`).

The `mindspore` port runs PyNative. Graph mode (`GRAPH_MODE`) is
process-global, so `compare` measures this row in a process of its own:
the stack's `MLP` compiled whole (`graph.GraphMLP`), held to the canonical
results as every row is. It answers the calls a row needs, in the
contract's terms (numpy in and out): `forward`, `vjp`,
`nn_checkpoint_forward` (the numpy init, as the PyNative port), and
`backward_record`, read off the IR after MindSpore's `add_recomputation`
pass (`graph.ir_evidence`), with the op counts in the instrument's text;
where the IR is missing it raises `graph.IRMissing`, never reports zeros.
It expresses no policy of its own: compare's policy matrix leaves it out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from implementations.contract import BackwardRecord, Grads, Params, check_features, check_seed

from . import arrays, graph
from .loaded import ms
from .mlp import MLP


class GraphRow:
    """The graph-mode row: one compiled `GraphMLP` per checkpoint setting and shape."""

    name = "mindspore_graph"
    framework = "mindspore"
    #: Not a suite port: compare shows no policy cells for it.
    policy_cells = False
    #: The model class it compiles (a mutant's, to show what the instrument sees of it).
    mlp: type = MLP

    def __init__(self):
        graph.enter()
        self._models: dict[tuple[bool, int, int], graph.GraphMLP] = {}

    def versions(self) -> dict[str, str]:
        return {"mindspore": ms.__version__}

    def pin_matmul_precision(self) -> None:
        arrays.pin_matmul_precision()

    def matmul_precision(self) -> dict[str, str]:
        return {**arrays.matmul_precision(), "mode": "GRAPH_MODE"}

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return array

    def _model(self, params: Params, checkpoint: bool) -> graph.GraphMLP:
        """The compiled model for these shapes (compiled on first use), holding `params`."""
        key = (bool(checkpoint), params.dim, params.features)
        if key not in self._models:
            self._models[key] = graph.GraphMLP(params, checkpoint=bool(checkpoint), mlp=self.mlp)
        model = self._models[key]
        model.load(params)
        return model

    def forward(self, params: Params, x: np.ndarray, *, checkpoint: Any = True) -> np.ndarray:
        return self._model(params, checkpoint).forward(x)

    def vjp(
        self, params: Params, x: np.ndarray, cotangent: np.ndarray, *, checkpoint: Any = True
    ) -> Grads:
        _, grads = self._model(params, checkpoint).vjp(x, cotangent)
        return Grads(**grads)

    def nn_checkpoint_forward(self, seed: Any, x: Any, features: Any) -> np.ndarray:
        """The exercise: the numpy init for `seed`, the compiled model applied to x."""
        seed, features = check_seed(seed), check_features(features)
        params = graph.canonical_params(seed, np.shape(x)[0], features)
        return self.forward(params, x)

    def backward_record(self, params: Params, x: np.ndarray, *, checkpoint: Any = True):
        """What the IR shows, checkpoint off or on; the op counts in the instrument's text."""
        ones = np.ones(params.features, np.float32)
        evidence = graph.ir_evidence(params, x, ones, checkpoint=bool(checkpoint), mlp=self.mlp)
        record: BackwardRecord = evidence.record()

        def ops(counts: dict[str, int]) -> str:
            return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())) or "none"

        instrument = (
            f"{record.instrument}; forward ops: {ops(evidence.forward)}; "
            f"backward ops: {ops(evidence.backward)}"
        )
        return dataclasses.replace(record, instrument=instrument)
