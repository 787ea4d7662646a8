"""The bank's files are data: an exact encoding, a checksum over every bit, and no pickle."""

from __future__ import annotations

import io
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from conformance.checking.properties import PROPERTIES
from conformance.checking.strategies import ParamCase, PrecisionCase, SeededForwardCase
from conformance.running import cache_files, environment, example_bank, profiles
from implementations.contract import Params
from tests.support.helpers import assert_identical, port_or_skip


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(environment, "_WARNED", set())
    profiles.load("ci")


@pytest.fixture
def warnings(monkeypatch):
    """The cache warnings said during the test, as (text, key)."""
    said: list[tuple[str, str]] = []
    monkeypatch.setattr(environment, "_WARNING_SINKS", [lambda text, key: said.append((text, key))])
    return said


def round_trip(value, key="k"):
    file = io.BytesIO()
    cache_files.dump(file, key, value)
    return cache_files.load(file.getvalue(), key)


def float_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def params(dim=3, features=2) -> Params:
    rng = np.random.default_rng(0)
    shapes = {"w1": (dim, features), "b1": (features,), "w2": (features, features)}
    arrays = {name: rng.normal(size=shape) for name, shape in shapes.items()}
    return Params(**arrays, b2=np.array([-0.0, 1e-45][:features]))


EDGE_FLOATS = [
    -0.0,
    0.0,
    5e-324,  # the smallest subnormal
    2.2250738585072014e-308 / 3,  # a subnormal
    1.7976931348623157e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    float_from_bits(0x7FF0000000000001),  # a signalling NaN's payload
    float_from_bits(0xFFF8000000000123),  # a negative quiet NaN with a payload
]
EDGE_INTS = [0, -1, 2**63 - 1, 2**63, 2**64 + 1, -(2**100), 10**40]


def test_every_scalar_and_container_comes_back_exactly():
    value = {
        "floats": EDGE_FLOATS,
        "ints": tuple(EDGE_INTS),
        "flags": [True, False, None],
        "text": 'ünïcode \n "quoted"',
        3: "an int key",
        (1, -0.0): "a tuple key",
        "numpy scalars": [np.float32(-0.0), np.float64(5e-324), np.int64(-5), np.uint64(2**64 - 1)],
        "numpy bool": np.bool_(True),
        "nested": ((), [], {}, [[(1,)]]),
    }
    assert_identical(round_trip(value), value)


@pytest.mark.parametrize(
    "array",
    [
        np.array([-0.0, 1e-45, np.nan, np.inf, -np.inf, 3.4e38], np.float32),
        np.array([5e-324, -0.0, float_from_bits(0x7FF0000000000001)], np.float64),
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64),
        np.array([True, False]),
        np.array(2.5, np.float32),  # 0-d
        np.zeros((0, 3), np.float32),
        np.arange(12, dtype=np.float16).reshape(3, 4),
        np.arange(20, dtype=np.float32)[::3],  # not contiguous
        np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
        np.array([1 + 2j], np.complex64),
    ],
    ids=lambda a: f"{a.dtype}{a.shape}",
)
def test_arrays_come_back_with_their_dtype_shape_and_bits(array):
    assert_identical(round_trip([array]), [array])


def test_the_suite_s_dataclasses_come_back_field_by_field():
    x = np.array([1.0, -0.0, 1e-45], np.float32)
    value = [
        SeededForwardCase(seed=2**63 - 1, x=x, features=3),
        SeededForwardCase(seed=float(2**40), x=x, features=1),
        ParamCase(params=params(), x=x, cotangent=np.array([np.nan, 2.0], np.float32)),
        PrecisionCase(dim=4, features=3, x_kind="normal", param_kind="normal", data_seed=7, seed=9),
    ]
    back = round_trip(value)
    assert_identical(back, value)
    # The precision case keeps a few numbers and remakes its arrays from them.
    assert_identical(back[3].params.as_dict(), value[3].params.as_dict())
    assert_identical(back[3].x, value[3].x)


def test_every_value_the_bank_keeps_comes_back_exactly():
    """Every property's cases, and the canonical side of a few, as they really are made."""
    canonical = port_or_skip("flax_linen")
    from conformance.running.runner import prepare

    checked = 0
    for prop in PROPERTIES:
        if prop.cases is not None:
            continue  # a fixed list, never banked
        cases = example_bank.cases(prop, "menu", 3)
        assert_identical(round_trip(cases), cases, f"{prop.key} cases")
        if prop.prepare is not None:
            references = [prepare(prop, canonical, case) for case in cases]
            assert_identical(round_trip(references), references, f"{prop.key} references")
            checked += 1
    assert checked >= 5  # init, forward, vjp, on/off, end to end, precision


def test_a_value_the_format_cannot_hold_is_refused_not_stored():
    class Unknown:
        pass

    for value in (Unknown(), {1, 2}, np.array([object()], dtype=object), b"bytes"):
        with pytest.raises(cache_files.CacheFileError):
            cache_files.dump(io.BytesIO(), "k", value)


