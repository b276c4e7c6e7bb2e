r"""Scorers of the grid search: the estimator's own score, the negated mean squared error,
and the negated mean squared distances of PSD matrices in the geometries they are judged by.

For PSD targets :math:`\mathbf M_i` and predictions :math:`\hat F(x_i)`,

.. math::

    \text{MSD}_\delta = \frac{1}{m}\sum_{i=1}^m \delta\big(\mathbf M_i, \hat F(x_i)\big)^2,
    \qquad \delta \in \{d_{BW}, d_{AI}, d_{LE}\},

the Bures-Wasserstein, affine-invariant and log-Euclidean distances of
:mod:`psdsos.geometry` (:math:`d_{BW}` is the geometry of the PSD paper's geodesic
interpolation task, section 3.3, Figures 1 and 6).  The scorers return
:math:`-\text{MSD}_\delta` (higher is better, as scikit-learn's ``neg_*`` scorers).
:math:`d_{AI}` and :math:`d_{LE}` are infinite for singular matrices, and a PSD model's
predictions may be singular: both arguments get their eigenvalues clipped below at
``eig_floor`` times the largest eigenvalue of the targets.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import get_scorer
from sklearn.utils.validation import _check_sample_weight

from psdsos._validation import check_psd_targets
from psdsos.geometry import bures_wasserstein_distance_squared, check_psd

__all__ = [
    "EIG_FLOOR",
    "check_scoring",
    "mean_squared_affine_invariant",
    "mean_squared_bures_wasserstein",
    "mean_squared_log_euclidean",
    "neg_affine_invariant_scorer",
    "neg_bures_wasserstein_scorer",
    "neg_log_euclidean_scorer",
    "neg_mse_scorer",
]

#: Default relative eigenvalue floor of the affine-invariant and log-Euclidean metrics:
#: eigenvalues below ``EIG_FLOOR * (largest eigenvalue of the targets)`` are raised to it.
EIG_FLOOR = 1e-8


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


# ----------------------------------------------------------------------------------------
# mean squared distances of PSD matrices (metrics: y_true, y_pred -> float, lower is better)
# ----------------------------------------------------------------------------------------

_GEOMETRY_NAMES = {"bures_wasserstein": "Bures-Wasserstein", "affine_invariant":
                   "affine-invariant", "log_euclidean": "log-Euclidean"}


def _weighted_mean(err, sample_weight):
    """Mean of ``err`` (m,), or its ``sample_weight``-weighted mean."""
    if sample_weight is None:
        return float(np.mean(err))
    w = _check_sample_weight(sample_weight, err[:, None], dtype=np.float64,
                             ensure_non_negative=True)
    if not np.sum(w) > 0:
        raise ValueError("sample_weight of the scored rows sums to 0")
    return float(w @ err / np.sum(w))


def _check_psd_pair(y_true, y_pred, geometry):
    """``(y_true, y_pred)`` validated as stacks of symmetric PSD matrices of one shape
    (1-D arrays: non-negative scalars, the d = 1 case)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim == 1 and y_pred.ndim == 1:
        y_true, y_pred = y_true[:, None, None], y_pred[:, None, None]
    T = check_psd_targets(y_true, "y_true")
    P = check_psd_targets(y_pred, "y_pred")
    if P.shape != T.shape:
        raise ValueError(f"y_pred of shape {P.shape} does not match y_true of shape {T.shape}")
    if len(T) == 0:
        raise ValueError("y_true is empty: at least one matrix is needed to score")
    for A, name in ((T, "y_true"), (P, "y_pred")):
        try:
            check_psd(A, name)
        except ValueError as exc:
            extra = (" (noisy indefinite targets: score them with 'neg_mse')"
                     if name == "y_true" else "")
            raise ValueError(
                f"{exc}; the {_GEOMETRY_NAMES[geometry]} distance is defined for PSD "
                f"matrices only{extra}"
            ) from None
    return T, P


def _check_eig_floor(eig_floor):
    if (isinstance(eig_floor, bool) or not isinstance(eig_floor, numbers.Real)
            or not np.isfinite(eig_floor) or not 0.0 < eig_floor < 1.0):
        raise ValueError(f"eig_floor must be a real number in (0, 1), got {eig_floor!r}")
    return float(eig_floor)


def _floored_eigh(T, P, eig_floor, geometry):
    """Eigendecompositions of y_true and y_pred with eigenvalues raised to the floor.

    The floor is ``eig_floor`` times the largest eigenvalue of ``y_true`` (over all rows),
    the same for both arguments and for every candidate scored on these targets; both are
    divided by that scale first (the two distances are invariant under a common scaling).
    """
    eig_floor = _check_eig_floor(eig_floor)
    wT, VT = np.linalg.eigh(T)
    scale = float(wT[:, -1].max())
    if not scale > 0:
        raise ValueError(
            f"y_true holds only zero matrices: the {_GEOMETRY_NAMES[geometry]} distance "
            "has no scale to floor the eigenvalues at (use the Bures-Wasserstein distance)"
        )
    wP, VP = np.linalg.eigh(P / scale)
    return (np.maximum(wT / scale, eig_floor), VT), (np.maximum(wP, eig_floor), VP)


