r"""A negative-part dual with several SoS blocks, for problems built from parts.

The primal

.. math::

    \min_{\mathbf B_1, \dots, \mathbf B_K \succeq 0}\
      \ell\big(\mathcal A_1(\mathbf B_1), \dots, \mathcal A_K(\mathbf B_K)\big)
      + \sum_k \lambda_{1,k}\operatorname{Tr}\mathbf B_k
      + \frac{\lambda_{2,k}}{2}\|\mathbf B_k\|_F^2,

with :math:`\mathcal A_k(\mathbf B)_j = \Psi_{kj}^T \mathbf B \Psi_{kj}` (block k: m_k
points, features :math:`\Phi_k`, matrices of size d_k), has the dual (Lagrange multipliers
:math:`\Gamma_k` of :math:`a_k = \mathcal A_k(\mathbf B_k)`)

.. math::

    \min_{\Gamma_1, \dots, \Gamma_K}\ q(\Gamma) + \sum_k \frac{1}{2\lambda_{2,k}}
      \big\|[\mathcal A_k^*(\Gamma_k) + \lambda_{1,k} I]_-\big\|_F^2,
    \qquad q = \ell^*,

and the primal matrices :math:`\mathbf B_k = \lambda_{2,k}^{-1}[\mathcal A_k^*(\Gamma_k)
+ \lambda_{1,k} I]_-`, PSD by construction.  :func:`psdsos.solvers.solve_dual` solves it
with the same loop as the one-block problems (PSD least squares and convex regression are
K = 1).  The smooth part couples the blocks; the negative parts do not (one
eigendecomposition per block).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BlockDualProblem", "DualBlock", "DualProblem"]

@dataclass(frozen=True)
class DualBlock:
    """One SoS block of a negative-part dual.

    Attributes
    ----------
    Phi : ndarray (m, r)
        Scalar features of the block's m points (Psi_j = phi_j kron I_d).
    d : int
        Size of the block's matrices Gamma_j (and of the PSD values F_B(x)).
    lam1, lam2 : float
        Trace and Frobenius weights of the block's B (lam2 > 0 for the dual).
    """

    Phi: np.ndarray
    d: int
    lam1: float
    lam2: float

    @property
    def m(self) -> int:
        """Number of points (matrices Gamma_j)."""
        return int(self.Phi.shape[0])

    @property
    def N(self) -> int:
        """Size r d of the block's B."""
        return int(self.Phi.shape[1]) * int(self.d)

    @property
    def shape(self) -> tuple[int, int, int]:
        """Shape (m, d, d) of the block's Gamma."""
        return (self.m, int(self.d), int(self.d))



class DualProblem:
    """What :func:`solve_dual` needs from a one-block problem (subclass and fill in; the
    interface, with its optional hooks, is :class:`~psdsos.solvers.DualProblemProtocol`).

    Attributes
    ----------
    Phi : ndarray (m, r)
        Scalar features of the m constraint / evaluation points (Psi_j = phi_j kron I_d).
    d : int
        Size of the matrices Gamma_j.
    lam1, lam2 : float
        Trace and Frobenius weights; lam2 must be > 0 for the dual.
    """

    Phi: np.ndarray
    d: int
    lam1: float
    lam2: float

    #: True when the primal point recovered from G satisfies the coupling constraints
    #: g(theta) = A(B) only at the optimum (convex regression); the solver then also
    #: requires the relative residual ||grad D|| / max(||grad q||, ||A(B)||) <= tol.
    coupled = False

    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """Return (q(G), grad q(G)) for G of shape (m, d, d)."""
        raise NotImplementedError

    def smooth_value(self, G: np.ndarray) -> float:
        """q(G) alone (line search); defaults to ``smooth(G)[0]``."""
        return self.smooth(G)[0]

    def smooth_lipschitz(self) -> float:
        """An upper bound on the Lipschitz constant of grad q."""
        raise NotImplementedError

    def strong_convexity(self) -> float:
        """Strong convexity modulus mu of q (0 if not strongly convex)."""
        return 0.0

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        """Primal objective at the primal point recovered from (G, B); FB = A(B)."""
        raise NotImplementedError



