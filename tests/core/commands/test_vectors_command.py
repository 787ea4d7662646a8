"""`vectors check` as a user meets it (issue 76, items 5 and 7): its worst error/bound includes
its failures, it takes several ports, and `--vectors PATH` reads what `vectors export PATH`
wrote. Vectors made here from hips_autograd (numpy: quick) on two cases, so no JAX is needed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import implementations
from conformance.checking import vectors
from conformance.cli import main

pytest.importorskip("autograd")

SPECS = (vectors.Spec(0, 1, 1, "normal"), vectors.Spec(None, 3, 4, "normal"))
SHIFTED = "shifted_autograd"


class ShiftedAutograd(implementations.load("hips_autograd").__class__):
    """hips_autograd with its forward output off by 1e-3: its forward checks fail."""

    name = SHIFTED

    def forward(self, params, x, *, checkpoint=True):
        return np.asarray(super().forward(params, x, checkpoint=checkpoint)) + np.float32(1e-3)


@pytest.fixture
def exported(tmp_path):
    """The stem `vectors export` was given: it wrote stem.json and stem.npz."""
    stem = tmp_path / "mine"
    vectors.export(implementations.load("hips_autograd"), stem, SPECS)
    assert stem.with_suffix(".json").is_file()
    assert stem.with_suffix(".npz").is_file()
    return stem


@pytest.fixture
def with_shifted(monkeypatch):
    registered, load = implementations.registered, implementations.load
    monkeypatch.setattr(
        implementations, "registered", lambda: {**registered(), SHIFTED: ("test:Shifted", "test")}
    )
    monkeypatch.setattr(
        implementations, "load", lambda name: ShiftedAutograd() if name == SHIFTED else load(name)
    )


def _check(capsys, *args: str) -> tuple[int, str]:
    code = main(["vectors", "check", *args])
    return code, " ".join(capsys.readouterr().out.split())


def test_the_worst_error_bound_includes_the_failures(exported, with_shifted, capsys):
    manifest = str(exported.with_suffix(".json"))
    code, out = _check(capsys, "--implementation", SHIFTED, "--vectors", manifest, "--json")
    assert code == 1
    results = json.loads(out)
    failed = [r for r in results if not r["passed"]]
    assert failed
    assert all(r["worst_ratio"] > 1 for r in failed)  # each failure's own ratio
    assert all(r["port"] == SHIFTED for r in results)
    code, out = _check(capsys, "--implementation", SHIFTED, "--vectors", manifest)
    assert code == 1
    worst = float(re.search(r"worst error/bound ([0-9.e+-]+)", out).group(1))
    assert worst > 1.0, out  # a failure is worse than its bound: the worst says so
    assert worst == pytest.approx(max(r["worst_ratio"] for r in failed), rel=0.05)


def test_check_takes_several_ports(exported, with_shifted, capsys):
    manifest = str(exported.with_suffix(".json"))
    code, out = _check(capsys, "--implementation", "hips_autograd", SHIFTED, "--vectors", manifest)
    assert code == 1  # one of them fails
    total = 4 + 2  # the seeded vector's four checks, the general one's two
    assert f"hips_autograd: {total}/{total} vector checks passed" in out
    assert re.search(rf"{SHIFTED}: \d+/{total} vector checks passed", out), out


def test_check_reads_the_path_export_was_given(exported, capsys):
    code, out = _check(capsys, "--implementation", "hips_autograd", "--vectors", str(exported))
    assert code == 0, out
    assert "hips_autograd: 6/6 vector checks passed" in out
    code, out = _check(
        capsys, "--implementation", "hips_autograd", "--vectors", str(exported.with_suffix(".npz"))
    )
    assert code == 0, out


def test_a_vectors_path_that_is_none_says_what_it_looked_for(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["vectors", "check", "--implementation", "hips_autograd", "--vectors",
              str(tmp_path / "none")])  # fmt: skip
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--vectors" in err
    assert "none.json" in err
