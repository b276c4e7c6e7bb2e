r"""The negative-part term of the duals, over one or several SoS blocks.

A dual variable :math:`\Gamma = (\Gamma_1, \dots, \Gamma_K)` has one block per SoS
constraint; block k has m_k matrices of size d_k x d_k, scalar features
:math:`\Phi_k` (m_k x r_k) and weights :math:`\lambda_{1,k}, \lambda_{2,k}`.  The term

.. math::

    \sum_k \frac{1}{2\lambda_{2,k}}\big\|[\mathcal A_k^*(\Gamma_k)
      + \lambda_{1,k} I]_-\big\|_F^2

is separable: one eigendecomposition per block, of size r_k d_k, and the primal matrices
:math:`\mathbf B_k = \lambda_{2,k}^{-1}[\mathcal A_k^*(\Gamma_k) + \lambda_{1,k} I]_-`.
The solvers hold Gamma as one flat vector (the blocks' entries one after the other), so
that the loop's vector arithmetic is the same for every K; :class:`BlockLayout` converts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from psdsos.problems._base import DualBlock
from psdsos.solvers._negpart import NegativePart
from psdsos.sos import sos_adjoint, sos_evaluate, sos_operator_norm_sq

__all__ = ["BlockLayout", "NegativePartTerm", "ProblemView", "coupled_residual"]


class BlockLayout:
    """Flat vector <-> blocks (m_k, d_k, d_k) (views, no copies)."""

    def __init__(self, blocks: Sequence[DualBlock]) -> None:
        self.blocks = list(blocks)
        self.shapes = [b.shape for b in self.blocks]
        self.offsets = [0]
        for m, d, _ in self.shapes:
            self.offsets.append(self.offsets[-1] + m * d * d)
        self.size = self.offsets[-1]

    def split(self, v: np.ndarray) -> list[np.ndarray]:
        """The blocks of the flat vector v."""
        if len(self.shapes) == 1:
            return [v.reshape(self.shapes[0])]
        o = self.offsets
        return [v[o[k]:o[k + 1]].reshape(shape) for k, shape in enumerate(self.shapes)]

    def join(self, parts: Sequence[np.ndarray]) -> np.ndarray:
        """The flat vector of the blocks."""
        if len(parts) == 1:
            return np.asarray(parts[0]).reshape(-1)
        return np.concatenate([np.asarray(p).reshape(-1) for p in parts])

    def symmetric(self, parts: Sequence[np.ndarray]) -> np.ndarray:
        """The flat vector of the blocks' symmetric parts (warm starts)."""
        out = []
        for p, b in zip(parts, self.blocks, strict=True):
            p = np.array(p, dtype=np.float64).reshape(b.shape)
            out.append(0.5 * (p + p.transpose(0, 2, 1)))
        return self.join(out)


