"""docs/PROTOCOL.md's init recipe, executed as the document writes it, equals the numpy init.

The block between `<!-- init-recipe -->` and the end of its code fence is read here: its
constants (float32 bit patterns) and its steps, one operation per line. Each step runs over
every one of the 2**23 inputs of the erf-inverse step (a uniform from each 23-bit mantissa),
and the result is compared bit for bit with `implementations.stacks.numpy`'s truncated
normal, which is bit-exact to XLA. A step the document writes wrongly (the log1p grouping
that once read `((y*y2)*N)/D`) fails here by the element.
"""

from __future__ import annotations

import re

import numpy as np

from implementations.stacks.numpy.sampling import _truncated_normal_of_mantissa
from implementations.stacks.numpy.xla_math import _fma
from tests.support.helpers import ROOT

DOC = ROOT / "docs" / "PROTOCOL.md"
F32 = np.float32
_TINY = np.finfo(F32).tiny


def recipe() -> tuple[dict[str, np.float32], list[tuple[str, str, list[str]]]]:
    """The recipe's constants (name -> float32) and steps (target, operation, arguments)."""
    text = DOC.read_text()
    found = re.search(r"<!-- init-recipe -->\n```text\n(.*?)```", text, re.DOTALL)
    assert found, "docs/PROTOCOL.md has no init recipe block"
    constants, steps = {}, []
    for raw in found.group(1).splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("const "):
            for name, bits in re.findall(r"const\s+(\w+)\s*=\s*0x([0-9A-Fa-f]{8})", line):
                constants[name] = np.array(int(bits, 16), np.uint32).view(F32)[()]
            continue
        step = re.fullmatch(r"(\w+)\s*=\s*(\w+)\((.*)\)", line)
        assert step, f"not one operation: {raw!r}"
        arguments = [a.strip() for a in step.group(3).split(",")]
        steps.append((step.group(1), step.group(2), arguments))
    return constants, steps


def _ftz(a):
    return np.where(np.abs(a) < _TINY, np.copysign(F32(0), a), a).astype(F32)


OPERATIONS = {
    "add": lambda a, b: (a + b).astype(F32),
    "sub": lambda a, b: (a - b).astype(F32),
    "mul": lambda a, b: (a * b).astype(F32),
    "div": lambda a, b: (a / b).astype(F32),
    "sqrt": lambda a: np.sqrt(a).astype(F32),
    "fma": lambda a, b, c: _fma(*np.broadcast_arrays(np.asarray(a, F32), b, c)),
    "neg": lambda a: (-a).astype(F32),
    "abs": lambda a: np.abs(a).astype(F32),
    "max": lambda a, b: np.maximum(a, b).astype(F32),
    "min": lambda a, b: np.minimum(a, b).astype(F32),
    "select": lambda c, a, b: np.where(c, a, b).astype(F32),
    "lt": lambda a, b: a < b,
    "gt": lambda a, b: a > b,
    "eq": lambda a, b: a == b,
    "ftz": _ftz,
    "shr": lambda a, k: (a >> np.uint32(k)).astype(np.uint32),
    "and": lambda a, k: (a & np.uint32(k)).astype(np.uint32),
    "or": lambda a, k: (a | np.uint32(k)).astype(np.uint32),
    "isub": lambda a, k: (a.astype(np.int32) - np.int32(k)).astype(np.int32),
    "bits": lambda a: np.ascontiguousarray(a, F32).view(np.uint32),
    "as_f32": lambda a: np.ascontiguousarray(a, np.uint32).view(F32),
    "to_f32": lambda a: a.astype(F32),
}


def execute(random_bits: np.ndarray) -> np.ndarray:
    """The recipe on an array of uint32 random bits: each element's z."""
    constants, steps = recipe()
    names: dict[str, object] = {"bits": random_bits.astype(np.uint32)}

    def value(argument: str):
        if argument in names:
            return names[argument]
        if argument in constants:
            return constants[argument]
        return int(argument)  # an integer argument of a bit operation

    with np.errstate(all="ignore"):
        for target, operation, arguments in steps:
            assert operation in OPERATIONS, f"unknown operation {operation!r} in the recipe"
            names[target] = OPERATIONS[operation](*(value(a) for a in arguments))
    return names[steps[-1][0]]


def test_the_recipe_reads_one_operation_per_line_with_its_constants():
    constants, steps = recipe()
    assert len(constants) == 57
    assert steps[-1][0] == "zz"
    assert len(steps) > 90


def test_the_recipe_as_written_equals_the_numpy_init_on_every_input():
    chunk = 2**20
    for start in range(0, 2**23, chunk):
        mantissa = np.arange(start, start + chunk, dtype=np.uint32)
        mine = execute(mantissa << np.uint32(9))  # the 23 bits the recipe keeps
        reference = _truncated_normal_of_mantissa(mantissa, -2.0, 2.0).astype(F32)
        off = np.flatnonzero(mine.view(np.uint32) != reference.view(np.uint32))
        assert off.size == 0, (
            f"{off.size} of {chunk} inputs differ from mantissa {start}; first: mantissa "
            f"{start + off[0]}, recipe {mine[off[0]]!r}, numpy {reference[off[0]]!r}"
        )


def test_the_grouping_that_misled_a_porter_fails_the_comparison():
    """The old reading, ((y * y2) * N) / D, is off by ulps somewhere: the test can tell."""
    constants, steps = recipe()
    mantissa = np.arange(0, 2**23, 97, dtype=np.uint32)
    names: dict[str, object] = {"bits": mantissa << np.uint32(9)}
    with np.errstate(all="ignore"):
        for target, operation, arguments in steps:
            if target == "ratio":  # ((y * y2) * N) / D instead of (y * y2) * (N / D)
                continue
            if target == "s" and operation == "mul":
                product = (names["y3"] * names["n"]).astype(F32)
                names[target] = (product / names["d"]).astype(F32)
                continue
            args = [names.get(a, constants.get(a)) for a in arguments]
            args = [int(a) if v is None else v for a, v in zip(arguments, args, strict=True)]
            names[target] = OPERATIONS[operation](*args)
    reference = _truncated_normal_of_mantissa(mantissa, -2.0, 2.0).astype(F32)
    assert (names["zz"].view(np.uint32) != reference.view(np.uint32)).any()
