"""The outcome of a grid search: :class:`SearchResult` and its ``cv_results_`` table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SearchResult"]


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
        CV fits of a convex-regression estimator whose relative convexity deficit
        (``convexity_deficit_``: proved where its certificate is, sampled otherwise)
        exceeds the tolerance of
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
