r"""Convex losses of a residual, with their conjugates and the prox of the conjugates.

Every loss :math:`\ell` acts on one residual :math:`R = F(x) - M` (prediction minus
target): a scalar, or a symmetric d x d matrix with the Frobenius inner product
:math:`\langle S, R\rangle = \sum_{jk} S_{jk}R_{jk}`.  Methods act on a batch: R of shape
(n,) (scalars) or (n, d, d) (matrices); values come per sample, shape (n,).

The conjugate :math:`\ell^*(S) = \sup_R \langle S, R\rangle - \ell(R)` is what the dual
of the PSD paper (Theorem 3, eq. 10) needs, through :class:`EmpiricalLoss`; the prox of a
multiple of the conjugate,

.. math::

    \operatorname{prox}_{\eta\ell^*}(V) = \arg\min_S\ \eta\,\ell^*(S) + \tfrac12\|S - V\|_F^2,

is a projection onto a ball or a box for the Lipschitz losses (their conjugates are
indicators, possibly plus a quadratic), in closed form for all the losses here.  The
Moreau identity :math:`V = \operatorname{prox}_{\eta\ell^*}(V) + \eta\,
\operatorname{prox}_{\ell/\eta}(V/\eta)` links it to the prox of the loss.

Conjugates (derivations)
------------------------
* squared, :math:`\ell(R) = \frac12\|R\|_F^2`: :math:`\ell^* = \frac12\|S\|_F^2` (self-conjugate).
* Huber on the Frobenius norm, :math:`\ell(R) = h_\delta(\|R\|_F)` with
  :math:`h_\delta(t) = t^2/2` for :math:`t\le\delta`, :math:`\delta(t - \delta/2)` beyond.
  :math:`h_\delta` is the Moreau envelope of :math:`\delta|t|`:
  :math:`h_\delta(t) = \min_u \frac12(t-u)^2 + \delta|u|`, and the conjugate of an
  infimal convolution is the sum of the conjugates:
  :math:`\ell^*(S) = \frac12\|S\|_F^2 + \iota\{\|S\|_F \le \delta\}` (the conjugate of
  :math:`\delta\|\cdot\|_F` is the indicator of the dual-norm ball of radius delta).
* entrywise Huber, :math:`\ell(R) = \sum_{jk} h_\delta(R_{jk})`: separable, so
  :math:`\ell^*(S) = \sum_{jk}\frac12 S_{jk}^2 + \iota\{|S_{jk}|\le\delta\}`.
* absolute (Frobenius), :math:`\ell(R) = \|R\|_F`: :math:`\ell^* = \iota\{\|S\|_F\le 1\}`.
* quantile (pinball, scalar), with :math:`u = -r = y - f` the usual residual,
  :math:`\ell(r) = \max(\tau u, (\tau - 1)u) = \max(-\tau r, (1-\tau) r)`: the maximum of
  two linear functions, so :math:`\ell^* = \iota\{-\tau \le s \le 1-\tau\}` (the convex hull
  of the slopes).
* expectile (scalar), :math:`\ell(r) = |\tau - 1\{u < 0\}|\,u^2`, i.e.
  :math:`(1-\tau)r^2` for :math:`r\ge 0` and :math:`\tau r^2` for :math:`r<0`; each half
  :math:`a r^2` has conjugate :math:`s^2/(4a)` on the same half-line (the maximizer
  :math:`r = s/(2a)` has the sign of s), so :math:`\ell^*(s) = s^2/(4(1-\tau))` for
  :math:`s\ge0` and :math:`s^2/(4\tau)` for :math:`s<0`.  At tau = 1/2 it is the squared
  loss.

Constants: ``lipschitz(d)`` is the Lipschitz constant of the loss in the Frobenius norm of
d x d residuals (inf when unbounded growth); ``smoothness`` the Lipschitz constant of its
gradient (inf when not differentiable), equal to 1 / the strong-convexity modulus of the
conjugate; ``conjugate_smoothness`` the Lipschitz constant of the gradient of the conjugate
on its domain (0 for an indicator), equal to 1 / the strong-convexity modulus of the loss.
"""

from __future__ import annotations

