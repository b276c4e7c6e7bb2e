r"""PSD-valued kernel SoS regression (PSD paper, section 3.3, eq. 11)."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils.validation import _check_sample_weight

from psdsos._params import (
    KERNEL_OPTIONS,
    Bandwidth,
    Interval,
    Options,
    _LossOptions,
    resolve_kernel,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import SavedEstimator, SavedScalar, register_loadable
from psdsos._validation import (
    FloatArray,
    PathLike,
    RandomStateLike,
    check_psd_targets,
    validate_data,
)
from psdsos.estimators._common import ITERATIVE_OPTIONS, check_regularization, fitted_input
from psdsos.estimators._weights import check_sample_weight
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.geometry._matfun import spectral
from psdsos.kernels import Kernel
from psdsos.losses import LOSSES, Loss, SquaredLoss, get_loss
from psdsos.problems import PSDLeastSquares, PSDLossProblem
from psdsos.solvers import (
    PRIMAL_SOLVERS,
    DualResult,
    PrimalResult,
    solve_dual,
    solve_huber_irls,
    solve_primal,
)
from psdsos.sos import PSDModel, project_psd

__all__ = ["NegativeTargetWarning", "PSDRegressor", "psd_sqrt_targets"]

#: Exact features (n_landmarks=None) are refused above this many samples (n x n kernel
#: matrices of 3.2 GB and more, B of size n d).
MAX_EXACT_SAMPLES = 20000


def _target_exponent(M):
    """Exponent e with 2^(e-1) <= max|M| < 2^e (0 for M = 0): the fit runs on M / 2^e."""
    top = float(np.abs(M).max()) if M.size else 0.0
    return int(np.frexp(top)[1]) if top > 0 else 0


class NegativeTargetWarning(UserWarning):
    """``target="sqrt"`` met targets with negative eigenvalues: the square roots of their
    PSD parts (negative eigenvalues set to 0) are fitted."""


def psd_sqrt_targets(M: FloatArray, name: str = "y") -> FloatArray:
    r"""PSD square roots :math:`\mathbf M_i^{1/2}` of symmetric targets (n, d, d).

    Negative eigenvalues are set to 0 (the root of the PSD part, the nearest PSD matrix in
    the Frobenius norm); a :class:`NegativeTargetWarning` names how many targets had one
    below :math:`-\sqrt{\varepsilon}` times their largest eigenvalue magnitude (smaller
    ones are rounding errors of PSD targets and pass silently).
    """
    w, V = np.linalg.eigh(M)
    top = np.max(np.abs(w), axis=1, keepdims=True)
    bad = np.any(w < -np.sqrt(np.finfo(float).eps) * top, axis=1)
    if np.any(bad):
        rel = np.min(w / np.where(top > 0, top, 1.0))
        warnings.warn(
            f"target='sqrt' fits square roots, but {int(bad.sum())} of {len(M)} targets in "
            f"{name} have negative eigenvalues (down to {rel:.3g} times their largest "
            "magnitude): the roots of their PSD parts are fitted (negative eigenvalues set "
            "to 0)", NegativeTargetWarning, stacklevel=3)
    return spectral(w, V, np.sqrt(np.clip(w, 0.0, None)))


def _scaled_lam1(lam1, e, Phi, d):
    """lam1 / 2^e for the problem at the unit scale (|M / 2^e| <= 1), capped where B = 0.

    At B = 0 the optimality condition of eq. (11) is lam1 I >= (1/n) sum_i Psi_i M_i Psi_i^T,
    whose largest eigenvalue is at most d max_i ||phi_i||^2 when |M_ij| <= 1: any lam1 above
    that gives B = 0, so capping it there changes nothing and keeps it finite.
    """
    cap = 2.0 * d * max(1.0, float(np.max(np.sum(Phi * Phi, axis=1))))
    with np.errstate(over="ignore"):
        return float(min(np.ldexp(float(lam1), -e), cap))


@register_loadable
class PSDRegressor(RegressorMixin, SavedEstimator, BaseEstimator):
    r"""Regression with PSD-valued kernel sums-of-squares, PSD paper eq. (11).

    Minimizes, over PSD matrices :math:`\mathbf B` of size :math:`rd \times rd`,

    .. math::

        J(\mathbf B) = \frac{1}{2n}\sum_{i=1}^n \|F_{\mathbf B}(x_i) - \mathbf M_i\|_F^2
          + \lambda_1 \operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2,
        \qquad F_{\mathbf B}(x) = \Psi(x)^T \mathbf B \Psi(x),

    or, with another loss :math:`\ell` and sample weights w (Theorems 2-3, eq. 9-10),
    :math:`\sum_i c_i\,\ell(F_{\mathbf B}(x_i) - \mathbf M_i)` in place of the first term,
    :math:`c_i = w_i / \sum_j w_j` (1/n without weights; the squared loss is
    :math:`\ell(R) = \frac12\|R\|_F^2`, so the two agree, and "huber" tends to it as
    delta -> inf),

    with :math:`\Psi(x) = (\mathbf R^{-T} v(x)) \otimes I_d` (eq. 8; exact features, r = n)
    or Nystrom features of rank r.  Every prediction is PSD by construction
    (Proposition 1), even when the targets are noisy indefinite matrices.

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52"} or Kernel, default="gaussian"
        ``"rbf"`` (scikit-learn's name) is the Gaussian kernel: its
        :math:`\exp(-\gamma\|x - y\|^2)` is ours with :math:`\sigma = 1/\sqrt{2\gamma}`.
    sigma : "scale" or float, default="scale"
        Bandwidth; "scale": :func:`psdsos.kernels.scale_bandwidth` of the training inputs,
        sqrt(n_features * X.var() / 2) (scikit-learn's ``gamma="scale"``); the value used
        is ``kernel_.sigma``.  Ignored when ``kernel`` is a Kernel object.
    lam1 : float, default=0.0
        Trace weight lambda_1 >= 0.  lam1 = lam2 = 0 is refused (ValueError): the infimum
        is then in general not attained (Theorem 2 needs lam1 > 0 or lam2 > 0).
    lam2 : float, default=1e-3
        Frobenius weight lambda_2 >= 0 (> 0 for the dual solver).
    solver : {"dual", "primal"}, default="dual"
        ``"dual"``: accelerated gradient on the negative-part dual (Theorem 3, eq. 12),
        see :func:`psdsos.solvers.solve_dual`; for the squared loss without weights, a
        dual dimension n d (d + 1) / 2 up to 600 and a small lam2 (the dual's conditioning
        :math:`\lambda_{\max}(\mathbf K\circ\mathbf K) / (n\lambda_2) \ge 300`),
        quasi-Newton steps instead (``method="auto"``: L-BFGS-B in the metric of the dual's
        generalized Hessian; a few dozen eigendecompositions where the accelerated method
        needs thousands), stopping on the same relative duality gap.  ``"primal"``: the
        SDP through CVXPY.
    primal_solver : {"SCS", "CLARABEL"}, default="SCS"
    n_landmarks : int or None, default=None
        Nystrom rank r (None: exact features, r = n).
    landmarks : {"uniform", "greedy"}, default="uniform"
    tol : float, default=1e-7
        Dual: relative duality gap.  Primal: the CVXPY solver's tolerance.
    max_iter : int, default=10000
        Dual: gradient evaluations.  Primal: the CVXPY solver's iteration cap.
    warm_start : bool, default=False
        Reuse the previous dual solution (same training-set size) as the starting point.
    random_state : None, int or Generator
        Seeds the Nystrom landmarks.
    verbose : bool or int, default=False
    loss : {"squared", "huber", "huber_entrywise", "absolute"} or Loss, default="squared"
        The loss of the residual :math:`R = F(x_i) - \mathbf M_i` (:mod:`psdsos.losses`):
        :math:`\frac12\|R\|_F^2`; Huber of the Frobenius norm :math:`h_\delta(\|R\|_F)`
        (:math:`t^2/2` up to delta, :math:`\delta(t - \delta/2)` beyond); the sum of the
        entries' Huber losses; :math:`\|R\|_F`.  A Loss object of a scalar loss
        (quantile, expectile) needs 1-D targets.  Non-smooth conjugates (Huber, absolute)
        are handled by proximal steps in the dual solver (see ``huber_method``).  Also
        the name of a loss registered with :func:`psdsos.losses.register_loss` whose
        required parameters are among ``delta``.
    delta : float > 0 or None, default=None
        Huber threshold, in the units of the targets (required by the Huber losses).
    huber_method : {"prox", "irls"}, default="prox"
        Dual solver for loss="huber": accelerated proximal gradient on eq. (10), or
        iteratively reweighted least squares on the squared dual with warm starts
        (:func:`psdsos.solvers.solve_huber_irls`): the same optimum by an independent
        algorithm, slower (the benchmarks page compares them).
    target : {"matrix", "sqrt"}, default="matrix"
        What the SoS model fits.  ``"matrix"``: the targets, :math:`F(x) \approx
        \mathbf M` (eq. 11).  ``"sqrt"``: their PSD square roots, :math:`F(x) \approx
        \mathbf M^{1/2}`, and ``predict`` returns :math:`F(x)^2` (PSD).  Since
        :math:`d_{BW}(\mathbf A, \mathbf M)^2 = \min_{U^TU = I}
        \|\mathbf A^{1/2} - \mathbf M^{1/2}U\|_F^2` (Bhatia, Jain and Lim, 2019, Theorem 1)
        and :math:`F(x) = (F(x)^2)^{1/2}`, the training loss
        :math:`\frac12\|F(x_i) - \mathbf M_i^{1/2}\|_F^2` bounds half the squared
        Bures-Wasserstein distance of the prediction :math:`F(x_i)^2` to
        :math:`\mathbf M_i`: the choice when predictions are judged in that geometry
        (covariance matrices; scoring ``"neg_bures_wasserstein"``) and when the targets'
        eigenvalues span orders of magnitude.  Targets with negative eigenvalues have the
        roots of their PSD parts fitted (:class:`NegativeTargetWarning`); 1-D targets: the
        model fits :math:`\sqrt{y}` and predicts :math:`f(x)^2`.

    Attributes
    ----------
    B_ : ndarray (r d, r d)
        The fitted PSD matrix (``Tr B_`` and ``||B_||_F`` are those of the operator A).
    model_ : PSDModel
        The fitted function F_B (with ``target="sqrt"``, the square root of the prediction:
        ``predict(X)`` is ``model_(X) @ model_(X)``; ``objective_``, ``dual_gap_`` and
        ``dual_coef_`` are then those of the fit to the roots).
    features_ : ExactFeatures or NystromFeatures
    kernel_ : Kernel
    objective_ : float
        ``J(B_)`` evaluated in numpy (comparable across solvers).  The fit runs on the targets
        divided by a power of two near their largest magnitude, with lam1 multiplied by it
        (J is equivariant: :math:`J(c\mathbf B'; \mathbf M, \lambda_1) =
        c^2 J(\mathbf B'; \mathbf M / c, \lambda_1 / c)`), so targets of any magnitude are
        fitted alike; only ``objective_`` itself can leave the float range (``inf`` for
        targets beyond about 1e154, subnormal below about 1e-154).
    n_iter_ : int
        Dual: evaluations of the dual (eigendecompositions).  Primal: the CVXPY solver's
        iterations.
    dual_gap_ : float
        Relative duality gap at the solution: the dual solver's, or for the primal the gap
        between ``J(B_)`` and the dual of eq. (12) at Gamma_i = (F(x_i) - M_i) / n (NaN for the
        primal with lam2 = 0, whose dual is not the negative-part form).  Other losses:
        the same for eq. (10) at :math:`\Gamma_i = c_i\nabla\ell(F(x_i) - M_i)` or the
        solver's multipliers.
    dual_coef_ : ndarray (n, d, d)
        The dual variable Gamma (dual solver); Gamma_i = (F(x_i) - M_i) / n at the optimum
        (other losses: :math:`c_i\nabla\ell(F(x_i) - M_i)`, for Huber the residuals
        clipped to the ball of radius delta, over n).  Rows of weight 0 are dropped before
        the fit and have no entry.
    loss_ : Loss
        The loss object used.
    n_outputs_ : int
        d, the size of the predicted matrices.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos import PSDRegressor
    >>> from psdsos.datasets import make_bures_geodesic
    >>> t, M = make_bures_geodesic(12, random_state=0)
    >>> model = PSDRegressor(kernel="exponential", sigma=0.1, lam2=1e-5).fit(t, M)
    >>> model.predict(np.array([[0.5]])).shape
    (1, 2, 2)
    """

    #: ``method`` of :func:`psdsos.solvers.solve_dual` in the dual path ("auto": quasi-Newton
    #: steps for PSD least squares of dual dimension up to 600, accelerated gradient otherwise)
    _dual_method = "auto"

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "lam1": Interval(numbers.Real, 0.0, None),
        "lam2": Interval(numbers.Real, 0.0, None),
        "solver": Options(["dual", "primal"]),
        "primal_solver": Options(PRIMAL_SOLVERS, ignore_case=True),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "landmarks": Options(["uniform", "greedy"]),
        **ITERATIVE_OPTIONS,
        "loss": _LossOptions(parameters=("delta",), types=(Loss,)),
        "delta": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
        "huber_method": Options(["prox", "irls"]),
        "target": Options(["matrix", "sqrt"]),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 lam1: float = 0.0, lam2: float = 1e-3, solver: str = "dual",
                 primal_solver: str = "SCS", n_landmarks: int | None = None,
                 landmarks: str = "uniform", tol: float = 1e-7, max_iter: int = 10000,
                 warm_start: bool = False, random_state: RandomStateLike = None,
                 verbose: bool | int = False, loss: str | Loss = "squared",
                 delta: float | None = None, huber_method: str = "prox",
                 target: str = "matrix") -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.lam1 = lam1
        self.lam2 = lam2
        self.solver = solver
        self.primal_solver = primal_solver
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.loss = loss
        self.delta = delta
        self.huber_method = huber_method
        self.target = target

    # ------------------------------------------------------------------------------------
    def _validate_targets(self, y, n):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None "
                "(pass the target matrices y, shape (n_samples, d, d))"
            )
        y_arr = np.asarray(y) if not hasattr(y, "shape") else y
        if getattr(y_arr, "ndim", None) == 1:
            # scalar targets: the non-negative model with d = 1 (Marteau-Ferey et al., 2020)
            Mr = check_psd_targets(np.reshape(y_arr, (-1, 1, 1)), "y", n_samples=n)
            return Mr, True
        return check_psd_targets(y_arr, "y", n_samples=n), False

    def _resolve_loss(self):
        """The loss object: ``loss`` built with ``delta`` if it declares it (a Loss object
        unchanged, ``delta`` then None)."""
        return get_loss(self.loss, delta=self.delta)

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> PSDRegressor:
        r"""Fit the SoS model to PSD (or symmetric, noisy) targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples, d, d), symmetric
            The target matrices (:math:`\mathbf M_i` of eq. 11).  A 1-D array of shape
            (n_samples,) fits the scalar non-negative model (d = 1) and makes ``predict``
            return 1-D arrays.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights, scikit-learn's semantics: an integer weight counts the
            row that many times, a weight 0 drops it (before the features are built),
            scaling all weights changes nothing (the loss is
            :math:`\sum_i w_i\ell_i / \sum_i w_i`).

        Returns
        -------
        self
        """
        validate_params(self)
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=2)
        n = X.shape[0]
        M, scalar = self._validate_targets(y, n)
        d = M.shape[1]
        loss = self._resolve_loss()
        if loss.scalar_only and d != 1:
            raise ValueError(f"loss={loss!r} takes scalar residuals: y must be 1-D "
                             f"(n_samples,), got matrices of size {d}")
        if self.huber_method == "irls" and not (type(loss).__name__ == "HuberLoss"
                                                 and self.solver == "dual"):
            raise ValueError("huber_method='irls' needs loss='huber' and solver='dual', got "
                             f"loss={self.loss!r}, solver={self.solver!r}")
        X, M, w = check_sample_weight(sample_weight, X, M, min_positive=2)
        n = X.shape[0]
        if self.target == "sqrt":
            M = psd_sqrt_targets(M)
        # equal weights: the unweighted problem itself (scaling changes nothing)
        weights = None if w is None or np.all(w == w[0]) else w
        # lam1 = lam2 = 0: J(B) is bounded below but its infimum is in general not attained
        # (PSD paper, Theorem 2): minimizing sequences have ||B|| -> infinity and any solver
        # returns an arbitrary point of the sequence
        check_regularization(self, "the infimum of eq. (11) is in general not attained",
                             " (the dual of eq. 12 needs lam2 > 0)",
                             ", which handles lam2 = 0 with lam1 >= 0")
        # sigma="scale" with weights: the bandwidth of the data set with rows repeated w_i times
        kernel = resolve_kernel(self.kernel, self.sigma, X, weights)
        warn_feature_scales(self, kernel, X)
        features: ExactFeatures | NystromFeatures
        if self.n_landmarks is None:
            if n > MAX_EXACT_SAMPLES:
                raise ValueError(
                    f"exact features (n_landmarks=None) on {n} samples need n x n kernel "
                    f"matrices ({8 * n * n / 2**30:.1f} GiB each) and an (n d) x (n d) B; set "
                    "n_landmarks (e.g. 50-200: Nystrom features, O(n r) memory)"
                )
            features = ExactFeatures(kernel).fit(X)
        else:
            if self.n_landmarks > n:
                raise ValueError(
                    f"n_landmarks must be <= n_samples = {n}, got {self.n_landmarks}"
                )
            features = NystromFeatures(kernel, n_landmarks=self.n_landmarks,
                                       landmarks=self.landmarks,
                                       random_state=self.random_state).fit(X)
        Phi = features.transform(X)
        # The fit is equivariant: J(c B'; M, lam1) = c^2 J'(B'; M / c, lam1 / c).  Solve at the
        # unit scale c = 2^e ~ max|M| (exact in floating point) and map back, so that targets
        # whose squares overflow or underflow are fitted like any others.
        # Other losses: l(c R) = c^p l'(R) (Loss.rescaled), so that
        # J(c B') = c^p [L'(R') + c^(1-p) lam1 Tr B' + c^(2-p) lam2 / 2 |B'|^2] and
        # Gamma = c^(p-1) Gamma'; a loss without a known homogeneity is fitted unscaled.
        e = _target_exponent(M)
        plain = isinstance(loss, SquaredLoss) and weights is None
        scaled = loss.rescaled(np.ldexp(1.0, e)) if not plain else None
        problem: PSDLeastSquares | PSDLossProblem
        if plain:
            p = 2
            problem = PSDLeastSquares(Phi, np.ldexp(M, -e), _scaled_lam1(self.lam1, e, Phi, d),
                                      self.lam2)
        else:
            if scaled is None:
                e, p, loss_u = 0, 2, loss
            else:
                loss_u, p = scaled
            lam1_u = _scaled_lam1(self.lam1, e, Phi, d) if p == 2 else float(self.lam1)
            lam2_u = float(np.ldexp(self.lam2, e)) if p == 1 else float(self.lam2)
            problem = PSDLossProblem(Phi, np.ldexp(M, -e), lam1_u, lam2_u, loss_u, weights)
        ge = (p - 1) * e  # Gamma = 2^ge Gamma'
        res: DualResult | PrimalResult
        if self.solver == "dual":
            init = None
            previous = getattr(self, "dual_coef_", None)
            if self.warm_start and previous is not None and previous.shape == M.shape:
                init = np.ldexp(previous, -ge)
            # a start and first metric for this one fit (PSDRegressorCV's folds: the
            # full-data solution moved to the fold and its Hessian restricted to it)
            start, metric = self.__dict__.pop("_dual_start", None), None
            if start is not None and np.shape(start[0]) == M.shape:
                init, metric = np.ldexp(np.asarray(start[0], dtype=np.float64), -ge), start[1]
            if self.huber_method == "irls":
                res = solve_huber_irls(problem, tol=self.tol, max_iter=self.max_iter, init=init,
                                       verbose=self.verbose)
            else:
                # quasi-Newton steps for small PSD least squares (few dozen evaluations
                # where the accelerated gradient method needs thousands at small lam2)
                res = solve_dual(problem, tol=self.tol, max_iter=self.max_iter, init=init,
                                 verbose=self.verbose, method=self._dual_method, metric=metric)
            B = res.B
            self.dual_coef_ = np.ldexp(res.G, ge)
            self.dual_gap_ = float(res.dual_gap)
            self.n_iter_ = int(res.n_iter)
            self._n_hessian = int(res.n_hessian)
        else:
            res = solve_primal(problem, solver=self.primal_solver.upper(), tol=self.tol,
                               max_iter=self.max_iter, verbose=bool(self.verbose))
            # B projected onto the PSD cone; certified by the dual at Gamma_i =
            # (F_B(x_i) - M_i) / n (NaN for lam2 = 0), InaccurateSolutionWarning beyond tol
            B = project_psd(res.B)
            self.dual_gap_ = float(res.dual_gap)
            self.__dict__.pop("dual_coef_", None)  # no stale dual variable from a dual fit
            self.__dict__.pop("_n_hessian", None)
            self.n_iter_ = int(res.n_iter)
        self.kernel_ = kernel
        self.features_ = features
        self.model_ = PSDModel(features, np.ldexp(B, e), d)
        self.B_ = self.model_.B
        # J(B_) = 2^(2e) J'(B_ / 2^e); inf only when the objective itself exceeds the float range
        with np.errstate(over="ignore", under="ignore"):
            self.objective_ = float(np.ldexp(problem.objective(np.ldexp(self.B_, -e)), p * e))
        self.loss_ = loss
        self.n_outputs_ = d
        self._scalar_targets = scalar
        return self

    def predict(self, X: ArrayLike) -> FloatArray:
        """Predict PSD matrices F_B(x) (F_B(x)^2 with ``target="sqrt"``).

        Parameters
        ----------
        X : array-like of shape (m, n_features)

        Returns
        -------
        ndarray of shape (m, d, d), symmetric PSD (shape (m,) after a fit on 1-D targets)
        """
        X = fitted_input(self, X, "model_")
        F = self._matrices(X)
        return F[:, 0, 0] if self._scalar_targets else F

    def _matrices(self, X):
        """The predicted matrices (n, d, d) at validated inputs: F(X), or F(X)^2 with
        ``target="sqrt"``."""
        F = self.model_(X)
        if getattr(self, "target", "matrix") == "sqrt":
            F = F @ F
            F = (F + np.swapaxes(F, 1, 2)) / 2
        return F

    def score(self, X: ArrayLike, y: ArrayLike,
              sample_weight: ArrayLike | None = None) -> float:
        r"""Coefficient of determination over all matrix entries (higher is better).

        .. math::

            R^2 = 1 - \frac{\sum_i \|F(x_i) - M_i\|_F^2}{\sum_i \|M_i - \bar M\|_F^2}

        with :math:`M_i` the target matrices ``y[i]``, so that GridSearchCV's default
        scoring works with 3-D targets.
        """
        X = fitted_input(self, X, "model_")
        M, _ = self._validate_targets(y, X.shape[0])
        if M.shape[1] != self.n_outputs_:
            raise ValueError(
                f"y must have shape (n_samples, {self.n_outputs_}, {self.n_outputs_}) like the "
                f"training targets, got matrices of size {M.shape[1]}"
            )
        P = self._matrices(X)
        if len(P) < 2:
            warnings.warn("R^2 is not defined for fewer than two samples; returning nan "
                          "(use a mean-squared-error scorer with leave-one-out)",
                          UndefinedMetricWarning, stacklevel=2)
            return float("nan")
        w = _check_sample_weight(sample_weight, X)
        # R^2 is scale-invariant: compute it at the unit scale so squares never overflow
        e = max(_target_exponent(M), _target_exponent(P))
        P, M = np.ldexp(P, -e), np.ldexp(M, -e)
        wb = w.reshape((-1,) + (1,) * (P.ndim - 1))
        num = float(np.sum(wb * (P - M) ** 2))
        mean = np.sum(wb * M, axis=0) / np.sum(w)
        den = float(np.sum(wb * (M - mean) ** 2))
        if den == 0:
            return 1.0 if num == 0 else 0.0
        return 1.0 - num / den

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # with 1-D targets the model is a non-negative function: standardized targets,
        # half negative, cannot be fitted well (sklearn's check_regressors_train)
        tags.regressor_tags.poor_score = True
        return tags

    # ---- persistence: the saved file (psdsos.load); the arrays are the model's -------------
    _saved_fitted_attr = "model_"
    _fitted_scalars = {"objective_": "real*", "n_iter_": "int", "dual_gap_": "real*",
                       "n_features_in_": "posint",
                       "scalar_targets": SavedScalar("bool", "_scalar_targets")}
    _saved_meta = {"model": PSDModel.SAVED_META}
    _saved_dims = {"p": "fitted.n_features_in_"}

    def save(self, path: PathLike) -> None:
        """Save the fitted model to ``path`` (.npz + JSON metadata; never pickle)."""
        self._save(path)

    def _saved_param_values(self):
        """A loss object is saved by its name and parameter (built-in losses only)."""
        if not isinstance(self.loss, Loss):
            return {}
        lp = self.loss.params()
        if type(self.loss) is not LOSSES.get(lp["loss"]) or set(lp) - {"loss", "delta"}:
            raise ValueError(f"cannot save {type(self).__name__} with the loss object "
                             f"{self.loss!r}: only the losses named by loss= are saved")
        return {"loss": lp["loss"], "delta": lp.get("delta")}

    def _saved_extra(self):
        arrays, mmeta = self.model_.to_arrays()
        return arrays, {"model": mmeta}

    @classmethod
    def _saved_spec(cls, spec, symbols, meta, source):
        """The arrays of PSDModel, with p = n_features_in_ (and d = 1 for scalar targets)."""
        spec, known = PSDModel.saved_array_spec(meta["model"], source=source)
        known["p"] = symbols["p"]
        known["_from"]["p"] = symbols["_from"]["p"]
        if meta["fitted"]["scalar_targets"] and meta["model"]["d"] != 1:
            raise ValueError(f"{source}: a model of scalar targets must have d = 1, got "
                             f"metadata entry 'model.d' = {meta['model']['d']}")
        return spec, known

    def _restore_saved(self, arrays, meta, source):
        model = PSDModel.from_arrays(arrays, meta["model"], source=source)
        self.model_ = model
        self.features_ = model.features
        self.kernel_ = model.features.kernel_
        self.B_ = model.B
        self.n_outputs_ = model.d
        self.loss_ = self._resolve_loss()
