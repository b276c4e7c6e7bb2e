"""The polytope interface (MAP oracle, rounding, membership, projections) and the
plain batched projections onto a box and onto the probability simplex."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._common import as_finite

__all__ = ["Polytope", "project_box", "project_simplex"]


def check_count(value: object, name: str, owner: str, minimum: int = 1) -> int:
    """``value`` as an int >= minimum, or a ValueError naming the argument: no silent
    truncation of 2.7 to 2, no bool, no size 0 that fails later inside numpy."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} of {owner} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} of {owner} must be an integer >= {minimum}, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------
# closed-form projections (plain functions, batched over rows)
# --------------------------------------------------------------------------------------
def project_box(Z: ArrayLike, lo: float, hi: float) -> np.ndarray:
    r"""Euclidean projection onto the box :math:`[lo, hi]^k`: entry-wise clipping.

    Parameters
    ----------
    Z : array-like of shape (..., k)
    lo, hi : float
        Bounds, ``lo <= hi``.

    Returns
    -------
    ndarray of the shape of ``Z``.
    """
    Z = as_finite(Z, "Z")
    if not lo <= hi:
        raise ValueError(f"lo must be <= hi, got lo={lo!r}, hi={hi!r}")
    return np.clip(Z, lo, hi)


def project_simplex(Z: ArrayLike) -> np.ndarray:
    r"""Euclidean projection of each row onto the probability simplex (sorting algorithm).

    .. math::

        \Pi_\Delta(z) = \max(z - \tau, 0), \qquad
        \tau = \frac{1}{\rho}\Big(\sum_{j \le \rho} z_{(j)} - 1\Big), \quad
        \rho = \max\Big\{j : z_{(j)} - \tfrac1j\big(\textstyle\sum_{l \le j} z_{(l)} - 1\big)
               > 0\Big\},

    with :math:`z_{(1)} \ge z_{(2)} \ge \dots` the sorted entries (Held, Wolfe and Crowder,
    1974; Duchi et al., 2008).

    Parameters
    ----------
    Z : array-like of shape (k,) or (n, k)

    Returns
    -------
    P : ndarray of the shape of ``Z``
        Non-negative rows summing to one.
    """
    Z = as_finite(Z, "Z")
    one = Z.ndim == 1
    Z2 = np.atleast_2d(Z)
    if Z2.ndim != 2 or Z2.shape[1] < 1:
        raise ValueError(f"Z must have shape (k,) or (n, k) with k >= 1, got {Z.shape}")
    # shift by the row max: the projection is unchanged by this reparametrization
    # (tau shifts with it) and large inputs (1e9) stay exact
    shift = Z2.max(axis=1, keepdims=True)
    U = -np.sort(-(Z2 - shift), axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    j = np.arange(1, Z2.shape[1] + 1)
    cond = U - css / j > 0
    rho = Z2.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    tau = css[np.arange(len(Z2)), rho - 1] / rho
    P = np.maximum(Z2 - shift - tau[:, None], 0.0)
    return P[0] if one else P


def _batch(theta, shape, name="scores"):
    """``theta`` as a float array of shape ``(m, *shape)`` and whether the input was unbatched."""
    t = np.asarray(theta, dtype=np.float64)
    single = t.shape == tuple(shape)
    if single:
        t = t[None]
    if t.shape[1:] != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} or (m, *{tuple(shape)}), "
                         f"got {np.shape(theta)}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t, single


def _unbatch(out, single):
    return out[0] if single else out


class Polytope:
    """Base class: a marginal polytope with 0/1 vertices in :math:`\\mathbb R^{shape}`."""

    shape: tuple = ()

    def map_oracle(self, scores: ArrayLike) -> np.ndarray:
        """Vertex maximizing ``<scores, v>`` (eq. 2), batched; ties broken deterministically."""
        t, single = _batch(scores, self.shape)
        return _unbatch(self._map(t), single)

    def round(self, mu: ArrayLike) -> np.ndarray:
        """Nearest vertex to ``mu`` (Euclidean): ``map_oracle(mu - 1/2)`` for 0/1 vertices."""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._map(t - 0.5), single)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        """List of CVXPY constraints describing the polytope on ``mu`` (shape ``shape``)."""
        raise NotImplementedError

    def contains(self, mu: ArrayLike, atol: float = 1e-9) -> np.ndarray | bool:
        """Boolean array: does each point of the batch lie in the polytope (to ``atol``)?"""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._contains(t, atol), single)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{\mu \in \mathcal M} \|\mu - \theta\|_2` (eq. 5)."""
        raise NotImplementedError(
            f"Euclidean projection onto the {type(self).__name__} polytope is not implemented yet"
        )

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{\mu \in \mathcal M} KL(\mu, e^{\theta - 1})` (eq. 5)."""
        raise NotImplementedError(
            f"KL projection onto the {type(self).__name__} polytope is not implemented yet"
        )

    # subclasses implement these on batches of shape (m, *shape)
    def _map(self, t):
        raise NotImplementedError

    def _contains(self, t, atol):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}{self.shape}"