import numbers
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_scalar

__all__ = [
    "Loss",
    "SquaredLoss",
    "HuberLoss",
    "EntrywiseHuberLoss",
    "AbsoluteLoss",
    "QuantileLoss",
    "ExpectileLoss",
    "EmpiricalLoss",
    "LOSSES",
    "get_loss",
]


def _sample_axes(R):
    """Axes of one sample's residual (none for scalars, the last two for matrices)."""
    return tuple(range(1, np.ndim(R)))


def _sq_norms(R):
    R = np.asarray(R, dtype=np.float64)
    return np.sum(R * R, axis=_sample_axes(R)) if R.ndim > 1 else R * R


def _per_sample(step, R):
    """A scalar or per-sample (n,) step, broadcast against R of shape (n, ...)."""
    step = np.asarray(step, dtype=np.float64)
    if step.ndim == 0:
        return step
    return step.reshape(step.shape + (1,) * (np.ndim(R) - 1))


def _project_ball(V, radius):
    """Project each sample of V onto the Frobenius ball of the given (per-sample) radius."""
    V = np.asarray(V, dtype=np.float64)
    nrm = np.sqrt(_sq_norms(V))
    rad = np.asarray(radius, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(nrm > rad, rad / np.where(nrm > 0, nrm, 1.0), 1.0)
    return V * _per_sample(scale, V)


def _frob_rows(expr, multiplicity):
    """Rows of a CVXPY residual scaled so that their Euclidean norm is the Frobenius norm."""
    if multiplicity is None:
        return expr
    return cp.multiply(expr, np.sqrt(np.broadcast_to(multiplicity, expr.shape)))


class Loss:
    """Base class of the losses (see the module docstring for the conventions).

    Subclasses implement ``value``, ``conjugate``, ``prox_conjugate``, ``cvxpy_expr`` and,
    where the loss is differentiable, ``grad``; where the conjugate is differentiable on
    its domain, ``conjugate_grad``.
    """

    #: short name, as accepted by :func:`get_loss`
    name = "loss"
    #: the loss is differentiable with a Lipschitz gradient
    is_smooth = True
    #: the conjugate is finite and differentiable everywhere (no prox needed in the dual)
    conjugate_is_smooth = False
    #: only scalar residuals (shape (n,))
    scalar_only = False
    smoothness = np.inf
    conjugate_smoothness = 0.0
    #: the conjugate is ``|S|^2 / 2`` plus the indicator of a convex set C (Huber losses), whose
    #: projection is ``prox_conjugate(V, 0)``: the dual solver can then take proximal
    #: steps in a non-Euclidean metric (see psdsos.solvers.solve_dual)
    conjugate_is_quadratic_on_set = False

    def _check(self, R: ArrayLike, name: str = "R") -> np.ndarray:
        R = np.asarray(R, dtype=np.float64)
        if self.scalar_only and R.ndim != 1:
            raise ValueError(f"{name} must have shape (n,) for the {self.name} loss (scalar "
                             f"residuals only), got shape {R.shape}")
        if R.ndim not in (1, 3):
            raise ValueError(f"{name} must have shape (n,) or (n, d, d), got shape {R.shape}")
        return R

    def value(self, R: ArrayLike) -> np.ndarray:
        """Per-sample loss values l(R_i), shape (n,)."""
        raise NotImplementedError

    def grad(self, R: ArrayLike) -> np.ndarray:
        """Gradient of l at each R_i (a subgradient where not differentiable)."""
        raise NotImplementedError

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        """Per-sample conjugate values l^*(S_i), shape (n,) (inf outside the domain)."""
        raise NotImplementedError

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        """Gradient of l^* at each S_i (on the interior of its domain)."""
        raise NotImplementedError

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        r"""prox of ``step`` * l^* at each V_i; ``step`` scalar or per-sample, shape (n,)."""
        raise NotImplementedError

    def lipschitz(self, d: int = 1) -> float:
        """Lipschitz constant of l in the Frobenius norm of d x d residuals."""
        return np.inf

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        """Per-sample losses (CVXPY expression of shape (n,)) of a residual expression.

        Parameters
        ----------
        residual : cvxpy.Expression of shape (n,) or (n, k)
            Scalar residuals, or per row the k entries of a matrix residual.
        multiplicity : ndarray (k,), optional
            How many times each entry counts in the matrix (e.g. 1 for the diagonal and 2
            for the off-diagonal entries when the rows hold upper triangles); 1 by default.
        """
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The loss's parameters (name and values), for saving and for messages."""
        return {"loss": self.name}

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        r"""(loss', p) with :math:`\ell(cR) = c^p\,\ell'(R)` for c > 0 (positive
        homogeneity up to a change of parameter), or None when unknown.  Estimators fit at
        a unit scale of the targets with it."""
        return None

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items() if k != "loss")
        return f"{type(self).__name__}({args})"


