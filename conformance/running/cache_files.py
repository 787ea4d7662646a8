"""The bank's file format: data only, checked before it is believed.

A cache directory may be shared, restored from another machine's CI cache,
or written by anyone, so a file in it is never code: no pickle. A value is
split into JSON (its structure, every scalar exactly) and numpy arrays.
An entry (`<key>.entry`) is three parts, one after the other:

1. the sha256 of parts 2 and 3, in hex, and a newline: checked before
   anything else is read, so a flipped bit anywhere in the file is found
   (a zip's own CRC misses flips in its headers, and a file of wrong but
   well-formed numbers would be believed);
2. one line of JSON: the format, the entry's key (a hash of the code and
   versions that made it, `conformance.running.example_bank`), the encoded value, and where
   each of its arrays lies in part 3;
3. the value's arrays, flattened into one array per dtype, each in numpy's
   `.npy` format: read with numpy's header parser, an object dtype refused
   (what `np.load(allow_pickle=False)` does), the data a view of the file's
   bytes (as fast as the pickles were; an `.npz` was 20-50 times slower).

The encoding is explicit and lossless: floats by their IEEE bits (-0.0,
subnormals, infinities and NaN payloads survive), ints of any size,
tuples as tuples, numpy scalars with their dtype, and only the dataclasses
named in `_CLASSES`, rebuilt field by field (as pickle did, without running
their `__init__`). Anything else cannot be written (`CacheFileError`), so
the value is used uncached rather than stored wrongly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from implementations.contract import Grads, Params

from ..checking import precision, strategies, tolerance

FORMAT = 1


class CacheFileError(Exception):
    """A file that is not a valid, verified entry, or a value this format cannot hold."""


def _classes() -> dict[str, type]:
    # Imported here: this module is imported by the bank before the strategies exist.
    found = [
        Params,
        Grads,
        strategies.SeededForwardCase,
        strategies.ParamCase,
        strategies.PrecisionCase,
        strategies.StateCase,
        tolerance.ForwardAnalysis,
        tolerance.VJPAnalysis,
        precision.Scales,
        precision.Reference,
        precision.Result,
    ]
    return {f"{c.__module__}.{c.__qualname__}": c for c in found}


_CLASSES: dict[str, type] = {}


def classes() -> dict[str, type]:
    """The dataclasses a cache file may hold, by qualified name."""
    if not _CLASSES:
        _CLASSES.update(_classes())
    return _CLASSES


# ---------------------------------------------------------------------------
# Values <-> (JSON, arrays)
# ---------------------------------------------------------------------------


def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """`value` as JSON-able data; its arrays are appended to `arrays` and named by index."""
    if isinstance(value, np.generic):  # first: np.float64 is a float, and must stay numpy's
        return {"scalar": encode(np.asarray(value), arrays)}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):  # after bool; JSON would hold it, but say what it is
        return {"int": str(value)}
    if isinstance(value, float):
        return {"float": struct.pack("<d", value).hex()}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.dtype.fields is not None:
            raise CacheFileError(f"an array of dtype {value.dtype} is not data")
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        if classes().get(name) is not type(value):
            raise CacheFileError(f"{name} is not a class the cache may hold")
        fields = {f.name: encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}
        return {"class": name, "fields": fields}
    raise CacheFileError(f"a {type(value).__name__} cannot be kept in the cache")


def decode(data: Any, arrays: list[np.ndarray]) -> Any:
    """The value `encode` made `data` from."""
    if data is None or isinstance(data, (bool, str)):
        return data
    if not isinstance(data, dict) or not data:
        raise CacheFileError(f"unexpected {type(data).__name__} in the file's structure")
    tag = next(iter(data))
    decoders: dict[str, Callable[[Any], Any]] = {
        "int": lambda text: int(text),
        "float": lambda text: struct.unpack("<d", bytes.fromhex(text))[0],
        "array": lambda index: arrays[index],
        "scalar": lambda inner: decode(inner, arrays)[()],
        "tuple": lambda items: tuple(decode(v, arrays) for v in items),
        "list": lambda items: [decode(v, arrays) for v in items],
        "dict": lambda items: {decode(k, arrays): decode(v, arrays) for k, v in items},
        "class": lambda name: _rebuild(name, data.get("fields"), arrays),
    }
    if tag not in decoders:
        raise CacheFileError(f"unknown tag {tag!r} in the file's structure")
    try:
        return decoders[tag](data[tag])
    except CacheFileError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, struct.error) as error:
        raise CacheFileError(f"malformed {tag!r} entry: {error}") from error


def _rebuild(name: str, fields: Any, arrays: list[np.ndarray]) -> Any:
    cls = classes().get(name)
    if cls is None:
        raise CacheFileError(f"{name!r} is not a class the cache may hold")
    expected = {f.name for f in dataclasses.fields(cls)}
    if not isinstance(fields, dict) or set(fields) != expected:
        raise CacheFileError(f"{name}: fields {sorted(fields or ())} are not {sorted(expected)}")
    instance = object.__new__(cls)  # as pickle did: the fields as they were, no __init__
    for key, value in fields.items():
        object.__setattr__(instance, key, decode(value, arrays))
    return instance


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def fingerprint(value: Any) -> bytes:
    """A digest of `value`'s exact content (for keys that depend on a value)."""
    arrays: list[np.ndarray] = []
    meta = json.dumps(encode(value, arrays), separators=(",", ":")).encode()
    return _checksum(meta, arrays).encode()


