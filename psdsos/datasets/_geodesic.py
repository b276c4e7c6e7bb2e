"""Bures-Wasserstein geodesic interpolation data (PSD paper, section 3.3, Figures 1 and 6)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import RandomStateLike, check_random_state, check_scalar
from psdsos.geometry import bures_wasserstein_geodesic, check_psd

__all__ = ["bures_geodesic_endpoints", "make_bures_geodesic"]

#: Eigenvalues of the random endpoints are drawn uniformly in this interval.
_EIG_RANGE = (0.2, 2.0)


def _check_bool(value, name):
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _random_endpoint(rng, d, rank_one):
    lam = rng.uniform(*_EIG_RANGE, size=1 if rank_one else d)
    if rank_one:
        g = rng.standard_normal(d)
        nrm = np.linalg.norm(g)
        u = g / nrm if nrm > 0 else np.eye(d)[0]
        return lam[0] * np.outer(u, u)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.where(np.diag(R) < 0, -1.0, 1.0)  # Haar-distributed orthogonal matrix
    M = (Q * lam) @ Q.T
    return 0.5 * (M + M.T)


def bures_geodesic_endpoints(d: int = 2, *, rank_one: bool = False,
                             random_state: RandomStateLike = None
                             ) -> tuple[np.ndarray, np.ndarray]:
    r"""Random endpoints for a Bures-Wasserstein geodesic.

    Each endpoint is

    .. math::

        A = Q \operatorname{diag}(\lambda_1, \dots, \lambda_d) Q^\top
        \quad\text{or, with ``rank_one=True``,}\quad
        A = \lambda_1\, u u^\top ,

    with :math:`Q` Haar-distributed on :math:`O(d)`, :math:`u` uniform on the unit sphere and
    :math:`\lambda_i \sim \mathcal U[0.2, 2]` i.i.d.: full-rank endpoints have scale O(1) and
    condition number at most 10; rank-one endpoints are the degenerate Gaussians of Fig. 6 of
    Muzellec, Bach and Rudi. ``A`` is drawn before ``B``.

    Parameters
    ----------
    d : int, default=2
        Matrix size, d >= 1.
    rank_one : bool, default=False
        Draw rank-one PSD endpoints instead of full-rank SPD ones.
    random_state : None, int or numpy.random.Generator, default=None
        Seed; :func:`make_bures_geodesic` with the same ``d``, ``rank_one`` and
        ``random_state`` uses the same endpoints.

    Returns
    -------
    A, B : ndarray of shape (d, d)
        Symmetric PSD endpoints.

    Raises
    ------
    ValueError
        If ``d`` is not an integer >= 1, ``rank_one`` not a bool, or ``random_state`` invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.datasets import bures_geodesic_endpoints
    >>> A, B = bures_geodesic_endpoints(3, rank_one=True, random_state=0)
    >>> int(np.linalg.matrix_rank(A)), A.shape
    (1, (3, 3))
    """
    d = check_scalar(d, "d", lower=1, integer=True)
    rank_one = _check_bool(rank_one, "rank_one")
    rng = check_random_state(random_state)
    A = _random_endpoint(rng, d, rank_one)
    B = _random_endpoint(rng, d, rank_one)
    return A, B


def _check_times(t):
    try:
        tt = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"t must be a numeric array of times, got {type(t).__name__}: {exc}"
        ) from None
    if tt.ndim == 2 and tt.shape[1] == 1:
        tt = tt[:, 0]
    if tt.ndim != 1 or tt.size < 1:
        raise ValueError(
            f"t must be a non-empty 1-D array of times (or of shape (n, 1)), got shape {tt.shape}"
        )
    if not np.all(np.isfinite(tt)):
        raise ValueError("t contains NaN or infinite values")
    if tt.min() < 0.0 or tt.max() > 1.0:
        raise ValueError(
            f"t must lie in [0, 1], got values in [{float(tt.min()):.4g}, {float(tt.max()):.4g}]"
        )
    return tt


def _check_endpoints(endpoints):
    if not isinstance(endpoints, tuple | list) or len(endpoints) != 2:
        raise ValueError(f"endpoints must be a pair (A, B) of PSD matrices, got {endpoints!r}")
    A = check_psd(endpoints[0], "endpoints[0]")
    B = check_psd(endpoints[1], "endpoints[1]")
    if A.ndim != 2 or A.shape != B.shape:
        raise ValueError(
            "endpoints must be two PSD matrices of the same shape (d, d), got shapes "
            f"{A.shape} and {B.shape}"
        )
    return A, B


def make_bures_geodesic(n_samples: int = 12, d: int = 2, *, rank_one: bool = False,
                        t: ArrayLike | None = None, random_state: RandomStateLike = None,
                        endpoints: tuple[ArrayLike, ArrayLike] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    r"""PSD matrices sampled along a Bures-Wasserstein geodesic (PSD paper, section 3.3).

    .. math::

        M_i = \gamma(x_i), \qquad
        \gamma(x) = X_x X_x^\top, \quad X_x = (1 - x) A^{1/2} + x\, B^{1/2} Q^\star ,
        \qquad x_1 = 0 \le x_2 \le \dots \le x_n = 1 ,

    the Bures-Wasserstein geodesic from :math:`M_1 = A` to :math:`M_n = B`
    (:func:`psdsos.geometry.bures_wasserstein_geodesic`) at evenly spaced times
    :math:`x_i = (i - 1)/(n - 1)`, as in Figure 1 (full-rank endpoints) and Figure 6
    (rank-one endpoints, ``rank_one=True``) of Muzellec, Bach and Rudi.

    To compare a fit with the true geodesic at held-out times, draw the endpoints once and
    pass them, or reuse the seed::

        A, B = bures_geodesic_endpoints(2, random_state=0)
        t_train, M_train = make_bures_geodesic(12, endpoints=(A, B))
        t_test, M_test = make_bures_geodesic(t=np.linspace(0, 1, 200), endpoints=(A, B))

    Parameters
    ----------
    n_samples : int, default=12
        Number of evenly spaced times, >= 2. Ignored when ``t`` is given.
    d : int, default=2
        Matrix size, >= 1. Ignored when ``endpoints`` is given.
    rank_one : bool, default=False
        Rank-one random endpoints :math:`\lambda u u^\top` (then every :math:`M_i` has rank
        at most one). Ignored when ``endpoints`` is given.
    t : array-like of shape (n_times,) or (n_times, 1), default=None
        Explicit times in [0, 1] (e.g. held-out times) instead of the even grid.
    random_state : None, int or numpy.random.Generator, default=None
        Seed for the endpoints (see :func:`bures_geodesic_endpoints`, which draws the same
        endpoints from the same seed). Unused when ``endpoints`` is given.
    endpoints : tuple (A, B) of array-like of shape (d, d), default=None
        Given PSD endpoints (rank-deficient allowed) instead of random ones.

    Returns
    -------
    t : ndarray of shape (n_samples, 1)
        The times (the inputs X of a regression), sorted as given.
    M : ndarray of shape (n_samples, d, d)
        Symmetric PSD matrices :math:`\gamma(t_i)`.

    Raises
    ------
    ValueError
        For ``n_samples < 2``, ``d < 1``, times outside [0, 1] or not 1-D, endpoints that are
        not two PSD matrices of the same shape, or an invalid ``random_state``.

    Examples
    --------
    >>> from psdsos.datasets import make_bures_geodesic
    >>> t, M = make_bures_geodesic(12, 2, random_state=0)
    >>> t.shape, M.shape, float(t[0, 0]), float(t[-1, 0])
    ((12, 1), (12, 2, 2), 0.0, 1.0)
    """
    if t is None:
        n_samples = check_scalar(n_samples, "n_samples", lower=2, integer=True)
        times = np.linspace(0.0, 1.0, n_samples)
    else:
        times = _check_times(t)
    if endpoints is None:
        A, B = bures_geodesic_endpoints(d, rank_one=rank_one, random_state=random_state)
    else:
        A, B = _check_endpoints(endpoints)
    M = bures_wasserstein_geodesic(A, B, times)
    return times[:, None].copy(), M
