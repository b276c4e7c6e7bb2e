r"""PSD matrices along a 1-D input: 2x2 matrices (or 2x2 blocks) drawn as ellipses along a
line (PSD paper, Figures 1 and 6), and eigenvalues and variances as curves.

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

__all__ = ["plot_bures_comparison", "plot_psd_ellipses", "plot_psd_spectrum",
           "psd_ellipse_scale"]

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


def _check_block(block, d):
    """``block`` as a pair of distinct indices in [0, d)."""
    try:
        i, j = block
    except (TypeError, ValueError):
        raise ValueError(
            f"block must be a pair of distinct indices (i, j) in [0, {d}), got {block!r}"
        ) from None
    ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and 0 <= v < d
             for v in (i, j))
    if not ok or i == j:
        raise ValueError(
            f"block must be a pair of distinct indices (i, j) in [0, {d}), got {block!r}"
        )
    return int(i), int(j)


def _select_block(M, block, name="M"):
    """The (n, 2, 2) principal blocks ``M[:, [i, j]][:, :, [i, j]]`` (``block=None``: M
    itself, which must then be 2x2)."""
    M = check_psd_targets(M, name)
    if block is None:
        if M.shape[1] != 2:
            raise ValueError(
                f"{name} must hold 2x2 matrices (shape (n, 2, 2)), got shape {M.shape}; for "
                "d x d matrices choose the 2x2 principal block to draw with block=(i, j)"
            )
        return M
    i, j = _check_block(block, M.shape[1])
    return M[:, [i, j]][:, :, [i, j]]


def _check_matrices(M, name="M", block=None):
    M = _select_block(M, block, name)
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
                      fill: float = 0.45, block: tuple[int, int] | None = None) -> float:
    r"""Scale s such that the ellipses of ``M`` at times ``t`` do not overlap much.

    .. math::

        s = \text{fill} \cdot \frac{\Delta t}{\max_i \sqrt{r\, \mu_{\max}(\mathbf M_i)}} ,

    with :math:`\Delta t` the median spacing of the sorted times (1 for a single time).

    To draw several rows (data, model, baselines) at one scale, compute it once, from the
    matrices of all rows or from the data, and pass it as ``scale=`` to every
    :func:`plot_psd_ellipses` call: ellipses of equal matrices then have equal sizes in
    every row.

    Parameters
    ----------
    t : array-like of shape (n,) or (n, 1)
    M : array-like of shape (n, 2, 2), PSD; or (n, d, d) with ``block``
    level : float, default=1.0
        The level r of :func:`plot_psd_ellipses`.
    fill : float, default=0.45
        Largest semi-axis as a fraction of the spacing.
    block : (int, int) or None, default=None
        For d x d matrices, the indices (i, j) of the 2x2 principal block drawn (as
        :func:`plot_psd_ellipses`).

    Returns
    -------
    float

    Examples
    --------
    >>> from psdsos.datasets import load_macro_covariances
    >>> from psdsos.plotting import psd_ellipse_scale
    >>> t, M = load_macro_covariances(return_X_y=True)
    >>> s = psd_ellipse_scale(t, M, block=(0, 2))   # pass it to every row's plot
    """
    w, _ = _check_matrices(M, block=block)
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
                      alpha: float = 0.35, linewidth: float = 1.0,
                      block: tuple[int, int] | None = None) -> list[Any]:
    r"""Draw 2x2 PSD matrices (or 2x2 blocks) as ellipses centred at :math:`(t_i, y)`.

    Matrix :math:`\mathbf M_i` becomes
    :math:`\{(t_i, y) + s\,x : x^\top \mathbf M_i^{+} x \le r,\ x \in \operatorname{range}
    \mathbf M_i\}`: an ellipse with semi-axes :math:`s\sqrt{r\mu_k}` along the eigenvectors
    (eigenvalues :math:`\mu_k`), a segment for a rank-one matrix, a dot for zero (PSD
    paper, Figures 1 and 6).  The axes get an equal aspect ratio so that the shapes are not
    distorted.

    For d x d matrices, ``block=(i, j)`` draws the principal 2x2 block
    :math:`[\mathbf M_i]_{\{i,j\},\{i,j\}}`: the covariance of coordinates i and j of
    :math:`\mathcal N(0, \mathbf M_i)`, whose ellipse is the shadow (projection) of the
    d-dimensional ellipsoid on the plane of coordinates i and j.

    The default ``scale`` is computed from the matrices of each call: to compare rows
    (data, model, baselines), pass one ``scale`` to every call
    (e.g. :func:`psd_ellipse_scale` of the data).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    t : array-like of shape (n,) or (n, 1)
        Horizontal positions (times).
    M : array-like of shape (n, 2, 2), or (n, d, d) with ``block``
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
    block : (int, int) or None, default=None
        Indices (i, j), distinct, of the principal 2x2 block drawn; required when d > 2.
        The horizontal semi-axis direction is coordinate i, the vertical one j.

    Returns
    -------
    list of matplotlib artists
        The ellipse collection, the segment collection and the dots (those present).

    Raises
    ------
    ValueError
        If ``M`` is not (n, 2, 2) symmetric PSD (or (n, d, d) with a valid ``block``),
        ``t`` does not match, or ``level`` / ``scale`` are not positive.
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

    w, V = _check_matrices(M, block=block)
    tt = _check_times(t, len(w))
    level = _check_positive(level, "level")
    scale = _check_positive(scale, "scale", allow_none=True)
    if scale is None:
        scale = psd_ellipse_scale(tt, M, level=level, block=block)
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