class SquaredLoss(Loss):
    r""":math:`\ell(R) = \frac12\|R\|_F^2`, self-conjugate."""

    name = "squared"
    conjugate_is_smooth = True
    smoothness = 1.0
    conjugate_smoothness = 1.0

    def value(self, R: ArrayLike) -> np.ndarray:
        return 0.5 * _sq_norms(self._check(R))

    def grad(self, R: ArrayLike) -> np.ndarray:
        return self._check(R).copy()

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        return 0.5 * _sq_norms(self._check(S, "S"))

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        return self._check(S, "S").copy()

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        V = self._check(V, "V")
        return V / (1.0 + _per_sample(step, V))

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        return self, 2

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        rows = _frob_rows(residual, multiplicity)
        if len(rows.shape) == 1:
            return 0.5 * cp.square(rows)
        return 0.5 * cp.sum(cp.square(rows), axis=1)


class _HuberBase(Loss):
    """What both Huber losses share: the threshold delta, the constants (1-smooth, with a
    conjugate quadratic on its domain) and the rescaling rule."""

    conjugate_is_quadratic_on_set = True
    smoothness = 1.0
    conjugate_smoothness = 1.0

    def __init__(self, delta: float) -> None:
        self.delta = check_scalar(delta, "delta", lower=0.0, lower_inclusive=False)

    def params(self) -> dict[str, Any]:
        return {"loss": self.name, "delta": self.delta}

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        """h_delta(c t) = c^2 h_{delta / c}(t)."""
        return type(self)(self.delta / c), 2


class HuberLoss(_HuberBase):
    r"""Huber loss of the Frobenius norm: :math:`\ell(R) = h_\delta(\|R\|_F)`.

    :math:`h_\delta(t) = t^2/2` for :math:`t \le \delta` and :math:`\delta(t - \delta/2)`
    beyond; conjugate :math:`\frac12\|S\|_F^2` on the ball :math:`\|S\|_F \le \delta`.  As
    delta -> inf it is :class:`SquaredLoss`.

    Parameters
    ----------
    delta : float > 0
    """

    name = "huber"

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
        return 0.5 * cp.huber(t, self.delta)


class EntrywiseHuberLoss(_HuberBase):
    r"""Sum of the Huber losses of the entries: :math:`\ell(R) = \sum_{jk} h_\delta(R_{jk})`.

    Conjugate :math:`\sum_{jk}\frac12 S_{jk}^2` on the box :math:`|S_{jk}| \le \delta`.  For
    scalars it equals :class:`HuberLoss`.

    Parameters
    ----------
    delta : float > 0
    """

    name = "huber_entrywise"

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
        h = 0.5 * cp.huber(residual, self.delta)
        if len(residual.shape) == 1:
            return h
        if multiplicity is not None:
            h = cp.multiply(h, np.broadcast_to(multiplicity, residual.shape))
        return cp.sum(h, axis=1)


