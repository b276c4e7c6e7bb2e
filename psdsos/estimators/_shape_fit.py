"""The fit of :class:`psdsos.ShapeConstrainedRegressor`: constraints, problem, exchange.

Everything here works in the standardized units of the estimator (u = (x - x_offset_) /
x_scale_, the kernel of bandwidth 1; t = (y - y_offset_) / y_scale_).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla

from psdsos._params import KERNEL_OPTIONS, Bool, Interval, Options, _LossOptions
from psdsos.estimators._common import irls_weights
from psdsos.features import ExactFeatures, cholesky_with_jitter
from psdsos.problems._shape import ShapeRegressionProblem, constraint_map
from psdsos.problems._shape_loss import (
    ShapeRegressionLossProblem,
    unconstrained_loss_problem,
    unconstrained_loss_value,
)
from psdsos.solvers import solve_cvxpy, solve_dual
from psdsos.solvers._dual_convex import solve_dual_loss
from psdsos.sos._compress import combine_blocks, compress_block, row_scales
from psdsos.sos._constraint import KernelExpansion, ShapeConstraint

__all__: list[str] = []

#: Up to this many centres the fit matrix is formed directly (n x q), beyond it the data
#: enter through the QR factor of their rows (one chunked pass, O(q^2) memory).
AUTO_DIRECT_ROWS = 2000

#: Points of the exchange's search design per feature (scrambled Sobol, plus the corners).
DESIGN_POINTS = 512


# ---- the constraints --------------------------------------------------------------------------
def feature_list(value: Any, name: str, p: int) -> list[int]:
    """The features a shape parameter names: None -> [], True -> all, an int or a list of
    ints -> those (each in 0..p-1, no repeats)."""
    if value is None or value is False:
        return []
    if value is True:
        return list(range(p))
    items = [value] if isinstance(value, numbers.Integral) else value
    try:
        items = list(items)
    except TypeError:
        raise ValueError(f"{name} must be None, True or a list of feature indices, "
                         f"got {value!r}") from None
    out: list[int] = []
    for i in items:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral):
            raise ValueError(f"{name} must hold feature indices (integers), got {i!r}")
        j = int(i)
        if not 0 <= j < p:
            raise ValueError(f"{name} holds feature index {j}, outside 0..{p - 1} "
                             f"({p} features)")
        if j in out:
            raise ValueError(f"{name} names feature {j} twice")
        out.append(j)
    if not out:
        raise ValueError(f"{name} must name at least one feature (or be None), got {value!r}")
    return out


def constraint_name(kind: str, features: list[int]) -> str:
    """A readable name, e.g. 'increasing[0]', 'concave[0,1]', 'lower'."""
    return kind if not features else f"{kind}[{','.join(str(j) for j in features)}]"


def check_shapes(est: Any, p: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """The features of increasing, decreasing, convex and concave, checked against p
    features and each other, and lower < upper (ValueError naming the parameter)."""
    inc = feature_list(est.increasing, "increasing", p)
    dec = feature_list(est.decreasing, "decreasing", p)
    cvx = feature_list(est.convex, "convex", p)
    ccv = feature_list(est.concave, "concave", p)
    both = sorted(set(inc) & set(dec))
    if both:
        raise ValueError(f"features {both} are both increasing and decreasing (the fit would be "
                         "constant in them); drop them from one of the lists")
    both = sorted(set(cvx) & set(ccv))
    if both:
        raise ValueError(f"features {both} are both convex and concave (the fit would be affine "
                         "in them); drop them from one of the lists")
    lo, hi = est.lower, est.upper
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={lo!r}, upper={hi!r}")
    return inc, dec, cvx, ccv


def parse_constraints(est: Any, p: int) -> list[ShapeConstraint]:
    """The constraints of the parameters, in standardized units (offsets of the bounds)."""
    inc, dec, cvx, ccv = check_shapes(est, p)
    out = [ShapeConstraint("derivative", (j,), 1.0, name=constraint_name("increasing", [j]))
           for j in inc]
    out += [ShapeConstraint("derivative", (j,), -1.0, name=constraint_name("decreasing", [j]))
            for j in dec]
    if cvx:
        out.append(ShapeConstraint("hessian", tuple(cvx), 1.0,
                                   name=constraint_name("convex", cvx)))
    if ccv:
        out.append(ShapeConstraint("hessian", tuple(ccv), -1.0,
                                   name=constraint_name("concave", ccv)))
    lo, hi = est.lower, est.upper
    if lo is not None:
        out.append(ShapeConstraint("value", (), 1.0, (lo - est.y_offset_) / est.y_scale_,
                                   name="lower"))
    if hi is not None:
        out.append(ShapeConstraint("value", (), -1.0, (hi - est.y_offset_) / est.y_scale_,
                                   name="upper"))
    return out


def unit_factor(con: ShapeConstraint, est: Any) -> float:
    """From the standardized units of g to the user's: y_scale_ / x_scale_**order."""
    order = {"value": 0, "derivative": 1, "hessian": 2}[con.kind]
    return float(est.y_scale_ / est.x_scale_**order)


