r"""Accelerated proximal gradient for the dual of convex regression with a general loss.

Solves :math:`\min_{u:\,E^Tu=0,\ \Gamma} D(u, \Gamma)` of
:class:`psdsos.problems._convex_loss.ConvexRegressionLossProblem`:

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
optimum).  The pair (u, Gamma) is one block variable of the loop of
:mod:`psdsos.solvers._apg` (momentum, restart, stopping, result).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from psdsos._validation import check_scalar
from psdsos.problems._base import DualBlock
from psdsos.solvers._apg import APGState, Certificate, DualResult, Step, run_apg, say
from psdsos.solvers._blocks import NegativePartTerm
from psdsos.solvers._protocol import LOSS_DUAL_METHODS, require_methods

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
        Primal coefficients at the returned point (one-block problems).
    residual : float
        Relative Hessian-constraint residual there.
    w : ndarray
        Primal coefficients at the returned point (several blocks: the problem's own
        coordinates, e.g. (beta, v) of shape-constrained regression).
    """

    u: np.ndarray | None = field(default=None, repr=False)
    alpha: np.ndarray | None = field(default=None, repr=False)
    beta: np.ndarray | None = field(default=None, repr=False)
    residual: float = float("nan")
    w: np.ndarray | None = field(default=None, repr=False)


