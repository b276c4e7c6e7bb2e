r"""Convex (or concave) regression with subsampled SoS Hessian constraints (PSD paper, sec. 5-6)."""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import qmc
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from psdsos._validation import (
    FloatArray,
    PathLike,
    RandomStateLike,
    caller_stacklevel,
    check_array_2d,
    check_random_state,
    scaled_mean_std,
    validate_data,
)
from psdsos.estimators._base import (
    KERNEL_OPTIONS,
    Bandwidth,
    Bool,
    Interval,
    Options,
    RandomState,
    Verbose,
    register_loadable,
    resolve_kernel,
    save_estimator,
    validate_params,
)
from psdsos.estimators._dask import is_dask_array
from psdsos.estimators._weights import check_sample_weight, first_unique_rows
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.features._features import _greedy_pivots
from psdsos.kernels import Kernel, get_kernel
from psdsos.losses import get_loss
from psdsos.solvers import PRIMAL_SOLVERS, solve_dual, solve_primal
from psdsos.solvers._dual_convex import solve_dual_loss
from psdsos.sos import (
    ConvexRegressionExactProblem,
    ConvexRegressionNystromProblem,
    ConvexRegressionProblem,
    exact_gradient,
    exact_hessian,
    exact_value,
)
from psdsos.sos._convex_losses import ConvexRegressionLossProblem

__all__ = ["ConvexRegressor"]


class _ConstraintPoints:
    def check(self, name, value, owner):
        if value is None:
            return
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
            return
        if isinstance(value, str) and value == "train":
            return
        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            return
        raise ValueError(
            f"{name} of {owner} must be None or 'train' (the training points), a positive int "
            f"(Sobol points in the data's bounding box) or an array (m, n_features), got {value!r}"
        )


#: Largest number of constraint points the default (``constraint_points=None``) uses with
#: exact features; with Nystrom features of rank r it uses 2 r (see ConvexRegressor).
AUTO_CONSTRAINT_POINTS = 100
#: The default stops choosing constraint points once every other training point's residual
#: kernel variance is below this fraction of k(x, x) (greedy pivoted Cholesky).
AUTO_PIVOT_RTOL = 1e-6
#: The default also offers the 2^d corners of the data's bounding box to the pivoting when
#: n >= m_auto and 2^d <= this fraction of its m_auto points (d <= 5 with exact features):
#: a fit constrained at training points only was non-convex near the box's faces and
#: corners, where training points are sparse (relative deficit ~0.5 in d = 3-5, 0 with the
#: corners; measured in benchmarks/convex_regression.py).
AUTO_CORNER_FRACTION = 0.5
#: In d = 5 the default allows up to this many points when n >= 5 per point: 100 points
#: left a relative convexity deficit of 0.21 at n = 1000 (eq. 30 data), 200 points none;
#: with fewer than 5 training points per constraint point more points made the fit slower
#: and no more convex (n = 200: 200 points, relative deficit 0.24, 12x the time), and in
#: d >= 6 200 points did not certify either (d = 6: 0.14) while costing 6x the time in
#: d = 10 (measured in benchmarks/convex_regression.py).
AUTO_CONSTRAINT_POINTS_D5 = 200
#: A fit whose certified convexity deficit (:meth:`ConvexRegressor.convexity_deficit` with
#: ``relative=True``) exceeds this fraction of its curvature scale warns
#: (:class:`NonConvexFitWarning`): beyond 1% the most negative curvature is a visible dent
#: next to the typical curvature, while below it the dent is under the resolution of a noisy
#: fit and predict_convexified removes it by moving f by eta/2 ||x||^2, a 1% change in
#: curvature.
RELATIVE_DEFICIT_TOL = 1e-2
#: Floor of the curvature scale in convexity_deficit(relative=True), as a fraction of
#: y_scale_ / x_scale_^2 (the data's own curvature unit): Hessians below it are rounding
#: errors of an (affine to solver precision) fit (the dual's default tol is 1e-6).
CURVATURE_FLOOR = 1e-6
#: Sobol points of the training data's bounding box where convexity_deficit (and the fit's
#: own certificate, convexity_deficit_) look for negative curvature.
DEFICIT_POINTS = 4096

#: centers="auto": f expands on every training point up to this many samples (the paper's
#: eq. 28; its n x n kernel matrix is then at most 32 MB), on the landmarks beyond (with
#: n_landmarks).
AUTO_TRAIN_CENTERS = 2000

#: centers="train" refuses more samples than this (n x n arrays of 3.2 GB and more).
MAX_TRAIN_CENTERS = 20000


#: Losses of ConvexRegressor (``loss=``); see "Other losses and sample weights".
CONVEX_LOSSES = ("squared", "huber", "quantile", "expectile")


class NonConvexFitWarning(UserWarning):
    """A ConvexRegressor fit whose certified convexity deficit exceeds
    :data:`RELATIVE_DEFICIT_TOL` of its curvature scale: the Hessian constraint holds at the
    constraint points but the fitted function is not convex between them."""


