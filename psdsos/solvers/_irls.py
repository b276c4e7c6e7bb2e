r"""Huber PSD regression by iteratively reweighted least squares on the squared dual.

The Huber function is majorized at :math:`t_0 > 0` by a quadratic,
:math:`h_\delta(t) \le h_\delta(t_0) + \frac{\omega}{2}(t^2 - t_0^2)` with
:math:`\omega = h_\delta'(t_0)/t_0 = \min(1, \delta/t_0)`, so each step

.. math::

    \mathbf B_{k+1} = \arg\min_{\mathbf B\succeq 0}\ \sum_i \frac{c_i\,\omega_i^{(k)}}{2}
      \|F_{\mathbf B}(x_i) - \mathbf M_i\|_F^2 + \lambda_1\operatorname{Tr}\mathbf B
      + \frac{\lambda_2}{2}\|\mathbf B\|_F^2,
    \qquad \omega_i^{(k)} = \min\Big(1, \frac{\delta}{\|R_i(\mathbf B_k)\|_F}\Big),
    \quad R_i(\mathbf B) = F_{\mathbf B}(x_i) - \mathbf M_i,

decreases the Huber objective (majorize-minimize).  Each step is a weighted least-squares
problem solved by the preconditioned dual solver, warm-started at
:math:`\Gamma_i = c_i\,\omega_i R_i` (the Huber dual point of the current residuals R, which
is also the subproblem's optimum once the weights settle), to a tolerance that follows the
outer gap.  The stopping rule is the duality gap of the Huber problem itself at
(:math:`\mathbf B_k`, :math:`\Gamma_i = c_i\nabla h(R_i)`), the same certificate as the
proximal path.


The loop itself (:func:`irls`) is shared with the starting point of the general-loss dual of
convex regression (``ConvexRegressor``): a weighted least-squares dual per round, solved by
:func:`psdsos.solvers.solve_dual` warm-started at the previous round's Gamma, and new weights
from its solution.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos.losses import HuberLoss
from psdsos.solvers._apg import DualResult
from psdsos.solvers._apg import say as _say
from psdsos.solvers._dual import solve_dual
from psdsos.sos import sos_adjoint, sos_evaluate

__all__ = ["IRLSResult", "irls", "solve_huber_irls"]


@dataclass
class IRLSResult:
    """Outcome of :func:`irls`: inner iterations over all rounds, rounds run, and whether
    ``update`` stopped the loop (False: max_rounds or the iteration budget did)."""

    n_iter: int
    n_rounds: int
    stopped: bool


def irls(subproblem: Callable[[np.ndarray], Any],
         update: Callable[[Any, DualResult, int], tuple[np.ndarray, Any] | None], *,
         weights: np.ndarray, init: Any = None, tol: float, max_iter: int, max_rounds: int,
         inner_max_iter: int | None = None) -> IRLSResult:
    """Iteratively reweighted least squares on the negative-part dual.

    Each round solves ``subproblem(weights)`` (a weighted least-squares dual) with
    :func:`psdsos.solvers.solve_dual` to ``tol``, warm-started at the last Gamma, within the
    iterations left of ``max_iter`` (and at most ``inner_max_iter``; its ConvergenceWarning
    is the caller's to judge); then ``update(subproblem, result, total iterations)`` returns
    the next (weights, warm start), or None to stop.
    """
    total, G = 0, init
    cap = max_iter if inner_max_iter is None else inner_max_iter
    for k in range(1, max_rounds + 1):
        budget = max_iter - total
        if budget <= 0:
            return IRLSResult(total, k - 1, False)
        sub = subproblem(weights)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solve_dual(sub, tol=tol, max_iter=min(cap, budget), init=G)
        total += res.n_iter
        nxt = update(sub, res, total)
        if nxt is None:
            return IRLSResult(total, k, True)
        weights, G = nxt
    return IRLSResult(total, max_rounds, False)


def solve_huber_irls(problem: Any, *, tol: float = 1e-7, max_iter: int = 10000,
                     init: np.ndarray | None = None, verbose: bool | int = False,
                     max_outer: int = 200) -> DualResult:
    """Minimize a Huber :class:`~psdsos.problems.PSDLossProblem` by reweighted least squares.

    Parameters
    ----------
    problem : PSDLossProblem with a :class:`~psdsos.losses.HuberLoss`
    tol : float
        Stop when the relative duality gap of the Huber problem is at most ``tol``.
    max_iter : int
        Total dual-solver iterations over all reweighting steps.
    init : ndarray (n, d, d), optional
        Warm start for the dual variable (Gamma of a previous fit).
    max_outer : int
        Reweighting steps.

    Returns
    -------
    DualResult
        ``n_iter`` counts the inner iterations (eigendecompositions) of all steps.
    """
    if not isinstance(problem.loss, HuberLoss):
        raise ValueError(f"huber_method='irls' needs loss='huber', got {problem.loss!r}")
    t0 = time.perf_counter()
    Phi, M, d = problem.Phi, problem.M, problem.d
    emp, delta = problem.emp, problem.loss.delta
    c = emp.c
    N = Phi.shape[1] * d
    G = None if init is None else np.asarray(init, dtype=np.float64)
    omega = np.ones(problem.n)
    if G is not None:
        # weights from the warm start: |Gamma_i| = c_i omega_i |R_i| <= c_i delta
        gn = np.sqrt(np.sum(G * G, axis=(1, 2))) / c
        omega = np.where(gn >= delta * (1 - 1e-9), 0.5, 1.0)
    inner_tol = max(1e-2 * tol, 1e-13)
    st: dict[str, Any] = {"stall": 0, "best": None, "converged": False, "message": ""}

    def update(sub, res, total):
        outer = st.get("outer", 0) + 1
        st["outer"] = outer
        FB = sos_evaluate(Phi, res.B, d)
        P = problem.objective(res.B, FB)
        # two dual points in the domain of the Huber conjugate: c_i clip(R_i), and the
        # subproblem's own dual variable projected onto the balls (the more accurate one
        # near the fixed point: D is very curved along the kernel's large eigenvalues)
        D, Gh = min(((_dual_value(problem, Gc, N), Gc) for Gc in
                     (emp.grad(FB), problem.prox(res.G, 0.0))), key=lambda t: t[0])
        gap = (P + D) / max(abs(P), abs(D), 1e-300)
        best = st["best"]
        if best is None or gap < best[0]:
            st["stall"] = 0
            st["best"] = best = (gap, Gh, res.B, P, -D)
        else:
            st["stall"] += 1  # no progress at all: rounding of the inner solves
        if verbose:
            _say(f"IRLS step {outer:3d}: {res.n_iter} inner iterations (tol {inner_tol:.1e}), "
                 f"Huber rel. gap {gap:.3e}, primal {P:.10g}")
        if gap <= tol:
            st["converged"] = True
            st["message"] = (f"relative duality gap {gap:.3e} <= tol {tol:g} after {outer} "
                             "IRLS steps")
            return None
        if st["stall"] >= 5:
            st["message"] = (f"the reweighting stalled at relative duality gap {best[0]:.3e} "
                             f"> tol {tol:g} (rounding of the weighted least-squares solves)")
            return None
        if total >= max_iter:
            st["message"] = (f"maximum number of iterations {max_iter} reached with relative "
                             f"duality gap {best[0]:.3e} > tol {tol:g}")
            return None
        R = FB - M
        rn = np.sqrt(np.sum(R * R, axis=(1, 2)))
        with np.errstate(divide="ignore"):
            w = np.minimum(1.0, delta / rn)
        return w, Gh

    out = irls(problem.reweighted, update, weights=omega, init=G, tol=inner_tol,
               max_iter=max(max_iter, 1), max_rounds=max_outer)
    gap, G, B, P, Dval = st["best"]
    message = st["message"]
    if not out.stopped:
        message = (f"maximum number of IRLS steps {max_outer} reached with relative duality "
                   f"gap {gap:.3e} > tol {tol:g}")
    converged = st["converged"]
    if not converged:
        warnings.warn(f"psdsos Huber IRLS did not converge: {message}. Increase max_iter or "
                      "tol, or use huber_method='prox'.", ConvergenceWarning, stacklevel=2)
    return DualResult(G=G, B=B, primal_objective=P, dual_objective=Dval, dual_gap=gap,
                      n_iter=out.n_iter, converged=converged, message=message,
                      step_size=float("nan"), time=time.perf_counter() - t0)


def _dual_value(problem, G, N):
    """D(G) of the Huber problem (eq. 10) with eigenvalues only."""
    S = sos_adjoint(problem.Phi, G) + problem.lam1 * np.eye(N)
    w = np.linalg.eigvalsh(0.5 * (S + S.T))
    return (float(problem.emp.conjugate(G))
            + float(np.sum(np.minimum(w, 0) ** 2)) / (2 * problem.lam2))
