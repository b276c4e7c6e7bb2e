r"""Quasi-Newton steps for small negative-part duals: L-BFGS-B in the metric of the
generalized Hessian.

The dual of :mod:`psdsos.solvers._dual` (one SoS block, q smooth),

.. math::

    D(\Gamma) = q(\Gamma) + \frac{1}{2\lambda_2}\|[S]_-\|_F^2, \qquad
    S = \mathcal A^*(\Gamma) + \lambda_1 I = \sum_j \Psi_j\Gamma_j\Psi_j^T + \lambda_1 I,

is convex and :math:`C^1` with a Lipschitz but only semismooth gradient
:math:`\nabla D = \nabla q - \mathcal A(\lambda_2^{-1}[S]_-)`.  Its generalized Hessian
(Clarke) at :math:`\Gamma` contains

.. math::

    \mathbf H = \nabla^2 q + \frac{1}{\lambda_2}\mathcal A\,\mathcal J_S\,\mathcal A^*,
    \qquad \mathcal J_S(X) = \mathbf Q(\Omega\circ\mathbf Q^T X\mathbf Q)\mathbf Q^T,

with :math:`S = \mathbf Q\operatorname{diag}(w)\mathbf Q^T` and :math:`\Omega_{kl} = 1` when
:math:`w_k, w_l \le 0`, :math:`0` when both are :math:`> 0`, and
:math:`w_k / (w_k - w_l)` when :math:`w_k \le 0 < w_l` (the derivative of the projection
onto the negative semidefinite cone; Sun and Sun, Math. Oper. Res. 27, 2002; Zhao, Sun
and Toh, SIAM J. Optim. 20, 2010).  Where the PSD constraint is strongly active the
curvature of the negative part (up to :math:`\lambda_{\max}(\mathbf K_\Phi\circ
\mathbf K_\Phi)/\lambda_2`) and that of q (n for PSD least squares) differ by many orders
of magnitude (:math:`10^8` for 50 points at :math:`\lambda_2 = 10^{-8}`) in directions
that change from point to point with the active set:
an accelerated gradient method in any fixed metric then needs thousands of iterations at
small :math:`\lambda_2`, a Newton-type method a few.

Here :math:`\mathbf H` is formed densely in orthonormal coordinates of the symmetric
matrices (:func:`symmetric_basis`: p = d(d+1)/2 per point, dual dimension m p), which
pays while m p is a few hundred (``AUTO_MAX_DIM``), and used as a *metric*:

1. a Newton step :math:`-\mathbf H^{-1}\nabla D` with backtracking (Armijo; where the
   predicted decrease is below the rounding of D, accepted when the certified gap
   decreases, and then the next step is taken in the same metric);
2. then scipy's L-BFGS-B (``scipy.optimize.minimize``) on
   :math:`z = \mathbf L^T(\Gamma - \Gamma_c)/s` (:math:`\mathbf H = \mathbf L\mathbf L^T`,
   s the length of the step just taken, so that its first trial step is that step), for
   at most ``_CYCLE`` evaluations (``_METRIC_CYCLE`` in a metric given by the caller,
   ended sooner when the certified gap does not drop tenfold every ``_PATIENCE``
   evaluations);
3. a new :math:`\mathbf H` at the point of lowest D, and again; a new Hessian that
   brings no progress (rounding) ends the solve, not converged.

A caller may pass the first metric (``metric``): e.g. the Hessian of a nearby problem,
as :class:`psdsos.PSDRegressorCV` does for the folds (the full-data Hessian restricted to
the fold's points).  Every evaluation computes the relative duality gap of
:func:`psdsos.solvers.solve_dual` from the same eigendecomposition, and the solver stops
at the first point whose gap is at most ``tol``: the certificate does not depend on the
metric, which only decides how fast it is reached.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize

from psdsos.solvers._apg import DualResult, report_end, say
from psdsos.solvers._blocks import ProblemView, coupled_residual
from psdsos.solvers._dual_hessian import (
    _PRUNE,
    _cholesky,
    _curvature_of_q,
    _hessian_from_eig,
    symmetric_basis,
)
from psdsos.sos import sos_adjoint, sos_evaluate

__all__ = ["AUTO_MAX_DIM", "AUTO_MIN_CONDITION", "MAX_DIM", "solve_dual_lbfgs"]

#: ``method="auto"`` of :func:`psdsos.solvers.solve_dual` takes these quasi-Newton steps up
#: to this dual dimension m d (d + 1) / 2 (100 points of 3 x 3 matrices); a Hessian then
#: costs about 0.05 s (m p = 300) to 0.5 s (600) on one core.
AUTO_MAX_DIM = 600
#: ... and from this conditioning lambda_max(K_Phi o K_Phi) / (mu lam2) of the dual on (in
#: the metric of the accelerated method: below it, that method needs a few dozen iterations
#: and a Hessian costs more than it saves; 50 points of 3 x 3 matrices: lam2 <~ 1e-3).
AUTO_MIN_CONDITION = 300.0
#: ``method="lbfgs"`` refuses larger dual dimensions (a dense Hessian of 8 dim^2 bytes, formed
#: in O(dim^2 (r d)^2 / 4) operations).
MAX_DIM = 4000
#: L-BFGS-B evaluations between two Hessians: a Hessian of 50 points of 3 x 3 matrices
#: costs about as much as 20 evaluations (eigendecompositions of size 150).
_CYCLE = 15
#: The same with a metric given by the caller (no Hessian computed yet: evaluations are
#: the cheaper way to correct it).
_METRIC_CYCLE = 40
#: In the caller's metric, the certified gap must drop tenfold every this many evaluations
#: (else a Hessian at the current point).
_PATIENCE = 10
#: Regularization tau = _LM_KAPPA ||grad D|| of the Newton steps for coupled duals, and
#: their largest number of step halvings.
_LM_KAPPA = 0.1
_LM_HALVINGS = 30
_LM_PATIENCE = 200
_LM_PRUNE = 0.1
#: L-BFGS-B memory.
_MAXCOR = 10


class _Stop(Exception):
    """Raised inside the evaluations: converged or out of budget (caught by the solver)."""


class _Evaluations:
    """D, its gradient and the certificate at a point (one eigendecomposition per SoS
    block), with the bookkeeping: the best certified point, the point of lowest D, the last
    point, the budget.  The point x is the blocks' symmetric coordinates one after the
    other."""

    def __init__(self, problem: Any, view: ProblemView, caps: Any, *, tol: float,
                 max_iter: int, every: int, t0: float, history: bool) -> None:
        self.problem, self.view = problem, view
        self.blocks = view.blocks
        self.Es = [symmetric_basis(b.d) for b in self.blocks]
        self.shapes = [(b.m, int(b.d)) for b in self.blocks]
        self.shifts = [b.lam1 * np.eye(b.N) for b in self.blocks]
        self.offsets = [0]
        for (m, _), E in zip(self.shapes, self.Es, strict=True):
            self.offsets.append(self.offsets[-1] + m * len(E))
        self.dim = self.offsets[-1]
        self.tol, self.max_iter, self.every, self.t0 = tol, max_iter, every, t0
        self.obj_floor, self.res_floor = 1e-300, 0.0
        if caps.dual_floors is not None:
            obj_floor, self.res_floor = (float(v) for v in caps.dual_floors())
            self.obj_floor = max(obj_floor, 1e-300)
        # coupling constraints (convex regression): the primal point recovered from G
        # satisfies them only at the optimum, so the certificate also needs the relative
        # residual (as in the accelerated method)
        self.coupled = bool(caps.coupled)
        if self.coupled:
            self.res_floor = view.residual_floor(self.res_floor)
        self.count = 0
        self.best: dict[str, Any] = {}
        self.low: dict[str, Any] = {}
        self.last: dict[str, Any] = {}
        self.history: dict[str, list] | None = {"gap": [], "dual": []} if history else None
        self.converged = False
        self.n_hessian = 0

    def matrices(self, x: np.ndarray) -> list[np.ndarray]:
        """The blocks' matrices (m_k, d_k, d_k) of the coordinates x."""
        o = self.offsets
        return [np.einsum("jt,tab->jab", x[o[k]:o[k + 1]].reshape(m, -1), E)
                for k, ((m, _), E) in enumerate(zip(self.shapes, self.Es, strict=True))]

    def coords(self, flat: np.ndarray) -> np.ndarray:
        """The coordinates of the view's flat vector of the blocks' matrices."""
        parts = self.view.layout.split(np.asarray(flat, dtype=np.float64).reshape(-1))
        return np.concatenate([
            np.einsum("jab,tab->jt", G.reshape(m, d, d), E).reshape(-1)
            for G, (m, d), E in zip(parts, self.shapes, self.Es, strict=True)])

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        if self.count >= self.max_iter:
            raise _Stop
        self.count += 1
        Gs = self.matrices(x)
        ws, Qs, Bs, FBs = [], [], [], []
        negterm = 0.0
        for b, G, shift in zip(self.blocks, Gs, self.shifts, strict=True):
            w, Q = np.linalg.eigh(sos_adjoint(b.Phi, G) + shift)
            neg = w < 0
            Qn = Q[:, neg]
            B = (Qn * (-w[neg])) @ Qn.T / b.lam2
            B = 0.5 * (B + B.T)
            ws.append(w)
            Qs.append(Q)
            Bs.append(B)
            FBs.append(sos_evaluate(b.Phi, B, b.d))
            negterm += float(np.sum(w[neg] ** 2)) / (2.0 * b.lam2)
        flat = self.view.layout.join(Gs)
        q, gq = self.view.smooth(flat)
        D = float(q) + negterm
        FB = self.view.layout.join(FBs)
        P = float(self.view.primal_objective(flat, Bs, FBs))
        gap = (P + D) / max(abs(P), abs(D), self.obj_floor)
        grad = gq - FB
        g = self.coords(grad)
        true_gap = gap
        if self.coupled:
            res = coupled_residual(grad, gq, FB, self.res_floor)
            # the certificate: the gap and the residual both <= tol ("gap" below)
            gap = max(abs(gap), res)
        if self.history is not None:
            self.history["gap"].append(gap)
            self.history["dual"].append(-D)
        # scale: the size of the terms of D (its rounding error is about eps times it)
        self.last = {"x": x.copy(), "D": D, "g": g, "gap": gap, "w": ws, "Q": Qs,
                     "scale": abs(float(q)) + negterm}
        if not self.best or gap < self.best["gap"]:
            G_out, B_out = self.view.result(flat, Bs)
            self.best = {"gap": gap, "G": G_out, "B": B_out, "P": P, "D": D,
                         "true_gap": true_gap}
        if not self.low or D < self.low["D"]:
            self.low = self.last
        if self.every and (self.count % self.every == 0 or self.count == 1):
            say(f"iter {self.count:6d}  rel. gap {gap:.3e}  primal {P:.10g}  "
                f"hessians {self.n_hessian}  {time.perf_counter() - self.t0:.1f} s")
        if gap <= self.tol:
            self.converged = True
            raise _Stop
        return D, g


