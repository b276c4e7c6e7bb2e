r"""Projection-based Fenchel-Young losses (Blondel, "Structured Prediction with Projection
Oracles", NeurIPS 2019, eq. 4-6).

With :math:`\Omega = \Psi + I_{\mathcal C}` and :math:`P = P^\Psi_{\mathcal C}(\theta)` the
projection of eq. 5, :math:`\Omega^*(\theta) = \langle\theta, P\rangle - \Psi(P)`, so eq. 4
reads

.. math::

    S^\Psi_{\mathcal C}(\theta, y) = \Psi(\varphi(y)) - \Psi(P) - \langle\theta,
    \varphi(y) - P\rangle, \qquad \nabla_\theta S = P - \varphi(y),

which for :math:`\Psi = \tfrac12\|\cdot\|^2` is the stable difference of squares
:math:`\tfrac12\|\varphi(y) - \theta\|^2 - \tfrac12\|P - \theta\|^2`, and for
:math:`\Psi(u) = \langle u, \log u\rangle` (with :math:`0 \log 0 = 0`) uses only entries of
:math:`\varphi(y)` and P, which lie in [0, 1] on the polytopes here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import xlogy

__all__ = ["fenchel_young_loss", "PROJECTIONS"]

#: The two geometries of eq. 5.
PROJECTIONS = ("euclidean", "kl")


#: Tolerance of the check that the targets lie in the set.
MEMBERSHIP_ATOL = 1e-7


def fenchel_young_loss(theta: ArrayLike, y: ArrayLike, polytope: Any,
                       projection: str = "euclidean"
                       ) -> tuple[float | NDArray[np.float64], NDArray[np.float64]]:
    r"""Projection-based Fenchel-Young loss and its gradient (eq. 6).

    Parameters
    ----------
    theta : array-like of shape ``polytope.shape`` or ``(m, *polytope.shape)``
        Scores.
    y : array-like of the same shape
        Encoded targets :math:`\varphi(y)` (points of the set, e.g. one-hot vectors or
        permutation matrices).
    polytope : object with ``shape``, ``project_euclidean`` and ``project_kl``
        The projection set :math:`\mathcal C`, e.g. a class of
        :mod:`psdsos.structured.polytopes`.
    projection : {"euclidean", "kl"}
        :math:`\Psi = \tfrac12\|\cdot\|^2` or :math:`\Psi(u) = \langle u, \log u\rangle`.

    Returns
    -------
    loss : float or ndarray of shape (m,)
        :math:`S^\Psi_{\mathcal C}(\theta, y) \ge 0` (rounding below 0 is clipped).
    grad : ndarray of the shape of ``theta``
        :math:`P^\Psi_{\mathcal C}(\theta) - \varphi(y)`.

    Raises
    ------
    ValueError
        For an unknown ``projection``, shapes that do not match, non-finite scores,
        targets outside the set (where the loss is :math:`+\infty`; checked with the
        set's ``contains`` to 1e-7 when it has one), or (KL) targets with negative entries
        (outside the domain of :math:`\Psi`).
    """
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    shape = tuple(polytope.shape)
    t = np.asarray(theta, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    single = t.shape == shape
    if single:
        t = t[None]
    if t.shape[1:] != shape:
        raise ValueError(f"theta must have shape {shape} or (m, *{shape}), got {np.shape(theta)}")
    if Y.shape == shape:
        Y = np.broadcast_to(Y, t.shape)
    if Y.shape != t.shape:
        raise ValueError(f"y must have the shape of theta {np.shape(theta)}, got {np.shape(y)}")
    if not np.all(np.isfinite(t)):
        raise ValueError("theta must be finite (no NaN or inf)")
    if not np.all(np.isfinite(Y)):
        raise ValueError("y must be finite (no NaN or inf)")
    if projection == "kl" and np.any(Y < 0):
        raise ValueError("y must be >= 0 for projection='kl' (the domain of <u, log u>)")
    contains = getattr(polytope, "contains", None)
    if contains is not None:
        # S(theta, y) = Psi(y) + Psi*(theta) - <theta, y> with Psi = 1/2||.||^2 + the
        # indicator of C: +inf for y outside C, not a finite number
        inside = np.asarray(contains(Y, atol=MEMBERSHIP_ATOL), dtype=bool).reshape(-1)
        if not np.all(inside):
            bad = np.flatnonzero(~inside)
            raise ValueError(
                f"y must lie in the set {type(polytope).__name__} (the loss is +inf outside "
                f"it): {bad.size} of {inside.size} targets are not in it (first: index "
                f"{int(bad[0])})")
    axes = tuple(range(1, t.ndim))
    if projection == "euclidean":
        P = np.asarray(polytope.project_euclidean(t), dtype=np.float64)
        loss = 0.5 * (np.sum((Y - t) ** 2, axis=axes) - np.sum((P - t) ** 2, axis=axes))
    else:
        if np.any(Y < 0):
            raise ValueError("y must be >= 0 for projection='kl' (the domain of <u, log u>)")
        P = np.asarray(polytope.project_kl(t), dtype=np.float64)
        loss = (np.sum(xlogy(Y, Y), axis=axes) - np.sum(xlogy(P, P), axis=axes)
                - np.sum(t * (Y - P), axis=axes))
    loss = np.maximum(loss, 0.0)
    grad = P - Y
    if single:
        return float(loss[0]), grad[0]
    return loss, grad
