r"""A preconditioner for the negative-part duals: the curvature bound made invertible.

The generalized Hessian of :math:`D(\Gamma) = q(\Gamma) + \frac{1}{2\lambda_2}
\|[\mathcal A^*(\Gamma) + \lambda_1 I]_-\|_F^2` is bounded above by

.. math::

    \mathbf P = \nabla^2 q + \frac{1}{\lambda_2}\mathcal A\mathcal A^*
      = U U^T + \mu I + \frac{1}{\lambda_2}(\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I_{d^2},

(the projection onto the PSD cone is non-expansive; :math:`\mathcal A\mathcal A^*` acts as
:math:`(\mathbf K_\Phi\circ\mathbf K_\Phi)\otimes I` on :math:`\Gamma`, see
:func:`psdsos.sos.sos_operator_norm_sq`), where :math:`\nabla^2 q = UU^T + \mu I` is what
the problem reports.  Gradient steps in the metric of P (x <- x - eta P^{-1} grad D) have a
Lipschitz constant <= 1 whatever the conditioning of the kernel matrix; the conditioning of
:math:`\mathbf K_\Phi\circ\mathbf K_\Phi` (eigenvalues spread over many decades for a
Gaussian kernel) is what makes plain gradient steps crawl on convex regression.

P^{-1} is applied without forming P: up to 2000 rows (and at most r(r+1)/2), from the
eigendecomposition of :math:`\mathbf K_\Phi\circ\mathbf K_\Phi` (m x m); beyond (Nystrom
features on many samples), from the split :math:`\mathbf K_\Phi\circ\mathbf K_\Phi \preceq
V\operatorname{diag}(s)V^T + c I` of :func:`psdsos.sos.hadamard_square_factor` (r x r
quantities, passes over the rows, O(m k) memory): P is then replaced by the larger

.. math::

    \tilde{\mathbf P} = U U^T + \Big(\mu + \frac{c}{\lambda_2}\Big) I
      + \frac{1}{\lambda_2} V\operatorname{diag}(s)V^T \otimes I_{d^2}
      \succeq \mathbf P,

so steps in its metric are still 1-Lipschitz; the pairs kept are the fewest whose omitted
trace c is at most a tenth of :math:`\mu\lambda_2` (q strongly convex: the metric is then
within 10% of P's along every direction) or 1e-8 of the Hadamard square's trace (mu = 0),
within the working-memory budget.  A Woodbury correction handles the rank-k term UU^T.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from psdsos.sos import hadamard_square_factor, sos_adjoint, sos_evaluate
from psdsos.sos._maps import DENSE_HADAMARD_MAX

__all__ = ["DualPreconditioner"]

#: relative floor added to P so that it is invertible when mu = 0 and the kernel
#: Hadamard square is numerically singular (directions where D is flat).
_REL_SHIFT = 1e-9


class DualPreconditioner:
    """Apply P^{-1} (module docstring) to arrays of shape (m, d, d).

    Parameters
    ----------
    Phi : ndarray (m, r)
    d : int
    lam2 : float
    mu : float
        Strong-convexity modulus of q (its Hessian's identity part).
    U : ndarray (m*d*d, k) or None
        Low-rank part of the Hessian of q (on vec(Gamma), C order).
    """

    def __init__(self, Phi: np.ndarray, d: int, lam2: float, mu: float | np.ndarray = 0.0,
                 U: np.ndarray | None = None) -> None:
        m, r = Phi.shape
        self.m, self.d = m, int(d)
        self.Phi = Phi
        p = r * (r + 1) // 2
        #: the bound on the Hadamard square beyond V diag(s) V^T (0: exact)
        self.tail = 0.0
        if m <= min(p, DENSE_HADAMARD_MAX):
            Kp = Phi @ Phi.T
            s, V = np.linalg.eigh(Kp * Kp)
            s = np.maximum(s, 0.0)
            self.complement = False
        else:
            rowsq = np.einsum("ij,ij->i", Phi, Phi)
            trace = float(rowsq @ rowsq)  # Tr(K o K) = sum_i |phi_i|^4
            tol = max(0.1 * float(mu) * lam2, 1e-8 * trace)
            V, s, self.tail = hadamard_square_factor(Phi, tail_tol=tol)
            self.complement = True
        scale = s[-1] / lam2 if s.size else 1.0
        if U is not None:
            scale += float(np.sum(U * U)) / max(1, U.shape[1])
        self.shift = (float(mu) + self.tail / lam2
                      + _REL_SHIFT * max(scale, float(mu), 1e-300))
        self.V = V
        self.s = s
        self.s_max = float(s[-1]) if s.size else 0.0
        self.dinv = 1.0 / (s / lam2 + self.shift)
        self.U = U
        if U is not None and U.shape[1] > 0:
            Y = self._apply0(U.reshape(m, -1)).reshape(U.shape)
            S = np.eye(U.shape[1]) + U.T @ Y
            self.Y = Y
            self.S_chol = sla.cho_factor(0.5 * (S + S.T), lower=True)
        else:
            self.U = None

    def lambda_max_bound(self, lam2: float) -> float:
        """An upper bound on the largest eigenvalue of P (of the larger P~ it applies)."""
        extra = 0.0 if self.U is None else float(np.sum(self.U * self.U))
        return self.s_max / lam2 + self.shift + extra

    def hadamard_gram(self, G: np.ndarray) -> np.ndarray:
        """(K_Phi o K_Phi kron I) G = A(A^*(G)) for G of shape (m, d, d), exactly: from the
        stored eigendecomposition when it is complete (tail 0: O(m k d^2)), through the SoS
        maps otherwise (O(m r^2 d^2))."""
        m, d = self.m, self.d
        if self.tail > 0:
            return sos_evaluate(self.Phi, sos_adjoint(self.Phi, G.reshape(m, d, d)), d)
        H = G.reshape(m, d * d)
        out = self.V @ (self.s[:, None] * (self.V.T @ H))
        return out.reshape(m, d, d)

    def _apply0(self, H):
        """(K o K / lam2 kron I + shift I)^{-1} on H of shape (m, anything)."""
        VH = self.V.T @ H
        out = self.V @ (self.dinv[:, None] * VH)
        if self.complement:
            out += (H - self.V @ VH) / self.shift
        return out

    def __call__(self, G: np.ndarray) -> np.ndarray:
        """P^{-1} G for G of shape (m, d, d) (symmetric in, symmetric out)."""
        m, d = self.m, self.d
        z = self._apply0(G.reshape(m, d * d)).reshape(-1)
        if self.U is not None:
            z = z - self.Y @ sla.cho_solve(self.S_chol, self.U.T @ z)
        z = z.reshape(m, d, d)
        return 0.5 * (z + z.transpose(0, 2, 1))


#: The largest dual dimension (sum over the blocks of m_k d_k^2) for which several blocks get
#: the dense preconditioner of :class:`BlockPreconditioner` (a Cholesky factor of that size).
DENSE_BLOCKS_MAX = 6000


class BlockPreconditioner:
    r"""P^{-1} for several SoS blocks, P formed densely on the flat Gamma (module docstring).

    .. math::

        \mathbf P = U U^T + \mu I + \bigoplus_k \frac{1}{\lambda_{2,k}}
          (\mathbf K_{\Phi_k}\circ\mathbf K_{\Phi_k})\otimes I_{d_k^2} + \epsilon I,

    the blocks' Hadamard squares on the diagonal (the negative parts do not couple the
    blocks), the smooth part's curvature :math:`UU^T + \mu I` across them, and
    :math:`\epsilon` the relative floor that makes P invertible.  P bounds the generalized
    Hessian of D, so steps in its metric are 1-Lipschitz.  Factored once (Cholesky, size
    :math:`\sum_k m_k d_k^2 \le` ``DENSE_BLOCKS_MAX``).

    Parameters
    ----------
    blocks : sequence of DualBlock
    U : ndarray (sum_k m_k d_k^2, k) or None
        grad^2 q = mu I + U U^T on the flat Gamma (the blocks' entries one after the other).
    mu : float
    """

    #: applied to the flat vector of all the blocks
    flat = True

    def __init__(self, blocks, U: np.ndarray | None, mu: float = 0.0) -> None:
        parts = []
        for b in blocks:
            K = b.Phi @ b.Phi.T
            parts.append(np.kron(K * K, np.eye(b.d * b.d)) / b.lam2)
        P = sla.block_diag(*parts)
        if U is not None:
            P += U @ U.T
        scale = float(np.max(np.diag(P))) if P.size else 1.0
        P[np.diag_indices_from(P)] += float(mu) + _REL_SHIFT * max(scale, float(mu), 1e-300)
        self.chol = sla.cho_factor(0.5 * (P + P.T), lower=True)

    def __call__(self, g: np.ndarray) -> np.ndarray:
        return sla.cho_solve(self.chol, g)
