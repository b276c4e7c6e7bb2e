"""The hyperparameter grids of the PSD paper (Appendix D.1 and D.2), absolute or relative to
the data's scale."""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from psdsos.kernels import scale_bandwidth

__all__ = ["paper_grid_convex", "paper_grid_psd", "relative_sigmas"]

#: scale_bandwidth of the PSD paper's inputs in Appendix D.1: times t uniform on [0, 1]
#: (Var = 1/12, one feature), sqrt(1 / 24).
PAPER_PSD_INPUT_SCALE = float(np.sqrt(1.0 / 24.0))
#: scale_bandwidth of the PSD paper's inputs in Appendix D.2: uniform on [-2 pi, 2 pi]^2
#: (eq. 30 with a = 1; Var = (2 pi)^2 / 3 per feature, two features), 2 pi sqrt(1 / 3).
PAPER_CONVEX_INPUT_SCALE = float(2.0 * np.pi * np.sqrt(1.0 / 3.0))


def relative_sigmas(factors: Iterable[float], X: ArrayLike) -> list[float]:
    r"""Bandwidths as multiples of the data's scale: ``[c * scale_bandwidth(X) for c in factors]``.

    .. math::

        \sigma_c = c\,\sigma_{\text{scale}}(X), \qquad
        \sigma_{\text{scale}}(X) = \sqrt{p \operatorname{Var}(X) / 2}

    (:func:`psdsos.kernels.scale_bandwidth`, the bandwidth of ``sigma="scale"``), so that a
    grid written once serves data in any units.

    Parameters
    ----------
    factors : sequence of float > 0
    X : array-like of shape (n_samples, n_features)
        The training inputs.

    Returns
    -------
    list of float

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.model_selection import relative_sigmas
    >>> X = np.array([[0.0], [2000.0]])      # Var = 1e6, p = 1: scale = 1000 sqrt(1/2)
    >>> [round(s, 3) for s in relative_sigmas([1.0, 0.1], X)]
    [707.107, 70.711]
    """
    scale = scale_bandwidth(X)
    out: list[float] = []
    for c in factors:
        if (isinstance(c, bool) or not isinstance(c, numbers.Real) or not np.isfinite(c)
                or c <= 0):
            raise ValueError(f"factors must be finite real numbers > 0, got {c!r}")
        out.append(float(c) * scale)
    return out


def paper_grid_convex(X: ArrayLike | None = None) -> dict[str, list[float]]:
    r"""The convex-regression grid of the PSD paper, Appendix D.2 (Figures 3 and 4).

    .. math::

        \lambda_2 \in \{10^{-k}\}_{k=3}^{7}, \qquad \sigma^2 \in \{1, 5, 10\}, \qquad
        \rho \in \{10^{-3}, \dots, 10^{-6}\}, \qquad \lambda_1 = 0

    (the paper selects :math:`\rho = 10^{-5}` but does not list its :math:`\rho` grid), for
    the Gaussian kernel on inputs uniform in :math:`[-2\pi, 2\pi]^2`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), optional
        None: the paper's absolute bandwidths.  Given: the same bandwidths relative to the
        data's scale, :math:`\sigma = (\sigma_{\text{paper}} / \sigma_{\text{scale}}
        ([-2\pi, 2\pi]^2))\,\sigma_{\text{scale}}(X)` (:func:`relative_sigmas` with the
        factors 0.276, 0.616, 0.872), i.e. the paper's kernel width relative to the spread
        of its inputs.

    Returns
    -------
    dict
        ``{"rho": [...], "lam2": [...], "sigma": [...]}``, fresh lists.

    Examples
    --------
    >>> from psdsos.model_selection import paper_grid_convex
    >>> [round(s * s, 6) for s in paper_grid_convex()["sigma"]]
    [1.0, 5.0, 10.0]
    """
    sigmas = [float(np.sqrt(s2)) for s2 in (1.0, 5.0, 10.0)]
    if X is not None:
        sigmas = relative_sigmas([s / PAPER_CONVEX_INPUT_SCALE for s in sigmas], X)
    return {"rho": [1e-3, 1e-4, 1e-5, 1e-6], "lam2": [10.0 ** (-k) for k in range(3, 8)],
            "sigma": sigmas}


