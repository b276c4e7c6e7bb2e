"""Scorers of the grid search: the estimator's own score and the negated mean squared error."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import _check_sample_weight

__all__ = ["neg_mse_scorer"]


def neg_mse_scorer(estimator: Any, X: ArrayLike, M: ArrayLike,
                   sample_weight: ArrayLike | None = None) -> float:
    r"""Negated mean squared Frobenius error, a scorer for 3-D targets.

    .. math::

        -\frac{1}{m}\sum_{i=1}^m \|\hat F(x_i) - \mathbf M_i\|_F^2
        \quad\text{or, with weights,}\quad
        -\frac{\sum_i w_i \|\hat F(x_i) - \mathbf M_i\|_F^2}{\sum_i w_i}.

    Usable as ``scoring=`` in :func:`grid_search_cv` and in scikit-learn's
    ``GridSearchCV`` (whose built-in ``"neg_mean_squared_error"`` rejects 3-D targets).
    Unlike :math:`R^2`, it is defined on test folds of a single sample (leave-one-out).

    Parameters
    ----------
    estimator : fitted estimator with ``predict``
    X : array-like of shape (m, n_features)
    M : array-like of shape (m, d, d) (or (m,) for scalar targets)
    sample_weight : array-like of shape (m,), optional
        Non-negative weights of the rows (a weighted mean).

    Returns
    -------
    float
    """
    P = np.asarray(estimator.predict(X), dtype=np.float64)
    M = np.asarray(M, dtype=np.float64)
    if P.shape != M.shape:
        raise ValueError(f"predictions of shape {P.shape} do not match targets {M.shape}")
    diff = (P - M).reshape(len(P), -1)
    err = np.sum(diff * diff, axis=1)
    if sample_weight is None:
        return -float(np.mean(err))
    w = _check_sample_weight(sample_weight, P.reshape(len(P), -1), dtype=np.float64,
                             ensure_non_negative=True)
    if not np.sum(w) > 0:
        raise ValueError("sample_weight of the scored rows sums to 0")
    return -float(w @ err / np.sum(w))


def _default_score(estimator, X, M, sample_weight=None):
    if sample_weight is None:
        return float(estimator.score(X, M))
    return float(estimator.score(X, M, sample_weight=sample_weight))


_SCORERS = {"score": _default_score, "neg_mse": neg_mse_scorer}


def _check_scoring(scoring):
    if scoring is None:
        return None, "score"
    if callable(scoring):
        return scoring, "callable"
    if isinstance(scoring, str) and scoring in _SCORERS:
        return _SCORERS[scoring], scoring
    raise ValueError(
        f"scoring must be None, 'score', 'neg_mse' or a callable (estimator, X, M) -> float, "
        f"got {scoring!r}"
    )
