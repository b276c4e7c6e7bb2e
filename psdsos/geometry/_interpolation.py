r"""Piecewise geodesic interpolation of PSD matrices along a 1-D input (the baselines).

Given matrices :math:`\mathbf M_0, \dots, \mathbf M_{n-1}` at sorted distinct inputs
:math:`x_0 < \dots < x_{n-1}` (times), the interpolant joins consecutive matrices by the
geodesic of a geometry, travelled at constant speed:

.. math::

    \hat F(x) = \gamma_{\mathbf M_k \to \mathbf M_{k+1}}(s), \qquad
    s = \frac{x - x_k}{x_{k+1} - x_k} \in [0, 1], \qquad x_k \le x \le x_{k+1},

and is constant outside :math:`[x_0, x_{n-1}]`.  These are the baselines a PSD-valued
regression is compared with (the PSD paper of Muzellec, Bach and Rudi fits eq. (11) to
matrices sampled on a Bures-Wasserstein geodesic, section 3.3); see
``docs/psd-regression.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from psdsos._validation import check_array_2d, check_choice, check_psd_targets
from psdsos.geometry._checks import eigh_checked
from psdsos.geometry._matfun import expm_sym, spectral
from psdsos.geometry._spd import _bw_aligned_roots, spd_exp, spd_log

__all__ = ["GEODESIC_METRICS", "PiecewiseGeodesicInterpolator"]

#: The geometries of :class:`PiecewiseGeodesicInterpolator` (``metric=``).
GEODESIC_METRICS = ("euclidean", "log_euclidean", "affine_invariant", "bures_wasserstein")
#: Which targets each geometry accepts (``"spd"``: its geodesics need invertible matrices).
_TARGET_KIND = {"euclidean": "psd", "log_euclidean": "spd", "affine_invariant": "spd",
                "bures_wasserstein": "psd"}


def _check_inputs(X, name="X", min_samples=1):
    """``X`` of shape (n,) or (n, 1) as a finite 1-D float array."""
    A = check_array_2d(X, name, min_samples=min_samples, allow_1d=True)
    if A.shape[1] != 1:
        raise ValueError(
            f"{name} must hold one feature (a 1-D input such as time), of shape (n,) or "
            f"(n, 1); got shape {A.shape}"
        )
    return A[:, 0]


class PiecewiseGeodesicInterpolator(BaseEstimator):
    r"""Piecewise geodesic interpolation of PSD matrices along a 1-D input.

    Between consecutive sorted training inputs :math:`x_k < x_{k+1}` the prediction runs
    along the geodesic of the chosen geometry from :math:`A = \mathbf M_k` to
    :math:`B = \mathbf M_{k+1}`, at :math:`s = (x - x_k)/(x_{k+1} - x_k)`:

    .. math::

        \gamma_{\text{E}}(s) &= (1 - s) A + s B, \\
        \gamma_{\text{LE}}(s) &= \exp\big((1 - s) \log A + s \log B\big), \\
        \gamma_{\text{AI}}(s) &= A^{1/2} \big(A^{-1/2} B A^{-1/2}\big)^{s} A^{1/2}, \\
        \gamma_{\text{BW}}(s) &= X_s X_s^\top, \quad
            X_s = (1 - s) A^{1/2} + s B^{1/2} Q^\star,

    with :math:`Q^\star` the orthogonal Procrustes alignment of
    :func:`~psdsos.geometry.bures_wasserstein_geodesic` (Bhatia, Jain and Lim 2019).  For
    commuting :math:`A, B` with eigenvalues :math:`a_i, b_i` in a common eigenbasis these
    are :math:`(1-s) a_i + s b_i`, :math:`a_i^{1-s} b_i^{s}` (log-Euclidean and
    affine-invariant agree) and :math:`((1-s)\sqrt{a_i} + s\sqrt{b_i})^2`.

    The prediction equals :math:`\mathbf M_k` at :math:`x_k` (exactly: the training matrix
    is returned) and is **constant outside the training range**:
    :math:`\hat F(x) = \mathbf M_0` for :math:`x < x_0` and :math:`\mathbf M_{n-1}` for
    :math:`x > x_{n-1}` (no extrapolation).  Every prediction is PSD (SPD for the
    log-Euclidean and affine-invariant geometries).

    Parameters
    ----------
    metric : {"log_euclidean", "affine_invariant", "bures_wasserstein", "euclidean"}, \