# ---- the fitted function in standardized units ----------------------------------------------


# ---- the problem --------------------------------------------------------------------------------
@dataclass
class ShapeData:
    """What the problem is built from (standardized units)."""

    kernel: Any
    C: np.ndarray  # centres
    R: np.ndarray  # K_CC = R^T R
    M: np.ndarray  # fit matrix in w = (beta, v)
    t: np.ndarray
    n: int
    e: int
    moments: tuple[float, float]
    box: tuple[np.ndarray, np.ndarray]
    points: list[np.ndarray] = field(default_factory=list)  # per constraint
    #: a loss other than the squared one (standardized units; None: squared), with M the
    #: unweighted fitted values, t the targets and ``weights`` the sample weights
    loss: Any = None
    weights: np.ndarray | None = None
    #: the loss's dual variables u of the last dual solve, and the last weights of the
    #: reweighted least squares that start it (the next round's warm start)
    u: np.ndarray | None = None
    omega: np.ndarray | None = None


def shape_data(est: Any, kernel_u: Any, U: np.ndarray, t: np.ndarray, w: np.ndarray | None,
               C: np.ndarray, loss: Any = None) -> ShapeData:
    """The data term in the coordinates w = (beta, v), v = R alpha: rows S [E, K R^{-1}]
    (f on the training points) or their compressed QR factor (f on landmarks); with a
    ``loss`` other than the squared one, the unweighted rows [E, K R^{-1}] (the dual has
    one variable per sample)."""
    n = U.shape[0]
    R, _ = cholesky_with_jitter(kernel_u(C, C))
    e = U.shape[1] + 1 if est.fit_intercept else 0
    sw = row_scales(w, n)
    tc = t - t.mean() if est.fit_intercept else t
    moments = (float(tc @ tc), float(t @ t))
    if loss is not None:
        E = np.hstack([np.ones((n, 1)), U]) if e else np.zeros((n, 0))
        Kv = R.T if C is U else sla.solve_triangular(R, kernel_u(U, C).T, trans="T",
                                                      lower=False).T
        lo, hi = U.min(axis=0), U.max(axis=0)
        return ShapeData(kernel_u, C, R, np.hstack([E, Kv]), t, n, e, moments, (lo, hi),
                         loss=loss, weights=w)
    if C.shape[0] <= AUTO_DIRECT_ROWS:
        E = np.hstack([np.ones((n, 1)), U]) if e else np.zeros((n, 0))
        Kv = R.T if C is U else sla.solve_triangular(R, kernel_u(U, C).T, trans="T",
                                                      lower=False).T
        M = np.hstack([E, Kv])
        tt = t
        if sw is not None:
            M, tt = sw[:, None] * M, sw * t
    else:
        T = combine_blocks([compress_block(kernel_u, U, C, R, t, est.fit_intercept, sw)],
                           e + C.shape[0] + 1)
        M, tt = T[:, :-1], T[:, -1]
    lo, hi = U.min(axis=0), U.max(axis=0)
    return ShapeData(kernel_u, C, R, M, tt, n, e, moments, (lo, hi))


