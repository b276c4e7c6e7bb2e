r"""One accelerated-gradient solver for the negative-part duals of kernel SoS problems.

Every psdsos problem whose primal is

.. math::

    \min_{\theta,\ \mathbf B \succeq 0}\ \ell(\theta) + \lambda_1 \operatorname{Tr}\mathbf B
      + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
    \quad\text{s.t.}\quad g_j(\theta) = \Psi_j^T \mathbf B \Psi_j,\ j \in [m],

has (PSD paper, Theorem 3 and Proposition 9) a dual of the form

.. math::

    \min_{\Gamma \in \mathrm{Sym}(\mathbb R^d)^m}\ D(\Gamma) = q(\Gamma)
      + \frac{1}{2\lambda_2}\big\|[\mathcal A^*(\Gamma) + \lambda_1 I]_-\big\|_F^2,
    \qquad \mathcal A^*(\Gamma) = \sum_j \Psi_j \Gamma_j \Psi_j^T,

with q smooth and convex, the primal matrix recovered as
:math:`\mathbf B(\Gamma) = \lambda_2^{-1}[\mathcal A^*(\Gamma) + \lambda_1 I]_-` and the
gradient :math:`\nabla D(\Gamma) = \nabla q(\Gamma) - \mathcal A(\mathbf B(\Gamma))`.
PSD least squares (eq. 12) and convex regression (eq. 29) are instances; see
``psdsos.sos`` for the problem objects.

The solver is an accelerated (Nesterov/FISTA) gradient method with

* steps in the metric of the curvature bound
  :math:`\mathbf P = \nabla^2 q + \lambda_2^{-1}(\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I`
  (:class:`~psdsos.solvers.DualPreconditioner`), in which grad D is 1-Lipschitz: the
  ill-conditioning of the kernel's Hadamard square no longer sets the number of
  iterations (convex regression, n = 40: 64 iterations instead of > 20,000; PSD
  regression, n = 100: 11 instead of 221);
* a backtracking step size that may grow (never below the worst-case 1/L, which is
  always accepted), so the step follows the local curvature of the negative part;
* momentum :math:`(1-\sqrt{\mu\eta})/(1+\sqrt{\mu\eta})` when q is mu-strongly convex,
  the FISTA sequence otherwise, and a gradient restart in both cases
  (O'Donoghue and Candes, 2015);
* stopping on the relative duality gap
  :math:`(P(\mathbf B(\Gamma)) - (-D(\Gamma))) / \max(|P|, |D|, P_0)`, computed at every
  iteration from the same eigendecomposition as the gradient, with an absolute floor
  :math:`P_0` from the data's scale when the problem offers one (``dual_floors``: for
  convex regression 1e-6 of the objective of the constant fit), so that an optimum at
  0 (P = D = 0) stops at once instead of comparing rounding errors;
* negative parts from partial eigendecompositions (only the smaller side of the spectrum).

Problems whose q is not smooth (losses with a non-smooth conjugate: Huber, absolute,
quantile; ``psdsos.sos.PSDLossProblem``) offer ``prox`` and ``nonsmooth_value`` instead, and
the solver runs accelerated proximal gradient on D = f + h, f the negative-part term,
h = q (Theorem 3, eq. 10 with q = sum_i l_i^*), stopping on the same relative duality gap,
here between B(Y) (PSD) and the prox output (in the domain of h).  For the Huber losses
(h = quadratic + indicators of balls or boxes) the steps are taken in the metric of the
curvature bound (K_Phi o K_Phi) kron I / lam2 through an inner dual solve (``_MetricProx``);
otherwise (``precondition=False``, absolute, quantile) they are Euclidean, of length 1/L.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos._validation import check_scalar
from psdsos.solvers._negpart import NegativePart
from psdsos.solvers._precond import DualPreconditioner
from psdsos.sos import sos_adjoint, sos_evaluate, sos_operator_norm_sq

__all__ = ["DualProblem", "DualResult", "solve_dual"]


class DualProblem:
    """What :func:`solve_dual` needs from a problem (subclass and fill in).

    Attributes
    ----------
    Phi : ndarray (m, r)
        Scalar features of the m constraint / evaluation points (Psi_j = phi_j kron I_d).
    d : int
        Size of the matrices Gamma_j.
    lam1, lam2 : float
        Trace and Frobenius weights; lam2 must be > 0 for the dual.
    """

    Phi: np.ndarray
    d: int
    lam1: float
    lam2: float

    #: True when the primal point recovered from G satisfies the coupling constraints
    #: g(theta) = A(B) only at the optimum (convex regression); the solver then also
    #: requires the relative residual ||grad D|| / max(||grad q||, ||A(B)||) <= tol.
    coupled = False

    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """Return (q(G), grad q(G)) for G of shape (m, d, d)."""
        raise NotImplementedError

    def smooth_value(self, G: np.ndarray) -> float:
        """q(G) alone (line search); defaults to ``smooth(G)[0]``."""
        return self.smooth(G)[0]

    def smooth_lipschitz(self) -> float:
        """An upper bound on the Lipschitz constant of grad q."""
        raise NotImplementedError

    def strong_convexity(self) -> float:
        """Strong convexity modulus mu of q (0 if not strongly convex)."""
        return 0.0

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        """Primal objective at the primal point recovered from (G, B); FB = A(B)."""
        raise NotImplementedError


@dataclass
class DualResult:
    """Outcome of :func:`solve_dual`.

    Attributes
    ----------
    G : ndarray (m, d, d)
        Dual variable Gamma at the returned point.
    B : ndarray (r d, r d)
        Primal PSD matrix recovered from G.
    primal_objective, dual_objective : float
        P(B) and -D(G) (the dual is a maximization; P >= -D always).
    dual_gap : float
        Relative duality gap ``(P + D) / max(|P|, |D|, P_0)`` at the returned point (for
        coupled problems, the larger of ``|gap|`` and the relative constraint residual).
    n_iter : int
        Gradient evaluations (one eigendecomposition with vectors each).
    converged : bool
    message : str
        Readable stopping reason.
    step_size : float
        Last accepted step (reuse it to warm start).
    time : float
        Wall-clock seconds (all of it).
    setup_time : float
        Of which before the first iteration (constants, preconditioner).
    history : dict or None
        Per-iteration ``gap`` and ``dual`` when requested.
    """

    G: np.ndarray
    B: np.ndarray
    primal_objective: float
    dual_objective: float
    dual_gap: float
    n_iter: int
    converged: bool
    message: str
    step_size: float
    time: float
    history: dict | None = field(default=None, repr=False)
    setup_time: float = 0.0


def solve_dual(problem: Any, *, tol: float = 1e-7, max_iter: int = 10000,
               init: np.ndarray | None = None, step_size: float | None = None,
               precondition: bool = True, verbose: bool | int = False,
               history: bool = False) -> DualResult:
    r"""Minimize the negative-part dual :math:`D(\Gamma)` defined in the module docstring.

    Parameters
    ----------
    problem : DualProblem
    tol : float
        Stop when the relative duality gap is at most ``tol``; the returned B is then
        ``tol``-optimal for the primal in relative objective value.
    max_iter : int
        Maximum number of gradient evaluations; reaching it raises a
        ``ConvergenceWarning`` (increase ``max_iter`` or ``tol``).
    init : ndarray (m, d, d), optional
        Warm start for Gamma (symmetrized).  Zeros by default.
    step_size : float, optional
        Initial step; defaults to ``1/L_q`` (the smooth part's curvature), which the
        backtracking corrects.
    precondition : bool, default=True
        Take the gradient steps in the metric of the curvature bound
        :math:`\mathbf P = \nabla^2 q + \lambda_2^{-1}\mathcal A\mathcal A^*`
        (:class:`~psdsos.solvers.DualPreconditioner`), in which the Lipschitz constant is
        <= 1 whatever the conditioning of the kernel matrix.  ``False`` gives plain
        Euclidean gradient steps (the reference).  Proximal problems: True takes the steps
        in the metric of the curvature bound when the problem offers ``quadratic_set``
        (Huber losses), False (and the other losses) Euclidean proximal steps.
    verbose : bool or int
        Progress on stderr: a first line with the problem size before the setup work
        (preconditioner), then the relative gap, relative constraint residual (coupled
        problems), primal objective and elapsed time at the first iteration and every
        ``verbose`` iterations (100 if True), and the stopping reason.
    history : bool
        Record the gap and dual value per iteration.

    Returns
    -------
    DualResult

    Notes
    -----
    The gradient of D is Lipschitz with constant
    :math:`L = L_q + \|\mathcal A\|^2/\lambda_2` where
    :math:`\|\mathcal A\|^2 = \lambda_{\max}(\mathbf K_\Phi \circ \mathbf K_\Phi)`
    (for PSD least squares :math:`L_q = \mu = n`, the constants of section 3.3).
    A step of 1/L is always accepted; larger steps are accepted when
    :math:`D(y - \eta g) \le D(y) - \tfrac{\eta}{2}\|g\|^2` (the quadratic upper bound at
    the step actually taken), checked with eigenvalues only.
    """
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    max_iter = check_scalar(max_iter, "max_iter", lower=1, integer=True)
    lam1, lam2 = float(problem.lam1), float(problem.lam2)
    if not lam2 > 0:
        raise ValueError(
            "lam2 must be > 0 for the dual solver (the negative-part dual needs a strongly "
            "convex regularizer); use solver='primal' for lam2 = 0"
        )
    if getattr(problem, "prox", None) is not None:
        qset = getattr(problem, "quadratic_set", lambda: None)()
        return _solve_dual_prox(problem, tol=tol, max_iter=max_iter, init=init,
                                step_size=step_size, verbose=verbose, history=history,
                                qset=qset if precondition else None)
    Phi, d = problem.Phi, int(problem.d)
    m, r = Phi.shape
    N = r * d
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    if every:
        _say(f"{type(problem).__name__}: {m} blocks of size {d} x {d}, B of size {N} x {N} "
             f"(one eigendecomposition of size {N} per iteration); tol {tol:g}, max_iter "
             f"{max_iter}; setting up" + (" the preconditioner" if precondition else ""))

    mu = float(problem.strong_convexity())
    if precondition:
        factor = getattr(problem, "smooth_hessian_factor", None)
        U = factor() if factor is not None else None
        # the identity part of P: mu, or a larger curvature bound when grad^2 q - mu I is
        # not described by U (weighted least squares: per-sample curvatures 1 / c_i)
        shift = getattr(problem, "curvature_shift", None)
        Pinv = DualPreconditioner(Phi, d, lam2, mu if shift is None else float(shift()), U)
        # a complete factor: 10 power iterations; the split factor's P~ >= P holds by
        # construction, and each check costs two passes of the SoS maps: 3
        L = _metric_lipschitz(problem, Phi, d, lam2, Pinv, n_iter=3 if Pinv.tail else 10)
        # strong convexity of q in the metric of P: mu / lambda_max(P)
        mu = mu / Pinv.lambda_max_bound(lam2) if mu > 0 else 0.0
    else:
        Pinv = None
        L = float(problem.smooth_lipschitz()) + sos_operator_norm_sq(Phi) / lam2
    eta_min = 1.0 / L
    if step_size is not None:
        eta = float(step_size)
    elif Pinv is not None and mu > 0:
        # strongly convex q in the metric of P (PSD least squares): steps larger than 1/L
        # did not pay there (measured, n = 100 and 200, lam2 = 1e-4: same or more
        # iterations with probing, 9 vs 9 and 18 vs 14, at +25% time per iteration)
        eta = eta_min
    else:
        eta = 4.0 * eta_min
    eta = max(eta, eta_min)

    if init is None:
        x = np.zeros((m, d, d))
    else:
        x = np.array(init, dtype=np.float64).reshape(m, d, d)
        x = 0.5 * (x + x.transpose(0, 2, 1))
    coupled = bool(getattr(problem, "coupled", False))
    res_floor = 0.0
    obj_floor = 1e-300
    floors = getattr(problem, "dual_floors", None)
    if floors is not None:
        # absolute floors of the denominators from the data's own scales, so that an
        # optimum at theta = 0, B = 0 (e.g. an affine target of convex regression: P = D = 0,
        # Hessians 0) is not a 0/0 of rounding errors that never drops below tol
        obj_floor, res_floor = (float(v) for v in floors())
        obj_floor = max(obj_floor, 1e-300)
    if coupled:
        # and 1e-3 ||grad q(0)|| (for convex regression the Hessians of the unconstrained
        # ridge fit)
        g0 = problem.smooth(np.zeros((m, d, d)))[1]
        res_floor = max(res_floor, 1e-6 * float(np.vdot(g0, g0)))
    negpart, S_of = _negative_part_map(Phi, lam1, N)

    y = x
    t_fista = 1.0
    hist: dict[str, list] | None = {"gap": [], "dual": [], "step": []} if history else None
    best: Any = None
    message = ""
    converged = False
    n_iter = 0
    wait, next_probe = 1, 1  # back-off schedule for probing steps larger than 1/L
    setup_time = time.perf_counter() - t0
    if every:
        _say(f"setup {setup_time:.2f} s; iterating (a line every {every} iterations)")
    for it in range(1, max_iter + 1):
        n_iter = it
        Sy = S_of(y)  # recomputed, never updated linearly: rounding drift is amplified
        Nneg, neg_sq = negpart(Sy)
        B = Nneg / lam2
        FB = sos_evaluate(Phi, B, d)
        qy, gq = problem.smooth(y)
        Dy = qy + neg_sq / (2 * lam2)
        grad = gq - FB
        P = problem.primal_objective(y, B, FB)
        scale = max(abs(P), abs(Dy), obj_floor)
        gap = (P + Dy) / scale
        res = None
        if coupled:
            # (theta(G), B(G)) violates g(theta) = A(B) by grad D; require both small
            res = np.sqrt(float(np.vdot(grad, grad)) / max(
                float(np.vdot(gq, gq)), float(np.vdot(FB, FB)), res_floor, 1e-300))
            err = max(abs(gap), res)
        else:
            err = gap
        if best is None or err < best[0]:
            best = (err, y, B, P, -Dy)
        if hist is not None:
            hist["gap"].append(err)
            hist["dual"].append(-Dy)
            hist["step"].append(eta * L)
        if every and (it % every == 0 or it == 1):
            rtxt = "" if res is None else f"  rel. residual {res:.3e}"
            _say(f"iter {it:6d}  rel. gap {gap:.3e}{rtxt}  primal {P:.10g}  "
                 f"step*L {eta * L:.3g}  {time.perf_counter() - t0:.1f} s")
        if err <= tol:
            converged = True
            message = f"relative duality gap {gap:.3e} <= tol {tol:g}"
            if coupled:
                message += f" and relative constraint residual {res:.3e} <= tol"
            break
        # --- step: 1/L always decreases D.  A larger step eta is probed and verified with
        # eigenvalues only (about half an eigendecomposition), halving until accepted or 1/L
        # (accepted unverified).  Probing every iteration pays only when the accepted step is
        # large (>= 8/L: accelerated methods gain ~sqrt(eta L) in iterations, measured: a
        # probe costs ~0.6 of an iteration, so 4/L does not pay); otherwise it
        # pauses for `wait` iterations, doubling up to 64, so that on problems whose local
        # curvature is the global L an iteration costs one eigendecomposition.
        step = eta_min
        dirn = grad if Pinv is None else Pinv(grad)
        if eta > eta_min and it >= next_probe:
            g2 = float(np.vdot(grad, dirn))
            AG = sos_adjoint(Phi, dirn)
            while eta > eta_min:
                xn = y - eta * dirn
                fxn = problem.smooth_value(xn) + negpart.sq_norm(Sy - eta * AG) / (2 * lam2)
                # no slack: near the optimum a slack ~ rounding of D would accept any
                # step (eta ||g||^2 below it) and the iterates oscillate with steps > 2/L;
                # a step rejected by rounding only costs a fall-back to 1/L.
                if fxn <= Dy - 0.5 * eta * g2:
                    step = eta
                    break
                eta = max(0.5 * eta, eta_min)
            if step >= 8 * eta_min:
                wait = 1
            else:
                wait = min(2 * wait, 64)
            next_probe = it + wait
            eta = max(2.0 * step, 4 * eta_min)
        if step == eta_min:
            xn = y - step * dirn
        # --- momentum with gradient restart (O'Donoghue and Candes, 2015)
        if float(np.vdot(grad, xn - x)) > 0:
            t_fista = 1.0
            beta = 0.0
        elif mu > 0:
            qk = np.sqrt(min(mu * step, 1.0))
            beta = (1 - qk) / (1 + qk)
        else:
            t_new = 0.5 * (1 + np.sqrt(1 + 4 * t_fista**2))
            beta = (t_fista - 1) / t_new
            t_fista = t_new
        y = xn + beta * (xn - x)
        x = xn
    else:
        message = (f"maximum number of iterations {max_iter} reached with relative duality "
                   f"gap {best[0]:.3e} > tol {tol:g}")
    return _finish(best, converged, message, n_iter, eta, t0, hist, setup_time, every,
                   stacklevel=3)


def _solve_dual_prox(problem, *, tol, max_iter, init, step_size, verbose, history, qset=None):
    r"""Accelerated proximal gradient on :math:`D = f + h`, f the smooth part
    (``problem.smooth`` plus the negative-part term), h = ``problem.nonsmooth_value`` with
    ``problem.prox(V, step)`` the prox of step * h (see :func:`solve_dual`, Notes).

    With ``qset = (M, c, project)`` (h_i(G) = <G_i, M_i> + |G_i|^2 / (2 c_i) on c_i C, the
    Huber losses), the steps are taken in the metric of the curvature bound of f,
    :math:`\mathbf H = (\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I / \lambda_2`:
    each step minimizes the model h + <grad f(Y), . - Y> + |. - Y|_H^2 / 2 exactly as the
    least-squares path's preconditioned step does, over the sets, by :class:`_MetricProx`."""
    lam1, lam2 = float(problem.lam1), float(problem.lam2)
    Phi, d = problem.Phi, int(problem.d)
    m, r = Phi.shape
    N = r * d
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    if every:
        _say(f"{type(problem).__name__} (proximal steps): {m} blocks of size {d} x {d}, B of "
             f"size {N} x {N}; tol {tol:g}, max_iter {max_iter}")
    L = float(problem.smooth_lipschitz()) + sos_operator_norm_sq(Phi) / lam2
    eta_min = 1.0 / L if step_size is None else float(step_size)
    eta = eta_min
    mu = float(problem.strong_convexity())
    obj_floor = 1e-300
    floors = getattr(problem, "dual_floors", None)
    if floors is not None:
        obj_floor = max(float(floors()[0]), 1e-300)
    x0 = np.zeros((m, d, d)) if init is None else np.array(init, dtype=np.float64).reshape(
        m, d, d)
    x = problem.prox(0.5 * (x0 + x0.transpose(0, 2, 1)), 0.0)  # into the domain of h
    metric = None
    if qset is not None:
        metric = _MetricProx(Phi, d, lam2, *qset)
        # momentum from the strong convexity of D in the metric of mu I + H (as the
        # least-squares path)
        mu = mu / (mu + metric.h_max) if mu > 0 else 0.0
        eta_min = 1.0
    negpart, S_of = _negative_part_map(Phi, lam1, N)

    y = x
    t_fista = 1.0
    hist: dict[str, list] | None = {"gap": [], "dual": [], "step": []} if history else None
    best: Any = None
    message = ""
    converged = False
    n_iter = 0
    setup_time = time.perf_counter() - t0
    for it in range(1, max_iter + 1):
        n_iter = it
        B = negpart(S_of(y))[0] / lam2
        FB = sos_evaluate(Phi, B, d)
        grad = problem.smooth(y)[1] - FB
        P = problem.primal_objective(y, B, FB)
        # prox step of length 1/L (always a descent step: grad f is L-Lipschitz).  Probing
        # longer steps (checked with eigenvalues) cost more than it saved: measured n = 100,
        # d = 2, Huber: 143 iterations with probing against 206 without, but 1.3x the time
        if metric is None:
            xn = problem.prox(y - eta_min * grad, eta_min)
        else:
            xn = metric.step(y, grad, inner_tol=1e-3 * tol * max(abs(P), obj_floor))
        if it % _GAP_EVERY and it < max_iter:
            # the gap needs the eigenvalues at xn: checked every _GAP_EVERY iterations
            y, x, t_fista = _momentum(y, xn, x, t_fista, mu, eta_min)
            continue
        fxn = problem.smooth_value(xn) + negpart.sq_norm(S_of(xn)) / (2 * lam2)
        # the gap pairs the primal point B(y) with the dual point xn (in the domain of h):
        # P(B(y)) >= P* >= -D(xn), so it certifies both
        Dx = fxn + float(problem.nonsmooth_value(xn))
        gap = (P + Dx) / max(abs(P), abs(Dx), obj_floor)
        if best is None or gap < best[0]:
            best = (gap, xn, B, P, -Dx)
        if hist is not None:
            hist["gap"].append(gap)
            hist["dual"].append(-Dx)
            hist["step"].append(1.0)
        if every and (it % every < _GAP_EVERY or it == _GAP_EVERY):
            _say(f"iter {it:6d}  rel. gap {gap:.3e}  primal {P:.10g}  "
                 f"{time.perf_counter() - t0:.1f} s")
        if gap <= tol:
            converged = True
            message = f"relative duality gap {gap:.3e} <= tol {tol:g}"
            break
        y, x, t_fista = _momentum(y, xn, x, t_fista, mu, eta_min)
    else:
        message = (f"maximum number of iterations {max_iter} reached with relative duality "
                   f"gap {best[0]:.3e} > tol {tol:g}")
    return _finish(best, converged, message, n_iter, eta, t0, hist, setup_time, every,
                   stacklevel=4)


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


#: The proximal path evaluates its duality gap every this many iterations.
_GAP_EVERY = 4


def _finish(best, converged, message, n_iter, eta, t0, hist, setup_time, every, stacklevel):
    """The result object of both paths from the best (gap, G, B, P, D) seen; the
    ConvergenceWarning (at the caller of :func:`solve_dual`) when not converged."""
    gap, G, B, P, Dval = best
    if every:
        _say(f"{'converged' if converged else 'stopped'} after {n_iter} iterations, "
             f"{time.perf_counter() - t0:.1f} s: {message}")
    if not converged:
        warnings.warn(
            f"psdsos dual solver did not converge: {message}. Increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    return DualResult(
        G=G, B=B, primal_objective=P, dual_objective=Dval, dual_gap=gap, n_iter=n_iter,
        converged=converged, message=message, step_size=eta,
        time=time.perf_counter() - t0, history=hist, setup_time=setup_time,
    )


def _momentum(y, xn, x, t_fista, mu, eta):
    """Next extrapolated point of accelerated proximal gradient, with the gradient-mapping
    restart (O'Donoghue and Candes, 2015): returns (y, x, t).  The points are arrays or
    tuples of arrays (blocks of variables, e.g. (u, Gamma))."""
    blocks = isinstance(xn, tuple)
    ys, xns, xs = (v if blocks else (v,) for v in (y, xn, x))
    if sum(float(np.vdot(a - b, b - c)) for a, b, c in zip(ys, xns, xs, strict=True)) > 0:
        return xn, xn, 1.0
    if mu > 0:
        qk = np.sqrt(min(mu * eta, 1.0))
        beta = (1 - qk) / (1 + qk)
    else:
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t_fista**2))
        beta = (t_fista - 1) / t_new
        t_fista = t_new
    yn = tuple(b + beta * (b - c) for b, c in zip(xns, xs, strict=True))
    return (yn if blocks else yn[0]), xn, t_fista


