r"""Convex (or concave) regression with subsampled SoS Hessian constraints (PSD paper, sec. 5-6).

The estimator chooses a problem (:mod:`psdsos.estimators._convex_fit`: f on the training
points, on landmarks, on dask arrays, with another loss or the exact representation) and a
solver (dual or primal), and certifies convexity between the constraint points
(:mod:`psdsos.certify`).
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin

from psdsos._params import (
    KERNEL_OPTIONS,
    Bandwidth,
    Bool,
    Interval,
    Options,
    _LossOptions,
    validate_params,
)
from psdsos._persistence import SavedArray, SavedEstimator, SavedScalar, register_loadable
from psdsos._validation import (
    FloatArray,
    PathLike,
    RandomStateLike,
)
from psdsos.certify import _convexity as convexity
from psdsos.certify import _placement as placement
from psdsos.certify._convexity import DEFICIT_POINTS, RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.certify._placement import AUTO_CORNER_FRACTION, sobol_points
from psdsos.estimators import _convex_fit as fit_paths
from psdsos.estimators._common import ITERATIVE_OPTIONS, fitted_input, standardized_loss
from psdsos.estimators._dask import is_dask_array
from psdsos.kernels import Kernel, get_kernel
from psdsos.problems import exact_gradient, exact_hessian, exact_value
from psdsos.solvers import PRIMAL_SOLVERS

__all__ = ["ConvexRegressor", "NonConvexFitWarning", "RELATIVE_DEFICIT_TOL", "sobol_points",
           "AUTO_CORNER_FRACTION"]

#: centers="auto": f expands on every training point up to this many samples (the paper's
#: eq. 28; its n x n kernel matrix is then at most 32 MB), on the landmarks beyond (with
#: n_landmarks).
AUTO_TRAIN_CENTERS = 2000

#: centers="train" refuses more samples than this (n x n arrays of 3.2 GB and more).
MAX_TRAIN_CENTERS = 20000


@register_loadable
class ConvexRegressor(RegressorMixin, SavedEstimator, BaseEstimator):
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
        ``"rbf"`` (scikit-learn's name) is the Gaussian kernel, with
        :math:`\sigma = 1/\sqrt{2\gamma}` for scikit-learn's :math:`\gamma`.
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
        extra coefficients (see :class:`psdsos.problems.ConvexRegressionExactProblem`).
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
        point and the dual crawls or diverges (see docs/benchmarks.md,
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
        through one chunked pass (:class:`psdsos.problems.ConvexRegressionNystromProblem`): no
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
        proximal iterations; ``n_iter_`` counts both).  Also the name of a loss registered
        with :func:`psdsos.losses.register_loss` that declares ``convex_regression`` and
        whose required parameters are among ``delta`` and ``quantile``.
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
    certificate_ : dict of str -> ShapeCertificate
        ``{"convex[0,...,p-1]": record}`` (``"concave[...]"`` when concave): ``bound``, a
        lower bound of the smallest Hessian eigenvalue of f (of -f when concave) over the
        box of the training data in the user's units, proved by a branch and bound over
        cells (``status="certified"``; Gaussian kernel and representation="approx", at most
        20,000 cells) or else the smallest value found (``"sampled"``); ``relative``: the
        bound over the curvature scale.  See :class:`ShapeConstrainedRegressor`.
    convexity_deficit_ : float
        The fit's convexity deficit between the constraint points, relative to the
        curvature scale (of concavity when concave).  Which figure it is, the
        certificate's ``status`` says (``certificate_[name].status``, the one record):
        ``"certified"``: the proved figure ``max(0, -certificate_[name].relative)``, an
        upper bound of the deficit over the whole box of the training data (no Hessian
        eigenvalue there is below ``-convexity_deficit_`` times the scale); ``"sampled"``
        (no proof: another kernel, representation="exact", more than 20,000 cells, a
        model file without a certificate): the estimate ``convexity_deficit(relative=True)``
        at 4096 Sobol points of the box, which a dent between them can exceed.  The same
        curvature scale either way; the proved figure is never below the sampled one (and
        exceeds the true deficit by at most about 1e-2, the certificate's tolerance: a
        fit convex to 0.2% at the points may report 0.011).  When the sampled estimate
        exceeds :data:`RELATIVE_DEFICIT_TOL` (1e-2) the fit warns with
        :class:`NonConvexFitWarning`, whose message gives ``convexity_deficit_`` and says
        whether it is proved or sampled.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        The dual stopped at max_iter before its certificate reached tol.
    InaccurateSolutionWarning
        The primal's certificate (gap, residual) falls short of tol.
    NonConvexFitWarning
        ``convexity_deficit(relative=True) > RELATIVE_DEFICIT_TOL`` (the deficit at 4096
        Sobol points): the Hessian constraint holds at the constraint points only and the
        fitted function is not convex between them; the message gives
        ``convexity_deficit_`` and says whether it is proved or sampled.
    """

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "rho": Interval(numbers.Real, 0.0, None),
        "lam1": Interval(numbers.Real, 0.0, None),
        "lam2": Interval(numbers.Real, 0.0, None),
        "solver": Options(["dual", "primal"]),
        "primal_solver": Options(PRIMAL_SOLVERS, ignore_case=True),
        "representation": Options(["approx", "exact"]),
        "constraint_points": placement.ConstraintPointsOption(),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "centers": Options(["auto", "train", "landmarks"]),
        "fit_intercept": Bool(),
        "concave": Bool(),
        **ITERATIVE_OPTIONS,
        # the registered losses with Loss.convex_regression (see "Other losses")
        "loss": _LossOptions(parameters=("delta", "quantile"), convex_regression=True),
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
        self.loss = loss
        self.delta = delta
        self.quantile = quantile
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def _sign(self):
        return -1.0 if self.concave else 1.0

    # ---- the fit ----------------------------------------------------------------------------
    def _constraint_points(self, X, kernel=None, box=None):
        """The constraint points (see the parameter); ``box = (lo, hi)``: the data's
        bounding box when X is only a sample of the rows (out-of-core fits)."""
        return placement.constraint_points(self, X, kernel, box, AUTO_CORNER_FRACTION)

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
            plan, kernel, features, Z = fit_paths.dask_plan(self, X, y, sample_weight)
            return self._fit_plan(plan, kernel, features, Z)
        data = fit_paths.prepare(self, X, y, sample_weight)
        n = data.X.shape[0]
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
            plan = fit_paths.exact_plan(self, data)
        elif self._expands_on_landmarks(n):
            plan = fit_paths.landmark_plan(self, data)
        elif n > MAX_TRAIN_CENTERS:
            raise ValueError(
                f"centers='train' with {n} samples needs n x n kernel matrices "
                f"({8 * n * n / 2**30:.1f} GiB each); set n_landmarks (e.g. 50) with "
                "centers='auto' or 'landmarks' (f in the span of the landmarks, O(n r) memory)"
            )
        else:
            plan = fit_paths.train_plan(self, data)
        return self._fit_plan(plan, data.kernel, data.features, data.Z)

    def _expands_on_landmarks(self, n):
        """Whether f expands on the features' anchor points (``centers``)."""
        if self.centers == "landmarks":
            return True
        if self.centers == "train":
            return False
        return self.n_landmarks is not None and n > AUTO_TRAIN_CENTERS

    def _fit_plan(self, plan, kernel, features, Z):
        """Solve the plan's problem (fit_paths.solve_plan), set the fitted attributes and
        certify convexity between the constraint points."""
        *coefs, B = fit_paths.solve_plan(self, plan, Z)
        fit_paths.set_fitted(self, plan, kernel, features, Z, coefs, B)
        convexity.certify_convexity(self)
        return self

    # ---- other losses -------------------------------------------------------------------------
    def _loss_object(self):
        """The loss in standardized units (None for "squared"), built from the parameters it
        declares (``delta``, ``quantile``; one it does not declare must be None): rescaled
        to residuals divided by y_scale_ (``Loss.rescaled``: delta / y_scale_ for Huber),
        reflected when concave (``Loss.reflected``: the convex fit of -y, whose residuals
        are negated; level 1 - tau)."""
        loss = standardized_loss(self, "ConvexRegressor")
        if loss is None:
            return None
        if self.concave:
            reflected = loss.reflected()
            if reflected is None:
                raise ValueError(f"loss={self.loss!r} does not give the loss of negated "
                                 "residuals (Loss.reflected returns None): concave=True needs it")
            loss = reflected
        return loss

    # ---- the fitted function ----------------------------------------------------------------
    def _check_X(self, X: ArrayLike) -> np.ndarray:
        return fitted_input(self, X, "alpha_")

    def predict(self, X: ArrayLike) -> FloatArray:
        """f(x) = c + w^T x + sum_i alpha_i k(x, x_i) (negated when concave).

        With representation="exact", plus sum_j sum_pq gamma_j[p, q] d_pq k(z_j, x) (eq. 21).
        """
        return self._predict(self._check_X(X))

    # the methods on validated arrays: the internal calls (Sobol points, the certificate)
    # use these, so that a fit on a DataFrame is not checked against its feature names there
    def _predict(self, X: np.ndarray) -> FloatArray:
        args = fit_paths.exact_arguments(self, X)
        if args is not None:
            return self._sign() * (self.intercept_ + X @ self.coef_
                                   + self.y_scale_ * exact_value(*args))
        f = self.intercept_ + X @ self.coef_ + self.kernel_(X, self.X_fit_) @ self.alpha_
        return self._sign() * f

    def gradient(self, X: ArrayLike) -> FloatArray:
        """Gradient of f, shape (m, n_features)."""
        X = self._check_X(X)
        args = fit_paths.exact_arguments(self, X)
        if args is not None:
            g = (self.y_scale_ / self.x_scale_) * exact_gradient(*args)
            return self._sign() * (self.coef_ + g)
        g = self.coef_ + np.einsum("mip,i->mp", self.kernel_.gradient(X, self.X_fit_),
                                   self.alpha_)
        return self._sign() * g

    def hessian(self, X: ArrayLike) -> FloatArray:
        """Hessian of f, shape (m, n_features, n_features)."""
        return self._hessian(self._check_X(X))

    def _hessian(self, X: np.ndarray) -> FloatArray:
        args = fit_paths.exact_arguments(self, X)
        if args is not None:
            return self._sign() * ((self.y_scale_ / self.x_scale_) / self.x_scale_
                                   * exact_hessian(*args))
        return self._sign() * self.kernel_.hessian_sum(X, self.X_fit_, self.alpha_)

    def _box_array(self):
        lo, hi = convexity.fitted_box(self)
        return np.vstack([lo, hi])

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
        eig = convexity.hessian_eigenvalues(self, X, n_points, random_state, sign=self._sign())
        floor = convexity.CURVATURE_FLOOR * self.y_scale_ / self.x_scale_**2
        return convexity.deficit(eig, relative, floor)

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
        eig = convexity.hessian_eigenvalues(self, X, n_points, random_state)
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
        return self._predict(X) + self._sign() * 0.5 * eta * np.sum(X * X, axis=1)

    # ---- persistence: the saved file (psdsos.load); n points, p features, m constraint
    # points, B of size r p (r feature components) ----------------------------------------
    _saved_fitted_attr = "alpha_"
    _fitted_arrays = {
        "X_fit": SavedArray(("n", "p")), "alpha": SavedArray(("n",)),
        "coef": SavedArray(("p",)),
        "constraint_points": SavedArray(
            lambda meta: ("n", "p") if (isinstance(meta["params"].get("constraint_points"), str)
                                        and meta["params"]["constraint_points"] == "train"
                                        and meta["params"].get("centers") == "train")
            else ("m", "p")),
        "B": SavedArray(("r*p", "r*p")),
        "gamma": SavedArray(("m", "p", "p"),
                            when=lambda meta: meta["params"].get("representation") == "exact"),
        "x_offset": SavedArray(("p",)),
        "x_box?": SavedArray((2, "p"), attr=""),
        "param_constraint_points?": SavedArray(("m", "p"), attr=""),
    }
    _fitted_scalars = {
        "intercept_": "real", "objective_": "real*", "n_iter_": "int", "dual_gap_": "real*",
        "constraint_residual_": "real*", "convexity_deficit_": "real",
        "kernel": SavedScalar("str", ""), "sigma": SavedScalar("real", ""),
        "x_scale_": "real", "y_offset_": "real", "y_scale_": "real",
    }

    def save(self, path: PathLike, *, metadata: dict | None = None) -> None:
        """Save to ``path`` (.npz + JSON metadata; never pickle).

        ``metadata``: optional JSON-able dict stored alongside (e.g. column names); its keys
        must not be the file's own ("type", "params", "fitted", ...).
        """
        self._save(path, metadata)

    def _saved_param_values(self):
        """An array of constraint points is saved as the array "param_constraint_points"."""
        cp_ = self.constraint_points
        if cp_ is not None and not isinstance(cp_, (numbers.Integral, str)):
            return {"constraint_points": np.asarray(cp_, dtype=np.float64)}
        return {}

    _saved_meta = {"certificate?": "dict"}

    def _saved_extra(self):
        meta = {"fitted": {"kernel": self.kernel_.name, "sigma": float(self.kernel_.sigma)}}
        if getattr(self, "certificate_", None) is not None:
            meta["certificate"] = {k: v.as_dict() for k, v in self.certificate_.items()}
        return {"x_box": self._box_array()}, meta

    @classmethod
    def _saved_spec(cls, spec, symbols, meta, source):
        cp_ = meta["params"].get("constraint_points")
        if isinstance(cp_, int) and not isinstance(cp_, bool):
            symbols.update({"m": cp_, "_from": {"m": "the parameter constraint_points"}})
        return spec, symbols

    def _restore_saved(self, arrays, meta, source):
        f = meta["fitted"]
        self.kernel_ = get_kernel(f["kernel"], f["sigma"])
        if "x_box" in arrays:
            box = np.asarray(arrays["x_box"], dtype=np.float64)
            if not np.all(np.isfinite(box)) or np.any(box[0] > box[1]):
                raise ValueError(f"array 'x_box' in {source} must hold finite rows "
                                 "min <= max")
            self.x_box_ = box
        self.n_features_in_ = self.X_fit_.shape[1]
        if "certificate" in meta:  # files written before certificates have none
            from psdsos.certify._records import ShapeCertificate

            try:
                self.certificate_ = {str(k): ShapeCertificate(**v)
                                     for k, v in meta["certificate"].items()}
            except TypeError as exc:
                raise ValueError(f"{source}: malformed certificate: {exc}") from None