def build_problem(est: Any, data: ShapeData, constraints: list[ShapeConstraint]
                  ) -> tuple[ShapeRegressionProblem | ShapeRegressionLossProblem | None,
                             list[int]]:
    """The multi-block problem with the current points of each constraint that has some
    (None when none has), and the indices of those constraints.  The SoS features of a
    scalar block (d = 1) get a constant component: a margin constant over the points then
    costs lam2 / 2 s^2 instead of growing with their number."""
    blocks, active = [], []
    for k, (con, Z) in enumerate(zip(constraints, data.points, strict=True)):
        if Z.shape[0] == 0:
            continue
        L, c = constraint_map(con, data.kernel, data.C, data.R, Z, est.fit_intercept)
        Phi = ExactFeatures(data.kernel).fit(Z).transform(Z)
        if con.d == 1:
            Phi = np.hstack([Phi, np.ones((Phi.shape[0], 1))])
        blocks.append((con, L, c, Phi))
        active.append(k)
    if not blocks:
        return None, active
    if data.loss is not None:
        return ShapeRegressionLossProblem(data.M, data.t, data.e, est.rho, est.lam1, est.lam2,
                                          blocks, data.loss, sample_weight=data.weights), active
    return ShapeRegressionProblem(data.M, data.t, data.n, data.e, est.rho, est.lam1, est.lam2,
                                  blocks, moments=data.moments), active


@dataclass
class Solution:
    w: np.ndarray
    B: list[np.ndarray]
    G: list[np.ndarray] | None
    objective: float
    n_iter: int
    gap: float
    residual: float


def solve(est: Any, data: ShapeData, constraints: list[ShapeConstraint],
          init: list[np.ndarray] | None) -> Solution:
    """Build and solve the problem with the estimator's solver (dual: warm start ``init``,
    one Gamma per constraint); without constraint points, the ridge fit."""
    problem, active = build_problem(est, data, constraints)
    empty = [np.zeros((0, c.d, c.d)) for c in constraints]
    if problem is None:
        w, obj = unconstrained_fit(est, data)
        # one linear solve (n_iter_ counts it, as scikit-learn expects n_iter_ >= 1)
        return Solution(w, [], empty, obj, 1, 0.0, 0.0)
    if est.solver == "primal":
        prob, wv, sos = problem.cvxpy_problem()
        solve_cvxpy(prob, solver=est.primal_solver, tol=min(est.tol, 1e-8),
                    verbose=est.verbose)
        w = np.asarray(wv.value, dtype=np.float64)
        B = [0.5 * (np.asarray(b.B.value) + np.asarray(b.B.value).T) for b in sos]
        return Solution(w, B, None, problem.objective(w, B), 0, float("nan"),
                        problem.constraint_residual(w, B))
    start = None if init is None else [init[k] for k in active]
    if isinstance(problem, ShapeRegressionLossProblem):
        # accelerated proximal gradient on (u, Gamma) (solve_dual_loss): the Newton steps
        # of method="auto" are for the smooth dual of the squared loss
        u0, start, n_irls = irls_start(est, data, problem, start)
        lres = solve_dual_loss(problem, tol=est.tol, max_iter=max(est.max_iter - n_irls, 1),
                               init=(u0, start), verbose=est.verbose)
        lres.n_iter += n_irls
        data.u = lres.u
        G = list(lres.G)
        assert lres.w is not None
        w = lres.w
        for k, Gk in zip(active, G, strict=True):
            empty[k] = Gk
        return Solution(w, list(lres.B), empty, float(lres.primal_objective),
                        int(lres.n_iter), float(lres.dual_gap),
                        problem.constraint_residual(w, list(lres.B)))
    res = solve_dual(problem, tol=est.tol, max_iter=est.max_iter, init=start,
                     verbose=est.verbose, method="auto")
    G = list(res.G)
    w = problem.recover(G)
    for k, Gk in zip(active, G, strict=True):
        empty[k] = Gk
    return Solution(w, list(res.B), empty, float(res.primal_objective), int(res.n_iter),
                    float(res.dual_gap), problem.constraint_residual(w, list(res.B)))


