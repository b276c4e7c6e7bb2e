"""The pieces of :class:`~psdsos.estimators.ConvexRegressorCV` around its search: the
estimator its folds fit, the check of ``ranks`` and their default, and the test of a
certified convex candidate.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from psdsos.certify._convexity import RELATIVE_DEFICIT_TOL
from psdsos.estimators import _convex_fit as fit_paths
from psdsos.estimators._convex import ConvexRegressor

__all__: list[str] = []

#: ``n_landmarks="auto"``: the two largest of these ranks with r <= 2 sqrt(n_train) and
#: r * n_features <= :data:`RANK_FEATURE_BUDGET` (exact features when none is).
AUTO_RANKS = (25, 50, 100, 200, 400)


#: An iteration of the dual eigendecomposes r x r blocks of size n_features: r * p = 1000
#: takes about 0.15 s on one core, the budget of the automatic ranks.
RANK_FEATURE_BUDGET = 1000


#: Sobol points of the cheap convexity check of the CV fits (the refits use 4096 and the
#: branch and bound).
CV_DEFICIT_POINTS = 512


class _CVConvexRegressor(ConvexRegressor):
    """A ConvexRegressor for cross-validation fits: no box certificate (the branch and bound
    is most of a small fit's time); ``convexity_deficit_`` at :data:`CV_DEFICIT_POINTS`
    Sobol points, no warning.  Not exported, not saved."""

    def _fit_plan(self, plan, kernel, features, Z):
        *coefs, B = fit_paths.solve_plan(self, plan, Z)
        fit_paths.set_fitted(self, plan, kernel, features, Z, coefs, B)
        self.__dict__.pop("certificate_", None)
        self.convexity_deficit_ = float(self.convexity_deficit(relative=True,
                                                               n_points=CV_DEFICIT_POINTS))
        return self


class _Ranks:
    """``n_landmarks`` of ConvexRegressorCV: "auto", None or a non-empty sequence of ints >= 1
    (None entries allowed: exact features)."""

    def check(self, name: str, value: Any, owner: str) -> None:
        if value is None or (isinstance(value, str) and value == "auto"):
            return
        try:
            vals = list(value)
        except TypeError:
            vals = []
        ok = bool(vals) and all(
            v is None
            or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and int(v) >= 1)
            for v in vals)
        if not ok:
            raise ValueError(f"{name} of {owner} must be 'auto', None or a non-empty sequence "
                             f"of ints >= 1 (or None: exact features), got {value!r}")


def auto_ranks(n_train: int, n_features: int) -> list[int | None]:
    """The ranks tried by ``n_landmarks="auto"`` (see :data:`AUTO_RANKS`)."""
    cap = min(2.0 * np.sqrt(n_train), RANK_FEATURE_BUDGET / n_features)
    ranks = [r for r in AUTO_RANKS if r <= cap]
    return list(ranks[-2:]) if ranks else [None]


def is_certified_convex(est: ConvexRegressor) -> bool:
    """Whether the fit's certificate is proved (``status == "certified"``) and shows
    convexity (concavity) within :data:`RELATIVE_DEFICIT_TOL` of the curvature scale."""
    cert = getattr(est, "certificate_", None) or {}
    return bool(cert) and all(c.status == "certified" and c.relative >= -RELATIVE_DEFICIT_TOL
                              for c in cert.values())
