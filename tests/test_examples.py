"""Every script in examples/ runs and passes its own final checks (examples are tests).

Each example runs (``test_example_runs``) in a fresh interpreter with
``PSDSOS_EXAMPLE_FAST=1`` (examples read it to shrink their problem: the whole module must
stay well under a minute) and the Agg
matplotlib backend, from a temporary working directory, the way the documentation's gallery
runs it (as ``__main__``, no arguments): it must pass its own checks, leave at least one
matplotlib figure open (what the gallery shows) and write no file; ``test_example_help``
checks that ``--help`` prints the usage without starting a run.
"""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
#: Per-example time limit (seconds) in fast mode.
TIMEOUT = 120


def test_examples_exist():
    assert EXAMPLES, "examples/ holds no scripts"


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    env = {
        **os.environ,
        "PSDSOS_EXAMPLE_FAST": "1",
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    r = subprocess.run([sys.executable, "-c", _RUNNER, str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"{script.name} failed:\n{r.stdout}\n{r.stderr}"
    assert "figures open: 0" not in r.stdout, f"{script.name} draws no figure"
    assert list(tmp_path.iterdir()) == [], "the default run writes files (only with --out)"


#: Runs an example as ``__main__`` with no arguments (as sphinx-gallery does) and reports
#: the matplotlib figures left open.
_RUNNER = """
import runpy, sys
script = sys.argv[1]
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
import matplotlib.pyplot as plt
n = len(plt.get_fignums())
print(f"figures open: {n}")
"""


#: Per-example time limit (seconds) for ``--help``: the import of psdsos, no computation.
HELP_TIMEOUT = 60


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_help(script, tmp_path):
    """``--help`` prints the usage and exits 0 without running the experiment (no output
    file, no results on stdout)."""
    env = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("PSDSOS_EXAMPLE_FAST", None)  # the default (full) configuration must not start
    r = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=HELP_TIMEOUT)
    assert r.returncode == 0, f"{script.name} --help failed:\n{r.stdout}\n{r.stderr}"
    assert r.stdout.startswith("usage: "), r.stdout
    assert "-h, --help" in r.stdout
    assert r.stderr == "", r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written (e.g. a figure named --help)