SmoothFn = Callable[[list[np.ndarray]], tuple[float, list[np.ndarray]]]


class BlockDualProblem:
    """A negative-part dual over the blocks (G_1, ..., G_K) (module docstring).

    Give q either as callables or by subclassing and overriding :meth:`smooth`,
    :meth:`data_term` (and :meth:`primal_objective` when the primal has other variables).

    Parameters
    ----------
    blocks : sequence of DualBlock
        One per SoS constraint: features Phi_k (m_k, r_k), size d_k, lam1_k, lam2_k > 0.
    smooth : callable, optional
        ``smooth([G_1, ..., G_K]) -> (q(G), [grad_1 q, ..., grad_K q])``, G_k of shape
        (m_k, d_k, d_k).
    data_term : callable, optional
        ``data_term([A_1(B_1), ..., A_K(B_K)]) -> l(a)``, the primal's data term (q = l^*);
        the primal objective adds the blocks' regularizers.
    lipschitz : float
        A bound on the Lipschitz constant of grad q.
    strong_convexity : float, default=0
        Strong convexity modulus of q.
    """

    #: The primal point recovered from G is feasible for every G (no coupling constraint).
    coupled = False

    def __init__(self, blocks: Sequence[DualBlock], smooth: SmoothFn | None = None, *,
                 data_term: Callable[[list[np.ndarray]], float] | None = None,
                 lipschitz: float = float("inf"), strong_convexity: float = 0.0) -> None:
        self.blocks = list(blocks)
        if not self.blocks:
            raise ValueError("blocks must hold at least one DualBlock")
        for k, b in enumerate(self.blocks):
            if not isinstance(b, DualBlock):
                raise ValueError(f"blocks[{k}] must be a DualBlock, got {type(b).__name__}")
            if not float(b.lam2) > 0:
                raise ValueError(f"blocks[{k}].lam2 must be > 0 for the dual, got {b.lam2!r}")
        self._smooth, self._data_term = smooth, data_term
        self._lipschitz, self._mu = float(lipschitz), float(strong_convexity)

    @property
    def lam1(self) -> float:
        """The smallest trace weight over the blocks."""
        return min(float(b.lam1) for b in self.blocks)

    @property
    def lam2(self) -> float:
        """The smallest Frobenius weight over the blocks (> 0)."""
        return min(float(b.lam2) for b in self.blocks)

    def smooth(self, G: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        """(q(G), grad q(G)) for the blocks G = [G_1, ..., G_K]."""
        if self._smooth is None:
            raise NotImplementedError("give smooth= or override BlockDualProblem.smooth")
        return self._smooth(G)

    def smooth_value(self, G: list[np.ndarray]) -> float:
        """q(G) alone (line search)."""
        return float(self.smooth(G)[0])

    def smooth_lipschitz(self) -> float:
        """A bound on the Lipschitz constant of grad q."""
        return self._lipschitz

    def strong_convexity(self) -> float:
        """Strong convexity modulus of q (0 if not strongly convex)."""
        return self._mu

    def data_term(self, FB: list[np.ndarray]) -> float:
        """The primal's data term l at the values A_k(B_k)."""
        if self._data_term is None:
            raise NotImplementedError("give data_term= or override BlockDualProblem.data_term")
        return float(self._data_term(FB))

    def regularizer(self, B: Sequence[np.ndarray]) -> float:
        """sum_k lam1_k Tr B_k + lam2_k / 2 ||B_k||_F^2."""
        return float(sum(b.lam1 * np.trace(Bk) + 0.5 * b.lam2 * float(np.vdot(Bk, Bk))
                         for b, Bk in zip(self.blocks, B, strict=True)))

    def primal_objective(self, G: list[np.ndarray], B: list[np.ndarray],
                         FB: list[np.ndarray]) -> float:
        """The primal objective at the matrices B_k recovered from G; FB_k = A_k(B_k)."""
        return self.data_term(FB) + self.regularizer(B)
