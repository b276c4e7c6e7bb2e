r"""Shape-constrained regression with its hyperparameters chosen by cross-validation.

:class:`ShapeConstrainedRegressorCV`: K-fold CV of :class:`ShapeConstrainedRegressor` over a
grid of bandwidths (multiples of the data's scale), ridge weights ``rho`` and SoS weights
``lam2``, the candidates' shapes imposed at their initial points only (no exchange, no
certificate); then the best candidates are refitted on all the data with their certificates, and the
first one whose every constraint is certified on the box is kept.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold

from psdsos._params import Bool, Interval, PositiveGrid, validate_params, warn_feature_scales
from psdsos._persistence import register_loadable
from psdsos._validation import FloatArray, RandomStateLike
from psdsos.estimators._common import ITERATIVE_OPTIONS, cv_seed, fitted_input
from psdsos.estimators._convex_fit import check_fit_input
from psdsos.estimators._search_common import _SavedSearch
from psdsos.estimators._shape import ShapeConstrainedRegressor, UncertifiedShapeWarning
from psdsos.estimators._shape_fit import SHAPE_OPTIONS, check_shapes
from psdsos.kernels import FeatureScaleWarning, Kernel, scale_bandwidth
from psdsos.losses import get_loss
from psdsos.model_selection._folds import check_groups, cv_splits

__all__ = ["ShapeConstrainedRegressorCV"]

#: The default grid.  Bandwidths of 1 to 4 times the data's scale: the shape constraints
#: remove the variance that a smaller bandwidth would let in, and below the scale the
#: certificate needs many cells.  ``rho`` in standardized units (1e-7 is kernel ridge's
#: ``alpha = 1e-4`` at n = 1000); ``lam2`` small, since the Frobenius weight of the SoS
#: blocks biases the fit towards small constraint functions (flat slopes, little
#: curvature; figures in docs/benchmarks.md, "Figures behind design choices").
DEFAULT_SIGMAS = (1.0, 2.0)
DEFAULT_RHOS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
#: lam2s=None pairs each rho with lam2 = min(rho, LAM2_CAP): a lam2 below rho buys no
#: accuracy, one above it biases.
LAM2_CAP = 1e-7
#: The CV fits impose the shapes at 4 * 2**p Sobol points (and the corners), at most this
#: many: a quarter of the refit's, which scores a candidate as well at a tenth of the cost.
#: In two features they use the refit's 64 (CV_POINTS_2D): with fewer, the least
#: regularized candidates bend between the points and score worse than their refits would.
CV_POINTS_MAX = 64
CV_POINTS_2D = 64


def default_cv_points(p: int) -> int:
    """The CV fits' constraint points on p features (``cv_constraint_points=None``)."""
    return CV_POINTS_2D if p == 2 else min(4 * 2**p, CV_POINTS_MAX)


#: ``cv_max_iter=None``: the CV fits' iteration cap for the squared loss, and for the other
#: losses (a dual with one variable per sample, finished by proximal steps).
CV_MAX_ITER, CV_MAX_ITER_LOSS = 1000, 20000


