r"""The data of a landmark (Nystrom) convex regression reduced to one small triangular factor.

:func:`compress_block` folds a block of samples into the upper triangular factor T of the
thin QR decomposition of the weighted rows S [E, K(X, C) R^{-1}, y];
:func:`combine_blocks` merges the blocks' factors (e.g. computed on the blocks of a dask
array); :func:`row_scales` gives the rows' weights S.
"""

from __future__ import annotations

import numpy as np

__all__ = ["compress_block", "combine_blocks", "row_scales"]


def compress_block(kernel, X, C, R, y, fit_intercept, sw=None, T=None):
    """Fold the rows S [E, K(X, C) R^{-1}, y] of one block of samples into the upper
    triangular factor T (s x s, s = e + q + 1; None for the first block), by row chunks
    within the working-memory budget: T^T T = (previous rows)^T (previous rows) + the
    block's, with the stability of a QR decomposition (see
    :class:`ConvexRegressionNystromProblem`).  ``sw``: the block's row scales."""
    import scipy.linalg as sla

    from psdsos._config import row_chunks

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    q = C.shape[0]
    e = p + 1 if fit_intercept else 0
    s = e + q + 1
    T = np.zeros((0, s)) if T is None else T
    for sl in row_chunks(n, 8 * (3 * s + 2 * q)):
        rows = sl.stop - sl.start
        A = np.empty((rows, s))
        if e:
            A[:, 0] = 1.0
            A[:, 1:e] = X[sl]
        A[:, e:e + q] = sla.solve_triangular(R, np.asarray(kernel(X[sl], C)).T, trans="T",
                                             lower=False).T
        A[:, -1] = y[sl]
        if sw is not None:
            A *= np.asarray(sw, dtype=np.float64)[sl, None]
        T = sla.qr(np.vstack([T, A]), mode="r", overwrite_a=True, check_finite=False)[0][:s]
    return T


def combine_blocks(factors, s):
    """The factor T of all the blocks' rows from the blocks' factors (one QR of their
    stack), padded to s x s."""
    import scipy.linalg as sla

    T = np.vstack([np.zeros((0, s)), *factors])
    if T.shape[0] > s:
        T = sla.qr(T, mode="r", check_finite=False)[0][:s]
    if T.shape[0] < s:
        T = np.vstack([T, np.zeros((s - T.shape[0], s))])
    return T


def row_scales(sample_weight, n, normalize=True):
    r"""Square roots of the normalized weights, :math:`s_i = \sqrt{n w_i / \sum_j w_j}`
    (None without weights), so that :math:`\frac1n\|S r\|^2 = \sum_i w_i r_i^2 /
    \sum_j w_j`: the weighted data term in the form of the unweighted one.
    ``normalize=False``: :math:`s_i = \sqrt{n w_i}`, the data term :math:`\sum_i w_i r_i^2`
    (the weighted least-squares steps of a general loss)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"sample_weight must be a finite positive array of shape ({n},)")
    if not normalize:
        return np.sqrt(n * w)
    w = w / float(np.max(w))
    return np.sqrt(n * w / float(np.sum(w)))
