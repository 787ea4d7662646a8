"""Golden vectors: the canonical port's answers, saved, so a port can be checked without JAX.

`export` runs the canonical port on a fixed set of cases and writes
`PATH.npz` (the arrays) and `PATH.json` (the manifest: what each vector
holds, the versions that made it, the npz file's SHA-256). `check` holds
any port to those answers with the same tolerance model as the suite, and
needs only numpy and the port's own framework.

A "seeded" vector holds seed, x, features, the canonical init, the
canonical output of `nn_checkpoint_forward`, a cotangent and the VJP with
respect to every parameter and x. A "general" vector holds random
parameters with non-zero biases instead of a seed, its output and its VJP.
Each also stores its bounds, so that a consumer in another language need
not redo the error analysis.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from implementations.contract import PARAM_NAMES, Implementation, Params

from .. import outputs
from .checks import ConformanceError, within, within_ulps
from .tolerance import INIT_ULPS, forward_bound, vjp_bounds, vjp_comparison

FORMAT = "remat-conformance-vectors"
VERSION = 1
GRAD_NAMES = (*PARAM_NAMES, "x")


def committed_manifest() -> Path:
    """The manifest of the vectors shipped in `conformance/vectors/`."""
    return Path(str(resources.files("conformance") / "vectors" / "golden.json"))


@dataclass(frozen=True)
class Spec:
    """One vector to make: a seed (None for general parameters), a shape and a kind of x."""

    seed: int | None
    dim: int
    features: int
    x_kind: str
    seed_as_float: bool = False


# Seeds from every region of the range, x at its corners, and shapes from the
# suite's menu (already compiled in a run) plus one long dot product (D = 300).
SPECS = (
    Spec(0, 1, 1, "normal"),
    Spec(1, 3, 4, "normal"),
    Spec(42, 16, 16, "normal"),
    Spec(12345, 3, 4, "integers", seed_as_float=True),
    Spec(2**31 - 1, 3, 4, "signed_zeros"),
    Spec(2**31, 16, 16, "normal"),
    Spec(2**32 - 1, 1, 1, "subnormal"),
    Spec(2**32, 33, 7, "normal"),
    Spec(2**32 + 1, 16, 16, "tiny"),
    Spec(2**40 + 7, 16, 16, "large", seed_as_float=True),
    Spec(2**53 + 1, 3, 4, "zeros"),
    Spec(2**62 + 3, 33, 7, "mixed"),
    Spec(2**63 - 1, 300, 8, "normal"),
    Spec(7, 300, 8, "mixed"),
    Spec(None, 3, 4, "normal"),
    Spec(None, 16, 16, "mixed"),
    Spec(None, 33, 7, "integers"),
    Spec(None, 300, 8, "normal"),
)


def _x(kind: str, dim: int, rng: np.random.Generator) -> np.ndarray:
    tiny = np.finfo(np.float32).tiny
    makers = {
        "normal": lambda: rng.normal(size=dim),
        "integers": lambda: rng.integers(-1000, 1001, dim),
        "signed_zeros": lambda: np.where(rng.random(dim) < 0.5, 0.0, -0.0),
        "subnormal": lambda: rng.choice([-1, 1], dim) * rng.uniform(0.01, 0.99, dim) * tiny,
        "tiny": lambda: rng.normal(size=dim) * 1e-25,
        "large": lambda: rng.normal(size=dim) * 1e15,
        "zeros": lambda: np.zeros(dim),
        "mixed": lambda: rng.normal(size=dim) * 10.0 ** rng.integers(-20, 16, dim),
    }
    return np.asarray(makers[kind](), np.float32)


def _general_params(rng: np.random.Generator, dim: int, features: int) -> Params:
    signs = rng.choice([-1.0, 1.0], size=(2, features))
    b1, b2 = signs * (0.1 + np.abs(rng.normal(size=(2, features))))
    return Params(
        w1=rng.normal(size=(dim, features)) / np.sqrt(dim),
        b1=b1,
        w2=rng.normal(size=(features, features)) / np.sqrt(features),
        b2=b2,
    )


def export(canonical: Implementation, stem: Path, specs=SPECS) -> Path:
    """Write `stem.npz` and `stem.json` from the canonical port; return the manifest's path."""
    stem = Path(stem).with_suffix("")
    arrays: dict[str, np.ndarray] = {}
    entries = []
    for index, spec in enumerate(specs):
        rng = np.random.default_rng(index)
        x = _x(spec.x_kind, spec.dim, rng)
        cotangent = rng.normal(size=spec.features).astype(np.float32)
        if spec.seed is None:
            params = _general_params(rng, spec.dim, spec.features)
            output = canonical.forward(params, x, checkpoint=True)
            output_bound = forward_bound(params, x)
        else:
            seed = float(spec.seed) if spec.seed_as_float else spec.seed
            params = canonical.init_params(seed, spec.dim, spec.features)
            native = canonical.nn_checkpoint_forward(seed, canonical.from_numpy(x), spec.features)
            output = canonical.to_numpy(native)
            output_bound = forward_bound(params, x, param_ulps=INIT_ULPS)
        grads = canonical.vjp(params, x, cotangent, checkpoint=True).as_dict()
        bounds = vjp_bounds(params, x, cotangent)
        prefix = f"{index:03d}/"
        stored = {"x": x, "output": output, "output_bound": output_bound, "cotangent": cotangent}
        stored |= {f"param_{k}": v for k, v in params.as_dict().items()}
        stored |= {f"grad_{k}": v for k, v in grads.items()}
        stored |= {f"grad_bound_{k}": v for k, v in bounds.items()}
        arrays |= {prefix + key: np.asarray(value) for key, value in stored.items()}
        entries.append(
            {
                "id": index,
                "kind": "general" if spec.seed is None else "seeded",
                # A string too: JSON readers in some languages lose ints past 2**53.
                "seed": None if spec.seed is None else str(spec.seed),
                "seed_form": "float" if spec.seed_as_float else "int",
                "dim": spec.dim,
                "features": spec.features,
                "x_kind": spec.x_kind,
                "prefix": prefix,
            }
        )
    npz_path = stem.with_suffix(".npz")
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    with outputs.replacing(npz_path) as temporary, open(temporary, "wb") as file:
        np.savez_compressed(file, **arrays)  # whole or not at all
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "made_by": {"port": canonical.name, "versions": canonical.versions()},
        "npz": npz_path.name,
        "sha256": hashlib.sha256(npz_path.read_bytes()).hexdigest(),
        "tolerance": {
            "model": "conformance.tolerance: float32 forward error analysis, kink-aware VJP",
            "init_ulps": INIT_ULPS,
            "output_bound": "max |port - canonical| per element; seeded vectors allow "
            f"{INIT_ULPS} ulp of init difference",
        },
        "arrays": sorted({key.split("/", 1)[1] for key in arrays}),
        "vectors": entries,
    }
    manifest_path = stem.with_suffix(".json")
    outputs.write_text(manifest_path, json.dumps(manifest, indent=1) + "\n")
    return manifest_path


