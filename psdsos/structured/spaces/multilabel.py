"""Multilabel classification as a SELF output space (Blondel 2019, section 4)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from psdsos._validation import check_scalar
from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import Knapsack, UnitCube
from psdsos.structured.spaces._polytope_space import (
    AffineDecomposition,
    _finite,
    _RowSpace,
)
from psdsos.structured.spaces._projection_sets import marginal, nonneg, reals, unit_cube

__all__ = ["MultilabelSpace"]


@register_output_space("multilabel")
class MultilabelSpace(_RowSpace):
    r"""Multilabel classification: Y (n, k) in {0, 1}, Hamming loss, unit cube or knapsack.

    Embedding :math:`\varphi(y) = y \in \{0,1\}^k`.  The Hamming loss
    :math:`L(\hat y, y) = \frac1k \sum_j 1[\hat y_j \ne y_j]` (``normalize=True``; the count
    without the 1/k if False) decomposes as eq. 9 (appendix A, "Hamming loss for multilabel
    classification") with :math:`V = -\frac2k I`, :math:`b = \frac1k \mathbf 1`,
    :math:`c(y) = \frac1k \langle \varphi(y), \mathbf 1\rangle`.  SELF scores
    :math:`\theta = (2g - s\mathbf 1)/k`.

    Without label-count bounds the polytope is the unit cube and MAP thresholds
    :math:`\theta_j > 0`; with ``min_labels`` / ``max_labels`` it is the knapsack polytope
    :math:`\{\mu \in [0,1]^k: l \le \langle\mu,\mathbf 1\rangle \le u\}` and MAP sorts
    (section 4).  The bounds constrain the *predictions*; training rows outside them are
    accepted (the paper sets u from the training mean + std of the label count).

    Negative and mixed-sign weights are fine: linear objective over the polytope's vertices.

    Parameters
    ----------
    k : int, optional
        Number of labels (columns of Y); inferred at fit if None.
    min_labels : int, default 0
        Lower bound l on the number of predicted labels.
    max_labels : int, optional
        Upper bound u (None = k).
    normalize : bool, default True
        Hamming loss divided by k.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    __module__ = "psdsos.structured.spaces.discrete"  # the public home (docs, pickles)
    #: "knapsack" names the marginal polytope with its label-count bounds
    projection_sets = {"marginal": marginal, "unit_cube": unit_cube, "knapsack": marginal,
                       "reals": reals, "nonneg": nonneg}

    def __init__(self, k: int | None = None, *, min_labels: int = 0, max_labels: int | None = None,
                 normalize: bool = True, lp_solver: str = "HIGHS") -> None:
        self.k = k
        self.min_labels = min_labels
        self.max_labels = max_labels
        self.normalize = normalize
        self.lp_solver = lp_solver

    def to_config(self) -> dict[str, Any]:
        return {"k": None if self.k is None else int(self.k),
                "min_labels": int(self.min_labels),
                "max_labels": None if self.max_labels is None else int(self.max_labels),
                "normalize": bool(self.normalize), "lp_solver": self.lp_solver}

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """0/1 array of shape (n, k); ValueError naming ``name`` otherwise."""
        A = self._int_rows(Y, name, "0/1 label indicators")
        if np.any((A != 0) & (A != 1)):
            raise ValueError(f"{name} must hold 0/1 label indicators, got values "
                             f"{np.unique(A)[:5].tolist()}")
        return A

    def _bounds(self):
        k = self.k_
        lo = check_scalar(self.min_labels, "min_labels", lower=0, upper=k, integer=True)
        hi = check_scalar(self.max_labels, "max_labels", lower=lo, upper=k, integer=True,
                          allow_none=True)
        return int(lo), (k if hi is None else int(hi))

    def _make_polytope(self):
        lo, hi = self._bounds()
        if lo == 0 and hi == self.k_:
            return UnitCube(self.k_)
        return Knapsack(self.k_, lo, hi)

    def embed(self, Y: ArrayLike) -> np.ndarray:
        return self.check_Y(Y, "Y").astype(np.float64)

    def _train_structure(self, Y):
        return {"Y": sp.csr_array(Y.astype(np.float64))}

    def _theta(self, a):
        # theta = -(V g + s b) with V = -2w I, b = w 1
        w = self._scale()
        g = np.asarray(a @ self._train["Y"])
        return w * (2.0 * g - a.sum(axis=1)[:, None])

    def _c_train(self):
        return self._scale() * self.Y_train_.sum(axis=1).astype(np.float64)

    def from_vertices(self, M: np.ndarray) -> np.ndarray:
        return np.rint(M).astype(np.int64)

    def project(self, Z: ArrayLike) -> np.ndarray:
        """Nearest label set (Euclidean) to per-label ridge predictions ``Z`` (n_test, k).

        The KRLS baseline: threshold at 1/2 on the unit cube, the nearest vertex of the
        knapsack polytope (``map_oracle(Z - 1/2)``) with count bounds.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        return self.from_vertices(self.polytope_.round(Z))

    def _scale(self):
        return 1.0 / self.k_ if self.normalize else 1.0

    def affine_decomposition(self) -> AffineDecomposition:
        k, w = self.k_, self._scale()
        return AffineDecomposition(-2.0 * w * np.eye(k), w * np.ones(k),
                                   lambda Y: w * self.check_Y(Y, "Y").sum(axis=1))

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Hamming loss per sample (fraction of wrong labels if ``normalize``), shape (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1) * self._scale_for(T.shape[1])

    def _scale_for(self, k):
        return 1.0 / k if self.normalize else 1.0
