"""Plots of d x d PSD targets along a 1-D input (Agg backend): eigenvalues and variances
(plot_psd_spectrum), ellipses of a chosen 2x2 block with a scale shared across calls."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from psdsos.plotting import plot_psd_ellipses, plot_psd_spectrum, psd_ellipse_scale  # noqa: E402


def _axes():
    return Figure().add_subplot()


def _series(rng, n=6, d=3):
    G = rng.standard_normal((n, d, d))
    return np.arange(n, dtype=float)[:, None], G @ np.swapaxes(G, 1, 2) + 0.1 * np.eye(d)


def _extent(artist):
    """(width, height) of each ellipse of a PatchCollection (the extents of its Bezier
    curves, not of their control points)."""
    return np.array([(b.width, b.height) for b in (p.get_extents() for p in artist.get_paths())])


# ---------------------------------------------------------------------------------------------
# plot_psd_spectrum
# ---------------------------------------------------------------------------------------------
def test_spectrum_draws_eigenvalues_then_variances(rng):
    t, M = _series(rng)
    perm = rng.permutation(len(t))  # unsorted input: drawn in the order of t
    ax = _axes()
    lines = plot_psd_spectrum(ax, t[perm], M[perm], names=["gdp", "cons", "inv"], label="data")
    assert len(lines) == 6 and ax.get_lines() == lines
    mu = np.linalg.eigvalsh(M)[:, ::-1]
    for k in range(3):
        np.testing.assert_array_equal(lines[k].get_xdata(), t[:, 0])
        np.testing.assert_allclose(lines[k].get_ydata(), mu[:, k])
        np.testing.assert_allclose(lines[3 + k].get_ydata(), M[:, k, k])
        assert lines[k].get_linestyle() == "-" and lines[3 + k].get_linestyle() == "--"
    assert lines[0].get_label() == "data: eigenvalue 1"
    assert lines[5].get_label() == "data: variance inv"
    # the largest eigenvalue bounds every variance, the smallest is below them
    assert np.all(lines[0].get_ydata() >= M[:, [0, 1, 2], [0, 1, 2]].max(axis=1) - 1e-12)
    assert np.all(lines[2].get_ydata() <= M[:, [0, 1, 2], [0, 1, 2]].min(axis=1) + 1e-12)
    assert ax.get_yscale() == "linear"


def test_spectrum_kinds_colors_and_log_axis(rng):
    t, M = _series(rng, d=2)
    ax = _axes()
    eig = plot_psd_spectrum(ax, t, M, kind="eigenvalues", color="k", marker="o", linestyle="",
                            log=True)
    diag = plot_psd_spectrum(ax, t, M, kind="diagonal")
    assert len(eig) == 2 and len(diag) == 2
    assert all(line.get_color() == "k" and line.get_marker() == "o" for line in eig)
    assert [line.get_color() for line in diag] == ["C2", "C3"]  # as with kind="both"
    assert [line.get_label() for line in diag] == ["variance 0", "variance 1"]
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert lo <= np.linalg.eigvalsh(M).min() and hi >= np.linalg.eigvalsh(M).max()


def test_spectrum_bad_input(rng):
    t, M = _series(rng)
    ax = _axes()
    with pytest.raises(ValueError, match="kind must be one of"):
        plot_psd_spectrum(ax, t, M, kind="trace")
    with pytest.raises(ValueError, match="names must hold d = 3"):
        plot_psd_spectrum(ax, t, M, names=["a", "b"])
    with pytest.raises(ValueError, match="t has 5 times but there are 6"):
        plot_psd_spectrum(ax, t[:5], M)
    with pytest.raises(ValueError, match="M must have shape"):
        plot_psd_spectrum(ax, t, M[:, 0])
    with pytest.raises(ValueError, match="log must be True or False"):
        plot_psd_spectrum(ax, t, M, log="yes")


# ---------------------------------------------------------------------------------------------
# ellipses of a 2x2 block, one scale for several calls
# ---------------------------------------------------------------------------------------------
def test_block_ellipses_are_the_principal_blocks(rng):
    t, M = _series(rng, n=4, d=4)
    block = (3, 1)
    sub = M[:, [3, 1]][:, :, [3, 1]]
    ax1, ax2 = _axes(), _axes()
    (a1,) = plot_psd_ellipses(ax1, t, M, block=block, scale=0.1)
    (a2,) = plot_psd_ellipses(ax2, t, sub, scale=0.1)
    for p1, p2 in zip(a1.get_paths(), a2.get_paths(), strict=True):
        np.testing.assert_allclose(p1.vertices, p2.vertices)
    # semi-axis along coordinate i (horizontal) = scale * sqrt(M_ii): the shadow of the ellipsoid
    widths = _extent(a1)[:, 0]
    np.testing.assert_allclose(widths, 2 * 0.1 * np.sqrt(M[:, 3, 3]), rtol=1e-4)
    assert psd_ellipse_scale(t, M, block=block) == pytest.approx(psd_ellipse_scale(t, sub))


def test_one_scale_shared_across_calls(rng):
    """With the default scale each call is scaled on its own (a matrix 100 times larger is
    drawn at the same size); with one explicit scale, sizes compare across calls."""
    t, M = _series(rng, n=5)
    big = 100.0 * M
    ax = _axes()
    (own_small,) = plot_psd_ellipses(ax, t, M, block=(0, 2), y=0.0)
    (own_big,) = plot_psd_ellipses(ax, t, big, block=(0, 2), y=2.0)
    np.testing.assert_allclose(_extent(own_small), _extent(own_big), rtol=1e-6)
    s = psd_ellipse_scale(np.concatenate([t, t]), np.concatenate([M, big]), block=(0, 2))
    ax = _axes()
    (small,) = plot_psd_ellipses(ax, t, M, block=(0, 2), y=0.0, scale=s)
    (large,) = plot_psd_ellipses(ax, t, big, block=(0, 2), y=2.0, scale=s)
    np.testing.assert_allclose(_extent(large), 10.0 * _extent(small), rtol=1e-4)  # sqrt(100)
    assert isinstance(large, PatchCollection)
    # every ellipse lies inside the axes' limits
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    for art in (small, large):
        for path in art.get_paths():
            b = path.get_extents()
            assert x0 <= b.x0 and b.x1 <= x1 and y0 <= b.y0 and b.y1 <= y1


def test_block_bad_input(rng):
    t, M = _series(rng, n=3, d=3)
    ax = _axes()
    with pytest.raises(ValueError, match="2x2 matrices.*block=\\(i, j\\)"):
        plot_psd_ellipses(ax, t, M)
    for bad in [(0, 0), (0, 3), (0,), "01", (0.0, 1), (True, 1), None.__class__]:
        with pytest.raises(ValueError, match="block must be a pair of distinct indices"):
            plot_psd_ellipses(ax, t, M, block=bad)
    with pytest.raises(ValueError, match="block must be a pair"):
        psd_ellipse_scale(t, M, block=(2, 5))


def test_docstring_examples_run():
    import doctest

    import psdsos.plotting._ellipses as mod

    result = doctest.testmod(mod)
    assert result.failed == 0 and result.attempted > 0
