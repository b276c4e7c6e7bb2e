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
import numbers
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed, parallel_config
from numpy.typing import ArrayLike
from sklearn.base import clone, is_regressor
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import _check_sample_weight

from psdsos.certify import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.model_selection._folds import cv_splits
from psdsos.model_selection._path import _SILENCED, PATH_PARAMS, _fit_path, _group_candidates
from psdsos.model_selection._path import _path_order as _path_order
from psdsos.model_selection._progress import check_verbose, progress_bar
from psdsos.model_selection._result import SearchResult, _cv_results
from psdsos.model_selection._scoring import _default_score, check_scoring

__all__ = ["grid_search_cv"]


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


def _check_error_score(error_score):
    if isinstance(error_score, str) and error_score == "raise":
        return error_score
    if isinstance(error_score, numbers.Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ValueError(f"error_score must be 'raise' or a number, got {error_score!r}")


# ----------------------------------------------------------------------------------------
# the public function
# ----------------------------------------------------------------------------------------


def grid_search_cv(estimator: Any, X: ArrayLike, M: ArrayLike,
                   param_grid: dict[str, Sequence] | Sequence[dict[str, Sequence]], *,
                   cv: str | int | Iterable | Any = "loo",
                   scoring: str | Callable | None = None,
                   n_jobs: int | None = None, warm_start: bool = True,
                   verbose: bool | int | None = None,
                   backend: Any = None, refit: bool = True, cv_params: dict | None = None,
                   error_score: str | float = np.nan, path_params: Sequence[str] = PATH_PARAMS,
                   sample_weight: ArrayLike | None = None,
                   groups: ArrayLike | None = None) -> SearchResult:
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
    cv : "loo", int, CV splitter or iterable of (train, test) pairs, default="loo"
        What scikit-learn's ``GridSearchCV`` accepts, plus ``"loo"``: ``"loo"``:
        leave-one-out; ``k``: ``KFold(k)`` without shuffling (2 <= k <= n); any object with
        ``split(X, M, groups)`` (e.g. ``KFold(5, shuffle=True, random_state=0)``,
        ``GroupKFold(3)``, ``LeaveOneGroupOut()``); or an iterable of ``(train, test)``
        pairs of integer row indices (a list, or a generator: it is read once).  Every
        split is checked: 1-D integer indices in ``[0, n)`` (or boolean masks of length n),
        non-empty train and test parts.
    scoring : None, str or callable, default=None
        ``None``/``"score"``: the estimator's ``score`` (:math:`R^2` over matrix entries
        for PSDRegressor; note that :math:`R^2` is undefined on a test fold of one sample,
        where PSDRegressor returns 0, so use ``"neg_mse"`` with leave-one-out).
        ``"neg_mse"``: :func:`neg_mse_scorer`.  For PSD targets, the geometry they are
        judged by: ``"neg_bures_wasserstein"``, ``"neg_affine_invariant"``,
        ``"neg_log_euclidean"`` (:func:`neg_bures_wasserstein_scorer` and its siblings:
        negated mean squared distances).  For scalar targets, a scikit-learn scorer name
        (``"neg_mean_squared_error"``, ...).  A callable ``(estimator, X, M) -> float``.
        Higher is better.  The CV estimators take the same forms.
    n_jobs : int or None, default=None
        Parallel jobs (joblib semantics: None is 1 outside a ``parallel_config`` context,
        -1 all cores).  Results do not depend on it.
    warm_start : bool, default=True
        Warm starts along the path (requires a ``warm_start`` parameter; otherwise
        ignored).  False fits every candidate from a fresh clone (cold starts).
    verbose : None, bool or int, default=None
        Progress bar (tqdm, one tick per CV fit, with the elapsed and remaining time) on
        stderr, or a widget in a Jupyter notebook.  ``0``/``False``: silent; ``1``/``True``
        (or more): always, after a line with the numbers of candidates, splits and fits;
        ``None``: only where it can be watched (stderr is a terminal, or a notebook) and
        once the search has run for 1 second, so short searches and scripts whose stderr
        is redirected print nothing.
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
    groups : array-like of shape (n_samples,), optional
        Group labels of the rows, passed to the splitter's ``split(X, M, groups)``: for
        group splitters (``GroupKFold``, ``LeaveOneGroupOut``, ...); splitters that take no
        groups (``"loo"``, an int, ``KFold``) and explicit pairs ignore them, as in
        scikit-learn.

    Returns
    -------
    SearchResult

    Raises
    ------
    ValueError
        Empty or unknown parameters in ``param_grid``, unknown ``scoring``, ``cv`` not
        ``"loo"``/int/splitter/iterable of pairs, more folds than samples, a split that is
        not a pair of non-empty in-range integer index arrays (the message names the split
        and the problem), ``groups`` not of length n_samples, mismatched ``X``/``M``,
        ``verbose`` not None/bool/int, or every CV fit failing.

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
    scorer, scoring_name = check_scoring(scoring)
    if scorer is None:
        scorer = _default_score
    error_score = _check_error_score(error_score)
    show = check_verbose(verbose)
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
    splits = cv_splits(cv, X, M, groups)
    n_splits = len(splits)
    if scoring_name == "score" and is_regressor(estimator) and min(len(te) for _, te in splits) < 2:
        warnings.warn(
            "scoring=None uses the estimator's score (R^2), which is undefined on a test fold "
            "of one sample (cv='loo'): every score is then 0 or 1 and the selection is "
            "meaningless; pass scoring='neg_mse'",
            UserWarning,
            stacklevel=2,
        )
    paths = _group_candidates(candidates, path_params)

    tasks = [(k, g) for k in range(n_splits) for g in range(len(paths))]
    n_fits = len(candidates) * n_splits
    if show:
        sys.stderr.write(
            f"psdsos grid search: {len(candidates)} candidates x {n_splits} splits = "
            f"{n_fits} fits in {len(tasks)} jobs ({len(paths)} path(s) per split)\n"
        )

    def jobs():
        for k, g in tasks:
            tr, te = splits[k]
            yield delayed(_fit_path)(k, estimator, X, M, tr, te, paths[g], candidates, scorer,
                                     warm_start, cv_params, error_score, sample_weight)

    scores = np.full((len(candidates), n_splits), np.nan)
    fit_t = np.zeros_like(scores)
    score_t = np.zeros_like(scores)
    iters = np.full_like(scores, np.nan)
    nc = np.zeros(scores.shape, dtype=bool)
    ncx = np.zeros(scores.shape, dtype=bool)
    errors = []
    progress = progress_bar(n_fits, show, "grid search")
    with contextlib.ExitStack() as stack:
        if progress is not None:  # the bar ends its line, also on an error
            stack.callback(progress.close)
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
            if progress is not None:
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

