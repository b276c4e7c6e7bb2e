"""Spectral functions of symmetric matrices, batched over leading axes via ``np.linalg.eigh``."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos._validation import check_scalar
from psdsos.geometry._checks import as_square, eigh_checked

__all__ = ["sym", "sqrtm_psd", "powm_spd", "logm_spd", "expm_sym", "invsqrtm_spd"]

#: log of the largest finite float64: exp(x) overflows beyond it.
_LOG_MAX = float(np.log(np.finfo(np.float64).max))


def spectral(w, V, fw=None):
    """``V diag(fw) V^T`` for a batch, symmetrized exactly (``fw`` defaults to ``w``)."""
    fw = w if fw is None else fw
    M = (V * fw[..., None, :]) @ np.swapaxes(V, -1, -2)
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def sqrt_psd_eigs(w):
    """Square roots of PSD eigenvalues, those within rounding of 0 set to exactly 0.

    ``eigh`` resolves eigenvalues only to about ``d * eps * max|w|``; below that threshold
    (negative rounding included) an eigenvalue is indistinguishable from 0, and taking its
    square root would turn noise of size eps into noise of size sqrt(eps).
    """
    thr = w.shape[-1] * np.finfo(np.float64).eps * np.abs(w).max(axis=-1, keepdims=True)
    return np.sqrt(np.where(w > thr, w, 0.0))


def safe_exp(x, name):
    """``exp(x)`` raising ValueError (naming ``name``) instead of overflowing."""
    if x.size and float(np.max(x)) > _LOG_MAX:
        raise ValueError(
            f"{name}: exponent {float(np.max(x)):.4g} overflows float64 (limit {_LOG_MAX:.4g})"
        )
    return np.exp(x)


def sym(A: ArrayLike) -> NDArray[np.float64]:
    r"""Symmetric part of (a batch of) square matrices.

    .. math::

        \operatorname{sym}(A) = \tfrac12 (A + A^\top).

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Square matrices, finite.

    Returns
    -------
    S : ndarray of shape (..., d, d)
        Exactly symmetric (bitwise) float64 array.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import sym
    >>> sym(np.array([[1.0, 2.0], [0.0, 1.0]]))
    array([[1., 1.],
           [1., 1.]])
    """
    arr = as_square(A, "A")
    return 0.5 * (arr + np.swapaxes(arr, -1, -2))


def sqrtm_psd(A: ArrayLike) -> NDArray[np.float64]:
    r"""Principal square root of (a batch of) PSD matrices.

    With the eigendecomposition :math:`A = V \operatorname{diag}(\lambda) V^\top`,

    .. math::

        A^{1/2} = V \operatorname{diag}\big(\sqrt{\lambda^+}\big) V^\top ,
        \qquad
        \lambda^+_i = \begin{cases} \lambda_i & \lambda_i > d\, \epsilon \max_j |\lambda_j| \\
                                      0 & \text{otherwise} \end{cases}

    (:math:`\epsilon` the float64 machine epsilon): eigenvalues indistinguishable from 0 at
    the accuracy of ``eigh``, negative rounding included, are set to 0, so that the square
    root of a rank-deficient matrix is rank-deficient too. ``A`` is checked PSD to a relative
    tolerance of 1e-8 first (see :func:`check_psd`).

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Symmetric positive semi-definite matrices.

    Returns
    -------
    R : ndarray of shape (..., d, d)
        Symmetric PSD with :math:`R R = A` (up to rounding).

    Raises
    ------
    ValueError
        If ``A`` is not a (batch of) symmetric PSD matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import sqrtm_psd
    >>> sqrtm_psd(np.diag([4.0, 0.0]))
    array([[2., 0.],
           [0., 0.]])
    """
    _, w, V = eigh_checked(A, "A", "psd")
    return spectral(w, V, sqrt_psd_eigs(w))


def powm_spd(A: ArrayLike, p: float) -> NDArray[np.float64]:
    r"""Real power of (a batch of) SPD matrices.

    .. math::

        A^{p} = V \operatorname{diag}(\lambda^{p}) V^\top ,
        \qquad A = V \operatorname{diag}(\lambda) V^\top,\ \lambda > 0 .

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices (see :func:`check_spd`).
    p : float
        Exponent (any finite real number).

    Returns
    -------
    P : ndarray of shape (..., d, d)
        Symmetric positive definite.

    Raises
    ------
    ValueError
        If ``A`` is not SPD, ``p`` is not a finite real, or :math:`\lambda^p` overflows.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import powm_spd
    >>> powm_spd(np.diag([4.0, 9.0]), -0.5)
    array([[0.5       , 0.        ],
           [0.        , 0.33333333]])
    """
    p = check_scalar(p, "p")
    _, w, V = eigh_checked(A, "A", "spd")
    return spectral(w, V, safe_exp(p * np.log(w), "powm_spd"))


def invsqrtm_spd(A: ArrayLike) -> NDArray[np.float64]:
    r"""Inverse square root of (a batch of) SPD matrices.

    .. math::

        A^{-1/2} = V \operatorname{diag}(\lambda^{-1/2}) V^\top .

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices.

    Returns
    -------
    R : ndarray of shape (..., d, d)
        Symmetric positive definite with :math:`R A R = I` (up to rounding).

    Raises
    ------
    ValueError
        If ``A`` is not SPD.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import invsqrtm_spd
    >>> invsqrtm_spd(np.diag([4.0, 1.0]))
    array([[0.5, 0. ],
           [0. , 1. ]])
    """
    _, w, V = eigh_checked(A, "A", "spd")
    return spectral(w, V, 1.0 / np.sqrt(w))


def logm_spd(A: ArrayLike) -> NDArray[np.float64]:
    r"""Principal matrix logarithm of (a batch of) SPD matrices.

    .. math::

        \log A = V \operatorname{diag}(\log \lambda) V^\top .

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Symmetric positive definite matrices.

    Returns
    -------
    L : ndarray of shape (..., d, d)
        Symmetric, with :math:`\exp(L) = A`.

    Raises
    ------
    ValueError
        If ``A`` is not SPD.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import logm_spd
    >>> np.allclose(logm_spd(np.e * np.eye(2)), np.eye(2))
    True
    """
    _, w, V = eigh_checked(A, "A", "spd")
    return spectral(w, V, np.log(w))


def expm_sym(S: ArrayLike) -> NDArray[np.float64]:
    r"""Matrix exponential of (a batch of) symmetric matrices.

    .. math::

        \exp S = V \operatorname{diag}(e^{\lambda}) V^\top ,
        \qquad S = V \operatorname{diag}(\lambda) V^\top .

    Parameters
    ----------
    S : array-like of shape (d, d) or (..., d, d)
        Symmetric matrices (relative asymmetry up to 1e-8 is accepted and removed).

    Returns
    -------
    E : ndarray of shape (..., d, d)
        Symmetric positive definite.

    Raises
    ------
    ValueError
        If ``S`` is not symmetric or an eigenvalue is too large to exponentiate in float64.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import expm_sym, logm_spd
    >>> S = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> np.allclose(logm_spd(expm_sym(S)), S)
    True
    """
    _, w, V = eigh_checked(S, "S", "sym")
    return spectral(w, V, safe_exp(w, "expm_sym"))
