"""The building blocks of CNLS (:class:`~psdsos.estimators.PiecewiseLinearConvexRegressor`):
the parameter checks, the initial pairs (Delaunay or nearest-neighbour graph), Afriat's
inequalities as a sparse matrix, the standardization and the max-affine predictor.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.spatial import Delaunay, QhullError, cKDTree

from psdsos._params import Interval
from psdsos._validation import scaled_mean_std

__all__: list[str] = []

# Largest input dimension for which n_neighbors="auto" starts from the Delaunay graph (its
# size grows like n^ceil(d/2) in the worst case); above it, k nearest neighbours.
_DELAUNAY_MAX_DIM = 3


class _NeighborsConstraint:
    """``"auto"`` or an integer >= 1."""

    def check(self, name, value, owner):
        if isinstance(value, str) and value.lower() == "auto":
            return
        Interval(numbers.Integral, 1, None).check(name, value, owner)


class _FeatureSubset:
    """``None``, a bool (``True``: every feature, ``False``: none) or a 1-D sequence of
    non-negative feature indices (integers; whole-number floats, such as an index array read
    back from a saved file, count as integers).  The range is checked in ``fit``."""

    def check(self, name, value, owner):
        _feature_indices(value, name, owner, None)


def _feature_indices(value, name, owner, n_features):
    """Sorted unique indices of ``value`` (see :class:`_FeatureSubset`), all features for
    ``True``, none for ``None`` / ``False``, each below ``n_features``; with ``n_features=None``
    only the form is checked."""
    if value is None or isinstance(value, (bool, np.bool_)):
        if value and n_features is not None:
            return np.arange(n_features)
        return np.zeros(0, dtype=np.intp)
    what = (f"{name} of {owner} must be None, True, False or a list of feature indices "
            "(integers >= 0)")
    if isinstance(value, (str, bytes, dict, set)) or not hasattr(value, "__len__"):
        raise ValueError(f"{what}, got {value!r}")
    try:
        items = list(value)
    except TypeError:  # a 0-d array
        raise ValueError(f"{what}, got {value!r}") from None
    if any(isinstance(v, (bool, np.bool_)) for v in items):
        raise ValueError(f"{what}, got {value!r}")
    try:
        A = np.asarray(items, dtype=np.float64) if items else np.zeros(0)
    except (TypeError, ValueError):
        raise ValueError(f"{what}, got {value!r}") from None
    if A.ndim != 1 or not np.all(np.isfinite(A)) or np.any(A != np.round(A)) or np.any(A < 0):
        raise ValueError(f"{what}, got {value!r}")
    if n_features is None:  # the check of _FeatureSubset (no range yet)
        return A
    if A.size and A.max() >= n_features:
        raise ValueError(
            f"{name} of {owner} holds the feature index {int(A.max())}, out of range for "
            f"{n_features} feature(s) (indices 0 to {n_features - 1})"
        )
    return np.unique(A.astype(np.intp))


def _feature_signs(increasing, decreasing, owner, n_features):
    """Per feature +1 (slopes >= 0), -1 (slopes <= 0) or 0 (free); a feature in both
    ``increasing`` and ``decreasing`` is refused."""
    inc = _feature_indices(increasing, "increasing", owner, n_features)
    dec = _feature_indices(decreasing, "decreasing", owner, n_features)
    both = np.intersect1d(inc, dec)
    if both.size:
        raise ValueError(
            f"increasing and decreasing of {owner} both hold the feature(s) "
            f"{both.tolist()}: a fit monotone both ways is constant in them; drop the "
            "feature instead"
        )
    signs = np.zeros(n_features, dtype=np.int8)
    signs[inc], signs[dec] = 1, -1
    return signs


def _knn_pairs(X, k):
    """Ordered pairs (i, j): j among the k nearest neighbours of i (j != i)."""
    n = X.shape[0]
    k = min(k, n - 1)
    _, nb = cKDTree(X).query(X, k + 1)
    nb = nb.reshape(n, k + 1)
    I = np.repeat(np.arange(n), k + 1)
    J = nb.ravel()
    keep = I != J
    return I[keep], J[keep]


def _initial_pairs(X, n_neighbors):
    """Starting set of ordered pairs (i, j), both directions of each neighbour relation.

    ``"auto"``: consecutive points in sorted order for d = 1 (the 1-D Delaunay graph, with
    which the relaxation is already exact for distinct points), the Delaunay graph for
    d = 2, 3 (points Qhull leaves out, such as duplicates, get their d + 1 nearest
    neighbours), ``2 d + 2`` nearest neighbours otherwise or when Qhull fails.  An integer:
    that many nearest neighbours.
    """
    n, p = X.shape
    if not isinstance(n_neighbors, str):
        I, J = _knn_pairs(X, n_neighbors)
    elif p == 1:
        order = np.argsort(X[:, 0], kind="stable")
        I, J = order[:-1], order[1:]
    else:
        I = J = None
        if p <= _DELAUNAY_MAX_DIM and n >= p + 2:
            try:
                tri = Delaunay(X)
            except (QhullError, ValueError):
                tri = None
            if tri is not None:
                indptr, indices = tri.vertex_neighbor_vertices
                I = np.repeat(np.arange(n), np.diff(indptr))
                J = indices
                lonely = np.flatnonzero(np.diff(indptr) == 0)
                if lonely.size:
                    Ik, Jk = _knn_pairs(X, p + 1)
                    sel = np.isin(Ik, lonely)
                    I, J = np.concatenate([I, Ik[sel]]), np.concatenate([J, Jk[sel]])
        if I is None:
            I, J = _knn_pairs(X, 2 * p + 2)
    keys = np.unique(np.concatenate([I * n + J, J * n + I]))
    return keys


def _afriat_matrix(X, I, J):
    r"""Sparse A with (A v)_r = theta_j - theta_i - zeta_i^T (x_j - x_i) for pair r = (i, j).

    ``v = [theta (n); zeta (n p), row-major]``; A has 2 + p non-zeros per row.
    """
    n, p = X.shape
    m = I.size
    D = X[J] - X[I]
    rows = np.repeat(np.arange(m), 2 + p)
    cols = np.column_stack([J, I, n + I[:, None] * p + np.arange(p)]).ravel()
    vals = np.column_stack([np.ones(m), -np.ones(m), -D]).ravel()
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, n * (p + 1)))


def _standardize(A):
    """Columns of A centred and scaled to unit standard deviation, without overflow or
    underflow: each column is first divided by its largest absolute value (a power-free
    rescaling that keeps every finite column finite).  Returns (standardized, mean, scale)
    with A = mean + scale * standardized; a constant column gets scale = its largest absolute
    value (or 1 when it is zero), so that the standardized column is 0."""
    mean, std = scaled_mean_std(A, axis=0)
    ref = np.max(np.abs(A), axis=0)
    ref = np.where(ref > 0, ref, 1.0)
    scale = np.where(std > 0, std, ref)
    # in units of the largest magnitude, so that A - mean cannot overflow
    return (A / ref - mean / ref) / (scale / ref), mean, scale


