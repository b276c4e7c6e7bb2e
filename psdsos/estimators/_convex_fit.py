r"""The problems a :class:`~psdsos.estimators.ConvexRegressor` fit solves, and the solver run.

Each fit path builds one problem of :mod:`psdsos.sos` in the standardized units (see
"Units" in the estimator's docstring) and says how its solution maps back:

* :func:`train_plan`: f expands on every training point (eq. 28), the squared loss
  (:class:`~psdsos.problems.ConvexRegressionProblem`) or another loss
  (:class:`~psdsos.problems._convex_loss.ConvexRegressionLossProblem`);
* :func:`landmark_plan`: f in the span of landmarks, the data compressed by row chunks
  (:class:`~psdsos.problems.ConvexRegressionNystromProblem`) or, for other losses, the n x q
  fit matrix;
* :func:`exact_plan`: the exact representation (eq. 37,
  :class:`~psdsos.problems.ConvexRegressionExactProblem`);
* :func:`dask_plan`: the landmark model on dask arrays, the data compressed block by block.

:func:`solve_plan` runs the dual or the primal solver on the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from psdsos._params import resolve_kernel, warn_feature_scales
from psdsos._validation import check_random_state, scaled_mean_std, validate_data
from psdsos.estimators._common import check_regularization, irls_weights
from psdsos.estimators._weights import check_sample_weight
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.kernels import Kernel, kernel_names
from psdsos.problems import (
    ConvexRegressionExactProblem,
    ConvexRegressionNystromProblem,
    ConvexRegressionProblem,
)
from psdsos.problems._convex_loss import ConvexRegressionLossProblem
from psdsos.solvers import solve_dual, solve_primal
from psdsos.solvers._dual_convex import solve_dual_loss
from psdsos.solvers._irls import irls
from psdsos.sos._constraint import unit_kernel

__all__: list[str] = []


@dataclass
class FitPlan:
    """A problem to solve and how its solution becomes the fitted attributes."""

    #: The problem of :mod:`psdsos.sos`, in the standardized units.
    problem: Any
    #: The expansion points in the user's units (``X_fit_``).
    centers: np.ndarray
    #: The coefficients' names, in the order ``problem.recover`` returns them.
    keys: tuple[str, ...] = ("alpha", "beta")
    #: ``kernel_`` when it is not the kernel the fit resolved (exact: the features').
    kernel: Kernel | None = None
    #: General losses: the arguments of ``irls_start`` after the problem
    #: (K, Hk, Phi, t, E, landmarks), whose dual starts from reweighted least squares.
    irls: tuple | None = None


# ---- checks and features ----------------------------------------------------------------------
def _either(names):
    """``'a', 'b' or 'c'``: registered kernel names as the error messages list them."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def check_kernel_and_regularization(est, kernel):
    if kernel.differentiability < 2:
        raise ValueError(
            f"kernel {kernel.name!r} is not twice differentiable; convex regression needs "
            f"Hessians: use {_either(kernel_names(differentiability=2))}"
        )
    # lam1 = lam2 = 0, B unregularized: only H(f) in A(S_+) matters, so B is any point of
    # {B >= 0 : A(B) = H(f)} (not unique, unbounded without a spanning set of features), and
    # the infimum need not be attained when A(S_+) is not closed; Theorem 2 and the deficit
    # bound of Corollary 7 (through Tr B) need the regularizer
    check_regularization(est, "B is then not determined and the infimum of eq. (28) need "
                         "not be attained")
    if est.solver == "dual" and est.rho == 0:
        raise ValueError("rho = 0 is not supported by solver='dual'; use solver='primal'")


def sos_features(est, kernel, Z):
    """SoS features of the constraint points: exact, or Nystrom of rank n_landmarks."""
    rank = est.n_landmarks
    if est.constraint_points is None and rank is not None and rank >= Z.shape[0]:
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
                                   random_state=est.random_state).fit(Z)
    return features


