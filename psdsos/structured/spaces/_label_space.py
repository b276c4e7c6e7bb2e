"""Class-label outputs of the discrete spaces (multiclass, ordinal): labels of any
hashable type, their positions in ``classes_``, and the shared fitting and decoding."""

from __future__ import annotations

import numbers
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError

from psdsos.structured.polytopes._base import check_count
from psdsos.structured.spaces._polytope_space import _int_array, _PolytopeSpace

#: Largest number of classes ``k`` of the label spaces (multiclass, ordinal): the label set
#: ``classes_`` (8 bytes per class, 128 MiB at this limit) and the decoding scores (8 bytes
#: per class and test point of a block) are dense arrays.
MAX_CLASSES = 2**24


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


def _onehot_sparse(codes, k):
    """Sparse one-hot matrix (n, k) of integer codes (n stored entries, never n x k)."""
    n = len(codes)
    return sp.csr_array((np.ones(n), (np.arange(n), np.asarray(codes, dtype=np.int64))),
                        shape=(n, k))


_LabelT = TypeVar("_LabelT", bound="_LabelSpace")


class _LabelSpace(_PolytopeSpace):
    """Outputs that are class labels of shape (n,) (multiclass, ordinal).

    Labels are any hashable values of one comparable type (integers, strings, ...).  The
    label set ``classes_`` is, in this order of precedence: ``classes`` (as given, in the
    given order); ``0..k-1`` when ``k`` is given (labels must then be those integers); the
    sorted distinct training labels otherwise (``numpy.unique``).  Decoding works on the
    positions 0..k-1 in ``classes_`` and returns labels of ``classes_``.
    """

    is_classification = True
    #: word used in error messages ("class", "ordinal")
    _label_word = "class"
    #: smallest number of classes ``k``
    _min_k = 1

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

    def _check_k_param(self):
        """``k`` as an int (None if not given): an integer ``_min_k <= k <= MAX_CLASSES``;
        ValueError naming k and what is expected otherwise (no silent truncation, no size 0,
        no label set that does not fit in memory)."""
        if self.k is None:
            return None
        owner = f"{type(self).__name__} (the number of classes)"
        k = check_count(self.k, "k", owner, minimum=self._min_k)
        if k > MAX_CLASSES:
            gib = 8.0 * k / 2**30
            raise ValueError(
                f"k of {owner} must be at most {MAX_CLASSES} (MAX_CLASSES), got {k}: the label "
                f"set classes_ alone would need {gib:.3g} GiB (int64), and the decoding "
                f"scores {gib:.3g} GiB more per test point; pass classes= with the labels "
                f"that occur, or let fit infer them from y")
        return k

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Labels of shape (n,); ValueError naming ``name`` otherwise.

        With ``k`` (and no ``classes``): integers in 0..k-1.  With ``classes``: members of
        it.  Otherwise any labels (strings included); labels not seen in training are valid
        targets for :meth:`loss` and :meth:`score` (they are never predicted).
        """
        what = f"{self._label_word} labels"
        k = self._check_k_param()
        C = self._given_classes()
        if C is None and k is not None:
            A = _int_array(Y, name, 1, f"integer {what}")
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

    def _codes_from_vertices(self, M):
        """Positions 0..k-1 in ``classes_`` of a batch of vertices (subclasses)."""
        raise NotImplementedError

    def from_vertices(self, M: np.ndarray) -> np.ndarray:
        return self.classes_[self._codes_from_vertices(M)]
