"""Benchmarks are plain scripts; CI runs each at a tiny size (--quick) so they cannot rot."""

import pathlib
import runpy
import sys

import pytest

BENCH = sorted((pathlib.Path(__file__).parent.parent / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCH, ids=[p.stem for p in BENCH])
def test_benchmark_runs_quick(path, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out.md"
    monkeypatch.setattr(sys, "argv", [str(path), "--quick", "--out", str(out)])
    runpy.run_path(str(path), run_name="__main__")
    printed = capsys.readouterr().out
    assert "|" in printed, "a benchmark prints a table"
    assert out.exists() and out.read_text().strip(), "a benchmark saves its table"


def test_there_are_benchmarks():
    assert BENCH, "benchmarks/ holds the performance scripts"
