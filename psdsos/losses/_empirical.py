r"""The weighted empirical loss of predictions against targets, and its conjugate."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses._base import Loss, _per_sample


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
