r"""Regression under several shape constraints, one kernel SoS block per constraint.

The model is :math:`f(x) = \beta_0 + \beta^T x + \sum_l \alpha_l k(x, c_l)` (the affine part
unpenalized, absent without intercept) and each constraint asks a linear functional of f to be
non-negative (PSD for a Hessian block) on a box:

* ``"value"``: :math:`g(z) = s\,(f(z) - b)` (bounds: :math:`f \ge b` with s = 1,
  :math:`f \le b` with s = -1), d = 1;
* ``"derivative"``: :math:`g(z) = s\,\partial_p f(z)` (increasing: s = 1, decreasing:
  s = -1), d = 1;
* ``"hessian"``: :math:`g(z) = s\,\nabla^2_S f(z)`, the |S| x |S| block of the features S
  (convex: s = 1, concave: s = -1), d = |S|.

As in section 4 of the PSD paper (eq. 13-14; d = 1 is the non-negative model of Marteau-Ferey
et al., 2020), each constraint k is imposed at points :math:`z_{kj}` as
:math:`g_k(z_{kj}) = \Psi_{kj}^T\mathbf B_k\Psi_{kj}` with a PSD :math:`\mathbf B_k`, and
the problem is

.. math::

    \min_{\beta, \alpha, \mathbf B_k \succeq 0}\ \frac1n\|S(y - E\beta - \mathbf F\alpha)\|^2
      + \rho\,\alpha^T\mathbf K\alpha
      + \sum_k \lambda_1\operatorname{Tr}\mathbf B_k + \frac{\lambda_2}{2}\|\mathbf B_k\|_F^2
    \quad\text{s.t.}\quad \mathcal L_k(\beta, \alpha) + c_k = \mathcal A_k(\mathbf B_k),

eq. (28) of the PSD paper with one block per constraint (:math:`\mathcal L_k` the linear map
from the coefficients to the constraint's values at its points, :math:`c_k` its constant).
In the coordinates :math:`w = (\beta, v)`, :math:`v = \mathbf R\alpha`
(:math:`\mathbf K = \mathbf R^T\mathbf R`), the data term and the ridge are the quadratic
:math:`Q(w) = \frac1n\|t - \mathbf M w\|^2 + \rho\|v\|^2 = \frac12 w^T\mathbf H w - g^Tw
+ \frac1n\|t\|^2`, and with the Cholesky factor :math:`\mathbf H = \mathbf L\mathbf L^T`,
:math:`a_0 = \mathbf L^{-1}g` and :math:`\mathbf N = \mathbf L^{-1}\mathcal L^T`, the dual
(:class:`psdsos.solvers.BlockDualProblem`) has the smooth part

.. math::

    q(\Gamma) = \frac12\|a_0 + \mathbf N\gamma\|^2 + c^T\gamma - \frac1n\|t\|^2,
    \qquad \nabla q(\Gamma) = \mathcal L w(\Gamma) + c,
    \qquad w(\Gamma) = \mathbf L^{-T}(a_0 + \mathbf N\gamma),

(:math:`\gamma` the stacked :math:`\Gamma_k`), Lipschitz constant
:math:`\|\mathbf N\|_2^2`; the primal matrices are
:math:`\mathbf B_k = \lambda_2^{-1}[\mathcal A_k^*\Gamma_k + \lambda_1 I]_-` and the
constraint holds at the optimum only (``coupled``: the solver also brings the residual
below tol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.linalg as sla

from psdsos.kernels import Kernel
from psdsos.problems._base import BlockDualProblem, DualBlock
from psdsos.problems._convex import floors_from_moments
from psdsos.sos._constraint import ShapeConstraint, constraint_rows

__all__ = ["ShapeConstraint", "ShapeRegressionProblem", "constraint_map"]


def constraint_map(constraint: ShapeConstraint, kernel: Kernel, C: np.ndarray,
                   R: np.ndarray, Z: np.ndarray,
                   fit_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the constraint's linear map at the points Z, in the coordinates w = (beta, v).

    Parameters
    ----------
    constraint : ShapeConstraint
    kernel : Kernel
    C : ndarray (q, p)
        Centres of the expansion.
    R : ndarray (q, q)
        Upper Cholesky factor of the centres' kernel matrix (v = R alpha).
    Z : ndarray (m, p)
        Constraint points.
    fit_intercept : bool
        Whether w starts with the affine coefficients (beta_0, beta_1..p).

    Returns
    -------
    L : ndarray (m d^2, e + q)
        Row j d^2 + a d + b gives entry (a, b) of g(z_j) without its constant.
    c : ndarray (m d^2,)
        The constant (-sign * offset for "value", else 0).
    """
    Kz, A, const = constraint_rows(constraint, kernel, C, Z)
    if not fit_intercept:
        A = A[:, :0]
    # k_z alpha = k_z R^{-1} v
    Kv = sla.solve_triangular(R, Kz.T, trans="T", lower=False).T
    return constraint.sign * np.hstack([A, Kv]), constraint.sign * const