def dump(file, key: str, value: Any) -> None:
    """Write `value` to the binary `file` as an entry for `key`."""
    arrays: list[np.ndarray] = []
    structure = encode(value, arrays)
    blobs, groups, layout = _grouped(arrays)
    header = {"format": FORMAT, "key": key, "groups": groups, "arrays": layout}
    header["value"] = structure
    chunks = [json.dumps(header).encode(), b"\n", *blobs]
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    file.write(digest.hexdigest().encode() + b"\n")
    file.writelines(chunks)


def load(data: bytes | bytearray, key: str) -> Any:
    """The value in an entry's bytes, if they verify and were made for `key`.

    The arrays are views of `data` (a bytearray gives writable ones): no copy.
    """
    view = memoryview(data)
    first = data.find(b"\n")
    if first != 64 or hashlib.sha256(view[65:]).hexdigest().encode() != bytes(view[:64]):
        raise CacheFileError("its checksum does not match its content")
    second = data.find(b"\n", 65)
    try:
        header = json.loads(bytes(view[65:second]))
    except ValueError as error:
        raise CacheFileError(f"its metadata is not JSON: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key:
        raise CacheFileError("it was made by other code (its key or format differs)")
    region = view[second + 1 :]
    groups = [_group(region, start) for start in _listed(header.get("groups"))]
    return decode(header.get("value"), _ungrouped(groups, header.get("arrays")))


def _grouped(arrays: list[np.ndarray]) -> tuple[list, list[int], list[list]]:
    """The arrays as one flat `.npy` per dtype, where each starts, and where each array lies.

    A bank entry holds thousands of small arrays: an `.npz` member each (or
    even one per dtype, through `zipfile`) made reading it 20-50 times
    slower than a pickle. The parts are written as they are, uncopied.
    """
    parts: dict[str, list[np.ndarray]] = {}
    sizes: dict[str, int] = {}
    layout = []
    for array in arrays:
        code = array.dtype.str
        if code not in parts:
            parts[code], sizes[code] = [], 0
        layout.append([list(parts).index(code), sizes[code], list(array.shape)])
        parts[code].append(np.ascontiguousarray(array).reshape(-1))
        sizes[code] += array.size
    blobs: list = []
    starts, position = [], 0
    for code, group in parts.items():
        header = io.BytesIO()
        fields = {"descr": np.lib.format.dtype_to_descr(np.dtype(code))}
        fields |= {"fortran_order": False, "shape": (sizes[code],)}
        np.lib.format.write_array_header_1_0(header, fields)
        starts.append(position)
        for blob in (header.getvalue(), *(part.data for part in group)):
            blobs.append(blob)
            position += blob.nbytes if isinstance(blob, memoryview) else len(blob)
    return blobs, starts, layout


def _listed(value: Any) -> list:
    if not isinstance(value, list):
        raise CacheFileError(f"expected a list in the file's header, got {type(value).__name__}")
    return value


def _group(region: memoryview, start: Any) -> np.ndarray:
    """The 1-D array whose `.npy` starts at `start`: numpy's header, object dtypes refused
    (as `np.load(allow_pickle=False)` does), the data a view of `region`."""
    try:
        head = io.BytesIO(bytes(region[start : start + 4096]))
        version = np.lib.format.read_magic(head)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0}.get(version)
        if read_header is None:
            raise CacheFileError(f"an .npy of version {version}")
        shape, fortran, dtype = read_header(head)
        if dtype.hasobject or fortran or len(shape) != 1:
            raise CacheFileError(f"an array of dtype {dtype}, shape {shape} is not data")
        offset = start + head.tell()
        if offset + shape[0] * dtype.itemsize > region.nbytes:
            raise CacheFileError("an array past the end of the file")
        return np.frombuffer(region, dtype, shape[0], offset)
    except CacheFileError:
        raise
    except (TypeError, ValueError, IndexError, OSError, SyntaxError) as error:
        raise CacheFileError(f"an unreadable array ({type(error).__name__}: {error})") from error


def _ungrouped(groups: list[np.ndarray], layout: Any) -> list[np.ndarray]:
    arrays = []
    try:
        for group, offset, shape in _listed(layout):
            size = int(np.prod(shape, dtype=np.int64))
            if not 0 <= offset <= groups[group].size - size:
                raise CacheFileError(f"an array past the end of its group {group}")
            arrays.append(groups[group][offset : offset + size].reshape(shape))
    except CacheFileError:
        raise
    except (TypeError, ValueError, IndexError) as error:
        raise CacheFileError(f"malformed array layout: {error}") from error
    return arrays


def _checksum(meta: bytes, arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256(meta)
    for array in arrays:
        digest.update(f"\0{array.dtype.str}{array.shape}\0".encode())
        # The bytes in C order; a contiguous array's own buffer, without a copy.
        digest.update(array.data if array.flags.c_contiguous else array.tobytes())
    return digest.hexdigest()
