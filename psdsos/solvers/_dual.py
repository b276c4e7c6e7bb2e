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
``psdsos.sos`` for the problem objects.  Several SoS blocks (one negative-part term each,
:class:`~psdsos.solvers.BlockDualProblem`) go through the same code; the interface a
problem offers is :class:`~psdsos.solvers.DualProblemProtocol`, checked once per solve.

The solver is an accelerated (Nesterov/FISTA) gradient method with

* steps in the metric of the curvature bound
  :math:`\mathbf P = \nabla^2 q + \lambda_2^{-1}(\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I`
  (:class:`~psdsos.solvers.DualPreconditioner`), in which grad D is 1-Lipschitz: the
  ill-conditioning of the kernel's Hadamard square no longer sets the number of
  iterations;
* a backtracking step size that may grow (never below the worst-case 1/L, which is
  always accepted), so the step follows the local curvature of the negative part;
* the loop, momentum and restart of :mod:`psdsos.solvers._apg` (the restart test in the
  metric of the steps: :math:`\langle\nabla D(y), x_{k+1} - x_k\rangle > 0`);
* stopping on the relative duality gap
  :math:`(P(\mathbf B(\Gamma)) - (-D(\Gamma))) / \max(|P|, |D|, P_0)`, computed at every
  iteration from the same eigendecomposition as the gradient, with an absolute floor
  :math:`P_0` from the data's scale when the problem offers one (``dual_floors``: for
  convex regression 1e-6 of the objective of the constant fit), so that an optimum at
  0 (P = D = 0) stops at once instead of comparing rounding errors;
* negative parts from partial eigendecompositions (only the smaller side of the spectrum).