# ---- standardized units -----------------------------------------------------------------------
def set_scaling(est, kernel, X, y, w=None):
    """x_offset_, x_scale_, y_offset_, y_scale_ of the standardized problem.

    u = (x - x_offset_) / x_scale_ with x_scale_ = the bandwidth sigma (the kernel has
    bandwidth 1 in u) and t = s (y - y_offset_) / y_scale_ (s = -1 when concave), with
    y_offset_ = mean(y) (0 without intercept) and y_scale_ the standard deviation of y
    (its root mean square without intercept; 1 when y is constant).  Computed on y /
    max|y| and scaled back: no overflow for |y| up to the float range.  With sample
    weights, the weighted mean and standard deviation (those of the duplicated rows for
    integer weights).
    """
    est.x_offset_ = X.mean(axis=0) if w is None else (w / np.sum(w)) @ X
    est.x_scale_ = float(kernel.sigma)
    a = float(np.max(np.abs(y)))
    if a == 0.0:
        est.y_offset_, est.y_scale_ = 0.0, 1.0
        return
    est.y_offset_, sd = scaled_mean_std(y, center=est.fit_intercept, weights=w)
    est.y_scale_ = sd if sd > 0 else a


def standardize(est, kernel, X, Z, y):
    """(U, Zu, t, kernel_u): inputs, constraint points, signed target and unit-bandwidth
    kernel in standardized units (see set_scaling)."""
    U = (X - est.x_offset_) / est.x_scale_
    Zu = (Z - est.x_offset_) / est.x_scale_
    t = est._sign() * ((y - est.y_offset_) / est.y_scale_)
    return U, Zu, t, unit_kernel(kernel)


def unscale(est, alpha, beta, B):
    """Map the standardized solution (alpha, beta, B) back to the user's units.

    With f(x) = s y_offset_ + y_scale_ g((x - x_offset_) / x_scale_): alpha and the
    kernel part scale by y_scale_, the affine coefficients become
    w = y_scale_ w_u / x_scale_, c = s y_offset_ + y_scale_ c_u - w^T x_offset_, and
    Hess f = y_scale_ / x_scale_^2 Hess g, hence B = y_scale_ / x_scale_^2 B_u (the
    features Psi depend on kernel values only, the same in both units).
    """
    sy, sx = est.y_scale_, est.x_scale_
    alpha = sy * alpha
    B = (sy / sx) / sx * B
    if est.fit_intercept:
        w = (sy / sx) * np.asarray(beta[1:], dtype=np.float64)
        c = est._sign() * est.y_offset_ + sy * float(beta[0]) - float(w @ est.x_offset_)
        beta = np.concatenate([[c], w])
    return alpha, beta, B


def exact_arguments(est, X):
    """Arguments of psdsos.problems.exact_* when fitted with representation="exact", else None.

    In standardized units (unit bandwidth: the fourth derivatives ~ sigma^-4 of the
    user's units would overflow for tiny sigma); the k-th derivative of the kernel part
    in the user's units is y_scale_ / x_scale_^k times theirs.
    """
    if getattr(est, "gamma_", None) is None:
        return None
    off, sx, sy = est.x_offset_, est.x_scale_, est.y_scale_
    return (unit_kernel(est.kernel_), (est.X_fit_ - off) / sx,
            (est.constraint_points_ - off) / sx, est.alpha_ / sy, est.gamma_ / (sy * sx * sx),
            (X - off) / sx)


def affine_design(est, U):
    """E = [1, U], the unpenalized affine part (None without intercept)."""
    return np.hstack([np.ones((U.shape[0], 1)), U]) if est.fit_intercept else None


# ---- the data ----------------------------------------------------------------------------------
@dataclass
class StandardizedData:
    """The training data of an in-memory fit, in the user's and the standardized units."""

    kernel: Kernel  # in the user's units
    kernel_u: Kernel  # bandwidth 1: the standardized units
    features: Any  # SoS features of the constraint points
    X: np.ndarray
    U: np.ndarray  # X standardized
    t: np.ndarray  # the signed, standardized targets
    Z: np.ndarray  # the constraint points
    Zu: np.ndarray
    Phi: np.ndarray  # features of Z (kernel values only: the same in both units)
    w: np.ndarray | None  # sample weights


def check_fit_input(est: Any, X: Any, y: Any, sample_weight: Any) -> tuple[Any, Any, Any]:
    """(X, y, w) of a regression fit, validated: numeric targets, at least 2 samples of
    positive weight (rows of weight 0 dropped, check_sample_weight)."""
    y_kind = getattr(np.asarray(y) if y is not None else None, "dtype", None)
    if y_kind is not None and y_kind.kind in "USVM":
        raise ValueError(f"y must be numeric (real targets), got dtype {y_kind}")
    X, y = validate_data(est, X, y, reset=True, dtype=np.float64, ensure_min_samples=2,
                         y_numeric=True)
    X, y, w = check_sample_weight(sample_weight, X, y)
    if X.shape[0] < 2:
        raise ValueError(
            f"sample_weight leaves {X.shape[0]} sample of positive weight; at least 2 "
            "are required"
        )
    return X, y, w


