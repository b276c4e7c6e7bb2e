"""Solvers: one dual solver for negative-part duals (accelerated gradient, or quasi-Newton
steps in the metric of the generalized Hessian for small problems), CVXPY primal solves."""

from psdsos.problems import BlockDualProblem, DualBlock, DualProblem
from psdsos.solvers._dual import DualResult, solve_dual
from psdsos.solvers._dual_hessian import (
    dual_hessian,
    from_symmetric_coordinates,
    symmetric_basis,
    to_symmetric_coordinates,
)
from psdsos.solvers._irls import solve_huber_irls
from psdsos.solvers._negpart import NegativePart
from psdsos.solvers._precond import DualPreconditioner
from psdsos.solvers._primal import (
    PRIMAL_SOLVERS,
    InaccurateSolutionWarning,
    PrimalResult,
    SolverStatusError,
    solve_cvxpy,
    solve_primal,
)
from psdsos.solvers._protocol import DualProblemProtocol, dual_capabilities

__all__ = [
    "BlockDualProblem",
    "DualBlock",
    "DualPreconditioner",
    "DualProblem",
    "DualResult",
    "DualProblemProtocol",
    "dual_capabilities",
    "dual_hessian",
    "from_symmetric_coordinates",
    "solve_dual",
    "symmetric_basis",
    "to_symmetric_coordinates",
    "solve_huber_irls",
    "NegativePart",
    "PRIMAL_SOLVERS",
    "PrimalResult",
    "SolverStatusError",
    "InaccurateSolutionWarning",
    "solve_cvxpy",
    "solve_primal",
]
