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
  data would give (``psdsos._validation.scaled_mean_std(..., weights=w)``,
  ``psdsos.kernels.scale_bandwidth(X, w)`` through ``resolve_kernel``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import _check_sample_weight

__all__ = ["check_sample_weight"]


def check_sample_weight(sample_weight: ArrayLike | None, X: np.ndarray, y: np.ndarray, *,
                        min_positive: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate ``sample_weight`` (scikit-learn's ``_check_sample_weight``: shape (n,),
    finite, >= 0) and drop the rows of weight 0; at least ``min_positive`` rows must keep a
    positive weight.

    Returns
    -------
    X, y, w : the kept rows and their weights (``w`` is None when ``sample_weight`` is None).

    Raises
    ------
    ValueError
        Negative, non-finite or mis-shaped weights, or fewer than ``min_positive`` positive
        weights.
    """
    if sample_weight is None:
        return X, y, None
    w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite")
    keep = w > 0
    if not np.any(keep):
        raise ValueError("sample_weight must have at least one positive entry, got all zeros")
    if keep.sum() < min_positive:
        raise ValueError(f"sample_weight must have at least {min_positive} positive entries "
                         f"(rows of weight 0 are dropped), got {int(keep.sum())}")
    if np.all(keep):
        return X, y, w
    return X[keep], y[keep], w[keep]