def solve_dual_loss(problem: Any, *, tol: float = 1e-6, max_iter: int = 20000,
                    init: tuple[np.ndarray, Any] | None = None,
                    verbose: bool | int = False, history: bool = False,
                    check_every: int = 20) -> LossDualResult:
    r"""Minimize the dual D(u, Gamma) of convex regression with a general loss.

    Parameters
    ----------
    problem : ConvexRegressionLossProblem or ShapeRegressionLossProblem
        One SoS block (convex regression), or several (attribute ``blocks``: Gamma is then
        a flat vector over the blocks, the affine set couples u and Gamma and the prox acts
        on both; :func:`_solve_blocks`).
    tol : float
        Stop when the relative duality gap and the relative Hessian-constraint residual
        are both <= tol.
    max_iter : int
        Largest number of iterations (one eigendecomposition of size r d each, plus one
        eigenvalue computation per probed step); reaching it warns (ConvergenceWarning:
        increase max_iter or tol).
    init : (u, Gamma), optional
        Warm start (u is brought into the domain by the prox; several blocks: Gamma a
        list of blocks).
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
    require_methods(problem, LOSS_DUAL_METHODS, "solve_dual_loss")
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    max_iter = check_scalar(max_iter, "max_iter", lower=1, integer=True)
    several = hasattr(problem, "blocks")
    what = "shape-constrained regression" if several else "convex regression"
    if not float(problem.rho) > 0:
        raise ValueError(f"rho must be > 0 for the dual solver of {what}; use "
                         "solver='primal' for rho = 0")
    if not float(problem.lam2) > 0:
        raise ValueError("lam2 must be > 0 for the dual solver; use solver='primal' for "
                         "lam2 = 0")
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    if several:
        return _solve_blocks(problem, tol=tol, max_iter=max_iter, init=init, every=every,
                             t0=t0, history=history, check_every=check_every)
    method = _LossSteps(problem, tol=tol, max_iter=max_iter, every=every, t0=t0,
                        check_every=check_every)
    blk = method.neg.blocks[0]
    if init is None:
        u, G = problem.initial_point()
    else:
        u, G = init
        u = problem.prox(np.asarray(u, dtype=np.float64), 0.0)
        G = np.array(G, dtype=np.float64).reshape(blk.shape)
        G = 0.5 * (G + G.transpose(0, 2, 1))
    x = (problem.prox(u, 0.0), G)
    state = APGState(x=x, y=x, eta=method.eta0,
                     history={"residual": [], "gap": []} if history else None)
    res = run_apg(method, state, tol=tol, max_iter=max_iter, every=every, t0=t0,
                  result_type=LossDualResult)
    assert isinstance(res, LossDualResult)
    return res


class _LossSteps:
    """Proximal gradient steps on (u, Gamma) for :func:`run_apg`, with backtracking from
    a doubled step; the gap where the residual is small (module docstring)."""

    err_name = "relative gap / residual"

    def __init__(self, problem, *, tol, max_iter, every, t0, check_every):
        self.problem, self.tol, self.max_iter, self.every, self.t0 = (
            problem, tol, max_iter, every, t0)
        self.check_every = check_every
        self.label = f" (convex regression, loss {problem.loss.name!r})"
        blk = DualBlock(problem.Phi, int(problem.d), float(problem.lam1),
                        float(problem.lam2))
        self.neg = NegativePartTerm([blk])
        self.L = float(problem.lipschitz()) + self.neg.lipschitz()
        self.eta_min = 1.0 / self.L
        self.eta0 = 4.0 * self.eta_min
        self.mu = 0.0  # no strong convexity used here
        obj_floor, res_floor = (float(v) for v in problem.dual_floors())
        self.obj_floor = max(obj_floor, 1e-300)
        # floor of the residual's denominator: 1e-3 of the Hessians of the Gamma = 0 fit
        H0 = problem.coupling(np.zeros(problem.n), np.zeros(blk.shape))[2]
        self.res_floor = max(res_floor, 1e-6 * float(np.vdot(H0, H0)))
        self.last_check = 0

    def iterate(self, state, it):
        problem, neg = self.problem, self.neg
        yu, yG = state.y
        cv, gu, H, v = problem.coupling(yu, yG)
        Bs, neg_val = neg(neg.shifted([yG]))
        FB = neg.evaluate(Bs)[0]
        fy = cv + neg_val
        gG = H - FB
        res = float(np.sqrt(float(np.vdot(gG, gG)) / max(
            float(np.vdot(H, H)), float(np.vdot(FB, FB)), self.res_floor, 1e-300)))
        eta = state.eta
        while True:
            un = problem.prox(yu - eta * gu, eta)
            Gn = yG - eta * gG
            du, dG = un - yu, Gn - yG
            fn = problem.coupling_value(un, Gn) + neg.value(neg.shifted([Gn]))
            quad = fy + float(gu @ du) + float(np.vdot(gG, dG)) + (
                float(du @ du) + float(np.vdot(dG, dG))) / (2 * eta)
            if eta <= self.eta_min or fn <= quad:
                break
            eta = max(0.5 * eta, self.eta_min)
        state.eta = eta

        def take_step():
            state.eta = 2.0 * eta
            return Step(x=(un, Gn), mapping=None, length=eta)

        if state.history is not None:
            state.history["residual"].append(res)
        since = it - self.last_check
        if not ((res <= self.tol and since >= 5) or since >= self.check_every
                or it == self.max_iter or it == 1):
            return None, take_step
        self.last_check = it
        alpha, beta, z = problem.primal_point(v)
        P = problem.primal_value(v, z, Bs[0])
        Dn = fn + problem.conjugate_value(un)
        gap = (P + Dn) / max(abs(P), abs(Dn), self.obj_floor)
        err = max(abs(gap), res)
        if state.history is not None:
            state.history["gap"].append((it, gap))
        log = None
        if self.every and (it % self.every == 0 or it == 1 or err <= self.tol):
            log = (f"iter {it:6d}  rel. gap {gap:.3e}  rel. residual {res:.3e}  primal "
                   f"{P:.10g}  step*L {eta * self.L:.3g}  {time.perf_counter() - self.t0:.1f} s")
        cert = Certificate(
            err=err, point=Gn, B=Bs[0], primal=P, dual=-Dn,
            message=(f"relative duality gap {gap:.3e} and relative constraint residual "
                     f"{res:.3e} <= tol {self.tol:g}"),
            extras={"u": un, "alpha": alpha, "beta": beta, "residual": res}, log=log)
        return cert, take_step


# ---- several SoS blocks, u and Gamma coupled by the affine set (shape constraints) ----------
def _solve_blocks(problem, *, tol, max_iter, init, every, t0, history, check_every):
    """:func:`solve_dual_loss` for a problem of several SoS blocks
    (:class:`psdsos.problems._shape_loss.ShapeRegressionLossProblem`): the
    iterate is (u, flat Gamma), the prox acts on both (the affine set
    E^T u = L_beta^T gamma), the certificate is the relative gap and the relative
    constraint residual of the primal point (beta included)."""
    method = _BlockLossSteps(problem, tol=tol, max_iter=max_iter, every=every, t0=t0,
                             check_every=check_every)
    if init is None:
        x = problem.initial_point()
    else:
        u, G = init
        x = problem.initial_point(G0=list(G), u0=u)
    state = APGState(x=x, y=x, eta=method.eta0,
                     history={"residual": [], "gap": []} if history else None)
    res = run_apg(method, state, tol=tol, max_iter=max_iter, every=every, t0=t0,
                  result_type=LossDualResult)
    assert isinstance(res, LossDualResult)
    return res


class _BlockLossSteps:
    """Proximal gradient steps on (u, flat Gamma) over several SoS blocks for
    :func:`run_apg`, backtracking from a doubled step; the certificate every few
    iterations (every 5 once the last one is within 10 tol, else every ``check_every``)."""

    err_name = "relative gap / residual"

    def __init__(self, problem, *, tol, max_iter, every, t0, check_every):
        self.problem, self.tol, self.max_iter, self.every, self.t0 = (
            problem, tol, max_iter, every, t0)
        self.check_every = check_every
        self.label = f" (shape-constrained regression, loss {problem.loss.name!r})"
        self.neg = NegativePartTerm(problem.blocks)
        self.L = float(problem.lipschitz()) + self.neg.lipschitz()
        self.eta_min = 1.0 / self.L
        self.eta0 = 4.0 * self.eta_min
        self.mu = 0.0
        obj_floor, _ = (float(v) for v in problem.dual_floors())
        self.obj_floor = max(obj_floor, 1e-300)
        self.last_check, self.last_err = 0, np.inf
        if every:
            sizes = " + ".join(f"{b.N} x {b.N}" for b in problem.blocks)
            say(f"{type(problem).__name__}: {len(problem.blocks)} SoS blocks, B of sizes "
                f"{sizes}, {problem.n} loss variables; tol {tol:g}, max_iter {max_iter}")

    def iterate(self, state, it):
        problem, neg = self.problem, self.neg
        yu, yg = state.y
        cv, gu, gg, v = problem.coupling(yu, yg)
        Bs, neg_val = neg(neg.shifted(problem.split(yg)))
        FB = problem.join(neg.evaluate(Bs))
        fy = cv + neg_val
        gG = gg - FB
        eta = state.eta
        while True:
            un, Gn = problem.prox(yu - eta * gu, yg - eta * gG, eta)
            du, dG = un - yu, Gn - yg
            fn = problem.coupling_value(un, Gn) + neg.value(neg.shifted(problem.split(Gn)))
            quad = fy + float(gu @ du) + float(gG @ dG) + (
                float(du @ du) + float(dG @ dG)) / (2 * eta)
            if eta <= self.eta_min or fn <= quad:
                break
            eta = max(0.5 * eta, self.eta_min)
        state.eta = eta
        beta_prox = problem.prox_offset(eta)

        def take_step():
            state.eta = 2.0 * eta
            return Step(x=(un, Gn), mapping=None, length=eta)

        since = it - self.last_check
        if not (since >= self.check_every or (self.last_err <= 10 * self.tol and since >= 5)
                or it == self.max_iter or it == 1):
            return None, take_step
        self.last_check = it
        Dn = fn + problem.conjugate_value(un)
        best = None
        # two offsets beta: the Lagrangian's minimizer, the prox multiplier's (the better)
        for beta in (None, beta_prox) if beta_prox is not None else (None,):
            w_, z_ = problem.primal_point(v, un, beta)
            P_ = problem.primal_value(w_, z_, Bs)
            gap_ = (P_ + Dn) / max(abs(P_), abs(Dn), self.obj_floor)
            res_ = problem.residual_parts(w_, FB)
            if best is None or max(abs(gap_), res_) < best[0]:
                best = (max(abs(gap_), res_), w_, P_, gap_, res_)
        err, w, P, gap, res = best
        self.last_err = err
        if state.history is not None:
            state.history["residual"].append(res)
            state.history["gap"].append((it, gap))
        log = None
        if self.every and (it % self.every < self.check_every or it == 1 or err <= self.tol):
            log = (f"iter {it:6d}  rel. gap {gap:.3e}  rel. residual {res:.3e}  primal "
                   f"{P:.10g}  step*L {eta * self.L:.3g}  {time.perf_counter() - self.t0:.1f} s")
        cert = Certificate(
            err=err, point=tuple(problem.recover_blocks(Gn)), B=Bs, primal=P, dual=-Dn,
            message=(f"relative duality gap {gap:.3e} and relative constraint residual "
                     f"{res:.3e} <= tol {self.tol:g}"),
            extras={"u": un, "w": w, "residual": res}, log=log)
        return cert, take_step