def prepare(est, X, y, sample_weight):
    """Validate (X, y, sample_weight), choose the kernel, the constraint points and their
    features, set the standardized units (x_offset_, ..., x_box_) and standardize."""
    X, y, w = check_fit_input(est, X, y, sample_weight)
    kernel = resolve_kernel(est.kernel, est.sigma, X, w)
    warn_feature_scales(est, kernel, X)
    check_kernel_and_regularization(est, kernel)
    Z = est._constraint_points(X, kernel)
    set_scaling(est, kernel, X, y, w)
    est.x_box_ = np.vstack([X.min(axis=0), X.max(axis=0)])
    features = sos_features(est, kernel, Z)
    Phi = features.transform(Z)
    # the problem is solved in standardized units (see set_scaling), mapped back after
    U, Zu, t, kernel_u = standardize(est, kernel, X, Z, y)
    return StandardizedData(kernel, kernel_u, features, X, U, t, Z, Zu, Phi, w)


# ---- the problems -----------------------------------------------------------------------------
def train_plan(est, data):
    """f expands on every training point (eq. 28; n x n kernel matrices)."""
    kernel_u, X, U, t, Zu, Phi, w = (data.kernel_u, data.X, data.U, data.t, data.Zu,
                                     data.Phi, data.w)
    K = kernel_u(U, U)
    Hk = kernel_u.hessian(Zu, U)
    E = affine_design(est, U)
    loss = est._loss_object()
    if loss is not None:
        problem = ConvexRegressionLossProblem(K, Hk, Phi, t, E, est.rho, est.lam1, est.lam2,
                                              loss, sample_weight=w)
        return FitPlan(problem, X, irls=(K, Hk, Phi, t, E, None))
    problem = ConvexRegressionProblem(K, Hk, Phi, t, E, est.rho, est.lam1, est.lam2,
                                      sample_weight=w)
    return FitPlan(problem, X)


def landmark_plan(est, data):
    """centers="landmarks": f in the span of the constraint points (the features'
    landmarks with constraint_points="train"), data compressed by row chunks
    (ConvexRegressionNystromProblem): no n x n array, O(n r) memory.  The constraint
    points make better centres than the r feature landmarks alone (held-out error and
    objective), at the same O(n r) memory."""
    kernel_u, features, U, t, Z, Zu, Phi, w = (data.kernel_u, data.features, data.U, data.t,
                                               data.Z, data.Zu, data.Phi, data.w)
    # the constraint points (greedy pivots of the data by default, 2 r of them), or with
    # constraint_points="train" the features' landmarks
    cp_ = est.constraint_points
    C = features.anchors_ if isinstance(cp_, str) and cp_ == "train" else Z
    Cu = (C - est.x_offset_) / est.x_scale_
    Hk = kernel_u.hessian(Zu, Cu)
    loss = est._loss_object()
    if loss is not None:
        # general losses keep the n x q fit matrix (their dual has one variable per sample)
        E = affine_design(est, U)
        K = kernel_u(Cu, Cu)
        problem = ConvexRegressionLossProblem(K, Hk, Phi, t, E, est.rho, est.lam1, est.lam2,
                                              loss, sample_weight=w, F=kernel_u(U, Cu))
        return FitPlan(problem, C, irls=(K, Hk, Phi, t, E, (kernel_u, U, Cu)))
    problem = ConvexRegressionNystromProblem(kernel_u, U, Cu, Hk, Phi, t, est.fit_intercept,
                                             est.rho, est.lam1, est.lam2, sample_weight=w)
    return FitPlan(problem, C)


def exact_plan(est, data):
    """representation="exact": eq. (37) in the primal or its dual (Proposition 17)."""
    kernel_u = data.kernel_u
    if kernel_u.differentiability < 4:
        raise ValueError(
            f"kernel {kernel_u.name!r} is not four times differentiable; "
            "representation='exact' needs fourth-order kernel derivatives (eq. 37): use "
            f"{_either(kernel_names(differentiability=4))}, or representation='approx'"
        )
    problem = ConvexRegressionExactProblem(kernel_u, data.U, data.Zu, data.Phi, data.t,
                                           affine_design(est, data.U), est.rho, est.lam1,
                                           est.lam2, sample_weight=data.w)
    return FitPlan(problem, data.X, keys=("alpha", "gamma", "beta"),
                   kernel=data.features.kernel_)


