r"""Certificates of a primal answer of convex regression: the dual of the isometric program.

:class:`IsometricDual` is the smooth part of the dual of the program
:func:`psdsos.sos._isometric.convex_regression_cvxpy` builds; :class:`_IsometricPrimal`
gives the problems whose primal is that program the hooks ``solve_primal`` calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from psdsos.sos._isometric import coupling_dual

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = ["IsometricDual"]


class _IsometricPrimal:
    """The certificate hooks shared by both convex-regression problems, whose primal is
    built by :func:`convex_regression_cvxpy` (``solve_primal`` calls them)."""

    if TYPE_CHECKING:  # provided by the problems
        m: int
        d: int
        rho: float
        lam1: float
        lam2: float

        def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]: ...

    def dual_point(self, B: np.ndarray, extras: dict[str, Any],
                   params: dict[str, Any]) -> np.ndarray:
        """Gamma from the multipliers CVXPY returns for the Hessian constraints."""
        return coupling_dual(params, self.m, self.d)

    def certifier(self) -> IsometricDual:
        """The dual certifying a primal answer (:func:`certifier_of_builder`)."""
        return certifier_of_builder(self)

    def rounding_floor(self) -> float:
        """See :func:`rounding_floor_of_builder`."""
        return rounding_floor_of_builder(self)

    def program_objective(self, B: np.ndarray) -> float:
        """See :func:`program_objective_of_builder`."""
        return program_objective_of_builder(self, B)

    def wide_certifier(self) -> IsometricDual | None:
        """:class:`IsometricDual` over every direction of the kernel matrix down to
        eigenvalues eps^2 w_max, or None when the program already keeps them all.

        The program keeps the directions above the rounding level of K (n eps w_max); a
        function along a dropped direction has tiny values at the data but Hessians of the
        size of its RKHS norm, so it may lower eq. (28).  The dual of the wider program is
        a lower bound on its optimum: a primal answer far above it is not certified for
        eq. (28), whatever the program's own gap."""
        _, _, params = self.cvxpy_problem()
        if "F_wide" not in params:
            return None
        key = (self.rho, self.lam1, self.lam2)
        cached = getattr(self, "_wide_certifier", None)
        if cached is None or cached[0] != key:
            cached = (key, IsometricDual(self, params["F_wide"], params["Hu_wide"],
                                         params["Q"]))
            self._wide_certifier = cached
        return cached[1]


def rounding_floor_of_builder(self):
    r"""Relative accuracy to which coefficients theta = T u can represent the program's
    solution: :math:`100\,N\epsilon\sqrt{w_{\max}/w_{\min}}` over the kept eigenvalues of
    the Gram matrix (the mapping back divides by :math:`\sqrt{w_k}`).  Certificates are
    checked against max(tol, this)."""
    _, _, params = self.cvxpy_problem()
    s = params["s"]
    return 100.0 * params["T"].shape[0] * np.finfo(np.float64).eps * float(s.max() / s.min())


def program_objective_of_builder(self, B):
    """The objective of the program :func:`convex_regression_cvxpy` solved, in numpy at its
    solution (u, b) and the given (projected) B: what its dual certifies."""
    _, _, params = self.cvxpy_problem()
    u = np.asarray(params["u"].value, dtype=np.float64)
    r = self.y_w - params["F"] @ u
    if params["b"] is not None:
        r = r - params["Q"] @ np.asarray(params["b"].value, dtype=np.float64)
    reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
    return float(r @ r) / self.n + self.rho * float(u @ u) + reg


def certifier_of_builder(self):
    """The dual that certifies a primal answer: :class:`IsometricDual` of the program
    :meth:`cvxpy_problem` built, at the current rho, lam1, lam2.  (For eq. 28 the dual
    solver's factor R carries a jitter, i.e. the kernel k + eps delta, whose optimum can
    exceed that of eq. 28 by more than a tight tolerance.)"""
    _, _, params = self.cvxpy_problem()
    key = (self.rho, self.lam1, self.lam2)
    cached = getattr(self, "_certifier", None)
    if cached is None or cached[0] != key:
        cached = (key, IsometricDual(self, params["F"], params["Hu"], params["Q"]))
        self._certifier = cached
    return cached[1]


class IsometricDual:
    r"""The smooth part q of the dual of :func:`convex_regression_cvxpy`'s program.

    Minimizing the Lagrangian over b and u (P the projection onto range(Q)^perp,
    :math:`g(\Gamma) = H_u^T (w\odot\operatorname{vech}\Gamma)` the Hessian pairing) gives,
    as in eq. (29),

    .. math::

        q(\Gamma) = c^T W^{-1} c - \frac1n\|Py\|^2,\qquad
        c = \frac1n F^T P y + \frac12 g(\Gamma),\qquad W = \frac1n F^T P F + \rho I,

    W well conditioned (>= rho I) since F has orthonormal-function columns.  With the
    negative-part term (:func:`psdsos.solvers.solve_dual`'s D), -D(Gamma) is a lower
    bound on the program's optimum for every Gamma: the certificate of a primal answer.
    Offers what :func:`psdsos.solvers._primal.dual_value` needs (``smooth``, ``Phi``,
    ``d``, ``lam1``, ``lam2``).
    """

    def __init__(self, problem, F, Hu, Q):
        import scipy.linalg as sla

        self.Phi, self.d = problem.Phi, problem.d
        self.lam1, self.lam2, self.rho = problem.lam1, problem.lam2, problem.rho
        self.m = problem.m
        n = problem.n
        y = problem.y_w
        PF = F if Q is None else F - Q @ (Q.T @ F)
        Py = y if Q is None else y - Q @ (Q.T @ y)
        self._chol = None
        if self.rho > 0:
            W = F.T @ PF / n + self.rho * np.eye(F.shape[1])
            self._chol = sla.cho_factor(0.5 * (W + W.T), lower=True)
        self._sla = sla
        self.c0 = PF.T @ y / n
        self.yP2 = float(Py @ Py) / n
        if self._chol is not None:
            # Hessians of the unconstrained ridge fit (Gamma = 0): the problem's curvature
            # scale, the floor of relative residuals when the optimum is f = 0, B = 0
            self.hessian_scale = float(np.linalg.norm(
                Hu @ self._sla.cho_solve(self._chol, self.c0)))
        else:
            self.hessian_scale = 0.0
        self.Hu = Hu
        iu, ju = np.triu_indices(self.d)
        self._iu, self._ju = iu, ju
        self._w = np.where(iu == ju, 1.0, 2.0)

    def smooth(self, G):
        """(q(G), None): the value only (a certificate needs no gradient)."""
        if self._chol is None:
            raise ValueError("rho must be > 0 for the dual of convex regression")
        g = self.Hu.T @ (np.asarray(G)[:, self._iu, self._ju] * self._w).ravel()
        c = self.c0 + 0.5 * g
        return float(c @ self._sla.cho_solve(self._chol, c)) - self.yP2, None
