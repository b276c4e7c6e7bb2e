"""Permutation polytopes: the Birkhoff polytope (ranking) and the permutahedron."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment
from sklearn.exceptions import ConvergenceWarning

from psdsos.structured._common import as_finite
from psdsos.structured._projections import (
    project_birkhoff,
    project_permutahedron_euclidean,
    project_permutahedron_kl,
)
from psdsos.structured.polytopes._base import Polytope, _batch, _unbatch, check_count

__all__ = ["Birkhoff", "Permutahedron"]


class Birkhoff(Polytope):
    r"""Birkhoff polytope of :math:`k \times k` doubly stochastic matrices (section 4).

    Marginal polytope of permutations with :math:`\varphi(\pi)` the permutation matrix,
    :math:`\varphi(\pi)_{i, \pi_i} = 1`.  MAP is the linear assignment problem
    :math:`\operatorname{argmax}_\pi \sum_i \theta_{i, \pi_i}`, solved exactly by
    :func:`scipy.optimize.linear_sum_assignment` (deterministic for equal inputs).
    Projections: Newton's method on the 2k-dimensional dual, semismooth for the Euclidean
    one and on the log-domain Sinkhorn potentials for KL
    (:func:`psdsos.structured._projections.project_birkhoff`), both marginals within ``tol``
    of 1 (or of the rounding floor 4 k eps max|theta| for huge scores).

    Parameters
    ----------
    k : int
        Size of the matrices.
    tol : float, default=1e-10
        Marginal tolerance of the projections.
    max_iter : int, default=100
        Newton iterations per matrix; a projection short of ``tol`` warns
        (ConvergenceWarning).
    """

    def __init__(self, k: int, *, tol: float = 1e-10, max_iter: int = 100) -> None:
        self.k = check_count(k, "k", "Birkhoff")
        self.shape = (self.k, self.k)
        self.tol = float(tol)
        self.max_iter = check_count(max_iter, "max_iter", "Birkhoff")

    def _project(self, theta, kl):
        t, single = _batch(theta, self.shape, "theta")
        res = project_birkhoff(t, kl=kl, tol=self.tol, max_iter=self.max_iter)
        if not np.all(res.converged):
            worst = float(res.marginal_error.max())
            warnings.warn(
                f"Birkhoff projection: marginal error {worst:.2e} > tol {self.tol:g} after "
                f"{self.max_iter} Newton iterations; increase max_iter",
                ConvergenceWarning, stacklevel=3,
            )
        return _unbatch(res.P, single)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{P} \tfrac12\|P - \Theta\|^2` over doubly
        stochastic P (batched)."""
        return self._project(theta, kl=False)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{P} \langle P, \log P\rangle - \langle P,
        \Theta\rangle` over doubly stochastic P (batched)."""
        return self._project(theta, kl=True)

    def _map(self, t):
        out = np.zeros_like(t)
        for j in range(t.shape[0]):
            rows, cols = linear_sum_assignment(t[j], maximize=True)
            out[j, rows, cols] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu, axis=0) == 1, cp.sum(mu, axis=1) == 1]

    def _contains(self, t, atol):
        return (np.all(t >= -atol, axis=(1, 2))
                & np.all(np.abs(t.sum(axis=1) - 1) <= atol * self.k, axis=1)
                & np.all(np.abs(t.sum(axis=2) - 1) <= atol * self.k, axis=1))



class Permutahedron(Polytope):
    r"""Permutahedron :math:`\mathcal P(w) = \operatorname{conv}\{w_\sigma :
    \sigma \text{ a permutation}\}` (section 4, label ranking with
    :math:`\varphi(\sigma) = w_\sigma`).

    MAP: the rearrangement inequality, the largest entry of w where the score is largest
    (stable sort: ties to the smaller index).  Projections by sorting and pool adjacent
    violators (Blondel, Teboul, Berthet and Djolonga, ICML 2020): Euclidean with
    :func:`scipy.optimize.isotonic_regression`, KL in the log domain; exact.

    Parameters
    ----------
    w : array-like of shape (k,), optional
        Default ``(k, k-1, ..., 1)`` when only ``k`` is given.
    k : int, optional
    """

    def __init__(self, w: ArrayLike | None = None, *, k: int | None = None) -> None:
        if w is None:
            if k is None:
                raise ValueError("Permutahedron needs w or k")
            w = np.arange(check_count(k, "k", "Permutahedron"), 0, -1, dtype=np.float64)
        w = as_finite(w, "w")
        if w.ndim != 1 or w.size < 1:
            raise ValueError(f"w must be a non-empty vector, got shape {w.shape}")
        self.w = -np.sort(-w)
        self.k = w.size
        self.shape = (self.k,)

    def _map(self, t):
        out = np.empty_like(t)
        order = np.argsort(-t, axis=1, kind="stable")
        np.put_along_axis(out, order, np.broadcast_to(self.w, t.shape), axis=1)
        return out

    def round(self, mu: ArrayLike) -> np.ndarray:
        """Nearest vertex to ``mu`` (Euclidean): the rearrangement of w in mu's order."""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._map(t), single)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        cons = [cp.sum(mu) == float(self.w.sum())]
        cons += [cp.sum_largest(mu, j) <= float(self.w[:j].sum()) for j in range(1, self.k)]
        return cons

    def _contains(self, t, atol):
        s = -np.sort(-t, axis=1)
        scale = atol * max(1.0, float(np.abs(self.w).sum()))
        top = np.cumsum(s, axis=1) <= np.cumsum(self.w)[None, :] + scale
        return np.all(top[:, :-1], axis=1) & (np.abs(s.sum(axis=1) - self.w.sum()) <= scale)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_permutahedron_euclidean(t, self.w), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_permutahedron_kl(t, self.w), single)