class _Slow(Exception):
    """Raised inside a cycle whose certified gap decreases too slowly: a new metric."""


def _lbfgs_cycle(ev: _Evaluations, cur: dict[str, Any], L: np.ndarray, cycle: int,
                 patience: int, step: float) -> None:
    """scipy's L-BFGS-B from cur["x"] in the metric L L^T, at most ``cycle`` evaluations,
    and ended sooner when every ``patience`` evaluations the best certified gap has not
    dropped tenfold (a metric that no longer describes D: a new Hessian pays more);
    variables z = L^T (x - x_c) / s with s ``step`` times the length of the Newton step in
    the metric, so that the first trial step (of length 1 in z) is that step."""
    xc, Dc, gc = cur["x"], cur["D"], cur["g"]
    gz0 = sla.solve_triangular(L, gc, lower=True, check_finite=False)
    s = step * float(np.linalg.norm(gz0))
    if not s > 0:
        return

    start, mark = ev.count, [ev.best["gap"]]

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        if not z.any():  # the starting point, already evaluated
            return Dc, s * gz0
        done = ev.count - start
        if done and done % patience == 0:
            if ev.best["gap"] > 0.1 * mark[0]:
                raise _Slow
            mark[0] = ev.best["gap"]
        xx = xc + s * sla.solve_triangular(L, z, lower=True, trans="T", check_finite=False)
        Dz, gx = ev(xx)
        return Dz, s * sla.solve_triangular(L, gx, lower=True, check_finite=False)

    try:
        minimize(fun, np.zeros(len(xc)), jac=True, method="L-BFGS-B",
                 options={"maxcor": _MAXCOR, "ftol": 0.0, "gtol": 0.0, "maxfun": cycle,
                          "maxiter": cycle})
    except _Slow:
        pass


