"""The Python snippets of the user-guide pages (docs/*.md) run as written (fresh interpreter
each)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / name for name in (
    "getting-started.md", "large-data.md", "psd-regression.md", "bures-demo.md", "geometry.md",
    "convex-regression.md", "shape-constraints.md", "shape-constraints-math.md",
    "model-selection.md", "kernels.md",
    "structured-prediction.md", "structured-prediction-math.md", "projection-oracles.md",
    "localized-prediction.md", "extending.md",
)]
SNIPPETS = [code for page in PAGES
            for code in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def test_page_has_snippets():
    for page in PAGES:
        assert len(re.findall(r"```python\n", page.read_text(encoding="utf-8"))) >= 2, page


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_snippet_runs(code, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip(), "every snippet prints its result"
    assert "Warning" not in r.stderr, r.stderr
