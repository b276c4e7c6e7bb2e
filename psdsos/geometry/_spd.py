"""Distances, geodesics and exp/log maps on PSD / SPD matrices.

Bures-Wasserstein geometry on PSD matrices (rank-deficient ones included) follows
Bhatia, Jain and Lim, "On the Bures-Wasserstein distance between positive definite
matrices", Expo. Math. 37(2), 2019; the affine-invariant and log-Euclidean geometries on
SPD matrices are the ones used for SPD-valued structured prediction (Rudi et al.,
"Manifold Structured Prediction", 2018). See docs/geometry.md for the derivations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos.geometry._checks import as_float_array, as_symmetric, broadcast_batch, eigh_checked
from psdsos.geometry._matfun import safe_exp, spectral, sqrt_psd_eigs

__all__ = [
    "bures_wasserstein_distance",
    "bures_wasserstein_distance_squared",
    "bures_wasserstein_geodesic",
    "affine_invariant_distance",
    "log_euclidean_distance",
    "spd_exp",
    "spd_log",
]


# --------------------------------------------------------------------------------------
# Bures-Wasserstein
# --------------------------------------------------------------------------------------


def _eigh_pair(A, B, kind):
    """``(wA, VA, wB, VB)``: eigendecompositions of A and B validated as ``kind``.

    ``kind`` is ``"psd"`` or ``"spd"``; the matrix sizes must agree and the batch shapes
    broadcast (ValueError otherwise).
    """
    _, wA, VA = eigh_checked(A, "A", kind)
    _, wB, VB = eigh_checked(B, "B", kind)
    broadcast_batch(VA, VB, "A", "B")
    return wA, VA, wB, VB


def _bw_aligned_roots(A, B):
    """Return ``(A^{1/2}, B^{1/2} Q)`` with Q the optimal (Procrustes) orthogonal alignment.

    ``Q = U V^T`` from the SVD ``B^{1/2} A^{1/2} = U S V^T`` maximizes
    ``Tr(A^{1/2} B^{1/2} Q)`` over orthogonal Q, so ``||A^{1/2} - B^{1/2} Q||_F = d_BW(A, B)``.
    Valid for every PSD A, B (Q is not unique when B^{1/2} A^{1/2} is singular, but every
    choice the SVD returns is optimal).
    """
    wA, VA, wB, VB = _eigh_pair(A, B, "psd")
    rA = spectral(wA, VA, sqrt_psd_eigs(wA))
    rB = spectral(wB, VB, sqrt_psd_eigs(wB))
    C = rB @ rA
    U, _, Vt = np.linalg.svd(C)
    return np.broadcast_to(rA, C.shape), rB @ (U @ Vt)


def bures_wasserstein_distance_squared(A: ArrayLike, B: ArrayLike) -> float | NDArray[np.float64]:
    r"""Squared Bures-Wasserstein distance between (batches of) PSD matrices.

    .. math::

        d_{BW}(A, B)^2 = \operatorname{Tr} A + \operatorname{Tr} B
            - 2 \operatorname{Tr}\big(A^{1/2} B A^{1/2}\big)^{1/2}
            = \min_{Q \in O(d)} \| A^{1/2} - B^{1/2} Q \|_F^2 .

    This is the squared 2-Wasserstein distance between :math:`\mathcal N(0, A)` and
    :math:`\mathcal N(0, B)`. It is evaluated in the second (Procrustes) form,
    :math:`\|A^{1/2} - B^{1/2} Q^\star\|_F^2` with :math:`Q^\star = U V^\top` from the SVD
    :math:`B^{1/2} A^{1/2} = U S V^\top`: non-negative by construction and accurate for
    nearby matrices (no cancellation between traces). Rank-deficient A, B are fine.

    Parameters
    ----------
    A, B : array-like of shape (d, d) or (..., d, d)
        Symmetric PSD matrices; batch shapes must broadcast.

    Returns
    -------
    d2 : float or ndarray of shape (...)
        Squared distances (a Python float for single matrices).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not (a batch of) symmetric PSD matrices, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import bures_wasserstein_distance_squared
    >>> float(bures_wasserstein_distance_squared(np.diag([4.0, 1.0]), np.diag([1.0, 0.0])))
    2.0
    """
    rA, rBQ = _bw_aligned_roots(A, B)
    diff = rA - rBQ
    d2 = np.einsum("...ij,...ij->...", diff, diff)
    return float(d2) if d2.ndim == 0 else d2


def bures_wasserstein_distance(A: ArrayLike, B: ArrayLike) -> float | NDArray[np.float64]:
    r"""Bures-Wasserstein distance between (batches of) PSD matrices.

    .. math::

        d_{BW}(A, B) = \Big(\operatorname{Tr} A + \operatorname{Tr} B
            - 2 \operatorname{Tr}\big(A^{1/2} B A^{1/2}\big)^{1/2}\Big)^{1/2} .

    See :func:`bures_wasserstein_distance_squared` for how it is evaluated; rank-deficient
    matrices are accepted.

    Parameters
    ----------
    A, B : array-like of shape (d, d) or (..., d, d)
        Symmetric PSD matrices; batch shapes must broadcast.

    Returns
    -------
    d : float or ndarray of shape (...)
        Distances (a Python float for single matrices).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not (a batch of) symmetric PSD matrices, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import bures_wasserstein_distance
    >>> A, B = np.diag([4.0, 1.0]), np.diag([1.0, 9.0])
    >>> round(bures_wasserstein_distance(A, B), 12)  # sqrt((2-1)^2 + (1-3)^2)
    2.2360679775
    """
    rA, rBQ = _bw_aligned_roots(A, B)
    d = np.linalg.norm(rA - rBQ, axis=(-2, -1))
    return float(d) if d.ndim == 0 else d


def _check_times(t):
    arr = as_float_array(t, "t")
    if arr.ndim > 1:
        raise ValueError(f"t must be a scalar or a 1-D array of times, got shape {arr.shape}")
    if arr.size and (arr.min() < 0.0 or arr.max() > 1.0):
        raise ValueError(
            f"t must lie in [0, 1] (the geodesic runs from A at t=0 to B at t=1), "
            f"got values in [{float(arr.min()):.4g}, {float(arr.max()):.4g}]"
        )
    return arr


def bures_wasserstein_geodesic(A: ArrayLike, B: ArrayLike, t: ArrayLike) -> NDArray[np.float64]:
    r"""Point(s) at time ``t`` on the Bures-Wasserstein geodesic from ``A`` to ``B``.

    .. math::

        \gamma(t) = X_t X_t^\top, \qquad
        X_t = (1 - t)\, A^{1/2} + t\, B^{1/2} Q^\star, \qquad
        Q^\star \in \operatorname*{arg\,min}_{Q \in O(d)} \|A^{1/2} - B^{1/2} Q\|_F ,

    with :math:`Q^\star = U V^\top` from the SVD :math:`B^{1/2} A^{1/2} = U S V^\top`
    (orthogonal Procrustes). This is the covariance of the displacement interpolation
    between :math:`\mathcal N(0, A)` and :math:`\mathcal N(0, B)`; it is valid for all PSD
    endpoints, including rank-deficient ones (the rank-one geodesics of Fig. 6 of
    Muzellec, Bach and Rudi). When A is positive definite it equals the transport-map form

    .. math::

        \gamma(t) = \big((1-t) I + t T\big) A \big((1-t) I + t T\big),\qquad
        T = A^{-1/2} \big(A^{1/2} B A^{1/2}\big)^{1/2} A^{-1/2},

    and it has constant speed: :math:`d_{BW}(\gamma(s), \gamma(t)) = |t - s|\, d_{BW}(A, B)`.
    When :math:`B^{1/2} A^{1/2}` is singular the geodesic need not be unique; the one returned
    is a minimizing geodesic all the same.

    Parameters
    ----------
    A, B : array-like of shape (d, d) or (..., d, d)
        Symmetric PSD endpoints; batch shapes must broadcast.
    t : float or array-like of shape (n_times,)
        Time(s) in [0, 1].

    Returns
    -------
    G : ndarray of shape (..., d, d) if ``t`` is a scalar, else (n_times, ..., d, d)
        Symmetric PSD matrices :math:`\gamma(t)`; ``G[k]`` corresponds to ``t[k]``.

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not (a batch of) symmetric PSD matrices, shapes mismatch, or
        ``t`` is not a scalar / 1-D array with values in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import bures_wasserstein_geodesic
    >>> u, v = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    >>> G = bures_wasserstein_geodesic(np.outer(u, u), np.outer(v, v), [0.0, 0.5, 1.0])
    >>> G.shape
    (3, 2, 2)
    >>> np.allclose(G[1], np.outer((u + v) / 2, (u + v) / 2))  # rank one all along
    True
    """
    tt = _check_times(t)
    rA, rBQ = _bw_aligned_roots(A, B)
    tb = tt.reshape(tt.shape + (1,) * rA.ndim)
    X = (1.0 - tb) * rA + tb * rBQ
    G = X @ np.swapaxes(X, -1, -2)
    return 0.5 * (G + np.swapaxes(G, -1, -2))


# --------------------------------------------------------------------------------------
# Affine-invariant and log-Euclidean geometries on SPD matrices
# --------------------------------------------------------------------------------------


def _whiten(X, Y, nameX, nameY, kindY):
    """Scale-normalized whitening of ``Y`` by the SPD matrix ``X``.

    With ``cX = max eig X`` returns ``(R, M, log cX, log cY)`` where ``R = (X / cX)^{1/2}``
    (so ``X^{1/2} Z X^{1/2} = cX R Z R``) and

    - for SPD ``Y`` (``kindY="spd"``): ``cY = max eig Y`` and
      ``M = (X / cX)^{-1/2} (Y / cY) (X / cX)^{-1/2}``, i.e.
      ``X^{-1/2} Y X^{-1/2} = (cY / cX) M``;
    - for symmetric ``Y`` (``kindY="sym"``): ``cY = cX`` and ``M = X^{-1/2} Y X^{-1/2}``.

    Products of unit-scale matrices cannot overflow or underflow whatever the scales of X
    and Y; the callers add the logarithms of the scales back exactly.
    """
    _, wX, VX = eigh_checked(X, nameX, "spd")
    if kindY == "spd":
        Ys, wY, _ = eigh_checked(Y, nameY, "spd")
    else:
        Ys = as_symmetric(Y, nameY)
    broadcast_batch(VX, Ys, nameX, nameY)
    cX = wX[..., -1]
    cY = wY[..., -1] if kindY == "spd" else cX
    u = wX / cX[..., None]
    R = spectral(u, VX, np.sqrt(u))
    iR = spectral(u, VX, 1.0 / np.sqrt(u))
    with np.errstate(over="ignore", invalid="ignore"):
        M = iR @ (Ys / cY[..., None, None]) @ iR
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{nameX}^(-1/2) {nameY} {nameX}^(-1/2) overflows float64")
    return R, 0.5 * (M + np.swapaxes(M, -1, -2)), np.log(cX), np.log(cY)


def affine_invariant_distance(A: ArrayLike, B: ArrayLike) -> float | NDArray[np.float64]:
    r"""Affine-invariant Riemannian distance between (batches of) SPD matrices.

    .. math::

        d_{AI}(A, B) = \big\| \log\big(A^{-1/2} B A^{-1/2}\big) \big\|_F
            = \Big(\sum_i \log^2 \lambda_i(A^{-1} B)\Big)^{1/2} ,

    invariant under congruence: :math:`d_{AI}(G A G^\top, G B G^\top) = d_{AI}(A, B)` for
    every invertible G.

    Parameters
    ----------
    A, B : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices (see :func:`check_spd`); batch shapes broadcast.

    Returns
    -------
    d : float or ndarray of shape (...)
        Distances (a Python float for single matrices).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not SPD, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import affine_invariant_distance
    >>> round(affine_invariant_distance(np.eye(2), np.diag([np.e, 1 / np.e])), 12)
    1.414213562373
    """
    _, M, logcA, logcB = _whiten(A, B, "A", "B", "spd")
    w = np.clip(np.linalg.eigvalsh(M), np.finfo(np.float64).tiny, None)  # M is SPD
    d = np.linalg.norm(np.log(w) + (logcB - logcA)[..., None], axis=-1)
    return float(d) if d.ndim == 0 else d


def spd_exp(X: ArrayLike, V: ArrayLike) -> NDArray[np.float64]:
    r"""Exponential map of the affine-invariant metric on SPD matrices.

    .. math::

        \operatorname{Exp}_X(V) = X^{1/2} \exp\big(X^{-1/2} V X^{-1/2}\big) X^{1/2} ,

    the point reached at time 1 by the geodesic leaving X with symmetric velocity V.

    Parameters
    ----------
    X : array-like of shape (d, d) or (..., d, d)
        Base point(s), symmetric positive definite.
    V : array-like of shape (d, d) or (..., d, d)
        Tangent vector(s), symmetric; batch shapes broadcast with ``X``.

    Returns
    -------
    Y : ndarray of shape (..., d, d)
        Symmetric positive definite.

    Raises
    ------
    ValueError
        If ``X`` is not SPD, ``V`` is not symmetric, shapes mismatch, or the exponential
        overflows.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import spd_exp, spd_log
    >>> X, Y = np.diag([1.0, 2.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> np.allclose(spd_exp(X, spd_log(X, Y)), Y)
    True
    """
    R, M, logcX, _ = _whiten(X, V, "X", "V", "sym")
    w, U = np.linalg.eigh(M)
    E = spectral(w, U, safe_exp(w + logcX[..., None], "spd_exp"))  # cX exp(M)
    Y = R @ E @ R
    return 0.5 * (Y + np.swapaxes(Y, -1, -2))


def spd_log(X: ArrayLike, Y: ArrayLike) -> NDArray[np.float64]:
    r"""Logarithm map of the affine-invariant metric on SPD matrices.

    .. math::

        \operatorname{Log}_X(Y) = X^{1/2} \log\big(X^{-1/2} Y X^{-1/2}\big) X^{1/2} ,

    the inverse of :func:`spd_exp`; its Riemannian norm
    :math:`\|X^{-1/2} \operatorname{Log}_X(Y) X^{-1/2}\|_F` equals
    :func:`affine_invariant_distance` ``(X, Y)``.

    Parameters
    ----------
    X, Y : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices; batch shapes broadcast.

    Returns
    -------
    V : ndarray of shape (..., d, d)
        Symmetric tangent vector(s) at ``X``.

    Raises
    ------
    ValueError
        If ``X`` or ``Y`` is not SPD, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import spd_log
    >>> spd_log(np.eye(2), np.diag([np.e, 1.0]))
    array([[1., 0.],
           [0., 0.]])
    """
    R, M, logcX, logcY = _whiten(X, Y, "X", "Y", "spd")
    w, U = np.linalg.eigh(M)
    logw = np.log(np.clip(w, np.finfo(np.float64).tiny, None)) + (logcY - logcX)[..., None]
    L = spectral(w, U, np.exp(logcX)[..., None] * logw)  # cX log(X^{-1/2} Y X^{-1/2})
    V = R @ L @ R
    return 0.5 * (V + np.swapaxes(V, -1, -2))


def log_euclidean_distance(A: ArrayLike, B: ArrayLike) -> float | NDArray[np.float64]:
    r"""Log-Euclidean distance between (batches of) SPD matrices.

    .. math::

        d_{LE}(A, B) = \| \log A - \log B \|_F .

    Parameters
    ----------
    A, B : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices; batch shapes broadcast.

    Returns
    -------
    d : float or ndarray of shape (...)
        Distances (a Python float for single matrices).

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not SPD, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import log_euclidean_distance
    >>> round(log_euclidean_distance(np.eye(2), np.diag([np.e, 1.0])), 12)
    1.0
    """
    wA, VA, wB, VB = _eigh_pair(A, B, "spd")
    D = spectral(wA, VA, np.log(wA)) - spectral(wB, VB, np.log(wB))
    d = np.linalg.norm(D, axis=(-2, -1))
    return float(d) if d.ndim == 0 else d
