"""Label ranking as a SELF output space (Blondel 2019, section 4)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import Birkhoff
from psdsos.structured.spaces._polytope_space import (
    AffineDecomposition,
    _finite,
    _RowSpace,
)
from psdsos.structured.spaces._projection_sets import (
    marginal,
    nonneg,
    reals,
    row_simplex,
    unit_cube,
)

__all__ = ["RankingSpace"]


@register_output_space("ranking")
class RankingSpace(_RowSpace):
    r"""Label ranking: Y (n, k) permutations of 0..k-1, Hamming loss, Birkhoff polytope.

    Entry ``y[i]`` is the rank (position, 0 = top) of label i.  Embedding: the permutation
    matrix :math:`\varphi(y)_{i, y_i} = 1` (label i at position :math:`y_i`), flattened to
    :math:`p = k^2`.  The Hamming loss :math:`L(\hat y, y) = \frac1k \sum_i 1[\hat y_i \ne y_i]
    = 1 - \frac1k\langle\varphi(\hat y), \varphi(y)\rangle` (``normalize=True``; the count
    :math:`k - \langle\cdot,\cdot\rangle` if False) decomposes as eq. 9 (appendix A, "Hamming
    loss for ranking") with :math:`V = -\frac1k I_{k^2}`, :math:`b = 0`, :math:`c = 1`.  SELF
    scores :math:`\theta = G / k` with :math:`G = \sum_i \alpha_i \varphi(y_i)`; MAP is the
    linear assignment problem on the Birkhoff polytope (section 4), solved by
    :func:`scipy.optimize.linear_sum_assignment`.

    Negative and mixed-sign weights are fine: linear objective over the permutation matrices.

    Parameters
    ----------
    k : int, optional
        Number of labels; inferred at fit if None.
    normalize : bool, default True
        Hamming loss divided by k.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    __module__ = "psdsos.structured.spaces.discrete"  # the public home (docs, pickles)
    projection_sets = {"marginal": marginal, "unit_cube": unit_cube,
                       "row_simplex": row_simplex, "reals": reals, "nonneg": nonneg}

    def __init__(self, k: int | None = None, *, normalize: bool = True,
                 lp_solver: str = "HIGHS") -> None:
        self.k = k
        self.normalize = normalize
        self.lp_solver = lp_solver

    def to_config(self) -> dict[str, Any]:
        return {"k": None if self.k is None else int(self.k),
                "normalize": bool(self.normalize), "lp_solver": self.lp_solver}

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Rows that are permutations of 0..k-1 (shape (n, k)); ValueError naming ``name``."""
        A = self._int_rows(Y, name, "rank vectors (permutations of 0..k-1)")
        ok = np.all(np.sort(A, axis=1) == np.arange(A.shape[1])[None, :], axis=1)
        if not np.all(ok):
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"{name} rows must be permutations of 0..{A.shape[1] - 1} (entry i "
                             f"= rank of label i); row {bad} is {A[bad].tolist()}")
        return A

    def _make_polytope(self):
        return Birkhoff(self.k_)

    def permutation_matrices(self, Y: ArrayLike) -> np.ndarray:
        """Permutation matrices phi(Y) of shape (n, k, k): ``P[i, y_i] = 1``."""
        Y = self.check_Y(Y, "Y")
        n, k = Y.shape
        P = np.zeros((n, k, k))
        P[np.arange(n)[:, None], np.arange(k)[None, :], Y] = 1.0
        return P

    def embed(self, Y: ArrayLike) -> np.ndarray:
        P = self.permutation_matrices(Y)
        return P.reshape(P.shape[0], -1)

    def _train_structure(self, Y):
        # sparse permutation matrices, flattened: entry (i, l k + y_i[l]) = 1 (n k entries)
        n, k = Y.shape
        cols = (np.arange(k)[None, :] * k + Y).ravel()
        rows = np.repeat(np.arange(n), k)
        return {"P": sp.csr_array((np.ones(n * k), (rows, cols)), shape=(n, k * k))}

    def _weight(self):
        return 1.0 / self.k_ if self.normalize else 1.0

    def _theta(self, a):
        # theta = -(V g) with V = -w I_{k^2}: the weighted sum of permutation matrices, times w
        return self._weight() * np.asarray(a @ self._train["P"])

    def _c_train(self):
        return np.full(len(self.Y_train_), self._weight() * self.k_)

    def from_vertices(self, M: np.ndarray) -> np.ndarray:
        return np.argmax(M, axis=2).astype(np.int64)

    def project(self, Z: ArrayLike) -> np.ndarray:
        r"""Nearest rank vector (Euclidean) to ridge predictions of the ranks ``Z`` (n_test, k).

        The KRLS baseline on the rank-vector encoding (the permutahedron's):
        :math:`\operatorname{argmin}_\pi \|\pi - z\|^2 = \operatorname{argmax}_\pi
        \langle \pi, z\rangle`, i.e. the ranks of z (smallest predicted rank first; ties keep
        label order).  For KRLS on the permutation-matrix embedding use
        ``polytope_.map_oracle(scores(alpha))``, which equals the SELF decoding here.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        order = np.argsort(Z, axis=1, kind="stable")
        ranks = np.empty_like(order)
        ranks[np.arange(len(Z))[:, None], order] = np.arange(self.k_)[None, :]
        return ranks.astype(np.int64)

    def affine_decomposition(self) -> AffineDecomposition:
        k = self.k_
        w = self._weight()
        return AffineDecomposition(-w * np.eye(k * k), np.zeros(k * k),
                                   lambda Y: np.full(len(self.check_Y(Y, "Y")), w * k))

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Hamming loss per sample (fraction of misplaced labels if ``normalize``), (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1) * (1.0 / T.shape[1] if self.normalize else 1.0)