def forged(structure, key="k", groups=(), layout=()) -> bytes:
    """An entry with a valid checksum around anything (what an attacker can write):
    `groups` saved with `np.save`, which pickles an object array after its header."""
    import hashlib
    import json

    region, starts = io.BytesIO(), []
    for group in groups:
        starts.append(region.tell())
        np.save(region, group, allow_pickle=True)
    header = {"format": cache_files.FORMAT, "key": key, "groups": starts, "arrays": list(layout)}
    body = json.dumps(header | {"value": structure}).encode() + b"\n" + region.getvalue()
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def test_a_forged_entry_builds_no_class_outside_the_list(tmp_path):
    marker = tmp_path / "ran"
    for structure in (
        {"class": "os.system", "fields": {}},
        {"class": "subprocess.Popen", "fields": {"args": f"touch {marker}"}},
        {"class": "implementations.contract.Params", "fields": {"w1": {"int": "1"}}},
        {"unknown": 1},
        {"array": 5},
        [1, 2],
    ):
        with pytest.raises(cache_files.CacheFileError):
            cache_files.load(forged(structure), "k")
    for layout in ([[0, 2, [2]]], [[1, 0, [1]]], [[0, -1, [1]]], [["0", 0, [1]]], {"a": 1}):
        group = [np.arange(3, dtype=np.float32)]
        with pytest.raises(cache_files.CacheFileError):
            cache_files.load(forged({"array": 0}, "k", group, layout), "k")
    assert not marker.exists()
    # The forgeries above fail for what they hold: a well-formed one loads.
    good = forged({"array": 0}, "k", [np.arange(3, dtype=np.float32)], [[0, 0, [3]]])
    assert_identical(cache_files.load(good, "k"), np.arange(3, dtype=np.float32))


def test_an_entry_for_another_key_is_not_believed():
    file = io.BytesIO()
    cache_files.dump(file, "made for this", [1.0])
    with pytest.raises(cache_files.CacheFileError, match="key"):
        cache_files.load(file.getvalue(), "asked for that")


def test_every_flipped_bit_and_every_truncation_is_found():
    value = [SeededForwardCase(seed=3, x=np.array([1.0, -0.0], np.float32), features=2), 2.5]
    file = io.BytesIO()
    cache_files.dump(file, "k", value)
    data = file.getvalue()
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 1 << (position % 8)
        with pytest.raises(cache_files.CacheFileError):
            cache_files.load(bytes(flipped), "k")
    for length in range(0, len(data), 7):
        with pytest.raises(cache_files.CacheFileError):
            cache_files.load(data[:length], "k")


class Payload:
    """Unpickling it runs a shell command that makes the marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def the_entry(prop_key="b_forward") -> tuple[list, Path]:
    from conformance.checking.properties import BY_KEY

    cases = example_bank.cases(BY_KEY[prop_key], "menu", 4)
    (path,) = (environment.cache_root() / "examples").glob("*.entry")
    return cases, path


def test_the_payload_does_run_when_unpickled(tmp_path):
    """The check below is only worth something if the payload works: it does."""
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(Payload(marker)))
    assert marker.exists()


@pytest.mark.parametrize("form", ["raw pickle", "pickle in an .npy", "old .pickle file"])
def test_a_planted_pickle_runs_no_code_and_is_replaced(tmp_path, warnings, form):
    marker = tmp_path / "ran"
    cases, path = the_entry()
    key = path.stem
    if form == "raw pickle":
        path.write_bytes(pickle.dumps(Payload(marker)))
    elif form == "pickle in an .npy":  # a valid checksum, the pickle inside an object array
        groups = [np.array([Payload(marker)], dtype=object)]
        path.write_bytes(forged({"array": 0}, key, groups, [[0, 0, [1]]]))
    else:
        path.unlink()
        path.with_suffix(".pickle").write_bytes(pickle.dumps(Payload(marker)))
    again, _ = the_entry()
    assert not marker.exists()
    assert_identical(again, cases)
    assert cache_files.load(path.read_bytes(), key) is not None  # rebuilt, and it verifies
    if form != "old .pickle file":  # that one is simply never read
        assert len(warnings) == 1
        assert "does not verify" in warnings[0][0]


def test_a_flipped_bit_in_a_bank_file_is_found_and_the_entry_rebuilt(warnings):
    cases, path = the_entry()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # in the arrays
    path.write_bytes(bytes(data))
    again, _ = the_entry()
    assert_identical(again, cases)
    assert [text for text, _ in warnings if "does not verify" in text] == [warnings[0][0]]
    assert len(warnings) == 1
    assert_identical(cache_files.load(path.read_bytes(), path.stem), cases)


def test_no_module_of_the_package_reads_or_writes_pickles():
    import re

    uses = re.compile(
        r"\bimport (c?pickle|dill|cloudpickle|shelve|joblib)\b|\bpickle\.\w+\(|allow_pickle=True"
    )
    package = Path(cache_files.__file__).parent
    users = [p.name for p in package.rglob("*.py") if uses.search(p.read_text())]
    assert users == []
