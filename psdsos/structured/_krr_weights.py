r"""Kernel ridge weights, shared by :class:`~psdsos.structured.SELFEstimator` and
:class:`~psdsos.structured.LocalizedSELF`.

The SELF weights (manifold paper, eq. 3; localized paper, eq. 9) are

.. math::

    \alpha(x) = (\mathbf K + m\lambda I)^{-1} v(x)
    \quad\text{or, with Nystrom features } \Phi,\quad
    \alpha(x) \approx \Phi(\Phi^\top\Phi + m\lambda I)^{-1}\phi(x):

the Cholesky factor of the regularized system is computed once at fit and solved against
the kernel columns (or the features) of the test points.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

__all__ = ["ridge_cholesky", "ridge_solve", "nystrom_ridge_factor"]


def _cho_factor(A: np.ndarray, system: str) -> np.ndarray:
    try:
        L, _ = sla.cho_factor(A, lower=True, check_finite=False)
    except sla.LinAlgError:
        raise ValueError(f"{system} is not numerically positive definite; increase lam"
                         ) from None
    return L


def ridge_cholesky(K: np.ndarray, reg: float, system: str = "K + n lam I") -> np.ndarray:
    """Lower Cholesky factor of ``K + reg I`` (K is overwritten); ValueError naming
    ``system`` when it is not numerically positive definite.  Only the lower triangle of
    the result is meaningful (``np.tril`` it before storing)."""
    K[np.diag_indices(len(K))] += reg
    return _cho_factor(K, system)


def ridge_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(K + reg I)^{-1} B`` from the lower factor ``L`` of :func:`ridge_cholesky`."""
    return sla.cho_solve((L, True), B, check_finite=False)


def nystrom_ridge_factor(Phi: np.ndarray, reg: float,
                         system: str = "Phi^T Phi + n lam I") -> np.ndarray:
    """Lower Cholesky factor of ``Phi^T Phi + reg I`` (solve with :func:`ridge_solve`)."""
    A = Phi.T @ Phi
    A[np.diag_indices(A.shape[0])] += reg
    return _cho_factor(A, system)
