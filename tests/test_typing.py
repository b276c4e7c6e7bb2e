"""The package type-checks: mypy on psdsos/ (configuration in pyproject.toml, [tool.mypy])."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_clean(tmp_path):
    pytest.importorskip("mypy", reason="mypy is part of the test extras; not installed here")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                        "--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "psdsos")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_is_marked_typed():
    assert (ROOT / "psdsos" / "py.typed").is_file()
