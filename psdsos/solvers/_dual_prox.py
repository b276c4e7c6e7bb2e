r"""Accelerated proximal gradient on the dual of PSD regression with a non-smooth loss.

:math:`D = f + h`, f the smooth part (``problem.smooth`` plus the negative-part term), h =
``problem.nonsmooth_value`` with ``problem.prox(V, step)`` the prox of step * h (Theorem 3,
eq. 10 with q = sum_i l_i^*).  The loop, momentum and restart are those of
:mod:`psdsos.solvers._apg`; the certificate is the relative duality gap between B(Y) (PSD)
and the prox output (in the domain of h): P(B(y)) >= P* >= -D(x_next).

With ``qset = (M, c, project)`` (h_i(G) = <G_i, M_i> + |G_i|^2 / (2 c_i) on c_i C, the Huber
losses), the steps are taken in the metric of the curvature bound of f,
:math:`\mathbf H = (\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I / \lambda_2`: each step
minimizes the model h + <grad f(Y), . - Y> + |. - Y|_H^2 / 2 exactly as the least-squares
path's preconditioned step does, over the sets, by :class:`_MetricProx`.  Otherwise the
steps are Euclidean, of length 1/L (always a descent step: grad f is L-Lipschitz; probing
longer steps cost more time than it saved iterations).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from psdsos.problems._base import DualBlock
from psdsos.solvers._apg import APGState, Certificate, DualResult, Step, run_apg, say
from psdsos.solvers._blocks import NegativePartTerm
from psdsos.solvers._precond import DualPreconditioner
from psdsos.solvers._protocol import DualCapabilities, dual_capabilities

__all__ = ["solve_dual_prox"]

#: The duality gap needs the eigenvalues at the prox output: it is evaluated every this
#: many iterations.
_GAP_EVERY = 4


def solve_dual_prox(problem: Any, *, tol: float, max_iter: int, init: np.ndarray | None,
                    step_size: float | None, verbose: bool | int, history: bool,
                    qset: tuple[Any, Any, Any] | None = None,
                    caps: DualCapabilities | None = None) -> DualResult:
    """Accelerated proximal gradient on D = f + h (module docstring); arguments as
    :func:`psdsos.solvers.solve_dual`, ``qset`` the Huber sets for metric steps."""
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    caps = dual_capabilities(problem) if caps is None else caps
    method = _ProxSteps(problem, caps, step_size=step_size, qset=qset, tol=tol, max_iter=max_iter,
                        every=every, t0=t0)
    m, d = method.block.m, method.block.d
    x0 = np.zeros((m, d, d)) if init is None else np.array(
        init, dtype=np.float64).reshape(m, d, d)
    x = problem.prox(0.5 * (x0 + x0.transpose(0, 2, 1)), 0.0)  # into the domain of h
    state = APGState(x=x, y=x, eta=method.eta0,
                     history={"gap": [], "dual": [], "step": []} if history else None)
    return run_apg(method, state, tol=tol, max_iter=max_iter, every=every, t0=t0,
                   stacklevel=3)


class _ProxSteps:
    """Proximal gradient steps for :func:`run_apg`; the gap every ``_GAP_EVERY``
    iterations and at the last."""

    label = ""
    err_name = "relative duality gap"

    def __init__(self, problem, caps, *, step_size, qset, tol, max_iter, every, t0):
        self.problem, self.tol, self.max_iter, self.every, self.t0 = (
            problem, tol, max_iter, every, t0)
        self.block = blk = DualBlock(problem.Phi, int(problem.d), float(problem.lam1),
                                     float(problem.lam2))
        if every:
            N = blk.N
            say(f"{type(problem).__name__} (proximal steps): {blk.m} blocks of size {blk.d} x "
                f"{blk.d}, B of size {N} x {N}; tol {tol:g}, max_iter {max_iter}")
        self.neg = NegativePartTerm([blk])
        L = float(problem.smooth_lipschitz()) + self.neg.lipschitz()
        self.eta_min = 1.0 / L if step_size is None else float(step_size)
        self.eta0 = self.eta_min
        mu = float(problem.strong_convexity())
        self.obj_floor = 1e-300
        floors = caps.dual_floors
        if floors is not None:
            self.obj_floor = max(float(floors()[0]), 1e-300)
        self.metric = None
        if qset is not None:
            self.metric = _MetricProx(blk.Phi, blk.d, blk.lam2, *qset)
            # momentum from the strong convexity of D in the metric of mu I + H (as the
            # least-squares path)
            mu = mu / (mu + self.metric.h_max) if mu > 0 else 0.0
            self.eta_min = 1.0
        self.mu = mu

    def iterate(self, state, it):
        problem, neg, y = self.problem, self.neg, state.y
        Bs = neg(neg.shifted([y]))[0]
        FB = neg.evaluate(Bs)[0]
        grad = problem.smooth(y)[1] - FB
        P = problem.primal_objective(y, Bs[0], FB)
        if self.metric is None:
            xn = problem.prox(y - self.eta_min * grad, self.eta_min)
        else:
            xn = self.metric.step(y, grad, inner_tol=1e-3 * self.tol * max(abs(P),
                                                                          self.obj_floor))
        step = Step(x=xn, mapping=None, length=self.eta_min)
        if it % _GAP_EVERY and it < self.max_iter:
            return None, lambda: step
        Dx = (problem.smooth_value(xn) + neg.value(neg.shifted([xn]))
              + float(problem.nonsmooth_value(xn)))
        gap = (P + Dx) / max(abs(P), abs(Dx), self.obj_floor)
        if state.history is not None:
            state.history["gap"].append(gap)
            state.history["dual"].append(-Dx)
            state.history["step"].append(1.0)
        log = None
        if self.every and (it % self.every < _GAP_EVERY or it == _GAP_EVERY):
            log = (f"iter {it:6d}  rel. gap {gap:.3e}  primal {P:.10g}  "
                   f"{time.perf_counter() - self.t0:.1f} s")
        cert = Certificate(err=gap, point=xn, B=Bs[0], primal=P, dual=-Dx,
                           message=f"relative duality gap {gap:.3e} <= tol {self.tol:g}",
                           log=log)
        return cert, lambda: step


class _MetricProx:
    r"""Proximal steps in the metric H = U U^T + t I, U = V diag(sqrt(s / lam2)) (x) I, of
    the curvature bound of the negative-part term, for h_i(G) = <G_i, M_i> + |G_i|^2/(2 c_i)
    + indicator(G_i in c_i C) (t = c / lam2 > 0 only when the preconditioner bounds part of
    the Hadamard square by c I; the projection below then takes the minimizer of
    h_i + <a_i, .> + t |. - Y_i|^2 / 2, still one scaled projection per sample).

    The step solves :math:`\min_X h(X) + \langle g, X - Y\rangle + \frac12\|U^T(X - Y)\|^2`
    through its dual in u (one row per eigenvector of K_Phi o K_Phi):
    :math:`\frac12\|U^T Z\|^2 = \max_u \langle u, U^T Z\rangle - \frac12\|u\|^2`, and for
    fixed u the minimization over X is separable, a projection per sample:
    :math:`X_i(u) = c_i\,\Pi_C(-(g + Uu)_i - M_i)`.  The dual
    :math:`\phi(u)` is concave with :math:`\nabla\phi = U^T(X(u) - Y) - u` and
    :math:`-\nabla^2\phi \preceq I + c_{\max} U^T U`, a diagonal matrix (V orthonormal): its
    inverse preconditions an accelerated ascent that is exact in one step when no projection
    is active (then the step is the least-squares path's).  The inner duality gap is
    :math:`\frac12\|\nabla\phi(u)\|^2`; X(u) is feasible for every u, so an inexact inner
    solve never breaks the outer certificate.
    """

    def __init__(self, Phi, d, lam2, M, c, project):
        pre = DualPreconditioner(Phi, d, lam2, 0.0, None)
        self.V = pre.V
        self.sq = np.sqrt(np.maximum(pre.s, 0.0) / lam2)
        # many rows: the metric is U U^T + t I, t = c / lam2 the bound on the omitted part
        # of the Hadamard square (DualPreconditioner); 0 when the factor is complete
        self.t = float(pre.tail) / lam2
        self.h_max = (float(self.sq.max() ** 2) if self.sq.size else 0.0) + self.t
        self.M, self.c, self.project = M, np.asarray(c, dtype=np.float64), project
        self.cb = self.c[:, None, None]
        self.shrink = (1.0 + self.t * self.c)[:, None, None]
        self.pinv = 1.0 / (1.0 + float(self.c.max()) * self.sq**2)
        self.m, self.d = M.shape[0], d
        self.u = np.zeros((self.V.shape[1], d * d))

    def _U(self, u):
        return (self.V @ (self.sq[:, None] * u)).reshape(self.m, self.d, self.d)

    def _Ut(self, Z):
        return self.sq[:, None] * (self.V.T @ Z.reshape(self.m, -1))

    def _x(self, g, u, Y):
        a = g + self._U(u) + self.M
        if self.t:
            # the minimizer of <G, a> + |G|^2 / (2 c_i) + t |G - Y_i|^2 / 2 over c_i C
            return self.cb * self.project(-(a - self.t * Y) / self.shrink)
        return self.cb * self.project(-a)

    def step(self, Y, g, inner_tol, max_inner=500):
        u = self.u
        z, t = u, 1.0
        x = self._x(g, u, Y)
        for _ in range(max_inner):
            xz = self._x(g, z, Y)
            grad = self._Ut(xz - Y) - z
            if 0.5 * float(np.vdot(grad, grad)) <= inner_tol:
                x, u = xz, z
                break
            un = z + self.pinv[:, None] * grad
            if float(np.vdot(un - z, un - u)) < 0:  # ascent restart
                t, zn = 1.0, un
            else:
                tn = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
                zn = un + (t - 1) / tn * (un - u)
                t = tn
            u, z = un, zn
            x = xz
        else:
            x = self._x(g, u, Y)
        self.u = u
        return 0.5 * (x + x.transpose(0, 2, 1))
