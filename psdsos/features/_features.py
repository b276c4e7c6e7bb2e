"""Finite-dimensional features for kernel SoS models (PSD paper, section 3.1.2).

A feature map sends a point x to phi(x) in R^r with phi(x)^T phi(y) ~= k(x, y).  The SoS
model of dimension d uses the block features Psi(x) = phi(x) kron I_d in R^{r d x d}
(eq. 8); only phi is stored, the Kronecker structure is implicit everywhere in psdsos.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import scipy.linalg as sla
from numpy.typing import ArrayLike

from psdsos._validation import (
    RandomStateLike,
    check_array_2d,
    check_choice,
    check_random_state,
    check_scalar,
)
from psdsos.kernels import Kernel, get_kernel

__all__ = ["ExactFeatures", "NystromFeatures", "cholesky_with_jitter"]

#: Relative jitter tried first (times mean(diag K) and n); it grows by 10x per failure.
_JITTER_START = 10.0 * np.finfo(np.float64).eps
#: Largest relative jitter tried before giving up.
_JITTER_MAX = 1e-2


def cholesky_with_jitter(K: ArrayLike, *, jitter: str | float = "auto",
                         name: str = "K") -> tuple[np.ndarray, float]:
    """Upper Cholesky factor R (R^T R = K + eps I) with an adaptive jitter eps.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric positive semi-definite kernel matrix.
    jitter : "auto" or float
        ``"auto"``: start at ``eps0 = 10 * machine_eps * n * mean(diag K)`` and multiply by 10
        until the factorization succeeds and every pivot ``R_ii^2`` exceeds ``eps0``
        (so R^{-1} stays bounded), up to ``1e-2 * mean(diag K)``.  A float: that exact
        jitter, no adaptation.

    Returns
    -------
    R : ndarray of shape (n, n)
        Upper-triangular factor.
    eps : float
        The jitter actually added to the diagonal.

    Notes
    -----
    Duplicate points or a huge bandwidth make K numerically singular; the Cholesky
    factorization then fails or produces pivots at rounding level, and the features
    R^{-T} v(x) blow up.  The jitter replaces K by K + eps I, i.e. the model is built on the
    kernel k + eps delta, which changes values by O(eps).
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    scale = float(np.mean(np.diag(K))) if n else 1.0
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"{name} must have a positive diagonal, got mean diagonal {scale}")
    if jitter != "auto":
        eps = check_scalar(jitter, "jitter", lower=0.0)
        try:
            R = sla.cholesky(K + eps * np.eye(n), lower=False, check_finite=False)
        except sla.LinAlgError:
            raise ValueError(
                f"{name} + jitter*I is not positive definite with jitter={eps:g}; "
                "use jitter='auto'"
            ) from None
        return R, eps
    floor = _JITTER_START * max(n, 1) * scale
    eps = floor
    while eps <= _JITTER_MAX * scale * (1 + 1e-12):
        try:
            R = sla.cholesky(K + eps * np.eye(n), lower=False, check_finite=False)
        except sla.LinAlgError:
            eps *= 10.0
            continue
        if np.min(np.diag(R) ** 2) > floor:
            return R, eps
        eps *= 10.0
    raise ValueError(
        f"{name} is not positive semi-definite: Cholesky failed even with jitter "
        f"{_JITTER_MAX:g} * mean(diag). Check the kernel."
    )


_FeaturesT = TypeVar("_FeaturesT", bound="_BaseFeatures")


class _BaseFeatures:
    """Shared machinery: phi(x) = R^{-T} k(Z, x) for anchor points Z with K_ZZ = R^T R."""

    kernel: str | Kernel
    sigma: float
    jitter: str | float
    kernel_: Kernel
    anchors_: np.ndarray
    R_: np.ndarray
    jitter_: float

    def _check_fitted(self):
        if not hasattr(self, "R_"):
            raise ValueError(f"{type(self).__name__} is not fitted; call fit(X) first")

    @property
    def n_components(self) -> int:
        """Dimension r of phi(x)."""
        self._check_fitted()
        return self.R_.shape[0]

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Features phi(x) = R^{-T} v(x), v(x)_i = k(x, z_i), one row per point.

        Parameters
        ----------
        X : array-like of shape (m, p)

        Returns
        -------
        Phi : ndarray of shape (m, r)
            Row j is phi(x_j); Psi(x_j) = phi(x_j) kron I_d (eq. 8).
        """
        self._check_fitted()
        X = check_array_2d(X, "X")
        if X.shape[1] != self.anchors_.shape[1]:
            raise ValueError(
                f"X has {X.shape[1]} features but the feature map was fitted with "
                f"{self.anchors_.shape[1]}"
            )
        V = self.kernel_(self.anchors_, X)  # (r, m)
        return sla.solve_triangular(self.R_, V, trans="T", lower=False, check_finite=False).T

    def _factor(self, Z):
        self.anchors_ = Z
        self.R_, self.jitter_ = cholesky_with_jitter(self.kernel_(Z, Z), jitter=self.jitter)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays and metadata that reproduce this fitted map (for .npz + JSON saving)."""
        self._check_fitted()
        meta = {
            "class": type(self).__name__,
            "kernel": self.kernel_.name,
            "sigma": float(self.kernel_.sigma),
            "jitter_": float(self.jitter_),
        }
        return {"anchors": self.anchors_, "R": self.R_}, meta

    #: Arrays of :meth:`to_arrays` and their shapes (r components, p input features).
    SAVED_ARRAYS = {"anchors": ("r", "p"), "R": ("r", "r")}

    @classmethod
    def from_arrays(cls: type[_FeaturesT], arrays: Mapping[str, ArrayLike],
                    meta: dict[str, Any]) -> _FeaturesT:
        """Inverse of :meth:`to_arrays` (ValueError naming a bad entry)."""
        R = np.asarray(arrays["R"], dtype=np.float64)
        if not np.all(np.diag(R) > 0):
            raise ValueError("array 'R' (the Cholesky factor of the kernel matrix) must have a "
                             "positive diagonal")
        jitter = meta["jitter_"]
        if not (isinstance(jitter, (int, float)) and np.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"metadata entry 'jitter_' must be a finite number >= 0, got "
                             f"{jitter!r}")
        obj = cls.__new__(cls)
        obj.kernel = meta["kernel"]
        obj.sigma = meta["sigma"]
        obj.jitter = "auto"
        obj.kernel_ = get_kernel(meta["kernel"], meta["sigma"])
        obj.anchors_ = np.asarray(arrays["anchors"], dtype=np.float64)
        obj.R_ = np.asarray(arrays["R"], dtype=np.float64)
        obj.jitter_ = float(meta["jitter_"])
        return obj


