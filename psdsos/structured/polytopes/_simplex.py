"""The probability simplex (multiclass) and row-stochastic matrices (a projection set)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured.polytopes._base import (
    Polytope,
    _batch,
    _unbatch,
    check_count,
    project_simplex,
)

__all__ = ["Simplex", "RowSimplex"]


class Simplex(Polytope):
    r"""Probability simplex :math:`\triangle^k = \{\mu \ge 0, \langle \mu, \mathbf 1\rangle = 1\}`.

    Marginal polytope of multiclass classification with :math:`\varphi(y) = e_y` (section 4).
    MAP = argmax; ties go to the smallest index.  Euclidean projection = sparsemax, KL
    projection = softmax.
    """

    def __init__(self, k: int) -> None:
        self.k = check_count(k, "k", "Simplex")
        self.shape = (self.k,)

    def _map(self, t):
        out = np.zeros_like(t)
        out[np.arange(t.shape[0]), np.argmax(t, axis=1)] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu) == 1]

    def _contains(self, t, atol):
        return np.all(t >= -atol, axis=1) & (np.abs(t.sum(axis=1) - 1.0) <= atol * self.k)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_simplex(t), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        e = np.exp(t - t.max(axis=1, keepdims=True))
        return _unbatch(e / e.sum(axis=1, keepdims=True), single)



class RowSimplex(Polytope):
    r"""Row-stochastic :math:`k \times k` matrices, :math:`\{P \ge 0, P\mathbf 1 =
    \mathbf 1\}`: a superset of the Birkhoff polytope (section 4, label ranking).

    MAP: each row's argmax (ties to the smallest index).  Projections row by row: sparsemax
    (Euclidean) and softmax (KL).  Its vertices are the 0/1 matrices with one 1 per row,
    not only permutations.
    """

    def __init__(self, k: int) -> None:
        self.k = check_count(k, "k", "RowSimplex")
        self.shape = (self.k, self.k)

    def _map(self, t):
        out = np.zeros_like(t)
        m = t.shape[0]
        idx = np.argmax(t, axis=2)
        out[np.arange(m)[:, None], np.arange(self.k)[None, :], idx] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu, axis=1) == 1]

    def _contains(self, t, atol):
        return (np.all(t >= -atol, axis=(1, 2))
                & np.all(np.abs(t.sum(axis=2) - 1) <= atol * self.k, axis=1))

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        out = project_simplex(t.reshape(-1, self.k)).reshape(t.shape)
        return _unbatch(out, single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        e = np.exp(t - t.max(axis=2, keepdims=True))
        return _unbatch(e / e.sum(axis=2, keepdims=True), single)