def solve_dual_lbfgs(problem: Any, view: ProblemView, caps: Any, *, tol: float,
                     max_iter: int, init: Any, metric: np.ndarray | None,
                     verbose: bool | int, history: bool, stacklevel: int = 2) -> DualResult:
    """The quasi-Newton method of the module docstring (called by
    :func:`psdsos.solvers.solve_dual` with ``method="lbfgs"``; arguments as there).

    ``max_iter`` counts evaluations (eigendecompositions of S, as the gradient steps of
    the accelerated method); the Hessians (``n_hessian`` of the result) come on top.
    """
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    ev = _Evaluations(problem, view, caps, tol=tol, max_iter=max_iter, every=every, t0=t0,
                      history=history)
    dim = ev.dim
    what = " + ".join(f"{m} points of size {d}" for m, d in ev.shapes)
    if dim > MAX_DIM:
        raise ValueError(f"method='lbfgs' forms dense Hessians of the dual dimension m d (d + 1) "
                         f"/ 2 = {dim} > {MAX_DIM} ({what}); use method='apg'")
    mu, U = _curvature_of_q(problem, caps, ev.shapes, ev.Es)
    if metric is not None:
        metric = np.asarray(metric, dtype=np.float64)
        if metric.shape != (dim, dim) or not np.all(np.isfinite(metric)):
            raise ValueError(f"metric must be a finite ({dim}, {dim}) matrix (the dual "
                             f"dimension m d (d + 1) / 2 of {what}), got "
                             f"shape {metric.shape}")
    if every:
        sizes = " + ".join(f"{m} blocks of size {d} x {d}" for m, d in ev.shapes)
        Bs = " + ".join(str(b.N) for b in ev.blocks)
        say(f"{type(problem).__name__}: {sizes}, dual dimension {dim}, B of size {Bs}; "
            f"quasi-Newton (L-BFGS-B in the metric of the generalized Hessian); tol {tol:g}, "
            f"max_iter {max_iter}")
    setup_time = time.perf_counter() - t0
    x0 = np.zeros(dim) if init is None else ev.coords(view.from_init(init))
    stalled = False

    def hessian(cur: dict[str, Any], floor: float = 0.0) -> np.ndarray:
        ev.n_hessian += 1
        H = np.zeros((dim, dim))
        o = ev.offsets
        for k, b in enumerate(ev.blocks):
            H[o[k]:o[k + 1], o[k]:o[k + 1]] = _hessian_from_eig(
                b.Phi, int(b.d), b.lam2, cur["w"][k], cur["Q"][k], ev.Es[k], _PRUNE,
                max(_PRUNE * max(mu, 0.0), floor))
        # mu = 0: a relative floor keeps H definite where D is flat
        H[np.diag_indices_from(H)] += mu if mu > 0 else 1e-12 * max(
            1.0, float(np.max(np.diag(H))))
        if U is not None:
            H += U @ U.T
        return H

    if ev.coupled and metric is None:
        stalled = _regularized_newton(ev, x0, hessian)
        return _result(ev, stalled, tol, max_iter, t0, every, setup_time, stacklevel)
    try:
        ev(x0)
        cur = ev.last
        H = metric
        fresh = False  # H computed at the current point
        while True:
            if H is None:
                H, fresh = hessian(cur), True
            if H is metric:
                try:
                    L = sla.cholesky(H, lower=True, check_finite=False)
                except np.linalg.LinAlgError as exc:
                    raise ValueError("metric must be symmetric positive definite") from exc
            else:
                L = _cholesky(H)
            low0, best0 = ev.low["D"], ev.best["gap"]
            # 1. the Newton step in the metric, backtracking; where its predicted decrease
            # is below the rounding of D, accepted when the certified gap decreases
            x, D, g = cur["x"], cur["D"], cur["g"]
            dx = -sla.cho_solve((L, True), g, check_finite=False)
            dec = -float(g @ dx)
            rounding = dec <= 1e-10 * cur["scale"]
            for k in range(8):
                t = 0.5**k
                D1, _g1 = ev(x + t * dx)
                if D1 <= D - 1e-4 * t * dec or (rounding and ev.last["gap"] < cur["gap"]):
                    cur = ev.last
                    break
            if not rounding:
                # 2. L-BFGS-B in the metric, from there; its first trial as long as the
                # step last tried (the Newton step where it was accepted at once)
                if H is metric:
                    _lbfgs_cycle(ev, cur, L, _METRIC_CYCLE, _PATIENCE, t)
                else:
                    _lbfgs_cycle(ev, cur, L, _CYCLE, _CYCLE, t)
                if ev.low["D"] < cur["D"]:
                    cur = ev.low
            progress = ev.low["D"] < low0 or ev.best["gap"] < best0
            if not progress and fresh:
                stalled = True  # a Hessian at the point and no progress: rounding
                raise _Stop
            # 3. a new metric at the current point (kept while the steps are in the
            # rounding regime and make progress)
            if not (rounding and progress):
                H, fresh = None, False
            else:
                fresh = False
    except _Stop:
        pass
    return _result(ev, stalled, tol, max_iter, t0, every, setup_time, stacklevel)


