"""Primal solves through CVXPY with explicit solvers and strict status checking."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from psdsos._validation import check_choice, check_scalar

__all__ = ["PrimalResult", "SolverStatusError", "solve_cvxpy", "solve_primal", "PRIMAL_SOLVERS"]

PRIMAL_SOLVERS = ("SCS", "CLARABEL")


class SolverStatusError(RuntimeError):
    """A CVXPY solve ended with a status other than optimal (status and solver named)."""


class InaccurateSolutionWarning(UserWarning):
    """The solver returned ``optimal_inaccurate``."""


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


def solve_cvxpy(problem, *, solver="CLARABEL", tol=1e-8, max_iter=None, verbose=False,
                **options):
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


def check_status(problem, solver, *, stacklevel=2):
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
    """Outcome of :func:`solve_primal`."""

    B: np.ndarray
    objective: float
    status: str
    solver: str
    n_iter: int
    time: float
    extras: dict


def solve_primal(problem, *, solver="CLARABEL", tol=1e-8, max_iter=None, verbose=False):
    """Solve an SoS problem in the primal through its ``cvxpy_problem()`` form.

    Parameters
    ----------
    problem : object with ``cvxpy_problem() -> (cp.Problem, B variable, params)`` and
        ``evaluate_primal(B, params) -> (objective, extras)``.
    solver, tol, max_iter, verbose : see :func:`solve_cvxpy`.

    Returns
    -------
    PrimalResult
        ``B`` symmetrized; ``objective`` re-evaluated in numpy at the solution (not the
        solver's own value), so it compares directly with the dual solver's; ``extras``
        holds the problem's other primal variables.
    """
    if not hasattr(problem, "cvxpy_problem"):
        raise TypeError(f"{type(problem).__name__} provides no cvxpy_problem()")
    t0 = time.perf_counter()
    prob, Bvar, _ = problem.cvxpy_problem()
    solve_cvxpy(prob, solver=solver, tol=tol, max_iter=max_iter, verbose=verbose)
    B = np.asarray(Bvar.value, dtype=np.float64)
    B = 0.5 * (B + B.T)
    stats = prob.solver_stats
    n_iter = int(stats.num_iters) if stats is not None and stats.num_iters is not None else -1
    _, _, params = problem.cvxpy_problem()
    objective, extras = problem.evaluate_primal(B, params)
    return PrimalResult(
        B=B, objective=objective, status=prob.status, solver=solver.upper(),
        n_iter=n_iter, time=time.perf_counter() - t0, extras=extras,
    )
