"""Multiclass classification as a SELF output space (Blondel 2019, section 4)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import Simplex
from psdsos.structured.spaces._label_space import _LabelSpace
from psdsos.structured.spaces._polytope_space import AffineDecomposition

__all__ = ["MulticlassSpace"]


@register_output_space("multiclass")
class MulticlassSpace(_LabelSpace):
    r"""Multiclass classification: class labels, 0-1 loss, probability simplex.

    Embedding :math:`\varphi(y) = e_y \in \{0,1\}^k` (one-hot over the k classes of
    ``classes_``); the 0-1 loss decomposes as eq. 9 (appendix A) with
    :math:`V = \mathbf 1\mathbf 1^\top - I`, :math:`b = 0`, :math:`c = 0`.  The marginal
    polytope is the simplex :math:`\triangle^k` (section 4); MAP = argmax, so the SELF
    decoding is :math:`\operatorname{argmax}_j (g_j - s)`, i.e.
    :math:`\operatorname{argmax}_j \sum_{i: y_i = j} \alpha_i` (ties: the first class of
    ``classes_``).  The scores are these per-class sums of the weights (a sparse product,
    O(n + k) memory per test point; V and the one-hot embedding are never formed).

    Labels are any hashable values of one comparable type (integers, strings, ...), as
    scikit-learn classifiers take them; predictions are labels of ``classes_``.  The label
    set ``classes_`` is ``classes`` if given, else ``0..k-1`` if ``k`` is given, else the
    sorted distinct training labels.  :meth:`score` is the accuracy (the mean of
    ``Y_true == Y_pred``, scikit-learn's classifier score); labels never seen in training
    are valid there (counted as errors).

    Negative and mixed-sign weights are fine: the decoding minimizes a linear function over
    the k vertices, always well posed and exact.  With negative weights a class absent from
    the training labels can win, so pass ``k`` or ``classes`` when the label set is known.

    Parameters
    ----------
    k : int, optional
        Number of classes; the labels are then the integers 0..k-1.
    classes : array-like, optional
        The label set (distinct labels); the order gives ``classes_`` (tie-breaking).
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
        CVXPY solver of the ``"cvxpy"`` decoding.

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
    k_ : int
    """

    __module__ = "psdsos.structured.spaces.discrete"  # the public home (docs, pickles)

    def _make_polytope(self):
        return Simplex(self.k_)

    def embed(self, Y: ArrayLike) -> np.ndarray:
        codes = self.encode(Y)
        out = np.zeros((len(codes), self.k_))
        out[np.arange(len(codes)), codes] = 1.0
        return out

    def _theta(self, a):
        return self._class_weights(a) - a.sum(axis=1)[:, None]

    def _codes_from_vertices(self, M):
        return np.argmax(M, axis=1).astype(np.int64)

    def _c_train(self):
        return np.zeros(len(self.Y_train_))

    def affine_decomposition(self) -> AffineDecomposition:
        k = self.k_
        return AffineDecomposition(np.ones((k, k)) - np.eye(k), np.zeros(k),
                                   lambda Y: np.zeros(len(Y)))

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """0-1 loss per sample, shape (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return np.asarray(T != P, dtype=np.float64)

    def score(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
        """Accuracy, the fraction of ``Y_true == Y_pred`` (scikit-learn's classifier score)."""
        return 1.0 - float(np.mean(self.loss(Y_true, Y_pred)))

    # ---- per-element operations (LocalizedSELF): elements are labels, Hamming loss --------
    def supports(self, capability: str) -> bool:
        if capability == "element_closed_form":
            return True
        return super().supports(capability)

    def element_array(self, Y: ArrayLike, name: str = "y") -> np.ndarray:
        return np.asarray(Y)

    def element_fit(self, elements: np.ndarray) -> np.ndarray:
        """Fit on the training labels; returns their positions in ``classes_``."""
        self.fit(elements)
        return self.encode(elements)

    def element_embed_dim(self) -> int:
        return len(self.classes_)

    def element_embed(self, V: np.ndarray) -> np.ndarray:
        """phi(y) = e_y, one-hot over ``classes_`` (V: class positions)."""
        out = np.zeros((*V.shape, len(self.classes_)))
        np.put_along_axis(out, V[..., None].astype(np.int64), 1.0, axis=-1)
        return out

    def element_decode(self, c: np.ndarray, wsum: np.ndarray) -> np.ndarray:
        """z_u = the label of argmax_j c_uj (ties: the first class of ``classes_``)."""
        return self.classes_[np.argmax(c, axis=-1)]

    def element_restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """The labels ``classes_`` from the saved array ``classes``."""
        self.classes_ = arrays["classes"]
