r"""Discrete SELF output spaces through their marginal polytopes.

Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), sections 4-5 and
appendix A.  Every space here has a 0/1 embedding :math:`\varphi : \mathcal Y \to \{0,1\}^p`
and its loss satisfies the affine decomposition (eq. 9)

.. math::

    L(\hat y, y) = \langle \varphi(\hat y), V \varphi(y) + b \rangle + c(y).

The SELF decoding (Rudi et al., "Manifold Structured Prediction", eq. 2-3) with weights
:math:`\alpha = \alpha(x) \in \mathbb R^n` is then linear in :math:`\varphi(\hat y)`:

.. math::

    \sum_i \alpha_i L(\hat y, y_i)
    = \langle \varphi(\hat y), V g + s\, b \rangle + \sum_i \alpha_i c(y_i),
    \qquad g = \sum_i \alpha_i \varphi(y_i), \quad s = \sum_i \alpha_i,

so :math:`\hat y = \mathrm{MAP}(\theta)` with :math:`\theta = -(V g + s\, b)` (eq. 2).  This is
the calibrated decoding of eq. 11, :math:`\mathrm{MAP}(-V u - b)`, written for the
unnormalized SELF weights: for :math:`s > 0` it equals eq. 11 at :math:`u = g / s` (scaling
:math:`\theta` by :math:`s > 0` does not move the argmax); the form above also holds for
:math:`s \le 0`.  Note the factor :math:`s` on :math:`b`: SELF weights need not sum to one.

Decoding methods: ``"oracle"`` (the polytope's combinatorial MAP oracle, batched; the
default) and ``"cvxpy"`` (the linear program :math:`\max_{\mu \in \mathcal M}
\langle\theta,\mu\rangle` over the marginal polytope, built once with a ``cp.Parameter``
and re-solved per test point, then rounded to the vertex; see
:class:`psdsos.structured.polytopes.PolytopeLP`).

Negative-weight policy (all spaces here): any real weights are accepted.  The objective is
linear in :math:`\varphi(\hat y)` whatever the signs, and a linear function attains its
minimum over a finite set / a polytope at a vertex, so the decoding is always well posed and
exact (it is the exact argmin of the SELF objective over :math:`\mathcal Y`).
"""

from __future__ import annotations

import numbers
from collections import namedtuple
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError

from psdsos._validation import check_choice, check_scalar
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite
from psdsos.structured.polytopes import (
    LP_SOLVERS,
    Birkhoff,
    Knapsack,
    OrderSimplex,
    PolytopeLP,
    Simplex,
    UnitCube,
)

__all__ = [
    "AffineDecomposition",
    "MulticlassSpace",
    "MultilabelSpace",
    "RankingSpace",
    "OrdinalSpace",
    "DISCRETE_SPACES",
]

AffineDecomposition = namedtuple("AffineDecomposition", ["V", "b", "c"])
AffineDecomposition.__doc__ = r"""(V, b, c) of eq. 9.

``L(yhat, y) = <phi(yhat), V phi(y) + b> + c(y)``.

``V`` (p, p) and ``b`` (p,) act on flattened embeddings; ``c`` maps a batch of outputs Y
(in the space's Y format) to an array of shape (n,)."""