@dataclass
class VectorResult:
    """One check of one vector: passed, or the message saying what differed; `worst_ratio`
    its worst error/bound, a failure's too (None where none was measured: a crash)."""

    vector: int
    check: str
    passed: bool
    message: str = ""
    worst_ratio: float | None = None
    port: str = ""


def load(manifest_path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The manifest and its arrays, after checking the npz file's hash."""
    manifest = json.loads(Path(manifest_path).read_text())
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ValueError(f"{manifest_path}: not a {FORMAT} v{VERSION} manifest")
    npz_path = Path(manifest_path).parent / manifest["npz"]
    digest = hashlib.sha256(npz_path.read_bytes()).hexdigest()
    if digest != manifest["sha256"]:
        raise ValueError(f"{npz_path}: SHA-256 {digest} does not match the manifest's")
    with np.load(npz_path) as data:
        return manifest, {key: data[key] for key in data.files}


def check(port: Implementation, manifest_path: Path | None = None) -> list[VectorResult]:
    """Hold `port` to the vectors: init, end to end, forward and VJP from the stored params."""
    manifest, arrays = load(manifest_path or committed_manifest())
    results = []
    for entry in manifest["vectors"]:
        stored = {key: arrays[entry["prefix"] + key] for key in manifest["arrays"]}
        for name, run in _vector_checks(port, entry, stored).items():
            try:
                found = VectorResult(entry["id"], name, True, worst_ratio=run(), port=port.name)
            except ConformanceError as error:  # its ratio too: the worst figure includes it
                found = VectorResult(
                    entry["id"], name, False, str(error), error.worst_ratio, port.name
                )
            except Exception as error:  # a crash is a failure too
                found = VectorResult(entry["id"], name, False, f"raised {error!r}", port=port.name)
            results.append(found)
    return results


def _vector_checks(port: Implementation, entry: dict, stored: dict[str, np.ndarray]) -> dict:
    """The checks one vector supports, each a thunk returning its worst error/bound ratio."""
    params = Params(*(stored[f"param_{name}"] for name in PARAM_NAMES))
    x, cotangent, output, bound = (
        stored["x"],
        stored["cotangent"],
        stored["output"],
        stored["output_bound"],
    )

    def forward() -> float:
        return within(port.name, "forward output", port.forward(params, x), output, bound)

    def vjp() -> float:
        grads = port.vjp(params, x, cotangent).as_dict()
        reference = {k: stored[f"grad_{k}"] for k in GRAD_NAMES}
        comparison = vjp_comparison(params, x, cotangent, grads, reference)
        return max(
            within(port.name, f"VJP d/d{k}", grads[k], reference[k], bound, shift)
            for k, (shift, bound) in comparison.items()
        )

    checks = {"forward": forward, "vjp": vjp}
    if entry["kind"] != "seeded":
        return checks
    seed: int | float = int(entry["seed"])
    seed = float(seed) if entry["seed_form"] == "float" else seed
    dim, features = entry["dim"], entry["features"]

    def init() -> float:
        mine = port.init_params(seed, dim, features).as_dict()
        return max(
            within_ulps(port.name, f"init {k}", mine[k], getattr(params, k), INIT_ULPS)
            for k in PARAM_NAMES
        )

    def end_to_end() -> float:
        native = port.nn_checkpoint_forward(seed, port.from_numpy(x.copy()), features)
        return within(
            port.name, "nn_checkpoint_forward output", port.to_numpy(native), output, bound
        )

    return {"init": init, "end_to_end": end_to_end, **checks}
