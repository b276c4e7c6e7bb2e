r"""The squared loss :math:`\ell(R) = \frac12\|R\|_F^2`."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses._base import Loss, _frob_rows, _per_sample, _sq_norms
from psdsos.losses._registry import register_loss


@register_loss("squared")
class SquaredLoss(Loss):
    r"""Half the squared Frobenius norm of the residual, self-conjugate.

    .. math::

        \ell(R) = \tfrac12\|R\|_F^2 = \ell^*(R), \qquad
        \operatorname{prox}_{\eta\ell^*}(V) = \frac{V}{1 + \eta}.

    The data term of eq. (11) of the PSD paper; 1-smooth and 1-strongly convex, so the dual
    of eq. (12) is smooth (plain accelerated gradient, no prox).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.losses import SquaredLoss
    >>> SquaredLoss().value(np.array([2.0, -1.0]))
    array([2. , 0.5])
    """

    symmetric = True
    convex_regression = True
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
