r"""The Huber losses: of the Frobenius norm, and entrywise."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses._base import (
    Loss,
    LossParameter,
    _frob_rows,
    _per_sample,
    _project_ball,
    _sample_axes,
    _sq_norms,
)
from psdsos.losses._registry import register_loss


class _HuberBase(Loss):
    """What both Huber losses share: the threshold delta, the constants (1-smooth, with a
    conjugate quadratic on its domain) and the rescaling rule."""

    parameters = (LossParameter("delta", "the Huber threshold, in the units of the targets",
                                lower=0.0),)
    symmetric = True
    conjugate_is_quadratic_on_set = True
    smoothness = 1.0
    conjugate_smoothness = 1.0

    def __init__(self, delta: float) -> None:
        self.delta = self.parameters[0].check(delta, self.name)

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        """h_delta(c t) = c^2 h_{delta / c}(t)."""
        return type(self)(self.delta / c), 2


@register_loss("huber")
class HuberLoss(_HuberBase):
    r"""Huber loss of the Frobenius norm: :math:`\ell(R) = h_\delta(\|R\|_F)`.

    :math:`h_\delta(t) = t^2/2` for :math:`t \le \delta` and :math:`\delta(t - \delta/2)`
    beyond; conjugate :math:`\frac12\|S\|_F^2` on the ball :math:`\|S\|_F \le \delta`.  As
    delta -> inf it is :class:`SquaredLoss`.

    Parameters
    ----------
    delta : float > 0
    """

    convex_regression = True

    def value(self, R: ArrayLike) -> np.ndarray:
        s2 = _sq_norms(self._check(R))
        t, dl = np.sqrt(s2), self.delta
        # 0.5 |R|^2 computed as the squared loss does: bit-identical below delta
        return np.where(t <= dl, 0.5 * s2, dl * (t - 0.5 * dl))

    def grad(self, R: ArrayLike) -> np.ndarray:
        return _project_ball(self._check(R), self.delta)

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        s2 = _sq_norms(self._check(S, "S"))
        # a relative slack of a few ulps: points projected onto the ball stay in the domain
        inside = np.sqrt(s2) <= self.delta * (1 + 4 * np.finfo(float).eps)
        return np.where(inside, 0.5 * s2, np.inf)

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        return self._check(S, "S").copy()

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        # argmin step (|S|^2/2) + |S - V|^2/2 on the ball: radial, so the projection of the
        # unconstrained minimizer V / (1 + step)
        V = self._check(V, "V")
        return _project_ball(V / (1.0 + _per_sample(step, V)), self.delta)

    def lipschitz(self, d: int = 1) -> float:
        return self.delta

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        rows = _frob_rows(residual, multiplicity)
        t = cp.abs(rows) if len(rows.shape) == 1 else cp.norm(rows, 2, axis=1)
        # cp.huber(t, M) = t^2 for |t| <= M, 2 M |t| - M^2 beyond: 2 h_M(t)
        return 0.5 * cp.huber(t, self.delta)  # type: ignore[arg-type]


@register_loss("huber_entrywise")
class EntrywiseHuberLoss(_HuberBase):
    r"""Sum of the Huber losses of the entries: :math:`\ell(R) = \sum_{jk} h_\delta(R_{jk})`.

    Conjugate :math:`\sum_{jk}\frac12 S_{jk}^2` on the box :math:`|S_{jk}| \le \delta`.  For
    scalars it equals :class:`HuberLoss`.

    Parameters
    ----------
    delta : float > 0
    """

    def value(self, R: ArrayLike) -> np.ndarray:
        R = self._check(R)
        a, dl = np.abs(R), self.delta
        h = np.where(a <= dl, 0.5 * R * R, dl * (a - 0.5 * dl))
        return np.sum(h, axis=_sample_axes(R)) if R.ndim > 1 else h

    def grad(self, R: ArrayLike) -> np.ndarray:
        return np.clip(self._check(R), -self.delta, self.delta)

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        S = self._check(S, "S")
        inside = np.abs(S) <= self.delta * (1 + 4 * np.finfo(float).eps)
        if S.ndim > 1:
            inside = np.all(inside, axis=_sample_axes(S))
        return np.where(inside, 0.5 * _sq_norms(S), np.inf)

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        return self._check(S, "S").copy()

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        V = self._check(V, "V")
        return np.clip(V / (1.0 + _per_sample(step, V)), -self.delta, self.delta)

    def lipschitz(self, d: int = 1) -> float:
        return self.delta * d

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        h = 0.5 * cp.huber(residual, self.delta)  # type: ignore[arg-type]
        if len(residual.shape) == 1:
            return h
        if multiplicity is not None:
            h = cp.multiply(h, np.broadcast_to(multiplicity, residual.shape))
        return cp.sum(h, axis=1)
