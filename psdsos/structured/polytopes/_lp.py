"""The MAP problem as a linear program over a polytope (the ``"cvxpy"`` decoding)."""

from __future__ import annotations

import os
import sys
import threading

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.solvers import SolverStatusError
from psdsos.structured.polytopes._base import Polytope, _batch, _unbatch

__all__ = ["PolytopeLP", "LP_SOLVERS"]


#: CVXPY solvers accepted for the LP decoding (HIGHS returns vertex solutions).
LP_SOLVERS = ("HIGHS", "CLARABEL", "SCIPY")
#: Solver options of the decoding LP (scores are rescaled to max |theta| = 1 first).
_LP_OPTIONS = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}


_HIGHS_QUIET = threading.Lock()
_HIGHS_BANNER_DONE = False


def _silence_highs_banner():
    """Swallow the banner HiGHS prints to stdout once per process.

    highspy prints its copyright banner when the first ``highspy.Highs`` object of the
    process is constructed, before any option (``output_flag``, ``log_to_console``) can
    be set; CVXPY's HiGHS interface constructs one per solve.  The first construction is
    done here with file descriptor 1 pointed at ``os.devnull``; later ones print nothing.
    """
    global _HIGHS_BANNER_DONE
    if _HIGHS_BANNER_DONE:
        return
    with _HIGHS_QUIET:
        if _HIGHS_BANNER_DONE:
            return
        try:
            import highspy
        except ImportError:  # CVXPY reports the missing solver itself
            _HIGHS_BANNER_DONE = True
            return
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError, AttributeError):
            saved = None
        try:
            if saved is not None:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
            highspy.Highs()
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
        _HIGHS_BANNER_DONE = True


class PolytopeLP:
    r"""The MAP problem as a linear program over a polytope, built once (DPP).

    .. math::

        \max_{\mu \in \mathcal M} \langle \theta, \mu \rangle

    with :math:`\theta` a ``cp.Parameter`` of shape ``polytope.shape``: each :meth:`solve`
    only sets ``theta.value`` and re-solves, so CVXPY compiles the problem once
    (``problem.is_dcp(dpp=True)`` holds).  An LP attains its maximum at a vertex; the
    solution is rounded to the nearest vertex (:meth:`Polytope.round`) and checked to be
    optimal, so an interior-point solver that returns the centre of an optimal face (ties)
    either rounds to an optimal vertex or raises -- never a silent suboptimal answer.

    Parameters
    ----------
    polytope : Polytope
    solver : {"HIGHS", "CLARABEL", "SCIPY"}
        Named CVXPY solver; HIGHS (simplex) returns vertex solutions.  Nothing is printed
        (HiGHS's once-per-process banner is swallowed).  Instances can be pickled and
        deep-copied: the CVXPY problem is rebuilt.
    """

    def __init__(self, polytope: Polytope, solver: str = "HIGHS") -> None:
        self.polytope = polytope
        self.solver = solver
        self._build()

    def _build(self):
        self.mu = cp.Variable(self.polytope.shape, name="mu")
        self.theta = cp.Parameter(self.polytope.shape, name="theta")
        objective = cp.Maximize(cp.sum(cp.multiply(self.theta, self.mu)))
        self.problem = cp.Problem(objective, self.polytope.cvxpy_constraints(self.mu))

    def __getstate__(self):
        # the CVXPY problem holds solver objects that cannot be pickled: rebuilt on unpickling
        return {"polytope": self.polytope, "solver": self.solver}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._build()

    def solve(self, scores: ArrayLike, *, rtol: float = 1e-6) -> np.ndarray:
        """Vertices maximizing ``<scores, v>``, one LP per row of the batch.

        Parameters
        ----------
        scores : ndarray of shape ``(m, *shape)`` or ``shape``
        rtol : float
            The rounded vertex must reach the LP value up to ``rtol * (1 + ||t||_1)``,
            ``t = scores / max|scores|`` (the LP is solved at that unit scale, with solver
            tolerances ``_LP_OPTIONS``; the cold start each time makes repeated solves of
            the same scores return the same vertex).

        Returns
        -------
        ndarray, same shape as ``scores``: 0/1 vertices of the polytope.

        Raises
        ------
        SolverStatusError
            Status other than optimal (status and solver named), or an LP solution that
            does not round to an optimal vertex.
        """
        t, single = _batch(scores, self.polytope.shape)
        out = np.empty_like(t)
        if str(self.solver).upper() == "HIGHS":
            _silence_highs_banner()
        for j in range(t.shape[0]):
            # the argmax is invariant to positive scaling: solve at unit scale so that the
            # solver's absolute tolerances act relative to the scores
            scale = np.abs(t[j]).max()
            tj = t[j] / scale if scale > 0 else t[j]
            self.theta.value = tj
            try:
                self.problem.solve(solver=self.solver, warm_start=False,
                                   **_LP_OPTIONS.get(self.solver, {}))
            except cp.error.SolverError as exc:
                raise SolverStatusError(f"solver {self.solver} failed: {exc}") from exc
            if self.problem.status != cp.OPTIMAL:
                raise SolverStatusError(
                    f"CVXPY status '{self.problem.status}' from solver {self.solver} "
                    "on the decoding LP"
                )
            v = self.polytope.round(self.mu.value)
            gap = self.problem.value - float(np.sum(tj * v))
            if gap > rtol * (1.0 + np.abs(tj).sum()):
                raise SolverStatusError(
                    f"the LP solution of solver {self.solver} does not round to an optimal "
                    f"vertex (gap {gap:.3g}); use lp_solver='HIGHS' (vertex solutions)"
                )
            out[j] = v
        return _unbatch(out, single)