#: The smallest smoothing of the pinball loss's reweighting (|l'(r)| / max(|r|, eps)).
PINBALL_EPS = 1e-3


def irls_start(est: Any, data: ShapeData, problem: ShapeRegressionLossProblem,
               G0: list[np.ndarray] | None) -> tuple[np.ndarray, list[np.ndarray], int]:
    """A starting point (u, Gamma) for the dual of a general loss, and the iterations spent:
    iteratively reweighted least squares on the squared loss's dual (``method="auto"``,
    its Newton steps), with the weights l'(r_i) / r_i (Huber: min(1, delta / |r|);
    expectile: 2 |tau - 1{r < 0}|; pinball: |l'(r)| / max(|r|, eps) with eps decreasing),
    each round warm started at the last one's Gamma.  At a fixed point the least-squares
    optimality conditions are those of the loss (u_i = c_i l'(r_i)), so the accelerated
    proximal solver that follows only certifies (or finishes, for the pinball loss)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    loss, c, n = problem.loss, problem.c, data.n
    # a previous round of the exchange: its last weights (and its Gamma, padded)
    omega = np.ones(n) if data.omega is None else data.omega
    eps = 0.1 if data.omega is None else 1e-3
    G = G0
    total, z_old, w, u = 0, None, None, np.zeros(n)
    rounds = 50 if loss.is_smooth else 12
    for _ in range(rounds):
        budget = est.max_iter - total
        if budget <= 0:
            break
        s = np.sqrt(n * c * omega / 2.0)
        sub = ShapeRegressionProblem(s[:, None] * data.M, s * data.t, n, data.e, est.rho,
                                     est.lam1, est.lam2, problem.block_args,
                                     moments=data.moments)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solve_dual(sub, tol=min(est.tol, 1e-8), max_iter=min(2000, budget),
                             init=G, method="auto")
        total += res.n_iter
        G = list(res.G)
        w = sub.recover(G)
        z = data.M @ w
        r = z - data.t
        # the weighted least-squares multipliers c_i omega_i r_i: the loss's u at a fixed
        # point, and consistent with Gamma (v(u, Gamma) is this round's v) meanwhile
        u = c * omega * r
        omega = irls_weights(loss, r, eps)
        if not loss.is_smooth:
            # smaller eps make the weighted problems ill-conditioned (weights tau / eps):
            # the proximal solver finishes from there
            eps = max(0.5 * eps, PINBALL_EPS)
        omega = np.maximum(omega, 1e-8)
        data.omega = omega
        if z_old is not None and float(np.linalg.norm(z - z_old)) <= 1e-10 * max(
                float(np.linalg.norm(z)), 1e-300):
            break
        z_old = z
    if w is None or G is None:
        return np.zeros(n), [np.zeros(b.shape) for b in problem.blocks], total
    return u, G, total


def unconstrained_fit(est: Any, data: ShapeData) -> tuple[np.ndarray, float]:
    """(w, objective) without any constraint point: the ridge fit (one linear solve), or
    with another loss its fit by CVXPY (``primal_solver``)."""
    if data.loss is None:
        w = ridge_solution(data, est.rho)
        return w, ridge_objective(data, w, est.rho)
    prob, wvar = unconstrained_loss_problem(data.M, data.t, data.e, est.rho, data.loss,
                                            data.weights)
    solve_cvxpy(prob, solver=est.primal_solver, tol=min(est.tol, 1e-8),
                verbose=bool(est.verbose))
    w = np.asarray(wvar.value, dtype=np.float64)
    return w, unconstrained_loss_value(data.M, data.t, data.e, est.rho, data.loss,
                                       data.weights, w)


def ridge_solution(data: ShapeData, rho: float) -> np.ndarray:
    """The unconstrained minimizer of ||t - M w||^2 / n + rho ||v||^2 (no constraint)."""
    nw = data.M.shape[1]
    H = data.M.T @ data.M / data.n
    H[np.arange(data.e, nw), np.arange(data.e, nw)] += rho
    H[np.arange(data.e), np.arange(data.e)] += 1e-14 * max(1.0, float(np.trace(H)) / nw)
    return sla.solve(0.5 * (H + H.T), data.M.T @ data.t / data.n, assume_a="pos")


def ridge_objective(data: ShapeData, w: np.ndarray, rho: float) -> float:
    """||t - M w||^2 / n + rho ||v||^2."""
    r = data.t - data.M @ w
    v = w[data.e:]
    return float(r @ r) / data.n + rho * float(v @ v)


def fit_of(data: ShapeData, w: np.ndarray) -> KernelExpansion:
    """The fitted function of the coefficients w = (beta, v)."""
    alpha = sla.solve_triangular(data.R, w[data.e:], lower=False)
    return KernelExpansion(data.kernel, data.C, alpha, np.asarray(w[:data.e], dtype=np.float64))


# ---- the exchange method -----------------------------------------------------------------------


class _FeatureSpec:
    """The check of increasing / decreasing / convex / concave: None, True or indices."""

    def check(self, name: str, value: Any, owner: str) -> None:
        if value is None or value is True or value is False:
            return
        if isinstance(value, numbers.Integral) or hasattr(value, "__iter__"):
            return
        raise ValueError(f"{name} of {owner} must be None, True or a list of feature indices, "
                         f"got {value!r}")


#: The checks of the parameters ShapeConstrainedRegressor shares with its CV form: the
#: shapes, the bounds, the kernel and the certificate's settings.
SHAPE_OPTIONS: dict[str, Any] = {
    "increasing": _FeatureSpec(), "decreasing": _FeatureSpec(),
    "convex": _FeatureSpec(), "concave": _FeatureSpec(),
    "lower": Interval(numbers.Real, None, None, allow_none=True),
    "upper": Interval(numbers.Real, None, None, allow_none=True),
    "kernel": KERNEL_OPTIONS,
    "fit_intercept": Bool(),
    "certify_tol": Interval(numbers.Real, 0.0, None, closed="neither"),
    "max_exchange": Interval(numbers.Integral, 0, None),
    "max_cells": Interval(numbers.Integral, 1, None),
    "extrapolation": Options(["linear", "kernel"]),
    # the registered losses with Loss.convex_regression (see "Other losses")
    "loss": _LossOptions(parameters=("delta", "quantile"), convex_regression=True),
    "delta": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
    "quantile": Interval(numbers.Real, 0.0, 1.0, closed="neither", allow_none=True),
}


# ---- warm starts ---------------------------------------------------------------------------
def constraint_key(est: Any, constraints: list[ShapeConstraint], p: int) -> Any:
    """What a warm start must share with the previous fit: the number of features, the
    constraints (names: kind and features) and the bounds' values."""
    return (int(p), tuple(con.name for con in constraints), est.lower, est.upper)


def warm_start_point(est: Any, constraints: list[ShapeConstraint], p: int) -> Any:
    """With ``warm_start`` and the dual solver, after a dual fit with the same
    constraints (:func:`constraint_key`): (the previous fit's final points of each
    constraint in this fit's standardized units, its final dual point); else None (a
    cold start)."""
    G = getattr(est, "dual_coef_", None)
    previous = getattr(est, "constraint_points_", None)
    if (not est.warm_start or est.solver != "dual" or G is None or previous is None
            or getattr(est, "_warm_key", None) != constraint_key(est, constraints, p)
            or len(G) != len(constraints)):
        return None
    points = []
    for con, Gk in zip(constraints, G, strict=True):
        Z = previous.get(con.name)
        if Z is None or Z.ndim != 2 or Z.shape[1] != p or Gk.shape != (Z.shape[0],
                                                                      con.d, con.d):
            return None
        points.append((Z - est.x_offset_) / est.x_scale_)
    return points, [np.array(Gk, dtype=np.float64) for Gk in G]