def _int_array(Y, name, ndim, what):
    """``Y`` as an int64 array with ``ndim`` dimensions, finite and integer-valued."""
    try:
        A = np.asarray(Y)
        if A.dtype == object or A.dtype.kind in "USVc":
            raise TypeError(f"dtype {A.dtype}")
        A = A.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of {what}, got {exc}") from None
    if A.ndim != ndim:
        shape = "(n_samples,)" if ndim == 1 else "(n_samples, k)"
        raise ValueError(f"{name} must be {what} of shape {shape}, got shape {A.shape}")
    if A.shape[0] < 1:
        raise ValueError(f"{name} must have at least one sample, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(A != np.round(A)):
        raise ValueError(f"{name} must hold integer values ({what}), got non-integer entries")
    return A.astype(np.int64)


def _label_array(Y, name, what):
    """``Y`` as a 1-D array of class labels of any hashable, mutually comparable type.

    Numbers must be finite and integer-valued (a float label such as 2.2 is a regression
    target, as in scikit-learn's ``type_of_target``); strings, booleans and other objects
    are kept as they are.  Returns the array (its own dtype; no per-value allocation).
    """
    try:
        A = np.asarray(Y)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array of {what}, got {exc}") from None
    if A.ndim != 1:
        raise ValueError(f"{name} must be {what} of shape (n_samples,), got shape {A.shape}")
    if A.shape[0] < 1:
        raise ValueError(f"{name} must have at least one sample, got shape {A.shape}")
    if A.dtype.kind == "c":
        raise ValueError(f"{name} must hold real numbers or strings ({what}), got complex "
                         "values")
    if A.dtype.kind in "fiub":
        if A.dtype.kind == "f":
            if not np.all(np.isfinite(A)):
                raise ValueError(f"{name} contains NaN or infinite values")
            if np.any(A != np.round(A)):
                raise ValueError(f"{name} must hold {what} (integers, strings or other "
                                 "hashable values), got non-integer numbers (a continuous "
                                 "target)")
        return A
    if A.dtype == object:
        for v in A:
            if v is None or (isinstance(v, numbers.Real) and not np.isfinite(v)):
                raise ValueError(f"{name} contains missing labels (None, NaN or inf)")
            if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) \
                    and v != round(v):
                raise ValueError(f"{name} must hold {what} (integers, strings or other "
                                 "hashable values), got non-integer numbers (a continuous "
                                 "target)")
        try:
            np.unique(A)
            hash(tuple(A.tolist()))
        except TypeError as exc:
            raise ValueError(f"{name} must hold hashable labels of one comparable type "
                             f"({what}), got {exc}") from None
    return A


def _kind(A):
    """"str" for string labels, "num" for numbers and booleans, "obj" otherwise."""
    k = A.dtype.kind
    if k in "US":
        return "str"
    if k in "fiub":
        return "num"
    if k == "O" and len(A):  # e.g. a pandas Series of strings
        if all(isinstance(v, str) for v in A):
            return "str"
        if all(isinstance(v, numbers.Number) for v in A):
            return "num"
    return "obj"


def _finite(Z: ArrayLike, name: str, tail: tuple) -> np.ndarray:
    """``Z`` as a finite float array of shape (n, *tail)."""
    A = as_finite(Z, name)
    if A.ndim != 1 + len(tail) or A.shape[1:] != tuple(tail):
        raise ValueError(f"{name} must have shape (n_test, *{tuple(tail)}), got {A.shape}")
    return A


#: Entries of one block of MAP scores (n_test_block * p): decoding runs block by block so
#: that its memory does not grow with the number of test points.
_BLOCK_ENTRIES = 1 << 20


def _onehot_sparse(codes, k):
    """Sparse one-hot matrix (n, k) of integer codes (n stored entries, never n x k)."""
    n = len(codes)
    return sp.csr_array((np.ones(n), (np.arange(n), np.asarray(codes, dtype=np.int64))),
                        shape=(n, k))


_PolyT = TypeVar("_PolyT", bound="_PolytopeSpace")
_LabelT = TypeVar("_LabelT", bound="_LabelSpace")