class ExactFeatures(_BaseFeatures):
    r"""Exact kernel features from the Cholesky factor of the kernel matrix (section 3.1.2).

    .. math::

        \mathbf K = \mathbf R^T \mathbf R, \qquad
        \phi(x) = \mathbf R^{-T} v(x), \quad v(x)_i = k(x, x_i),

    so that :math:`\phi(x_i)^T \phi(x_j) = K_{ij}` on the training points and
    :math:`\Psi(x) = \phi(x) \otimes I_d` (eq. 8).  At the training points
    :math:`\phi(x_\ell) = \mathbf R_{:, \ell}` (up to the jitter).

    Parameters
    ----------
    kernel : str or Kernel
        Kernel name or object.
    sigma : float, optional
        Bandwidth when ``kernel`` is a name.
    jitter : "auto" or float
        See :func:`cholesky_with_jitter`.

    Attributes
    ----------
    anchors_ : ndarray (n, p)
        The training points.
    R_ : ndarray (n, n)
        Upper Cholesky factor of ``K + jitter_ I``.
    jitter_ : float
        Jitter actually used.
    """

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float = 1.0, *,
                 jitter: str | float = "auto") -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.jitter = jitter

    def fit(self, X: ArrayLike) -> ExactFeatures:
        """Factor the kernel matrix of ``X``."""
        X = check_array_2d(X, "X")
        self.kernel_ = get_kernel(self.kernel, self.sigma)
        self._factor(X.copy())
        return self


class NystromFeatures(_BaseFeatures):
    r"""Nystrom features of rank r (landmarks uniform or by greedy pivoted Cholesky).

    .. math::

        \mathbf K_{ZZ} = \mathbf R^T \mathbf R, \qquad
        \phi(x) = \mathbf R^{-T} (k(x, z_1), \dots, k(x, z_r))^T \in \mathbb R^r,

    so that :math:`\phi(x)^T\phi(y) = k_Z(x,y)` is the Nystrom approximation of the kernel
    (PSD paper, section 6, "Nystrom approximation"; Williams and Seeger, 2001).

    Parameters
    ----------
    kernel : str or Kernel
    sigma : float, optional
    n_landmarks : int
        Rank r; must not exceed the number of samples.
    landmarks : {"uniform", "greedy"}
        ``"uniform"``: r distinct points drawn uniformly without replacement.
        ``"greedy"``: pivoted Cholesky, each new landmark maximizes the residual
        variance k(x,x) - k_Z(x,x); the first pivot is drawn with ``random_state``.
    random_state : None, int or numpy Generator
    jitter : "auto" or float
    """

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float = 1.0, *,
                 n_landmarks: int = 50, landmarks: str = "uniform",
                 random_state: RandomStateLike = None, jitter: str | float = "auto") -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state
        self.jitter = jitter

    def fit(self, X: ArrayLike) -> NystromFeatures:
        """Choose landmarks among the rows of ``X`` and factor their kernel matrix."""
        X = check_array_2d(X, "X")
        n = X.shape[0]
        r = check_scalar(self.n_landmarks, "n_landmarks", lower=1, integer=True)
        if r > n:
            raise ValueError(f"n_landmarks must be <= n_samples = {n}, got {r}")
        method = check_choice(self.landmarks, "landmarks", ["uniform", "greedy"])
        rng = check_random_state(self.random_state)
        self.kernel_ = get_kernel(self.kernel, self.sigma)
        if method == "uniform":
            idx = np.sort(rng.choice(n, size=r, replace=False))
        else:
            idx = _greedy_pivots(self.kernel_, X, r, rng)
        self.landmark_indices_ = idx
        self._factor(X[idx].copy())
        return self


def _greedy_pivots(kernel, X, r, rng, rtol=0.0):
    """Greedy pivoted Cholesky: O(n r) kernel evaluations, O(n r^2) flops.

    At most r pivots; stops earlier once every remaining residual variance is
    <= rtol * max_x k(x, x) (then the pivots' kernel matrix has no pivot below that level).
    """
    n = X.shape[0]
    resid = np.asarray(kernel.diag(X), dtype=np.float64).copy()
    floor = rtol * float(resid.max())
    L = np.zeros((n, r))
    idx = []
    piv = int(rng.integers(n))
    for j in range(r):
        if j > 0 and resid[piv] <= floor:
            break
        idx.append(piv)
        col = kernel(X, X[piv : piv + 1])[:, 0] - L[:, :j] @ L[piv, :j]
        denom = np.sqrt(max(resid[piv], 1e-300))
        L[:, j] = col / denom
        resid = np.maximum(resid - L[:, j] ** 2, 0.0)
        resid[idx] = -1.0  # never pick a pivot twice
        piv = int(np.argmax(resid))
    return np.sort(np.array(idx))
