"""The order simplex (ordinal regression, Blondel 2019, Proposition 4)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import isotonic_regression

from psdsos.structured._projections import project_order_simplex_kl
from psdsos.structured.polytopes._base import Polytope, _batch, _unbatch, check_count

__all__ = ["OrderSimplex"]


class OrderSimplex(Polytope):
    r"""Order simplex.

    .. math::

        \{\mu \in \mathbb R^{k-1} : 1 \ge \mu_1 \ge \dots \ge \mu_{k-1} \ge 0\}

    Marginal polytope of ordinal regression with the cumulative encoding
    :math:`\varphi(y) = \sum_{i < y} e_i` (labels 0..k-1, so :math:`\varphi(y)` has ``y``
    leading ones; Proposition 4).  MAP: the score of vertex ``y`` is the cumulative sum
    :math:`\sum_{i<y} \theta_i`, O(k); ties go to the smallest label.  Euclidean projection =
    bounded antitonic regression (pool adjacent violators, then clip to [0, 1]).

    Parameters
    ----------
    k : int
        Number of ordered classes (the polytope lives in dimension k - 1 >= 1).
    """

    def __init__(self, k: int) -> None:
        self.k = check_count(k, "k", "OrderSimplex")
        if self.k < 2:
            raise ValueError(f"the order simplex needs k >= 2 classes, got k={k}")
        self.shape = (self.k - 1,)

    def map_labels(self, t: np.ndarray) -> np.ndarray:
        """Label (number of leading ones) of the MAP vertex for a batch of scores (m, k-1)."""
        cum = np.concatenate([np.zeros((t.shape[0], 1)), np.cumsum(t, axis=1)], axis=1)
        return np.argmax(cum, axis=1)

    def _map(self, t):
        y = self.map_labels(t)
        return (np.arange(self.k - 1)[None, :] < y[:, None]).astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        cons = [mu[0] <= 1, mu[self.k - 2] >= 0]
        if self.k > 2:
            cons.append(mu[:-1] >= mu[1:])
        return cons

    def _contains(self, t, atol):
        ok = (t[:, 0] <= 1 + atol) & (t[:, -1] >= -atol)
        if self.k > 2:
            ok &= np.all(t[:, :-1] >= t[:, 1:] - atol, axis=1)
        return ok

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        # antitonic regression, then the clip to [0, 1]: with constant bounds the bounded
        # isotonic regression is the clipped unbounded one
        t, single = _batch(theta, self.shape, "theta")
        out = np.stack([isotonic_regression(row, increasing=False).x for row in t])
        return _unbatch(np.clip(out, 0.0, 1.0), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\min(1, \exp(\mathrm{antitonic}(\theta - 1)))`
        (:func:`psdsos.structured._projections.project_order_simplex_kl`)."""
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_order_simplex_kl(t), single)