class NegativePartTerm:
    """The separable negative-part term and its maps, block by block (module docstring)."""

    def __init__(self, blocks: Sequence[DualBlock]) -> None:
        self.blocks = list(blocks)
        self.negparts = [NegativePart(b.N) for b in self.blocks]
        self.eyes = [b.lam1 * np.eye(b.N) for b in self.blocks]
        self._one = len(self.blocks) == 1  # the common case, without the list bookkeeping

    def lipschitz(self) -> float:
        r"""Its gradient's Lipschitz constant :math:`\max_k \|\mathcal A_k\|^2 / \lambda_{2,k}`."""
        return max(sos_operator_norm_sq(b.Phi) / b.lam2 for b in self.blocks)

    def adjoint(self, Gs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """A_k^*(G_k) per block."""
        if self._one:
            return [sos_adjoint(self.blocks[0].Phi, Gs[0])]
        return [sos_adjoint(b.Phi, G) for b, G in zip(self.blocks, Gs, strict=True)]

    def shifted(self, Gs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """S_k = A_k^*(G_k) + lam1_k I per block (recomputed, never updated linearly:
        rounding drift would be amplified)."""
        if self._one:
            return [sos_adjoint(self.blocks[0].Phi, Gs[0]) + self.eyes[0]]
        return [A + e for A, e in zip(self.adjoint(Gs), self.eyes, strict=True)]

    def __call__(self, Ss: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """(B_k = [S_k]_- / lam2_k per block, the term's value)."""
        if self._one:
            lam2 = self.blocks[0].lam2
            Nneg, sq = self.negparts[0](Ss[0])
            return [Nneg / lam2], sq / (2 * lam2)
        Bs, value = [], 0.0
        for b, neg, S in zip(self.blocks, self.negparts, Ss, strict=True):
            Nneg, sq = neg(S)
            Bs.append(Nneg / b.lam2)
            value += sq / (2 * b.lam2)
        return Bs, value

    def value(self, Ss: Sequence[np.ndarray]) -> float:
        """The term's value from eigenvalues only."""
        value = 0.0
        for b, neg, S in zip(self.blocks, self.negparts, Ss, strict=True):
            value += neg.sq_norm(S) / (2 * b.lam2)
        return value

    def evaluate(self, Bs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """A_k(B_k) per block: the values Psi_j^T B_k Psi_j."""
        if self._one:
            b = self.blocks[0]
            return [sos_evaluate(b.Phi, Bs[0], b.d)]
        return [sos_evaluate(b.Phi, B, b.d) for b, B in zip(self.blocks, Bs, strict=True)]


class ProblemView:
    """The solvers' view of a dual problem: Gamma as one flat vector.

    A one-block problem (attributes ``Phi``, ``d``, ``lam1``, ``lam2``; ``smooth`` on arrays
    of shape (m, d, d)) and a several-block one (attribute ``blocks``; ``smooth`` on lists of
    blocks, :class:`psdsos.solvers.BlockDualProblem`) look the same through it.
    """

    def __init__(self, problem: Any, caps: Any) -> None:
        self.problem = problem
        self.multi = caps.blocks
        fn = caps.smooth_value
        self._smooth_value = fn if fn is not None else (lambda G: problem.smooth(G)[0])
        if self.multi:
            self.blocks = list(problem.blocks)
        else:
            self.blocks = [DualBlock(problem.Phi, int(problem.d), float(problem.lam1),
                                     float(problem.lam2))]
        self.layout = BlockLayout(self.blocks)
        self._shape0 = self.layout.shapes[0]

    def native(self, v: np.ndarray) -> Any:
        """What the problem's methods take: the (m, d, d) array, or the list of blocks."""
        if self.multi:
            return self.layout.split(v)
        return v.reshape(self._shape0)

    def flat(self, G: Any) -> np.ndarray:
        """The flat vector of the problem's form of Gamma."""
        return self.layout.join(G) if self.multi else np.asarray(G).reshape(-1)

    def from_init(self, G: Any) -> np.ndarray:
        """A warm start (one array, or a sequence of blocks), symmetrized, flat."""
        return self.layout.symmetric(list(G) if self.multi else [G])

    def smooth(self, v: np.ndarray) -> tuple[float, np.ndarray]:
        q, g = self.problem.smooth(self.native(v))
        return q, self.flat(g)

    def smooth_value(self, v: np.ndarray) -> float:
        return self._smooth_value(self.native(v))

    def primal_objective(self, v: np.ndarray, Bs: list[np.ndarray],
                         FBs: list[np.ndarray]) -> float:
        if self.multi:
            return self.problem.primal_objective(self.native(v), Bs, FBs)
        return self.problem.primal_objective(self.native(v), Bs[0], FBs[0])

    def residual_floor(self, floor: float) -> float:
        """Floor of the relative residual's denominator of a coupled problem: ``floor`` (the
        problem's own, from its data) or 1e-6 ||grad q(0)||^2 (for convex regression the
        Hessians of the unconstrained ridge fit), the larger."""
        g0 = self.smooth(np.zeros(self.layout.size))[1]
        return max(floor, 1e-6 * float(np.vdot(g0, g0)))

    def result(self, v: np.ndarray, Bs: list[np.ndarray]) -> tuple[Any, Any]:
        """(G, B) as the result reports them: arrays for one block, a tuple of the blocks'
        Gamma and a list of their B for several."""
        if self.multi:
            return tuple(self.layout.split(v)), Bs
        return self.native(v), Bs[0]


def coupled_residual(grad: np.ndarray, gq: np.ndarray, FB: np.ndarray, floor: float) -> float:
    """The relative violation ||grad D|| / max(||grad q||, ||A(B)||, floor^(1/2)) of the
    coupling g(theta(G)) = A(B(G)) (grad D = grad q - A(B)): with the relative gap, the
    certificate of a coupled dual (``floor``: :meth:`ProblemView.residual_floor`)."""
    return float(np.sqrt(float(np.vdot(grad, grad)) / max(
        float(np.vdot(gq, gq)), float(np.vdot(FB, FB)), floor, 1e-300)))
