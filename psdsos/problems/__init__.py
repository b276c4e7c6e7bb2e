"""Objectives: the problem classes the solvers work on, one module per objective family.

Each problem holds its data and offers what :func:`psdsos.solvers.solve_dual` needs (the
negative-part dual's smooth part, its gradient and the SoS blocks, see
:class:`~psdsos.solvers.DualProblemProtocol`) and a ``cvxpy_problem()`` for
:func:`psdsos.solvers.solve_primal`.

- :class:`PSDLeastSquares`, :class:`PSDLossProblem`: the PSD-valued model with the squared
  loss (eq. 5 of Muzellec et al.) or another convex loss.
- :class:`ConvexRegressionProblem`, :class:`ConvexRegressionNystromProblem`,
  :class:`ConvexRegressionExactProblem`: convex regression with subsampled SoS Hessian
  constraints (eq. 28), on landmark features, and in the exact representation (eq. 37).
- :class:`ShapeRegressionProblem`, :class:`ShapeRegressionLossProblem`: per-feature shape
  constraints (values, derivatives and Hessian blocks), squared loss or another loss.
- :class:`DualProblem`, :class:`BlockDualProblem`, :class:`DualBlock`: the generic
  negative-part duals the others build on.
"""

from psdsos.problems._base import BlockDualProblem, DualBlock, DualProblem
from psdsos.problems._convex import ConvexRegressionNystromProblem, ConvexRegressionProblem
from psdsos.problems._convex_exact import (
    ConvexRegressionExactProblem,
    exact_gradient,
    exact_hessian,
    exact_value,
)
from psdsos.problems._psd import PSDLeastSquares
from psdsos.problems._psd_loss import PSDLossProblem
from psdsos.problems._shape import ShapeRegressionProblem, constraint_map
from psdsos.problems._shape_loss import ShapeRegressionLossProblem
from psdsos.sos._constraint import ShapeConstraint

__all__ = [
    "BlockDualProblem",
    "DualBlock",
    "DualProblem",
    "PSDLeastSquares",
    "PSDLossProblem",
    "ConvexRegressionProblem",
    "ConvexRegressionNystromProblem",
    "ConvexRegressionExactProblem",
    "ShapeConstraint",
    "ShapeRegressionProblem",
    "ShapeRegressionLossProblem",
    "constraint_map",
    "exact_value",
    "exact_gradient",
    "exact_hessian",
]
