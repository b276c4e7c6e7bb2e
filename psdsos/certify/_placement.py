"""Where the shape constraints are imposed: the constraint points and the design.

The default constraint points of convex regression (greedy pivots of the kernel among the
training points and the corners of the data's bounding box), Sobol points of the box, given
points; the shape estimator's initial points (Sobol points and the box's corners).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from scipy.stats import qmc

from psdsos._params import resolve_kernel
from psdsos._validation import check_array_2d, check_random_state
from psdsos.features._features import _greedy_pivots

__all__ = ["auto_constraint_budget", "sobol_points", "ConstraintPointsOption",
           "constraint_points", "first_unique_rows", "default_points", "initial_points"]

#: Largest number of constraint points the default (``constraint_points=None``) uses with
#: exact features; with Nystrom features of rank r it uses 2 r (see ConvexRegressor).
AUTO_CONSTRAINT_POINTS = 100


#: The default stops choosing constraint points once every other training point's residual
#: kernel variance is below this fraction of k(x, x) (greedy pivoted Cholesky).
AUTO_PIVOT_RTOL = 1e-6


#: The default also offers the 2^d corners of the data's bounding box to the pivoting when
#: n >= m_auto and 2^d <= this fraction of its m_auto points (d <= 5 with exact features):
#: a fit constrained at training points only was non-convex near the box's faces and
#: corners, where training points are sparse (see benchmarks/convex_regression.py).
AUTO_CORNER_FRACTION = 0.5


#: In d = 5 the default allows up to this many points when n >= 5 per point: 100 points
#: left the fit non-convex on the data of eq. (30), 200 did not; with fewer training points
#: per constraint point, or in d >= 6, more points cost time without certifying convexity
#: (see docs/benchmarks.md).
AUTO_CONSTRAINT_POINTS_D5 = 200


def auto_constraint_budget(n_samples, n_features, n_landmarks=None):
    """Largest number of constraint points the default (``constraint_points=None``) uses.

    ``2 * n_landmarks`` with Nystrom features; with exact features
    :data:`AUTO_CONSTRAINT_POINTS` (100), and in d = 5 up to
    :data:`AUTO_CONSTRAINT_POINTS_D5` (200) while n >= 5 points per constraint point.
    """
    if n_landmarks is not None:
        return 2 * int(n_landmarks)
    if n_features == 5:
        return max(AUTO_CONSTRAINT_POINTS,
                   min(AUTO_CONSTRAINT_POINTS_D5, int(n_samples) // 5))
    return AUTO_CONSTRAINT_POINTS


def sobol_points(lo, hi, n_points, random_state):
    """Scrambled Sobol points in the box [lo, hi] (seeded)."""
    rng = check_random_state(random_state)
    sampler = qmc.Sobol(d=len(lo), scramble=True, seed=rng)
    m = int(n_points)
    U = sampler.random_base2(int(np.ceil(np.log2(max(m, 2)))))[:m]
    return qmc.scale(U, lo, hi) if np.all(hi > lo) else lo + U * (hi - lo)


class ConstraintPointsOption:
    """The parameter check of ``constraint_points``."""

    def check(self, name, value, owner):
        if value is None:
            return
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
            return
        if isinstance(value, str) and value == "train":
            return
        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            return
        raise ValueError(
            f"{name} of {owner} must be None or 'train' (the training points), a positive int "
            f"(Sobol points in the data's bounding box) or an array (m, n_features), got {value!r}"
        )


def constraint_points(est, X, kernel=None, box=None, corner_fraction=AUTO_CORNER_FRACTION):
    """The constraint points of ``est`` (see its parameter); ``box = (lo, hi)``: the data's
    bounding box when X is only a sample of the rows (out-of-core fits)."""
    cp_ = est.constraint_points
    if cp_ is None:
        # chosen among the distinct rows (first occurrences, in order): duplicated rows
        # (integer sample weights) do not change the choice
        if kernel is None:
            kernel = resolve_kernel(est.kernel, est.sigma, X)
        X = first_unique_rows(X)
        m_auto = auto_constraint_budget(X.shape[0], X.shape[1], est.n_landmarks)
        cand = X
        p = X.shape[1]
        if X.shape[0] >= m_auto and 2**p <= corner_fraction * m_auto:
            lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
            bits = (np.arange(2**p)[:, None] >> np.arange(p)) & 1
            corners = np.unique(np.where(bits == 1, hi, lo), axis=0)
            new = ~(corners[:, None, :] == X[None, :, :]).all(axis=2).any(axis=1)
            cand = np.vstack([X, corners[new]])
        idx = _greedy_pivots(kernel, cand, min(cand.shape[0], m_auto),
                             check_random_state(est.random_state), rtol=AUTO_PIVOT_RTOL)
        return X if len(idx) == cand.shape[0] == X.shape[0] else cand[idx]
    if isinstance(cp_, str) and cp_ == "train":
        return X
    if isinstance(cp_, numbers.Integral):
        lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
        return sobol_points(lo, hi, cp_, est.random_state)
    Z = check_array_2d(cp_, "constraint_points")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"constraint_points must have {X.shape[1]} columns (n_features), got {Z.shape[1]}"
        )
    return Z


def first_unique_rows(X):
    """The distinct rows of X in the order of their first occurrence (X itself when its rows
    are distinct), so that choices made from the rows do not depend on duplicates."""
    _, idx = np.unique(X, axis=0, return_index=True)
    if idx.size == X.shape[0]:
        return X
    return X[np.sort(idx)]


def default_points(box, m: int, random_state: Any) -> np.ndarray:
    """m scrambled Sobol points of the box and its corners (p <= 6)."""
    lo, hi = box
    p = lo.shape[0]
    Z = sobol_points(lo, hi, m, random_state)
    if p <= 6:
        corners = np.array(np.meshgrid(*[[a, b] for a, b in zip(lo, hi, strict=True)],
                                       indexing="ij")).reshape(p, -1).T
        Z = np.vstack([corners, Z])
    return np.unique(Z, axis=0)


#: Spacing (in bandwidths) of the default constraint points in one dimension.
SPACING_1D = 0.3


def initial_points(constraint_points: Any, box, rng: Any, U: np.ndarray,
                   x_offset: np.ndarray, x_scale: np.ndarray) -> np.ndarray:
    """The first constraint points of a shape constraint (standardized units): the
    distinct training rows U (``"train"``), ``min(16 * 2^p, 256)`` (None) or the given
    number of Sobol points of the box with its corners (in one feature and a box narrower
    than 32 x ``SPACING_1D`` bandwidths, equispaced points that far apart, at least 4),
    or the given points (user units, standardized here)."""
    p = box[0].shape[0]
    if isinstance(constraint_points, str):  # "train" (the only string the option accepts)
        return first_unique_rows(U)
    if constraint_points is None and p == 1:
        # nearly repeated points make the SoS features ill-conditioned and the dual slow
        lo, hi = box[0][0], box[1][0]
        m = int(np.floor((hi - lo) / SPACING_1D)) + 1
        if m < 32:
            return np.linspace(lo, hi, max(m, 4))[:, None]
    if constraint_points is None or isinstance(constraint_points, numbers.Integral):
        m = min(16 * 2**p, 256) if constraint_points is None else int(constraint_points)
        seed = int(check_random_state(rng).integers(2**31 - 1))
        return default_points(box, m, seed)
    Z = np.asarray(constraint_points, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] != p or not np.all(np.isfinite(Z)):
        raise ValueError(f"constraint_points must be None, an int or a finite array of "
                         f"shape (m, {p}), got shape {Z.shape}")
    return np.unique((Z - x_offset) / x_scale, axis=0)