def mean_squared_bures_wasserstein(y_true: ArrayLike, y_pred: ArrayLike, *,
                                   sample_weight: ArrayLike | None = None) -> float:
    r"""Mean squared Bures-Wasserstein distance between stacks of PSD matrices.

    .. math::

        \frac{1}{m}\sum_{i=1}^m d_{BW}(\mathbf M_i, \mathbf P_i)^2, \qquad
        d_{BW}(A, B)^2 = \operatorname{Tr} A + \operatorname{Tr} B
            - 2 \operatorname{Tr}\big(A^{1/2} B A^{1/2}\big)^{1/2}

    (:func:`psdsos.geometry.bures_wasserstein_distance_squared`: the squared 2-Wasserstein
    distance between :math:`\mathcal N(0, A)` and :math:`\mathcal N(0, B)`), or its
    weighted mean :math:`\sum_i w_i d_i^2 / \sum_i w_i`.  Singular matrices are fine: no
    floor is needed.  The natural error measure of the PSD paper's geodesic interpolation
    task (section 3.3: matrices sampled on a Bures-Wasserstein geodesic, Figures 1 and 6).

    A metric in the style of ``sklearn.metrics`` (lower is better):
    ``sklearn.metrics.make_scorer(mean_squared_bures_wasserstein, greater_is_better=False)``
    is a scorer for ``GridSearchCV``; :func:`neg_bures_wasserstein_scorer` is the same.

    Parameters
    ----------
    y_true : array-like of shape (m, d, d) or (m,)
        Symmetric PSD target matrices (1-D: non-negative scalars, d = 1, where
        :math:`d_{BW}(a, b)^2 = (\sqrt a - \sqrt b)^2`).
    y_pred : array-like of the shape of ``y_true``
        Symmetric PSD predictions (eigenvalues down to :math:`-10^{-8}` times the largest
        one, rounding errors, are accepted, as :func:`psdsos.geometry.check_psd`).
    sample_weight : array-like of shape (m,), optional
        Non-negative weights of the rows.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Shapes that differ or are not (m, d, d), NaN/inf, non-symmetric or indefinite
        matrices (the message names ``y_true`` or ``y_pred``), weights summing to 0.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.model_selection import mean_squared_bures_wasserstein
    >>> A = np.array([np.diag([4.0, 1.0]), np.eye(2)])
    >>> B = np.array([np.diag([1.0, 0.0]), np.eye(2)])
    >>> mean_squared_bures_wasserstein(A, B)          # (2 + 0) / 2
    1.0
    """
    T, P = _check_psd_pair(y_true, y_pred, "bures_wasserstein")
    err = np.asarray(bures_wasserstein_distance_squared(T, P), dtype=np.float64).reshape(-1)
    return _weighted_mean(err, sample_weight)