class AbsoluteLoss(Loss):
    r""":math:`\ell(R) = \|R\|_F`; conjugate: the indicator of the unit Frobenius ball."""

    name = "absolute"
    is_smooth = False

    def value(self, R: ArrayLike) -> np.ndarray:
        return np.sqrt(_sq_norms(self._check(R)))

    def grad(self, R: ArrayLike) -> np.ndarray:
        """A subgradient: R / ||R||_F (0 at R = 0)."""
        return self._unit(self._check(R))

    @staticmethod
    def _unit(R):
        nrm = np.sqrt(_sq_norms(R))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(nrm > 0, 1.0 / np.where(nrm > 0, nrm, 1.0), 0.0)
        return R * _per_sample(inv, R)

    def conjugate(self, S: ArrayLike) -> np.ndarray:
        s = np.sqrt(_sq_norms(self._check(S, "S")))
        return np.where(s <= 1 + 4 * np.finfo(float).eps, 0.0, np.inf)

    def conjugate_grad(self, S: ArrayLike) -> np.ndarray:
        return np.zeros_like(self._check(S, "S"))

    def prox_conjugate(self, V: ArrayLike, step: float | ArrayLike) -> np.ndarray:
        return _project_ball(self._check(V, "V"), 1.0)

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        return self, 1

    def lipschitz(self, d: int = 1) -> float:
        return 1.0

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        rows = _frob_rows(residual, multiplicity)
        return cp.abs(rows) if len(rows.shape) == 1 else cp.norm(rows, 2, axis=1)


class _LevelLoss(Loss):
    """What the quantile and expectile losses share: scalar residuals and the level tau in
    (0, 1) (parameter ``quantile``)."""

    scalar_only = True

    def __init__(self, quantile: float) -> None:
        self.quantile = check_scalar(quantile, "quantile", lower=0.0, upper=1.0,
                                     lower_inclusive=False, upper_inclusive=False)

    def params(self) -> dict[str, Any]:
        return {"loss": self.name, "quantile": self.quantile}


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

    name = "quantile"
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

    name = "expectile"
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


#: Loss classes by name (the strings accepted by :func:`get_loss`).
LOSSES = {
    "squared": SquaredLoss,
    "huber": HuberLoss,
    "huber_entrywise": EntrywiseHuberLoss,
    "absolute": AbsoluteLoss,
    "quantile": QuantileLoss,
    "expectile": ExpectileLoss,
}


def get_loss(loss: str | Loss, delta: float | None = None,
             quantile: float | None = None) -> Loss:
    """Resolve a loss name (or a :class:`Loss` object) to a Loss object.

    Parameters
    ----------
    loss : str or Loss
        One of ``LOSSES`` ("squared", "huber", "huber_entrywise", "absolute", "quantile",
        "expectile"), or a Loss object (returned unchanged; ``delta`` and ``quantile``
        must then be None).
    delta : float > 0, optional
        Required for "huber" and "huber_entrywise".
    quantile : float in (0, 1), optional
        Required for "quantile" and "expectile".

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown name, or a missing or invalid ``delta`` / ``quantile``, naming the argument.
    """
    if isinstance(loss, Loss):
        for name, val in (("delta", delta), ("quantile", quantile)):
            if val is not None:
                raise ValueError(f"{name} must be None when loss is a Loss object (set it on "
                                 f"the object), got {name}={val!r} with loss={loss!r}")
        return loss
    if not isinstance(loss, str) or loss.lower() not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)} or a Loss object, got {loss!r}")
    name = loss.lower()
    if name in ("huber", "huber_entrywise"):
        if delta is None or isinstance(delta, bool) or not isinstance(delta, numbers.Real):
            raise ValueError(f"delta must be a positive real number for loss={name!r} (the "
                             f"Huber threshold), got {delta!r}")
        return LOSSES[name](delta)
    if name in ("quantile", "expectile"):
        if quantile is None:
            raise ValueError(f"quantile must be a real number in (0, 1) for loss={name!r}, "
                             f"got {quantile!r}")
        return LOSSES[name](quantile)
    return LOSSES[name]()


