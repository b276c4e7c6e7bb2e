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
from dataclasses import dataclass
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_scalar


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


@dataclass(frozen=True)
class LossParameter:
    """A real parameter of a loss, passed by keyword to its constructor and by the estimators
    (``delta=``, ``quantile=``): its name, meaning, open interval and default.

    Parameters
    ----------
    name : str
        The keyword (and the attribute of the loss object that holds the value).
    description : str
        Its meaning, for error messages (e.g. "the Huber threshold").
    lower, upper : float or None
        The open interval of valid values (None: unbounded).
    default : float or None
        The value when none is given; None: the parameter is required.
    """

    name: str
    description: str
    lower: float | None = None
    upper: float | None = None
    default: float | None = None

    @property
    def requirement(self) -> str:
        """What a valid value is, in words ("a positive real number", "a real number in
        (0, 1)")."""
        if self.upper is None:
            return "a real number" if self.lower is None else (
                "a positive real number" if self.lower == 0 else f"a real number > {self.lower}")
        lo = "-inf" if self.lower is None else f"{self.lower:g}"
        return f"a real number in ({lo}, {self.upper:g})"

    def check(self, value: Any, loss: str | None = None) -> float:
        """The validated value (the default for None); ValueError naming the parameter (and
        the loss's name ``loss``) otherwise."""
        if value is None:
            value = self.default
        if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
            where = "" if loss is None else f" for loss={loss!r}"
            raise ValueError(f"{self.name} must be {self.requirement}{where} "
                             f"({self.description}), got {value!r}")
        return check_scalar(value, self.name, lower=self.lower, upper=self.upper,
                            lower_inclusive=False, upper_inclusive=False)


class Loss:
    """Base class of the losses (see the module docstring for the conventions).

    Subclasses implement ``value``, ``conjugate``, ``prox_conjugate``, ``cvxpy_expr`` and,
    where the loss is differentiable, ``grad``; where the conjugate is differentiable on
    its domain, ``conjugate_grad``.  A new loss is one subclass, registered by name with
    :func:`psdsos.losses.register_loss` where it is defined; it declares its constructor's
    parameters in ``parameters`` (the estimators pass them by keyword: ``delta=``,
    ``quantile=``) and stores each under its name.
    """

    #: short name, as accepted by :func:`get_loss` (set by ``register_loss``)
    name = "loss"
    #: the constructor's parameters, passed by keyword (the estimators pass ``delta=`` and
    #: ``quantile=`` to the losses that declare them)
    parameters: ClassVar[tuple[LossParameter, ...]] = ()
    #: l(-R) = l(R): the loss of negated residuals is the loss itself (see :meth:`reflected`)
    symmetric = False
    #: offered by ``ConvexRegressor`` (scalar residuals, :meth:`rescaled` and
    #: :meth:`reflected` known; a non-smooth loss must be positively homogeneous and
    #: piecewise linear, l(r) = l(1) r for r > 0 and l(-1) abs(r) below, as the offsets are
    #: then found by a linear program)
    convex_regression = False
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
        """The loss's name and parameters (``parameters``), for saving and for messages."""
        return {"loss": self.name, **{p.name: getattr(self, p.name) for p in self.parameters}}

    def rescaled(self, c: float) -> tuple[Loss, int] | None:
        r"""(loss', p) with :math:`\ell(cR) = c^p\,\ell'(R)` for c > 0 (positive
        homogeneity up to a change of parameter), or None when unknown.  Estimators fit at
        a unit scale of the targets with it."""
        return None

    def reflected(self) -> Loss | None:
        r"""The loss of the negated residuals, :math:`R \mapsto \ell(-R)`, or None when
        unknown (the loss itself when ``symmetric``).  ``ConvexRegressor(concave=True)``
        fits the convex function of -y with it."""
        return self if self.symmetric else None

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items() if k != "loss")
        return f"{type(self).__name__}({args})"