class _PolytopeSpace(OutputSpace):
    """Shared machinery: embedding, (V, b, c), scores, oracle and LP decoding.

    The MAP scores :math:`\\theta = -(Vg + sb)` are computed from the structure of each
    space (:meth:`_theta`: sums of weights per class, per label, per (label, rank) pair)
    without forming the dense embedding of the training set or the matrix V, and the
    decoding runs over blocks of test points; :meth:`affine_decomposition` still gives the
    explicit (V, b, c) of eq. 9 (a dense p x p V: meant for checks on small k).
    """

    decode_methods = ("oracle", "cvxpy")
    # constructor parameters of the subclasses
    k: int | None
    lp_solver: str

    # --- to be provided by subclasses -------------------------------------------------
    def _make_polytope(self):
        raise NotImplementedError

    def embed(self, Y: ArrayLike) -> np.ndarray:
        """Embedding phi(Y), flattened: dense array of shape (n, p)."""
        raise NotImplementedError

    def _from_vertices(self, M):
        """Outputs (Y format) from a batch of vertices of shape (m, *polytope.shape)."""
        raise NotImplementedError

    def affine_decomposition(self) -> AffineDecomposition:
        """(V, b, c) of eq. 9 (see :class:`AffineDecomposition`); V is dense (p, p)."""
        raise NotImplementedError

    def _infer_k(self, Y):
        raise NotImplementedError

    def _train_structure(self, Y):
        """What :meth:`_theta` needs from the (checked) training outputs."""
        raise NotImplementedError

    def _theta(self, a):
        """Flattened MAP scores (m, p) of a block of weights (m, n_train)."""
        raise NotImplementedError

    def _c_train(self):
        """c(y_i) of eq. 9 for the training outputs, shape (n_train,)."""
        return self.affine_decomposition().c(self.Y_train_)

    # --- shared --------------------------------------------------------------------------
    def _k_known(self):
        k = getattr(self, "k_", None)
        return self.k if k is None else k

    def _check_params(self):
        self._lp_solver = check_choice(self.lp_solver, "lp_solver", LP_SOLVERS)
        check_scalar(self.k, "k", lower=1, integer=True, allow_none=True)

    def fit(self: _PolyT, Y_train: ArrayLike) -> _PolyT:
        """Validate Y, fix k, build the polytope and store what decoding needs.

        Parameters
        ----------
        Y_train : array-like in the space's Y format

        Returns
        -------
        self
        """
        self._check_params()
        for attr in ("k_", "classes_"):
            self.__dict__.pop(attr, None)
        Y = self.check_Y(Y_train, "Y")
        self.k_ = int(self.k) if self.k is not None else self._infer_k(Y)
        self.Y_train_ = self.check_Y(Y, "Y")
        self.polytope_ = self._make_polytope()
        self._train = self._train_structure(self.Y_train_)
        self._lp: Any = None
        return self

    def _check_fitted(self):
        if not hasattr(self, "_train"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(Y_train) first")

    def _blocks(self, m):
        p = int(np.prod(self.polytope_.shape))
        size = max(1, _BLOCK_ENTRIES // max(p, 1))
        return [slice(i, min(i + size, m)) for i in range(0, m, size)] or [slice(0, 0)]

    def scores(self, alpha: ArrayLike) -> np.ndarray:
        r"""MAP scores :math:`\theta = -(V g + s\, b)` of the SELF objective (eq. 9, 11).

        Parameters
        ----------
        alpha : ndarray of shape (n_test, n_train)
            SELF weights (any signs).

        Returns
        -------
        ndarray of shape (n_test, *polytope.shape)
        """
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        return self._theta(a).reshape((a.shape[0],) + self.polytope_.shape)

    def lp(self) -> PolytopeLP:
        """The decoding LP (:class:`PolytopeLP`), built once on first use and cached."""
        self._check_fitted()
        if self._lp is None:
            self._lp = PolytopeLP(self.polytope_, solver=self._lp_solver)
        return self._lp

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        r"""SELF prediction :math:`\operatorname{argmin}_y \sum_i \alpha_i L(y, y_i)`.

        Parameters
        ----------
        alpha : ndarray of shape (n_test, n_train)
            SELF weights; negative and mixed signs are fine (linear objective).
        method : {"auto", "oracle", "cvxpy"}
            "oracle" (default for "auto"): combinatorial MAP on :math:`\theta = -(Vg + sb)`;
            "cvxpy": the LP over the marginal polytope, rounded to its optimal vertex (on
            exact ties it may return another optimal structure than the oracle: same
            objective value, deterministic for given alpha).

        Returns
        -------
        ndarray : predictions in the Y format, n_test of them.
        """
        method = resolve_method(self, method)
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        out = []
        for blk in self._blocks(a.shape[0]):
            theta = self._theta(a[blk]).reshape((-1,) + self.polytope_.shape)
            if method == "oracle":
                M = self.polytope_.map_oracle(theta)
            else:
                M = self.lp().solve(theta)
            out.append(self._from_vertices(M))
        return np.concatenate(out, axis=0)

    def objective(self, alpha: ArrayLike, Y: ArrayLike) -> np.ndarray:
        r"""SELF objective :math:`\sum_i \alpha_i L(y, y_i)` for each candidate row of ``Y``.

        Computed through eq. 9; ``alpha`` of shape (n_train,) (one test point) and ``Y`` a
        batch of candidates; returns an array of shape (n_candidates,).
        """
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        if a.shape[0] != 1:
            raise ValueError(f"alpha must be one test point, shape (n_train,), got {a.shape}")
        P = self.embed(self.check_Y(Y, "Y"))
        return -(P @ self._theta(a)[0]) + a[0] @ self._c_train()

    def score(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
        """Score of predictions, higher is better: minus the mean loss (see each space)."""
        return -float(np.mean(self.loss(Y_true, Y_pred)))


class _LabelSpace(_PolytopeSpace):
    """Outputs that are class labels of shape (n,) (multiclass, ordinal).

    Labels are any hashable values of one comparable type (integers, strings, ...).  The
    label set ``classes_`` is, in this order of precedence: ``classes`` (as given, in the
    given order); ``0..k-1`` when ``k`` is given (labels must then be those integers); the
    sorted distinct training labels otherwise (``numpy.unique``).  Decoding works on the
    positions 0..k-1 in ``classes_`` and returns labels of ``classes_``.
    """

    #: word used in error messages ("class", "ordinal")
    _label_word = "class"

    def __init__(self, k: int | None = None, *, classes: ArrayLike | None = None,
                 lp_solver: str = "HIGHS") -> None:
        self.k = k
        self.classes = classes
        self.lp_solver = lp_solver

    def to_config(self) -> dict[str, Any]:
        classes = None if self.classes is None else np.asarray(self.classes).tolist()
        return {"k": None if self.k is None else int(self.k), "classes": classes,
                "lp_solver": self.lp_solver}

    def _given_classes(self):
        """``classes`` as an array of distinct labels (ValueError naming classes), or None."""
        if self.classes is None:
            return None
        C = _label_array(self.classes, "classes", f"{self._label_word} labels")
        if len(np.unique(C)) != len(C):
            raise ValueError(f"classes must hold distinct labels, got {C.tolist()!r}")
        if self.k is not None and int(self.k) != len(C):
            raise ValueError(f"k = {self.k} does not match the {len(C)} labels of classes")
        return C

    def _check_params(self):
        super()._check_params()
        self._given_classes()

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Labels of shape (n,); ValueError naming ``name`` otherwise.

        With ``k`` (and no ``classes``): integers in 0..k-1.  With ``classes``: members of
        it.  Otherwise any labels (strings included); labels not seen in training are valid
        targets for :meth:`loss` and :meth:`score` (they are never predicted).
        """
        what = f"{self._label_word} labels"
        C = self._given_classes()
        if C is None and self.k is not None:
            A = _int_array(Y, name, 1, f"integer {what}")
            k = int(self.k)
            if A.min() < 0 or A.max() >= k:
                raise ValueError(f"{name} must hold {what} in 0..{k - 1}, got values "
                                 f"in [{A.min()}, {A.max()}]")
            return A
        A = _label_array(Y, name, what)
        if C is not None:
            _, found = self._positions(A, C, name)
            if not np.all(found):
                bad = A[~found][:5].tolist()
                raise ValueError(f"{name} holds labels not in classes: {bad!r}")
        return A

    def _infer_classes(self, Y):
        C = self._given_classes()
        if C is not None:
            return C
        if self.k is not None:
            return np.arange(int(self.k), dtype=np.int64)
        return np.unique(Y)

    def _infer_k(self, Y):
        return len(self._infer_classes(Y))

    def fit(self: _LabelT, Y_train: ArrayLike) -> _LabelT:
        """Validate the labels, fix ``classes_`` (and k = len(classes_)), build the polytope.

        Parameters
        ----------
        Y_train : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._check_params()
        self.__dict__.pop("k_", None)
        Y = self.check_Y(Y_train, "Y")
        classes = self._infer_classes(Y)
        self._check_k(len(classes))
        self.classes_ = classes
        self.k_ = len(classes)
        self.Y_train_ = Y
        self.polytope_ = self._make_polytope()
        self._train = self._train_structure(Y)
        self._lp: Any = None
        return self

    def _check_k(self, k):
        pass

    def _pair(self, Y_true, Y_pred):
        T, P = super()._pair(Y_true, Y_pred)
        ref = _kind(getattr(self, "classes_", P))
        for A, name in ((T, "Y_true"), (P, "Y_pred")):
            if {_kind(A), ref} == {"str", "num"}:
                raise ValueError(f"{name} holds labels of another type than the classes "
                                 "(strings and numbers do not compare)")
        return T, P

    @staticmethod
    def _positions(Y, classes, name):
        """Positions of ``Y`` in ``classes`` and a mask of the labels found there."""
        order = np.argsort(classes, kind="stable")
        sorted_c = classes[order]
        try:
            pos = np.searchsorted(sorted_c, Y)
        except TypeError as exc:
            raise ValueError(f"{name} holds labels that cannot be compared with the classes "
                             f"{classes[:5].tolist()!r}: {exc}") from None
        pos = np.minimum(pos, len(sorted_c) - 1)
        found = sorted_c[pos] == Y
        return order[pos], np.asarray(found, dtype=bool)

    def encode(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Positions 0..k-1 of labels in ``classes_`` (ValueError for unknown labels)."""
        if not hasattr(self, "classes_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(Y_train) first")
        A = self.check_Y(Y, name)
        codes, found = self._positions(A, self.classes_, name)
        if not np.all(found):
            raise ValueError(f"{name} holds labels not seen in training: "
                             f"{A[~found][:5].tolist()!r} (known: classes_)")
        return codes.astype(np.int64)

    def _train_structure(self, Y):
        codes = self.encode(Y)
        return {"codes": codes, "onehot": _onehot_sparse(codes, self.k_)}

    def _class_weights(self, a):
        """Sum of the weights per class, h (m, k): h_j = sum over y_i = ``classes_[j]``."""
        return np.asarray(a @ self._train["onehot"])

    def _from_vertices(self, M):
        return self.classes_[self._codes_from_vertices(M)]


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

    name = "multiclass"

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


class MultilabelSpace(_PolytopeSpace):
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

    name = "multilabel"

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
        A = _int_array(Y, name, 2, "0/1 label indicators")
        k = self._k_known()
        if k is not None and A.shape[1] != k:
            raise ValueError(f"{name} must have k = {k} columns, got shape {A.shape}")
        if A.shape[1] < 1:
            raise ValueError(f"{name} must have at least one label column, got shape {A.shape}")
        if np.any((A != 0) & (A != 1)):
            raise ValueError(f"{name} must hold 0/1 label indicators, got values "
                             f"{np.unique(A)[:5].tolist()}")
        return A

    def _infer_k(self, Y):
        return int(Y.shape[1])

    def _bounds(self):
        k = self.k_
        lo = check_scalar(self.min_labels, "min_labels", lower=0, upper=k, integer=True)
        hi = check_scalar(self.max_labels, "max_labels", lower=lo, upper=k, integer=True,
                          allow_none=True)
        return int(lo), (k if hi is None else int(hi))

    def fit(self, Y_train: ArrayLike) -> MultilabelSpace:
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be a bool, got {self.normalize!r}")
        return super().fit(Y_train)

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

    def _from_vertices(self, M):
        return np.rint(M).astype(np.int64)

    def project(self, Z: ArrayLike) -> np.ndarray:
        """Nearest label set (Euclidean) to per-label ridge predictions ``Z`` (n_test, k).

        The KRLS baseline: threshold at 1/2 on the unit cube, the nearest vertex of the
        knapsack polytope (``map_oracle(Z - 1/2)``) with count bounds.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        return self._from_vertices(self.polytope_.round(Z))

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


class RankingSpace(_PolytopeSpace):
    r"""Label ranking: Y (n, k) permutations of 0..k-1, Hamming loss, Birkhoff polytope.

    Entry ``y[i]`` is the rank (position, 0 = top) of label i.  Embedding: the permutation
    matrix :math:`\varphi(y)_{i, y_i} = 1` (label i at position :math:`y_i`), flattened to
    :math:`p = k^2`.  The Hamming loss :math:`L(\hat y, y) = \frac1k \sum_i 1[\hat y_i \ne y_i]
    = 1 - \frac1k\langle\varphi(\hat y), \varphi(y)\rangle` (``normalize=True``; the count
    :math:`k - \langle\cdot,\cdot\rangle` if False) decomposes as eq. 9 (appendix A, "Hamming
    loss for ranking") with :math:`V = -\frac1k I_{k^2}`, :math:`b = 0`, :math:`c = 1`.  SELF
    scores :math:`\theta = G / k` with :math:`G = \sum_i \alpha_i \varphi(y_i)`; MAP is the
    linear assignment problem on the Birkhoff polytope (section 4), solved by
    :func:`scipy.optimize.linear_sum_assignment`.

    Negative and mixed-sign weights are fine: linear objective over the permutation matrices.

    Parameters
    ----------
    k : int, optional
        Number of labels; inferred at fit if None.
    normalize : bool, default True
        Hamming loss divided by k.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    name = "ranking"

    def __init__(self, k: int | None = None, *, normalize: bool = True,
                 lp_solver: str = "HIGHS") -> None:
        self.k = k
        self.normalize = normalize
        self.lp_solver = lp_solver

    def to_config(self) -> dict[str, Any]:
        return {"k": None if self.k is None else int(self.k),
                "normalize": bool(self.normalize), "lp_solver": self.lp_solver}

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Rows that are permutations of 0..k-1 (shape (n, k)); ValueError naming ``name``."""
        A = _int_array(Y, name, 2, "rank vectors (permutations of 0..k-1)")
        k = self._k_known()
        if k is not None and A.shape[1] != k:
            raise ValueError(f"{name} must have k = {k} columns, got shape {A.shape}")
        if A.shape[1] < 1:
            raise ValueError(f"{name} must have at least one label column, got shape {A.shape}")
        ok = np.all(np.sort(A, axis=1) == np.arange(A.shape[1])[None, :], axis=1)
        if not np.all(ok):
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"{name} rows must be permutations of 0..{A.shape[1] - 1} (entry i "
                             f"= rank of label i); row {bad} is {A[bad].tolist()}")
        return A

    def fit(self, Y_train: ArrayLike) -> RankingSpace:
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be a bool, got {self.normalize!r}")
        return super().fit(Y_train)

    def _infer_k(self, Y):
        return int(Y.shape[1])

    def _make_polytope(self):
        return Birkhoff(self.k_)

    def permutation_matrices(self, Y: ArrayLike) -> np.ndarray:
        """Permutation matrices phi(Y) of shape (n, k, k): ``P[i, y_i] = 1``."""
        Y = self.check_Y(Y, "Y")
        n, k = Y.shape
        P = np.zeros((n, k, k))
        P[np.arange(n)[:, None], np.arange(k)[None, :], Y] = 1.0
        return P

    def embed(self, Y: ArrayLike) -> np.ndarray:
        P = self.permutation_matrices(Y)
        return P.reshape(P.shape[0], -1)

    def _train_structure(self, Y):
        # sparse permutation matrices, flattened: entry (i, l k + y_i[l]) = 1 (n k entries)
        n, k = Y.shape
        cols = (np.arange(k)[None, :] * k + Y).ravel()
        rows = np.repeat(np.arange(n), k)
        return {"P": sp.csr_array((np.ones(n * k), (rows, cols)), shape=(n, k * k))}

    def _weight(self):
        return 1.0 / self.k_ if self.normalize else 1.0

    def _theta(self, a):
        # theta = -(V g) with V = -w I_{k^2}: the weighted sum of permutation matrices, times w
        return self._weight() * np.asarray(a @ self._train["P"])

    def _c_train(self):
        return np.full(len(self.Y_train_), self._weight() * self.k_)

    def _from_vertices(self, M):
        return np.argmax(M, axis=2).astype(np.int64)

    def project(self, Z: ArrayLike) -> np.ndarray:
        r"""Nearest rank vector (Euclidean) to ridge predictions of the ranks ``Z`` (n_test, k).

        The KRLS baseline on the rank-vector encoding (the permutahedron's):
        :math:`\operatorname{argmin}_\pi \|\pi - z\|^2 = \operatorname{argmax}_\pi
        \langle \pi, z\rangle`, i.e. the ranks of z (smallest predicted rank first; ties keep
        label order).  For KRLS on the permutation-matrix embedding use
        ``polytope_.map_oracle(scores(alpha))``, which equals the SELF decoding here.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        order = np.argsort(Z, axis=1, kind="stable")
        ranks = np.empty_like(order)
        ranks[np.arange(len(Z))[:, None], order] = np.arange(self.k_)[None, :]
        return ranks.astype(np.int64)

    def affine_decomposition(self) -> AffineDecomposition:
        k = self.k_
        w = self._weight()
        return AffineDecomposition(-w * np.eye(k * k), np.zeros(k * k),
                                   lambda Y: np.full(len(self.check_Y(Y, "Y")), w * k))

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Hamming loss per sample (fraction of misplaced labels if ``normalize``), (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1) * (1.0 / T.shape[1] if self.normalize else 1.0)


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

    name = "ordinal"
    _label_word = "ordinal"

    def _check_params(self):
        super()._check_params()
        check_scalar(self.k, "k", lower=2, integer=True, allow_none=True)

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


DISCRETE_SPACES = {
    cls.name: cls for cls in (MulticlassSpace, MultilabelSpace, RankingSpace, OrdinalSpace)
}
