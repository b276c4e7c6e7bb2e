r"""PSD-valued regression with its kernel, bandwidth and ``lam2`` chosen by cross-validation.

:class:`PSDRegressorCV`: K-fold (or leave-one-out) CV of :class:`PSDRegressor` over kernels x
bandwidths (multiples of the data's scale) x ``lam2`` (a regularization path, fitted from
large to small ``lam2`` with warm starts), then a refit of the best candidate on all the
data, as scikit-learn's ``RidgeCV`` / ``LassoCV``.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, ParameterGrid

# scikit-learn's Parallel: the caller's warning filters reach the workers (loky processes)
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _check_sample_weight

from psdsos._params import (
    Bool,
    Interval,
    KernelGrid,
    Options,
    PositiveGrid,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import register_loadable
from psdsos._validation import FloatArray, RandomStateLike, validate_data
from psdsos.estimators._common import ITERATIVE_OPTIONS, cv_seed, fitted_input
from psdsos.estimators._psd import NegativeTargetWarning, PSDRegressor, psd_sqrt_targets
from psdsos.estimators._psd_path import _FULL_TOL_FACTOR, _fit_folds, _fit_path
from psdsos.estimators._search_common import ScoringOption, _SavedSearch
from psdsos.estimators._weights import check_sample_weight
from psdsos.kernels import FeatureScaleWarning, Kernel, scale_bandwidth
from psdsos.model_selection._folds import cv_splits
from psdsos.model_selection._scoring import check_scoring, neg_mse_scorer
from psdsos.solvers._dual_newton import AUTO_MAX_DIM

__all__ = ["PSDRegressorCV"]

#: The default grid.  Two smooth kernels (a smooth PSD-valued curve of time is the common
#: case; "matern52" is the rougher of the two), bandwidths of a quarter to twice the data's
#: scale (for times uniform on [0, T], scale = T / sqrt(24) ~ 0.2 T: from 0.05 T to 0.4 T,
#: i.e. 2.5 to 20 sampling intervals at n = 50), and lam2 on a log grid from strong
#: smoothing down to near-interpolation.
DEFAULT_KERNELS = ("gaussian", "matern52")
DEFAULT_SIGMAS = (0.25, 0.5, 1.0, 2.0)
DEFAULT_LAM2S = (1e-2, 1e-4, 1e-6, 1e-8)


@register_loadable
class PSDRegressorCV(RegressorMixin, _SavedSearch, BaseEstimator):
    r""":class:`PSDRegressor` whose kernel, bandwidth and ``lam2`` are chosen by
    cross-validation.

    For every candidate :math:`(k, c, \lambda_2)` of ``kernels`` x ``sigmas`` (multiples
    :math:`c` of :func:`psdsos.kernels.scale_bandwidth` of the training inputs,
    :math:`\sigma = c\,\sigma_{\text{scale}}`) x ``lam2s``, the mean over the splits of
    the score on the held-out samples of :class:`PSDRegressor` fitted on the others,
    by default

    .. math::

        \text{score} = -\frac{1}{|T|}\sum_{i\in T}
          \|F_{\mathbf B}(x_i) - \mathbf M_i\|_F^2,

    the candidate of highest mean score is kept and refitted on all the data
    (``best_estimator_``; :meth:`predict` is its).  The candidates, splits, scores and the
    choice are those of scikit-learn's ``GridSearchCV`` over the same grid and splits
    (ties go to the first candidate of ``cv_results_["params"]``); only the schedule
    differs, and every CV fit stops on its own relative duality gap ``cv_tol``:

    * unweighted fits of a dual dimension n d (d + 1) / 2 up to 600 (the dual solver's
      quasi-Newton steps, :func:`psdsos.solvers.solve_dual` with ``method="lbfgs"``): per
      (kernel, bandwidth), the ``lam2`` path is fitted once on all the data (from the
      largest to the smallest, warm starts), and each split's fit starts from that dual
      solution moved to the split (the held-out blocks of :math:`\mathcal A^*(\Gamma)`
      carried by the training points, so that the negative part, the primal B, stays
      that of the full fit) with the full-data generalized Hessian restricted to the
      split as its first metric;
    * otherwise, per split and (kernel, bandwidth), the ``lam2`` values are fitted from
      the largest to the smallest on one estimator with ``warm_start=True`` (each fit
      starts from the previous dual solution);
    * in both, where the PSD constraint is inactive (the kernel-ridge solution with kernel
      :math:`k^2` is already PSD-valued: every coefficient matrix PSD; on all the data,
      then on the split) the fit starts from that exact solution, which the solver then
      only certifies.

    Parameters
    ----------
    kernels : sequence of str or Kernel, default=("gaussian", "matern52")
        The kernels tried (names as ``PSDRegressor``'s ``kernel``, ``"rbf"`` for the
        Gaussian included, or Kernel objects, whose own bandwidth is then used for every
        ``sigmas`` entry).
    sigmas : sequence of float > 0, default=(0.25, 0.5, 1.0, 2.0)
        Bandwidths in multiples of the data's scale (``sigma="scale"`` of PSDRegressor);
        for times uniform on [0, T] the scale is about 0.2 T.
    lam2s : sequence of float > 0, default=(1e-2, 1e-4, 1e-6, 1e-8)
        The Frobenius weights (the regularization path).
    lam1 : float >= 0, default=0.0
        The trace weight of every fit (not searched).
    cv : int, "loo", CV splitter or iterable of (train, test) pairs, default=5
        An int k: ``KFold(k, shuffle=True, random_state=random_state)``; ``"loo"``:
        ``LeaveOneOut()``; any object with ``split(X, y, groups)`` (``GroupKFold`` with
        ``fit(..., groups=g)``); or the (train, test) index arrays themselves.  The forms
        of :func:`psdsos.model_selection.grid_search_cv`, checked the same way.
    scoring : None, str or callable, default=None
        None: minus the mean squared Frobenius error (above; defined on test folds of one
        sample).  A name of :func:`psdsos.model_selection.grid_search_cv` (``"neg_mse"``,
        ``"neg_bures_wasserstein"``, ``"neg_affine_invariant"``, ``"neg_log_euclidean"``,
        ``"score"``, or for scalar targets a scikit-learn scorer name), or a callable
        ``scoring(estimator, X, y) -> float`` (higher is better), e.g. a scikit-learn
        scorer from ``make_scorer``.
    tol, max_iter : float, int, default=1e-7, 10000
        Solver settings of the refit on all the data.
    cv_tol : float, default=1e-5
        Tolerance (relative duality gap) of the CV fits.
    cv_max_iter : int, default=3000
        Iterations of each CV fit (a fit stopped there keeps its score, that of a less
        converged fit; counted in ``n_not_converged_``, one ConvergenceWarning).
    n_jobs : int or None, default=None
        Parallel jobs (joblib), one job per (kernel, bandwidth) (and split, where the
        splits are not started from the fits on all the data).
    random_state : int, Generator or None, default=None
        Shuffling of the folds (seed 0 when None: deterministic).
    verbose : bool, default=False
        Print the search's progress (one line per job) and timing.
    target : {"matrix", "sqrt"}, default="matrix"
        ``PSDRegressor``'s ``target``: ``"sqrt"`` fits every candidate to the targets'
        square roots and predicts the squares (for Bures-Wasserstein scoring of covariance
        matrices); a :class:`~psdsos.estimators.NegativeTargetWarning` is shown once, not
        per CV fit.

    Attributes
    ----------
    best_estimator_ : PSDRegressor
        The best candidate refitted on all the data.
    best_params_ : dict
        Its ``kernel``, ``sigma`` (in the inputs' units) and ``lam2``.
    best_sigma_factor_ : float
        Its bandwidth in multiples of the data's scale.
    best_score_ : float
        Its mean CV score.
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    cv_results_ : dict
        As scikit-learn's ``GridSearchCV`` (``params``, ``param_kernel``, ``param_sigma``,
        ``param_lam2``, ``split<k>_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``std_score_time``), plus ``mean_n_iter`` (evaluations of the dual), ``mean_n_hessian``
        (its generalized Hessians, quasi-Newton steps) and ``n_not_converged`` per candidate;
        the fit times include a share of the fits on all the data that start the splits.
    n_splits_ : int
    n_iter_ : int
        Solver iterations of the refit.
    n_outputs_ : int
        d, the size of the predicted matrices.
    n_not_converged_ : int
        CV fits stopped at ``cv_max_iter``.
    n_closed_form_ : int
        CV fits started from the exact unconstrained solution (PSD constraint inactive).
    search_time_, refit_time_ : float
        Seconds.
    n_features_in_ : int

    Notes
    -----
    ``save(path)`` writes the fitted search (``best_estimator_``, ``cv_results_`` and the
    attributes above; no pickle) and :func:`psdsos.load` reads it back, predicting the
    same matrices.  ``cv_results_`` keeps its numeric columns and ``params``; its
    ``param_<name>`` columns are rebuilt from ``params``.  Kernel objects of registered
    classes are saved by name and bandwidth, a scikit-learn splitter as ``cv`` by class
    and parameters; a custom splitter or a callable ``scoring`` is not (the loaded value
    is None: give it again before refitting).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos import PSDRegressorCV
    >>> from psdsos.datasets import make_bures_geodesic
    >>> t, M = make_bures_geodesic(12, random_state=0)
    >>> est = PSDRegressorCV(kernels=("gaussian",), sigmas=(0.5, 1.0), lam2s=(1e-2, 1e-4),
    ...                      cv=3).fit(t, M)
    >>> sorted(est.best_params_)
    ['kernel', 'lam2', 'sigma']
    >>> est.predict(t[:2]).shape
    (2, 2, 2)
    """

    #: Start every fold from the fits on all the data (:func:`_fit_folds`) where the dual
    #: solver takes quasi-Newton steps; False: each split's own lam2 path (:func:`_fit_path`).
    _start_folds_from_full_fit = True

    _parameter_constraints = {
        "kernels": KernelGrid(),
        "sigmas": PositiveGrid(),
        "lam2s": PositiveGrid(),
        "lam1": Interval(numbers.Real, 0.0, None),
        "scoring": ScoringOption(),
        "tol": ITERATIVE_OPTIONS["tol"],
        "max_iter": ITERATIVE_OPTIONS["max_iter"],
        "cv_tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "cv_max_iter": Interval(numbers.Integral, 1, None),
        "n_jobs": Interval(numbers.Integral, None, None, allow_none=True),
        "random_state": ITERATIVE_OPTIONS["random_state"],
        "verbose": Bool(),
        "target": Options(["matrix", "sqrt"]),
    }

    def __init__(self, *, kernels: Sequence[str | Kernel] = DEFAULT_KERNELS,
                 sigmas: Sequence[float] = DEFAULT_SIGMAS,
                 lam2s: Sequence[float] = DEFAULT_LAM2S, lam1: float = 0.0, cv: Any = 5,
                 scoring: str | Callable[..., float] | None = None, tol: float = 1e-7,
                 max_iter: int = 10000, cv_tol: float = 1e-5, cv_max_iter: int = 3000,
                 n_jobs: int | None = None, random_state: RandomStateLike = None,
                 verbose: bool = False, target: str = "matrix") -> None:
        self.kernels = kernels
        self.sigmas = sigmas
        self.lam2s = lam2s
        self.lam1 = lam1
        self.cv = cv
        self.scoring = scoring
        self.tol = tol
        self.max_iter = max_iter
        self.cv_tol = cv_tol
        self.cv_max_iter = cv_max_iter
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.target = target

    def _scorer(self) -> Callable[..., float]:
        scorer = check_scoring(self.scoring)[0]
        return neg_mse_scorer if scorer is None else scorer

    def _base(self, tol: float, max_iter: int) -> PSDRegressor:
        return PSDRegressor(lam1=self.lam1, tol=tol, max_iter=max_iter, target=self.target)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            groups: ArrayLike | None = None) -> PSDRegressorCV:
        """Search the grid by CV, then refit the best candidate on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples, d, d) (or (n_samples,), as PSDRegressor)
        sample_weight : array-like of shape (n_samples,), optional
            Passed to every fit (the training rows' weights); the scores are unweighted.
        groups : array-like of shape (n_samples,), optional
            Group labels of the rows, passed to the splitter's ``split(X, y, groups)`` as
            scikit-learn's ``GridSearchCV`` passes them: group splitters (``GroupKFold``,
            ``LeaveOneGroupOut``, ...) hold out whole groups (and raise without them); an
            int ``cv``, ``"loo"`` and the other splitters ignore them.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            ``groups`` not of shape (n_samples,), or a group splitter without ``groups``.
        """
        validate_params(self)
        t_start = time.perf_counter()
        Xv = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=2)
        n = Xv.shape[0]
        Mv, scalar = PSDRegressor()._validate_targets(y, n)
        M = Mv[:, 0, 0] if scalar else Mv
        w = None
        if sample_weight is not None:  # checked as PSDRegressor does; every row kept here
            check_sample_weight(sample_weight, Xv, M, min_positive=2)
            w = _check_sample_weight(sample_weight, Xv)
        seed = cv_seed(self.random_state)
        folds = cv_splits(self.cv, Xv, M, groups,
                          int_splitter=lambda k: KFold(k, shuffle=True, random_state=seed))
        # the targets the model fits: the roots with target="sqrt" (warned about once here)
        M_fit = Mv if self.target != "sqrt" else psd_sqrt_targets(Mv)
        M_fit = M_fit[:, 0, 0] if scalar else M_fit
        scale = scale_bandwidth(Xv, w)
        factor = {float(c) * scale: float(c) for c in self.sigmas}
        sigmas = list(factor)
        kernels = list(self.kernels)
        lam2s = [float(v) for v in self.lam2s]
        base = self._base(self.cv_tol, self.cv_max_iter)
        scorer = self._scorer()
        closed = self.lam1 == 0 and (w is None or bool(np.all(w == w[0])))
        jobs = [(a, b, f) for a in range(len(kernels)) for b in range(len(sigmas))
                for f in range(len(folds))]
        d = 1 if M.ndim == 1 else M.shape[1]
        equal_weights = w is None or bool(np.all(w == w[0]))
        # folds started from the full-data fits (quasi-Newton steps: small dual dimension,
        # unweighted least squares), else each split's own warm-started lam2 path
        self._fold_starts = bool(
            self._start_folds_from_full_fit and base._dual_method != "apg" and equal_weights
            and n * d * (d + 1) // 2 <= AUTO_MAX_DIM)
        self._full_fit_time = 0.0
        warn_feature_scales(self, kernels, Xv)  # once here, not from every inner fit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FeatureScaleWarning)
            warnings.simplefilter("ignore", NegativeTargetWarning)
            if self._fold_starts:
                pairs = [(a, b) for a in range(len(kernels)) for b in range(len(sigmas))]
                per_pair = Parallel(n_jobs=self.n_jobs, verbose=10 if self.verbose else 0)(
                    delayed(_fit_folds)(base, kernels[a], sigmas[b], lam2s, Xv, M, folds,
                                        scorer, closed, _FULL_TOL_FACTOR * self.cv_tol, M_fit)
                    for a, b in pairs)
                by_pair = {pair: res[0] for pair, res in zip(pairs, per_pair, strict=True)}
                results = [by_pair[(a, b)][f] for a, b, f in jobs]
                # (benchmarks: the part of the search that does not grow with the splits)
                self._full_fit_time = float(sum(res[1] for res in per_pair))
            else:
                results = Parallel(n_jobs=self.n_jobs, verbose=10 if self.verbose else 0)(
                    delayed(_fit_path)(base, kernels[a], sigmas[b], lam2s, Xv, M, w,
                                       folds[f][0], folds[f][1], scorer, closed, M_fit)
                    for a, b, f in jobs)
        # cv_results_ in the order of ParameterGrid (GridSearchCV's)
        grid = list(ParameterGrid({"kernel": list(range(len(kernels))),
                                   "sigma": list(range(len(sigmas))),
                                   "lam2": list(range(len(lam2s)))}))
        nc = len(grid)
        nf = len(folds)
        table = np.empty((nc, nf, 7))
        index = {(g["kernel"], g["sigma"], g["lam2"]): i for i, g in enumerate(grid)}
        for (a, b, f), res in zip(jobs, results, strict=True):
            for c, row in enumerate(res):
                table[index[(a, b, c)], f] = row
        params = [{"kernel": kernels[g["kernel"]], "lam2": lam2s[g["lam2"]],
                   "sigma": sigmas[g["sigma"]]} for g in grid]
        scores = table[:, :, 0]
        mean = scores.mean(axis=1)
        cv_results: dict[str, Any] = {}
        for name in ("kernel", "lam2", "sigma"):
            col = np.ma.MaskedArray(np.empty(nc, dtype=object), mask=False)
            for i, p in enumerate(params):
                col[i] = p[name]
            cv_results[f"param_{name}"] = col
        cv_results["params"] = params
        for f in range(nf):
            cv_results[f"split{f}_test_score"] = scores[:, f].copy()
        cv_results["mean_test_score"] = mean
        cv_results["std_test_score"] = scores.std(axis=1)
        finite = np.where(np.isfinite(mean), mean, -np.inf)
        # method="min" ranks, as GridSearchCV (non-finite scores last)
        cv_results["rank_test_score"] = rankdata(-finite, method="min").astype(np.int32)
        cv_results["mean_fit_time"] = table[:, :, 1].mean(axis=1)
        cv_results["std_fit_time"] = table[:, :, 1].std(axis=1)
        cv_results["mean_score_time"] = table[:, :, 2].mean(axis=1)
        cv_results["std_score_time"] = table[:, :, 2].std(axis=1)
        cv_results["mean_n_iter"] = table[:, :, 3].mean(axis=1)
        cv_results["mean_n_hessian"] = table[:, :, 6].mean(axis=1)
        cv_results["n_not_converged"] = np.sum(table[:, :, 4] == 0, axis=1)
        self.cv_results_ = cv_results
        self.n_splits_ = nf
        self.n_not_converged_ = int(cv_results["n_not_converged"].sum())
        self.n_closed_form_ = int(np.sum(table[:, :, 5]))
        if not np.any(np.isfinite(mean)):
            raise ValueError("every candidate of PSDRegressorCV has a non-finite CV score")
        best = int(np.argmax(finite))
        self.search_time_ = time.perf_counter() - t_start
        if self.n_not_converged_:
            warnings.warn(f"{self.n_not_converged_} of the {nc * nf} CV fits stopped at "
                          f"cv_max_iter={self.cv_max_iter} before cv_tol={self.cv_tol} (their "
                          "scores are those of less converged fits); raise cv_max_iter or "
                          "cv_tol", ConvergenceWarning, stacklevel=2)
        self.best_index_ = best
        self.best_params_ = dict(params[best])
        self.best_sigma_factor_ = factor[self.best_params_["sigma"]]
        self.best_score_ = float(mean[best])
        t_refit = time.perf_counter()
        est = self._base(self.tol, self.max_iter).set_params(**self.best_params_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FeatureScaleWarning)
            warnings.simplefilter("ignore", NegativeTargetWarning)
            self.best_estimator_ = est.fit(Xv, M, sample_weight=w)
        self.refit_time_ = time.perf_counter() - t_refit
        self.n_outputs_ = est.n_outputs_
        self.n_iter_ = est.n_iter_
        if self.verbose:
            print(f"PSDRegressorCV: {nc} candidates x {nf} splits in {self.search_time_:.1f} s, "
                  f"refit {self.refit_time_:.1f} s; best {self.best_params_}")
        return self

    # ---- persistence (psdsos.load): the file of _SavedSearch ---------------------------------
    _best_class = PSDRegressor
    _fitted_scalars = {
        "best_index_": "int", "best_score_": "real", "best_sigma_factor_": "real",
        "n_splits_": "posint", "n_iter_": "int", "n_outputs_": "posint",
        "n_not_converged_": "int", "n_closed_form_": "int", "search_time_": "real",
        "refit_time_": "real", "n_features_in_": "posint",
    }

    def predict(self, X: ArrayLike) -> FloatArray:
        """The refitted best estimator's :meth:`PSDRegressor.predict` (PSD matrices)."""
        # X checked against this fit (its feature names included: the refit saw arrays),
        # first: NotFittedError before best_estimator_ is looked up
        X = fitted_input(self, X, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X: ArrayLike, y: ArrayLike,
              sample_weight: ArrayLike | None = None) -> float:
        """The refitted best estimator's :meth:`PSDRegressor.score` (R^2 over all entries)."""
        X = fitted_input(self, X, "best_estimator_")
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
