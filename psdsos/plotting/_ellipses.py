r"""PSD 2x2 matrices drawn as ellipses along a line (PSD paper, Figures 1 and 6).

Each matrix :math:`\mathbf M_i` is drawn as the set

.. math::

    E_i = \{\, (t_i, y) + s\, x \;:\; x \in \operatorname{range}(\mathbf M_i),\
          x^\top \mathbf M_i^{+} x \le r \,\}
        = \{\, (t_i, y) + s\, \mathbf M_i^{1/2} u \;:\; \|u\| \le \sqrt r \,\},

an ellipse with semi-axes :math:`s\sqrt{r \mu_k}` along the eigenvectors of
:math:`\mathbf M_i` (eigenvalues :math:`\mu_k`); a rank-one matrix gives a segment, the zero
matrix a point. For a Gaussian :math:`\mathcal N(0, \mathbf M_i)` this is a level set of the
density (the Mahalanobis ball of radius :math:`\sqrt r`), as drawn in the paper's figures.
The paper thresholds the density at a fixed value instead, which makes the radius depend on
:math:`\det \mathbf M_i` and is undefined for singular matrices; a fixed Mahalanobis radius
draws every matrix, degenerate ones included, on the same footing.

matplotlib is an optional dependency (``pip install psdsos[plot]``); it is imported inside
the functions only.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_psd_targets

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_bures_comparison", "plot_psd_ellipses", "psd_ellipse_scale"]

#: Eigenvalues below this fraction of the largest one (over all matrices) count as zero.
_RANK_RTOL = 1e-9


def _require_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "psdsos.plotting needs matplotlib: pip install psdsos[plot]"
        ) from exc


def _check_times(t, n, name="t"):
    try:
        tt = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(t).__name__}: {exc}") from None
    if tt.ndim == 2 and tt.shape[1] == 1:
        tt = tt[:, 0]
    if tt.ndim != 1:
        raise ValueError(f"{name} must have shape (n,) or (n, 1), got shape {tt.shape}")
    if len(tt) != n:
        raise ValueError(f"{name} has {len(tt)} times but there are {n} matrices")
    if not np.all(np.isfinite(tt)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return tt


def _check_matrices(M, name="M"):
    M = check_psd_targets(M, name)
    if M.shape[1] != 2:
        raise ValueError(f"{name} must hold 2x2 matrices (shape (n, 2, 2)), got shape {M.shape}")
    w, V = np.linalg.eigh(M)
    top = float(np.max(np.abs(w))) if w.size else 0.0
    tol = _RANK_RTOL * max(top, np.finfo(float).tiny)
    if np.any(w < -max(1e-7 * top, tol)):
        i = int(np.argmin(w.min(axis=1)))
        raise ValueError(
            f"{name}[{i}] is not positive semidefinite (smallest eigenvalue "
            f"{float(w[i].min()):.3g}); only PSD matrices can be drawn as ellipses"
        )
    return np.where(w > tol, w, 0.0), V


def _check_positive(value, name, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0 \
            or not np.isfinite(value):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def psd_ellipse_scale(t: ArrayLike, M: ArrayLike, *, level: float = 1.0,
                      fill: float = 0.45) -> float:
    r"""Scale s such that the ellipses of ``M`` at times ``t`` do not overlap much.

    .. math::

        s = \text{fill} \cdot \frac{\Delta t}{\max_i \sqrt{r\, \mu_{\max}(\mathbf M_i)}} ,

    with :math:`\Delta t` the median spacing of the sorted times (1 for a single time).

    Parameters
    ----------
    t : array-like of shape (n,) or (n, 1)
    M : array-like of shape (n, 2, 2), PSD
    level : float, default=1.0
        The level r of :func:`plot_psd_ellipses`.
    fill : float, default=0.45
        Largest semi-axis as a fraction of the spacing.

    Returns
    -------
    float
    """
    w, _ = _check_matrices(M)
    tt = _check_times(t, len(w))
    level = _check_positive(level, "level")
    fill = _check_positive(fill, "fill")
    gaps = np.diff(np.sort(tt))
    gaps = gaps[gaps > 0]
    dt = float(np.median(gaps)) if gaps.size else 1.0
    rad = float(np.sqrt(level * w.max())) if w.size else 0.0
    return fill * dt / rad if rad > 0 else 1.0


def plot_psd_ellipses(ax: Axes, t: ArrayLike, M: ArrayLike, *, level: float = 1.0,
                      y: float = 0.0, scale: float | None = None, color: Any = "C0",
                      alpha: float = 0.35, linewidth: float = 1.0) -> list[Any]:
    r"""Draw 2x2 PSD matrices as ellipses centred at :math:`(t_i, y)` (Figures 1 and 6).

    Matrix :math:`\mathbf M_i` becomes
    :math:`\{(t_i, y) + s\,x : x^\top \mathbf M_i^{+} x \le r,\ x \in \operatorname{range}
    \mathbf M_i\}`: an ellipse with semi-axes :math:`s\sqrt{r\mu_k}` along the eigenvectors
    (eigenvalues :math:`\mu_k`), a segment for a rank-one matrix, a dot for zero.
    The axes get an equal aspect ratio so that the shapes are not distorted.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    t : array-like of shape (n,) or (n, 1)
        Horizontal positions (times).
    M : array-like of shape (n, 2, 2)
        Symmetric PSD matrices (eigenvalues down to :math:`-10^{-7}\max|\mu|` are clipped
        to 0, so numerically PSD predictions are fine).
    level : float, default=1.0
        r > 0, the squared Mahalanobis radius.
    y : float, default=0.0
        Vertical position of the centres.
    scale : float or None, default=None
        s > 0, a common length scale in data units; None: :func:`psd_ellipse_scale`
        (largest semi-axis 0.45 times the median spacing of ``t``). Pass the same value
        to compare several rows.
    color : matplotlib color, default="C0"
    alpha : float, default=0.35
        Fill opacity (the outline is opaque).
    linewidth : float, default=1.0

    Returns
    -------
    list of matplotlib artists
        The ellipse collection, the segment collection and the dots (those present).

    Raises
    ------
    ValueError
        If ``M`` is not (n, 2, 2) symmetric PSD, ``t`` does not match, or ``level`` /
        ``scale`` are not positive.
    ImportError
        If matplotlib is missing (``pip install psdsos[plot]``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from matplotlib.figure import Figure
    >>> from psdsos.datasets import make_bures_geodesic
    >>> from psdsos.plotting import plot_psd_ellipses
    >>> t, M = make_bures_geodesic(12, random_state=0)
    >>> ax = Figure().add_subplot()
    >>> artists = plot_psd_ellipses(ax, t, M)
    """
    _require_matplotlib()
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Ellipse

    w, V = _check_matrices(M)
    tt = _check_times(t, len(w))
    level = _check_positive(level, "level")
    scale = _check_positive(scale, "scale", allow_none=True)
    if scale is None:
        scale = psd_ellipse_scale(tt, M, level=level)
    y = float(y)

    semi = scale * np.sqrt(level * w)  # (n, 2), ascending eigenvalues
    rank = (w > 0).sum(axis=1)
    ellipses, segments, dots = [], [], []
    for i in range(len(tt)):
        c = np.array([tt[i], y])
        if rank[i] == 2:
            v = V[i][:, 1]  # major axis direction
            angle = float(np.degrees(np.arctan2(v[1], v[0])))
            ellipses.append(Ellipse(tuple(c), 2 * semi[i, 1], 2 * semi[i, 0], angle=angle))
        elif rank[i] == 1:
            h = semi[i, 1] * V[i][:, 1]
            segments.append([c - h, c + h])
        else:
            dots.append(c)
    artists: list[Any] = []
    if ellipses:
        pc = PatchCollection(ellipses, facecolor=color, edgecolor=color, alpha=None,
                             linewidth=linewidth)
        pc.set_facecolor(_with_alpha(color, alpha))
        artists.append(ax.add_collection(pc))
    if segments:
        lc = LineCollection(segments, colors=color, linewidths=max(1.5 * linewidth, 1.0),
                            capstyle="round")
        artists.append(ax.add_collection(lc))
    if dots:
        d = np.array(dots)
        artists.extend(ax.plot(d[:, 0], d[:, 1], ".", color=color))
    ext = float(semi.max()) if semi.size else 1.0
    ax.update_datalim(np.array([[tt.min() - ext, y - ext], [tt.max() + ext, y + ext]]))
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    return artists


def _with_alpha(color, alpha):
    from matplotlib.colors import to_rgba

    return to_rgba(color, alpha)


def plot_bures_comparison(t_train: ArrayLike, M_train: ArrayLike, t_model: ArrayLike,
                          M_model: ArrayLike, t_true: ArrayLike, M_true: ArrayLike, *,
                          level: float = 1.0, scale: float | None = None,
                          titles: Sequence[str] = ("data", "PSD model", "true geodesic"),
                          colors: Sequence[Any] = ("C0", "C1", "C2"),
                          figsize: tuple[float, float] = (9.0, 4.5)) -> Figure:
    r"""Three rows of ellipses: data, fitted model, truth (PSD paper, Figures 1 and 6).

    Parameters
    ----------
    t_train, M_train : (n,) or (n, 1) and (n, 2, 2)
        Training times and matrices (top row).
    t_model, M_model : (m,) or (m, 1) and (m, 2, 2)
        Model predictions (middle row).
    t_true, M_true : (k,) or (k, 1) and (k, 2, 2)
        The true curve (bottom row).
    level : float, default=1.0
        r of :func:`plot_psd_ellipses`.
    scale : float or None, default=None
        Common scale of the three rows; None: from the training row
        (:func:`psd_ellipse_scale`), so the data ellipses barely touch.
    titles : tuple of 3 str
    colors : tuple of 3 matplotlib colors
    figsize : (float, float)

    Returns
    -------
    matplotlib.figure.Figure
        A figure not registered with pyplot (no global state): save it with
        ``fig.savefig(path)``; notebooks display it.

    Raises
    ------
    ValueError, ImportError
        As :func:`plot_psd_ellipses`.
    """
    _require_matplotlib()
    from matplotlib.figure import Figure

    if len(titles) != 3 or len(colors) != 3:
        raise ValueError("titles and colors must have 3 entries (data, model, truth)")
    level = _check_positive(level, "level")
    if scale is None:
        scale = psd_ellipse_scale(t_train, M_train, level=level)
    scale = _check_positive(scale, "scale")
    rows = [(t_train, M_train), (t_model, M_model), (t_true, M_true)]
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    lo, hi = np.inf, -np.inf
    for ax, (t, M), title, color in zip(axes, rows, titles, colors, strict=True):
        plot_psd_ellipses(ax, t, M, level=level, scale=scale, color=color)
        tt = np.asarray(t, dtype=float).ravel()
        lo, hi = min(lo, tt.min()), max(hi, tt.max())
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("t")
    return fig
