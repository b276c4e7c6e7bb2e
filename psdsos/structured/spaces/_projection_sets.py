r"""The projection sets of the Fenchel-Young losses (Blondel 2019, eq. 5) the discrete spaces
declare in their ``projection_sets``: ``{name: build}``, ``build(space)`` giving the convex
set :math:`\mathcal C \supseteq \varphi(\mathcal Y)` of the fitted space.

A set offers ``shape`` and the batched ``project_euclidean(t)`` / ``project_kl(t)`` on
arrays of shape ``(m, *shape)`` (the polytopes of :mod:`psdsos.structured.polytopes` do).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured.polytopes import RowSimplex, UnitCube

__all__ = ["COMMON_SETS"]


class _Orthant:
    """R^p ("reals") or the non-negative orthant ("nonneg"): Euclidean projections identity
    or max(t, 0); the KL projection onto either (the domain of <u, log u>) is e^{t - 1}."""

    def __init__(self, p: int, nonneg: bool) -> None:
        self.shape = (p,)
        self.nonneg = nonneg

    def project_euclidean(self, t: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return np.maximum(t, 0.0) if self.nonneg else t

    def project_kl(self, t: ArrayLike) -> np.ndarray:
        return np.exp(np.minimum(np.asarray(t, dtype=np.float64) - 1.0, 700.0))


def _size(space: Any) -> int:
    return int(np.prod(space.polytope_.shape))


def marginal(space: Any) -> Any:
    """The space's marginal polytope ``polytope_``."""
    return space.polytope_


def unit_cube(space: Any) -> UnitCube:
    """The unit cube of the flattened embedding."""
    return UnitCube(_size(space))


def row_simplex(space: Any) -> RowSimplex:
    """Row-stochastic matrices of the (k, k) embedding (ranking)."""
    return RowSimplex(space.polytope_.shape[0])


def reals(space: Any) -> _Orthant:
    """The whole space: the squared loss (Euclidean), :math:`e^{\\theta - 1}` (KL)."""
    return _Orthant(_size(space), nonneg=False)


def nonneg(space: Any) -> _Orthant:
    """The non-negative orthant."""
    return _Orthant(_size(space), nonneg=True)


#: The sets every discrete space offers (in the order of the error messages).
COMMON_SETS = {"marginal": marginal, "unit_cube": unit_cube, "reals": reals, "nonneg": nonneg}