def paper_grid_psd(X: ArrayLike | None = None, *, primal_below: float | None = None,
                   primal_solver: str = "CLARABEL", primal_tol: float = 1e-9
                   ) -> dict[str, list[float]] | list[dict[str, list]]:
    r"""The hyperparameter grid of the PSD paper, Appendix D.1 (Figures 1 and 6).

    .. math::

        \lambda_1 \in \{10^{-k}\}_{k=0}^{8} \cup \{0\}, \qquad
        \lambda_2 \in \{10^{-k}\}_{k=0}^{8}, \qquad
        \sigma \in \{1, 0.1, 0.01\},

    270 candidates, used with the exponential kernel and leave-one-out cross-validation.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), optional
        None (default): the paper's absolute bandwidths above (for times in [0, 1]).
        Given: the same bandwidths relative to the data's scale,
        :math:`\sigma = (\sigma_{\text{paper}} / \sigma_{\text{scale}}([0, 1]))\,
        \sigma_{\text{scale}}(X)` with :math:`\sigma_{\text{scale}}([0, 1]) = \sqrt{1/24}`
        (:func:`relative_sigmas` with the factors 4.90, 0.490, 0.0490).
    primal_below : float or None, default=None
        If given, assign a solver to each candidate of :class:`psdsos.PSDRegressor`: those
        with :math:`\lambda_1 > 0` and :math:`\lambda_2 \le` ``primal_below`` get
        ``solver="primal"`` (an interior-point method, whose cost does not grow as
        :math:`\lambda_2 \to 0`, where the dual's accelerated gradient needs thousands of
        iterations); all the others ``solver="dual"``.  Candidates with
        :math:`\lambda_1 = 0` stay in the dual, which converges there, while the
        interior-point solutions are inaccurate when the optimal value itself is tiny
        (:math:`\approx \lambda_2`).  Same 270 candidates.
    primal_solver : {"SCS", "CLARABEL"}, default="CLARABEL"
        Primal solver of the primal candidates.
    primal_tol : float, default=1e-9
        ``tol`` of the primal candidates (Clarabel's gap and feasibility tolerances; they
        are partly absolute, and the optimal values of these problems go down to 1e-7).

    Returns
    -------
    dict or list of dict
        ``{"lam1": [...], "lam2": [...], "sigma": [...]}`` (fresh lists on every call), or,
        with ``primal_below``, a list of such dicts with ``solver`` (and ``primal_solver``,
        ``tol``) entries, a valid ``param_grid`` for :func:`grid_search_cv` and
        ``GridSearchCV``.

    Examples
    --------
    >>> from psdsos.model_selection import paper_grid_psd
    >>> g = paper_grid_psd()
    >>> len(g["lam1"]) * len(g["lam2"]) * len(g["sigma"])
    270
    >>> [p["solver"] for p in paper_grid_psd(primal_below=1e-5)]
    [['dual'], ['primal'], ['dual']]
    """
    grid = {
        "lam1": [10.0 ** (-k) for k in range(9)] + [0.0],
        "lam2": [10.0 ** (-k) for k in range(9)],
        "sigma": [1.0, 0.1, 0.01],
    }
    if X is not None:
        grid["sigma"] = relative_sigmas([s / PAPER_PSD_INPUT_SCALE for s in grid["sigma"]], X)
    if primal_below is None:
        return grid
    if isinstance(primal_below, bool) or not isinstance(primal_below, numbers.Real):
        raise ValueError(f"primal_below must be a real number or None, got {primal_below!r}")
    big = [v for v in grid["lam2"] if v > primal_below]
    tiny = [v for v in grid["lam2"] if v <= primal_below]
    pos = [v for v in grid["lam1"] if v > 0]
    zero = [v for v in grid["lam1"] if v == 0]
    parts = []
    if big:
        parts.append({**grid, "lam2": big, "solver": ["dual"]})
    if tiny:
        parts.append({**grid, "lam1": pos, "lam2": tiny, "solver": ["primal"],
                      "primal_solver": [primal_solver], "tol": [primal_tol]})
        parts.append({**grid, "lam1": zero, "lam2": tiny, "solver": ["dual"]})
    return parts
