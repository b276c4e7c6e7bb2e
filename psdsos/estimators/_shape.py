r"""Kernel regression under shape constraints guaranteed on the data's box.

:class:`ShapeConstrainedRegressor`: increasing / decreasing in chosen features, convex /
concave in chosen subsets, bounded; one kernel SoS block per constraint
(:mod:`psdsos.problems._shape`), an exchange method
(:mod:`psdsos.estimators._shape_fit`) and certificates with the certified-shape predictor
(:mod:`psdsos.certify`).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin

from psdsos._params import (
    Bandwidth,
    Bool,
    Interval,
    Options,
    resolve_kernel,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import SavedArray, SavedEstimator, SavedScalar, register_loadable
from psdsos._validation import (
    FloatArray,
    PathLike,
    RandomStateLike,
    check_random_state,
)
from psdsos.certify import _exchange as exchange
from psdsos.certify import _placement as placement
from psdsos.certify._correction import CorrectedFunction, Correction, build_correction
from psdsos.certify._placement import ConstraintPointsOption, first_unique_rows
from psdsos.certify._records import ShapeCertificate
from psdsos.estimators import _shape_fit as sf
from psdsos.estimators._common import ITERATIVE_OPTIONS, fitted_input, standardized_loss
from psdsos.estimators._convex_fit import (
    check_fit_input,
    check_kernel_and_regularization,
    set_scaling,
)
from psdsos.estimators._shape_fit import SHAPE_OPTIONS
from psdsos.kernels import Kernel, get_kernel
from psdsos.solvers import PRIMAL_SOLVERS
from psdsos.sos._constraint import KernelExpansion, unit_kernel

__all__ = ["ShapeConstrainedRegressor", "ShapeCertificate", "UncertifiedShapeWarning"]

#: Cells of the branch and bound in the exchange's rounds (the final certificate has
#: ``max_cells``).
EXCHANGE_CELLS = 20_000


#: f expands on every training point up to this many samples, on greedy landmarks beyond.
AUTO_TRAIN_CENTERS = 2000


class UncertifiedShapeWarning(UserWarning):
    """A shape constraint of the fit is not proved on the box (its certificate is "sampled")."""


@register_loadable
class ShapeConstrainedRegressor(RegressorMixin, SavedEstimator, BaseEstimator):
    r"""Smooth kernel regression whose shape constraints hold on the whole box of the data.

    .. math::

        \min_{\beta, \alpha, \mathbf B_k\succeq 0}\ \frac1n\sum_i w_i (y_i - f(x_i))^2
          + \rho\,\alpha^T\mathbf K\alpha
          + \sum_k \lambda_1\operatorname{Tr}\mathbf B_k + \frac{\lambda_2}{2}\|\mathbf B_k\|_F^2
        \quad\text{s.t.}\quad g_k(z_{kj}) = \Psi_{kj}^T\mathbf B_k\Psi_{kj},

    with :math:`f(x) = \beta_0 + \beta^T x + \sum_i \alpha_i k(x, x_i)` and one constraint
    function g_k per shape: :math:`\partial_p f` (``increasing``), :math:`-\partial_p f`
    (``decreasing``), :math:`\nabla^2_S f` (``convex``: the Hessian block of the features S,
    joint convexity in them), :math:`-\nabla^2_S f` (``concave``), :math:`f - \text{lower}`,
    :math:`\text{upper} - f`.  Each is a kernel SoS block (PSD paper, section 4, eq. 13-14;
    d = 1 is the non-negative model of Marteau-Ferey et al. 2020), all solved in one problem
    (the multi-block negative-part dual, or the CVXPY primal).  With ``convex=True`` alone
    this is :class:`ConvexRegressor`'s eq. (28).

    **Guaranteed, not estimated** (``certify=True``).  After a fit, an exchange method
    searches the box of the training data for the most violated point of each constraint
    (scrambled Sobol design, then local minimization), adds the violators to that
    constraint's points and refits from the previous dual point, until no violation above
    the tolerance is found (at most ``max_exchange`` rounds).  Then a branch and bound over
    cells of the box proves a lower bound of each constraint function
    (:attr:`certificate_`): the value at a cell's centre minus the largest change the RKHS
    norm of f allows within the cell (Taylor expansion with a remainder bounded by
    Cauchy-Schwarz in the RKHS, as in Aubin-Frankowski & Szabó 2020).  Where the bound is
    below 0 by e, :meth:`predict` returns the certified-shape predictor, the fit plus the
    smallest correction the bound proves sufficient (e.g. + e x_p for monotonicity,
    + e/2 ||x_S - a||^2 for convexity, a shift for a bound), so the shape holds on the
    whole box; ``predict(X, raw=True)`` returns the fit itself.  Outside the box nothing is
    claimed; there the predictor extends linearly from the box (``extrapolation``).

    **Other losses.**  ``loss`` replaces the data term by
    :math:`\sum_i c_i\,\ell(f(x_i) - y_i)`, :math:`c_i = 2 w_i / \sum_j w_j` (2/n without
    weights), with :math:`\ell` from :mod:`psdsos.losses`, as in :class:`ConvexRegressor`:
    ``"squared"`` :math:`r^2/2` (the problem above), ``"huber"`` (:math:`r^2/2` for
    :math:`|r|\le\delta`, :math:`\delta(|r| - \delta/2)` beyond: robust to outliers),
    ``"quantile"`` (pinball :math:`\max(-\tau r, (1-\tau) r)`: a share tau of the data
    below the fit) and ``"expectile"`` (:math:`(1-\tau) r^2` where the fit is above the
    data, :math:`\tau r^2` below).  ``delta`` is in the units of y.  The dual then has one
    variable per sample (:mod:`psdsos.problems._shape_loss`, see
    docs/shape-constraints-math.md) and is solved by accelerated proximal gradient (the
    Newton steps of the squared loss's solver do not apply); the exchange, the
    certificates and the certified-shape predictor act on f and are unchanged.

    Parameters
    ----------
    increasing, decreasing : None, True or list of int
        Features in which f is non-decreasing (non-increasing); True: all.
    convex, concave : None, True or list of int
        A feature subset S in which f is jointly convex (concave): the Hessian block of S is
        PSD (NSD); other features are free.  True: all features.
    lower, upper : float, optional
        Bounds on f (user's units).
    kernel : {"gaussian", "matern32", "matern52"} or Kernel, default="gaussian"
        Twice differentiable.  Certificates are proved for the Gaussian kernel; with other
        kernels they are "sampled".  ``"rbf"`` (scikit-learn's name) is the Gaussian kernel,
        with :math:`\sigma = 1/\sqrt{2\gamma}` for scikit-learn's :math:`\gamma`.
    sigma : "scale" or float, default="scale"
        Bandwidth in the units of x (as in :class:`ConvexRegressor`).
    rho, lam1, lam2 : float, default=1e-4, 0.0, 1e-3
        As in :class:`ConvexRegressor` (standardized units).
    solver : {"dual", "primal"}, default="dual"
    primal_solver : {"SCS", "CLARABEL"}, default="CLARABEL"
    constraint_points : None, "train", int or array (m, n_features)
        Initial points of every constraint: ``None``: 16 * 2**n_features (at most 256)
        scrambled Sobol points of the data's box and its corners (one feature, on a box
        narrower than 32 x 0.3 bandwidths: equispaced points 0.3 bandwidths apart, at
        least 4, since denser points make the SoS features ill-conditioned and the dual
        slow); ``"train"``: the distinct
        training points; an int: that many Sobol points and the corners; an array: those
        points.  The exchange adds more.
    centers : {"auto", "train", "landmarks"}, default="auto"
        Where f expands: the training points, or ``n_landmarks`` greedy landmarks (pivoted
        Cholesky) of the data; "auto": the training points up to 2,000 samples.
    n_landmarks : int, optional
        Number of landmarks (centers="landmarks", or "auto" beyond 2,000 samples; default
        200 there).
    fit_intercept : bool, default=True
    certify : bool, default=True
        Prove the certificates (branch and bound) and use them in the exchange; otherwise
        the exchange searches the design only, ``certificate_`` reports the sampled
        minima (status "sampled") and ``predict`` is the raw fit (a correction is made only
        where a certificate proves how much suffices).
    certify_tol : float, default=1e-2
        Relative tolerance of the exchange and of the covering: the branch and bound stops
        once it proves g >= s - certify_tol * scale, s the smallest value found; a margin
        0 < s < certify_tol * scale is first aimed at g >= 0 (no correction) with a sixteenth
        of ``max_cells``; for a margin s > 0, if an eighth of ``max_cells`` does not reach
        s - certify_tol * scale, the rest of the budget goes to
        g >= max(0, s - certify_tol * scale) - certify_tol * scale.
    max_exchange : int, default=10
        Rounds of the exchange method (0: the constraints at the initial points only; the
        bounds ``lower`` and ``upper`` start without points and are imposed where the fit
        violates them, so with 0 rounds they are not imposed).
    max_cells : int, default=400000
        Budget of cells per constraint for the branch and bound; beyond it the certificate
        is "sampled".
    extrapolation : {"linear", "kernel"}, default="linear"
        The certified-shape predictor outside the box of the training data: "linear", its
        first-order Taylor expansion at the nearest point u* of the box,
        h(u*) + grad h(u*)^T (u - u*) (continuous with its gradient across the box's
        faces; with one feature it keeps the shapes on the whole line: a monotone,
        convex or concave h stays so, extended by the end slopes); "kernel": the kernel
        expansion itself, which falls back towards its affine part a few bandwidths
        away.  Inside the box both are the same function; ``raw=True`` is always the
        kernel fit.  Nothing outside the box is certified.
    tol, max_iter, random_state, verbose
        As in :class:`ConvexRegressor`.
    loss : {"squared", "huber", "quantile", "expectile"}, default="squared"
        The data term (see "Other losses"); also the name of a loss registered with
        :func:`psdsos.losses.register_loss` that declares ``convex_regression`` and whose
        required parameters are among ``delta`` and ``quantile``.
    delta : float > 0, optional
        Huber threshold in the units of y (required for, and only for, loss="huber").
    quantile : float in (0, 1), optional
        Level tau of loss="quantile" or "expectile" (required for those only).
    warm_start : bool, default=False
        With the dual solver, a fit that follows a dual fit with the same number of
        features and the same constraints (the same shapes in the same features, the same
        ``lower`` and ``upper``) starts where that fit ended: each constraint's initial
        points are the previous fit's final ``constraint_points_`` (``constraint_points``
        is then not used) and the dual starts from its final point ``dual_coef_``; the
        exchange then runs as usual.  Refitting the same data this way costs a few
        iterations; along a path of ``rho`` / ``lam2`` / ``sigma`` each fit starts near the
        next one's optimum.  Anything else (other features or constraints, the primal
        solver, no previous fit) starts cold, silently: the dual at zero on the initial
        points.  The rounds of the exchange always start from the previous round's dual
        point.

    Attributes
    ----------
    certificate_ : dict of str -> ShapeCertificate
        Per constraint ("increasing[0]", "concave[0,1]", "lower", ...): ``bound``,
        ``status``, ``relative``, ``sampled_min``, ``correction``.
    correction_ : float
        The largest correction of the certified-shape predictor relative to the constraint's
        scale (0: predict is the raw fit).
    alpha_, intercept_, coef_, X_fit_, x_box_, kernel_, x_offset_, x_scale_, y_offset_, y_scale_
        The fit (standardized units mapped back as in :class:`ConvexRegressor`).
    constraint_points_ : dict of str -> ndarray
        The final points of each constraint (user's units).
    objective_, n_iter_, dual_gap_, constraint_residual_, n_exchange_
    dual_coef_ : list of ndarray (m_k, d_k, d_k)
        The dual solver's final point, one array per constraint (in the order of
        ``certificate_``; d_k = 1 but for a Hessian block), at the points of
        ``constraint_points_``, in the standardized units; the start of a warm refit.  Saved
        with the model (a file written before it existed loads without it and warm-starts
        cold).  Not set by the primal solver.

    Warns
    -----
    UncertifiedShapeWarning
        A constraint is not proved on the box (status "sampled").
    sklearn.exceptions.ConvergenceWarning
        The dual stopped at max_iter.
    """

    _parameter_constraints = {
        **SHAPE_OPTIONS,
        "sigma": Bandwidth(),
        "rho": Interval(numbers.Real, 0.0, None),
        "lam1": Interval(numbers.Real, 0.0, None),
        "lam2": Interval(numbers.Real, 0.0, None),
        "solver": Options(["dual", "primal"]),
        "primal_solver": Options(PRIMAL_SOLVERS, ignore_case=True),
        "constraint_points": ConstraintPointsOption(),
        "centers": Options(["auto", "train", "landmarks"]),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "certify": Bool(),
        **ITERATIVE_OPTIONS,
    }

    def __init__(self, *, increasing: Any = None, decreasing: Any = None, convex: Any = None,
                 concave: Any = None, lower: float | None = None, upper: float | None = None,
                 kernel: str | Kernel = "gaussian", sigma: float | str = "scale",
                 rho: float = 1e-4, lam1: float = 0.0, lam2: float = 1e-3,
                 solver: str = "dual", primal_solver: str = "CLARABEL",
                 constraint_points: None | int | ArrayLike = None, centers: str = "auto",
                 n_landmarks: int | None = None, fit_intercept: bool = True,
                 certify: bool = True, certify_tol: float = 1e-2, max_exchange: int = 10,
                 max_cells: int = 400_000, extrapolation: str = "linear", tol: float = 1e-6,
                 max_iter: int = 20000, warm_start: bool = False,
                 random_state: RandomStateLike = None, verbose: bool | int = False,
                 loss: str = "squared", delta: float | None = None,
                 quantile: float | None = None) -> None:
        self.increasing = increasing
        self.decreasing = decreasing
        self.convex = convex
        self.concave = concave
        self.lower = lower
        self.upper = upper
        self.kernel = kernel
        self.sigma = sigma
        self.rho = rho
        self.lam1 = lam1
        self.lam2 = lam2
        self.solver = solver
        self.primal_solver = primal_solver
        self.constraint_points = constraint_points
        self.centers = centers
        self.n_landmarks = n_landmarks
        self.fit_intercept = fit_intercept
        self.certify = certify
        self.certify_tol = certify_tol
        self.max_exchange = max_exchange
        self.max_cells = max_cells
        self.extrapolation = extrapolation
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.loss = loss
        self.delta = delta
        self.quantile = quantile

    def _sign(self) -> float:
        return 1.0

    # ---- the fit --------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> ShapeConstrainedRegressor:
        """Fit f to (X, y) under the shape constraints, then certify them on the box.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (scikit-learn semantics, as in :class:`ConvexRegressor`).
        """
        validate_params(self)
        Xv, yv, w = check_fit_input(self, X, y, sample_weight)
        kernel = resolve_kernel(self.kernel, self.sigma, Xv, w)
        warn_feature_scales(self, kernel, Xv)
        check_kernel_and_regularization(self, kernel)
        set_scaling(self, kernel, Xv, yv, w)
        loss = standardized_loss(self, "ShapeConstrainedRegressor")
        self.x_box_ = np.vstack([Xv.min(axis=0), Xv.max(axis=0)])
        p = Xv.shape[1]
        constraints = sf.parse_constraints(self, p)
        kernel_u = unit_kernel(kernel)
        U = (Xv - self.x_offset_) / self.x_scale_
        t = (yv - self.y_offset_) / self.y_scale_
        C = self._centers(U, kernel_u)
        data = sf.shape_data(self, kernel_u, U, t, w, C, loss)
        # the Sobol points are scrambled with random_state (seed 0 when None: a fit is
        # deterministic, and weighted rows equal duplicated ones)
        rng = check_random_state(0 if self.random_state is None else self.random_state)
        self._constraints = constraints
        self.kernel_ = kernel
        warm = sf.warm_start_point(self, constraints, p)
        self.__dict__.pop("dual_coef_", None)  # no stale dual point from the previous fit
        if not constraints:
            wv, obj = sf.unconstrained_fit(self, data)
            self._finish(data, sf.fit_of(data, wv), [], None, obj, 1, 0.0, 0.0, 0)
            return self
        # bounds start without points when the exchange runs: imposed where the fit
        # violates them (a bound far from the data would otherwise cost its slack)
        data.points = [np.zeros((0, p)) if con.kind == "value" and self.max_exchange > 0
                       else placement.initial_points(self.constraint_points, data.box, rng, U,
                                                     self.x_offset_, self.x_scale_)
                       for con in constraints]
        # drawn after the initial points, warm or cold
        design = placement.default_points(
            data.box, sf.DESIGN_POINTS * p, int(check_random_state(rng).integers(2**31 - 1)))
        init = None
        if warm is not None:  # the previous fit's final points and dual point
            data.points, init = warm
        n_exchange = 0
        total_iter = 0
        while True:
            sol = sf.solve(self, data, constraints, init)
            total_iter += sol.n_iter
            fit = sf.fit_of(data, sol.w)
            checks: dict[int, tuple | None] = {}
            if n_exchange >= self.max_exchange:
                break
            added = False
            for k, con in enumerate(constraints):
                new, checks[k] = exchange.search_step(
                    fit, con, design, data.box, certify=self.certify,
                    certify_tol=self.certify_tol, max_cells=self.max_cells,
                    exchange_cells=EXCHANGE_CELLS)
                if new.shape[0]:
                    Z = exchange.add_points(data.points[k], new, data.box)
                    added = added or Z.shape[0] > data.points[k].shape[0]
                    data.points[k] = Z
            if not added:
                break
            n_exchange += 1
            init = exchange.pad_dual(sol.G, data.points, constraints)
        self._finish(data, fit, sol.B, design, sol.objective, total_iter, sol.gap,
                     sol.residual, n_exchange, checks)
        if sol.G is not None:  # the dual solver's final point (the primal has none)
            self.dual_coef_ = [np.asarray(G, dtype=np.float64) for G in sol.G]
            self._warm_key = sf.constraint_key(self, constraints, p)
        return self

    def _centers(self, U, kernel_u):
        n = U.shape[0]
        landmarks = self.centers == "landmarks" or (
            self.centers == "auto" and n > AUTO_TRAIN_CENTERS)
        if not landmarks:
            # the distinct rows: duplicated rows (integer sample weights) change nothing
            return first_unique_rows(U)
        from psdsos.features import NystromFeatures

        r = min(n, self.n_landmarks or 200)
        feats = NystromFeatures(kernel_u, n_landmarks=r, random_state=self.random_state,
                                landmarks="greedy").fit(U)
        return np.asarray(feats.anchors_, dtype=np.float64)

    def _finish(self, data, fit, B, design, objective, n_iter, gap, residual, n_exchange,
                checks=None):
        """Fitted attributes in the user's units, certificates and the correction."""
        sy, sx = self.y_scale_, self.x_scale_
        self._fit_u = fit
        self.X_fit_ = data.C * sx + self.x_offset_
        self.alpha_ = sy * fit.alpha
        if fit.beta.size:
            self.coef_ = (sy / sx) * fit.beta[1:]
            self.intercept_ = float(self.y_offset_ + sy * fit.beta[0] - self.coef_ @ self.x_offset_)
        else:
            self.coef_ = np.zeros(data.C.shape[1])
            self.intercept_ = float(self.y_offset_)
        self.objective_, self.n_iter_ = float(objective), int(n_iter)
        self.dual_gap_, self.constraint_residual_ = float(gap), float(residual)
        self.n_exchange_ = int(n_exchange)
        self.constraint_points_ = {con.name: Z * sx + self.x_offset_
                                   for con, Z in zip(self._constraints, data.points, strict=True)}
        self.B_ = [np.asarray(b) for b in B]
        self._certify(fit, data.box, design, checks or {})
        # predictions from the user-unit attributes, as a loaded model's (the certificates
        # above are those of the solver's fit; the two differ by rounding only)
        self._fit_u = self._unit_fit(fit.kernel)

    def _unit_fit(self, kernel_u):
        """The fitted function in standardized units, rebuilt from the attributes in the
        user's units (those a saved file holds): the fitted and the loaded model predict
        from the same numbers, so their predictions are equal to the last bit."""
        sy, sx = self.y_scale_, self.x_scale_
        if self.fit_intercept:
            beta = np.concatenate([[(self.intercept_ + self.coef_ @ self.x_offset_
                                     - self.y_offset_) / sy], self.coef_ * sx / sy])
        else:
            beta = np.zeros(0)
        return KernelExpansion(kernel_u, (self.X_fit_ - self.x_offset_) / sx, self.alpha_ / sy,
                               beta)

    def _certify(self, fit, box, design, checks):
        """certificate_ and the certified-shape predictor; ``checks``: the certificates
        the exchange's last round computed on this fit (by constraint index)."""
        constraints = self._constraints
        p = box[0].shape[0]
        self.certificate_: dict[str, ShapeCertificate] = {}
        if not constraints:
            self._correction = Correction.identity(p)
            self.correction_ = 0.0
            return
        records = exchange.final_records(fit, constraints, box, design, checks,
                                         certify=self.certify, certify_tol=self.certify_tol,
                                         max_cells=self.max_cells)
        # only a proved bound says how much correction suffices: a "sampled" one gets none
        # (its minimum between the points found may be far off)
        bounds = [b if status == "certified" else max(b, 0.0) for b, status, *_ in records]
        corr = build_correction(constraints, bounds, box)
        self._correction = corr
        rel_corr = 0.0
        uncertified = []
        for con, (bound, status, smin, n_cells, scale) in zip(constraints, records,
                                                              strict=True):
            f = sf.unit_factor(con, self)
            e = max(0.0, -bound) if status == "certified" else 0.0
            rel_corr = max(rel_corr, e / scale)
            self.certificate_[con.name] = ShapeCertificate(
                bound=float(bound * f), status=status, relative=float(bound / scale),
                sampled_min=float(smin * f), correction=float(e * f), n_cells=int(n_cells))
            if status != "certified":
                uncertified.append(con.name)
        self.correction_ = float(rel_corr)
        if uncertified and self.certify:
            warnings.warn(f"the shape constraints {uncertified} are not proved on the box of "
                          "the data (their certificates are 'sampled': the smallest values "
                          "found, not bounds); raise max_cells or certify_tol",
                          UncertifiedShapeWarning, stacklevel=3)

    # ---- the fitted function ----------------------------------------------------------------
    def _check_X(self, X: ArrayLike) -> np.ndarray:
        return fitted_input(self, X, "alpha_")

    def _standardized(self, X):
        X = self._check_X(X)
        return X, (X - self.x_offset_) / self.x_scale_

    def _extended(self, U, order):
        """The certified-shape predictor (:class:`~psdsos.certify._correction.CorrectedFunction`)
        and its derivatives, extended outside the box by ``extrapolation``."""
        box = None
        if self.extrapolation == "linear":
            box = ((self.x_box_[0] - self.x_offset_) / self.x_scale_,
                   (self.x_box_[1] - self.x_offset_) / self.x_scale_)
        return CorrectedFunction(self._fit_u, self._correction, box)(U, order)

    def predict(self, X: ArrayLike, *, raw: bool = False) -> FloatArray:
        """The certified-shape predictor (the fit plus its correction, see the class
        docstring; outside the box extended by ``extrapolation``); ``raw=True``: the fit
        itself (the kernel expansion everywhere)."""
        _, U = self._standardized(X)
        h = self._fit_u.value(U) if raw else self._extended(U, 0)
        return self.y_offset_ + self.y_scale_ * h

    def gradient(self, X: ArrayLike, *, raw: bool = False) -> FloatArray:
        """Gradient of :meth:`predict` (same ``raw``), shape (m, n_features)."""
        _, U = self._standardized(X)
        g = self._fit_u.gradient(U) if raw else self._extended(U, 1)
        return (self.y_scale_ / self.x_scale_) * g

    def hessian(self, X: ArrayLike, *, raw: bool = False) -> FloatArray:
        """Hessian of :meth:`predict` (same ``raw``), shape (m, n_features, n_features)."""
        _, U = self._standardized(X)
        H = self._fit_u.hessian(U) if raw else self._extended(U, 2)
        return (self.y_scale_ / self.x_scale_**2) * H

    # ---- persistence (psdsos.load): n centres, p features ---------------------------------------
    _saved_fitted_attr = "alpha_"
    _fitted_arrays = {
        "X_fit": SavedArray(("n", "p")), "alpha": SavedArray(("n",)),
        "coef": SavedArray(("p",)), "x_offset": SavedArray(("p",)),
        "x_box": SavedArray((2, "p")),
        "correction?": SavedArray((5, "p"), attr=""),
    }
    _fitted_scalars = {
        "intercept_": "real", "objective_": "real*", "n_iter_": "int", "dual_gap_": "real*",
        "constraint_residual_": "real*", "n_exchange_": "int", "correction_": "real",
        "kernel": SavedScalar("str", ""), "sigma": SavedScalar("real", ""),
        "x_scale_": "real", "y_offset_": "real", "y_scale_": "real",
    }
    _saved_meta = {"certificate": "dict", "constraint_points": "dict"}

    def save(self, path: PathLike, *, metadata: dict | None = None) -> None:
        """Save to ``path`` (.npz + JSON metadata; never pickle), certificates included.

        ``metadata``: optional JSON-able dict stored alongside (e.g. column names).
        """
        self._save(path, metadata)

    @classmethod
    def _saved_constructor_params(cls, meta):
        # files written before the option existed predicted the kernel expansion outside
        # the box: they load with that behaviour, so their predictions do not change
        params = dict(meta["params"])
        params.setdefault("extrapolation", "kernel")
        # files written before the losses existed: the squared loss (the constructor's
        # defaults loss="squared", delta=None, quantile=None)
        return params

    def _saved_param_values(self):
        cp_ = self.constraint_points
        if cp_ is not None and not isinstance(cp_, (numbers.Integral, str)):
            return {"constraint_points": np.asarray(cp_, dtype=np.float64)}
        return {}

    def _saved_extra(self):
        arrays = {"correction": self._correction.to_arrays()}
        # the dual point of each constraint, for warm starts (optional: files written
        # before it existed load without, and a loaded model then warm-starts cold)
        for k, G in enumerate(getattr(self, "dual_coef_", None) or []):
            arrays[f"dual_coef_{k}"] = G
        return arrays, {
            "fitted": {"kernel": self.kernel_.name, "sigma": float(self.kernel_.sigma)},
            "certificate": {k: v.as_dict() for k, v in self.certificate_.items()},
            "constraint_points": {k: np.asarray(v).tolist()
                                  for k, v in self.constraint_points_.items()},
        }

    def _restore_saved(self, arrays, meta, source):
        f = meta["fitted"]
        self.kernel_ = get_kernel(f["kernel"], f["sigma"])
        box = np.asarray(self.x_box_, dtype=np.float64)
        if np.any(box[0] > box[1]):
            raise ValueError(f"array 'x_box' in {source} must hold rows min <= max")
        p = self.X_fit_.shape[1]
        self.n_features_in_ = p
        if not (self.y_scale_ > 0 and self.x_scale_ > 0):
            raise ValueError(f"{source}: x_scale_ and y_scale_ must be > 0")
        self._fit_u = self._unit_fit(unit_kernel(self.kernel_))
        self._correction = (Correction.from_arrays(np.asarray(arrays["correction"], float))
                            if "correction" in arrays else Correction.identity(p))
        try:
            self.certificate_ = {str(k): ShapeCertificate(**v)
                                 for k, v in meta["certificate"].items()}
            self.constraint_points_ = {str(k): np.asarray(v, dtype=np.float64).reshape(-1, p)
                                       for k, v in meta["constraint_points"].items()}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: malformed certificate or constraint points: "
                             f"{exc}") from None
        self._constraints = sf.parse_constraints(self, p)
        self.B_ = []
        self._restore_dual_point(arrays, source, p)

    def _restore_dual_point(self, arrays, source, p):
        """dual_coef_ from the arrays ``dual_coef_<k>`` (one per constraint), if any."""
        if not any(f"dual_coef_{k}" in arrays for k in range(len(self._constraints))):
            return
        G = []
        for k, con in enumerate(self._constraints):
            name = f"dual_coef_{k}"
            m = self.constraint_points_.get(con.name, np.zeros((0, p))).shape[0]
            A = arrays.get(name)
            if (A is None or A.dtype.kind != "f" or A.shape != (m, con.d, con.d)
                    or not np.all(np.isfinite(A))):
                got = "no such array" if A is None else f"dtype {A.dtype}, shape {A.shape}"
                raise ValueError(f"array {name!r} in {source} must be a finite float array of "
                                 f"shape ({m}, {con.d}, {con.d}) (the dual point of the "
                                 f"constraint {con.name}), got {got}")
            G.append(np.asarray(A, dtype=np.float64))
        self.dual_coef_ = G
        self._warm_key = sf.constraint_key(self, self._constraints, p)
