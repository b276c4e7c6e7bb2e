r"""PSD-valued least squares (PSD paper eq. 11): its dual pieces and its CVXPY primal.

The problem object offers what the solvers ask for: the dual pieces used by
:func:`psdsos.solvers.solve_dual` (``Phi``, ``d``, ``lam1``, ``lam2``, ``smooth``,
``smooth_value``, ``smooth_lipschitz``, ``strong_convexity``, ``primal_objective``) and
``cvxpy_problem()`` for :func:`psdsos.solvers.solve_primal`, built once with
``cp.Parameter`` for the quantities that change between re-solves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import cvxpy as cp
import numpy as np

from psdsos.sos._maps import sos_evaluate
from psdsos.sos._primitive import SoSBlock

__all__ = ["PSDLeastSquares"]


class _PSDPrimal:
    """The primal hooks shared by the PSD-valued regression problems (eq. 9 and 11): the
    objective from the data term ``_data_term(F_B)`` plus the regularizer, and no
    constraint besides B PSD."""

    if TYPE_CHECKING:  # provided by the problems
        Phi: np.ndarray
        M: np.ndarray
        d: int
        lam1: float
        lam2: float
        _cvx: Any

        def _data_term(self, FB: np.ndarray) -> float: ...

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        return self.objective(B, FB)

    def objective(self, B: np.ndarray, FB: np.ndarray | None = None) -> float:
        """J(B); pass FB = A(B) if already computed."""
        if FB is None:
            FB = sos_evaluate(self.Phi, B, self.d)
        fit = self._data_term(FB)
        return fit + self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))

    def evaluate_primal(self, B: np.ndarray,
                        params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Objective (numpy) and extra primal variables after a CVXPY solve."""
        return self.objective(B), {}

    def primal_residual(self, B: np.ndarray, extras: dict[str, Any], floor: float = 0.0) -> float:
        """0: the primal has no equality constraint besides B PSD."""
        return 0.0

    def _with_parameters(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        """The program built by ``cvxpy_problem`` with its Parameters set to the targets
        (packed upper triangles) and the weights lam1, lam2."""
        prob, B, params = self._cvx
        iu, ju = np.triu_indices(self.d)
        params["M"].value = self.M[:, iu, ju]
        params["lam1"].value = self.lam1
        params["lam2"].value = self.lam2
        return prob, B, params


class PSDLeastSquares(_PSDPrimal):
    r"""PSD-valued least squares, PSD paper eq. (11).

    .. math::

        J(\mathbf B) = \frac{1}{2n}\sum_{i=1}^n \|\Psi_i^T\mathbf B\Psi_i - \mathbf M_i\|_F^2
          + \lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2,
        \qquad \mathbf B \succeq 0 .

    Its dual (Theorem 3 with :math:`L(Z) = \frac{1}{2n}\sum\|Z_i - M_i\|^2`, hence
    :math:`L^*(\Gamma) = \sum\langle\Gamma_i, M_i\rangle + \frac n2\|\Gamma_i\|^2`) is

    .. math::

        \min_\Gamma\ D(\Gamma) = \sum_i \langle\Gamma_i, \mathbf M_i\rangle
          + \frac n2 \sum_i\|\Gamma_i\|_F^2
          + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2,
        \qquad J^\star = -\min_\Gamma D(\Gamma),

    the smooth part q is n-strongly convex with n-Lipschitz gradient, and at the optimum
    :math:`\Gamma_i = (F_{\mathbf B}(x_i) - \mathbf M_i)/n` (eq. 12 up to the factor
    convention; see docs/psd-regression-math.md for the derivation).

    Parameters
    ----------
    Phi : ndarray (n, r)
        Features of the training points.
    M : ndarray (n, d, d)
        Symmetric targets.
    lam1, lam2 : float
    """

    def __init__(self, Phi: np.ndarray, M: np.ndarray, lam1: float, lam2: float) -> None:
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.M = np.asarray(M, dtype=np.float64)
        self.n, self.d = self.M.shape[0], self.M.shape[1]
        self.lam1 = float(lam1)
        self.lam2 = float(lam2)
        self._cvx: Any = None

    # ---- dual pieces -------------------------------------------------------------------
    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """q(G) = <G, M> + n/2 ||G||^2 and its gradient M + n G."""
        return self.smooth_value(G), self.M + self.n * G

    def smooth_value(self, G: np.ndarray) -> float:
        return float(np.vdot(G, self.M) + 0.5 * self.n * np.vdot(G, G))

    def smooth_lipschitz(self) -> float:
        return float(self.n)

    def strong_convexity(self) -> float:
        return float(self.n)

    # ---- primal ------------------------------------------------------------------------
    def _data_term(self, FB):
        R = FB - self.M
        return 0.5 / self.n * float(np.vdot(R, R))

    def dual_point(self, B: np.ndarray, extras: dict[str, Any],
                   params: dict[str, Any]) -> np.ndarray:
        r"""The dual variable of eq. (12) at a primal point: :math:`\Gamma_i =
        (F_{\mathbf B}(x_i) - \mathbf M_i)/n`, optimal when B is (Theorem 3)."""
        return (sos_evaluate(self.Phi, B, self.d) - self.M) / self.n

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        """The primal SDP, built once (Parameters: lam1, lam2, and the targets M).

        Returns
        -------
        problem : cvxpy.Problem
        B : cvxpy.Variable
        params : dict of cvxpy.Parameter ("lam1", "lam2", "M")
        """
        if self._cvx is None:
            d = self.d
            # certified by solve_primal: no conditioning refusal
            block = SoSBlock(self.Phi, d, max_condition=None)
            iu, ju = np.triu_indices(d)
            w = np.where(iu == ju, 1.0, np.sqrt(2.0))  # ||X||_F^2 from the upper triangle
            Mp = cp.Parameter((self.n, len(iu)), name="M_packed")
            lam1 = cp.Parameter(nonneg=True, name="lam1")
            lam2 = cp.Parameter(nonneg=True, name="lam2")
            resid = cp.multiply(block.packed - Mp, np.broadcast_to(w, (self.n, len(iu))))
            obj = 0.5 / self.n * cp.sum_squares(resid) + block.regularizer(lam1, lam2)
            prob = cp.Problem(cp.Minimize(obj))
            self._cvx = (prob, block.B, {"lam1": lam1, "lam2": lam2, "M": Mp})
        return self._with_parameters()