def mean_squared_affine_invariant(y_true: ArrayLike, y_pred: ArrayLike, *,
                                  eig_floor: float = EIG_FLOOR,
                                  sample_weight: ArrayLike | None = None) -> float:
    r"""Mean squared affine-invariant distance, with an eigenvalue floor for singular matrices.

    .. math::

        \frac{1}{m}\sum_{i=1}^m d_{AI}(\tilde{\mathbf M}_i, \tilde{\mathbf P}_i)^2, \qquad
        d_{AI}(A, B)^2 = \big\|\log\big(A^{-1/2} B A^{-1/2}\big)\big\|_F^2
            = \sum_k \log^2 \lambda_k(A^{-1} B),

    where :math:`\tilde A = V \operatorname{diag}(\max(\lambda, \varepsilon c)) V^\top`
    for :math:`A = V \operatorname{diag}(\lambda) V^\top`: every eigenvalue of targets and
    predictions is **clipped below at** :math:`\varepsilon c`, with
    :math:`\varepsilon` = ``eig_floor`` and :math:`c` the largest eigenvalue of the
    targets (over all rows).  The distance is infinite for a singular matrix, and the
    predictions of :class:`psdsos.PSDRegressor` are PSD but may be singular; the floor
    makes a singular prediction cost at most :math:`\log^2(\lambda / (\varepsilon c))`
    per missing eigenvalue :math:`\lambda` instead of infinity.  Above the floor, this is
    :func:`psdsos.geometry.affine_invariant_distance` squared.  The floor is the same for
    every prediction scored against the same targets, so candidates of a grid search are
    compared by one function.

    Use ``sklearn.metrics.make_scorer(mean_squared_affine_invariant,
    greater_is_better=False, eig_floor=...)`` for another floor in ``GridSearchCV``.

    Parameters
    ----------
    y_true : array-like of shape (m, d, d) or (m,)
        Symmetric PSD targets, not all zero (1-D: non-negative scalars, d = 1).
    y_pred : array-like of the shape of ``y_true``
        Symmetric PSD predictions (eigenvalues down to :math:`-10^{-8}` times the largest
        one are accepted as rounding and clipped to the floor too).
    eig_floor : float in (0, 1), default=1e-8
        The relative floor :math:`\varepsilon`.
    sample_weight : array-like of shape (m,), optional
        Non-negative weights of the rows.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As :func:`mean_squared_bures_wasserstein`; also ``eig_floor`` outside (0, 1) and
        targets that are all zero (no scale for the floor).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.model_selection import mean_squared_affine_invariant
    >>> T = np.array([np.eye(2)])
    >>> round(mean_squared_affine_invariant(T, np.array([np.diag([np.e, 1.0])])), 12)
    1.0
    >>> round(mean_squared_affine_invariant(T, np.array([np.diag([1.0, 0.0])])), 3)
    339.321
    """
    T, P = _check_psd_pair(y_true, y_pred, "affine_invariant")
    (wT, VT), (wP, VP) = _floored_eigh(T, P, eig_floor, "affine_invariant")
    iR = (VT / np.sqrt(wT)[:, None, :]) @ np.swapaxes(VT, 1, 2)  # T^{-1/2}
    Pf = (VP * wP[:, None, :]) @ np.swapaxes(VP, 1, 2)
    W = iR @ Pf @ iR
    lam = np.linalg.eigvalsh(0.5 * (W + np.swapaxes(W, 1, 2)))
    lam = np.maximum(lam, np.finfo(np.float64).tiny)  # SPD up to rounding
    err = np.sum(np.log(lam) ** 2, axis=1)
    return _weighted_mean(err, sample_weight)


def mean_squared_log_euclidean(y_true: ArrayLike, y_pred: ArrayLike, *,
                               eig_floor: float = EIG_FLOOR,
                               sample_weight: ArrayLike | None = None) -> float:
    r"""Mean squared log-Euclidean distance, with an eigenvalue floor for singular matrices.

    .. math::

        \frac{1}{m}\sum_{i=1}^m \big\|\log \tilde{\mathbf M}_i
            - \log \tilde{\mathbf P}_i\big\|_F^2 ,

    with every eigenvalue of targets and predictions clipped below at
    :math:`\varepsilon c` (:math:`\varepsilon` = ``eig_floor``, :math:`c` the largest
    eigenvalue of the targets over all rows), as in :func:`mean_squared_affine_invariant`:
    the logarithm of a singular matrix does not exist.  Above the floor, this is
    :func:`psdsos.geometry.log_euclidean_distance` squared.

    Parameters
    ----------
    y_true, y_pred, eig_floor, sample_weight
        As :func:`mean_squared_affine_invariant`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As :func:`mean_squared_affine_invariant`.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.model_selection import mean_squared_log_euclidean
    >>> T = np.array([np.eye(2), np.eye(2)])
    >>> P = np.array([np.diag([np.e, 1.0]), np.eye(2)])
    >>> round(mean_squared_log_euclidean(T, P), 12)   # (1 + 0) / 2
    0.5
    """
    T, P = _check_psd_pair(y_true, y_pred, "log_euclidean")
    (wT, VT), (wP, VP) = _floored_eigh(T, P, eig_floor, "log_euclidean")
    D = ((VT * np.log(wT)[:, None, :]) @ np.swapaxes(VT, 1, 2)
         - (VP * np.log(wP)[:, None, :]) @ np.swapaxes(VP, 1, 2))
    err = np.einsum("nij,nij->n", D, D)
    return _weighted_mean(err, sample_weight)


# ----------------------------------------------------------------------------------------
# scorers: (estimator, X, y) -> float, higher is better
# ----------------------------------------------------------------------------------------