@dataclass
class _Block:
    constraint: ShapeConstraint
    L: np.ndarray
    c: np.ndarray
    Phi: np.ndarray


class ShapeRegressionProblem(BlockDualProblem):
    r"""The multi-block problem of the module docstring (dual and CVXPY primal).

    Parameters
    ----------
    M : ndarray (s, e + q)
        Fit matrix in the coordinates w = (beta, v): the (weighted) fitted values are M w.
    t : ndarray (s,)
        The (weighted) targets: the data term is ||t - M w||^2 / n.
    n : int
        Number of samples (the data term's normalization).
    n_affine : int
        e, the number of unpenalized coefficients at the start of w.
    rho, lam1, lam2 : float
    blocks : list of (ShapeConstraint, L, c, Phi)
        Per constraint: its linear map L (m d^2, e + q) and constant c (:func:`constraint_map`),
        and the SoS features Phi (m, r) of its points.
    moments : (float, float)
        Sums of squares of the centred targets and of the targets (for the solver's floors).
    """

    coupled = True

    def __init__(self, M: np.ndarray, t: np.ndarray, n: int, n_affine: int, rho: float,
                 lam1: float, lam2: float, blocks: list[tuple[ShapeConstraint, np.ndarray,
                                                              np.ndarray, np.ndarray]], *,
                 moments: tuple[float, float] | None = None) -> None:
        self.M = np.asarray(M, dtype=np.float64)
        self.t = np.asarray(t, dtype=np.float64)
        self.n, self.e = int(n), int(n_affine)
        self.rho = float(rho)
        self.parts = [_Block(con, np.asarray(L, float), np.asarray(c, float),
                             np.asarray(Phi, float)) for con, L, c, Phi in blocks]
        super().__init__([DualBlock(b.Phi, b.constraint.d, float(lam1), float(lam2))
                          for b in self.parts])
        self.lam1_, self.lam2_ = float(lam1), float(lam2)
        self.Lall = np.vstack([b.L for b in self.parts])
        self.call = np.concatenate([b.c for b in self.parts])
        self.sizes = [b.L.shape[0] for b in self.parts]
        self._moments = moments if moments is not None else (
            float(((self.t - self.t.mean()) ** 2).sum()), float(self.t @ self.t))
        self._dual_ready = False
        self._last: tuple[Any, Any] = (None, None)
        self._cvx: Any = None

    # ---- the dual --------------------------------------------------------------------------
    def _prepare(self) -> None:
        if self._dual_ready:
            return
        if not self.rho > 0:
            raise ValueError("rho must be > 0 for the dual solver of shape-constrained "
                             "regression; use solver='primal' for rho = 0")
        nw = self.M.shape[1]
        H = (2.0 / self.n) * (self.M.T @ self.M)
        H[np.arange(self.e, nw), np.arange(self.e, nw)] += 2.0 * self.rho
        # the affine block is positive definite when the design has full column rank
        H[np.arange(self.e), np.arange(self.e)] += 1e-12 * max(1.0, float(np.trace(H)) / nw)
        self.Lh = np.linalg.cholesky(0.5 * (H + H.T))
        g = (2.0 / self.n) * (self.M.T @ self.t)
        self.a0 = sla.solve_triangular(self.Lh, g, lower=True)
        self.N = sla.solve_triangular(self.Lh, self.Lall.T, lower=True)
        self._dual_ready = True

    def _flat(self, G: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(Gk).reshape(-1) for Gk in G])

    def _z(self, G: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(gamma, a0 + N gamma), cached for the last G."""
        if self._last[0] is G:
            return self._last[1]
        gam = self._flat(G)
        z = self.a0 + self.N @ gam
        self._last = (G, (gam, z))
        return gam, z

    def smooth(self, G: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        self._prepare()
        gam, z = self._z(G)
        val = 0.5 * float(z @ z) + float(self.call @ gam) - float(self.t @ self.t) / self.n
        grad = self.N.T @ z + self.call
        out, i = [], 0
        for b, size in zip(self.parts, self.sizes, strict=True):
            d = b.constraint.d
            gk = grad[i:i + size].reshape(-1, d, d)
            out.append(0.5 * (gk + gk.transpose(0, 2, 1)))
            i += size
        return val, out

    def smooth_value(self, G: list[np.ndarray]) -> float:
        self._prepare()
        gam = self._flat(G)
        z = self.a0 + self.N @ gam
        return 0.5 * float(z @ z) + float(self.call @ gam) - float(self.t @ self.t) / self.n

    def smooth_lipschitz(self) -> float:
        self._prepare()
        N = self.N
        Gm = N.T @ N if N.shape[1] <= N.shape[0] else N @ N.T
        return float(np.linalg.eigvalsh(Gm)[-1]) * (1 + 1e-10)

    def strong_convexity(self) -> float:
        return 0.0

    def smooth_hessian_factor(self) -> np.ndarray:
        """U = N^T: grad^2 q = N^T N on the stacked Gamma (the preconditioner)."""
        self._prepare()
        return self.N.T

    def dual_floors(self) -> tuple[float, float]:
        """Absolute floors of the relative gap and residual (the data's own scales, as
        :func:`psdsos.problems._convex.dual_floors`)."""
        scale = float(np.sqrt(np.max(np.sum(self.Lall * self.Lall, axis=1))))
        m = sum(b.Phi.shape[0] for b in self.parts)
        return floors_from_moments(*self._moments, self.n, scale, m)

    def recover(self, G: list[np.ndarray]) -> np.ndarray:
        """The primal coefficients w = (beta, v) of a dual point."""
        self._prepare()
        _, z = self._z(G)
        return sla.solve_triangular(self.Lh.T, z, lower=False)

    def objective(self, w: np.ndarray, B: list[np.ndarray]) -> float:
        """Q(w) + the blocks' regularizers (constraints not checked)."""
        r = self.t - self.M @ w
        v = w[self.e:]
        return float(r @ r) / self.n + self.rho * float(v @ v) + self.regularizer(B)

    def primal_objective(self, G: list[np.ndarray], B: list[np.ndarray],
                         FB: list[np.ndarray]) -> float:
        return self.objective(self.recover(G), B)

    def constraint_values(self, w: np.ndarray) -> list[np.ndarray]:
        """g_k at the blocks' points, shapes (m_k, d_k, d_k)."""
        vals = self.Lall @ w + self.call
        out, i = [], 0
        for b, size in zip(self.parts, self.sizes, strict=True):
            d = b.constraint.d
            out.append(vals[i:i + size].reshape(-1, d, d))
            i += size
        return out

    def constraint_residual(self, w: np.ndarray, B: list[np.ndarray]) -> float:
        """Relative violation of g_k(z_kj) = Psi^T B_k Psi over all blocks."""
        from psdsos.sos._maps import sos_evaluate

        g = np.concatenate([v.reshape(-1) for v in self.constraint_values(w)])
        F = np.concatenate([sos_evaluate(b.Phi, Bk, b.constraint.d).reshape(-1)
                            for b, Bk in zip(self.parts, B, strict=True)])
        den = max(float(np.linalg.norm(g)), float(np.linalg.norm(F)), 1e-300)
        return float(np.linalg.norm(g - F)) / den

    # ---- the primal (CVXPY) ------------------------------------------------------------------
    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, list[Any]]:
        """The primal as one CVXPY problem (QP + one PSD block per constraint).

        Returns
        -------
        problem : cvxpy.Problem
        w : cvxpy.Variable
            The coefficients (beta, v).
        blocks : list of psdsos.sos.SoSBlock
            One per constraint (its ``B`` the PSD variable).
        """
        if self._cvx is None:
            from psdsos.sos._primitive import SoSBlock

            w = cp.Variable(self.M.shape[1], name="w")
            cons: list[Any] = []
            sos = []
            for k, b in enumerate(self.parts):
                d = b.constraint.d
                block = SoSBlock(b.Phi, d=d, name=f"B{k}", max_condition=None)
                iu, ju = np.triu_indices(d)
                m = b.Phi.shape[0]
                rows = (np.arange(m)[:, None] * d * d + (iu * d + ju)[None, :]).reshape(-1)
                G = b.L[rows] @ w + b.c[rows]
                cons += block.constraints_packed(cp.reshape(G, (m, len(iu)), order="C"))
                sos.append(block)
            v = w[self.e:]
            obj = (cp.sum_squares(self.t - self.M @ w) / self.n + self.rho * cp.sum_squares(v)
                   + sum(blk.regularizer(self.lam1_, self.lam2_) for blk in sos))
            self._cvx = (cp.Problem(cp.Minimize(obj), cons), w, sos)
        return self._cvx