class EmpiricalLoss:
    r"""The weighted empirical loss of predictions F against targets M, and its conjugate.

    .. math::

        L(F) = \sum_{i=1}^n c_i\,\ell(F_i - M_i),\qquad
        c_i = \frac{w_i}{\sum_j w_j},

    i.e. :math:`\frac1n\sum_i \tilde w_i \ell(F_i - M_i)` with the weights normalized to
    mean one, :math:`\tilde w = n w / \sum w` (no weights: :math:`c_i = 1/n`).  Integer
    weights therefore give the objective of the data set with rows repeated (scikit-learn's
    semantics), and scaling all weights changes nothing.  Weights must be > 0 (drop the
    rows of weight 0 before: they do not enter the objective).

    The conjugate of :math:`F_i \mapsto c_i\ell(F_i - M_i)` is
    :math:`\langle\Gamma_i, M_i\rangle + c_i\,\ell^*(\Gamma_i / c_i)`, so the dual of
    Theorem 3 uses

    .. math::

        L^*(\Gamma) = \sum_i \langle\Gamma_i, M_i\rangle + c_i\,\ell^*(\Gamma_i / c_i),

    and at the optimum :math:`\Gamma_i = c_i\nabla\ell(F_i - M_i)` (for the squared loss
    and no weights :math:`(F_i - M_i)/n`; for Huber the clipped residuals over n).  The
    prox of :math:`\eta L^*` (per sample, substituting :math:`\Gamma_i = c_i S_i`) is

    .. math::

        \operatorname{prox}_{\eta L^*}(V)_i = c_i\,
        \operatorname{prox}_{(\eta/c_i)\ell^*}\big((V_i - \eta M_i)/c_i\big).

    Parameters
    ----------
    loss : Loss
    targets : ndarray (n,) or (n, d, d)
    sample_weight : ndarray (n,), optional
        Positive weights (None: all equal).
    """

    def __init__(self, loss: Loss, targets: ArrayLike,
                 sample_weight: ArrayLike | None = None) -> None:
        self.loss = loss
        self.M = np.asarray(targets, dtype=np.float64)
        n = self.M.shape[0]
        self.n = n
        if sample_weight is None:
            self.c = np.full(n, 1.0 / n)
        else:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
                raise ValueError(f"sample_weight must be a finite positive array of shape "
                                 f"({n},) (drop the rows of weight 0 first)")
            self.c = w / np.sum(w)

    def _cb(self, X):
        return _per_sample(self.c, X)

    def value(self, F: ArrayLike) -> float:
        """L(F) = sum_i c_i l(F_i - M_i)."""
        return float(self.c @ self.loss.value(np.asarray(F) - self.M))

    def grad(self, F: ArrayLike) -> np.ndarray:
        """c_i grad l(F_i - M_i): the optimal dual variable at the optimal F."""
        return self._cb(self.M) * self.loss.grad(np.asarray(F) - self.M)

    def conjugate(self, G: ArrayLike) -> float:
        r"""L^*(G) = sum_i <G_i, M_i> + c_i l^*(G_i / c_i) (inf outside the domain)."""
        G = np.asarray(G, dtype=np.float64)
        lin = float(np.vdot(G, self.M))
        return lin + float(self.c @ self.loss.conjugate(G / self._cb(G)))

    def conjugate_grad(self, G: ArrayLike) -> np.ndarray:
        """M_i + grad l^*(G_i / c_i)."""
        G = np.asarray(G, dtype=np.float64)
        return self.M + self.loss.conjugate_grad(G / self._cb(G))

    def prox_conjugate(self, V: ArrayLike, step: float) -> np.ndarray:
        r"""prox of ``step`` * L^* at V (shape of the targets)."""
        V = np.asarray(V, dtype=np.float64)
        cb = self._cb(V)
        return cb * self.loss.prox_conjugate((V - step * self.M) / cb, step / self.c)

    def conjugate_smoothness(self) -> float:
        """Lipschitz constant of grad L^* on its domain: max_i conjugate_smoothness / c_i."""
        return float(self.loss.conjugate_smoothness / self.c.min())

    def conjugate_strong_convexity(self) -> float:
        """Strong convexity of L^*: min_i 1 / (smoothness c_i) (0 for a non-smooth loss)."""
        s = self.loss.smoothness
        return 0.0 if not np.isfinite(s) else float(1.0 / (s * self.c.max()))

    def cvxpy_expr(self, residual: cp.Expression,
                   multiplicity: ArrayLike | None = None) -> cp.Expression:
        """sum_i c_i l(residual_i) as a CVXPY expression (see :meth:`Loss.cvxpy_expr`)."""
        return self.c @ self.loss.cvxpy_expr(residual, multiplicity)