def dask_plan(est, X, y, sample_weight):
    """Out-of-core fit on dask arrays (module psdsos.estimators._dask): statistics in
    two passes, constraint points among a seeded sample of the rows and the box corners,
    the data term accumulated block by block; then the landmark model as in memory.
    Returns (plan, kernel, features, Z) and sets the standardized units."""
    from psdsos.estimators._dask import (
        CANDIDATE_ROWS,
        dask_compress,
        dask_sample_rows,
        dask_statistics,
    )
    from psdsos.features import cholesky_with_jitter

    for bad, why in ((sample_weight is not None, "sample_weight"),
                     (est.n_landmarks is None, "n_landmarks=None"),
                     (est.centers == "train", "centers='train'"),
                     (isinstance(est.constraint_points, str), "constraint_points='train'"),
                     (est.representation != "approx", "representation='exact'"),
                     (est.loss != "squared", f"loss={est.loss!r}")):
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
    if isinstance(est.sigma, str):
        if not st["x_var"] > 0:
            raise ValueError("sigma='scale' needs X with a positive variance")
        sigma = float(np.sqrt(p * st["x_var"] / 2.0))
    else:
        sigma = est.sigma
    kernel = resolve_kernel(est.kernel, sigma, None)
    check_kernel_and_regularization(est, kernel)
    box = (st["lo"], st["hi"])
    seed = check_random_state(est.random_state).integers(2**32)
    sample = dask_sample_rows(X, CANDIDATE_ROWS, seed)
    warn_feature_scales(est, kernel, sample)  # the features' spreads, from a sample of rows
    Z = est._constraint_points(sample, kernel, box=box)
    # standardized units as set_scaling computes them in memory
    est.x_offset_ = st["x_mean"]
    est.x_scale_ = float(kernel.sigma)
    if st["y_absmax"] == 0.0:
        est.y_offset_, est.y_scale_ = 0.0, 1.0
    else:
        sd = st["y_std"] if est.fit_intercept else st["y_rms"]
        est.y_offset_ = st["y_mean"] if est.fit_intercept else 0.0
        est.y_scale_ = sd if sd > 0 else st["y_absmax"]
    est.x_box_ = np.vstack(box)
    est.n_features_in_ = p
    features = sos_features(est, kernel, Z)
    Phi = features.transform(Z)
    kernel_u = unit_kernel(kernel)
    Zu = (Z - est.x_offset_) / est.x_scale_
    Cu = Zu
    Hk = kernel_u.hessian(Zu, Cu)
    R, jitter = cholesky_with_jitter(kernel_u(Cu, Cu))
    T = dask_compress(kernel_u, X, y, Cu, R, est.fit_intercept, est.x_offset_,
                      est.x_scale_, est.y_offset_, est.y_scale_, est._sign())
    # sums of squares of t = s (y - y_offset) / y_scale
    css = st["y_css"] / est.y_scale_**2
    ss = css if est.fit_intercept else st["y_ss"] / est.y_scale_**2
    problem = ConvexRegressionNystromProblem(
        kernel_u, None, Cu, Hk, Phi, None, est.fit_intercept, est.rho, est.lam1,
        est.lam2, jitter=jitter, compressed=(T, n, (css, ss)))
    return FitPlan(problem, Z), kernel, features, Z


# ---- the solver -------------------------------------------------------------------------------
def solve_plan(est, plan, Z):
    """Run the dual or the primal on ``plan.problem``; return (*coefficients, B) with the
    coefficients named by ``plan.keys``; sets dual_coef_, dual_gap_ and n_iter_.

    General losses (``plan.irls``): the dual with the extra variables u, warm started by
    weighted least squares (``irls_start``; ``n_iter_`` counts both);
    otherwise the dual of eq. (29) (warm started from ``dual_coef_`` with ``warm_start``).
    The primal (CVXPY) is certified in solve_primal (relative duality gap at the solver's
    multipliers, relative Hessian residual; InaccurateSolutionWarning beyond tol); B
    projected.
    """
    problem = plan.problem
    if est.solver != "dual":
        res = solve_primal(problem, solver=est.primal_solver.upper(), tol=est.tol,
                           max_iter=est.max_iter, verbose=bool(est.verbose))
        coefs = tuple(res.extras[k] for k in plan.keys)
        est.__dict__.pop("dual_coef_", None)  # no stale dual variable from a dual fit
        n_iter = res.n_iter
    elif plan.irls is not None:
        init = irls_start(est, problem, *plan.irls)
        res = solve_dual_loss(problem, tol=est.tol, max_iter=est.max_iter, init=init,
                              verbose=est.verbose)
        coefs = (res.alpha, res.beta)
        est.dual_coef_ = res.G
        n_iter = res.n_iter + est._irls_iter
    else:
        init = None
        p = Z.shape[1]
        if (est.warm_start and getattr(est, "dual_coef_", None) is not None
                and est.dual_coef_.shape == (Z.shape[0], p, p)):
            init = est.dual_coef_
        res = solve_dual(problem, tol=est.tol, max_iter=est.max_iter, init=init,
                         verbose=est.verbose, method="auto")
        coefs = problem.recover(res.G)
        est.dual_coef_ = res.G
        n_iter = res.n_iter
    est.dual_gap_ = float(res.dual_gap)
    est.n_iter_ = int(n_iter)
    return (*coefs, res.B)


