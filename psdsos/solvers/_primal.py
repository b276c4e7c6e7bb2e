"""Primal solves through CVXPY with explicit solvers and strict status checking."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos._validation import check_choice, check_scalar
from psdsos.solvers._protocol import PrimalCapabilities, primal_capabilities
from psdsos.sos import project_psd, sos_adjoint

__all__ = ["PrimalResult", "SolverStatusError", "solve_cvxpy", "solve_primal", "PRIMAL_SOLVERS"]

PRIMAL_SOLVERS = ("SCS", "CLARABEL")


class SolverStatusError(RuntimeError):
    """A CVXPY solve ended with a status other than optimal (status and solver named)."""


class InaccurateSolutionWarning(ConvergenceWarning):
    """A primal solve did not reach the requested tolerance: the solver returned
    ``optimal_inaccurate``, or the certificate computed at the returned point (relative
    duality gap, relative constraint residual) exceeds ``tol``.  A
    :class:`sklearn.exceptions.ConvergenceWarning`."""


def _solver_options(solver, tol, max_iter):
    if solver == "SCS":
        return {"eps_abs": tol, "eps_rel": tol, "max_iters": max_iter}
    # Clarabel: interior point, tolerances on the duality gap and feasibility
    # the absolute gap test would stop early when the optimal value itself is tiny
    # (e.g. ~1e-8 for an interpolating fit): let the relative gap decide
    return {
        "tol_gap_abs": min(tol, 1e-12),
        "tol_gap_rel": tol,
        "tol_feas": tol,
        "max_iter": max_iter,
    }


def solve_cvxpy(problem: cp.Problem, *, solver: str = "CLARABEL", tol: float = 1e-8,
                max_iter: int | None = None, verbose: bool | int = False, **options: Any) -> float:
    """Solve a CVXPY problem with a named solver and check its status.

    Parameters
    ----------
    problem : cvxpy.Problem
    solver : {"SCS", "CLARABEL"}
    tol : float
        Mapped to the solver's own tolerances (SCS ``eps_abs``/``eps_rel``; Clarabel
        ``tol_gap_abs``/``tol_gap_rel``/``tol_feas``).
    max_iter : int, optional
        Iteration cap (SCS default 100000, Clarabel 200).
    **options
        Passed to the solver unchanged (override the mapped ones).

    Returns
    -------
    float : the optimal value

    Raises
    ------
    SolverStatusError
        Status other than optimal/optimal_inaccurate, naming status and solver.
    """
    solver = check_choice(solver, "primal_solver", PRIMAL_SOLVERS)
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    if max_iter is None:
        max_iter = 100_000 if solver == "SCS" else 200
    opts = {**_solver_options(solver, tol, int(max_iter)), **options}
    try:
        value = problem.solve(solver=solver, verbose=bool(verbose), **opts)
    except cp.error.SolverError as exc:
        raise SolverStatusError(f"solver {solver} failed: {exc}") from exc
    check_status(problem, solver, stacklevel=2)
    return value


def check_status(problem: cp.Problem, solver: str, *, stacklevel: int = 2) -> None:
    """Strict status handling after a solve: ``optimal_inaccurate`` warns
    (:class:`InaccurateSolutionWarning`), anything else not optimal raises
    :class:`SolverStatusError` naming the status and the solver.  ``stacklevel`` counts
    from the function calling this one (2: its caller, as ``warnings.warn`` would)."""
    status = problem.status
    if status == cp.OPTIMAL_INACCURATE:
        warnings.warn(
            f"solver {solver} returned status '{status}'; tighten tol or raise max_iter",
            InaccurateSolutionWarning,
            stacklevel=stacklevel + 1,
        )
    elif status != cp.OPTIMAL:
        raise SolverStatusError(f"CVXPY status '{status}' from solver {solver}")


@dataclass
class PrimalResult:
    r"""Outcome of :func:`solve_primal`.

    Attributes
    ----------
    B : ndarray (N, N)
        The PSD matrix, projected onto the PSD cone (an SDP solver's B is PSD only to its
        tolerance).
    objective : float
        The problem's objective evaluated in numpy at (coefficients, B).
    status, solver : str
        CVXPY status and solver name.
    n_iter : int
        Solver iterations (-1 if not reported).
    time : float
    extras : dict
        The problem's other primal variables.
    dual_gap : float
        Relative duality gap :math:`(P + D(\Gamma)) / \max(|P|, |D|)` between the objective P of
        the program solved at its solution and the dual objective of the problem's
        negative-part dual (:func:`psdsos.solvers.solve_dual`) at the multipliers Gamma the
        solver returned; NaN when the problem offers no dual (lam1 = lam2 = 0, or rho = 0
        in convex regression).  For convex regression the program is solved in
        RKHS-isometric coordinates; ``objective`` (at the coefficients mapped back) is
        checked to differ from its P by at most max(tol, the problem's rounding_floor).
    residual : float
        Relative residual of the equality constraints at the returned point (0 when
        there are none).
    dual_objective : float
        -D(Gamma), a lower bound on the optimal value (NaN without a dual).
    G : ndarray or None
        The multipliers Gamma.
    """

    B: np.ndarray
    objective: float
    status: str
    solver: str
    n_iter: int
    time: float
    extras: dict
    dual_gap: float = float("nan")
    residual: float = float("nan")
    dual_objective: float = float("nan")
    G: np.ndarray | None = None


def dual_value(problem: Any, G: np.ndarray) -> float:
    r"""The negative-part dual :math:`D(\Gamma) = q(\Gamma) + \frac{1}{2\lambda_2}
    \|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2` of an SoS problem (the function
    :func:`psdsos.solvers.solve_dual` minimizes), from the problem's ``smooth``.

    Weak duality: :math:`-D(\Gamma)` is below the primal optimum for every symmetric
    Gamma.  With lam2 = 0 the second term is the indicator of
    :math:`\mathcal A^*\Gamma + \lambda_1 I \succeq 0`: Gamma is then scaled by the largest
    t <= 1 that makes it feasible (lam1 > 0), and -D(t Gamma) is returned.  Returns NaN
    when the problem has no such dual (lam1 = lam2 = 0, or ``smooth`` refuses the
    problem's parameters).
    """
    lam1, lam2 = float(problem.lam1), float(problem.lam2)
    if G is None or not np.all(np.isfinite(G)) or not (lam1 > 0 or lam2 > 0):
        return float("nan")
    S = sos_adjoint(problem.Phi, G)
    w = np.linalg.eigvalsh(0.5 * (S + S.T))
    if not lam2 > 0:
        t = 1.0 if w[0] + lam1 >= 0 else lam1 / -w[0]
        G, w, neg_sq = t * np.asarray(G), t * w, 0.0
    else:
        neg = np.minimum(w + lam1, 0.0)
        neg_sq = float(neg @ neg) / (2 * lam2)
    try:
        q = float(problem.smooth(G)[0])
    except ValueError:
        return float("nan")
    if callable(getattr(problem, "prox", None)):
        # a non-smooth conjugate (Huber, absolute, quantile losses): its own value
        q += float(problem.nonsmooth_value(G))
    return q + neg_sq


def certify(problem: Any, B: np.ndarray, objective: float, extras: dict[str, Any],
            params: dict[str, Any] | None = None,
            caps: PrimalCapabilities | None = None) -> tuple[float, float, float,
                                                             np.ndarray | None]:
    """(dual_gap, residual, -D(Gamma), Gamma) at a primal point; see :class:`PrimalResult`."""
    caps = primal_capabilities(problem) if caps is None else caps
    G, D = None, float("nan")
    cert = caps.certifier()
    if caps.dual_point is not None and callable(getattr(cert, "smooth", None)):
        G = caps.dual_point(B, extras, params)
        D = dual_value(cert, G)
    # relative residual; its denominator floored at 1e-3 of the problem's curvature scale
    # (as the dual solver does), so that an optimum at f = 0, B = 0 is not a 0/0
    floor = 1e-3 * float(getattr(cert, "hessian_scale", 0.0))
    residual = float(caps.primal_residual(B, extras, floor=floor)) if (
        caps.primal_residual is not None) else float("nan")
    if np.isfinite(D):
        P = float(objective)
        gap = (P + D) / max(abs(P), abs(D), 1e-300)
    else:
        gap = float("nan")
    return gap, residual, -D, G


def solve_primal(problem: Any, *, solver: str = "CLARABEL", tol: float = 1e-8,
                 max_iter: int | None = None, verbose: bool | int = False) -> PrimalResult:
    """Solve an SoS problem in the primal through its ``cvxpy_problem()`` form, and certify
    the answer.

    Parameters
    ----------
    problem : object with ``cvxpy_problem() -> (cp.Problem, B variable, params)`` and
        ``evaluate_primal(B, params) -> (objective, extras)``; for the certificate also
        ``primal_residual(B, extras)``, ``dual_point(B, extras, params)`` and the dual
        pieces of :class:`psdsos.solvers.DualProblem` (``smooth``, ``Phi``, ``d``,
        ``lam1``, ``lam2``).
    solver, tol, max_iter, verbose : see :func:`solve_cvxpy`.

    Returns
    -------
    PrimalResult
        ``B`` projected onto the PSD cone; ``objective`` re-evaluated in numpy at the
        solution (not the solver's own value), so it compares directly with the dual
        solver's; ``extras`` holds the problem's other primal variables; ``dual_gap`` and
        ``residual`` certify it.

    Warns
    -----
    InaccurateSolutionWarning
        (a ConvergenceWarning) when the status is ``optimal_inaccurate`` or when the
        relative duality gap or the relative constraint residual exceeds ``tol``: the
        returned point is then not certified to ``tol``.  Remedies: a smaller ``tol``,
        a larger ``max_iter``, ``primal_solver="CLARABEL"`` (interior point, reaches
        tight tolerances) or the certified dual solver (``solver="dual"``).
    """
    caps = primal_capabilities(problem)
    t0 = time.perf_counter()
    solver = check_choice(solver, "primal_solver", PRIMAL_SOLVERS)
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    prob, Bvar, _ = problem.cvxpy_problem()
    # The solvers' stopping tests are on their own scaled forms of the program: an
    # "optimal" status at tol can leave a relative duality gap well above tol on the
    # objective, and a much tighter tolerance can end in
    # numerical trouble.  Re-solve at tol / 10, then tol / 1000, while the certificate falls
    # short; keep the best certified point, and warn if even that falls short.
    best: Any = None
    # coefficients mapped back from well-conditioned coordinates carry rounding of the
    # order of the problem's rounding_floor (ill-conditioned kernel matrices)
    floor = float(caps.rounding_floor())
    for attempt_tol in (tol, tol * 1e-1, tol * 1e-3):
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")  # decided below by the certificate
            solve_cvxpy(prob, solver=solver, tol=max(attempt_tol, 1e-15), max_iter=max_iter,
                        verbose=verbose)
        B = project_psd(np.asarray(Bvar.value, dtype=np.float64))
        stats = prob.solver_stats
        n_iter = (int(stats.num_iters) if stats is not None and stats.num_iters is not None
                  else -1)
        _, _, params = problem.cvxpy_problem()
        objective, extras = problem.evaluate_primal(B, params)
        cert = certify(problem, B, objective, extras, params, caps)
        gap, residual, dual_obj = cert[0], cert[1], cert[2]
        # the solver's accuracy: the gap of the program it solved (coordinates u) ...
        gap_solver, rep = gap, 0.0
        if caps.program_objective is not None and np.isfinite(dual_obj):
            Pu = float(caps.program_objective(B))
            gap_solver = (Pu - dual_obj) / max(abs(Pu), abs(dual_obj), 1e-300)
            # ... and how well the returned coefficients represent its solution
            rep = abs(objective - Pu) / max(abs(Pu), 1e-300)
        # ... and what the directions the program left out could gain (eq. 28 itself)
        wide = caps.wide_certifier()
        gap_wide = float("nan")
        if wide is not None and cert[3] is not None and caps.program_objective is not None:
            Dw = dual_value(wide, cert[3])
            Pu = float(caps.program_objective(B))
            gap_wide = (Pu + Dw) / max(abs(Pu), abs(Dw), 1e-300)
        errs = {"relative duality gap": (abs(gap_solver), tol),
                "relative gap over the kernel matrix's rounding-level directions "
                "(numerically singular K)": (gap_wide, tol),
                "relative constraint residual": (residual, tol),
                "objective error of the returned coefficients": (rep, max(tol, floor))}
        bad = [f"{name} {v:.2e}" for name, (v, t) in errs.items() if np.isfinite(v) and v > t]
        if not np.isfinite(gap) and prob.status != cp.OPTIMAL:
            bad.append(f"status '{prob.status}' (no dual certificate for this problem)")
        err = max(v / t for v, t in errs.values() if np.isfinite(v))
        # the reported gap: the program's, or the wider one where it says more (eq. 28)
        gap_report = (gap_wide if np.isfinite(gap_wide) and abs(gap_wide) > abs(gap_solver)
                      else gap_solver)
        cert = (gap_report, residual, dual_obj, cert[3])
        if best is None or err < best[0]:
            best = (err, B, objective, extras, cert, prob.status, n_iter, bad)
        if not bad:
            break
    _, B, objective, extras, (gap, residual, dual_obj, G), status, n_iter, bad = best
    failed = " and ".join(bad)
    if failed:
        other = ", use primal_solver='CLARABEL' (interior point)" if solver == "SCS" else ""
        warnings.warn(
            f"primal solve with {solver} is not certified to tol={tol:g}: {failed} at the "
            f"returned point. Increase max_iter or tol{other}, or use solver='dual' "
            "(certified by its duality gap)",
            InaccurateSolutionWarning,
            stacklevel=2,
        )
    return PrimalResult(
        B=B, objective=objective, status=status, solver=solver,
        n_iter=n_iter, time=time.perf_counter() - t0, extras=extras,
        dual_gap=gap, residual=residual, dual_objective=dual_obj, G=G,
    )
