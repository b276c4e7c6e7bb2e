"""The folds of a cross-validation, one definition for every search of psdsos.

``cv`` is ``"loo"``, an int >= 2 (K folds), a CV splitter (an object with ``split``, a
group splitter given ``groups``) or an iterable of (train, test) index arrays, a generator
included; :func:`cv_splits` validates it and returns the list of (train, test) index
arrays, with errors that name the split and the problem without printing the arrays.
:func:`grid_search_cv` and the CV estimators (:class:`~psdsos.PSDRegressorCV`,
:class:`~psdsos.ConvexRegressorCV`, :class:`~psdsos.ShapeConstrainedRegressorCV`) all
read their ``cv`` here; they differ only in the splitter an int gives (shuffled or not).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.model_selection import KFold, LeaveOneOut

__all__ = ["check_cv", "check_groups", "cv_splits", "describe"]


def describe(obj):
    """A short description of a value for an error message (never a dump of arrays)."""
    if obj is None or isinstance(obj, (bool, numbers.Number, str)):
        return repr(obj)
    if isinstance(obj, np.ndarray):
        return f"an array of shape {obj.shape} and dtype {obj.dtype}"
    if hasattr(obj, "__len__"):
        try:
            return f"a {type(obj).__name__} of length {len(obj)}"
        except TypeError:
            pass
    return f"an object of type {type(obj).__name__}"


_CV_FORMS = ("cv must be 'loo', an int >= 2, a CV splitter (an object with split) or an "
             "iterable of (train, test) index arrays")


def check_cv(cv: Any, n: int,
             int_splitter: Callable[[int], Any] | None = None) -> Any:
    """A splitter (an object with ``split``), or the list of (train, test) pairs of an
    iterable of pairs (a generator is consumed here, once).

    ``int_splitter(k)``: the splitter of an int ``cv = k`` (validated: 2 <= k <= n);
    default ``KFold(k)`` (no shuffling, as scikit-learn)."""
    if isinstance(cv, str):
        if cv.lower() != "loo":
            raise ValueError(f"{_CV_FORMS}, got {cv!r}")
        if n < 2:
            raise ValueError(f"cv='loo' needs at least 2 samples, got {n}")
        return LeaveOneOut()
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        k = int(cv)
        if k < 2:
            raise ValueError(f"cv must be an int >= 2 (number of folds), got {k}")
        if k > n:
            raise ValueError(
                f"cv={k} folds is larger than the number of samples n={n}; use cv <= {n} "
                "or cv='loo'"
            )
        return KFold(k) if int_splitter is None else int_splitter(k)
    if hasattr(cv, "split"):
        return cv
    if isinstance(cv, (bool, numbers.Number, bytes, dict)) or cv is None:
        raise ValueError(f"{_CV_FORMS}, got {describe(cv)}")
    try:
        pairs = list(cv)
    except TypeError:
        raise ValueError(f"{_CV_FORMS}, got {describe(cv)}") from None
    if not pairs:
        raise ValueError("cv is an empty iterable: give at least one (train, test) pair")
    return pairs


def _check_indices(idx, n, k, which):
    """``idx`` (split k's train or test part) as an array of row indices in [0, n); a
    boolean mask of length n becomes the indices it selects."""
    where = f"cv split {k} (counting from 0)"
    try:
        a = np.asarray(idx)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: the {which} indices are not an array of integers, got "
                         f"{describe(idx)}") from None
    if a.ndim != 1:
        raise ValueError(f"{where}: the {which} indices must be a 1-D array of row indices, "
                         f"got {describe(a)}")
    if a.size == 0:
        raise ValueError(f"{where}: the {which} set is empty; every split needs at least one "
                         f"{which} row")
    if a.dtype == bool:
        if len(a) != n:
            raise ValueError(f"{where}: the {which} part is a boolean mask of length {len(a)}, "
                             f"but there are n = {n} samples")
        a = np.flatnonzero(a)
        if a.size == 0:
            raise ValueError(f"{where}: the {which} mask selects no row; every split needs at "
                             f"least one {which} row")
        return a
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{where}: the {which} indices must be integers, got dtype {a.dtype}")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise ValueError(f"{where}: the {which} indices hold {bad}, outside 0..{n - 1} "
                         f"(n = {n} samples)")
    return a.astype(np.intp, copy=False)


def cv_splits(cv: Any, X: Any, y: Any = None, groups: ArrayLike | None = None, *,
              int_splitter: Callable[[int], Any] | None = None
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The validated list of (train, test) index arrays of ``cv`` on the rows of X.

    Parameters
    ----------
    cv : "loo", int, CV splitter or iterable of (train, test) pairs
    X, y : the data (passed to the splitter's ``split``)
    groups : array-like of shape (n_samples,), optional
        Passed to the splitter's ``split(X, y, groups)`` (ignored by explicit pairs, as
        scikit-learn).
    int_splitter : callable, optional
        ``int_splitter(k)`` gives the splitter of an int ``cv = k`` (default ``KFold(k)``).

    Raises
    ------
    ValueError
        A form of ``cv`` not listed, an int outside [2, n_samples], a split whose train or
        test part is empty, not integers, or outside 0..n_samples - 1 (the message names
        the split and never prints the index arrays), ``groups`` of the wrong length.
    """
    n = len(X)
    groups = check_groups(groups, n)
    splitter = check_cv(cv, n, int_splitter)
    if isinstance(splitter, list):
        raw = splitter  # groups are not used by explicit pairs (as scikit-learn)
    elif groups is None:
        raw = list(splitter.split(X, y))
    else:
        raw = list(splitter.split(X, y, groups))
    if not raw:
        raise ValueError("cv produced no splits")
    splits = []
    for k, pair in enumerate(raw):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"cv split {k} (counting from 0) must be a (train, test) pair of "
                             f"index arrays, got {describe(pair)}")
        tr, te = pair
        splits.append((_check_indices(tr, n, k, "train"), _check_indices(te, n, k, "test")))
    return splits


def check_groups(groups: ArrayLike | None, n_samples: int,
                 sample_weight: ArrayLike | None = None) -> np.ndarray | None:
    """The group labels of a CV estimator's ``fit``, one per row of X.

    Parameters
    ----------
    groups : array-like of shape (n_samples,) or None
    n_samples : int
        Rows of the validated X (after the rows of weight 0 were dropped, if they were).
    sample_weight : array-like, optional
        The weights as given (already validated): where ``fit`` dropped the rows of weight
        0, pass them, and the same rows of ``groups`` are dropped; else None.

    Raises
    ------
    ValueError
        ``groups`` not of shape (n_samples,) (n_samples counting the rows of weight 0).
    """
    if groups is None:
        return None
    g = np.asarray(groups)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    n = n_samples if w is None or w.ndim == 0 else w.shape[0]
    if g.ndim != 1 or g.shape[0] != n:
        raise ValueError(f"groups must hold one label per sample: expected shape ({n},), "
                         f"got shape {g.shape}")
    if w is not None and w.ndim == 1:
        g = g[w > 0]
    return g
