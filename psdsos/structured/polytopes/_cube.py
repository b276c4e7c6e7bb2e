"""The unit cube and the knapsack polytope (multilabel, without and with label-count bounds)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._projections import project_knapsack_kl
from psdsos.structured.polytopes._base import Polytope, _batch, _unbatch, check_count

__all__ = ["UnitCube", "Knapsack"]


class UnitCube(Polytope):
    r"""Unit cube :math:`[0, 1]^k`: multilabel with :math:`\varphi(y) = y \in \{0,1\}^k`.

    MAP = thresholding, label i predicted iff :math:`\theta_i > 0` (a tie, 0, is not
    predicted).  Euclidean projection = clipping, KL projection =
    :math:`\min(1, e^{\theta - 1})` (section 4).
    """

    def __init__(self, k: int) -> None:
        self.k = check_count(k, "k", "UnitCube")
        self.shape = (self.k,)

    def _map(self, t):
        return (t > 0).astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, mu <= 1]

    def _contains(self, t, atol):
        return np.all((t >= -atol) & (t <= 1 + atol), axis=1)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(np.clip(t, 0.0, 1.0), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(np.exp(np.minimum(t - 1.0, 0.0)), single)


class Knapsack(Polytope):
    r"""Knapsack polytope :math:`\{\mu \in [0,1]^k : l \le \langle\mu, \mathbf 1\rangle \le u\}`.

    Marginal polytope of the subsets of :math:`[k]` with :math:`l \le |y| \le u` (section 4).
    MAP (the paper's sorting rule): with :math:`\pi` sorting :math:`\theta` in descending
    order (stable: equal scores keep index order), take :math:`\pi_1..\pi_l`, then those of
    :math:`\pi_{l+1}..\pi_u` with :math:`\theta > 0`.  Euclidean projection by Proposition 3
    (clip, then if the count bound is violated project onto
    :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf 1\rangle = m\}` by bisection on the shift).

    Parameters
    ----------
    k : int
    lower, upper : int
        :math:`0 \le l \le u \le k`.
    """

    def __init__(self, k: int, lower: int, upper: int) -> None:
        self.k = check_count(k, "k", "Knapsack")
        self.lower = check_count(lower, "lower", "Knapsack", minimum=0)
        self.upper = check_count(upper, "upper", "Knapsack", minimum=0)
        if not 0 <= self.lower <= self.upper <= self.k:
            raise ValueError(
                f"knapsack bounds must satisfy 0 <= lower <= upper <= k = {self.k}, "
                f"got lower={lower}, upper={upper}"
            )
        self.shape = (self.k,)

    def _map(self, t):
        order = np.argsort(-t, axis=1, kind="stable")
        rank = np.empty_like(order)
        rank[np.arange(t.shape[0])[:, None], order] = np.arange(self.k)
        take = (rank < self.lower) | ((rank < self.upper) & (t > 0))
        return take.astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        s = cp.sum(mu)
        return [mu >= 0, mu <= 1, s >= self.lower, s <= self.upper]

    def _contains(self, t, atol):
        s = t.sum(axis=1)
        return (np.all((t >= -atol) & (t <= 1 + atol), axis=1)
                & (s >= self.lower - atol * self.k) & (s <= self.upper + atol * self.k))

    def project_euclidean(self, theta: ArrayLike, *, tol: float = 1e-12,
                          max_iter: int = 200) -> np.ndarray:
        """Proposition 3; ``tol`` / ``max_iter``: bisection tolerance on the shift, iterations."""
        t, single = _batch(theta, self.shape, "theta")
        nu = np.clip(t, 0.0, 1.0)
        s = nu.sum(axis=1)
        out = nu.copy()
        for m, rows in ((self.upper, s > self.upper), (self.lower, s < self.lower)):
            if not np.any(rows):
                continue
            tr = t[rows]
            # sum(clip(t - tau, 0, 1)) is non-increasing in tau, = k at lo and 0 at hi
            lo = tr.min(axis=1) - 1.0
            hi = tr.max(axis=1)
            for _ in range(max_iter):
                mid = 0.5 * (lo + hi)
                big = np.clip(tr - mid[:, None], 0.0, 1.0).sum(axis=1) > m
                lo = np.where(big, mid, lo)
                hi = np.where(big, hi, mid)
                if np.all(hi - lo <= tol * (1.0 + np.abs(hi))):
                    break
            out[rows] = np.clip(tr - 0.5 * (lo + hi)[:, None], 0.0, 1.0)
        return _unbatch(out, single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`u = \min(1, e^{\theta - 1 - \tau})`, :math:`\tau` from the active bound
        of the sum (0 if none), exact by sorting (:func:`_projections.project_knapsack_kl`)."""
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_knapsack_kl(t, self.lower, self.upper), single)
