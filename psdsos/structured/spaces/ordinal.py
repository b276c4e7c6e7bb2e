"""Ordinal regression as a SELF output space (Blondel 2019, section 4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import OrderSimplex
from psdsos.structured.spaces._label_space import _LabelSpace
from psdsos.structured.spaces._polytope_space import AffineDecomposition, _finite

__all__ = ["OrdinalSpace"]


@register_output_space("ordinal")
class OrdinalSpace(_LabelSpace):
    r"""Ordinal regression: ordered class labels, absolute loss, order simplex.

    The k ordered classes are those of ``classes_``, in its order: ``classes`` as given
    (e.g. ``["low", "mid", "high"]``), else ``0..k-1`` when ``k`` is given, else the sorted
    distinct training labels (numbers by value, strings alphabetically: pass ``classes``
    for any other order).  Decoding and the loss use the positions 0..k-1 of the labels in
    ``classes_``.  Cumulative embedding :math:`\varphi(y) = \sum_{j < y} e_j \in
    \{0,1\}^{k-1}` (``y`` leading ones; section 4, Proposition 4).  The absolute loss
    :math:`|\hat y - y| = \langle\varphi(\hat y),\mathbf 1\rangle + \langle\varphi(y),
    \mathbf 1\rangle - 2\langle\varphi(\hat y),\varphi(y)\rangle` decomposes as eq. 9
    (appendix A) with :math:`V = -2I`, :math:`b = \mathbf 1`, :math:`c(y) = y`.  SELF scores
    :math:`\theta = 2g - s\mathbf 1` with :math:`g_j = \sum_{c > j} h_c` and :math:`h_c` the
    sum of the weights of class c (a sparse product and a cumulative sum: O(n + k) memory
    per test point); MAP = argmax of the cumulative sums :math:`\sum_{j<y}\theta_j` over
    the k vertices, O(k) (ties: the first class).  For non-negative weights this is a
    weighted median of the training labels.

    :meth:`score` is minus the mean absolute loss in positions (higher is better).  A label
    not seen in training (possible only without ``k`` and ``classes``) sits half-way
    between its neighbours in the sorted order: its loss against any prediction is then at
    least 1/2, never undefined.

    Negative and mixed-sign weights are fine: linear objective over the k vertices.

    Parameters
    ----------
    k : int, optional
        Number of ordered classes (>= 2); the labels are then the integers 0..k-1.
    classes : array-like, optional
        The ordered label set (distinct labels, lowest first).
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        The classes in increasing order.
    k_ : int
    """

    __module__ = "psdsos.structured.spaces.discrete"  # the public home (docs, pickles)
    _label_word = "ordinal"
    _min_k = 2  # an order needs two labels

    def _check_k(self, k):
        if k < 2:
            raise ValueError("Y holds a single ordinal label; pass k >= 2 or classes with at "
                             "least two labels to OrdinalSpace")

    def _make_polytope(self):
        return OrderSimplex(self.k_)

    def embed(self, Y: ArrayLike) -> np.ndarray:
        codes = self.encode(Y)
        return (np.arange(self.k_ - 1)[None, :] < codes[:, None]).astype(np.float64)

    def _theta(self, a):
        h = self._class_weights(a)
        # g_j = sum_{c > j} h_c, j = 0..k-2
        g = np.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]
        return 2.0 * g - a.sum(axis=1)[:, None]

    def _codes_from_vertices(self, M):
        return np.rint(M.sum(axis=1)).astype(np.int64)

    def _c_train(self):
        return self._train["codes"].astype(np.float64)

    def project(self, Z: ArrayLike) -> np.ndarray:
        """Nearest label to ridge predictions of the position ``Z`` (n_test,): clip and round.

        The "ridge regression + rounding" baseline of ordinal regression (halves round up),
        on the positions 0..k-1 of ``classes_``; returns labels of ``classes_``.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", ())
        return self.classes_[np.clip(np.floor(Z + 0.5), 0, self.k_ - 1).astype(np.int64)]

    def affine_decomposition(self) -> AffineDecomposition:
        p = self.k_ - 1
        return AffineDecomposition(-2.0 * np.eye(p), np.ones(p),
                                   lambda Y: self.encode(Y).astype(np.float64))

    def _loss_positions(self, A, name):
        """Positions in the class order; unseen labels half-way between their neighbours."""
        classes = getattr(self, "classes_", None)
        if classes is None:
            C = self._given_classes()
            classes = C if C is not None else (
                np.arange(int(self.k)) if self.k is not None else None)
        if classes is None:  # not fitted, no label set: ranks among the labels given
            classes = np.unique(A)
        pos, found = self._positions(A, classes, name)
        pos = pos.astype(np.float64)
        if not np.all(found):
            order = np.argsort(classes, kind="stable")
            ins = np.searchsorted(classes[order], A[~found])
            pos[~found] = ins - 0.5
        return pos

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Absolute loss ``|pos(y_true) - pos(y_pred)|`` per sample, shape (n,).

        Positions in ``classes_`` (the label values themselves when ``k`` is given).
        """
        T, P = self._pair(Y_true, Y_pred)
        both = np.concatenate([T, P]) if not hasattr(self, "classes_") else None
        if both is not None and self.k is None and self.classes is None:
            r = self._loss_positions(both, "Y")
            return np.abs(r[:len(T)] - r[len(T):])
        return np.abs(self._loss_positions(T, "Y_true") - self._loss_positions(P, "Y_pred"))