def _result(ev: _Evaluations, stalled: bool, tol: float, max_iter: int, t0: float,
            every: int, setup_time: float, stacklevel: int) -> DualResult:
    best = ev.best
    converged = ev.converged
    what = "relative duality gap and residual" if ev.coupled else "relative duality gap"
    if converged:
        message = f"{what} {best['gap']:.3e} <= tol {tol:g}"
    elif stalled:
        message = (f"no further progress (rounding) after {ev.count} evaluations with "
                   f"{what} {best['gap']:.3e} > tol {tol:g}")
    else:
        message = (f"maximum number of iterations {max_iter} reached with {what} "
                   f"{best['gap']:.3e} > tol {tol:g}")
    report_end(converged, message, f"{ev.count} iterations ({ev.n_hessian} Hessians)", t0,
               every, " (quasi-Newton)", stacklevel + 2)
    return DualResult(
        G=best["G"], B=best["B"], primal_objective=best["P"], dual_objective=-best["D"],
        dual_gap=best["true_gap"], n_iter=ev.count, converged=converged, message=message,
        step_size=1.0, time=time.perf_counter() - t0, history=ev.history,
        setup_time=setup_time, n_hessian=ev.n_hessian, method="lbfgs",
    )


def _regularized_newton(ev: _Evaluations, x0: np.ndarray, hessian: Any) -> bool:
    r"""Regularized semismooth Newton steps for a coupled dual (convex regression).

    There q's curvature has the rank of the expansion (a few dozen) while the dual has
    m d (d + 1) / 2 coordinates, and D is nearly flat in the directions where neither q
    nor the active negative part acts: the minimizers are not isolated (the multipliers of
    the Hessian constraints need not be unique), and a quasi-Newton model in a nearly
    singular metric takes wild steps.  Each step here solves
    :math:`(\mathbf H + \tau\mathbf I)\,\delta = -\nabla D` with
    :math:`\tau = \kappa\|\nabla D\|` (a Levenberg-Marquardt regularization: fast local
    convergence without isolated solutions under an error bound, Li, Fukushima, Qi and
    Yamashita, Comput. Optim. Appl. 26, 2003), with Armijo backtracking on D.  Returns
    True when a step finds no decrease (rounding).
    """
    try:
        ev(x0)
        cur = ev.last
        mark, mark_err = ev.count, ev.best["gap"]
        while True:
            if ev.count - mark >= _LM_PATIENCE:
                # the certified error must halve every _LM_PATIENCE evaluations: slower
                # progress is the drift towards a minimizer at infinity (flat directions)
                if ev.best["gap"] > 0.5 * mark_err:
                    return True
                mark, mark_err = ev.count, ev.best["gap"]
            g = cur["g"]
            tau = _LM_KAPPA * float(np.linalg.norm(g))
            # terms of the Hessian bounded in sum by a fraction of tau are left out: the
            # regularization dominates them
            H = hessian(cur, _LM_PRUNE * tau)
            H[np.diag_indices_from(H)] += tau
            L = _cholesky(H)
            dx = -sla.cho_solve((L, True), g, check_finite=False)
            dec = -float(g @ dx)
            t = 1.0
            for _ in range(_LM_HALVINGS):
                D1, _g1 = ev(cur["x"] + t * dx)
                if D1 <= cur["D"] - 1e-4 * t * dec:
                    break
                t *= 0.5
            else:
                return True
            cur = ev.last
    except _Stop:
        return False
