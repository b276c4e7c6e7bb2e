"""Validation of (batches of) symmetric, PSD and SPD matrices and of sphere points.

Every function here raises ``ValueError`` naming the argument and what was expected.
The private helpers return the eigendecomposition they computed so that callers never
decompose the same matrix twice.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["check_psd", "check_spd"]

#: Default relative asymmetry accepted: max|A - A^T| <= SYM_RTOL * max|A| (per matrix).
SYM_RTOL = 1e-8
#: Default relative tolerance on negative eigenvalues for PSD input.
PSD_TOL = 1e-8
#: Default relative floor on eigenvalues for SPD input (condition number below 1 / SPD_TOL).
SPD_TOL = 1e-12
#: Accepted deviation of a sphere point from unit norm.
UNIT_TOL = 1e-8


def as_float_array(A, name):
    """``A`` as a finite real float64 array (no shape check)."""
    if np.iscomplexobj(A):
        raise ValueError(f"{name} must be real, got a complex array")
    try:
        arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(A).__name__}: {exc}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def as_square(A, name):
    """``A`` as a finite float array of shape (..., d, d) with d >= 1."""
    arr = as_float_array(A, name)
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2] or arr.shape[-1] < 1:
        raise ValueError(
            f"{name} must be a square matrix of shape (d, d) or a batch (..., d, d) with d >= 1, "
            f"got shape {arr.shape}"
        )
    return arr


def as_symmetric(A, name, sym_tol=SYM_RTOL):
    """``A`` validated as (a batch of) symmetric matrices; the exact symmetric part is returned."""
    arr = as_square(A, name)
    if arr.size == 0:
        return arr
    sym_tol = _check_tol(sym_tol, "sym_tol")
    At = np.swapaxes(arr, -1, -2)
    scale = np.abs(arr).max(axis=(-2, -1))
    asym = np.abs(arr - At).max(axis=(-2, -1))
    bad = asym > sym_tol * scale
    if np.any(bad):
        worst = float(np.max(asym / np.where(scale > 0, scale, 1.0)))
        raise ValueError(
            f"{name} must be symmetric; largest relative asymmetry max|{name} - {name}^T| / "
            f"max|{name}| = {worst:.3g} exceeds {sym_tol:g}"
        )
    return 0.5 * (arr + At)


def _check_tol(tol, name):
    if isinstance(tol, bool) or not np.isscalar(tol) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"{name} must be a finite non-negative real number, got {tol!r}")
    return float(tol)


def eigh_checked(A, name, kind, tol=None, sym_tol=SYM_RTOL):
    """Validate ``A`` and return ``(A_sym, w, V)`` with ``A_sym = V diag(w) V^T``.

    ``kind`` is ``"sym"`` (no eigenvalue condition), ``"psd"`` (``w_min >= -tol * max|w|``)
    or ``"spd"`` (``w_min > tol * max|w|``), per matrix of the batch.
    """
    S = as_symmetric(A, name, sym_tol)
    w, V = np.linalg.eigh(S)
    if kind == "sym" or S.size == 0:
        return S, w, V
    if kind == "psd":
        tol = _check_tol(PSD_TOL if tol is None else tol, "tol")
    else:
        tol = _check_tol(SPD_TOL if tol is None else tol, "tol")
    scale = np.abs(w).max(axis=-1)
    lo = w[..., 0]
    if kind == "psd":
        bad = lo < -tol * scale
        if np.any(bad):
            i = np.unravel_index(
                np.argmax(np.where(bad, -lo / np.where(scale > 0, scale, 1), 0)), bad.shape
            )
            raise ValueError(
                f"{name} must be positive semi-definite; found smallest eigenvalue "
                f"{float(lo[i]):.3g} below -tol * max|eigenvalue| = {-tol * float(scale[i]):.3g}"
            )
    else:
        bad = lo <= tol * scale
        if np.any(bad):
            ratio = lo / np.where(scale > 0, scale, 1.0)
            i = np.unravel_index(np.argmin(np.where(bad, ratio, np.inf)), bad.shape)
            raise ValueError(
                f"{name} must be symmetric positive definite; found smallest eigenvalue "
                f"{float(lo[i]):.3g} not above tol * max|eigenvalue| = {tol * float(scale[i]):.3g}"
            )
    return S, w, V


def check_psd(A: ArrayLike, name: str = "A", *, tol: float = PSD_TOL,
              sym_tol: float = SYM_RTOL) -> NDArray[np.float64]:
    r"""Validate (a batch of) symmetric positive semi-definite matrices.

    Accepts :math:`A` when, for every matrix of the batch,

    .. math::

        \max_{ij} |A_{ij} - A_{ji}| \le \mathrm{sym\_tol} \cdot \max_{ij} |A_{ij}|,
        \qquad
        \lambda_{\min}(A) \ge -\mathrm{tol} \cdot \max_i |\lambda_i(A)| .

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Matrix or batch of matrices, d >= 1, finite.
    name : str, default="A"
        Argument name used in error messages.
    tol : float, default=1e-8
        Relative tolerance on negative eigenvalues (rounding errors).
    sym_tol : float, default=1e-8
        Relative tolerance on the asymmetry.

    Returns
    -------
    A : ndarray of shape (..., d, d)
        The exact symmetric part :math:`(A + A^T)/2` as float64. Eigenvalues are not clipped.

    Raises
    ------
    ValueError
        If ``A`` is not numeric, contains NaN or inf, is not square, is not symmetric or has an
        eigenvalue below the tolerance; the message names ``name``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import check_psd
    >>> check_psd(np.array([[1.0, 1.0], [1.0, 1.0]]), "M").shape
    (2, 2)
    """
    S, _, _ = eigh_checked(A, name, "psd", tol, sym_tol)
    return S


def check_spd(A: ArrayLike, name: str = "A", *, tol: float = SPD_TOL,
              sym_tol: float = SYM_RTOL) -> NDArray[np.float64]:
    r"""Validate (a batch of) symmetric positive definite matrices.

    Accepts :math:`A` when, for every matrix of the batch, it is symmetric to relative
    tolerance ``sym_tol`` (see :func:`check_psd`) and

    .. math::

        \lambda_{\min}(A) > \mathrm{tol} \cdot \max_i |\lambda_i(A)| ,

    i.e. its condition number is below ``1 / tol``.

    Parameters
    ----------
    A : array-like of shape (d, d) or (..., d, d)
        Matrix or batch of matrices, d >= 1, finite.
    name : str, default="A"
        Argument name used in error messages.
    tol : float, default=1e-12
        Relative floor on the smallest eigenvalue.
    sym_tol : float, default=1e-8
        Relative tolerance on the asymmetry.

    Returns
    -------
    A : ndarray of shape (..., d, d)
        The exact symmetric part :math:`(A + A^T)/2` as float64.

    Raises
    ------
    ValueError
        If ``A`` is not numeric, contains NaN or inf, is not square, is not symmetric or is not
        positive definite to the tolerance; the message names ``name``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import check_spd
    >>> check_spd(np.eye(3), "X").shape
    (3, 3)
    """
    S, _, _ = eigh_checked(A, name, "spd", tol, sym_tol)
    return S


def check_sphere_points(x, name):
    """``x`` as a float array (..., k), k >= 1, of unit rows (renormalized exactly)."""
    arr = as_float_array(x, name)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(
            f"{name} must be an array of shape (k,) or (..., k) with k >= 1, got shape {arr.shape}"
        )
    nrm = np.linalg.norm(arr, axis=-1, keepdims=True)
    dev = np.abs(nrm - 1.0)
    if np.any(dev > UNIT_TOL):
        raise ValueError(
            f"{name} must hold unit-norm vectors (points of the sphere); largest deviation "
            f"| ||{name}|| - 1 | = {float(dev.max()):.3g} exceeds {UNIT_TOL:g}"
        )
    return arr / nrm


def broadcast_batch(A, B, nameA, nameB):
    """Check that two (..., d, d) batches have the same d and broadcastable batch shapes."""
    if A.shape[-1] != B.shape[-1]:
        raise ValueError(
            f"{nameA} and {nameB} must have the same matrix size d, got {A.shape} and {B.shape}"
        )
    try:
        return np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch shapes of {nameA} {A.shape[:-2]} and {nameB} {B.shape[:-2]} do not broadcast"
        ) from None
