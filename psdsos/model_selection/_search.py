r"""Grid search with cross-validation, warm starts along the regularization path.

The search evaluates, for every candidate :math:`\theta` of a parameter grid and every
split :math:`(T_k, V_k)` of the data,

.. math::

    s_k(\theta) = \operatorname{score}\big(\hat f_{\theta, T_k};\ X_{V_k}, M_{V_k}\big),
    \qquad
    \bar s(\theta) = \frac{1}{K}\sum_{k=1}^K s_k(\theta),

and returns :math:`\hat\theta = \arg\max_\theta \bar s(\theta)` (the first one on ties, as
scikit-learn), with the estimator refit on all the data.

Scheduling.  For a given fold and given non-regularization parameters (kernel, bandwidth,
solver, ...) the features are the same for every value of the regularization weights, so
one job takes a (fold, kernel parameters) pair and fits the whole regularization grid on
one cloned estimator with ``warm_start=True``: consecutive fits differ in one weight, and
the dual variable of the previous fit is a good starting point.  Jobs run through
:class:`joblib.Parallel`, so any joblib backend (loky, threading, Dask, Ray) serves.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed, parallel_config
from numpy.typing import ArrayLike
from sklearn.base import clone, is_regressor
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import KFold, LeaveOneOut, ParameterGrid
from sklearn.utils.validation import _check_sample_weight

from psdsos.estimators import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.kernels import scale_bandwidth

__all__ = ["SearchResult", "grid_search_cv", "neg_mse_scorer", "paper_grid_convex",
           "paper_grid_psd", "relative_sigmas"]

#: Parameters swept along a path inside one job, outermost first.  Each is sorted from
#: large to small (strong regularization first: those problems are easy and their
#: solutions are good starting points for the weaker ones).
PATH_PARAMS = ("lam1", "lam2", "rho", "lam")


#: scale_bandwidth of the PSD paper's inputs in Appendix D.1: times t uniform on [0, 1]
#: (Var = 1/12, one feature), sqrt(1 / 24).
PAPER_PSD_INPUT_SCALE = float(np.sqrt(1.0 / 24.0))
#: scale_bandwidth of the PSD paper's inputs in Appendix D.2: uniform on [-2 pi, 2 pi]^2
#: (eq. 30 with a = 1; Var = (2 pi)^2 / 3 per feature, two features), 2 pi sqrt(1 / 3).
PAPER_CONVEX_INPUT_SCALE = float(2.0 * np.pi * np.sqrt(1.0 / 3.0))


def relative_sigmas(factors: Iterable[float], X: ArrayLike) -> list[float]:
    r"""Bandwidths as multiples of the data's scale: ``[c * scale_bandwidth(X) for c in factors]``.

    .. math::

        \sigma_c = c\,\sigma_{\text{scale}}(X), \qquad
        \sigma_{\text{scale}}(X) = \sqrt{p \operatorname{Var}(X) / 2}

    (:func:`psdsos.kernels.scale_bandwidth`, the bandwidth of ``sigma="scale"``), so that a
    grid written once serves data in any units.

    Parameters
    ----------
    factors : sequence of float > 0
    X : array-like of shape (n_samples, n_features)
        The training inputs.

    Returns
    -------
    list of float

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.model_selection import relative_sigmas
    >>> X = np.array([[0.0], [2000.0]])      # Var = 1e6, p = 1: scale = 1000 sqrt(1/2)
    >>> [round(s, 3) for s in relative_sigmas([1.0, 0.1], X)]
    [707.107, 70.711]
    """
    scale = scale_bandwidth(X)
    out: list[float] = []
    for c in factors:
        if (isinstance(c, bool) or not isinstance(c, numbers.Real) or not np.isfinite(c)
                or c <= 0):
            raise ValueError(f"factors must be finite real numbers > 0, got {c!r}")
        out.append(float(c) * scale)
    return out


def paper_grid_convex(X: ArrayLike | None = None) -> dict[str, list[float]]:
    r"""The convex-regression grid of the PSD paper, Appendix D.2 (Figures 3 and 4).

    .. math::

        \lambda_2 \in \{10^{-k}\}_{k=3}^{7}, \qquad \sigma^2 \in \{1, 5, 10\}, \qquad
        \rho \in \{10^{-3}, \dots, 10^{-6}\}, \qquad \lambda_1 = 0

    (the paper selects :math:`\rho = 10^{-5}` but does not list its :math:`\rho` grid), for
    the Gaussian kernel on inputs uniform in :math:`[-2\pi, 2\pi]^2`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), optional
        None: the paper's absolute bandwidths.  Given: the same bandwidths relative to the
        data's scale, :math:`\sigma = (\sigma_{\text{paper}} / \sigma_{\text{scale}}
        ([-2\pi, 2\pi]^2))\,\sigma_{\text{scale}}(X)` (:func:`relative_sigmas` with the
        factors 0.276, 0.616, 0.872), i.e. the paper's kernel width relative to the spread
        of its inputs.

    Returns
    -------
    dict
        ``{"rho": [...], "lam2": [...], "sigma": [...]}``, fresh lists.

    Examples
    --------
    >>> from psdsos.model_selection import paper_grid_convex
    >>> [round(s * s, 6) for s in paper_grid_convex()["sigma"]]
    [1.0, 5.0, 10.0]
    """
    sigmas = [float(np.sqrt(s2)) for s2 in (1.0, 5.0, 10.0)]
    if X is not None:
        sigmas = relative_sigmas([s / PAPER_CONVEX_INPUT_SCALE for s in sigmas], X)
    return {"rho": [1e-3, 1e-4, 1e-5, 1e-6], "lam2": [10.0 ** (-k) for k in range(3, 8)],
            "sigma": sigmas}


def paper_grid_psd(X: ArrayLike | None = None, *, primal_below: float | None = None,
                   primal_solver: str = "CLARABEL", primal_tol: float = 1e-9
                   ) -> dict[str, list[float]] | list[dict[str, list]]:
    r"""The hyperparameter grid of the PSD paper, Appendix D.1 (Figures 1 and 6).

    .. math::

        \lambda_1 \in \{10^{-k}\}_{k=0}^{8} \cup \{0\}, \qquad
        \lambda_2 \in \{10^{-k}\}_{k=0}^{8}, \qquad
        \sigma \in \{1, 0.1, 0.01\},

    270 candidates, used with the exponential kernel and leave-one-out cross-validation.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), optional
        None (default): the paper's absolute bandwidths above (for times in [0, 1]).
        Given: the same bandwidths relative to the data's scale,
        :math:`\sigma = (\sigma_{\text{paper}} / \sigma_{\text{scale}}([0, 1]))\,
        \sigma_{\text{scale}}(X)` with :math:`\sigma_{\text{scale}}([0, 1]) = \sqrt{1/24}`
        (:func:`relative_sigmas` with the factors 4.90, 0.490, 0.0490).
    primal_below : float or None, default=None
        If given, assign a solver to each candidate of :class:`psdsos.PSDRegressor`: those
        with :math:`\lambda_1 > 0` and :math:`\lambda_2 \le` ``primal_below`` get
        ``solver="primal"`` (an interior-point method, whose cost does not grow as
        :math:`\lambda_2 \to 0`, where the dual's accelerated gradient needs thousands of
        iterations); all the others ``solver="dual"``.  Candidates with
        :math:`\lambda_1 = 0` stay in the dual, which converges there, while the
        interior-point solutions are inaccurate when the optimal value itself is tiny
        (:math:`\approx \lambda_2`).  Same 270 candidates.
    primal_solver : {"SCS", "CLARABEL"}, default="CLARABEL"
        Primal solver of the primal candidates.
    primal_tol : float, default=1e-9
        ``tol`` of the primal candidates (Clarabel's gap and feasibility tolerances; they
        are partly absolute, and the optimal values of these problems go down to 1e-7).

    Returns
    -------
    dict or list of dict
        ``{"lam1": [...], "lam2": [...], "sigma": [...]}`` (fresh lists on every call), or,
        with ``primal_below``, a list of such dicts with ``solver`` (and ``primal_solver``,
        ``tol``) entries, a valid ``param_grid`` for :func:`grid_search_cv` and
        ``GridSearchCV``.

    Examples
    --------
    >>> from psdsos.model_selection import paper_grid_psd
    >>> g = paper_grid_psd()
    >>> len(g["lam1"]) * len(g["lam2"]) * len(g["sigma"])
    270
    >>> [p["solver"] for p in paper_grid_psd(primal_below=1e-5)]
    [['dual'], ['primal'], ['dual']]
    """
    grid = {
        "lam1": [10.0 ** (-k) for k in range(9)] + [0.0],
        "lam2": [10.0 ** (-k) for k in range(9)],
        "sigma": [1.0, 0.1, 0.01],
    }
    if X is not None:
        grid["sigma"] = relative_sigmas([s / PAPER_PSD_INPUT_SCALE for s in grid["sigma"]], X)
    if primal_below is None:
        return grid
    if isinstance(primal_below, bool) or not isinstance(primal_below, numbers.Real):
        raise ValueError(f"primal_below must be a real number or None, got {primal_below!r}")
    big = [v for v in grid["lam2"] if v > primal_below]
    tiny = [v for v in grid["lam2"] if v <= primal_below]
    pos = [v for v in grid["lam1"] if v > 0]
    zero = [v for v in grid["lam1"] if v == 0]
    parts = []
    if big:
        parts.append({**grid, "lam2": big, "solver": ["dual"]})
    if tiny:
        parts.append({**grid, "lam1": pos, "lam2": tiny, "solver": ["primal"],
                      "primal_solver": [primal_solver], "tol": [primal_tol]})
        parts.append({**grid, "lam1": zero, "lam2": tiny, "solver": ["dual"]})
    return parts


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


@dataclass
class SearchResult:
    """Outcome of :func:`grid_search_cv`.

    Attributes
    ----------
    best_params_ : dict
        The candidate with the highest mean test score (the first one on ties).
    best_score_ : float
        Its mean test score.
    best_estimator_ : estimator or None
        A clone of the estimator with ``best_params_``, fit on all the data
        (None with ``refit=False``).
    best_index_ : int
        Index of the best candidate in ``cv_results_["params"]``.
    cv_results_ : dict
        As scikit-learn's: ``params`` (list of dicts), ``param_<name>`` (masked arrays),
        ``mean_test_score``, ``std_test_score``, ``rank_test_score``,
        ``split<k>_test_score``, ``mean_fit_time``, ``std_fit_time``,
        ``mean_score_time``, plus ``mean_n_iter`` (solver iterations, NaN when the
        estimator has no ``n_iter_``), ``n_not_converged`` and ``n_not_convex`` (per
        candidate).
    n_fits : int
        Number of cross-validation fits (candidates x splits; the refit not included).
    n_splits_ : int
    scoring : str
        ``"score"`` (the estimator's own), ``"neg_mse"`` or ``"callable"``.
    n_failed : int
        CV fits that raised (their score is ``error_score``).
    n_not_converged : int
        CV fits that stopped at ``max_iter`` (their ``ConvergenceWarning`` is silenced
        inside the search and reported once, with this count).
    n_not_convex : int
        CV fits of a convex-regression estimator whose certified relative convexity
        deficit (``convexity_deficit_``) exceeds the tolerance of
        :class:`~psdsos.estimators.NonConvexFitWarning` (their warnings are silenced inside
        the search and reported once, with this count).
    total_n_iter : int
        Sum of ``n_iter_`` over the CV fits (0 if the estimator has none).
    refit_time_ : float
        Seconds spent refitting the best estimator.
    wall_time : float
        Seconds for the whole search.
    """

    best_params_: dict
    best_score_: float
    best_estimator_: object = field(repr=False)
    best_index_: int
    cv_results_: dict = field(repr=False)
    n_fits: int
    n_splits_: int
    scoring: str
    n_failed: int = 0
    n_not_converged: int = 0
    n_not_convex: int = 0
    total_n_iter: int = 0
    refit_time_: float = 0.0
    wall_time: float = 0.0


# ----------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------


def _check_grid(param_grid, estimator):
    if isinstance(param_grid, dict):
        grids = [param_grid]
    elif isinstance(param_grid, (list, tuple)):
        grids = list(param_grid)
    else:
        raise ValueError(
            f"param_grid must be a dict of lists or a list of such dicts, got "
            f"{type(param_grid).__name__}"
        )
    if not grids:
        raise ValueError("param_grid is empty: give at least one parameter with values")
    valid = estimator.get_params(deep=True)
    for g in grids:
        if not isinstance(g, dict) or not g:
            raise ValueError(
                f"param_grid must hold non-empty dicts of parameter lists, got {g!r}"
            )
        for name, values in g.items():
            if name not in valid:
                raise ValueError(
                    f"param_grid names {name!r}, which is not a parameter of "
                    f"{type(estimator).__name__} (valid: {sorted(valid)})"
                )
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise ValueError(
                    f"param_grid[{name!r}] must be a list of values, got {values!r}"
                )
            if len(values) == 0:
                raise ValueError(f"param_grid[{name!r}] is empty: give at least one value")
    return list(ParameterGrid(grids))


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


def _check_cv(cv, n):
    if isinstance(cv, str):
        if cv.lower() != "loo":
            raise ValueError(f"cv must be 'loo', an int >= 2 or a CV splitter, got {cv!r}")
        if n < 2:
            raise ValueError(f"cv='loo' needs at least 2 samples, got {n}")
        return LeaveOneOut()
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be an int >= 2 (number of folds), got {cv}")
        if cv > n:
            raise ValueError(
                f"cv={cv} folds is larger than the number of samples n={n}; use cv <= {n} "
                "or cv='loo'"
            )
        return KFold(int(cv))
    if hasattr(cv, "split"):
        return cv
    raise ValueError(f"cv must be 'loo', an int >= 2 or a CV splitter, got {cv!r}")


def _check_error_score(error_score):
    if isinstance(error_score, str) and error_score == "raise":
        return error_score
    if isinstance(error_score, numbers.Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ValueError(f"error_score must be 'raise' or a number, got {error_score!r}")


# ----------------------------------------------------------------------------------------
# scheduling
# ----------------------------------------------------------------------------------------


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        return ("__id__", id(v))
    return (type(v).__name__, v) if isinstance(v, (bool, np.bool_)) else v


def _group_candidates(candidates, path_params):
    """Group candidate indices by everything except the path parameters.

    Returns a list of (group_indices) lists; each group is ordered along the path.
    """
    groups = {}
    order = []
    for i, params in enumerate(candidates):
        key = (
            tuple(sorted(params)),
            tuple(sorted((k, _hashable(v)) for k, v in params.items() if k not in path_params)),
        )
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    return [_path_order(groups[k], candidates, path_params) for k in order]


def _sort_key(v):
    if isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v):
        return (0, -float(v))
    return (1, 0.0)  # non-numeric values: after the numeric ones, stable


def _path_order(indices, candidates, path_params):
    """Snake (boustrophedon) order over the path parameters, each from large to small.

    The outermost path parameter decreases; the next one decreases for even positions of
    the outer one and increases for odd positions, so that consecutive fits are
    neighbours on the grid and the previous solution is a good warm start.
    """
    names = [p for p in path_params if p in candidates[indices[0]]]

    def rec(idx, depth, reverse):
        if depth == len(names) or len(idx) <= 1:
            return list(idx)
        name = names[depth]
        values = sorted({_hashable(candidates[i][name]) for i in idx},
                        key=lambda h: _sort_key(h), reverse=reverse)
        out = []
        for pos, val in enumerate(values):
            sub = [i for i in idx if _hashable(candidates[i][name]) == val]
            out.extend(rec(sub, depth + 1, reverse=(pos % 2 == 1)))
        return out

    return rec(list(indices), 0, reverse=False)


# ----------------------------------------------------------------------------------------
# the job: one fold, one group of candidates along the path
# ----------------------------------------------------------------------------------------


#: Per-fit warnings silenced inside the search (counted and reported once instead).
_SILENCED = (ConvergenceWarning, NonConvexFitWarning)


def _not_convex(est):
    """True when a fitted estimator's certified relative convexity deficit exceeds the
    tolerance of NonConvexFitWarning (estimators without ``convexity_deficit_``: False)."""
    deficit = getattr(est, "convexity_deficit_", None)
    return deficit is not None and float(deficit) > RELATIVE_DEFICIT_TOL


def _not_converged(est):
    n_iter = getattr(est, "n_iter_", None)
    max_iter = getattr(est, "max_iter", None)
    if n_iter is None or max_iter is None:
        return False
    try:
        return int(np.max(n_iter)) >= int(max_iter)
    except (TypeError, ValueError):
        return False


def _fit_path(split_index, estimator, X, M, train, test, cand_indices, candidates, scorer,
              warm_start, cv_params, error_score, sample_weight=None):
    """Fit one fold along one path of candidates; return (split_index, records)."""
    # Silence the per-fit warnings (_SILENCED) here only when this job runs in the main
    # thread of its process (sequential or process-based backends): catch_warnings mutates
    # the global filter list, which is not thread-safe.  In threaded backends the caller's
    # catch_warnings (taken once, in the main thread) silences them instead.
    in_main = threading.current_thread() is threading.main_thread()
    with warnings.catch_warnings():
        if in_main:
            for category in _SILENCED:
                warnings.simplefilter("ignore", category)
        est = clone(estimator)
        params = est.get_params()
        if cv_params:
            est.set_params(**cv_params)
        if "warm_start" in params:
            est.set_params(warm_start=bool(warm_start))
        Xtr, Mtr, Xte, Mte = X[train], M[train], X[test], M[test]
        fit_kw, score_kw = {}, {}
        if sample_weight is not None:
            fit_kw = {"sample_weight": sample_weight[train]}
            score_kw = {"sample_weight": sample_weight[test]}
        records = []
        for ci in cand_indices:
            if not warm_start:
                est = clone(est)
            est.set_params(**candidates[ci])
            t0 = time.perf_counter()
            try:
                est.fit(Xtr, Mtr, **fit_kw)
                fit_time = time.perf_counter() - t0
                t1 = time.perf_counter()
                score = float(scorer(est, Xte, Mte, **score_kw))
                score_time = time.perf_counter() - t1
            except Exception as exc:  # recorded as error_score, like scikit-learn
                if error_score == "raise":
                    raise
                records.append((ci, error_score, time.perf_counter() - t0, 0.0, np.nan,
                                False, False, f"{type(exc).__name__}: {exc}"))
                # a failed fit may leave a half-updated state: restart the path cold
                est = clone(est)
                continue
            n_iter = getattr(est, "n_iter_", None)
            n_iter = float(np.sum(n_iter)) if n_iter is not None else np.nan
            records.append((ci, score, fit_time, score_time, n_iter, _not_converged(est),
                            _not_convex(est), None))
    return split_index, records


# ----------------------------------------------------------------------------------------
# the public function
# ----------------------------------------------------------------------------------------


class _Progress:
    def __init__(self, total, enabled, stream=None):
        self.total, self.enabled = total, enabled
        self.done = 0
        self.t0 = time.perf_counter()
        self.stream = stream if stream is not None else sys.stderr
        self._last = -1.0

    def update(self, k):
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter() - self.t0
        if self.done < self.total and now - self._last < 0.5:
            return
        self._last = now
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        end = "\n" if self.done >= self.total else ""
        self.stream.write(f"\r[{bar}] fits {self.done}/{self.total}  {now:6.1f}s{end}")
        self.stream.flush()


def grid_search_cv(estimator: Any, X: ArrayLike, M: ArrayLike,
                   param_grid: dict[str, Sequence] | Sequence[dict[str, Sequence]], *,
                   cv: str | int | Any = "loo", scoring: str | Callable | None = None,
                   n_jobs: int | None = None, warm_start: bool = True, verbose: bool = False,
                   backend: Any = None, refit: bool = True, cv_params: dict | None = None,
                   error_score: str | float = np.nan, path_params: Sequence[str] = PATH_PARAMS,
                   sample_weight: ArrayLike | None = None) -> SearchResult:
    r"""Exhaustive grid search with cross-validation and warm starts along the path.

    For every candidate :math:`\theta` of ``param_grid`` and every split
    :math:`(T_k, V_k)` given by ``cv``, fit on :math:`T_k`, score on :math:`V_k`, and select

    .. math::

        \hat\theta = \arg\max_\theta \frac{1}{K}\sum_{k=1}^K
            \operatorname{score}(\hat f_{\theta, T_k}; X_{V_k}, M_{V_k}),

    then refit on all the data.  Same candidates, splits, scores and selection rule as
    ``sklearn.model_selection.GridSearchCV`` (ties go to the first candidate in
    ``ParameterGrid`` order), but scheduled for warm starts: one job per (split, values of
    the non-path parameters) fits all the path candidates (``path_params``, by default
    ``lam1`` then ``lam2``, each from large to small in a snake order) on one cloned
    estimator, with ``warm_start=True`` so that its ``dual_coef_`` carries over.

    Parameters
    ----------
    estimator : scikit-learn estimator
        E.g. :class:`psdsos.PSDRegressor`; cloned, never modified.
    X : array-like of shape (n_samples, n_features)
    M : array-like of shape (n_samples, d, d) (or any target the estimator accepts)
    param_grid : dict of lists or list of such dicts
        As for ``GridSearchCV`` (a list of dicts spans a union of grids: e.g. a different
        ``solver`` for part of the grid).  Must not be empty.
    cv : "loo", int or CV splitter, default="loo"
        ``"loo"``: leave-one-out; ``k``: ``KFold(k)`` without shuffling (2 <= k <= n); or
        any object with ``split(X, M)`` (e.g. ``KFold(5, shuffle=True, random_state=0)``).
    scoring : None, "score", "neg_mse" or callable, default=None
        ``None``/``"score"``: the estimator's ``score`` (:math:`R^2` over matrix entries
        for PSDRegressor; note that :math:`R^2` is undefined on a test fold of one sample,
        where PSDRegressor returns 0, so use ``"neg_mse"`` with leave-one-out).
        ``"neg_mse"``: :func:`neg_mse_scorer`.  A callable ``(estimator, X, M) -> float``.
        Higher is better.
    n_jobs : int or None, default=None
        Parallel jobs (joblib semantics: None is 1 outside a ``parallel_config`` context,
        -1 all cores).  Results do not depend on it.
    warm_start : bool, default=True
        Warm starts along the path (requires a ``warm_start`` parameter; otherwise
        ignored).  False fits every candidate from a fresh clone (cold starts).
    verbose : bool, default=False
        Print a progress bar (``fits k/N``) to stderr.
    backend : str, joblib backend or None, default=None
        Passed to ``joblib.parallel_config`` around the fits: ``"loky"``, ``"threading"``,
        ``"dask"`` (with a ``dask.distributed.Client`` active), ...
    refit : bool, default=True
        Refit a clone with the best parameters on all the data (``best_estimator_``).
    cv_params : dict or None, default=None
        Parameters set on the estimator for the CV fits only, not for the refit (e.g.
        ``{"max_iter": 2000}`` to cap the cost of the cross-validation).
    error_score : "raise" or float, default=nan
        Score recorded when a CV fit raises (counted in ``n_failed`` and reported with a
        ``FitFailedWarning``); ``"raise"`` re-raises.  If every fit fails, a ValueError.
    path_params : tuple of str, default=("lam1", "lam2", "rho", "lam")
        Parameters swept inside a job, outermost first.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights of the rows: each CV fit gets the weights of its training
        rows (``fit(X, M, sample_weight=w[train])``) and each score those of its test rows
        (``scorer(estimator, X, M, sample_weight=w[test])``: a weighted :math:`R^2` or
        :func:`neg_mse_scorer`; a callable scorer must accept the keyword), and the refit
        all of them.  A test fold whose weights are all 0 has no weighted score: it is
        recorded as ``error_score``.

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        Empty or unknown parameters in ``param_grid``, unknown ``scoring``, ``cv`` not
        ``"loo"``/int/splitter or more folds than samples, mismatched ``X``/``M``, or every
        CV fit failing.

    Warns
    -----
    ConvergenceWarning
        Once, with the count, when some CV fits stopped at ``max_iter`` (the per-fit
        warnings are silenced inside the search); once more if the selected candidate is
        among them (its score may then be an artifact of early stopping).
    NonConvexFitWarning
        Once, with the count, when some CV fits of a convex-regression estimator were not
        certified convex (the per-fit warnings are silenced inside the search; the refit
        warns on its own).

    Notes
    -----
    ConvergenceWarnings are silenced in the calling process and in process-based workers
    (loky); with a ``dask.distributed`` cluster of separate worker processes they may be
    printed by the workers.  The count in ``n_not_converged`` is exact in every case
    (fits with ``n_iter_ >= max_iter``).

    Examples
    --------
    >>> from psdsos import PSDRegressor
    >>> from psdsos.datasets import make_bures_geodesic
    >>> from psdsos.model_selection import grid_search_cv
    >>> t, M = make_bures_geodesic(8, random_state=0)
    >>> res = grid_search_cv(PSDRegressor("exponential"), t, M,
    ...                      {"lam2": [1e-2, 1e-4], "sigma": [1.0, 0.1]},
    ...                      cv="loo", scoring="neg_mse")
    >>> res.n_fits, sorted(res.best_params_)
    (32, ['lam2', 'sigma'])
    """
    t_start = time.perf_counter()
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise ValueError(f"estimator must be a scikit-learn estimator, got {estimator!r}")
    candidates = _check_grid(param_grid, estimator)
    scorer, scoring_name = _check_scoring(scoring)
    if scorer is None:
        scorer = _default_score
    error_score = _check_error_score(error_score)
    if cv_params is not None and not isinstance(cv_params, dict):
        raise ValueError(f"cv_params must be a dict or None, got {cv_params!r}")
    if isinstance(path_params, str):
        path_params = (path_params,)
    path_params = tuple(path_params)

    X = np.asarray(X)
    M = np.asarray(M)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n_samples, n_features), got shape {X.shape}")
    if M.ndim < 1 or len(M) != len(X):
        raise ValueError(
            f"X and M have different numbers of samples: {len(X)} and "
            f"{len(M) if M.ndim else 'a scalar'}"
        )
    n = len(X)
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, X.reshape(n, -1),
                                             dtype=np.float64, ensure_non_negative=True)
    splitter = _check_cv(cv, n)
    splits = [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, M)]
    if not splits:
        raise ValueError("cv produced no splits")
    n_splits = len(splits)
    if scoring_name == "score" and is_regressor(estimator) and min(len(te) for _, te in splits) < 2:
        warnings.warn(
            "scoring=None uses the estimator's score (R^2), which is undefined on a test fold "
            "of one sample (cv='loo'): every score is then 0 or 1 and the selection is "
            "meaningless; pass scoring='neg_mse'",
            UserWarning,
            stacklevel=2,
        )
    groups = _group_candidates(candidates, path_params)

    tasks = [(k, g) for k in range(n_splits) for g in range(len(groups))]
    n_fits = len(candidates) * n_splits
    progress = _Progress(n_fits, bool(verbose))
    if verbose:
        sys.stderr.write(
            f"psdsos grid search: {len(candidates)} candidates x {n_splits} splits = "
            f"{n_fits} fits in {len(tasks)} jobs ({len(groups)} path(s) per split)\n"
        )

    def jobs():
        for k, g in tasks:
            tr, te = splits[k]
            yield delayed(_fit_path)(k, estimator, X, M, tr, te, groups[g], candidates, scorer,
                                     warm_start, cv_params, error_score, sample_weight)

    scores = np.full((len(candidates), n_splits), np.nan)
    fit_t = np.zeros_like(scores)
    score_t = np.zeros_like(scores)
    iters = np.full_like(scores, np.nan)
    nc = np.zeros(scores.shape, dtype=bool)
    ncx = np.zeros(scores.shape, dtype=bool)
    errors = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        for category in _SILENCED:
            warnings.simplefilter("ignore", category)
        if backend is not None:
            stack.enter_context(parallel_config(backend=backend))
        # results in completion order (for the progress bar); each carries its split index
        par = Parallel(n_jobs=n_jobs, batch_size=1, return_as="generator_unordered")
        for k, recs in par(jobs()):
            for ci, sc, ft, st, it, ncv, ncvx, err in recs:
                scores[ci, k], fit_t[ci, k], score_t[ci, k] = sc, ft, st
                iters[ci, k], nc[ci, k], ncx[ci, k] = it, ncv, ncvx
                if err is not None:
                    errors.append((k, ci, err))
            progress.update(len(recs))
    errors = [e for _, _, e in sorted(errors)]

    n_failed = len(errors)
    if n_failed == n_fits:
        raise ValueError(f"all {n_fits} cross-validation fits failed; first error: {errors[0]}")
    if n_failed:
        warnings.warn(
            f"{n_failed} of {n_fits} cross-validation fits failed and were scored "
            f"{error_score}; first error: {errors[0]}",
            FitFailedWarning,
            stacklevel=2,
        )
    n_nc = int(nc.sum())
    if n_nc:
        warnings.warn(
            f"{n_nc} of {n_fits} cross-validation fits stopped at max_iter without "
            "converging (their ConvergenceWarnings were silenced); increase max_iter or tol "
            "(cv_params) if the selection matters at those settings",
            ConvergenceWarning,
            stacklevel=2,
        )

    cv_results = _cv_results(candidates, scores, fit_t, score_t, iters, nc, ncx)
    best_index = int(np.argmin(cv_results["rank_test_score"]))
    best_params = dict(candidates[best_index])
    best_score = float(cv_results["mean_test_score"][best_index])
    n_ncx = int(ncx.sum())
    if n_ncx:
        best_ncx = int(cv_results["n_not_convex"][best_index])
        warnings.warn(
            f"{n_ncx} of {n_fits} cross-validation fits were not certified convex (relative "
            f"convexity deficit > {RELATIVE_DEFICIT_TOL:g}; their NonConvexFitWarnings were "
            f"silenced), {best_ncx} of them for the selected candidate {best_params}: a "
            "candidate with such fits is scored on a non-convex function; see "
            "cv_results_['n_not_convex']",
            NonConvexFitWarning,
            stacklevel=2,
        )
    best_nc = int(cv_results["n_not_converged"][best_index])
    if best_nc:
        warnings.warn(
            f"the selected candidate {best_params} has {best_nc} of {n_splits} CV fits that "
            "stopped at max_iter: its score may be an artifact of early stopping (an "
            "unconverged fit is implicitly regularized); increase max_iter or solve these "
            "candidates with another solver",
            ConvergenceWarning,
            stacklevel=2,
        )

    best_estimator, refit_time = None, 0.0
    if refit:
        t0 = time.perf_counter()
        best_estimator = clone(estimator).set_params(**best_params)
        if sample_weight is None:
            best_estimator.fit(X, M)
        else:
            best_estimator.fit(X, M, sample_weight=sample_weight)
        refit_time = time.perf_counter() - t0

    total_iter = np.nansum(iters) if np.any(np.isfinite(iters)) else 0.0
    return SearchResult(
        best_params_=best_params,
        best_score_=best_score,
        best_estimator_=best_estimator,
        best_index_=best_index,
        cv_results_=cv_results,
        n_fits=n_fits,
        n_splits_=n_splits,
        scoring=scoring_name,
        n_failed=n_failed,
        n_not_converged=n_nc,
        n_not_convex=n_ncx,
        total_n_iter=int(total_iter),
        refit_time_=refit_time,
        wall_time=time.perf_counter() - t_start,
    )


def _cv_results(candidates, scores, fit_t, score_t, iters, nc, ncx):
    n_cand, n_splits = scores.shape
    res = {"params": [dict(c) for c in candidates]}
    names = sorted({k for c in candidates for k in c})
    for name in names:
        arr = np.ma.MaskedArray(np.empty(n_cand, dtype=object), mask=True)
        for i, c in enumerate(candidates):
            if name in c:
                arr[i] = c[name]
        res[f"param_{name}"] = arr
    for k in range(n_splits):
        res[f"split{k}_test_score"] = scores[:, k].copy()
    finite = np.isfinite(scores).all(axis=1)
    mean = np.full(n_cand, np.nan)
    std = np.full(n_cand, np.nan)
    mean[finite] = scores[finite].mean(axis=1)
    std[finite] = scores[finite].std(axis=1)
    res["mean_test_score"] = mean
    res["std_test_score"] = std
    # rank 1 = best; NaN means rank last (as scikit-learn); ties share the lowest rank
    key = np.where(np.isnan(mean), -np.inf, mean)
    order = np.argsort(-key, kind="stable")
    rank = np.empty(n_cand, dtype=np.int32)
    prev, r = None, 0
    for pos, i in enumerate(order):
        if prev is None or key[i] != prev:
            r = pos + 1
            prev = key[i]
        rank[i] = r
    res["rank_test_score"] = rank
    res["mean_fit_time"] = fit_t.mean(axis=1)
    res["std_fit_time"] = fit_t.std(axis=1)
    res["mean_score_time"] = score_t.mean(axis=1)
    res["mean_n_iter"] = np.array([
        np.nan if np.all(np.isnan(row)) else np.nanmean(row) for row in iters
    ])
    res["n_not_converged"] = nc.sum(axis=1).astype(np.int64)
    res["n_not_convex"] = ncx.sum(axis=1).astype(np.int64)
    return res
