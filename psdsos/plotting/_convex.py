r"""A fitted scalar function of one or two inputs drawn over its data (PSD paper, Figures 2-4).

- one input: the data points and the curve :math:`t \mapsto \hat f(t)` over the range of the
  data (Figure 2);
- two inputs: filled contours of :math:`\hat f` over the bounding box of the data with the
  data points coloured by their target on the same colour scale, and the surface
  :math:`\hat f(x_1, x_2)` with the data points in 3-D (Figure 4).

The function is only evaluated through ``model.predict``: any fitted regressor serves
(:class:`psdsos.estimators.ConvexRegressor`, the CNLS baseline, kernel ridge ...).

matplotlib is an optional dependency (``pip install psdsos[plot]``); it is imported inside
the function only.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos.plotting._ellipses import _require_matplotlib

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_convex_fit"]


def _check_xy(X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X and y must be numeric arrays: {exc}") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError(f"X must have shape (n_samples, n_features), got shape {X.shape}")
    if X.shape[1] not in (1, 2):
        raise ValueError(
            f"plot_convex_fit draws functions of 1 or 2 features; X has {X.shape[1]} features"
        )
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"y must have shape ({len(X)},) to match X, got shape {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must not contain NaN or infinite values")
    return X, y


def _grid_1d(lo, hi, m):
    if hi <= lo:  # a single distinct value: a small interval around it
        pad = max(abs(lo), 1.0) * 0.05
        lo, hi = lo - pad, hi + pad
    return np.linspace(lo, hi, m)


def plot_convex_fit(model: Any, X: ArrayLike, y: ArrayLike, *,
                    feature_names: Sequence[str] | None = None, target_name: str = "y",
                    title: str | None = None, n_grid: int | None = None, cmap: str = "viridis",
                    figsize: tuple[float, float] | None = None) -> Figure:
    r"""Draw a fitted function of one or two features with its training data.

    Parameters
    ----------
    model : fitted regressor with ``predict(X) -> (m,)``
        Evaluated on a grid over the bounding box of ``X`` (where the convexity constraint
        of :class:`psdsos.estimators.ConvexRegressor` is imposed), never outside it.
    X : array-like of shape (n_samples, 1), (n_samples,) or (n_samples, 2)
        Training inputs.
    y : array-like of shape (n_samples,)
        Training targets.
    feature_names : list of str or None, default=None
        Axis labels (default ``x1``, ``x2``).
    target_name : str, default="y"
        Label of the function values (y-axis in 1-D, colour bar and z-axis in 2-D).
    title : str or None, default=None
        Figure title.
    n_grid : int or None, default=None
        Evaluation points per axis (default 400 in 1-D, 80 in 2-D: 6400 predictions).
    cmap : str, default="viridis"
        Colour map of the 2-D panels.
    figsize : (float, float) or None

    Returns
    -------
    matplotlib.figure.Figure
        One axes in 1-D; in 2-D a contour axes, its colour bar and a 3-D axes. The figure is
        not registered with pyplot (no global state): save it with ``fig.savefig(path)``.

    Raises
    ------
    ValueError
        For more than 2 features, mismatched or non-finite ``X``/``y``, wrong
        ``feature_names`` or ``n_grid < 2``.
    ImportError
        If matplotlib is not installed.

    Examples
    --------
    >>> from psdsos.datasets import make_convex_regression
    >>> from psdsos.estimators import ConvexRegressor
    >>> from psdsos.plotting import plot_convex_fit
    >>> X, y = make_convex_regression(15, 1, random_state=0)
    >>> model = ConvexRegressor(sigma=3.0, solver="primal", primal_solver="CLARABEL").fit(X, y)
    >>> fig = plot_convex_fit(model, X, y)  # doctest: +SKIP
    >>> fig.savefig("fit.png")  # doctest: +SKIP
    """
    _require_matplotlib()
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if not hasattr(model, "predict"):
        raise ValueError(f"model must be a fitted regressor with predict, got {model!r}")
    X, y = _check_xy(X, y)
    p = X.shape[1]
    if feature_names is None:
        feature_names = [f"x{j + 1}" for j in range(p)]
    feature_names = [str(s) for s in feature_names]
    if len(feature_names) != p:
        raise ValueError(f"feature_names must have {p} entries, got {len(feature_names)}")
    if n_grid is None:
        n_grid = 400 if p == 1 else 80
    if (isinstance(n_grid, bool) or not isinstance(n_grid, numbers.Integral)
            or n_grid < 2):
        raise ValueError(f"n_grid must be an int >= 2, got {n_grid!r}")

    if p == 1:
        fig = Figure(figsize=figsize or (6.4, 4.2), layout="constrained")
        ax = fig.add_subplot()
        t = _grid_1d(X[:, 0].min(), X[:, 0].max(), n_grid)
        ax.scatter(X[:, 0], y, s=16, color="C0", zorder=3, label="data")
        ax.plot(t, np.asarray(model.predict(t[:, None])), color="C1", lw=2, label="fit")
        ax.set_xlabel(feature_names[0])
        ax.set_ylabel(target_name)
        ax.legend(loc="best", frameon=False)
    else:
        u = _grid_1d(X[:, 0].min(), X[:, 0].max(), n_grid)
        v = _grid_1d(X[:, 1].min(), X[:, 1].max(), n_grid)
        U, V = np.meshgrid(u, v)
        F = np.asarray(model.predict(np.column_stack([U.ravel(), V.ravel()]))).reshape(U.shape)
        lo = float(min(F.min(), y.min()))
        hi = float(max(F.max(), y.max()))
        if hi <= lo:
            hi = lo + 1.0
        levels = MaxNLocator(20).tick_values(lo, hi)
        norm = Normalize(levels[0], levels[-1])
        fig = Figure(figsize=figsize or (11.0, 4.6), layout="constrained")
        ax = fig.add_subplot(1, 2, 1)
        cs = ax.contourf(U, V, F, levels=levels, cmap=cmap, norm=norm)
        ax.contour(U, V, F, levels=levels, colors="k", linewidths=0.3, alpha=0.4)
        ax.scatter(X[:, 0], X[:, 1], c=y, cmap=cmap, norm=norm, edgecolors="k",
                   linewidths=0.6, s=28, zorder=3)
        ax.set_xlabel(feature_names[0])
        ax.set_ylabel(feature_names[1])
        ax.set_title("fit (contours) and data (dots)", fontsize=10, loc="left")
        fig.colorbar(cs, ax=ax, label=target_name)
        ax3 = fig.add_subplot(1, 2, 2, projection="3d")
        ax3.plot_surface(U, V, F, cmap=cmap, norm=norm, alpha=0.75, linewidth=0,
                         antialiased=True)
        ax3.scatter(X[:, 0], X[:, 1], y, color="k", s=8, depthshade=False)
        ax3.set_xlabel(feature_names[0])
        ax3.set_ylabel(feature_names[1])
        ax3.set_zlabel(target_name)
    if title is not None:
        fig.suptitle(title, fontsize=11)
    return fig
