r"""Accelerated proximal gradient for the dual of convex regression with a general loss.

Solves :math:`\min_{u:\,E^Tu=0,\ \Gamma} D(u, \Gamma)` of
:class:`psdsos.sos._convex_losses.ConvexRegressionLossProblem`:

.. math::

    D(u, \Gamma) = \underbrace{\frac{1}{4\rho}\|Ru - G_H\operatorname{vec}\Gamma\|^2
      + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2}_{\text{smooth}}
      + \underbrace{\sum_i \phi_i^*(u_i) + \iota\{E^Tu = 0\}}_{\text{prox}},

the extra variables u (one per sample, in the subdifferential of the loss at the optimum)
next to the matrices Gamma of :func:`psdsos.solvers.solve_dual`.  Steps: FISTA with the
gradient-mapping restart (O'Donoghue and Candes, 2015), a step 1/L always accepted
(L = lambda_max(R R^T + G_H G_H^T) / (2 rho) + ||A||^2 / lam2) and longer steps probed
against the quadratic upper bound.  Stopping: the relative duality gap
:math:`(P + D)/\max(|P|, |D|, P_0)` between the primal point recovered from the iterate
(alpha from u and Gamma, beta minimizing the loss for that alpha, B the negative part) and
the dual value at the prox point, and the relative Hessian-constraint residual, both
<= tol (as for the squared loss, the primal point satisfies the coupling only at the
optimum).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos._validation import check_scalar
from psdsos.solvers._dual import DualResult, _momentum, _say
from psdsos.solvers._negpart import NegativePart
from psdsos.sos import sos_adjoint, sos_evaluate, sos_operator_norm_sq

__all__ = ["LossDualResult", "solve_dual_loss"]


@dataclass
class LossDualResult(DualResult):
    """:class:`psdsos.solvers.DualResult` plus the loss's dual variable and the primal
    coefficients.

    Attributes
    ----------
    u : ndarray (n,)
        Dual variable of the fitted values (E^T u = 0).
    alpha, beta : ndarray
        Primal coefficients at the returned point.
    residual : float
        Relative Hessian-constraint residual there.
    """

    u: np.ndarray | None = field(default=None, repr=False)
    alpha: np.ndarray | None = field(default=None, repr=False)
    beta: np.ndarray | None = field(default=None, repr=False)
    residual: float = float("nan")


def solve_dual_loss(problem, *, tol=1e-6, max_iter=20000, init=None, verbose=False,
                    history=False, check_every=20):
    r"""Minimize the dual D(u, Gamma) of convex regression with a general loss.

    Parameters
    ----------
    problem : ConvexRegressionLossProblem
    tol : float
        Stop when the relative duality gap and the relative Hessian-constraint residual
        are both <= tol.
    max_iter : int
        Largest number of iterations (one eigendecomposition of size r d each, plus one
        eigenvalue computation per probed step); reaching it warns (ConvergenceWarning:
        increase max_iter or tol).
    init : (u, Gamma), optional
        Warm start (u is brought into the domain by the prox).
    verbose : bool or int
        Progress lines on stderr every ``verbose`` iterations (100 if True).
    history : bool
        Record the relative residual per iteration and the gap where computed.
    check_every : int
        The gap needs the primal offset beta (a small convex problem: Newton, or a linear
        program for the pinball loss); it is computed every 5 iterations while the residual
        is <= tol, and at least every ``check_every`` iterations.

    Returns
    -------
    LossDualResult
    """
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    max_iter = check_scalar(max_iter, "max_iter", lower=1, integer=True)
    lam1, lam2 = float(problem.lam1), float(problem.lam2)
    if not float(problem.rho) > 0:
        raise ValueError("rho must be > 0 for the dual solver of convex regression; use "
                         "solver='primal' for rho = 0")
    if not lam2 > 0:
        raise ValueError("lam2 must be > 0 for the dual solver; use solver='primal' for "
                         "lam2 = 0")
    Phi, d = problem.Phi, int(problem.d)
    m, r = Phi.shape
    N = r * d
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    L = float(problem.lipschitz()) + sos_operator_norm_sq(Phi) / lam2
    eta_min = 1.0 / L
    eta = 4.0 * eta_min
    obj_floor, res_floor = (float(v) for v in problem.dual_floors())
    obj_floor = max(obj_floor, 1e-300)
    if init is None:
        u, G = problem.initial_point()
    else:
        u, G = init
        u = problem.prox(np.asarray(u, dtype=np.float64), 0.0)
        G = np.array(G, dtype=np.float64).reshape(m, d, d)
        G = 0.5 * (G + G.transpose(0, 2, 1))
    negpart = NegativePart(N)
    eye_l1 = lam1 * np.eye(N)
    # floor of the residual's denominator: 1e-3 of the Hessians of the Gamma = 0 fit
    H0 = problem.coupling(np.zeros(problem.n), np.zeros((m, d, d)))[2]
    res_floor = max(res_floor, 1e-6 * float(np.vdot(H0, H0)))

    def S_of(G):
        return sos_adjoint(Phi, G) + eye_l1

    def smooth_value(u, G):
        return problem.coupling_value(u, G) + negpart.sq_norm(S_of(G)) / (2 * lam2)

    xu, xG = problem.prox(u, 0.0), G
    yu, yG = xu, xG
    t_fista = 1.0
    hist = {"residual": [], "gap": []} if history else None
    best = None
    converged = False
    message = ""
    n_iter = 0
    last_check = 0
    setup_time = time.perf_counter() - t0
    for it in range(1, max_iter + 1):
        n_iter = it
        cv, gu, H, v = problem.coupling(yu, yG)
        Nneg, neg_sq = negpart(S_of(yG))
        B = Nneg / lam2
        FB = sos_evaluate(Phi, B, d)
        fy = cv + neg_sq / (2 * lam2)
        gG = H - FB
        res = float(np.sqrt(float(np.vdot(gG, gG)) / max(
            float(np.vdot(H, H)), float(np.vdot(FB, FB)), res_floor, 1e-300)))
        while True:
            un = problem.prox(yu - eta * gu, eta)
            Gn = yG - eta * gG
            du, dG = un - yu, Gn - yG
            fn = smooth_value(un, Gn)
            quad = fy + float(gu @ du) + float(np.vdot(gG, dG)) + (
                float(du @ du) + float(np.vdot(dG, dG))) / (2 * eta)
            if eta <= eta_min or fn <= quad:
                break
            eta = max(0.5 * eta, eta_min)
        if hist is not None:
            hist["residual"].append(res)
        since = it - last_check
        if (res <= tol and since >= 5) or since >= check_every or it == max_iter or it == 1:
            last_check = it
            alpha, beta, z = problem.primal_point(v)
            P = problem.primal_value(v, z, B)
            Dn = fn + problem.conjugate_value(un)
            gap = (P + Dn) / max(abs(P), abs(Dn), obj_floor)
            err = max(abs(gap), res)
            if hist is not None:
                hist["gap"].append((it, gap))
            if best is None or err < best[0]:
                best = (err, gap, res, un, Gn, alpha, beta, B, P, -Dn)
            if every and (it % every == 0 or it == 1 or err <= tol):
                _say(f"iter {it:6d}  rel. gap {gap:.3e}  rel. residual {res:.3e}  primal "
                     f"{P:.10g}  step*L {eta * L:.3g}  {time.perf_counter() - t0:.1f} s")
            if err <= tol:
                converged = True
                message = (f"relative duality gap {gap:.3e} and relative constraint residual "
                           f"{res:.3e} <= tol {tol:g}")
                break
        # momentum with the gradient-mapping restart (no strong convexity used here)
        (yu, yG), (xu, xG), t_fista = _momentum((yu, yG), (un, Gn), (xu, xG), t_fista, 0.0,
                                                eta)
        eta = 2.0 * eta
    else:
        message = (f"maximum number of iterations {max_iter} reached with relative gap / "
                   f"residual {best[0]:.3e} > tol {tol:g}")
    err, gap, res, u, G, alpha, beta, B, P, Dval = best
    if every:
        _say(f"{'converged' if converged else 'stopped'} after {n_iter} iterations, "
             f"{time.perf_counter() - t0:.1f} s: {message}")
    if not converged:
        warnings.warn(f"psdsos dual solver (convex regression, loss "
                      f"{problem.loss.name!r}) did not converge: {message}. Increase "
                      "max_iter or tol.", ConvergenceWarning, stacklevel=2)
    return LossDualResult(
        G=G, B=B, primal_objective=P, dual_objective=Dval, dual_gap=err, n_iter=n_iter,
        converged=converged, message=message, step_size=eta,
        time=time.perf_counter() - t0, history=hist, setup_time=setup_time,
        u=u, alpha=alpha, beta=beta, residual=res,
    )

