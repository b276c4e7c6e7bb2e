"""The warm-started path: one job fits one fold along one group of candidates.

For a given fold and given non-regularization parameters (kernel, bandwidth, solver, ...)
the features are the same for every value of the regularization weights, so one job takes
a (fold, kernel parameters) pair and fits the whole regularization grid on one cloned
estimator with ``warm_start=True``: consecutive fits differ in one weight, and the dual
variable of the previous fit is a good starting point.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from psdsos.certify import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.kernels import FeatureScaleWarning

#: Parameters swept along a path inside one job, outermost first.  Each is sorted from
#: large to small (strong regularization first: those problems are easy and their
#: solutions are good starting points for the weaker ones).
PATH_PARAMS = ("lam1", "lam2", "rho", "lam")


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


#: Per-fit warnings silenced inside the search (counted and reported once instead; the
#: features' scales, the same for every fit, by the refit).
_SILENCED = (ConvergenceWarning, NonConvexFitWarning, FeatureScaleWarning)


def _not_convex(est):
    """True when a fitted estimator's relative convexity deficit ``convexity_deficit_``
    (proved where its certificate is "certified", else sampled) exceeds the tolerance of
    NonConvexFitWarning (estimators without ``convexity_deficit_``: False)."""
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
