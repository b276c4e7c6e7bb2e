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


def test_bures_demo_small_grid_with_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bures.png"
    code = main(["bures-demo", "--grid", "small", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    f = _fields(captured.out)
    assert f["psdsos bures-demo"].startswith("full-rank endpoints, d = 2, n_train = 12, seed = 0")
    assert "8 candidates x 12 folds = 96 fits" in f["leave-one-out CV"]
    assert f["selected"].startswith("lam1 = ") and "lam2 = " in f["selected"]
    assert "sigma = " in f["selected"]
    assert float(f["LOO score (negated mean squared Frobenius error)"]) < 0
    model = float(f["PSD model"])
    nn = float(f["baseline, nearest training matrix"])
    lin = float(f["baseline, piecewise-linear interp."])
    assert 0 < model < nn and lin >= 0
    assert f["figure"] == str(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in captured.err


def test_bures_demo_rank_one_verbose(capsys):
    code = main(["bures-demo", "--grid", "small", "--rank-one", "--n-train", "6", "--seed", "2",
                 "--verbose"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "rank-one endpoints, d = 2, n_train = 6, seed = 2" in captured.out
    assert "fits 48/48" in captured.err and "total time" in captured.err
    assert "figure" not in _fields(captured.out)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bures-demo", "--grid", "huge"],
        ["bures-demo", "--n-train", "abc"],
        ["bures-demo", "--unknown"],
        ["no-such-command"],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "Traceback" not in err


def test_help_exit_0(capsys):
    assert main(["bures-demo", "--help"]) == 0
    assert "--rank-one" in capsys.readouterr().out


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
    assert len(lines) == 1 and lines[0].startswith("psdsos: error: "), err
    assert match in lines[0]


def test_unwritable_figure_exit_1(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    bad = tmp_path / "missing-dir" / "fig.png"
    assert main(["bures-demo", "--grid", "small", "--n-train", "4", "--out", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("psdsos: error: ")


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