def set_fitted(est, plan, kernel, features, Z, coefs, B):
    """The fitted attributes from the standardized solution (coefs named by plan.keys),
    the objective and the Hessian residual at it."""
    named = dict(zip(plan.keys, coefs, strict=True))
    gamma = named.get("gamma")
    alpha, beta, B_user = unscale(est, named["alpha"], named["beta"], B)
    est.kernel_ = kernel if plan.kernel is None else plan.kernel
    est.features_ = features
    est.X_fit_ = plan.centers
    est.constraint_points_ = Z
    est.alpha_ = alpha
    est.B_ = B_user
    if est.fit_intercept:
        est.intercept_ = float(beta[0])
        est.coef_ = np.asarray(beta[1:], dtype=np.float64)
    else:
        est.intercept_ = 0.0
        est.coef_ = np.zeros(plan.centers.shape[1])
    if gamma is None:
        est.__dict__.pop("gamma_", None)  # no stale exact-representation coefficients
    else:
        # d_pq k in standardized units = s_x^2 d_pq k in the user's: gamma scales by s_y s_x^2
        est.gamma_ = gamma * (est.y_scale_ * est.x_scale_**2)
    est.objective_ = float(plan.problem.objective(*coefs, B))
    est.constraint_residual_ = float(plan.problem.constraint_residual(
        *(c for k, c in zip(plan.keys, coefs, strict=True) if k != "beta"), B))


def irls_start(est, problem, K, Hk, Phi, t, E, landmarks=None):
    """A starting point (u, Gamma) for the dual of a general loss: iteratively
    reweighted least squares on the (fast, preconditioned) least-squares dual, with the
    weights c_i l'(r_i) / r_i (the Huber weights min(1, delta / |r|), the expectile
    weights 2 |tau - 1{r < 0}|; for the pinball loss |l'(r)| / max(|r|, eps) with eps
    decreasing), warm started along the way.  At a fixed point the least-squares KKT
    conditions are those of the loss, so (u, Gamma) is then optimal; the certified
    proximal solver finishes from there."""
    loss, c = problem.loss, problem.c
    st = {"eps": 0.1, "z": None, "G": None, "alpha": None, "beta": None}

    def weighted(omega):
        if landmarks is None:
            return ConvexRegressionProblem(K, Hk, Phi, t, E, est.rho, est.lam1,
                                           est.lam2, sample_weight=c * omega / 2,
                                           normalize_weights=False)
        return ConvexRegressionNystromProblem(
            *landmarks, Hk, Phi, t, est.fit_intercept, est.rho, est.lam1, est.lam2,
            sample_weight=c * omega / 2, normalize_weights=False)

    def update(pw, res, total):
        st["G"] = res.G
        st["alpha"], st["beta"] = alpha, beta = pw.recover(res.G)
        z = problem._values(alpha) + (E @ beta if E is not None else 0.0)
        r = z - t
        omega = irls_weights(loss, r, st["eps"])
        if not loss.is_smooth:
            st["eps"] = max(0.5 * st["eps"], 1e-5)
        z_old, st["z"] = st["z"], z
        if z_old is not None and np.linalg.norm(z - z_old) <= 1e-10 * max(
                np.linalg.norm(z), 1e-300):
            return None
        return np.maximum(omega, 1e-8), res.G

    out = irls(weighted, update, weights=np.ones_like(c), tol=min(est.tol, 1e-8),
               max_iter=est.max_iter, max_rounds=50 if loss.is_smooth else 25,
               inner_max_iter=2000)
    est._irls_iter = out.n_iter
    return problem.initial_point(st["G"], st["alpha"], st["beta"])
