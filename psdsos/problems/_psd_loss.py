r"""PSD-valued regression with a general convex loss and sample weights (PSD paper,
Theorems 2-3, eq. 9-10).

.. math::

    J(\mathbf B) = \sum_{i=1}^n c_i\,\ell(F_{\mathbf B}(x_i) - \mathbf M_i)
      + \lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2,
    \qquad c_i = w_i / \textstyle\sum_j w_j,

(:class:`psdsos.losses.EmpiricalLoss`; no weights: c_i = 1/n, and the squared loss
:math:`\ell = \frac12\|\cdot\|_F^2` gives eq. 11 exactly).  Its dual (Theorem 3, eq. 10) is

.. math::

    \min_\Gamma\ L^*(\Gamma) + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2,
    \qquad L^*(\Gamma) = \sum_i\langle\Gamma_i, \mathbf M_i\rangle + c_i\,\ell^*(\Gamma_i/c_i),

with :math:`\mathbf B = [\mathcal A^*\Gamma + \lambda_1 I]_- / \lambda_2` and, at the
optimum, :math:`\Gamma_i = c_i\nabla\ell(F_{\mathbf B}(x_i) - \mathbf M_i)` (Huber: the
residuals clipped to the ball of radius delta, times c_i).

When :math:`\ell^*` is smooth (squared, expectile) L^* is the smooth part q of
:func:`psdsos.solvers.solve_dual`; otherwise (Huber, absolute, quantile: indicators of a
ball or a box, plus a quadratic) the problem offers ``prox`` and ``nonsmooth_value`` and
the solver takes proximal steps on L^*, the smooth part being the negative-part term alone;
for the Huber losses (``quadratic_set``) in the metric of the negative-part term's curvature
bound, otherwise Euclidean (see :mod:`psdsos.solvers._dual`).
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

from psdsos.losses import EmpiricalLoss, Loss, SquaredLoss
from psdsos.problems._psd import _PSDPrimal
from psdsos.sos._maps import sos_evaluate
from psdsos.sos._primitive import SoSBlock

__all__ = ["PSDLossProblem"]

#: Largest low-rank factor of the weighted least-squares Hessian given to the
#: preconditioner (a dense (n d^2) x k matrix and a k x k Cholesky factor); beyond it the
#: largest curvature max_i 1/c_i is the identity part (an upper bound: safe, slower).
_MAX_FACTOR_COLUMNS = 512


class PSDLossProblem(_PSDPrimal):
    r"""PSD-valued regression with loss ``loss`` and sample weights (module docstring).

    Parameters
    ----------
    Phi : ndarray (n, r)
    M : ndarray (n, d, d)
    lam1, lam2 : float
    loss : Loss
    sample_weight : ndarray (n,), optional
        Positive weights, normalized to c = w / sum(w).
    coefficients : ndarray (n,), optional
        The c_i themselves (not normalized; instead of ``sample_weight``), as the
        reweighted least-squares path of Huber uses.
    """

    def __init__(self, Phi: np.ndarray, M: np.ndarray, lam1: float, lam2: float, loss: Loss,
                 sample_weight: np.ndarray | None = None, *,
                 coefficients: ArrayLike | None = None) -> None:
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.M = np.asarray(M, dtype=np.float64)
        self.n, self.d = self.M.shape[0], self.M.shape[1]
        self.lam1, self.lam2 = float(lam1), float(lam2)
        self.loss = loss
        if loss.scalar_only and self.d != 1:
            raise ValueError(f"loss={loss.name!r} takes scalar residuals only: the targets "
                             f"must be 1-D (d = 1), got matrices of size {self.d}")
        self.emp: EmpiricalLoss | _ScalarView = EmpiricalLoss(loss, self.M, sample_weight)
        if self.d == 1 and loss.scalar_only:
            self.emp = _ScalarView(EmpiricalLoss(loss, self.M[:, 0, 0], sample_weight))
        if coefficients is not None:
            c = np.asarray(coefficients, dtype=np.float64)
            if c.shape != (self.n,) or not np.all(c > 0):
                raise ValueError(f"coefficients must be a positive array of shape ({self.n},)")
            self.emp.c = c
        self._cvx: Any = None
        if loss.conjugate_is_smooth:
            # a smooth dual: plain (preconditioned) accelerated gradient; the solvers read
            # prox None as "no proximal term"
            self.prox = None  # type: ignore[method-assign, assignment]

    # ---- dual pieces ---------------------------------------------------------------------
    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """q(G) = L^*(G) and its gradient (smooth conjugates); 0 otherwise (prox path)."""
        if self.prox is None:
            return self.emp.conjugate(G), self.emp.conjugate_grad(G)
        return 0.0, np.zeros_like(G)

    def smooth_value(self, G: np.ndarray) -> float:
        return self.smooth(G)[0]

    def smooth_lipschitz(self) -> float:
        return self.emp.conjugate_smoothness() if self.prox is None else 0.0

    def strong_convexity(self) -> float:
        """Strong convexity of L^* (of q on the smooth path, of the prox term otherwise)."""
        return self.emp.conjugate_strong_convexity()

    def curvature_shift(self) -> float:
        """The identity part of the preconditioner: the largest curvature of q where the
        low-rank factor does not describe it (see :meth:`smooth_hessian_factor`)."""
        U = self.smooth_hessian_factor()
        if U is None:
            return self.smooth_lipschitz()
        return self.strong_convexity()

    def smooth_hessian_factor(self) -> np.ndarray | None:
        r"""U with :math:`\nabla^2 q = \mu I + UU^T` for the weighted squared loss (per
        sample 1/c_i; the samples above mu = min 1/c_i carry a column per entry), when it
        has at most half as many columns as entries and at most 512; None otherwise."""
        if self.prox is not None or not isinstance(self.loss, SquaredLoss):
            return None
        curv = 1.0 / self.emp.c
        mu = curv.min()
        extra = np.flatnonzero(curv > mu * (1 + 1e-12))
        d2 = self.d * self.d
        if len(extra) * d2 > min(self.n * d2 // 2, _MAX_FACTOR_COLUMNS):
            return None
        U = np.zeros((self.n * d2, len(extra) * d2))
        for k, i in enumerate(extra):
            idx = i * d2 + np.arange(d2)
            U[idx, k * d2 + np.arange(d2)] = np.sqrt(curv[i] - mu)
        return U

    def prox(self, V: np.ndarray, step: float) -> np.ndarray:
        """prox of step * L^* (the ball / box projections of the loss)."""
        return self.emp.prox_conjugate(V, step)

    def quadratic_set(self) -> tuple[Any, Any, Any] | None:
        """(M, c, project) when each conjugate term is ``<G_i, M_i> + |G_i|^2 / (2 c_i)`` on
        the set c_i C (Huber losses: C a ball or a box, ``project`` its projection); None
        otherwise.  The dual solver then takes its proximal steps in the preconditioner's
        metric."""
        if self.prox is None or not self.loss.conjugate_is_quadratic_on_set:
            return None
        return self.M, self.emp.c, lambda V: self.loss.prox_conjugate(V, 0.0)

    def nonsmooth_value(self, G: np.ndarray) -> float:
        """L^*(G) on the prox path (inf outside its domain)."""
        return self.emp.conjugate(G)

    # ---- primal ----------------------------------------------------------------------------
    def _data_term(self, FB):
        return self.emp.value(FB)

    def dual_point(self, B: np.ndarray, extras: dict[str, Any],
                   params: dict[str, Any]) -> np.ndarray:
        r"""A dual point certifying a primal answer: the optimality relation
        :math:`\Gamma_i = c_i\nabla\ell(F_{\mathbf B}(x_i) - \mathbf M_i)` (a subgradient
        for the non-smooth losses), or the solver's multipliers of the residual
        definition projected onto the domain of L^*, whichever has the lower dual value."""
        from psdsos.sos._maps import sos_adjoint

        FB = sos_evaluate(self.Phi, B, self.d)
        cands = [self.emp.grad(FB)]
        if params is not None and params.get("residual") is not None:
            nu = params["residual"].dual_value
            if nu is not None:
                iu, ju = np.triu_indices(self.d)
                mult = np.where(iu == ju, 1.0, 2.0)
                G = np.zeros_like(self.M)
                vals = -np.asarray(nu, dtype=np.float64).reshape(self.n, -1) / mult
                G[:, iu, ju] = vals
                G[:, ju, iu] = vals
                cands.append(self.emp.prox_conjugate(G, 0.0) if self.prox is not None else G)

        def dval(G):
            """D(G) of eq. (10); for lam2 = 0 at the largest t G (t <= 1) with
            A*(t G) + lam1 I PSD, as psdsos.solvers' certificate evaluates it."""
            w = np.linalg.eigvalsh(sos_adjoint(self.Phi, G))
            if self.lam2 > 0:
                neg = np.minimum(w + self.lam1, 0.0)
                return float(self.emp.conjugate(G)) + float(neg @ neg) / (2 * self.lam2)
            t = 1.0 if w[0] + self.lam1 >= 0 else self.lam1 / -w[0]
            return float(self.emp.conjugate(t * G))

        return min(cands, key=dval)

    def reweighted(self, weights: np.ndarray) -> PSDLossProblem:
        """The weighted least-squares problem of one reweighting step (IRLS): the squared
        loss with coefficients c_i w_i, the same features, targets and weights lam1, lam2."""
        return PSDLossProblem(self.Phi, self.M, self.lam1, self.lam2, SquaredLoss(),
                              coefficients=self.emp.c * np.asarray(weights, dtype=np.float64))

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        r"""The primal (eq. 9 with this loss), built once: a residual variable Z defined by
        ``Z == packed(F_B) - M`` (its multipliers are the dual variable), the loss's own
        CVXPY expression with multiplicities (1 on the diagonal, 2 off it).

        Returns
        -------
        problem, B, params ("lam1", "lam2", "M", "residual": the defining constraint)
        """
        if self._cvx is None:
            d = self.d
            block = SoSBlock(self.Phi, d, max_condition=None)
            iu, ju = np.triu_indices(d)
            t = len(iu)
            mult = np.where(iu == ju, 1.0, 2.0)
            Mp = cp.Parameter((self.n, t), name="M_packed")
            lam1 = cp.Parameter(nonneg=True, name="lam1")
            lam2 = cp.Parameter(nonneg=True, name="lam2")
            Z = cp.Variable((self.n, t), name="residual")
            define = Z == block.packed - Mp
            if d == 1:
                fit = self.emp.cvxpy_expr(Z[:, 0])
            else:
                fit = self.emp.cvxpy_expr(Z, multiplicity=mult)
            obj = fit + block.regularizer(lam1, lam2)
            prob = cp.Problem(cp.Minimize(obj), [define])
            self._cvx = (prob, block.B, {"lam1": lam1, "lam2": lam2, "M": Mp,
                                         "residual": define})
        return self._with_parameters()


class _ScalarView:
    """An EmpiricalLoss of scalar residuals seen through arrays of shape (n, 1, 1)."""

    def __init__(self, emp):
        self._emp = emp

    def __getattr__(self, name):
        return getattr(self._emp, name)

    @property
    def c(self):
        return self._emp.c

    @c.setter
    def c(self, value):
        self._emp.c = value

    def value(self, F):
        return self._emp.value(np.asarray(F)[:, 0, 0])

    def grad(self, F):
        return self._emp.grad(np.asarray(F)[:, 0, 0])[:, None, None]

    def conjugate(self, G):
        return self._emp.conjugate(np.asarray(G)[:, 0, 0])

    def conjugate_grad(self, G):
        return self._emp.conjugate_grad(np.asarray(G)[:, 0, 0])[:, None, None]

    def prox_conjugate(self, V, step):
        return self._emp.prox_conjugate(np.asarray(V)[:, 0, 0], step)[:, None, None]