default="log_euclidean"
        The geometry whose geodesics join consecutive matrices.  ``"euclidean"`` is linear
        interpolation of the entries.  ``"log_euclidean"`` and ``"affine_invariant"`` need
        symmetric positive definite targets (condition number below 1e12); the other two
        accept PSD targets, rank-deficient ones included.

    Attributes
    ----------
    times_ : ndarray of shape (n_samples,)
        The training inputs, sorted increasingly.
    matrices_ : ndarray of shape (n_samples, d, d)
        The training matrices in the order of ``times_`` (exact symmetric parts).
    n_features_in_ : int
        Always 1.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import PiecewiseGeodesicInterpolator
    >>> t = np.array([[0.0], [1.0]])
    >>> M = np.array([np.diag([1.0, 4.0]), np.diag([4.0, 1.0])])
    >>> interp = PiecewiseGeodesicInterpolator("log_euclidean").fit(t, M)
    >>> interp.predict([[0.5], [2.0]]).round(6)     # sqrt(1 * 4) = 2; constant beyond t = 1
    array([[[2., 0.],
            [0., 2.]],
    <BLANKLINE>
           [[4., 0.],
            [0., 1.]]])
    """

    def __init__(self, metric: str = "log_euclidean") -> None:
        self.metric = metric

    def fit(self, X: ArrayLike, y: ArrayLike) -> PiecewiseGeodesicInterpolator:
        """Store the matrices sorted by input and the geodesics between neighbours.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1) or (n_samples,)
            Distinct finite inputs (times), n_samples >= 2, in any order.
        y : array-like of shape (n_samples, d, d)
            Symmetric PSD matrices (SPD for ``"log_euclidean"`` and ``"affine_invariant"``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Unknown ``metric``; ``X`` not one feature, with NaN/inf, fewer than 2 samples or
            repeated values; ``y`` not a stack of symmetric PSD (or SPD) matrices matching
            ``X``.  The message names the argument.
        """
        metric = check_choice(self.metric, "metric", GEODESIC_METRICS)
        t = _check_inputs(X, "X", min_samples=2)
        M = check_psd_targets(y, "y", n_samples=len(t))
        kind = _TARGET_KIND[metric]
        hint = (" (use metric='bures_wasserstein' or 'euclidean' for singular matrices)"
                if kind == "spd" else "")
        try:
            _, w, V = eigh_checked(M, "y", kind)
        except ValueError as exc:
            raise ValueError(f"{exc}; metric={metric!r} needs {kind.upper()} targets{hint}") \
                from None
        order = np.argsort(t, kind="stable")
        t, M, w, V = t[order], M[order], w[order], V[order]
        gaps = np.diff(t)
        if np.any(gaps <= 0):
            j = int(np.argmin(gaps))
            raise ValueError(
                f"X must hold distinct values; {t[j]!r} appears more than once (average the "
                "matrices at a repeated input first)"
            )
        cache: dict[str, Any] = {}
        if metric == "log_euclidean":
            cache["log"] = spectral(w, V, np.log(w))
        elif metric == "affine_invariant":
            cache["velocity"] = spd_log(M[:-1], M[1:])  # Log_{M_k}(M_{k+1}), (n-1, d, d)
        elif metric == "bures_wasserstein":
            rA, rBQ = _bw_aligned_roots(M[:-1], M[1:])
            cache["roots"] = (np.array(rA), rBQ)
        self.metric_ = metric
        self.times_ = t
        self.matrices_ = M
        self.n_features_in_ = 1
        self._cache = cache
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """Matrices on the piecewise geodesic at the inputs ``X``.

        Parameters
        ----------
        X : array-like of shape (n_queries, 1) or (n_queries,)
            Finite inputs; outside the training range the nearest end matrix is returned.

        Returns
        -------
        ndarray of shape (n_queries, d, d)
            Symmetric PSD matrices.
        """
        check_is_fitted(self, "times_")
        x = _check_inputs(X, "X", min_samples=0)
        t, M = self.times_, self.matrices_
        k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
        s = np.clip((x - t[k]) / (t[k + 1] - t[k]), 0.0, 1.0)
        sb = s[:, None, None]
        if self.metric_ == "euclidean":
            P = (1.0 - sb) * M[k] + sb * M[k + 1]
        elif self.metric_ == "log_euclidean":
            L = self._cache["log"]
            P = expm_sym((1.0 - sb) * L[k] + sb * L[k + 1])
        elif self.metric_ == "affine_invariant":
            P = spd_exp(M[k], sb * self._cache["velocity"][k])
        else:
            rA, rBQ = self._cache["roots"]
            Xs = (1.0 - sb) * rA[k] + sb * rBQ[k]
            P = Xs @ np.swapaxes(Xs, -1, -2)
        P = 0.5 * (P + np.swapaxes(P, -1, -2))
        # the training matrices themselves at the training inputs and beyond the ends
        P = np.where((s == 0.0)[:, None, None], M[k], P)
        return np.where((s == 1.0)[:, None, None], M[k + 1], P)
