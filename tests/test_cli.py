"""Tests for the ``psdsos`` command line (in-process through ``main``)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from psdsos.cli import _linear_interpolation, main


def _fields(text):
    return {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
            for line in text.splitlines() if ":" in line}


def _bures_numbers(f):
    return (float(f["PSD model"]), float(f["baseline, nearest training matrix"]),
            float(f["baseline, piecewise-linear interp."]))


def test_bures_demo_small_grid_with_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bures.png"
    code = main(["bures-demo", "--grid", "small", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    f = _fields(captured.out)
    assert f["psdsos bures-demo"].startswith("full-rank endpoints, d = 2, n_train = 12, seed = 0")
    assert "gaussian, matern52, exponential" in f["grid"]
    assert "6 candidates x 12 folds = 72 fits" in f["leave-one-out CV"]
    assert "stopped at max_iter" not in f["leave-one-out CV"]
    sel = f["selected"]
    assert sel.startswith("kernel = ") and "lam2 = " in sel and "sigma = " in sel
    assert float(f["LOO score (negated mean squared Frobenius error)"]) < 0
    model, nn, lin = _bures_numbers(f)
    # the geodesic is quadratic in t: a smooth kernel beats linear interpolation (O(h^4))
    assert 0 < model < lin < nn
    assert f["figure"] == str(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the default progress line, on stderr (stdout holds the results only)
    err = captured.err.strip().splitlines()
    assert len(err) == 1, captured.err
    assert err[0].startswith("psdsos bures-demo: cross-validating 3 kernels x 2 candidates "
                             "x 12 folds ...") and err[0].endswith(" s")
    assert "cross-validating" not in captured.out


@pytest.mark.slow
def test_bures_demo_default_run_beats_linear_interpolation(capsys):
    """The README's main job (without the figure): the kernel CV selects a smooth kernel
    whose held-out error is below piecewise-linear interpolation's."""
    assert main(["bures-demo"]) == 0
    captured = capsys.readouterr()
    f = _fields(captured.out)
    assert "54 candidates x 12 folds = 648 fits" in f["leave-one-out CV"]
    assert "stopped at max_iter" not in f["leave-one-out CV"]
    assert not f["selected"].startswith("kernel = exponential"), f["selected"]
    model, nn, lin = _bures_numbers(f)
    assert model < lin < nn
    assert "warning" not in captured.err


