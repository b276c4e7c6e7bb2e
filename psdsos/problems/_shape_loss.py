r"""Shape-constrained regression with a general convex loss (PSD paper eq. 28, loss of Theorem 2).

The problem of :mod:`psdsos.problems._shape` with the data term
:math:`\frac1n\|t - \mathbf M w\|^2` replaced by a loss of :mod:`psdsos.losses` acting on the
residuals :math:`r_i = f(x_i) - t_i`:

.. math::

    \min_{w = (\beta, v),\ \mathbf B_k\succeq 0}\ \sum_{i=1}^n c_i\,\ell\big((\mathbf M w)_i
      - t_i\big) + \rho\|v\|^2 + \sum_k \lambda_1\operatorname{Tr}\mathbf B_k
      + \frac{\lambda_2}{2}\|\mathbf B_k\|_F^2
    \quad\text{s.t.}\quad \mathcal L_k w + c_k = \mathcal A_k(\mathbf B_k),

with :math:`\mathbf M = [E, \mathbf F_v]` the fitted values in the coordinates
:math:`w = (\beta, v)`, :math:`v = \mathbf R\alpha` (E the unpenalized affine design,
:math:`\mathbf F_v` the kernel part), :math:`c_i = 2 w_i / \sum_j w_j` (2/n without
weights; the squared loss :math:`\ell(r) = r^2/2` gives back :math:`\frac1n\|t - \mathbf M
w\|^2`), and :math:`\mathcal L_k = [\mathcal L_{k,\beta}, \mathcal L_{k,v}]` the constraint
maps (:func:`psdsos.problems._shape.constraint_map`).

**Dual** (as Proposition 9 from eq. 28, the loss entering through its conjugate as in
Theorem 2).  Write :math:`z = \mathbf M w` with a multiplier :math:`u\in\mathbb R^n` and
:math:`\Gamma_k` for the constraints of block k (:math:`\gamma` all of them stacked,
:math:`\mathcal L` and c the stacked maps and constants).  The Lagrangian

.. math::

    \sum_i\phi_i(z_i) + \rho\|v\|^2 + \sum_k R_k(\mathbf B_k) + u^T(\mathbf M w - z)
      + \gamma^T(\mathcal A(\mathbf B) - \mathcal L w - c),
    \qquad \phi_i(z) = c_i\ell(z - t_i),

is minimized over z by :math:`-\sum_i\phi_i^*(u_i)`,
:math:`\phi_i^*(u) = u\,t_i + c_i\ell^*(u/c_i)`; over the unpenalized :math:`\beta` it is
bounded only when :math:`E^Tu = \mathcal L_\beta^T\gamma` (with a Hessian constraint alone
:math:`\mathcal L_\beta = 0`: the :math:`E^Tu = 0` of convex regression; monotonicity and
bounds involve the affine part); over v by :math:`-\|\mathbf F_v^Tu - \mathcal L_v^T\gamma
\|^2/(4\rho)` at :math:`v = (\mathcal L_v^T\gamma - \mathbf F_v^Tu)/(2\rho)`; over
:math:`\mathbf B_k \succeq 0` by the negative part.  So

.. math::

    \min_{u,\,\Gamma:\ E^Tu = \mathcal L_\beta^T\gamma}\ D(u, \Gamma) =
      \sum_i\big(u_i t_i + c_i\ell^*(u_i/c_i)\big) + c^T\gamma
      + \frac{1}{4\rho}\|\mathbf F_v^Tu - \mathcal L_v^T\gamma\|^2
      + \sum_k\frac{1}{2\lambda_2}\|[\mathcal A_k^*\Gamma_k + \lambda_1 I]_-\|_F^2,

and the primal optimum is :math:`-\min D`.  At the optimum
:math:`u_i\in c_i\,\partial\ell(f(x_i) - t_i)` (the clipped residuals for Huber, the
pinball subgradients :math:`c_i(1-\tau)` or :math:`-c_i\tau`); for the squared loss,
eliminating u gives back the dual of :class:`ShapeRegressionProblem`.

**Solver** (:func:`psdsos.solvers._dual_convex.solve_dual_loss`, accelerated proximal
gradient on (u, Gamma) as for convex regression with a loss).  The smooth part is the
coupling :math:`c^T\gamma + \|\mathbf F_v^Tu - \mathcal L_v^T\gamma\|^2/(4\rho)` plus the
negative parts; the prox part is :math:`\sum_i\phi_i^*(u_i)` plus the indicator of the
affine set :math:`E^Tu = \mathcal L_\beta^T\gamma`, whose prox (:meth:`prox`) takes a
Lagrange multiplier :math:`\mu` of that set: :math:`u(\mu) =
\operatorname{prox}_{\eta\phi^*}(V_u - E\mu)` (separable) and :math:`\gamma(\mu) = V_\gamma
+ \mathcal L_\beta\mu`, mu maximizing the concave :math:`\theta(\mu)` by Newton's method.
The primal point of an iterate: v as above, :math:`\mathbf B_k` the negative parts, and
of two offsets the one with the better certificate: :math:`\beta` minimizing the Lagrangian
:math:`\sum_i c_i\ell(\mathbf F_v v + E\beta - t)_i - (E^Tu)^T\beta` (Newton, or a linear
program for the pinball loss), or :math:`\beta = -\mu/\eta` from the prox's multiplier
(exact at a fixed point of the step; :meth:`ShapeRegressionLossProblem.prox_offset`).
The certificate is that of the squared loss: the relative duality gap
:math:`(P + D)/\max(|P|, |D|, P_0)` and the relative constraint residual
:math:`\|\mathcal L w + c - \mathcal A(\mathbf B)\| /
\max(\|\mathcal L w + c\|, \|\mathcal A(\mathbf B)\|)`, both <= tol.  The regularized
Newton steps of ``method="auto"`` are for the smooth dual of the squared loss only.
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np
from scipy.optimize import linprog

from psdsos.losses import Loss
from psdsos.problems._base import BlockDualProblem, DualBlock
from psdsos.problems._convex import DUAL_FLOOR
from psdsos.problems._convex_loss import loss_weights, smooth_offset

__all__ = [
    "ShapeRegressionLossProblem",
    "unconstrained_loss_problem",
    "unconstrained_loss_value",
]


class ShapeRegressionLossProblem(BlockDualProblem):
    r"""The dual with the loss's variables u of the module docstring (and its CVXPY primal).

    Parameters
    ----------
    M : ndarray (n, e + q)
        The fitted values in the coordinates w = (beta, v), unweighted: f(x_i) = (M w)_i.
    t : ndarray (n,)
        The targets (standardized units).
    n_affine : int
        e, the number of unpenalized coefficients at the start of w.
    rho, lam1, lam2 : float
    blocks : list of (ShapeConstraint, L, c, Phi)
        As :class:`psdsos.problems._shape.ShapeRegressionProblem`.
    loss : psdsos.losses.Loss
        Acting on the scalar residual f(x) - t.
    sample_weight : ndarray (n,), optional
        Positive weights: c_i = 2 w_i / sum w (:func:`psdsos.problems._convex_loss.loss_weights`).
    """

    coupled = True

    def __init__(self, M: np.ndarray, t: np.ndarray, n_affine: int, rho: float, lam1: float,
                 lam2: float, blocks: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]],
                 loss: Loss, *, sample_weight: np.ndarray | None = None) -> None:
        if not isinstance(loss, Loss):
            raise ValueError(f"loss must be a psdsos.losses.Loss, got {loss!r}")
        self.loss = loss
        self.M = np.asarray(M, dtype=np.float64)
        self.y = self.t = np.asarray(t, dtype=np.float64)
        self.n = self.t.shape[0]
        self.e = int(n_affine)
        self.rho = float(rho)
        self.c = loss_weights(self.n, sample_weight)
        self.constraints = [con for con, _, _, _ in blocks]
        self.block_args = list(blocks)
        super().__init__([DualBlock(np.asarray(Phi, float), con.d, float(lam1), float(lam2))
                          for con, _, _, Phi in blocks])
        self.lam1_, self.lam2_ = float(lam1), float(lam2)
        self.Ls = [np.asarray(L, dtype=np.float64) for _, L, _, _ in blocks]
        self.Lall = np.vstack(self.Ls)
        self.call = np.concatenate([np.asarray(c, dtype=np.float64) for _, _, c, _ in blocks])
        self.sizes = [L.shape[0] for L in self.Ls]
        self.E = self.M[:, :self.e]
        self.Fv = self.M[:, self.e:]
        self.Lb = self.Lall[:, :self.e]
        self.Lv = self.Lall[:, self.e:]
        self.ds = [int(con.d) for con in self.constraints]
        # the symmetrization of a flat gradient (Hessian blocks: (a, b) and (b, a))
        self._sym = any(d > 1 for d in self.ds)
        self._prox_mu: np.ndarray | None = None
        self._beta: np.ndarray | None = None
        self._cvx: Any = None

    # ---- the flat Gamma ----------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Length of the flat Gamma (sum_k m_k d_k^2)."""
        return int(self.Lall.shape[0])

    def split(self, g: np.ndarray) -> list[np.ndarray]:
        """The blocks (m_k, d_k, d_k) of a flat Gamma."""
        out, i = [], 0
        for size, d in zip(self.sizes, self.ds, strict=True):
            out.append(g[i:i + size].reshape(-1, d, d))
            i += size
        return out

    def join(self, parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(p, dtype=np.float64).reshape(-1) for p in parts])

    def _symmetric(self, g: np.ndarray) -> np.ndarray:
        if not self._sym:
            return g
        return self.join([0.5 * (G + G.transpose(0, 2, 1)) for G in self.split(g)])

    # ---- smooth part -------------------------------------------------------------------------
    def coupling(self, u: np.ndarray, g: np.ndarray
                 ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        r"""(value, grad_u, grad_Gamma (flat), v) of :math:`c^T\gamma + \|\mathbf F_v^Tu -
        \mathcal L_v^T\gamma\|^2/(4\rho)`; grad_Gamma = :math:`\mathcal L_v v + c`, the
        constraint values of the primal point without its affine part."""
        h = self.Fv.T @ u - self.Lv.T @ g
        v = -h / (2.0 * self.rho)
        gg = self._symmetric(self.Lv @ v + self.call)
        return (float(self.call @ g) + float(h @ h) / (4.0 * self.rho), self.Fv @ (-v), gg, v)

    def coupling_value(self, u: np.ndarray, g: np.ndarray) -> float:
        h = self.Fv.T @ u - self.Lv.T @ g
        return float(self.call @ g) + float(h @ h) / (4.0 * self.rho)

    def lipschitz(self) -> float:
        r"""Largest eigenvalue of the coupling's Hessian,
        :math:`\lambda_{\max}(\mathbf F_v^T\mathbf F_v + \mathcal L_v^T\mathcal L_v)/(2\rho)`."""
        A = self.Fv.T @ self.Fv + self.Lv.T @ self.Lv
        return float(np.linalg.eigvalsh(0.5 * (A + A.T))[-1]) / (2.0 * self.rho) * (1 + 1e-10)

    # ---- the conjugate and the prox with E^T u = L_beta^T gamma --------------------------
    def conjugate_value(self, u: np.ndarray) -> float:
        r""":math:`\sum_i u_i t_i + c_i\ell^*(u_i / c_i)` (inf outside the domain)."""
        return float(u @ self.t + self.c @ self.loss.conjugate(u / self.c))

    def _prox_free(self, W: np.ndarray, eta: float) -> np.ndarray:
        c = self.c
        return c * self.loss.prox_conjugate((W - eta * self.t) / c, eta / c)

    def affine_violation(self, u: np.ndarray, g: np.ndarray) -> np.ndarray:
        """E^T u - L_beta^T gamma (zero on the dual's feasible set)."""
        return self.E.T @ u - self.Lb.T @ g

    def prox(self, Vu: np.ndarray, Vg: np.ndarray, eta: float
             ) -> tuple[np.ndarray, np.ndarray]:
        r"""argmin over :math:`E^Tu = \mathcal L_\beta^T\gamma` of
        :math:`\eta\sum_i\phi_i^*(u_i) + \frac12\|u - V_u\|^2 + \frac12\|\gamma - V_\gamma\|^2`.

        With a multiplier :math:`\mu` of the affine set the minimizer is
        :math:`u(\mu) = \operatorname{prox}_{\eta\phi^*}(V_u - E\mu)`,
        :math:`\gamma(\mu) = V_\gamma + \mathcal L_\beta\mu`; mu maximizes the concave
        :math:`\theta(\mu)` whose gradient is :math:`E^Tu(\mu) - \mathcal L_\beta^T\gamma(\mu)`
        (Newton's method with the generalized Jacobian of the prox, damped by a
        backtracking line search), then the remaining violation is removed within the
        prox's linear piece (the free u and gamma), exactly up to rounding.
        """
        if self.e == 0:
            return self._prox_free(Vu, eta), Vg
        E, Lb = self.E, self.Lb
        mu = np.zeros(self.e) if self._prox_mu is None else self._prox_mu.copy()

        def theta(mu):
            u = self._prox_free(Vu - E @ mu, eta)
            g = Vg + Lb @ mu
            val = (eta * self.conjugate_value(u) if eta > 0 else 0.0) \
                + 0.5 * float((u - Vu) @ (u - Vu)) + 0.5 * float((g - Vg) @ (g - Vg)) \
                + float(mu @ self.affine_violation(u, g))
            return val, u, g

        val, u, g = theta(mu)
        LtL = Lb.T @ Lb
        nA2 = float(np.linalg.norm(E, 2)) ** 2 + float(np.linalg.eigvalsh(LtL)[-1])
        scale = np.sqrt(nA2) * (float(np.linalg.norm(Vu)) + float(np.linalg.norm(Vg)) + 1e-300)
        for _ in range(60):
            grad = self.affine_violation(u, g)
            if float(np.linalg.norm(grad)) <= 1e-14 * scale:
                break
            h = 1e-7 * (1.0 + np.abs(Vu - E @ mu))
            J = np.clip((self._prox_free(Vu - E @ mu + h, eta) - u) / h, 0.0, 1.0)
            Hm = E.T @ (J[:, None] * E) + LtL + 1e-12 * nA2 * np.eye(self.e)
            step = np.linalg.solve(Hm, grad)
            t, accepted = 1.0, False
            for _ in range(20):  # damped Newton step
                val_n, u_n, g_n = theta(mu + t * step)
                if val_n >= val:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                # gradient step 1 / ||A||^2 (theta has a ||A||^2-Lipschitz gradient)
                step, t = grad / nA2, 1.0
                val_n, u_n, g_n = theta(mu + step)
                if val_n < val:
                    break
            if val_n - val <= 1e-16 * abs(val) and t < 1.0:
                mu, val, u, g = mu + t * step, val_n, u_n, g_n
                break
            mu, val, u, g = mu + t * step, val_n, u_n, g_n
        self._prox_mu = mu
        # polish: the minimal correction of (u_free, gamma) that removes the violation
        r = self.affine_violation(u, g)
        if float(np.linalg.norm(r)) > 0:
            h = 1e-7 * (1.0 + np.abs(Vu - E @ mu))
            free = (self._prox_free(Vu - E @ mu + h, eta) - u) / h > 0.5
            Ef = E[free]
            s = np.linalg.lstsq(Ef.T @ Ef + LtL, r, rcond=None)[0]
            un = u.copy()
            un[free] = u[free] - Ef @ s
            gn = g + Lb @ s
            if np.isfinite(self.conjugate_value(un)) and float(np.linalg.norm(
                    self.affine_violation(un, gn))) < float(np.linalg.norm(r)):
                u, g = un, gn
        return u, g

    # ---- primal pieces -------------------------------------------------------------------------
    def data_term(self, z: np.ndarray) -> float:  # type: ignore[override]
        """sum_i c_i l(z_i - t_i)."""
        return float(self.c @ self.loss.value(z - self.t))

    def best_offset(self, z0: np.ndarray, g: np.ndarray) -> np.ndarray:
        """beta minimizing sum_i c_i l(z0_i + (E beta)_i - t_i) - g^T beta (g = E^T u: the
        Lagrangian in the unpenalized beta; empty without E)."""
        if self.e == 0:
            return np.zeros(0)
        if not self.loss.is_smooth:
            return self._offset_lp(z0, g)
        beta = np.linalg.lstsq(self.E, self.t - z0, rcond=None)[0] if self._beta is None \
            else self._beta.copy()
        self._beta = smooth_offset(self.loss, self.E, self.c, self.t, z0, beta, g)
        return self._beta

    def _offset_lp(self, z0: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The pinball-type loss (positively homogeneous, piecewise linear): a linear
        program (HiGHS) in beta and the residuals' positive and negative parts."""
        E, c, n, e = self.E, self.c, self.n, self.e
        one = np.array([1.0])
        a = float(self.loss.value(one)[0])
        b = float(self.loss.value(-one)[0])
        cost = np.concatenate([-g, c * a, c * b])
        A_eq = np.hstack([E, -np.eye(n), np.eye(n)])
        bounds = [(None, None)] * e + [(0, None)] * (2 * n)
        res = linprog(cost, A_eq=A_eq, b_eq=self.t - z0, bounds=bounds, method="highs")
        if res.status != 0:  # unbounded (u off its domain): the least-squares offset
            return np.linalg.lstsq(E, self.t - z0, rcond=None)[0]
        return res.x[:e]

    def primal_point(self, v: np.ndarray, u: np.ndarray,
                     beta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(w, z): the primal coefficients w = (beta, v) of the dual point (beta given, or
        minimizing the Lagrangian with the multipliers u) and the fitted values z = M w."""
        z0 = self.Fv @ v
        if beta is None:
            beta = self.best_offset(z0, self.E.T @ u)
        return np.concatenate([beta, v]), z0 + self.E @ beta

    def prox_offset(self, eta: float) -> np.ndarray | None:
        r"""The offset :math:`eta = -\mu/\eta` of the last prox's multiplier (step eta > 0):
        at a fixed point of the proximal gradient step, :math:`u\in\partial\phi(\mathbf F_v v
        + Eeta)` and :math:`\mathcal L_v v + \mathcal L_etaeta + c = \mathcal A(\mathbf
        B)`, so it is the primal offset, consistent with the constraints near the optimum
        where the Lagrangian's minimizer need not be (a piecewise-linear loss)."""
        if self.e == 0 or self._prox_mu is None or not eta > 0:
            return None
        return -self._prox_mu / eta

    def objective(self, w: np.ndarray, B: list[np.ndarray]) -> float:
        """The primal objective (constraints not checked)."""
        v = w[self.e:]
        return self.data_term(self.M @ w) + self.rho * float(v @ v) + self.regularizer(B)

    def primal_value(self, w: np.ndarray, z: np.ndarray, B: list[np.ndarray]) -> float:
        v = w[self.e:]
        return self.data_term(z) + self.rho * float(v @ v) + self.regularizer(B)

    def primal_objective(self, G: list[np.ndarray], B: list[np.ndarray],
                         FB: list[np.ndarray]) -> float:
        raise TypeError("ShapeRegressionLossProblem is solved by solve_dual_loss (its dual "
                        "has the loss's variables u), not solve_dual")

    def smooth(self, G: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        raise TypeError("ShapeRegressionLossProblem is solved by solve_dual_loss (its dual "
                        "has the loss's variables u), not solve_dual")

    def constraint_values(self, w: np.ndarray) -> list[np.ndarray]:
        """g_k at the blocks' points, shapes (m_k, d_k, d_k)."""
        return self.split(self.Lall @ w + self.call)

    def residual_parts(self, w: np.ndarray, FB: np.ndarray) -> float:
        """The relative constraint residual of w against the flat values FB = A(B)."""
        g = self.Lall @ w + self.call
        den = max(float(np.linalg.norm(g)), float(np.linalg.norm(FB)), 1e-300)
        return float(np.linalg.norm(g - FB)) / den

    def constraint_residual(self, w: np.ndarray, B: list[np.ndarray]) -> float:
        """Relative violation of g_k(z_kj) = Psi^T B_k Psi over all blocks."""
        from psdsos.sos._maps import sos_evaluate

        FB = self.join([sos_evaluate(b.Phi, Bk, b.d)
                        for b, Bk in zip(self.blocks, B, strict=True)])
        return self.residual_parts(w, FB)

    def dual_floors(self) -> tuple[float, float]:
        """Floors of the relative gap and residual: 1e-6 of the loss of the best constant
        (or zero) fit, and that times the constraint maps' scale."""
        z0 = np.zeros(self.n)
        base = self.data_term(np.full(self.n, float(np.median(self.t)))) if self.e \
            else self.data_term(z0)
        base = max(base, np.finfo(float).eps * self.data_term(z0), 1e-300)
        scale = float(np.sqrt(np.max(np.sum(self.Lall * self.Lall, axis=1))))
        m = sum(b.m for b in self.blocks)
        return DUAL_FLOOR * base, DUAL_FLOOR * m * base * scale**2

    def initial_point(self, G0: list[np.ndarray] | None = None,
                      w0: np.ndarray | None = None,
                      u0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A feasible (u, flat Gamma): u0, or the loss's gradient at the residuals of w0
        (zero without), and G0 (zero without), brought into the domain (prox, step 0)."""
        g = np.zeros(self.size) if G0 is None else self._symmetric(self.join(G0))
        if u0 is not None:
            u = np.asarray(u0, dtype=np.float64)
        elif w0 is not None:
            u = self.c * self.loss.grad(self.M @ w0 - self.t)
        else:
            u = np.zeros(self.n)
        return self.prox(u, g, 0.0)

    def recover_blocks(self, g: np.ndarray) -> list[np.ndarray]:
        """The blocks of a flat Gamma, symmetrized."""
        return [0.5 * (G + G.transpose(0, 2, 1)) for G in self.split(g)]

    # ---- the primal (CVXPY) ----------------------------------------------------------------------
    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, list[Any]]:
        """The primal as one CVXPY problem (the loss's expression, one PSD block per
        constraint); returns (problem, w, the SoSBlocks) as
        :meth:`ShapeRegressionProblem.cvxpy_problem`."""
        if self._cvx is None:
            from psdsos.sos._primitive import SoSBlock

            w = cp.Variable(self.M.shape[1], name="w")
            cons: list[Any] = []
            sos = []
            for k, (b, L, con) in enumerate(zip(self.blocks, self.Ls, self.constraints,
                                                strict=True)):
                d = con.d
                block = SoSBlock(b.Phi, d=d, name=f"B{k}", max_condition=None)
                iu, ju = np.triu_indices(d)
                m = b.Phi.shape[0]
                rows = (np.arange(m)[:, None] * d * d + (iu * d + ju)[None, :]).reshape(-1)
                off = sum(self.sizes[:k])
                G = L[rows] @ w + self.call[off + rows]
                cons += block.constraints_packed(cp.reshape(G, (m, len(iu)), order="C"))
                sos.append(block)
            obj = (self.c @ self.loss.cvxpy_expr(self.M @ w - self.t)
                   + self.rho * cp.sum_squares(w[self.e:])
                   + sum(blk.regularizer(self.lam1_, self.lam2_) for blk in sos))
            self._cvx = (cp.Problem(cp.Minimize(obj), cons), w, sos)
        return self._cvx


def unconstrained_loss_problem(M: np.ndarray, t: np.ndarray, n_affine: int, rho: float,
                               loss: Loss, sample_weight: np.ndarray | None
                               ) -> tuple[cp.Problem, cp.Variable]:
    """The fit without shape constraint (no constraint point yet) as a CVXPY problem:
    minimize sum_i c_i l((M w)_i - t_i) + rho ||v||^2 over w = (affine part, v).  Returns
    the problem and its variable w; :func:`unconstrained_loss_value` evaluates a solution."""
    n = M.shape[0]
    c = loss_weights(n, sample_weight)
    w = cp.Variable(M.shape[1], name="w")
    obj = c @ loss.cvxpy_expr(M @ w - t) + rho * cp.sum_squares(w[n_affine:])
    return cp.Problem(cp.Minimize(obj)), w


def unconstrained_loss_value(M: np.ndarray, t: np.ndarray, n_affine: int, rho: float,
                             loss: Loss, sample_weight: np.ndarray | None,
                             w: np.ndarray) -> float:
    """The objective of :func:`unconstrained_loss_problem` at ``w``."""
    c = loss_weights(M.shape[0], sample_weight)
    v = w[n_affine:]
    return float(c @ loss.value(M @ w - t) + rho * float(v @ v))