def _negative_part_map(Phi, lam1, N):
    """(negpart, S_of): the partial negative-part eigensolver of size N and
    S(G) = A^*(G) + lam1 I, whose negative part gives B(G) = [S(G)]_- / lam2."""
    negpart = NegativePart(N)
    eye_l1 = lam1 * np.eye(N)

    def S_of(G):
        return sos_adjoint(Phi, G) + eye_l1

    return negpart, S_of


def _say(text):
    """A progress line on stderr (``verbose``)."""
    print(f"[psdsos dual] {text}", file=sys.stderr, flush=True)


def _metric_lipschitz(problem, Phi, d, lam2, Pinv, n_iter=10):
    """Lipschitz constant of grad D in the metric of P: <= 1 when P^{-1} is exact.

    Checked by power iteration on P^{-1}(grad^2 q + A A^*/lam2) (seeded), so that an
    inaccurate P^{-1} (ill-conditioned Woodbury correction) cannot make the unverified
    step 1/L too long: returns max(1, 1.05 * estimate).
    """
    m = Phi.shape[0]
    rng = np.random.default_rng(0)
    h = rng.standard_normal((m, d, d))
    h = 0.5 * (h + h.transpose(0, 2, 1))
    g0 = problem.smooth(np.zeros((m, d, d)))[1]
    est = 0.0
    for _ in range(n_iter):
        nh = np.sqrt(float(np.vdot(h, h)))
        if nh == 0:
            break
        h = h / nh
        Hh = (problem.smooth(h)[1] - g0) + Pinv.hadamard_gram(h) / lam2
        v = Pinv(Hh)
        est = np.sqrt(float(np.vdot(v, v)))
        h = v
    return max(1.0, 1.05 * est)