def test_bures_demo_quiet(capsys):
    code = main(["bures-demo", "--grid", "small", "--n-train", "6", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0 and captured.err == ""
    assert "6 candidates x 6 folds" in _fields(captured.out)["leave-one-out CV"]


def test_bures_demo_rank_one_verbose(capsys):
    code = main(["bures-demo", "--paper", "--grid", "small", "--rank-one", "--n-train", "6",
                 "--seed", "2", "--verbose"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "rank-one endpoints, d = 2, n_train = 6, seed = 2" in captured.out
    assert "fits 48/48" in captured.err and "total time" in captured.err
    assert "cross-validating 1 kernel x 8 candidates x 6 folds ...\n" in captured.err
    assert "figure" not in _fields(captured.out)


def test_bures_demo_paper_grid_is_appendix_d1():
    """--paper: the exponential kernel on exactly the 270 candidates of paper_grid_psd()."""
    from sklearn.model_selection import ParameterGrid

    from psdsos.cli import _demo_grid
    from psdsos.model_selection import paper_grid_psd

    def values(grid):
        keys = ("lam1", "lam2", "sigma")
        return sorted(tuple(c[k] for k in keys) for c in ParameterGrid(grid))

    for rank_one in (False, True):
        grid, text, n_cand = _demo_grid("paper", rank_one)
        assert n_cand == 270 and "Appendix D.1" in text
        assert {c["kernel"] for c in ParameterGrid(grid)} == {"exponential"}
        assert values(grid) == values(paper_grid_psd())
    g = paper_grid_psd()
    assert g["sigma"] == [1.0, 0.1, 0.01] and g["lam2"][-1] == 1e-8 and g["lam1"][-1] == 0.0


def test_bures_demo_default_grid():
    from psdsos.cli import _demo_grid

    grid, _, n_cand = _demo_grid("default", False)
    assert n_cand == 54 and set(grid["kernel"]) == {"gaussian", "matern52", "exponential"}
    assert min(grid["lam2"]) <= 1e-10 and grid["lam1"] == [0.0]
    assert all(isinstance(s, float) for s in grid["sigma"])  # explicit, not "scale"
    grid_r1, _, _ = _demo_grid("default", True)
    assert min(grid_r1["lam2"]) >= 1e-6


def test_bures_demo_paper_small(capsys):
    code = main(["bures-demo", "--paper", "--grid", "small", "--n-train", "5", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    f = _fields(captured.out)
    assert "exponential kernel" in f["grid"]
    assert "8 candidates x 5 folds" in f["leave-one-out CV"]
    assert f["selected"].startswith("kernel = exponential")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bures-demo", "--grid", "huge"],
        ["bures-demo", "--n-train", "abc"],
        ["bures-demo", "--unknown"],
        ["bures-demo", "--quiet", "--verbose"],
        ["no-such-command"],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "Traceback" not in err


def test_help_exit_0(capsys):
    assert main(["bures-demo", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--rank-one" in text and "--paper" in text and "--quiet" in text


@pytest.mark.parametrize(
    "argv, match",
    [
        (["bures-demo", "--n-train", "1"], "n_samples must be >= 2"),
        (["bures-demo", "--seed", "-3"], "random_state"),
        (["bures-demo", "--grid", "small", "--n-train", "2"], "cross-validation fits failed"),
    ],
)
def test_library_errors_exit_1_one_line(argv, match, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("psdsos: error: ")]
    # one error line, the last; before it at most the (ended) progress line
    assert len(errors) == 1 and lines[-1] == errors[0], err
    assert all("cross-validating" in line for line in lines[:-1]), err
    assert match in errors[0]


@pytest.mark.parametrize("target", ["missing-dir/fig.png", "fig.nosuchformat", "."])
def test_unwritable_figure_fails_before_the_search(tmp_path, capsys, target):
    pytest.importorskip("matplotlib")
    bad = tmp_path / target
    # the default (full) grid: the check must come before any fit
    assert main(["bures-demo", "--out", str(bad)]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("psdsos: error: --out "), captured.err
    assert captured.out == ""  # nothing ran


def test_figure_without_matplotlib_fails_before_the_search(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["bures-demo", "--out", str(tmp_path / "b.png")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "pip install psdsos[plot]" in captured.err


def test_console_entry_point_exit_code():
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-m", "psdsos.cli", "bures-demo", "--grid", "nope"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_linear_interpolation_baseline():
    t = np.array([0.0, 0.5, 1.0])
    M = np.stack([np.eye(2) * s for s in (1.0, 2.0, 4.0)])
    L = _linear_interpolation(t, M, np.array([0.0, 0.25, 0.75, 1.0]))
    np.testing.assert_allclose(L[:, 0, 0], [1.0, 1.5, 3.0, 4.0])


# ------------------------------------------------------------------------------------------
# psdsos.plotting, which draws the demo's figure
# ------------------------------------------------------------------------------------------


def _axes():
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    return Figure().add_subplot()


def test_plot_psd_ellipses_geometry():
    from matplotlib.collections import LineCollection, PatchCollection

    from psdsos.plotting import plot_psd_ellipses

    ax = _axes()
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s], [s, c]])
    M = np.stack([np.diag([4.0, 1.0]), R @ np.diag([9.0, 0.0]) @ R.T, np.zeros((2, 2))])
    artists = plot_psd_ellipses(ax, [0.0, 1.0, 2.0], M, level=1.0, scale=0.1, y=0.5)
    kinds = [type(a) for a in artists]
    assert PatchCollection in kinds and LineCollection in kinds and len(artists) == 3
    (ell,) = artists[0].get_paths()  # one full-rank ellipse
    xy = ell.vertices
    # ellipse x^T M^+ x <= 1 scaled by 0.1: semi-axes 0.2 (x) and 0.1 (y), centred (0, 0.5)
    assert np.allclose([xy[:, 0].min(), xy[:, 0].max()], [-0.2, 0.2], atol=1e-2)
    assert np.allclose([xy[:, 1].min(), xy[:, 1].max()], [0.4, 0.6], atol=1e-2)
    (seg,) = artists[1].get_segments()  # the rank-one matrix: half-length 0.1 * 3 along R e1
    d = seg[1] - seg[0]
    np.testing.assert_allclose(d * np.sign(d[0]), 2 * 0.3 * R[:, 0], atol=1e-12)
    np.testing.assert_allclose(seg.mean(axis=0), [1.0, 0.5])
    assert ax.get_aspect() == 1.0


def test_plot_psd_ellipses_bad_input():
    from psdsos.plotting import plot_psd_ellipses

    ax = _axes()
    with pytest.raises(ValueError, match="2x2"):
        plot_psd_ellipses(ax, [0.0], np.eye(3)[None])
    with pytest.raises(ValueError, match="not positive semidefinite"):
        plot_psd_ellipses(ax, [0.0], np.diag([1.0, -1.0])[None])
    with pytest.raises(ValueError, match="2 times but there are 1"):
        plot_psd_ellipses(ax, [0.0, 1.0], np.eye(2)[None])
    with pytest.raises(ValueError, match="level"):
        plot_psd_ellipses(ax, [0.0], np.eye(2)[None], level=0.0)
    with pytest.raises(ValueError, match="symmetric"):
        plot_psd_ellipses(ax, [0.0], np.array([[[1.0, 1.0], [0.0, 1.0]]]))


def test_plot_bures_comparison_three_rows():
    pytest.importorskip("matplotlib")
    from psdsos.datasets import make_bures_geodesic
    from psdsos.plotting import plot_bures_comparison

    t, M = make_bures_geodesic(5, rank_one=True, random_state=0)
    fig = plot_bures_comparison(t, M, t, M, t, M)
    assert len(fig.axes) == 3
    assert [a.get_title(loc="left") for a in fig.axes] == ["data", "PSD model", "true geodesic"]


def test_plotting_without_matplotlib(monkeypatch):
    from psdsos.plotting import plot_psd_ellipses

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install psdsos\[plot\]"):
        plot_psd_ellipses(None, [0.0], np.eye(2)[None])


def test_version(capsys):
    import psdsos

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"psdsos {psdsos.__version__}"


def test_version_matches_package_metadata():
    from importlib.metadata import version

    import psdsos

    assert version("psdsos") == psdsos.__version__
