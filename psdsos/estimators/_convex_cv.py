r"""Convex regression with its bandwidth, regularization and Nystrom rank chosen by
cross-validation.

:class:`ConvexRegressorCV`: K-fold CV (a single hold-out split beyond
:data:`HOLDOUT_MIN_SAMPLES` samples) of :class:`ConvexRegressor` over bandwidths (multiples
of the data's scale) x Nystrom ranks x a regularization path ``(rho, lam2)`` fitted from
large to small with warm starts; the CV fits skip the box certificate.  Then the best
candidates are refitted on all the data with their certificates, in the order of their CV
score, and the first certified convex is kept, as :class:`ShapeConstrainedRegressorCV`.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, ShuffleSplit

# scikit-learn's Parallel: the caller's warning filters reach the workers (loky processes)
from sklearn.utils.parallel import Parallel, delayed

from psdsos._params import (
    KERNEL_OPTIONS,
    Bool,
    Interval,
    PositiveGrid,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import register_loadable
from psdsos._validation import FloatArray, RandomStateLike
from psdsos.certify._convexity import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.estimators._common import ITERATIVE_OPTIONS, cv_seed, fitted_input
from psdsos.estimators._convex import ConvexRegressor
from psdsos.estimators._convex_fit import check_fit_input
from psdsos.estimators._convex_path import (
    _CVConvexRegressor,
    _Ranks,
    auto_ranks,
    is_certified_convex,
)
from psdsos.estimators._search_common import _SavedSearch
from psdsos.estimators._shape import UncertifiedShapeWarning
from psdsos.kernels import FeatureScaleWarning, Kernel, scale_bandwidth
from psdsos.model_selection._folds import check_groups, cv_splits

__all__ = ["ConvexRegressorCV"]

#: Default bandwidths, in multiples of the data's scale (``sigma="scale"``).  A convex
#: function is a sum of Gaussian bumps only through large cancellations: at 1 x scale the
#: sampled convexity constraint leaves the fit nearly affine (log-sum-exp of 5 random linear
#: forms on [-1, 1]^5, n = 10^4: relative test error 0.29, the best affine fit's, whatever
#: rho, lam2 and the rank), while 2 x and 3 x scale reach 0.005 and 0.008
#: (benchmarks/convex_cv.py).
DEFAULT_SIGMAS = (2.0, 4.0)
#: The default regularization path (standardized units): each rho with lam2 = rho.  The
#: fixed defaults of ConvexRegressor (rho = 1e-4, lam2 = 1e-3) over-smooth at large n:
#: the Frobenius weight on B pulls the curvature towards 0.
DEFAULT_RHOS = (1e-4, 1e-5, 1e-6, 1e-7)
#: With an int ``cv`` and more samples than this, a single hold-out split (``holdout`` of
#: the rows) replaces the K folds: the score's noise is then already small and K refits per
#: candidate would cost K times more.  Not below: at 10^5 samples (2 features), the 20,000
#: rows held out could not tell rho = 1e-6 from 1e-7 (test errors 5.6e-5 and 2.3e-5 of
#: Var f), three folds could, in 2.1 times the time.
HOLDOUT_MIN_SAMPLES = 200_000


def _fit_path(base: ConvexRegressor, sigma: float, rank: int | None,
              regs: Sequence[tuple[float, float]], X: np.ndarray, y: np.ndarray,
              w: np.ndarray | None, train: np.ndarray, test: np.ndarray,
              init: np.ndarray | None = None) -> tuple[list[Any], np.ndarray | None]:
    """One split, one (sigma, rank): the (rho, lam2) path from large to small on one
    estimator with ``warm_start=True`` (from the dual point ``init`` when given: a path
    continued).  Returns (per pair, in the order given: (score, fit time, score time,
    iterations, converged, relative convexity deficit at 512 points); the dual point of the
    last fit, None after a primal one)."""
    est = clone(base).set_params(sigma=sigma, n_landmarks=rank, warm_start=True)
    if init is not None:
        est.dual_coef_ = init
    order = sorted(range(len(regs)), key=lambda i: (-regs[i][0], -regs[i][1]))
    Xtr, ytr = X[train], y[train]
    wtr = None if w is None else w[train]
    out: list[Any] = [None] * len(regs)
    for i in order:
        rho, lam2 = regs[i]
        est.set_params(rho=rho, lam2=lam2)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            est.fit(Xtr, ytr, sample_weight=wtr)
        converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
        for c in caught:
            if not issubclass(c.category, ConvergenceWarning):
                warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
        t1 = time.perf_counter()
        score = -float(np.mean((est.predict(X[test]) - y[test]) ** 2))
        out[i] = (score, t1 - t0, time.perf_counter() - t1, int(est.n_iter_), converged,
                  float(est.convexity_deficit_))
    return out, getattr(est, "dual_coef_", None)


@register_loadable
class ConvexRegressorCV(RegressorMixin, _SavedSearch, BaseEstimator):
    r""":class:`ConvexRegressor` whose bandwidth, regularization and Nystrom rank are chosen
    by cross-validation, keeping a fit certified convex.

    1. **Search.**  For every candidate of ``sigmas`` (multiples :math:`c` of
       :func:`psdsos.kernels.scale_bandwidth` of the training inputs,
       :math:`\sigma = c\,\sigma_{\text{scale}}`) x ``n_landmarks`` (Nystrom ranks) x
       regularization pairs ``(rho, lam2)`` (each rho with lam2 = rho by default, or the
       product with ``lam2s``), the mean squared error on the held-out rows of a
       :class:`ConvexRegressor` fitted on the others.  The splits: ``KFold(cv,
       shuffle=True)``; with an int ``cv`` and more than 200,000 samples, **one** hold-out
       split (``holdout`` = 20% of the rows held out, shuffled and seeded) instead of K
       fits per candidate; or a given splitter.  Per split and (sigma, rank) the pairs are
       fitted from the largest to the smallest on one estimator with ``warm_start=True``
       (each fit starts from the previous dual solution).  These fits run at ``cv_tol``
       and at most ``cv_max_iter`` iterations, and skip the box certificate (a branch and
       bound, most of a small fit's time): a CV score needs less precision than the refit.
       Candidates, splits and scores are those of scikit-learn's ``GridSearchCV`` over the
       same grid and splits, to the solver's tolerance.  When the best candidate sits at
       the small-rho edge of the grid, its path continues by decades while the CV score
       improves (``extend_path``): at 10^5 samples the best of the default grid is often
       its smallest rho.
    2. **Certified refit.**  The candidates are refitted on all the data in the order of
       their CV score (``tol``, ``max_iter``, with the certificate of
       :class:`ConvexRegressor`); the first whose ``certificate_`` is proved
       (``status == "certified"``) with a relative bound >= -1e-2 (convex within 1% of
       its curvature scale, :data:`~psdsos.estimators.RELATIVE_DEFICIT_TOL`) is kept, after
       at most ``max_refits`` tries.  If none is, the best by CV is kept and an
       :class:`~psdsos.estimators.UncertifiedShapeWarning` says so.  The box certificate is
       proved on up to 8 features and a budget of 20,000 cells: in 5 or more dimensions it
       is often "sampled" only (see ``certificate_``).

    Why a search: with the fixed defaults of :class:`ConvexRegressor` (``sigma="scale"``,
    rho = 1e-4, lam2 = 1e-3) the test error stops decreasing with n, because the bandwidth
    of the scale lets the sampled convexity constraint flatten the fit to nearly affine and
    the fixed weights over-smooth; the search chooses larger bandwidths and weights that
    decrease with n.

    Parameters
    ----------
    kernel : {"gaussian", "matern32", "matern52"} or Kernel, default="gaussian"
        As :class:`ConvexRegressor`'s (``"rbf"``: the Gaussian kernel).
    sigmas : sequence of float > 0, default=(2.0, 4.0)
        Bandwidths in multiples of the data's scale.
    rhos : sequence of float > 0, default=(1e-4, 1e-5, 1e-6, 1e-7)
        Ridge weights (standardized units, as ConvexRegressor's ``rho``).
    lam2s : sequence of float > 0 or None, default=None
        None: each ``rho`` paired with ``lam2 = rho``; a sequence: the product with
        ``rhos``.
    lam1 : float >= 0, default=0.0
        The trace weight of every fit (not searched).
    n_landmarks : "auto", None or sequence of (int >= 1 or None), default="auto"
        Nystrom ranks tried (None: exact features).  "auto": the two largest of 25, 50,
        100, 200, 400 with r <= 2 sqrt(n_train) and r * n_features <= 1000 (the rank grows
        with n; an iteration eigendecomposes an r n_features square matrix), exact
        features when none is.
    cv : int, "loo", CV splitter or iterable of (train, test) pairs, default=3
        An int k: ``KFold(k, shuffle=True, random_state=random_state)``, or the single
        hold-out split beyond 200,000 samples; ``"loo"``: ``LeaveOneOut()``; any object
        with ``split(X, y, groups)`` (``GroupKFold`` with ``fit(..., groups=g)``); or the
        (train, test) index arrays themselves.  The forms of
        :func:`psdsos.model_selection.grid_search_cv`, checked the same way.
    holdout : float in (0, 1), default=0.2
        The share of the rows held out by the single split of large data.
    fit_intercept, concave
        As in :class:`ConvexRegressor`, for every fit.
    tol, max_iter : float, int, default=1e-6, 20000
        Solver settings of the refits on all the data.
    cv_tol, cv_max_iter : float, int, default=1e-4, 2000
        Solver settings of the CV fits (a fit stopped at ``cv_max_iter`` keeps its score;
        counted in ``n_not_converged_`` with one ConvergenceWarning).
    max_refits : int >= 1, default=3
        Candidates refitted with their certificates, at most.
    extend_path : int >= 0, default=2
        When the best candidate by CV has the smallest rho of its path (the edge of the
        grid), that path continues one decade down (rho / 10, and lam2 / 10 when paired
        with rho), warm started in every split from the path's last dual point, while the
        new candidate improves the CV score and its CV fits converge within
        ``cv_max_iter`` (not tried after a candidate whose fits took more than half of it),
        at most ``extend_path`` times; the new candidates are appended to
        ``cv_results_``.  0: the grid only.
    n_jobs : int or None, default=None
        Parallel jobs (joblib), one per (split, sigma, rank).
    random_state : int, Generator or None, default=None
        Shuffling of the splits and the seeds of the fits (0 when None: deterministic).
    verbose : bool, default=False

    Attributes
    ----------
    best_estimator_ : ConvexRegressor
        The kept refit; :meth:`predict`, :meth:`gradient`, :meth:`hessian` are its.
    best_params_ : dict
        Its ``sigma`` (user's units), ``n_landmarks``, ``rho`` and ``lam2``.
    best_sigma_factor_ : float
        Its bandwidth in multiples of the data's scale.
    best_score_ : float
        Its mean CV score (negative mean squared error).
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    cv_results_ : dict
        As scikit-learn's searches (``params``, ``param_<name>``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``split<k>_test_score``,
        ``mean_fit_time``, ...), plus ``mean_n_iter``, ``n_not_converged`` and
        ``n_not_convex`` (CV fits whose relative convexity deficit at 512 Sobol points
        exceeds 1e-2) per candidate.
    certificate_ : dict
        That of ``best_estimator_``.
    certified_ : bool
        Whether ``best_estimator_`` is certified convex (above).
    convexity_deficit_ : float
        That of ``best_estimator_``: proved over the box when its ``certificate_`` is
        ``"certified"``, else sampled (see :class:`ConvexRegressor`).
    n_splits_ : int
        Splits of the search (1 for the hold-out split).
    n_refits_ : int
    n_not_converged_ : int
        CV fits stopped at ``cv_max_iter``.
    n_iter_ : int
        Iterations of the kept refit.
    search_time_, refit_time_ : float
        Seconds of the search and of the refits.

    Notes
    -----
    ``save(path)`` writes the fitted search (``best_estimator_``, ``cv_results_`` and the
    attributes above; no pickle) and :func:`psdsos.load` reads it back: the same
    predictions, gradients, Hessians, ``certificate_`` and ``convexity_deficit_``.
    ``cv_results_`` keeps its numeric columns and ``params``; its ``param_<name>`` columns
    are rebuilt from ``params``.  A scikit-learn splitter as ``cv`` is saved by class and
    parameters; a custom splitter or a list of splits is not (the loaded ``cv`` is None:
    give one before refitting).

    Warns
    -----
    UncertifiedShapeWarning
        None of the refitted candidates is certified convex; the best by CV is kept.
    sklearn.exceptions.ConvergenceWarning
        CV fits stopped at ``cv_max_iter`` (one warning with the count), or the kept refit
        did.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.estimators import ConvexRegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (100, 1))
    >>> y = X[:, 0] ** 2 + 0.05 * rng.standard_normal(100)
    >>> est = ConvexRegressorCV(rhos=(1e-4, 1e-6), random_state=0).fit(X, y)
    >>> sorted(est.best_params_)
    ['lam2', 'n_landmarks', 'rho', 'sigma']
    >>> est.certified_
    True
    """

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigmas": PositiveGrid(),
        "rhos": PositiveGrid(),
        "lam2s": PositiveGrid(allow_none=True),
        "lam1": Interval(numbers.Real, 0.0, None),
        "n_landmarks": _Ranks(),
        "holdout": Interval(numbers.Real, 0.0, 1.0, closed="neither"),
        "fit_intercept": Bool(),
        "concave": Bool(),
        "tol": ITERATIVE_OPTIONS["tol"],
        "max_iter": ITERATIVE_OPTIONS["max_iter"],
        "cv_tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "cv_max_iter": Interval(numbers.Integral, 1, None),
        "max_refits": Interval(numbers.Integral, 1, None),
        "extend_path": Interval(numbers.Integral, 0, None),
        "n_jobs": Interval(numbers.Integral, None, None, allow_none=True),
        "random_state": ITERATIVE_OPTIONS["random_state"],
        "verbose": Bool(),
    }

    def __init__(self, *, kernel: str | Kernel = "gaussian",
                 sigmas: Sequence[float] = DEFAULT_SIGMAS,
                 rhos: Sequence[float] = DEFAULT_RHOS, lam2s: Sequence[float] | None = None,
                 lam1: float = 0.0, n_landmarks: Any = "auto", cv: Any = 3,
                 holdout: float = 0.2, fit_intercept: bool = True, concave: bool = False,
                 tol: float = 1e-6, max_iter: int = 20000, cv_tol: float = 1e-4,
                 cv_max_iter: int = 2000, max_refits: int = 3, extend_path: int = 2,
                 n_jobs: int | None = None, random_state: RandomStateLike = None,
                 verbose: bool = False) -> None:
        self.kernel = kernel
        self.sigmas = sigmas
        self.rhos = rhos
        self.lam2s = lam2s
        self.lam1 = lam1
        self.n_landmarks = n_landmarks
        self.cv = cv
        self.holdout = holdout
        self.fit_intercept = fit_intercept
        self.concave = concave
        self.tol = tol
        self.max_iter = max_iter
        self.cv_tol = cv_tol
        self.cv_max_iter = cv_max_iter
        self.max_refits = max_refits
        self.extend_path = extend_path
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _seed(self) -> int:
        return int(cv_seed(self.random_state))

    def _int_splitter(self, n: int) -> Any:
        """The splitter of an int cv = k: KFold(k) shuffled, or beyond HOLDOUT_MIN_SAMPLES
        one hold-out split."""
        def splitter(k: int) -> Any:
            if n > HOLDOUT_MIN_SAMPLES:
                return ShuffleSplit(1, test_size=float(self.holdout), random_state=self._seed())
            return KFold(k, shuffle=True, random_state=self._seed())
        return splitter

    def _base(self, tol: float, max_iter: int, cls: type = ConvexRegressor) -> Any:
        return cls(self.kernel, lam1=self.lam1, fit_intercept=self.fit_intercept,
                   concave=self.concave, tol=tol, max_iter=max_iter,
                   random_state=self._seed())

    def _regularization(self) -> list[tuple[float, float]]:
        rhos = [float(r) for r in self.rhos]
        if self.lam2s is None:
            return [(r, r) for r in rhos]
        return [(r, float(v)) for r in rhos for v in self.lam2s]

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            groups: ArrayLike | None = None) -> ConvexRegressorCV:
        """Search the grid by CV, then refit the best candidates with their certificates.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Passed to every fit (the training rows' weights); the scores are unweighted,
            as GridSearchCV's.  Rows of weight 0 are dropped (with their ``groups``
            entries).
        groups : array-like of shape (n_samples,), optional
            Group labels of the rows, passed to the splitter's ``split(X, y, groups)`` as
            scikit-learn's ``GridSearchCV`` passes them: group splitters (``GroupKFold``,
            ``LeaveOneGroupOut``, ...) hold out whole groups (and raise without them); an
            int ``cv``, the other splitters and (train, test) pairs ignore them.

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
        Xv, yv, w = check_fit_input(self, X, y, sample_weight)
        groups = check_groups(groups, Xv.shape[0], sample_weight)
        warn_feature_scales(self, self.kernel, Xv)  # once here, not from every inner fit
        n, p = Xv.shape
        folds = cv_splits(self.cv, Xv, yv, groups, int_splitter=self._int_splitter(n))
        n_train = min(len(tr) for tr, _ in folds)
        ranks = (auto_ranks(n_train, p) if isinstance(self.n_landmarks, str)
                 else [None] if self.n_landmarks is None
                 else [None if r is None else int(r) for r in self.n_landmarks])
        scale = scale_bandwidth(Xv, w)
        factor = {float(c) * scale: float(c) for c in self.sigmas}
        sigmas = list(factor)
        regs = self._regularization()
        base = self._base(self.cv_tol, self.cv_max_iter, _CVConvexRegressor)
        jobs = [(a, b, f) for a in range(len(sigmas)) for b in range(len(ranks))
                for f in range(len(folds))]
        with warnings.catch_warnings():
            # the CV fits' own non-convexity is counted in n_not_convex (and certified at
            # the refit); the features' scales were checked above
            warnings.simplefilter("ignore", NonConvexFitWarning)
            warnings.simplefilter("ignore", FeatureScaleWarning)
            results = Parallel(n_jobs=self.n_jobs, verbose=10 if self.verbose else 0)(
                delayed(_fit_path)(base, sigmas[a], ranks[b], regs, Xv, yv, w, folds[f][0],
                                   folds[f][1]) for a, b, f in jobs)
        nr, nf = len(regs), len(folds)
        cand = [(a, b, c) for a in range(len(sigmas)) for b in range(len(ranks))
                for c in range(nr)]
        index = {k: i for i, k in enumerate(cand)}
        table = np.empty((len(cand), nf, 6))
        duals = {}
        for (a, b, f), (res, G) in zip(jobs, results, strict=True):
            duals[(a, b, f)] = G
            for c, row in enumerate(res):
                table[index[(a, b, c)], f] = row
        params = [{"lam2": regs[c][1], "n_landmarks": ranks[b], "rho": regs[c][0],
                   "sigma": sigmas[a]} for a, b, c in cand]
        params, table = self._extend(params, table, duals, base, sigmas, ranks, Xv, yv, w,
                                     folds)
        self.cv_results_ = self._cv_results(params, table)
        self.n_splits_ = nf
        self.n_not_converged_ = int(self.cv_results_["n_not_converged"].sum())
        mean = self.cv_results_["mean_test_score"]
        if not np.any(np.isfinite(mean)):
            raise ValueError("every candidate of ConvexRegressorCV has a non-finite CV score")
        if self.n_not_converged_:
            warnings.warn(f"{self.n_not_converged_} of the {len(cand) * nf} CV fits stopped "
                          f"at cv_max_iter={self.cv_max_iter} before cv_tol={self.cv_tol} "
                          "(their scores are those of less converged fits); raise "
                          "cv_max_iter or cv_tol", ConvergenceWarning, stacklevel=2)
        self.search_time_ = time.perf_counter() - t_start
        finite = np.where(np.isfinite(mean), mean, -np.inf)
        order = [int(i) for i in np.argsort(-finite, kind="stable")]
        self._refit(order, Xv, yv, w)
        self.best_sigma_factor_ = factor[self.best_params_["sigma"]]
        self.best_score_ = float(mean[self.best_index_])
        self.n_features_in_ = p
        if self.verbose:
            print(f"ConvexRegressorCV: {len(cand)} candidates x {nf} splits in "
                  f"{self.search_time_:.1f} s, {self.n_refits_} refits in "
                  f"{self.refit_time_:.1f} s; kept {self.best_params_}")
        return self

    def _extend(self, params: list[dict], table: np.ndarray, duals: dict, base: Any,
                sigmas: list[float], ranks: list, X: np.ndarray, y: np.ndarray,
                w: np.ndarray | None, folds: list) -> tuple[list[dict], np.ndarray]:
        """While the best candidate is the last (smallest rho) of its path, continue that
        path one decade down (warm started from each split's last dual point), at most
        ``extend_path`` times; stop at the first new candidate that does not improve the
        best CV score, and before one of whose CV fits stopped at ``cv_max_iter`` (not
        appended: its score would be that of a less converged fit) or after a best
        candidate whose fits took more than half of ``cv_max_iter`` on average.  Returns the
        candidates and scores with the new ones appended."""
        for _ in range(int(self.extend_path)):
            mean = table[:, :, 0].mean(axis=1)
            if not np.any(np.isfinite(mean)):
                break
            i = int(np.argmax(np.where(np.isfinite(mean), mean, -np.inf)))
            best = params[i]
            path = [q["rho"] for q in params
                    if q["sigma"] == best["sigma"] and q["n_landmarks"] == best["n_landmarks"]]
            if best["rho"] > min(path):
                break  # inside its path: no reason to go further
            if table[i, :, 3].mean() > self.cv_max_iter / 2:
                break  # the next decade, slower still, would likely stop at the cap
            a, b = sigmas.index(best["sigma"]), ranks.index(best["n_landmarks"])
            if any(duals.get((a, b, f)) is None for f in range(len(folds))):
                break  # no dual point to continue from (a primal fit)
            down = lambda v: float(f"{v / 10.0:.12g}")  # noqa: E731  (1e-06, not 1.0...02e-06)
            new = (down(best["rho"]), down(best["lam2"]) if self.lam2s is None else best["lam2"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NonConvexFitWarning)
                warnings.simplefilter("ignore", FeatureScaleWarning)
                results = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_path)(base, sigmas[a], ranks[b], [new], X, y, w,
                                       folds[f][0], folds[f][1], init=duals[(a, b, f)])
                    for f in range(len(folds)))
            rows = np.array([res[0] for res, _ in results])
            if not rows[:, 4].all():
                break  # a fit stopped at cv_max_iter: its score is not the candidate's
            for f, (_, G) in enumerate(results):
                duals[(a, b, f)] = G
            params = [*params, {"lam2": new[1], "n_landmarks": best["n_landmarks"],
                                "rho": new[0], "sigma": best["sigma"]}]
            table = np.concatenate([table, rows[None]], axis=0)
            if not rows[:, 0].mean() > mean[i]:
                break
        return params, table

    @staticmethod
    def _cv_results(params: list[dict], table: np.ndarray) -> dict[str, Any]:
        nc, nf = table.shape[:2]
        res: dict[str, Any] = {}
        for name in ("lam2", "n_landmarks", "rho", "sigma"):
            col = np.ma.MaskedArray(np.empty(nc, dtype=object), mask=False)
            for i, p in enumerate(params):
                col[i] = p[name]
            res[f"param_{name}"] = col
        res["params"] = params
        scores = table[:, :, 0]
        for f in range(nf):
            res[f"split{f}_test_score"] = scores[:, f].copy()
        mean = scores.mean(axis=1)
        res["mean_test_score"] = mean
        res["std_test_score"] = scores.std(axis=1)
        finite = np.where(np.isfinite(mean), mean, -np.inf)
        res["rank_test_score"] = rankdata(-finite, method="min").astype(np.int32)
        res["mean_fit_time"] = table[:, :, 1].mean(axis=1)
        res["std_fit_time"] = table[:, :, 1].std(axis=1)
        res["mean_score_time"] = table[:, :, 2].mean(axis=1)
        res["std_score_time"] = table[:, :, 2].std(axis=1)
        res["mean_n_iter"] = table[:, :, 3].mean(axis=1)
        res["n_not_converged"] = np.sum(table[:, :, 4] == 0, axis=1)
        res["n_not_convex"] = np.sum(table[:, :, 5] > RELATIVE_DEFICIT_TOL, axis=1)
        return res

    def _refit(self, order: list[int], X: np.ndarray, y: np.ndarray,
               w: np.ndarray | None) -> None:
        """Refit in CV order until one is certified convex (at most max_refits)."""
        refits = []
        t0 = time.perf_counter()
        base = self._base(self.tol, self.max_iter)
        for i in order[: self.max_refits]:
            est = clone(base).set_params(**self.cv_results_["params"][i])
            with warnings.catch_warnings():
                # reported below, for the kept fit only; the scales by fit
                warnings.simplefilter("ignore", NonConvexFitWarning)
                warnings.simplefilter("ignore", FeatureScaleWarning)
                est.fit(X, y, sample_weight=w)
            ok = is_certified_convex(est)
            refits.append((i, est, ok))
            if ok:
                break
        self.refit_time_ = time.perf_counter() - t0
        i, est, ok = next((r for r in refits if r[2]), refits[0])
        self.best_estimator_ = est
        self.best_index_ = i
        self.best_params_ = dict(self.cv_results_["params"][i])
        self.certified_ = bool(ok)
        self.certificate_ = est.certificate_
        self.convexity_deficit_ = est.convexity_deficit_
        self.n_refits_ = len(refits)
        self.n_iter_ = est.n_iter_
        if not ok:
            shape = "concave" if self.concave else "convex"
            kind = "concavity" if self.concave else "convexity"
            cert = next(iter(est.certificate_.values()))
            proved = cert.status == "certified"
            why = (f"its proved bound is {cert.relative:.3g} of the curvature scale" if proved
                   else "its bound is only 'sampled' (not proved)")
            warnings.warn(
                f"none of the {len(refits)} best candidates by CV was certified {shape}; "
                f"kept the best by CV ({self.best_params_}), whose certificate is not a "
                f"proof of {kind}: {why}; its relative deficit is "
                f"{est.convexity_deficit_:.3g} ({'proved' if proved else 'sampled'}; see "
                "certificate_ and convexity_deficit_)",
                UncertifiedShapeWarning, stacklevel=3)

    # ---- persistence (psdsos.load): the file of _SavedSearch ---------------------------------
    _best_class = ConvexRegressor
    _fitted_scalars = {
        "best_index_": "int", "best_score_": "real", "best_sigma_factor_": "real",
        "certified_": "bool", "n_refits_": "posint", "n_iter_": "int", "n_splits_": "posint",
        "n_not_converged_": "int", "search_time_": "real", "refit_time_": "real",
        "n_features_in_": "posint",
    }

    def _restore_from_best(self, best: Any) -> None:
        self.certificate_ = best.certificate_
        self.convexity_deficit_ = best.convexity_deficit_

    def predict(self, X: ArrayLike) -> FloatArray:
        """The kept refit's :meth:`ConvexRegressor.predict`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.predict(X)

    def _check_X(self, X: ArrayLike) -> np.ndarray:
        """X checked against this fit (its feature names included: the refit saw arrays)."""
        return fitted_input(self, X, "best_estimator_")

    def gradient(self, X: ArrayLike) -> FloatArray:
        """The kept refit's :meth:`ConvexRegressor.gradient`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.gradient(X)

    def hessian(self, X: ArrayLike) -> FloatArray:
        """The kept refit's :meth:`ConvexRegressor.hessian`."""
        X = self._check_X(X)  # first: NotFittedError before best_estimator_
        return self.best_estimator_.hessian(X)
