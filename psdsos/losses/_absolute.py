r"""The absolute (Frobenius norm) loss :math:`\ell(R) = \|R\|_F`."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses._base import Loss, _frob_rows, _per_sample, _project_ball, _sq_norms
from psdsos.losses._registry import register_loss


@register_loss("absolute")
class AbsoluteLoss(Loss):
    r"""The Frobenius norm of the residual.

    .. math::

        \ell(R) = \|R\|_F, \qquad \ell^*(S) = \iota\{\|S\|_F \le 1\}

    (the conjugate of a norm is the indicator of the dual-norm unit ball), so the prox of
    the conjugate is the projection onto that ball, whatever the step.  1-Lipschitz,
    positively homogeneous (``rescaled(c)`` is the loss itself, degree 1), not
    differentiable at 0.  Not offered by ``ConvexRegressor``, whose ``loss="quantile"``
    with ``quantile=0.5`` is half of it on scalars.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.losses import AbsoluteLoss
    >>> AbsoluteLoss().value(np.array([[[3.0, 0.0], [0.0, 4.0]]]))
    array([5.])
    """

    is_smooth = False
    symmetric = True

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