At small :math:`\lambda_2` the curvature of D differs by many orders of magnitude between
directions that change with the active set of the negative part, and the accelerated
method needs thousands of iterations in any fixed metric.  For one block with a smooth q,
``method="lbfgs"`` takes quasi-Newton steps instead (scipy's L-BFGS-B in the metric of the
generalized Hessian of D, formed densely and refreshed: :mod:`psdsos.solvers._dual_newton`),
with the same certificate; ``method="auto"`` (PSDRegressor's) chooses it for small, badly
conditioned PSD least squares.

Problems whose q is not smooth (losses with a non-smooth conjugate: Huber, absolute,
quantile; ``psdsos.problems.PSDLossProblem``) offer ``prox`` and ``nonsmooth_value`` instead, and
the solver runs accelerated proximal gradient on D = f + h, f the negative-part term,
h = q (Theorem 3, eq. 10 with q = sum_i l_i^*), stopping on the same relative duality gap,
here between B(Y) (PSD) and the prox output (in the domain of h).  For the Huber losses
(h = quadratic + indicators of balls or boxes) the steps are taken in the metric of the
curvature bound (K_Phi o K_Phi) kron I / lam2 through an inner dual solve (``_MetricProx``);
otherwise (``precondition=False``, absolute, quantile) they are Euclidean, of length 1/L
(``psdsos.solvers._dual_prox``).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos._validation import check_scalar
from psdsos.solvers._apg import APGState, Certificate, DualResult, Step, run_apg, say
from psdsos.solvers._blocks import NegativePartTerm, ProblemView, coupled_residual
from psdsos.solvers._dual_newton import AUTO_MAX_DIM, AUTO_MIN_CONDITION, solve_dual_lbfgs
from psdsos.solvers._dual_prox import solve_dual_prox
from psdsos.solvers._precond import DENSE_BLOCKS_MAX, BlockPreconditioner, DualPreconditioner
from psdsos.solvers._protocol import dual_capabilities
from psdsos.sos import sos_operator_norm_sq

__all__ = ["DualResult", "solve_dual"]


def solve_dual(problem: Any, *, tol: float = 1e-7, max_iter: int = 10000,
               init: np.ndarray | list[np.ndarray] | None = None,
               step_size: float | None = None,
               precondition: bool = True, verbose: bool | int = False,
               history: bool = False, method: str | None = None,
               metric: np.ndarray | None = None) -> DualResult:
    r"""Minimize the negative-part dual :math:`D(\Gamma)` defined in the module docstring.

    Parameters
    ----------
    problem : DualProblem or BlockDualProblem
        One SoS block (``Phi``, ``d``, ``lam1``, ``lam2``), or several (``blocks``: the
        negative-part term summed over them, one eigendecomposition per block; then ``G``
        and ``B`` of the result are a tuple and a list over the blocks, and the steps are
        Euclidean: the preconditioner is for one block).
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
    method : {"apg", "lbfgs", "auto"} or None, default=None
        None: ``"lbfgs"`` when a ``metric`` is given, else ``"apg"``.
        ``"apg"``: the accelerated gradient method above.  ``"lbfgs"``: quasi-Newton steps,
        scipy's L-BFGS-B in the metric of the generalized Hessian of D, formed densely and
        refreshed every few evaluations (:mod:`psdsos.solvers._dual_newton`; a smooth q,
        one or several SoS blocks): a few dozen evaluations where the accelerated
        method needs thousands (small lam2), for a dual dimension m d (d + 1) / 2 up to a
        few hundred; for coupled problems (convex and shape-constrained regression)
        Levenberg-Marquardt-regularized Newton steps instead, (H + tau I) delta = -grad D
        with tau = 0.1 ||grad D||, stopping on the gap and the residual.
        ``"auto"``: for a coupled problem of dual dimension at most ``AUTO_MAX_DIM``, 300
        accelerated iterations, then those Newton steps (at most a quarter of max_iter),
        then, if they stop short, the accelerated method from the first stage's point
        (``method`` of the result: ``"auto (300 apg + 41 lbfgs)"``, ...); otherwise
        ``"lbfgs"`` when the problem qualifies, its q has the
        curvature mu I (``strong_convexity() == smooth_lipschitz()``: PSD least squares),
        the dual dimension is at most ``AUTO_MAX_DIM`` (600) and the conditioning
        :math:`\lambda_{\max}(\mathbf K_\Phi\circ\mathbf K_\Phi) / (\mu\lambda_2)` is
        at least ``AUTO_MIN_CONDITION`` (300: below it the accelerated method needs a few
        dozen iterations), else ``"apg"`` (and ``"apg"`` whenever ``step_size`` is given or
        ``precondition=False``).  Both stop on the same relative duality gap.
    metric : ndarray (m p, m p), optional
        The first metric of ``method="lbfgs"`` (implied by None and ``"auto"``): a symmetric
        positive definite matrix on the coordinates of
        :func:`psdsos.solvers.to_symmetric_coordinates` (p = d (d + 1) / 2), e.g. the
        :func:`psdsos.solvers.dual_hessian` of a nearby problem; the solver computes its
        own Hessians afterwards.

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
    caps = dual_capabilities(problem)
    if not float(problem.lam2) > 0:
        raise ValueError(
            "lam2 must be > 0 for the dual solver (the negative-part dual needs a strongly "
            "convex regularizer); use solver='primal' for lam2 = 0"
        )
    method = _choose_method(problem, caps, method, metric=metric, step_size=step_size,
                            precondition=precondition)
    if method == "hybrid":
        return _solve_hybrid(problem, caps, tol=tol, max_iter=max_iter, init=init,
                             verbose=verbose, history=history)
    if method == "lbfgs":
        return solve_dual_lbfgs(problem, ProblemView(problem, caps), caps, tol=tol,
                                max_iter=max_iter, init=init,
                                metric=metric, verbose=verbose, history=history)
    if caps.proximal:
        qset = caps.quadratic_set() if caps.quadratic_set is not None else None
        return solve_dual_prox(problem, tol=tol, max_iter=max_iter,
                               init=None if init is None else np.asarray(init),
                               step_size=step_size, verbose=verbose, history=history,
                               qset=qset if precondition else None, caps=caps)
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    view = ProblemView(problem, caps)
    steps = _GradientSteps(problem, view, caps, precondition=precondition, step_size=step_size,
                           tol=tol, max_iter=max_iter, every=every, t0=t0)
    x0 = np.zeros(view.layout.size) if init is None else view.from_init(init)
    state = APGState(x=x0, y=x0, eta=steps.eta0,
                     history={"gap": [], "dual": [], "step": []} if history else None)
    if every:
        say(f"setup {time.perf_counter() - t0:.2f} s; iterating (a line every {every} "
            "iterations)")
    return run_apg(steps, state, tol=tol, max_iter=max_iter, every=every, t0=t0)


def _choose_method(problem: Any, caps: Any, method: str | None, *, metric: Any,
                   step_size: Any, precondition: bool) -> str:
    """"apg" or "lbfgs" (``method`` of :func:`solve_dual`), with the reasons for a refusal."""
    if method is None:
        method = "apg" if metric is None else "lbfgs"
    if method not in ("apg", "lbfgs", "auto"):
        raise ValueError(f"method must be 'apg', 'lbfgs', 'auto' or None, got {method!r}")
    why = "a non-smooth q (proximal steps)" if caps.proximal else ""
    if method == "lbfgs" or (method == "auto" and metric is not None):
        if why:
            raise ValueError(f"method='lbfgs' (or a metric) takes a smooth q; "
                             f"{type(problem).__name__} has {why}")
        return "lbfgs"
    if metric is not None:
        raise ValueError("metric is the first metric of method='lbfgs' (or 'auto'); got "
                         f"method={method!r}")
    if method == "apg" or why or step_size is not None or not precondition:
        return "apg"
    if caps.coupled:
        blocks = problem.blocks if caps.blocks else [problem]
        dim = sum(np.asarray(b.Phi).shape[0] * int(b.d) * (int(b.d) + 1) // 2 for b in blocks)
        return "hybrid" if dim <= AUTO_MAX_DIM else "apg"
    if caps.blocks:
        return "apg"
    factor = caps.smooth_hessian_factor() if caps.smooth_hessian_factor is not None else None
    mu, lq = float(problem.strong_convexity()), float(problem.smooth_lipschitz())
    d = int(problem.d)
    Phi = np.asarray(problem.Phi)
    dim = Phi.shape[0] * d * (d + 1) // 2
    if factor is None and caps.curvature_shift is None and 0 < mu == lq and (
            dim <= AUTO_MAX_DIM) and (
            sos_operator_norm_sq(Phi) / (mu * float(problem.lam2)) >= AUTO_MIN_CONDITION):
        return "lbfgs"
    return "apg"


class _GradientSteps:
    """Gradient steps on D = q + negative part (a smooth q), for :func:`run_apg`: steps in
    the metric of the curvature bound (or Euclidean), longer steps probed."""

    label = ""
    err_name = "relative duality gap"

    def __init__(self, problem, view, caps, *, precondition, step_size, tol, max_iter, every, t0):
        self.problem, self.view = problem, view
        self.tol, self.every, self.t0 = tol, every, t0
        blk = view.blocks[0]
        Phi, d, lam2 = blk.Phi, blk.d, blk.lam2
        factor = caps.smooth_hessian_factor
        # a problem of blocks (BlockDualProblem) that describes grad^2 q: the dense
        # preconditioner over all its blocks
        dense = (precondition and view.multi and factor is not None
                 and view.layout.size <= DENSE_BLOCKS_MAX)
        precondition = precondition and len(view.blocks) == 1 and not dense
        if every:
            sizes = " + ".join(f"{b.N} x {b.N}" for b in view.blocks)
            what = (f"{blk.m} blocks of size {d} x {d}, B of size {sizes} (one "
                    f"eigendecomposition of size {blk.N} per iteration)") if not view.multi \
                else f"{len(view.blocks)} SoS blocks, B of sizes {sizes}"
            say(f"{type(problem).__name__}: {what}; tol {tol:g}, max_iter {max_iter}; setting "
                "up" + (" the preconditioner" if precondition else ""))
        self.neg = NegativePartTerm(view.blocks)
        mu = float(problem.strong_convexity())
        if precondition:
            U = factor() if factor is not None else None
            # the identity part of P: mu, or a larger curvature bound when grad^2 q - mu I
            # is not described by U (weighted least squares: per-sample curvatures 1 / c_i)
            shift = caps.curvature_shift
            self.Pinv = DualPreconditioner(Phi, d, lam2, mu if shift is None else
                                           float(shift()), U)
            # a complete factor: 10 power iterations; the split factor's P~ >= P holds by
            # construction, and each check costs two passes of the SoS maps: 3
            L = _metric_lipschitz(view, self.Pinv, n_iter=3 if self.Pinv.tail else 10)
            # strong convexity of q in the metric of P: mu / lambda_max(P)
            mu = mu / self.Pinv.lambda_max_bound(lam2) if mu > 0 else 0.0
        elif dense:
            # P is formed exactly: D's generalized Hessian is <= P, steps of 1 are safe
            self.Pinv = BlockPreconditioner(view.blocks, factor(), mu)
            L, mu = 1.0, 0.0
        else:
            self.Pinv = None
            L = float(problem.smooth_lipschitz()) + self.neg.lipschitz()
        self.mu, self.L = mu, L
        self.eta_min = 1.0 / L
        if step_size is not None:
            eta = float(step_size)
        elif self.Pinv is not None and mu > 0:
            # strongly convex q in the metric of P (PSD least squares): steps longer than
            # 1/L did not pay there
            eta = self.eta_min
        else:
            eta = 4.0 * self.eta_min
        self.eta0 = max(eta, self.eta_min)
        self.coupled = caps.coupled
        self.res_floor = 0.0
        self.obj_floor = 1e-300
        floors = caps.dual_floors
        if floors is not None:
            # absolute floors of the denominators from the data's own scales, so that an
            # optimum at theta = 0, B = 0 (e.g. an affine target of convex regression:
            # P = D = 0, Hessians 0) is not a 0/0 of rounding errors that never drops below tol
            obj_floor, self.res_floor = (float(v) for v in floors())
            self.obj_floor = max(obj_floor, 1e-300)
        if self.coupled:
            self.res_floor = view.residual_floor(self.res_floor)
        self.wait, self.next_probe = 1, 1  # back-off schedule for probing long steps

    def iterate(self, state, it):
        view, neg, y = self.view, self.neg, state.y
        Sy = neg.shifted(view.layout.split(y))
        Bs, neg_val = neg(Sy)
        FBs = neg.evaluate(Bs)
        FB = view.layout.join(FBs)
        qy, gq = view.smooth(y)
        Dy = qy + neg_val
        grad = gq - FB
        P = view.primal_objective(y, Bs, FBs)
        gap = (P + Dy) / max(abs(P), abs(Dy), self.obj_floor)
        res = None
        if self.coupled:
            # (theta(G), B(G)) violates g(theta) = A(B) by grad D; require both small
            res = coupled_residual(grad, gq, FB, self.res_floor)
            err = max(abs(gap), res)
        else:
            err = gap
        message = ""  # the stopping reason, written only when it is one
        if err <= self.tol:
            message = f"relative duality gap {gap:.3e} <= tol {self.tol:g}" + (
                "" if res is None else f" and relative constraint residual {res:.3e} <= tol")
        if state.history is not None:
            state.history["gap"].append(err)
            state.history["dual"].append(-Dy)
            state.history["step"].append(state.eta * self.L)
        log = None
        if self.every and (it % self.every == 0 or it == 1):
            rtxt = "" if res is None else f"  rel. residual {res:.3e}"
            log = (f"iter {it:6d}  rel. gap {gap:.3e}{rtxt}  primal {P:.10g}  "
                   f"step*L {state.eta * self.L:.3g}  {time.perf_counter() - self.t0:.1f} s")
        G, B = view.result(y, Bs)
        cert = Certificate(err=err, point=G, B=B, primal=P, dual=-Dy, message=message, log=log)
        return cert, lambda: self._step(state, Sy, Dy, grad, it)

    def _step(self, state, Sy, Dy, grad, it):
        """1/L always decreases D.  A longer step eta is probed and verified with
        eigenvalues only, halving until accepted or 1/L (accepted unverified).  Probing
        pays only when the accepted step is long (>= 8/L); otherwise it pauses for `wait`
        iterations, doubling up to 64, so that where the local curvature is the global L
        an iteration costs one eigendecomposition."""
        eta_min, view, neg, y = self.eta_min, self.view, self.neg, state.y
        step = eta_min
        if self.Pinv is None:
            dirn = grad
        elif getattr(self.Pinv, "flat", False):
            dirn = self.Pinv(grad)
        else:
            dirn = self.Pinv(view.layout.split(grad)[0]).reshape(-1)
        xn = None
        if state.eta > eta_min and it >= self.next_probe:
            g2 = float(np.vdot(grad, dirn))
            AG = neg.adjoint(view.layout.split(dirn))
            eta = state.eta
            while eta > eta_min:
                xn = y - eta * dirn
                fxn = view.smooth_value(xn) + neg.value(
                    [S - eta * A for S, A in zip(Sy, AG, strict=True)])
                # no slack: near the optimum a slack ~ rounding of D would accept any
                # step (eta ||g||^2 below it) and the iterates oscillate with steps > 2/L;
                # a step rejected by rounding only costs a fall-back to 1/L
                if fxn <= Dy - 0.5 * eta * g2:
                    step = eta
                    break
                eta = max(0.5 * eta, eta_min)
            self.wait = 1 if step >= 8 * eta_min else min(2 * self.wait, 64)
            self.next_probe = it + self.wait
            state.eta = max(2.0 * step, 4 * eta_min)
        if step == eta_min:
            xn = y - step * dirn
        # the gradient mapping in the metric of the steps is grad itself
        return Step(x=xn, mapping=grad, length=step)


def _metric_lipschitz(view, Pinv, n_iter=10):
    """Lipschitz constant of grad D in the metric of P: <= 1 when P^{-1} is exact.

    Checked by power iteration on P^{-1}(grad^2 q + A A^*/lam2) (seeded), so that an
    inaccurate P^{-1} (ill-conditioned Woodbury correction) cannot make the unverified
    step 1/L too long: returns max(1, 1.05 * estimate).  One block.
    """
    blk = view.blocks[0]
    rng = np.random.default_rng(0)
    h = rng.standard_normal(blk.shape)
    h = (0.5 * (h + h.transpose(0, 2, 1))).reshape(-1)
    g0 = view.smooth(np.zeros(view.layout.size))[1]
    est = 0.0
    for _ in range(n_iter):
        nh = np.sqrt(float(np.vdot(h, h)))
        if nh == 0:
            break
        h = h / nh
        Hh = (view.smooth(h)[1] - g0) + Pinv.hadamard_gram(h).reshape(-1) / blk.lam2
        v = Pinv(Hh).reshape(-1)
        est = np.sqrt(float(np.vdot(v, v)))
        h = v
    return max(1.0, 1.05 * est)


#: Iterations of the accelerated method before the regularized Newton steps of a coupled
#: dual (``method="auto"``), and the Newton steps' share of the budget (evaluations).
HYBRID_APG_ITER = 300
HYBRID_NEWTON_SHARE = 0.25


def _solve_hybrid(problem, caps, *, tol, max_iter, init, verbose, history):
    """Coupled duals (convex regression), ``method="auto"``: the accelerated method for
    ``HYBRID_APG_ITER`` iterations; short of tol, regularized Newton steps from its best
    point (:func:`psdsos.solvers._dual_newton._regularized_newton`) for at most
    ``HYBRID_NEWTON_SHARE`` of the budget; short of tol again, the accelerated method from
    the first stage's point (not the Newton steps': where they fail they drift along flat
    directions of D, away from the accelerated method's basin) for the rest.  Every stage
    stops on the same certificate (relative gap and residual); the result is the last
    stage's, with the iterations of all stages."""
    t0 = time.perf_counter()
    done = 0
    parts = []
    stages = [("apg", min(HYBRID_APG_ITER, max_iter)),
              ("lbfgs", max(1, int(HYBRID_NEWTON_SHARE * max_iter))), ("apg", max_iter)]
    first = None  # the first stage's result: where the later stages start
    for k, (meth, budget) in enumerate(stages):
        budget = min(budget, max_iter - done)
        if budget <= 0:
            break
        last = k == len(stages) - 1 or done + budget >= max_iter
        with warnings.catch_warnings():
            if not last:
                warnings.simplefilter("ignore", ConvergenceWarning)
            res = solve_dual(problem, tol=tol, max_iter=budget,
                             init=init if first is None else first.G, verbose=verbose,
                             history=history, method=meth)
        done += res.n_iter
        first = first or res
        parts.append(f"{res.n_iter} {meth}")
        if res.converged or last:
            break
    res.n_iter = done
    res.time = time.perf_counter() - t0
    res.method = "auto (" + " + ".join(parts) + ")"
    return res
