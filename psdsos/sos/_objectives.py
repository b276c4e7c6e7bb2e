r"""Objectives of kernel SoS problems, independent of how they are solved.

Each problem object offers what the solvers ask for:

* the dual pieces used by :func:`psdsos.solvers.solve_dual` (``Phi``, ``d``, ``lam1``,
  ``lam2``, ``smooth``, ``smooth_value``, ``smooth_lipschitz``, ``strong_convexity``,
  ``primal_objective``);
* ``cvxpy_problem()`` for :func:`psdsos.solvers.solve_primal`, built once with
  ``cp.Parameter`` for the quantities that change between re-solves.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from psdsos.sos._maps import sos_evaluate
from psdsos.sos._primitive import SoSBlock

__all__ = ["PSDLeastSquares"]


class PSDLeastSquares:
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
    convention; see docs/psd-regression.md for the derivation).

    Parameters
    ----------
    Phi : ndarray (n, r)
        Features of the training points.
    M : ndarray (n, d, d)
        Symmetric targets.
    lam1, lam2 : float
    """

    def __init__(self, Phi, M, lam1, lam2):
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.M = np.asarray(M, dtype=np.float64)
        self.n, self.d = self.M.shape[0], self.M.shape[1]
        self.lam1 = float(lam1)
        self.lam2 = float(lam2)
        self._cvx = None

    # ---- dual pieces -------------------------------------------------------------------
    def smooth(self, G):
        """q(G) = <G, M> + n/2 ||G||^2 and its gradient M + n G."""
        return self.smooth_value(G), self.M + self.n * G

    def smooth_value(self, G):
        return float(np.sum(G * self.M) + 0.5 * self.n * np.sum(G * G))

    def smooth_lipschitz(self):
        return float(self.n)

    def strong_convexity(self):
        return float(self.n)

    def primal_objective(self, G, B, FB):
        return self.objective(B, FB)

    # ---- primal ------------------------------------------------------------------------
    def objective(self, B, FB=None):
        """J(B); pass FB = A(B) if already computed."""
        if FB is None:
            FB = sos_evaluate(self.Phi, B, self.d)
        fit = 0.5 / self.n * float(np.sum((FB - self.M) ** 2))
        return fit + self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.sum(B * B))

    def cvxpy_problem(self):
        """The primal SDP, built once (Parameters: lam1, lam2, and the targets M).

        Returns
        -------
        problem : cvxpy.Problem
        B : cvxpy.Variable
        params : dict of cvxpy.Parameter ("lam1", "lam2", "M")
        """
        if self._cvx is None:
            d = self.d
            block = SoSBlock(self.Phi, d)
            iu, ju = np.triu_indices(d)
            w = np.where(iu == ju, 1.0, np.sqrt(2.0))  # ||X||_F^2 from the upper triangle
            Mp = cp.Parameter((self.n, len(iu)), name="M_packed")
            lam1 = cp.Parameter(nonneg=True, name="lam1")
            lam2 = cp.Parameter(nonneg=True, name="lam2")
            resid = cp.multiply(block.packed - Mp, np.broadcast_to(w, (self.n, len(iu))))
            obj = 0.5 / self.n * cp.sum_squares(resid) + block.regularizer(lam1, lam2)
            prob = cp.Problem(cp.Minimize(obj))
            self._cvx = (prob, block.B, {"lam1": lam1, "lam2": lam2, "M": Mp})
        prob, B, params = self._cvx
        iu, ju = np.triu_indices(self.d)
        params["M"].value = self.M[:, iu, ju]
        params["lam1"].value = self.lam1
        params["lam2"].value = self.lam2
        return prob, B, params