def auto_constraint_budget(n_samples, n_features, n_landmarks=None):
    """Largest number of constraint points the default (``constraint_points=None``) uses.

    ``2 * n_landmarks`` with Nystrom features; with exact features
    :data:`AUTO_CONSTRAINT_POINTS` (100), and in d = 5 up to
    :data:`AUTO_CONSTRAINT_POINTS_D5` (200) while n >= 5 points per constraint point.
    """
    if n_landmarks is not None:
        return 2 * int(n_landmarks)
    if n_features == 5:
        return max(AUTO_CONSTRAINT_POINTS,
                   min(AUTO_CONSTRAINT_POINTS_D5, int(n_samples) // 5))
    return AUTO_CONSTRAINT_POINTS


def sobol_points(lo, hi, n_points, random_state):
    """Scrambled Sobol points in the box [lo, hi] (seeded)."""
    rng = check_random_state(random_state)
    sampler = qmc.Sobol(d=len(lo), scramble=True, seed=rng)
    m = int(n_points)
    U = sampler.random_base2(int(np.ceil(np.log2(max(m, 2)))))[:m]
    return qmc.scale(U, lo, hi) if np.all(hi > lo) else lo + U * (hi - lo)


@register_loadable
class ConvexRegressor(RegressorMixin, BaseEstimator):
    r"""Smooth convex regression with a kernel SoS Hessian constraint (eq. 28).

    .. math::

        \min_{\alpha, c, w, \mathbf B\succeq 0}\ \frac1n\sum_i (y_i - f(x_i))^2
          + \rho\,\alpha^T\mathbf K\alpha + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad \nabla^2 f(z_j) = \Psi_j^T\mathbf B\Psi_j,\ j\in[m],

    with :math:`f(x) = c + w^T x + \sum_i \alpha_i k(x, x_i)` (the affine part is
    unpenalized and leaves the Hessian unchanged; ``fit_intercept=False`` removes it and the
    objective is exactly eq. 28).  The Hessian is PSD at the constraint points z_j by
    construction; between them, Corollary 7 bounds the convexity deficit, estimated by
    :meth:`convexity_deficit` (also relative to the curvature scale, :meth:`curvature_scale`).

    **Units.**  The problem above is solved in standardized units,
    :math:`u = (x - \bar x)/\sigma` (the kernel has bandwidth 1 in u) and
    :math:`t = (y - \bar y)/s_y` (:math:`\bar y` the mean and :math:`s_y` the standard
    deviation of y; without intercept :math:`\bar y = 0` and :math:`s_y` the root mean
    square), and mapped back exactly: :math:`f(x) = \bar y + s_y\, g(u)`.  Convexity is
    preserved by these maps, the kernel matrix does not change, and the fit is equivariant:
    fitting :math:`(a x + b, c y + d)` with bandwidth :math:`a\sigma` (automatic with
    ``sigma="scale"``) gives :math:`c f((x' - b)/a) + d`, for any :math:`a, c > 0` (and
    :math:`d = 0` without intercept), whatever the magnitudes (1e-150 or 1e200 are fine).
    This departs from the literal eq. 28 in the user's units only through the weights:
    in those units the problem solved is eq. 28 divided by :math:`s_y^2`, with
    :math:`\lambda_1 \sigma^2 s_y` and :math:`\lambda_2 \sigma^4` in place of
    :math:`\lambda_1, \lambda_2` (:math:`\rho` and the data term are unchanged), since
    Hessians in u are :math:`\sigma^2/s_y` times those in x.  So ``rho``, ``lam1`` and
    ``lam2`` mean the same thing on data of any scale, and ``objective_`` is eq. 28 in the
    standardized units (a number without units).

    **Other losses.**  ``loss`` replaces the data term by
    :math:`\sum_i c_i\,\ell(f(x_i) - y_i)`, :math:`c_i = 2/n`, with :math:`\ell` from
    :mod:`psdsos.losses`: ``"squared"`` :math:`r^2/2` (eq. 28 exactly), ``"huber"``
    (:math:`r^2/2` for :math:`|r|\le\delta`, :math:`\delta(|r| - \delta/2)` beyond; as
    delta -> inf, or once delta exceeds every residual of the least-squares fit, it *is*
    ``"squared"``, objective included), ``"quantile"`` (pinball
    :math:`\max(-\tau r, (1-\tau) r)`: a share tau of the data below the fit) and
    ``"expectile"`` (:math:`(1-\tau) r^2` where the fit is above the data,
    :math:`\tau r^2` below; tau = 1/2 is ``"squared"``).  ``delta`` is in the units of y
    (the standardized problem uses ``delta / y_scale_``); see docs/convex-regression-math.md,
    "Other losses", for the dual with the loss's variables u
    (E^T u = 0) and the solvers.

    **Sample weights.**  ``fit(X, y, sample_weight=w)``: :math:`c_i = 2 w_i / \sum_j w_j`
    (integer weights = duplicated rows; rows of weight 0 dropped; scaling all the weights
    changes nothing); the bandwidth ``sigma="scale"``, the offsets and ``y_scale_`` are the
    weighted statistics, and the default constraint points are chosen among the distinct
    rows.

    Parameters
    ----------
    kernel : {"gaussian", "matern32", "matern52"} or Kernel, default="gaussian"
        Must be twice differentiable (the exponential kernel is refused).
    sigma : "scale" or float, default="scale"
        Kernel bandwidth in the units of x; "scale": :func:`psdsos.kernels.scale_bandwidth`
        of the training inputs, sqrt(n_features * X.var() / 2) (scikit-learn's
        ``gamma="scale"``).  The value used is ``kernel_.sigma`` (= ``x_scale_``).  The kernel
        is isotropic: give features of very different spreads comparable units first
        (``psdsos convex-fit`` standardizes each feature).
    rho : float, default=1e-4
        Ridge weight on ||f||_H^2 = alpha^T K alpha (> 0 for the dual solver).
    lam1, lam2 : float, default=0.0, 1e-3
    solver : {"dual", "primal"}, default="dual"
    primal_solver : {"SCS", "CLARABEL"}, default="SCS"
    representation : {"approx", "exact"}, default="approx"
        "approx": f = sum_i alpha_i k(., x_i), Hessians from the kernel's second
        derivatives (eq. 23, 28).  "exact": f also expands on the second-derivative
        representers, f = sum_i alpha_i k(., x_i) + sum_j sum_pq gamma_j[p, q]
        d_pq k(., z_j) (eq. 21, 37, Proposition 17); needs a four times differentiable
        kernel ("gaussian", "matern52"), fourth-order kernel derivatives and m d (d + 1) / 2
        extra coefficients (see :class:`psdsos.sos.ConvexRegressionExactProblem`).
    constraint_points : None, "train", int or array of shape (m, n_features)
        Where the Hessian constraint is imposed: ``"train"``: the training points (eq. 19,
        28); an int: that many scrambled Sobol points in the data's bounding box (seeded);
        or given points.  ``None`` (default): points chosen by greedy pivoted Cholesky of
        the kernel (spread out, kernel matrix well conditioned) among the training points
        and, when n >= m_auto and 2^d <= m_auto / 2 (d <= 5 with exact features), the 2^d
        corners of the data's bounding box (where the Hessian is otherwise least
        controlled), at most m_auto of them (100 with exact features, in d = 5 up to 200
        while n >= 5 m_auto, 2 * n_landmarks with Nystrom features), stopping once every
        other candidate's residual kernel variance is below 1e-6 k(x, x); all the training
        points when none is that redundant and no corner is offered.  With more, or nearly
        dependent, points the constrained problem is close to having no strictly feasible
        point and the dual crawls or diverges (measured: docs/benchmarks.md,
        "Constraint points"); ``"train"`` keeps the paper's choice whatever n.
    n_landmarks : int or None
        Nystrom rank of the SoS features Psi (the paper uses 25 when n > 25); the
        landmarks are drawn among the constraint points.  With the default constraint
        points, a rank >= their number means exact features on them.
    centers : {"auto", "train", "landmarks"}, default="auto"
        Where f expands: ``"train"``: every training point (eq. 28 as written; n x n
        kernel matrices, refused above 20,000 samples); ``"landmarks"``: the Nystrom
        model, f in the span of k(., c) over landmarks c: the constraint points (with the
        default ones, the 2 n_landmarks greedy pivots of the data, i.e. the landmarks of a
        pivoted-Cholesky Nystrom approximation of k, plus the box corners), or with
        constraint_points="train" the n_landmarks landmarks of the features.  The data enter
        through one chunked pass (:class:`psdsos.sos.ConvexRegressionNystromProblem`): no
        n x n array, O(n r) memory, an iteration independent of n.  ``"auto"``:
        ``"train"`` up to 2,000 samples or without n_landmarks, ``"landmarks"`` beyond.
        ``X_fit_`` and ``alpha_`` hold the expansion points and their weights either way.
    fit_intercept : bool, default=True
    concave : bool, default=False
        Fit a concave function (the negation of the convex fit to -y).
    tol, max_iter, warm_start, random_state, verbose
        As in :class:`PSDRegressor`; the dual stops when both the relative duality gap and
        the relative Hessian-constraint residual are <= tol.
    loss : {"squared", "huber", "quantile", "expectile"}, default="squared"
        The data term (see "Other losses"); other than "squared": representation="approx"
        only; ``warm_start`` is ignored (the dual starts from reweighted least squares, at
        most 50 rounds and ``max_iter`` iterations in all, then takes at most ``max_iter``
        proximal iterations; ``n_iter_`` counts both).
    delta : float > 0, optional
        Huber threshold in the units of y (required for, and only for, loss="huber").
    quantile : float in (0, 1), optional
        Level tau of loss="quantile" or "expectile" (required for those only).

    Attributes
    ----------
    alpha_ : ndarray (n,)
    gamma_ : ndarray (m, n_features, n_features)
        Only with representation="exact": the symmetric coefficients of the
        second-derivative representers at ``constraint_points_``.
    intercept_ : float
    coef_ : ndarray (n_features,)
    X_fit_ : ndarray (n, n_features) or (r, n_features)
        The expansion points: the training points, or the landmarks (``centers``).
    x_box_ : ndarray (2, n_features)
        The training data's bounding box (rows min and max), where
        :meth:`convexity_deficit` draws its points.
    B_ : ndarray (r d, r d)
        In the user's units: ``Hess f(z_j) = Psi_j^T B_ Psi_j`` (``y_scale_ / x_scale_**2``
        times the standardized problem's B).
    constraint_points_ : ndarray (m, n_features)
    kernel_ : Kernel
        The kernel with the bandwidth used (saved with the model).
    x_offset_ : ndarray (n_features,)
        The standardized units (see "Units"): ``u = (x - x_offset_) / x_scale_``.
    x_scale_ : float
        ``kernel_.sigma``.
    y_offset_ : float
    y_scale_ : float
        The standardized targets: ``t = (y - y_offset_) / y_scale_``.
    objective_ : float
        Eq. 28 (eq. 37 with representation="exact", plus the unpenalized affine part) at
        the returned point in the standardized units; in the user's units it is
        1/s_y^2 times eq. 28 with the weights lam1 sigma^2 s_y and lam2 sigma^4 (see
        "Units").
    dual_coef_ : ndarray (m, n_features, n_features)
        Dual variable (dual solver), in the standardized units.
    n_iter_ : int
    dual_gap_ : float
        Relative, hence the same in both units.
    constraint_residual_ : float
        Relative, hence the same in both units.
    convexity_deficit_ : float
        The fit's certificate of convexity between the constraint points:
        ``convexity_deficit(relative=True)`` at the fit (4096 Sobol points of the training
        data's bounding box); above :data:`RELATIVE_DEFICIT_TOL` (1e-2) the fit warns
        with :class:`NonConvexFitWarning`.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        The dual stopped at max_iter before its certificate reached tol.
    InaccurateSolutionWarning
        The primal's certificate (gap, residual) falls short of tol.
    NonConvexFitWarning
        ``convexity_deficit_ > RELATIVE_DEFICIT_TOL``: the Hessian constraint holds at the
        constraint points only and the fitted function is not convex between them.
    """

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "rho": Interval(numbers.Real, 0.0, None),
        "lam1": Interval(numbers.Real, 0.0, None),
        "lam2": Interval(numbers.Real, 0.0, None),
        "solver": Options(["dual", "primal"]),
        "primal_solver": Options(PRIMAL_SOLVERS),
        "representation": Options(["approx", "exact"]),
        "constraint_points": _ConstraintPoints(),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "centers": Options(["auto", "train", "landmarks"]),
        "fit_intercept": Bool(),
        "concave": Bool(),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "max_iter": Interval(numbers.Integral, 1, None),
        "warm_start": Bool(),
        "random_state": RandomState(),
        "verbose": Verbose(),
        "loss": Options(CONVEX_LOSSES),
        "delta": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
        "quantile": Interval(numbers.Real, 0.0, 1.0, closed="neither", allow_none=True),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 rho: float = 1e-4, lam1: float = 0.0, lam2: float = 1e-3, solver: str = "dual",
                 primal_solver: str = "SCS", representation: str = "approx",
                 constraint_points: None | str | int | ArrayLike = None,
                 n_landmarks: int | None = None, centers: str = "auto",
                 fit_intercept: bool = True, concave: bool = False, tol: float = 1e-6,
                 max_iter: int = 20000, warm_start: bool = False,
                 random_state: RandomStateLike = None, verbose: bool | int = False,
                 loss: str = "squared", delta: float | None = None,
                 quantile: float | None = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.rho = rho
        self.lam1 = lam1
        self.lam2 = lam2
        self.solver = solver
        self.primal_solver = primal_solver
        self.representation = representation
        self.constraint_points = constraint_points
        self.n_landmarks = n_landmarks
        self.centers = centers
        self.fit_intercept = fit_intercept
        self.concave = concave
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.loss = loss
        self.delta = delta
        self.quantile = quantile

    def _sign(self):
        return -1.0 if self.concave else 1.0

    # ---- standardized units -----------------------------------------------------------------
    def _set_scaling(self, kernel, X, y, w=None):
        """x_offset_, x_scale_, y_offset_, y_scale_ of the standardized problem.

        u = (x - x_offset_) / x_scale_ with x_scale_ = the bandwidth sigma (the kernel has
        bandwidth 1 in u) and t = s (y - y_offset_) / y_scale_ (s = -1 when concave), with
        y_offset_ = mean(y) (0 without intercept) and y_scale_ the standard deviation of y
        (its root mean square without intercept; 1 when y is constant).  Computed on y /
        max|y| and scaled back: no overflow for |y| up to the float range.  With sample
        weights, the weighted mean and standard deviation (those of the duplicated rows for
        integer weights).
        """
        self.x_offset_ = X.mean(axis=0) if w is None else (w / np.sum(w)) @ X
        self.x_scale_ = float(kernel.sigma)
        a = float(np.max(np.abs(y)))
        if a == 0.0:
            self.y_offset_, self.y_scale_ = 0.0, 1.0
            return
        self.y_offset_, sd = scaled_mean_std(y, center=self.fit_intercept, weights=w)
        self.y_scale_ = sd if sd > 0 else a

    def _standardize(self, kernel, X, Z, y):
        """(U, Zu, t, kernel_u): inputs, constraint points, signed target and unit-bandwidth
        kernel in standardized units (see _set_scaling)."""
        U = (X - self.x_offset_) / self.x_scale_
        Zu = (Z - self.x_offset_) / self.x_scale_
        t = self._sign() * ((y - self.y_offset_) / self.y_scale_)
        kernel_u = copy.copy(kernel)
        kernel_u.sigma = 1.0
        return U, Zu, t, kernel_u

    def _unscale(self, alpha, beta, B):
        """Map the standardized solution (alpha, beta, B) back to the user's units.

        With f(x) = s y_offset_ + y_scale_ g((x - x_offset_) / x_scale_): alpha and the
        kernel part scale by y_scale_, the affine coefficients become
        w = y_scale_ w_u / x_scale_, c = s y_offset_ + y_scale_ c_u - w^T x_offset_, and
        Hess f = y_scale_ / x_scale_^2 Hess g, hence B = y_scale_ / x_scale_^2 B_u (the
        features Psi depend on kernel values only, the same in both units).
        """
        sy, sx = self.y_scale_, self.x_scale_
        alpha = sy * alpha
        B = (sy / sx) / sx * B
        if self.fit_intercept:
            w = (sy / sx) * np.asarray(beta[1:], dtype=np.float64)
            c = self._sign() * self.y_offset_ + sy * float(beta[0]) - float(w @ self.x_offset_)
            beta = np.concatenate([[c], w])
        return alpha, beta, B

    def _constraint_points(self, X, kernel=None, box=None):
        """The constraint points (see the parameter); ``box = (lo, hi)``: the data's
        bounding box when X is only a sample of the rows (out-of-core fits)."""
        cp_ = self.constraint_points
        if cp_ is None:
            # chosen among the distinct rows (first occurrences, in order): duplicated rows
            # (integer sample weights) do not change the choice
            if kernel is None:
                kernel = resolve_kernel(self.kernel, self.sigma, X)
            X = first_unique_rows(X)
            m_auto = auto_constraint_budget(X.shape[0], X.shape[1], self.n_landmarks)
            cand = X
            p = X.shape[1]
            if X.shape[0] >= m_auto and 2**p <= AUTO_CORNER_FRACTION * m_auto:
                lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
                bits = (np.arange(2**p)[:, None] >> np.arange(p)) & 1
                corners = np.unique(np.where(bits == 1, hi, lo), axis=0)
                new = ~(corners[:, None, :] == X[None, :, :]).all(axis=2).any(axis=1)
                cand = np.vstack([X, corners[new]])
            idx = _greedy_pivots(kernel, cand, min(cand.shape[0], m_auto),
                                 check_random_state(self.random_state), rtol=AUTO_PIVOT_RTOL)
            return X if len(idx) == cand.shape[0] == X.shape[0] else cand[idx]
        if isinstance(cp_, str) and cp_ == "train":
            return X
        if isinstance(cp_, numbers.Integral):
            lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
            return sobol_points(lo, hi, cp_, self.random_state)
        Z = check_array_2d(cp_, "constraint_points")
        if Z.shape[1] != X.shape[1]:
            raise ValueError(
                f"constraint_points must have {X.shape[1]} columns (n_features), got {Z.shape[1]}"
            )
        return Z

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> ConvexRegressor:
        """Fit f to (X, y) under the sampled Hessian constraint.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights w_i: the data term becomes
            sum_i w_i (y_i - f(x_i))^2 / sum_i w_i (scikit-learn semantics: integer
            weights equal duplicated rows, rows of weight 0 are dropped, scaling all the
            weights changes nothing; see "Sample weights").

        X and y may also be ``dask.array`` arrays (with ``n_landmarks``, the squared loss
        and the approximate representation): the data's passes then run block by block on
        the active dask scheduler and the samples are never gathered (see "Out-of-core
        fits" in the docs).
        """
        validate_params(self)
        if is_dask_array(X) or is_dask_array(y):
            return self._fit_dask(X, y, sample_weight)
        y_kind = getattr(np.asarray(y) if y is not None else None, "dtype", None)
        if y_kind is not None and y_kind.kind in "USVM":
            raise ValueError(f"y must be numeric (real targets), got dtype {y_kind}")
        X, y = validate_data(self, X, y, reset=True, dtype=np.float64, ensure_min_samples=2,
                             y_numeric=True)
        X, y, w = check_sample_weight(sample_weight, X, y)
        if X.shape[0] < 2:
            raise ValueError(
                f"sample_weight leaves {X.shape[0]} sample of positive weight; at least 2 "
                "are required"
            )
        kernel = resolve_kernel(self.kernel, self.sigma, X, w)
        self._check_kernel_and_regularization(kernel)
        Z = self._constraint_points(X, kernel)
        self._set_scaling(kernel, X, y, w)
        self.x_box_ = np.vstack([X.min(axis=0), X.max(axis=0)])
        features = self._features(kernel, Z)
        Phi = features.transform(Z)  # kernel values only: the same in standardized units
        # the problem is solved in standardized units (see _set_scaling), mapped back after
        U, Zu, t, kernel_u = self._standardize(kernel, X, Z, y)
        return self._fit_standardized(kernel, kernel_u, features, X, U, t, Z, Zu, Phi, w)

    def _check_kernel_and_regularization(self, kernel):
        if kernel.differentiability < 2:
            raise ValueError(
                f"kernel {kernel.name!r} is not twice differentiable; convex regression needs "
                "Hessians: use 'gaussian', 'matern32' or 'matern52'"
            )
        if self.lam1 == 0 and self.lam2 == 0:
            # B unregularized: only H(f) in A(S_+) matters, so B is any point of
            # {B >= 0 : A(B) = H(f)} (not unique, unbounded without a spanning set of
            # features), and the infimum need not be attained when A(S_+) is not closed;
            # Theorem 2 and the deficit bound of Corollary 7 (through Tr B) need the
            # regularizer
            raise ValueError(
                "lam1 = lam2 = 0 is ill-posed: B is then not determined and the infimum of "
                "eq. (28) need not be attained (Theorem 2 needs lam1 > 0 or lam2 > 0); set "
                "lam1 > 0 (trace) or lam2 > 0 (Frobenius)"
            )
        if self.solver == "dual" and self.lam2 == 0:
            raise ValueError("lam2 = 0 is not supported by solver='dual'; use solver='primal'")
        if self.solver == "dual" and self.rho == 0:
            raise ValueError("rho = 0 is not supported by solver='dual'; use solver='primal'")

    def _features(self, kernel, Z):
        """SoS features of the constraint points: exact, or Nystrom of rank n_landmarks."""
        rank = self.n_landmarks
        if self.constraint_points is None and rank is not None and rank >= Z.shape[0]:
            rank = None  # the default chose fewer points than the rank: exact on them
        if rank is None:
            features = ExactFeatures(kernel).fit(Z)
        else:
            if rank > Z.shape[0]:
                raise ValueError(
                    f"n_landmarks must be <= the number of constraint points {Z.shape[0]}, "
                    f"got {rank}"
                )
            features = NystromFeatures(kernel, n_landmarks=rank,
                                       random_state=self.random_state).fit(Z)
        return features

    def _fit_standardized(self, kernel, kernel_u, features, X, U, t, Z, Zu, Phi, w):
        n = X.shape[0]
        if self._loss_object() is not None and self.representation != "approx":
            raise ValueError(f"loss={self.loss!r} is implemented for representation='approx' "
                             "only; use representation='approx' or loss='squared'")
        if self.representation == "exact":
            if self._expands_on_landmarks(n):
                raise ValueError(
                    "representation='exact' expands f on every training point (eq. 37); with "
                    f"{n} samples and centers={self.centers!r} use representation='approx' "
                    "(f in the span of the landmarks) or centers='train'"
                )
            return self._fit_exact(kernel_u, features, X, U, t, Z, Zu, Phi, w)
        if self._expands_on_landmarks(n):
            return self._fit_landmarks(kernel, kernel_u, features, X, U, t, Z, Zu, Phi, w)
        if n > MAX_TRAIN_CENTERS:
            raise ValueError(
                f"centers='train' with {n} samples needs n x n kernel matrices "
                f"({8 * n * n / 2**30:.1f} GiB each); set n_landmarks (e.g. 50) with "
                "centers='auto' or 'landmarks' (f in the span of the landmarks, O(n r) memory)"
            )
        K = kernel_u(U, U)
        Hk = kernel_u.hessian(Zu, U)
        E = np.hstack([np.ones((n, 1)), U]) if self.fit_intercept else None
        if self._loss_object() is not None:
            return self._fit_loss(kernel, features, X, Z, K, Hk, Phi, t, E, w)
        problem = ConvexRegressionProblem(K, Hk, Phi, t, E, self.rho, self.lam1, self.lam2,
                                          sample_weight=w)
        alpha, beta, B = self._solve(problem, Z, ("alpha", "beta"))
        return self._finish_fit(problem, kernel, features, X, Z, alpha, beta, B)

    def _expands_on_landmarks(self, n):
        """Whether f expands on the features' anchor points (``centers``)."""
        if self.centers == "landmarks":
            return True
        if self.centers == "train":
            return False
        return self.n_landmarks is not None and n > AUTO_TRAIN_CENTERS

    def _fit_dask(self, X, y, sample_weight):
        """Out-of-core fit on dask arrays (module psdsos.estimators._dask): statistics in
        two passes, constraint points among a seeded sample of the rows and the box corners,
        the data term accumulated block by block; then the landmark model as in memory."""
        from psdsos.estimators._dask import (
            CANDIDATE_ROWS,
            dask_compress,
            dask_sample_rows,
            dask_statistics,
        )
        from psdsos.features import cholesky_with_jitter

        for bad, why in ((sample_weight is not None, "sample_weight"),
                         (self.n_landmarks is None, "n_landmarks=None"),
                         (self.centers == "train", "centers='train'"),
                         (isinstance(self.constraint_points, str), "constraint_points='train'"),
                         (self.representation != "approx", "representation='exact'"),
                         (self.loss != "squared", f"loss={self.loss!r}")):
            if bad:
                raise ValueError(
                    f"{why} is not available with dask arrays: out-of-core fits use the "
                    "landmark model (n_landmarks set, centers 'auto' or 'landmarks', the "
                    "squared loss, representation='approx'); compute the arrays to fit in "
                    "memory")
        X, y, st = dask_statistics(X, y)
        n, p = st["n"], st["p"]
        if n < 2:
            raise ValueError(f"at least 2 samples are required, got {n}")
        if isinstance(self.sigma, str):
            if not st["x_var"] > 0:
                raise ValueError("sigma='scale' needs X with a positive variance")
            sigma = float(np.sqrt(p * st["x_var"] / 2.0))
        else:
            sigma = self.sigma
        kernel = resolve_kernel(self.kernel, sigma, None)
        self._check_kernel_and_regularization(kernel)
        box = (st["lo"], st["hi"])
        seed = check_random_state(self.random_state).integers(2**32)
        sample = dask_sample_rows(X, CANDIDATE_ROWS, seed)
        Z = self._constraint_points(sample, kernel, box=box)
        # standardized units as _set_scaling computes them in memory
        self.x_offset_ = st["x_mean"]
        self.x_scale_ = float(kernel.sigma)
        if st["y_absmax"] == 0.0:
            self.y_offset_, self.y_scale_ = 0.0, 1.0
        else:
            sd = st["y_std"] if self.fit_intercept else st["y_rms"]
            self.y_offset_ = st["y_mean"] if self.fit_intercept else 0.0
            self.y_scale_ = sd if sd > 0 else st["y_absmax"]
        self.x_box_ = np.vstack(box)
        self.n_features_in_ = p
        features = self._features(kernel, Z)
        Phi = features.transform(Z)
        kernel_u = copy.copy(kernel)
        kernel_u.sigma = 1.0
        Zu = (Z - self.x_offset_) / self.x_scale_
        Cu = Zu
        Hk = kernel_u.hessian(Zu, Cu)
        R, jitter = cholesky_with_jitter(kernel_u(Cu, Cu))
        T = dask_compress(kernel_u, X, y, Cu, R, self.fit_intercept, self.x_offset_,
                          self.x_scale_, self.y_offset_, self.y_scale_, self._sign())
        # sums of squares of t = s (y - y_offset) / y_scale
        css = st["y_css"] / self.y_scale_**2
        ss = css if self.fit_intercept else st["y_ss"] / self.y_scale_**2
        problem = ConvexRegressionNystromProblem(
            kernel_u, None, Cu, Hk, Phi, None, self.fit_intercept, self.rho, self.lam1,
            self.lam2, jitter=jitter, compressed=(T, n, (css, ss)))
        return self._finish_landmarks(problem, kernel, features, Z, Z)

    def _fit_landmarks(self, kernel, kernel_u, features, X, U, t, Z, Zu, Phi, w):
        """centers="landmarks": f in the span of the constraint points (the features'
        landmarks with constraint_points="train"), data compressed by row chunks
        (ConvexRegressionNystromProblem): no n x n array, O(n r) memory.  The constraint
        points were measured better centres than the r feature landmarks alone (held-out
        error and objective, d = 2 and 5), at the same O(n r) memory."""
        # the constraint points (greedy pivots of the data by default, 2 r of them), or with
        # constraint_points="train" the features' landmarks
        cp_ = self.constraint_points
        C = features.anchors_ if isinstance(cp_, str) and cp_ == "train" else Z
        Cu = (C - self.x_offset_) / self.x_scale_
        Hk = kernel_u.hessian(Zu, Cu)
        if self._loss_object() is not None:
            # general losses keep the n x q fit matrix (their dual has one variable per sample)
            n = X.shape[0]
            E = np.hstack([np.ones((n, 1)), U]) if self.fit_intercept else None
            lm = (kernel_u, U, Cu)
            return self._fit_loss(kernel, features, C, Z, kernel_u(Cu, Cu), Hk, Phi, t, E, w,
                                  landmarks=lm)
        problem = ConvexRegressionNystromProblem(kernel_u, U, Cu, Hk, Phi, t,
                                                 self.fit_intercept, self.rho, self.lam1,
                                                 self.lam2, sample_weight=w)
        return self._finish_landmarks(problem, kernel, features, C, Z)

    def _finish_landmarks(self, problem, kernel, features, C, Z):
        alpha, beta, B = self._solve(problem, Z, ("alpha", "beta"))
        return self._finish_fit(problem, kernel, features, C, Z, alpha, beta, B)

    def _finish_fit(self, problem, kernel, features, X, Z, alpha, beta, B):
        """The fitted attributes of the approximate representation (X: the expansion
        points), its objective, residual and convexity certificate."""
        self.__dict__.pop("gamma_", None)  # no stale exact-representation coefficients
        self._set_fitted(kernel, features, X, Z, *self._unscale(alpha, beta, B))
        self.objective_ = float(problem.objective(alpha, beta, B))
        self.constraint_residual_ = float(problem.constraint_residual(alpha, B))
        self._certify_convexity()
        return self

    # ---- other losses -------------------------------------------------------------------------
    def _loss_object(self):
        """The loss in standardized units (None for "squared"): delta / y_scale_ for Huber
        (residuals are divided by y_scale_); level 1 - tau when concave (the convex fit of
        -y, whose residuals are negated)."""
        name = self.loss.lower()
        if name == "squared":
            if self.delta is not None or self.quantile is not None:
                raise ValueError(f"delta and quantile must be None for loss='squared', got "
                                 f"delta={self.delta!r}, quantile={self.quantile!r}")
            return None
        if name == "huber":
            if self.quantile is not None:
                raise ValueError(f"quantile must be None for loss='huber', got {self.quantile!r}")
            if self.delta is None:
                raise ValueError("delta must be a positive real number for loss='huber' (the "
                                 "Huber threshold, in the units of y), got None")
            return get_loss("huber", delta=self.delta / self.y_scale_)
        if self.delta is not None:
            raise ValueError(f"delta must be None for loss={name!r}, got {self.delta!r}")
        if self.quantile is None:
            raise ValueError(f"quantile must be a real number in (0, 1) for loss={name!r}, "
                             "got None")
        tau = 1.0 - self.quantile if self.concave else self.quantile
        return get_loss(name, quantile=tau)

    def _fit_loss(self, kernel, features, X, Z, K, Hk, Phi, t, E, w, landmarks=None):
        """loss != "squared": the dual with the extra variables u (warm started by weighted
        least squares) or the CVXPY primal, both certified; see "Other losses".  X: the
        expansion points (the landmarks with ``landmarks = (kernel_u, U, Cu)``, K then
        their kernel matrix)."""
        loss = self._loss_object()
        F = None if landmarks is None else landmarks[0](landmarks[1], landmarks[2])
        problem = ConvexRegressionLossProblem(K, Hk, Phi, t, E, self.rho, self.lam1,
                                              self.lam2, loss, sample_weight=w, F=F)
        if self.solver == "dual":
            init = self._irls_start(problem, K, Hk, Phi, t, E, landmarks)
            res = solve_dual_loss(problem, tol=self.tol, max_iter=self.max_iter, init=init,
                                  verbose=self.verbose)
            alpha, beta, B = res.alpha, res.beta, res.B
            self.dual_coef_ = res.G
            self.dual_gap_ = float(res.dual_gap)
            n_iter = res.n_iter + self._irls_iter
        else:
            res = solve_primal(problem, solver=self.primal_solver.upper(), tol=self.tol,
                               max_iter=self.max_iter, verbose=bool(self.verbose))
            alpha, beta, B = res.extras["alpha"], res.extras["beta"], res.B
            self.__dict__.pop("dual_coef_", None)
            self.dual_gap_ = float(res.dual_gap)
            n_iter = res.n_iter
        self.n_iter_ = int(n_iter)
        return self._finish_fit(problem, kernel, features, X, Z, alpha, beta, B)

    def _irls_start(self, problem, K, Hk, Phi, t, E, landmarks=None):
        """A starting point (u, Gamma) for the dual of a general loss: iteratively
        reweighted least squares on the (fast, preconditioned) least-squares dual, with the
        weights c_i l'(r_i) / r_i (the Huber weights min(1, delta / |r|), the expectile
        weights 2 |tau - 1{r < 0}|; for the pinball loss |l'(r)| / max(|r|, eps) with eps
        decreasing), warm started along the way.  At a fixed point the least-squares KKT
        conditions are those of the loss, so (u, Gamma) is then optimal; the certified
        proximal solver finishes from there."""
        from psdsos.solvers._irls import irls

        loss, c = problem.loss, problem.c
        st = {"eps": 0.1, "z": None, "G": None, "alpha": None, "beta": None}

        def weighted(omega):
            if landmarks is None:
                return ConvexRegressionProblem(K, Hk, Phi, t, E, self.rho, self.lam1,
                                               self.lam2, sample_weight=c * omega / 2,
                                               normalize_weights=False)
            return ConvexRegressionNystromProblem(
                *landmarks, Hk, Phi, t, self.fit_intercept, self.rho, self.lam1, self.lam2,
                sample_weight=c * omega / 2, normalize_weights=False)

        def update(pw, res, total):
            st["G"] = res.G
            st["alpha"], st["beta"] = alpha, beta = pw.recover(res.G)
            z = problem._values(alpha) + (E @ beta if E is not None else 0.0)
            r = z - t
            g = loss.grad(r)
            if loss.is_smooth:
                h = 1e-8
                small = np.abs(r) < h
                omega = np.where(small, loss.grad(np.full_like(r, h)) / h,
                                 g / np.where(small, 1.0, r))
            else:
                omega = np.abs(g) / np.maximum(np.abs(r), st["eps"])
                st["eps"] = max(0.5 * st["eps"], 1e-5)
            z_old, st["z"] = st["z"], z
            if z_old is not None and np.linalg.norm(z - z_old) <= 1e-10 * max(
                    np.linalg.norm(z), 1e-300):
                return None
            return np.maximum(omega, 1e-8), res.G

        out = irls(weighted, update, weights=np.ones_like(c), tol=min(self.tol, 1e-8),
                   max_iter=self.max_iter, max_rounds=50 if loss.is_smooth else 25,
                   inner_max_iter=2000)
        self._irls_iter = out.n_iter
        return problem.initial_point(st["G"], st["alpha"], st["beta"])

    def _certify_convexity(self):
        """Set convexity_deficit_ (relative, at the default Sobol points) and warn beyond
        RELATIVE_DEFICIT_TOL."""
        self.convexity_deficit_ = float(self.convexity_deficit(relative=True))
        if self.convexity_deficit_ > RELATIVE_DEFICIT_TOL:
            kind = "concave" if self.concave else "convex"
            warnings.warn(
                f"the fitted function is not {kind}: the smallest Hessian eigenvalue "
                f"reaches -{self.convexity_deficit_:.3g} times the curvature scale at "
                f"{DEFICIT_POINTS} Sobol points of the data's bounding box (tolerance "
                f"{RELATIVE_DEFICIT_TOL:g}; convexity_deficit_).  The Hessian constraint "
                f"holds at the {self.constraint_points_.shape[0]} constraint points only: "
                f"use a larger sigma (now {self.kernel_.sigma:.4g}; the fit is smoother), "
                "more constraint_points (an int: Sobol points of the box), or "
                "predict_convexified()",
                NonConvexFitWarning, stacklevel=caller_stacklevel(),
            )

    def _solve(self, problem, Z, keys):
        """Run the dual or the primal on ``problem``; return (*coefficients, B) with the
        coefficients named by ``keys`` (as ``problem.recover`` orders them); sets
        dual_coef_, dual_gap_ and n_iter_."""
        p = Z.shape[1]
        if self.solver == "dual":
            init = None
            if (self.warm_start and getattr(self, "dual_coef_", None) is not None
                    and self.dual_coef_.shape == (Z.shape[0], p, p)):
                init = self.dual_coef_
            res = solve_dual(problem, tol=self.tol, max_iter=self.max_iter, init=init,
                             verbose=self.verbose)
            coefs = problem.recover(res.G)
            B = res.B
            self.dual_coef_ = res.G
            self.dual_gap_ = float(res.dual_gap)
        else:
            res = solve_primal(problem, solver=self.primal_solver.upper(), tol=self.tol,
                               max_iter=self.max_iter, verbose=bool(self.verbose))
            # certified in solve_primal (relative duality gap at the solver's multipliers,
            # relative Hessian residual; InaccurateSolutionWarning beyond tol); B projected
            coefs = tuple(res.extras[k] for k in keys)
            B = res.B
            self.__dict__.pop("dual_coef_", None)  # no stale dual variable from a dual fit
            self.dual_gap_ = float(res.dual_gap)
        self.n_iter_ = int(res.n_iter)
        return (*coefs, B)

    def _set_fitted(self, kernel, features, X, Z, alpha, beta, B):
        self.kernel_ = kernel
        self.features_ = features
        self.X_fit_ = X
        self.constraint_points_ = Z
        self.alpha_ = alpha
        self.B_ = B
        if self.fit_intercept:
            self.intercept_ = float(beta[0])
            self.coef_ = np.asarray(beta[1:], dtype=np.float64)
        else:
            self.intercept_ = 0.0
            self.coef_ = np.zeros(X.shape[1])

    def _fit_exact(self, kernel_u, features, X, U, t, Z, Zu, Phi, w=None):
        """representation="exact": eq. (37) in the primal or its dual (Proposition 17), in
        standardized units (kernel_u, U, t, Zu), mapped back to the user's."""
        if kernel_u.differentiability < 4:
            raise ValueError(
                f"kernel {kernel_u.name!r} is not four times differentiable; "
                "representation='exact' needs fourth-order kernel derivatives (eq. 37): use "
                "'gaussian' or 'matern52', or representation='approx'"
            )
        n = X.shape[0]
        E = np.hstack([np.ones((n, 1)), U]) if self.fit_intercept else None
        problem = ConvexRegressionExactProblem(kernel_u, U, Zu, Phi, t, E,
                                               self.rho, self.lam1, self.lam2,
                                               sample_weight=w)
        alpha, gamma, beta, B = self._solve(problem, Z, ("alpha", "gamma", "beta"))
        self._set_fitted(features.kernel_, features, X, Z, *self._unscale(alpha, beta, B))
        # d_pq k in standardized units = s_x^2 d_pq k in the user's: gamma scales by s_y s_x^2
        self.gamma_ = gamma * (self.y_scale_ * self.x_scale_**2)
        self.objective_ = float(problem.objective(alpha, gamma, beta, B))
        self.constraint_residual_ = float(problem.constraint_residual(alpha, gamma, B))
        self._certify_convexity()
        return self

    # ---- the fitted function ----------------------------------------------------------------
    def _check_X(self, X: ArrayLike) -> np.ndarray:
        check_is_fitted(self, "alpha_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _exact_args(self, X):
        """Arguments of psdsos.sos.exact_* when fitted with representation="exact", else None.

        In standardized units (unit bandwidth: the fourth derivatives ~ sigma^-4 of the
        user's units would overflow for tiny sigma); the k-th derivative of the kernel part
        in the user's units is y_scale_ / x_scale_^k times theirs.
        """
        if getattr(self, "gamma_", None) is None:
            return None
        off, sx, sy = self.x_offset_, self.x_scale_, self.y_scale_
        kernel_u = copy.copy(self.kernel_)
        kernel_u.sigma = 1.0
        return (kernel_u, (self.X_fit_ - off) / sx, (self.constraint_points_ - off) / sx,
                self.alpha_ / sy, self.gamma_ / (sy * sx * sx), (X - off) / sx)

    def predict(self, X: ArrayLike) -> FloatArray:
        """f(x) = c + w^T x + sum_i alpha_i k(x, x_i) (negated when concave).

        With representation="exact", plus sum_j sum_pq gamma_j[p, q] d_pq k(z_j, x) (eq. 21).
        """
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            return self._sign() * (self.intercept_ + X @ self.coef_
                                   + self.y_scale_ * exact_value(*args))
        f = self.intercept_ + X @ self.coef_ + self.kernel_(X, self.X_fit_) @ self.alpha_
        return self._sign() * f

    def gradient(self, X: ArrayLike) -> FloatArray:
        """Gradient of f, shape (m, n_features)."""
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            g = (self.y_scale_ / self.x_scale_) * exact_gradient(*args)
            return self._sign() * (self.coef_ + g)
        g = self.coef_ + np.einsum("mip,i->mp", self.kernel_.gradient(X, self.X_fit_),
                                   self.alpha_)
        return self._sign() * g

    def hessian(self, X: ArrayLike) -> FloatArray:
        """Hessian of f, shape (m, n_features, n_features)."""
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            return self._sign() * ((self.y_scale_ / self.x_scale_) / self.x_scale_
                                   * exact_hessian(*args))
        return self._sign() * self.kernel_.hessian_sum(X, self.X_fit_, self.alpha_)

    def _box_array(self):
        lo, hi = self._box()
        return np.vstack([lo, hi])

    def _box(self):
        """The training data's bounding box (x_box_; the expansion points' in model files
        saved before it existed, where they were the training points)."""
        box = getattr(self, "x_box_", None)
        if box is None:
            return self.X_fit_.min(axis=0), self.X_fit_.max(axis=0)
        return box[0], box[1]

    def _evaluation_points(self, X, n_points, random_state):
        """The rows of X (validated), or n_points scrambled Sobol points in the training
        bounding box (seeded)."""
        check_is_fitted(self, "alpha_")
        if X is not None:
            return X
        if (isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral)
                or n_points < 1):
            raise ValueError(f"n_points must be an integer >= 1, got {n_points!r}")
        lo, hi = self._box()
        return sobol_points(lo, hi, int(n_points),
                            random_state)

    def convexity_deficit(self, X: ArrayLike | None = None, *, n_points: int = DEFICIT_POINTS,
                          random_state: int = 0, relative: bool = False) -> float:
        r"""Estimate :math:`\eta = \max(0, -\min_x \lambda_{\min}(\nabla^2 f(x)))` (Corollary 7).

        Over the rows of ``X`` or, by default, ``n_points`` scrambled Sobol points in the
        bounding box of the training data (seeded).  For ``concave=True`` the deficit of
        concavity (of -f) is returned.  f + eta/2 ||x||^2 is then convex on those points
        (:meth:`predict_convexified`).

        Parameters
        ----------
        X : array-like of shape (m, n_features), optional
            Evaluation points; default: the Sobol points.
        n_points : int >= 1, default=4096
            Number of Sobol points when ``X`` is None.
        random_state : int, default=0
            Seed of the Sobol scrambling.
        relative : bool, default=False
            Return :math:`\eta / \kappa`, the deficit relative to the curvature scale
            :math:`\kappa` of :meth:`curvature_scale` at the same points: a number without
            units, invariant under positive scalings and shifts of x and y (``eta`` has the
            units of y / x^2).  :math:`\kappa` is floored at :data:`CURVATURE_FLOOR`
            ``* y_scale_ / x_scale_**2`` (the curvature of a function that changes by 1e-6
            of the target's spread across the features' spread): below it the fit is affine
            to the solver's precision and its Hessians are rounding errors, whose sign
            means nothing.  When the floored :math:`\kappa` is 0 (f affine and y constant)
            0.0 is returned.

        Returns
        -------
        float
        """
        Xe = self._evaluation_points(X, n_points, random_state)
        H = self._sign() * self.hessian(Xe)
        eig = np.linalg.eigvalsh(H)
        eta = max(0.0, -float(eig[:, 0].min()))
        if not relative:
            return eta
        kappa = max(float(np.mean(np.abs(eig).max(axis=1))),
                    CURVATURE_FLOOR * self.y_scale_ / self.x_scale_**2)
        return eta / kappa if kappa > 0 else 0.0

    def curvature_scale(self, X: ArrayLike | None = None, *, n_points: int = DEFICIT_POINTS,
                        random_state: int = 0) -> float:
        r"""Mean spectral norm of the Hessian, :math:`\kappa = \operatorname{mean}_x
        \|\nabla^2 f(x)\|_2`.

        Over the same points as :meth:`convexity_deficit` (the rows of ``X`` or ``n_points``
        scrambled Sobol points in the training bounding box, seeded); the yardstick of
        ``convexity_deficit(relative=True)``.  In the units of y / x^2; 0 for an exactly
        affine fit.

        Parameters
        ----------
        X : array-like of shape (m, n_features), optional
        n_points : int >= 1, default=4096
        random_state : int, default=0

        Returns
        -------
        float
        """
        Xe = self._evaluation_points(X, n_points, random_state)
        eig = np.linalg.eigvalsh(self.hessian(Xe))
        return float(np.mean(np.abs(eig).max(axis=1)))

    def predict_convexified(self, X: ArrayLike, eta: float | None = None) -> FloatArray:
        """f(x) + eta/2 ||x||^2 (f - eta/2 ||x||^2 when concave); eta from convexity_deficit.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
        eta : float >= 0, optional
            Finite; default: :meth:`convexity_deficit` with its defaults.
        """
        if eta is not None and (isinstance(eta, bool) or not isinstance(eta, numbers.Real)
                                or not np.isfinite(eta) or eta < 0):
            raise ValueError(f"eta must be a finite real number >= 0, got {eta!r}")
        if eta is None:
            eta = self.convexity_deficit()
        X = self._check_X(X)
        return self.predict(X) + self._sign() * 0.5 * eta * np.sum(X * X, axis=1)

    # ---- persistence ------------------------------------------------------------------------
    def save(self, path: PathLike, *, metadata: dict | None = None) -> None:
        """Save to ``path`` (.npz + JSON metadata; never pickle).

        ``metadata``: optional JSON-able dict stored alongside (e.g. column names); its keys
        must not be the file's own ("type", "params", "fitted", ...).
        """
        check_is_fitted(self, "alpha_")
        arrays = {"alpha": self.alpha_, "coef": self.coef_, "X_fit": self.X_fit_,
                  "B": self.B_, "constraint_points": self.constraint_points_,
                  "x_offset": self.x_offset_, "x_box": self._box_array()}
        if getattr(self, "gamma_", None) is not None:
            arrays["gamma"] = self.gamma_
        cp_ = self.constraint_points
        extra = {"fitted": {"intercept_": self.intercept_, "objective_": self.objective_,
                            "n_iter_": self.n_iter_, "dual_gap_": self.dual_gap_,
                            "constraint_residual_": self.constraint_residual_,
                            "convexity_deficit_": self.convexity_deficit_,
                            "kernel": self.kernel_.name, "sigma": float(self.kernel_.sigma),
                            "x_scale_": self.x_scale_, "y_offset_": self.y_offset_,
                            "y_scale_": self.y_scale_}}
        if metadata:
            reserved = {"type", "params", "fitted", "format_version", "library", "array_shapes"}
            clash = reserved.intersection(metadata)
            if clash:
                raise ValueError(f"metadata must not use the reserved keys {sorted(clash)}")
            extra.update(metadata)
        if cp_ is not None and not isinstance(cp_, (numbers.Integral, str)):
            # an array of constraint points is saved as the array "param_constraint_points"
            est = self.__class__(**{**self.get_params(deep=False),
                                    "constraint_points": np.asarray(cp_, dtype=np.float64)})
        else:
            est = self
        save_estimator(est, path, arrays, extra)

    #: Saved metadata (checked by psdsos.load before _from_saved).
    _SAVED_META = {
        "fitted": {"intercept_": "real", "objective_": "real*", "n_iter_": "int",
                   "dual_gap_": "real*", "constraint_residual_": "real*",
                   "convexity_deficit_": "real", "kernel": "str",
                   "sigma": "real", "x_scale_": "real", "y_offset_": "real", "y_scale_": "real"},
    }

    @classmethod
    def _saved_arrays(cls, meta, *, source="the model file"):
        """Schema of the saved arrays: n points, p features, m constraint points, B of size
        r p (r feature components)."""
        spec = {"X_fit": ("n", "p"), "alpha": ("n",), "coef": ("p",),
                "constraint_points": ("m", "p"), "B": ("r*p", "r*p"), "gamma": ("m", "p", "p"),
                "x_offset": ("p",), "x_box?": (2, "p"),
                "param_constraint_points?": ("m", "p")}
        params = meta["params"]
        if params.get("representation") != "exact":
            spec.pop("gamma")
        cp_ = params.get("constraint_points")
        if isinstance(cp_, str) and cp_ == "train" and params.get("centers") == "train":
            spec["constraint_points"] = ("n", "p")
        elif isinstance(cp_, int):
            return spec, {"m": cp_, "_from": {"m": "the parameter constraint_points"}}
        return spec, {}

    @classmethod
    def _from_saved(cls, arrays, meta):
        est = cls(**meta["params"])
        f = meta["fitted"]
        est.kernel_ = get_kernel(f["kernel"], f["sigma"])
        est.alpha_ = arrays["alpha"]
        est.coef_ = arrays["coef"]
        est.X_fit_ = arrays["X_fit"]
        if "x_box" in arrays:
            box = np.asarray(arrays["x_box"], dtype=np.float64)
            if not np.all(np.isfinite(box)) or np.any(box[0] > box[1]):
                raise ValueError("array 'x_box' must hold finite rows min <= max")
            est.x_box_ = box
        est.B_ = arrays["B"]
        est.constraint_points_ = arrays["constraint_points"]
        if "gamma" in arrays:
            est.gamma_ = arrays["gamma"]
        est.intercept_ = f["intercept_"]
        est.objective_ = f["objective_"]
        est.n_iter_ = f["n_iter_"]
        est.dual_gap_ = f["dual_gap_"]
        est.constraint_residual_ = f["constraint_residual_"]
        est.convexity_deficit_ = f["convexity_deficit_"]
        est.n_features_in_ = est.X_fit_.shape[1]
        # the standardized units of the fit (required: psdsos.load checks them)
        est.x_offset_ = arrays["x_offset"]
        est.x_scale_ = float(f["x_scale_"])
        est.y_offset_ = float(f["y_offset_"])
        est.y_scale_ = float(f["y_scale_"])
        return est
