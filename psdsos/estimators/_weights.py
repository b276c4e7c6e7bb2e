r"""Sample weights with scikit-learn semantics, shared by the convex-regression estimators.

Conventions (:class:`psdsos.ConvexRegressor`, :class:`psdsos.PiecewiseLinearConvexRegressor`,
:class:`psdsos.estimators.KernelRidgeRegressor`):

* the data term is the weighted mean :math:`\frac{1}{\sum_i w_i}\sum_i w_i\,\ell(y_i - f(x_i))`,
  so that integer weights are duplicated rows and multiplying every weight by a constant
  changes nothing;
* rows of weight 0 are removed before anything else (bandwidth, standardization, constraint
  points): the fit equals the fit without those rows;
* every statistic of the data used by a fit (the mean and spread of y, the bandwidth
  ``sigma="scale"``, the centre of x) is the weighted one, which is what the duplicated
  data would give.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from psdsos.kernels import Kernel, get_kernel

__all__ = ["check_sample_weight", "weighted_mean_std", "weighted_scale_bandwidth",
           "resolve_kernel_weighted", "first_unique_rows"]


def check_sample_weight(sample_weight, X, y):
    """Validate ``sample_weight`` (scikit-learn's ``_check_sample_weight``: shape (n,),
    finite, >= 0) and drop the rows of weight 0.

    Returns
    -------
    X, y, w : the kept rows and their weights (``w`` is None when ``sample_weight`` is None).

    Raises
    ------
    ValueError
        Negative, non-finite or mis-shaped weights, or weights that are all 0.
    """
    if sample_weight is None:
        return X, y, None
    w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite")
    keep = w > 0
    if not np.any(keep):
        raise ValueError("sample_weight must have at least one positive entry, got all zeros")
    if np.all(keep):
        return X, y, w
    return X[keep], y[keep], w[keep]


def weighted_mean_std(a, w=None, *, center=True):
    """Weighted mean and standard deviation of the entries of ``a`` (1-D, weights ``w`` per
    entry; None: unweighted), without overflow (computed on a / max|a|).  ``center=False``:
    the weighted root mean square and a mean of 0."""
    a = np.asarray(a, dtype=np.float64)
    s = float(np.max(np.abs(a))) if a.size else 0.0
    if s == 0.0:
        return 0.0, 0.0
    an = a / s
    p = np.full(a.shape, 1.0 / a.size) if w is None else np.asarray(w) / float(np.sum(w))
    m = float(p @ an) if center else 0.0
    sd = float(np.sqrt(max(float(p @ ((an - m) ** 2)), 0.0)))
    return s * m, s * sd


def weighted_scale_bandwidth(X, w=None):
    r"""``sigma="scale"`` with weights: :math:`\sqrt{p\operatorname{Var}_w(X)/2}`, the
    variance of all entries of X pooled, row i counted w_i times (equal to
    :func:`psdsos.kernels.scale_bandwidth` of the duplicated rows for integer weights)."""
    from psdsos.kernels import scale_bandwidth

    if w is None:
        return scale_bandwidth(X)
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    _, sd = weighted_mean_std(X.ravel(), np.repeat(w, p))
    sigma = sd * np.sqrt(p / 2.0)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(
            "X has zero spread over the rows of positive weight: sigma='scale' derives the "
            "kernel bandwidth from the spread of the training inputs; give a numeric sigma > 0"
        )
    return float(sigma)


def resolve_kernel_weighted(kernel, sigma, X, w=None):
    """:func:`psdsos.estimators._base.resolve_kernel` with the weighted ``sigma="scale"``."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(sigma, str) and sigma == "scale":
        sigma = weighted_scale_bandwidth(X, w)
    return get_kernel(kernel, sigma)


def first_unique_rows(X):
    """The distinct rows of X in the order of their first occurrence (X itself when its rows
    are distinct), so that choices made from the rows do not depend on duplicates."""
    _, idx = np.unique(X, axis=0, return_index=True)
    if idx.size == X.shape[0]:
        return X
    return X[np.sort(idx)]
