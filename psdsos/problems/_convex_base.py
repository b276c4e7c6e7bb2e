r"""What every convex-regression problem shares (PSD paper eq. 28, 37).

The Hessian constraint :math:`H_j(f) = \Psi_j^T\mathbf B\Psi_j` at m constraint points, the
regularizer :math:`\lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2`,
the weighted rows of the data term and the check that the dual may be formed (rho > 0).
The squared-loss problems (:mod:`psdsos.problems._convex`), the exact representation
(:mod:`psdsos.problems._convex_exact`) and the general losses (:mod:`psdsos.problems._convex_loss`)
derive from :class:`_ConvexRegressionBase`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from psdsos.sos._maps import sos_evaluate

__all__: list[str] = []


class _ConvexRegressionBase:
    """The data and constraint bookkeeping shared by the convex-regression problems."""

    #: The solver must also bring the Hessian residual ||H(f) - A(B)|| below tol.
    coupled = True
    #: Completes "rho must be > 0 for ..." when the dual is asked for with rho = 0.
    _DUAL_NEEDS_RHO = "the dual of convex regression"

    if TYPE_CHECKING:  # set by the problems
        sw: np.ndarray | None
        _dual_ready: bool

    def _set_constraints(self, Hk, Phi, rho, lam1, lam2):
        """Kernel Hessians Hk (m, q, p, p) at the constraint points, their SoS features Phi
        (m, r) and the weights rho, lam1, lam2."""
        self.Hk = np.asarray(Hk, dtype=np.float64)
        self.m, _, self.d, _ = self.Hk.shape
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.rho, self.lam1, self.lam2 = float(rho), float(lam1), float(lam2)

    def _rows(self, A):
        """S A: the rows of A times the square roots of the normalized weights (S = I
        without weights)."""
        if self.sw is None:
            return A
        return self.sw * A if A.ndim == 1 else self.sw[:, None] * A

    def _regularizer(self, B) -> float:
        r""":math:`\lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2`."""
        return self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))

    def _relative_residual(self, H, B, floor=0.0) -> float:
        """||H - A(B)|| / max(||H||, ||A(B)||, floor): the relative violation of the Hessian
        constraint by the Hessians H (m, d, d) and B."""
        F = sos_evaluate(self.Phi, B, self.d)
        den = max(float(np.linalg.norm(H)), float(np.linalg.norm(F)), floor, 1e-300)
        return float(np.linalg.norm(H - F)) / den

    def _hessian_scale(self) -> float:
        """The largest Frobenius norm of a kernel Hessian at a constraint point."""
        return float(np.sqrt(np.max(np.sum(self.Hk * self.Hk, axis=(2, 3)))))

    def _prepare_dual(self):
        """Form the dual's factors once (:meth:`_factor_dual`); rho = 0 is refused."""
        if self._dual_ready:
            return
        if not self.rho > 0:
            raise ValueError(f"rho must be > 0 for {self._DUAL_NEEDS_RHO}; use "
                             "solver='primal' for rho = 0")
        self._factor_dual()
        self._dual_ready = True

    def _factor_dual(self):
        raise NotImplementedError