@register_loadable
class ShapeConstrainedRegressorCV(RegressorMixin, _SavedSearch, BaseEstimator):
    r""":class:`ShapeConstrainedRegressor` whose bandwidth, ``rho`` and ``lam2`` are chosen
    by K-fold cross-validation, keeping a certified candidate.

    1. **Search.**  For every candidate of ``sigmas`` (multiples of
       :func:`psdsos.kernels.scale_bandwidth` of the training inputs) x ``rhos`` (x
       ``lam2s``, or each rho with its own lam2), the mean squared error on the held-out
       fold of a fit on the other folds
       (scikit-learn's :class:`~sklearn.model_selection.GridSearchCV`).  These
       fits impose the shapes at ``cv_constraint_points`` points only (``certify=False``,
       ``cv_max_exchange`` rounds of exchange), at tolerance ``cv_tol`` and at most
       ``cv_max_iter`` iterations, which is what makes the search affordable.
    2. **Certified refit.**  The candidates are refitted on all the data in the order of
       their CV score, with ``certify=True``; the first whose every constraint is
       certified on the box (``certificate_[name].status == "certified"``) and whose solver
       reached ``tol`` is kept, after at most ``max_refits`` tries (failing that, the first
       certified one, with its ConvergenceWarning).  If none is, the best by CV is kept and an
       :class:`~psdsos.estimators.UncertifiedShapeWarning` says so.

    Small ``lam2`` matters: the Frobenius weight of the SoS blocks pulls each constraint
    function towards 0 (flatter slopes, less curvature), a bias that the default of
    :class:`ShapeConstrainedRegressor` (lam2 = 1e-3) can make larger than the noise.

    Parameters
    ----------
    increasing, decreasing, convex, concave, lower, upper
        The shapes, as in :class:`ShapeConstrainedRegressor`.
    kernel : str or Kernel, default="gaussian"
        As :class:`ShapeConstrainedRegressor`'s (``"rbf"``: the Gaussian kernel).
    sigmas : sequence of float > 0, default=(1.0, 2.0)
        Bandwidths in multiples of the data's scale.
    rhos : sequence of float >= 0, default=(1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
    lam2s : sequence of float > 0 or None, default=None
        None: each ``rho`` paired with ``lam2 = min(rho, 1e-7)`` (a lam2 below rho buys no
        accuracy, one above it biases the constraint functions); a sequence: the full
        product with ``sigmas`` and ``rhos``.
    cv : int, "loo", CV splitter or iterable of (train, test) pairs, default=3
        An int k: ``KFold(k, shuffle=True, random_state=random_state)`` (shuffled: data
        sorted by a feature would otherwise be extrapolated fold by fold); ``"loo"``:
        ``LeaveOneOut()``; any object with ``split(X, y, groups)`` (e.g. ``KFold``, or
        ``GroupKFold`` with ``fit(..., groups=g)``); or the (train, test) index arrays
        themselves.  The forms of :func:`psdsos.model_selection.grid_search_cv`, checked
        the same way.
    fit_intercept, max_exchange, max_cells, extrapolation
        As in :class:`ShapeConstrainedRegressor`, for every fit (the held-out folds are
        predicted with the same extrapolation as the final model).
    certify_tol : float, default=3e-3
        As in :class:`ShapeConstrainedRegressor` (whose default is 1e-2), for the refits
        (the CV fits have no exchange and no certificate).  Tighter than the single
        estimator's: the weakly regularized candidates CV selects bend between their
        constraint points by up to about 1% of the constraint's size, which a 1e-2
        tolerance leaves to the certified-shape predictor's correction (a global quadratic
        that costs accuracy) where 3e-3 has the exchange add the violating points and the
        refit proved with small or no correction, at the cost of exchange rounds (in three
        features, 0 to 5 rounds and 20 s to 4 minutes per refit for 200 to 2,000 samples).
    tol : float, default=1e-4
        Tolerance (relative duality gap) of the refits on all the data: their objective
        (about the noise variance) within 1e-4 of its optimum, so the fitted values are
        within about 1% of the noise level of the exact optimum's (the objective is
        strongly convex in them).
    max_iter : int, default=20000
        Iterations of the refits.
    cv_tol : float, default=1e-4
        Tolerance of the CV fits.
    cv_max_iter : int or None, default=None
        Iterations of each CV fit (a fit stopped there still has its score, that of a
        slightly less converged fit; the count is in ``n_not_converged_``).  The slowest
        candidates (ill-conditioned SoS features at the largest bandwidth, many exchange
        points at the smallest) are rarely the best, and this caps their cost.  None: 1000
        for the squared loss, 20000 for the others, whose dual takes thousands of proximal
        iterations (at 1000, Huber fits of the Engel data stopped with relative gaps near 1
        and held-out errors 1000 times too large).
    cv_max_exchange : int, default=0
        Exchange rounds of each CV fit: by default the shapes are imposed at the initial
        constraint points only, which scores a candidate nearly as its refit and costs one
        solve.
    cv_constraint_points : int or None, default=None
        Initial constraint points of the CV fits (Sobol points of the box, plus its
        corners); None: 4 * 2**n_features, at most 64 (the refits start from
        ShapeConstrainedRegressor's default, four times more), except in two features:
        the refits' 64 (there, fewer points made the search prefer over-regularized
        candidates at large n).
    max_refits : int, default=3
        Candidates refitted with their certificates, at most.
    n_jobs : int or None, default=None
        Parallel CV fits (joblib).
    random_state : int, Generator or None, default=None
        Shuffling of the folds and the Sobol points (seed 0 when None: deterministic).
    verbose : bool, default=False
        GridSearchCV's messages for the search.
    loss, delta, quantile
        The data term of every fit, as in :class:`ShapeConstrainedRegressor` ("Other
        losses"); the held-out score stays the mean squared error.

    Attributes
    ----------
    best_estimator_ : ShapeConstrainedRegressor
        The kept refit; :meth:`predict`, :meth:`gradient` and :meth:`hessian` are its.
    best_params_ : dict
        Its ``sigma`` (user's units), ``rho`` and ``lam2``.
    best_sigma_factor_ : float
        Its bandwidth in multiples of the data's scale.
    best_score_ : float
        Its mean CV score (negative mean squared error).
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    cv_results_ : dict
        As scikit-learn's searches (``params``, ``mean_test_score``, ``rank_test_score``,
        ``split<k>_test_score``, ``mean_fit_time``, ...).
    certificate_, correction_
        Those of ``best_estimator_``.
    certified_ : bool
        Whether every constraint of ``best_estimator_`` is certified.
    n_refits_ : int
        Candidates refitted.
    n_iter_ : int
        Solver iterations of the kept refit (all its exchange rounds).
    refit_time_ : float
        Seconds spent in the refits (fit, exchange and certificates of each).
    n_not_converged_ : int
        CV fits that stopped at ``cv_max_iter`` (counted when the fits run in this
        process, ``n_jobs=None``; 0 otherwise).

    Notes
    -----
    ``save(path)`` writes the fitted search (``best_estimator_``, ``cv_results_`` and the
    attributes above; no pickle) and :func:`psdsos.load` reads it back: the same
    predictions, gradients, Hessians and certificates.  ``cv_results_`` keeps its numeric
    columns and ``params``; its ``param_<name>`` columns are rebuilt from ``params``.  A
    scikit-learn splitter as ``cv`` is saved by class and parameters; a custom splitter is
    not (the loaded ``cv`` is None: give one before refitting).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.estimators import ShapeConstrainedRegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.1, 1.0, (80, 1))
    >>> y = np.sqrt(X[:, 0]) + 0.05 * rng.standard_normal(80)
    >>> est = ShapeConstrainedRegressorCV(increasing=True, concave=True,
    ...                                   rhos=(1e-4, 1e-6), random_state=0).fit(X, y)
    >>> est.certified_
    True
    >>> sorted(est.best_params_)
    ['lam2', 'rho', 'sigma']
    """

    _parameter_constraints = {
        **SHAPE_OPTIONS,
        "sigmas": PositiveGrid(),
        "rhos": PositiveGrid(zero=True),
        "lam2s": PositiveGrid(allow_none=True),
        "tol": ITERATIVE_OPTIONS["tol"],
        "max_iter": ITERATIVE_OPTIONS["max_iter"],
        "random_state": ITERATIVE_OPTIONS["random_state"],
        "cv_tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "cv_max_iter": Interval(numbers.Integral, 1, None, allow_none=True),
        "cv_max_exchange": Interval(numbers.Integral, 0, None),
        "cv_constraint_points": Interval(numbers.Integral, 1, None, allow_none=True),
        "max_refits": Interval(numbers.Integral, 1, None),
        "n_jobs": Interval(numbers.Integral, None, None, allow_none=True),
        "verbose": Bool(),
    }

    def __init__(self, *, increasing: Any = None, decreasing: Any = None, convex: Any = None,
                 concave: Any = None, lower: float | None = None, upper: float | None = None,
                 kernel: str | Kernel = "gaussian",
                 sigmas: Sequence[float] = DEFAULT_SIGMAS,
                 rhos: Sequence[float] = DEFAULT_RHOS,
                 lam2s: Sequence[float] | None = None, cv: Any = 3, fit_intercept: bool = True,
                 certify_tol: float = 3e-3, max_exchange: int = 10, max_cells: int = 400_000,
                 extrapolation: str = "linear", tol: float = 1e-4, max_iter: int = 20000,
                 cv_tol: float = 1e-4,
                 cv_max_iter: int | None = None, cv_max_exchange: int = 0,
                 cv_constraint_points: int | None = None, max_refits: int = 3,
                 n_jobs: int | None = None,
                 random_state: RandomStateLike = None, verbose: bool = False,
                 loss: str = "squared", delta: float | None = None,
                 quantile: float | None = None) -> None:
        self.increasing = increasing
        self.decreasing = decreasing
        self.convex = convex
        self.concave = concave
        self.lower = lower
        self.upper = upper
        self.kernel = kernel
        self.sigmas = sigmas
        self.rhos = rhos
        self.lam2s = lam2s
        self.cv = cv
        self.fit_intercept = fit_intercept
        self.certify_tol = certify_tol
        self.max_exchange = max_exchange
        self.max_cells = max_cells
        self.extrapolation = extrapolation
        self.tol = tol
        self.max_iter = max_iter
        self.cv_tol = cv_tol
        self.cv_max_iter = cv_max_iter
        self.cv_max_exchange = cv_max_exchange
        self.cv_constraint_points = cv_constraint_points
        self.max_refits = max_refits
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.loss = loss
        self.delta = delta
        self.quantile = quantile

    def _base(self, p: int) -> ShapeConstrainedRegressor:
        m = self.cv_constraint_points
        m = default_cv_points(p) if m is None else int(m)
        return ShapeConstrainedRegressor(
            increasing=self.increasing, decreasing=self.decreasing, convex=self.convex,
            concave=self.concave, lower=self.lower, upper=self.upper, kernel=self.kernel,
            fit_intercept=self.fit_intercept, certify=False, certify_tol=self.certify_tol,
            max_exchange=self.cv_max_exchange, max_cells=self.max_cells,
            extrapolation=self.extrapolation, tol=self.cv_tol,
            max_iter=self._cv_max_iter(), constraint_points=m, random_state=self.random_state,
            loss=self.loss, delta=self.delta, quantile=self.quantile)

    def _cv_max_iter(self) -> int:
        if self.cv_max_iter is not None:
            return int(self.cv_max_iter)
        return CV_MAX_ITER if self.loss == "squared" else CV_MAX_ITER_LOSS

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            groups: ArrayLike | None = None) -> ShapeConstrainedRegressorCV:
        """Search the grid by CV, then refit the best candidates with certificates.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Rows of weight 0 are dropped (with their ``groups`` entries).
        groups : array-like of shape (n_samples,), optional
            Group labels of the rows, passed to the splitter's ``split(X, y, groups)`` as
            scikit-learn's ``GridSearchCV`` passes them: group splitters (``GroupKFold``,
            ``LeaveOneGroupOut``, ...) hold out whole groups (and raise without them); an
            int ``cv`` and the other splitters ignore them.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            ``groups`` not of shape (n_samples,), or a group splitter without ``groups``; a
            ``delta`` or ``quantile`` missing for, or given to, a loss that does not take it.
        """
        validate_params(self)
        # loss, delta and quantile together (e.g. "huber" without delta) here, not as a
        # failure of every CV fit
        get_loss(self.loss, delta=self.delta, quantile=self.quantile, strict=True)
        Xv, yv, w = check_fit_input(self, X, y, sample_weight)
        groups = check_groups(groups, Xv.shape[0], sample_weight)
        warn_feature_scales(self, self.kernel, Xv)  # once here, not from every inner fit
        base = self._base(Xv.shape[1])
        # the shapes (feature indices, bounds) here, not as the failure of every CV fit
        check_shapes(self, Xv.shape[1])
        seed = cv_seed(self.random_state)
        folds = cv_splits(self.cv, Xv, yv, groups,
                          int_splitter=lambda k: KFold(k, shuffle=True, random_state=seed))
        scale = scale_bandwidth(Xv)
        factor = {float(m) * scale: float(m) for m in self.sigmas}
        rhos = [float(r) for r in self.rhos]
        if self.lam2s is None:  # each rho with lam2 = min(rho, LAM2_CAP): a list of grids
            grid: Any = [{"sigma": list(factor), "rho": [r],
                          "lam2": [min(r, LAM2_CAP) if r > 0 else LAM2_CAP]} for r in rhos]
        else:
            grid = {"sigma": list(factor), "rho": rhos,
                    "lam2": [float(v) for v in self.lam2s]}
        search = GridSearchCV(base, grid, scoring="neg_mean_squared_error",
                              cv=folds, n_jobs=self.n_jobs, refit=False,
                              error_score=np.nan, verbose=int(self.verbose))
        with warnings.catch_warnings(record=True) as caught:
            # CV fits stopped at cv_max_iter keep their score (documented); counted when
            # they run in this process
            warnings.simplefilter("always", ConvergenceWarning)
            warnings.simplefilter("ignore", FeatureScaleWarning)  # reported above
            search.fit(Xv, yv, groups=groups, **({} if w is None else {"sample_weight": w}))
        self.n_not_converged_ = sum(issubclass(c.category, ConvergenceWarning) for c in caught)
        for c in caught:
            if not issubclass(c.category, ConvergenceWarning):
                warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
        self.cv_results_ = search.cv_results_
        scores = np.asarray(self.cv_results_["mean_test_score"], dtype=np.float64)
        if not np.any(np.isfinite(scores)):
            raise ValueError("every cross-validation fit of ShapeConstrainedRegressorCV failed "
                             "(see the FitFailedWarning above)")
        order = [int(i) for i in np.argsort(-np.where(np.isfinite(scores), scores, -np.inf),
                                            kind="stable")]
        refits = []
        t_refit = time.perf_counter()
        for i in order[: self.max_refits]:
            params = self.cv_results_["params"][i]
            est = clone(base).set_params(certify=True, tol=self.tol, max_iter=self.max_iter,
                                         max_exchange=self.max_exchange,
                                         constraint_points=None, **params)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("ignore", UncertifiedShapeWarning)
                warnings.simplefilter("ignore", FeatureScaleWarning)
                warnings.simplefilter("always", ConvergenceWarning)
                est.fit(Xv, yv, sample_weight=w)
            stopped = [c for c in caught if issubclass(c.category, ConvergenceWarning)]
            others = [c for c in caught if not issubclass(c.category, ConvergenceWarning)]
            certified = all(c.status == "certified" for c in est.certificate_.values())
            refits.append((i, est, certified, stopped, others))
            if certified and not stopped:
                break
        self.refit_time_ = time.perf_counter() - t_refit
        # a certified refit at its optimum first; then a certified one that stopped at
        # max_iter; then the best by CV
        kept = next((r for r in refits if r[2] and not r[3]),
                    next((r for r in refits if r[2]), refits[0]))
        i, est, certified, stopped, others = kept
        for c in stopped + others:  # the kept refit's own warnings
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
        self.best_estimator_ = est
        self.best_index_ = i
        self.best_params_ = dict(self.cv_results_["params"][i])
        self.best_sigma_factor_ = factor[self.best_params_["sigma"]]
        self.best_score_ = float(scores[i])
        self.certified_ = bool(certified)
        self.n_refits_ = len(refits)
        self.certificate_ = est.certificate_
        self.correction_ = est.correction_
        self.n_features_in_ = est.n_features_in_
        self.n_iter_ = est.n_iter_
        if not certified:
            sampled = [k for k, c in est.certificate_.items() if c.status != "certified"]
            warnings.warn(
                f"none of the {len(refits)} best candidates by CV was certified on the box; "
                f"kept the best by CV, whose constraints {', '.join(sampled)} are only "
                "'sampled' (see certificate_)", UncertifiedShapeWarning, stacklevel=2)
        return self

    # ---- persistence (psdsos.load): the file of _SavedSearch ---------------------------------
    _best_class = ShapeConstrainedRegressor
    _fitted_scalars = {
        "best_index_": "int", "best_score_": "real", "best_sigma_factor_": "real",
        "certified_": "bool", "n_refits_": "posint", "n_iter_": "int", "refit_time_": "real",
        "n_not_converged_": "int", "n_features_in_": "posint",
    }

    def _restore_from_best(self, best: Any) -> None:
        self.certificate_ = best.certificate_
        self.correction_ = best.correction_

    def predict(self, X: ArrayLike, raw: bool = False) -> FloatArray:
        """The kept refit's :meth:`ShapeConstrainedRegressor.predict`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.predict(X, raw=raw)

    def _check_X(self, X: ArrayLike) -> np.ndarray:
        """X checked against this fit (its feature names included: the refit saw arrays)."""
        return fitted_input(self, X, "best_estimator_")

    def gradient(self, X: ArrayLike, raw: bool = False) -> FloatArray:
        """The kept refit's :meth:`ShapeConstrainedRegressor.gradient`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.gradient(X, raw=raw)

    def hessian(self, X: ArrayLike, raw: bool = False) -> FloatArray:
        """The kept refit's :meth:`ShapeConstrainedRegressor.hessian`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.hessian(X, raw=raw)