_SPECTRUM_KINDS = ("both", "eigenvalues", "diagonal")


def plot_psd_spectrum(ax: Axes, t: ArrayLike, M: ArrayLike, *, kind: str = "both",
                      names: Sequence[str] | None = None, color: Any = None,
                      label: str | None = None, log: bool = False,
                      **line_kwargs: Any) -> list[Any]:
    r"""Eigenvalues and variances (diagonal entries) of d x d PSD matrices along a 1-D input.

    Draws, against :math:`t_i` sorted increasingly, the eigenvalues
    :math:`\mu_1(\mathbf M_i) \ge \dots \ge \mu_d(\mathbf M_i)` (solid lines by default)
    and the diagonal entries :math:`(\mathbf M_i)_{jj}`, the variances of the coordinates
    of :math:`\mathcal N(0, \mathbf M_i)` (dashed): the scale and the anisotropy of the
    matrices at a glance, for any d, where ellipses show only a 2x2 block.  The eigenvalue
    curves are sorted at each t (they may touch where eigenvalues cross).

    Call it once per source on the same axes to compare them (e.g. the data with
    ``marker="o", linestyle=""`` and a fit as lines, each with its own ``color``).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    t : array-like of shape (n,) or (n, 1)
        Inputs (times).
    M : array-like of shape (n, d, d)
        Symmetric matrices (PSD for the eigenvalues to be meaningful on a log axis).
    kind : {"both", "eigenvalues", "diagonal"}, default="both"
        What to draw.
    names : sequence of d str, optional
        Names of the coordinates, for the labels of the variances (default "0", "1", ...).
    color : matplotlib color or None, default=None
        None: one color per curve (``"C0"``, ``"C1"``, ... for the eigenvalues, then the
        next colors for the variances); a color: every curve of this call in it.
    label : str, optional
        Prefix of the legend labels (e.g. ``"data"``): "data: eigenvalue 1", ...
    log : bool, default=False
        Logarithmic vertical axis (for matrices whose eigenvalues span decades; zero
        eigenvalues are then not drawn).
    **line_kwargs
        Passed to ``ax.plot`` (``linestyle``, ``marker``, ``linewidth``, ``alpha``, ...);
        ``linestyle`` replaces the default solid / dashed styles.

    Returns
    -------
    list of matplotlib.lines.Line2D
        The eigenvalue curves (largest first), then the variance curves.

    Raises
    ------
    ValueError
        If ``M`` is not (n, d, d) symmetric, ``t`` does not match, ``kind`` is unknown or
        ``names`` does not have d entries.
    ImportError
        If matplotlib is missing.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from matplotlib.figure import Figure
    >>> from psdsos.datasets import load_macro_covariances
    >>> from psdsos.plotting import plot_psd_spectrum
    >>> macro = load_macro_covariances()
    >>> ax = Figure().add_subplot()
    >>> lines = plot_psd_spectrum(ax, macro.t, macro.M, names=macro.feature_names, log=True)
    >>> len(lines)
    6
    """
    _require_matplotlib()
    A = check_psd_targets(M, "M")
    tt = _check_times(t, len(A))
    if not isinstance(kind, str) or kind.lower() not in _SPECTRUM_KINDS:
        raise ValueError(f"kind must be one of {list(_SPECTRUM_KINDS)}, got {kind!r}")
    kind = kind.lower()
    d = A.shape[1]
    if names is None:
        names = [str(j) for j in range(d)]
    elif isinstance(names, str) or len(names) != d:
        raise ValueError(f"names must hold d = {d} names, got {names!r}")
    if not isinstance(log, (bool, np.bool_)):
        raise ValueError(f"log must be True or False, got {log!r}")
    order = np.argsort(tt, kind="stable")
    tt, A = tt[order], A[order]
    prefix = f"{label}: " if label else ""
    curves: list[tuple[np.ndarray, str, str]] = []
    if kind in ("both", "eigenvalues"):
        mu = np.linalg.eigvalsh(A)[:, ::-1]
        curves += [(mu[:, k], f"{prefix}eigenvalue {k + 1}", "-") for k in range(d)]
    if kind in ("both", "diagonal"):
        diag = np.diagonal(A, axis1=1, axis2=2)
        curves += [(diag[:, j], f"{prefix}variance {names[j]}", "--") for j in range(d)]
    lines: list[Any] = []
    offset = 0 if kind != "diagonal" else d  # a variance keeps its color in every kind
    for k, (values, text, style) in enumerate(curves):
        c = color if color is not None else f"C{(k + offset) % 10}"
        kw = {"linestyle": style, **line_kwargs}
        lines.extend(ax.plot(tt, values, color=c, label=text, **kw))
    if log:
        ax.set_yscale("log")
    return lines