def neg_bures_wasserstein_scorer(estimator: Any, X: ArrayLike, y: ArrayLike,
                                 sample_weight: ArrayLike | None = None) -> float:
    r"""Negated mean squared Bures-Wasserstein distance of the predictions, a scorer.

    .. math::

        -\frac{1}{m}\sum_{i=1}^m d_{BW}\big(\mathbf M_i, \hat F(x_i)\big)^2

    (:func:`mean_squared_bures_wasserstein` of ``y`` and ``estimator.predict(X)``).  The
    scorer of ``scoring="neg_bures_wasserstein"`` in :func:`grid_search_cv`, and usable as
    ``scoring=`` in scikit-learn's ``GridSearchCV`` / ``cross_val_score``.  Defined on test
    folds of one sample (leave-one-out); no eigenvalue floor is needed.

    Parameters
    ----------
    estimator : fitted estimator with ``predict`` returning (m, d, d) PSD matrices
    X : array-like of shape (m, n_features)
    y : array-like of shape (m, d, d)
        Symmetric PSD targets.
    sample_weight : array-like of shape (m,), optional

    Returns
    -------
    float
        At most 0; higher is better.

    Examples
    --------
    >>> from psdsos import PSDRegressor
    >>> from psdsos.datasets import make_bures_geodesic
    >>> from psdsos.model_selection import neg_bures_wasserstein_scorer
    >>> t, M = make_bures_geodesic(10, random_state=0)
    >>> model = PSDRegressor(sigma=0.3, lam2=1e-4).fit(t, M)
    >>> neg_bures_wasserstein_scorer(model, t, M) <= 0.0
    True
    """
    P = estimator.predict(X)
    return -mean_squared_bures_wasserstein(y, P, sample_weight=sample_weight)


def neg_affine_invariant_scorer(estimator: Any, X: ArrayLike, y: ArrayLike,
                                sample_weight: ArrayLike | None = None) -> float:
    r"""Negated mean squared affine-invariant distance of the predictions, a scorer.

    :func:`mean_squared_affine_invariant` of ``y`` and ``estimator.predict(X)``, negated,
    with the default floor: eigenvalues of targets and predictions clipped below at
    ``EIG_FLOOR = 1e-8`` times the largest eigenvalue of the targets.  The scorer of
    ``scoring="neg_affine_invariant"``; for another floor in scikit-learn use
    ``make_scorer(mean_squared_affine_invariant, greater_is_better=False, eig_floor=...)``.

    Parameters
    ----------
    estimator, X, y, sample_weight
        As :func:`neg_bures_wasserstein_scorer`.

    Returns
    -------
    float
    """
    P = estimator.predict(X)
    return -mean_squared_affine_invariant(y, P, sample_weight=sample_weight)


def neg_log_euclidean_scorer(estimator: Any, X: ArrayLike, y: ArrayLike,
                             sample_weight: ArrayLike | None = None) -> float:
    r"""Negated mean squared log-Euclidean distance of the predictions, a scorer.

    :func:`mean_squared_log_euclidean` of ``y`` and ``estimator.predict(X)``, negated,
    with the default floor (``EIG_FLOOR = 1e-8`` relative to the largest eigenvalue of the
    targets).  The scorer of ``scoring="neg_log_euclidean"``.

    Parameters
    ----------
    estimator, X, y, sample_weight
        As :func:`neg_bures_wasserstein_scorer`.

    Returns
    -------
    float
    """
    P = estimator.predict(X)
    return -mean_squared_log_euclidean(y, P, sample_weight=sample_weight)


def _default_score(estimator, X, M, sample_weight=None):
    if sample_weight is None:
        return float(estimator.score(X, M))
    return float(estimator.score(X, M, sample_weight=sample_weight))


_SCORERS = {
    "score": _default_score,
    "neg_mse": neg_mse_scorer,
    "neg_bures_wasserstein": neg_bures_wasserstein_scorer,
    "neg_affine_invariant": neg_affine_invariant_scorer,
    "neg_log_euclidean": neg_log_euclidean_scorer,
}


def check_scoring(scoring: Any) -> tuple[Callable[..., float] | None, str]:
    """(scorer, name) of ``scoring``, the same forms for every search of psdsos.

    ``None`` gives (None, "score"): the caller's default.  A name is one of psdsos's
    scorers (``"neg_mse"``, ``"neg_bures_wasserstein"``, ``"neg_affine_invariant"``,
    ``"neg_log_euclidean"``, ``"score"``) or, for scalar targets, a scikit-learn scorer name
    (``"neg_mean_squared_error"``, ``"r2"``, ...); a callable ``(estimator, X, y) ->
    float`` (higher is better) is used as given.

    Raises
    ------
    ValueError
        Any other value, naming the accepted forms.
    """
    if scoring is None:
        return None, "score"
    if callable(scoring):
        return scoring, "callable"
    if isinstance(scoring, str):
        if scoring in _SCORERS:
            return _SCORERS[scoring], scoring
        try:
            return get_scorer(scoring), scoring
        except ValueError:
            pass
    names = ", ".join(repr(k) for k in _SCORERS)
    raise ValueError(
        f"scoring must be None, one of {names}, a scikit-learn scorer name or a callable "
        f"(estimator, X, y) -> float, got {scoring!r}"
    )
