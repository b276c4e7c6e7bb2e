r"""The losses of a level tau: quantile (pinball) and expectile (scalar residuals)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses._base import Loss, LossParameter
from psdsos.losses._registry import register_loss


class _LevelLoss(Loss):
    """What the quantile and expectile losses share: scalar residuals and the level tau in
    (0, 1) (parameter ``quantile``)."""

    parameters = (LossParameter("quantile", "the level tau", lower=0.0, upper=1.0),)
    scalar_only = True
    convex_regression = True

    def __init__(self, quantile: float) -> None:
        self.quantile = self.parameters[0].check(quantile, self.name)

    def reflected(self) -> Loss | None:
        """l(-r) is the loss of level 1 - tau."""
        return type(self)(1.0 - self.quantile)


@register_loss("quantile")
class QuantileLoss(_LevelLoss):
    r"""Pinball loss of level tau (scalar residuals r = f - y).

    :math:`\ell(r) = \max(-\tau r, (1 - \tau) r)`, i.e. :math:`\tau u` for
    :math:`u = y - f \ge 0` and :math:`(\tau - 1)u` below: the minimizer of
    :math:`\sum_i \ell(f - y_i)` over constants f is a tau-quantile of y.  Conjugate: the
    indicator of the box :math:`[-\tau, 1 - \tau]`.

    Parameters
    ----------
    quantile : float in (0, 1)
    """

    is_smooth = False

    def value(self, R: ArrayLike) -> np.ndarray:
        r, t = self._check(R), self.quantile
        return np.maximum(-t * r, (1 - t) * r)

    def grad(self, R: ArrayLike) -> np.ndarray:
        """A subgradient: 1 - tau for r > 0, -tau for r < 0 (and r = 0)."""
        r, t = self._check(R), self.quantile
        return np.where(r > 0, 1 - t, -t)

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        s, t = self._check(S, "S"), self.quantile
        slack = 4 * np.finfo(float).eps
        inside = (s >= -t * (1 + slack)) & (s <= (1 - t) * (1 + slack))
        return np.where(inside, 0.0, np.inf)

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        return np.zeros_like(self._check(S, "S"))

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        t = self.quantile
        return np.clip(self._check(V, "V"), -t, 1 - t)

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        return self, 1

    def lipschitz(self, d: int = 1) -> float:
        return max(self.quantile, 1 - self.quantile)

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        t = self.quantile
        return cp.maximum(-t * residual, (1 - t) * residual)


@register_loss("expectile")
class ExpectileLoss(_LevelLoss):
    r"""Asymmetric squared loss of level tau (scalar residuals r = f - y).

    :math:`\ell(r) = |\tau - 1\{u < 0\}|\,u^2` with :math:`u = y - f = -r`:
    :math:`(1 - \tau) r^2` for :math:`r \ge 0`, :math:`\tau r^2` below (tau = 1/2 is
    :class:`SquaredLoss`).  Conjugate :math:`s^2 / (4(1-\tau))` for :math:`s \ge 0`,
    :math:`s^2 / (4\tau)` below.

    Parameters
    ----------
    quantile : float in (0, 1)
        The expectile level tau.
    """

    conjugate_is_smooth = True

    def __init__(self, quantile: float) -> None:
        super().__init__(quantile)
        t = self.quantile
        self.smoothness = 2.0 * max(t, 1 - t)
        self.conjugate_smoothness = 1.0 / (2.0 * min(t, 1 - t))

    def _slopes(self, x):
        t = self.quantile
        return np.where(x >= 0, 1 - t, t)

    def value(self, R: ArrayLike) -> np.ndarray:
        r = self._check(R)
        return self._slopes(r) * r * r

    def grad(self, R: ArrayLike) -> np.ndarray:
        r = self._check(R)
        return 2.0 * self._slopes(r) * r

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        s = self._check(S, "S")
        return s * s / (4.0 * self._slopes(s))

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        s = self._check(S, "S")
        return s / (2.0 * self._slopes(s))

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        # argmin step s^2 / (4a) + (s - v)^2 / 2 with a the slope on the side of s, which is
        # the side of v: s = v / (1 + step / (2a))
        v = self._check(V, "V")
        return v / (1.0 + np.asarray(step, dtype=np.float64) / (2.0 * self._slopes(v)))

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        return self, 2

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        t = self.quantile
        return (1 - t) * cp.square(cp.pos(residual)) + t * cp.square(cp.neg(residual))
