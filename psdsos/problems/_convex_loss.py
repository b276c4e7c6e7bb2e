r"""Convex regression with a general convex loss (PSD paper eq. 28 with the loss of Theorem 2).

The problem, in the approximate representation :math:`f = E\beta + \sum_i\alpha_i k(\cdot, x_i)`:

.. math::

    \min_{\alpha, \beta, \mathbf B\succeq 0}\ \sum_{i=1}^n c_i\,\ell\big(f(x_i) - y_i\big)
      + \rho\,\alpha^T\mathbf K\alpha + \lambda_1\operatorname{Tr}\mathbf B
      + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
    \quad\text{s.t.}\quad H_j(\alpha) = \Psi_j^T\mathbf B\Psi_j,\ j\in[m],

with :math:`c_i = 2 w_i / \sum_j w_j` (:math:`2/n` without weights) and :math:`\ell` a loss of
:mod:`psdsos.losses` acting on the residual :math:`r = f(x) - y` (squared: :math:`r^2/2`, so
the data term is eq. 28's :math:`\frac1n\sum_i (y_i - f(x_i))^2`).

**Dual** (derived from eq. 28 as Proposition 9).  Write :math:`z = \mathbf K\alpha + E\beta`
with a multiplier :math:`u\in\mathbb R^n`, and :math:`\Gamma_j` for the Hessian constraints.
Minimizing the Lagrangian over z gives :math:`-\sum_i\phi_i^*(u_i)` with
:math:`\phi_i(z) = c_i\ell(z - y_i)`, hence
:math:`\phi_i^*(u) = u\,y_i + c_i\,\ell^*(u / c_i)`; over :math:`\beta`, the constraint
:math:`E^Tu = 0` (the affine part is unpenalized); over :math:`\alpha` (:math:`v = R\alpha`,
:math:`\mathbf K = R^TR`, :math:`G_H = R^{-T}H^T` as in eq. 29) the quadratic
:math:`-\|Ru - G_H\Gamma\|^2/(4\rho)` at :math:`v = (G_H\Gamma - Ru)/(2\rho)`; over B the
negative part.  So

.. math::

    \min_{u:\ E^Tu = 0,\ \Gamma}\ D(u, \Gamma) = \sum_i \big(u_i y_i + c_i\ell^*(u_i/c_i)\big)
      + \frac{1}{4\rho}\|Ru - G_H\operatorname{vec}\Gamma\|^2
      + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2,

and the primal optimum is :math:`-\min D`.  At the optimum :math:`u_i \in c_i\,\partial\ell(
f(x_i) - y_i)`: u holds the (weighted) clipped residuals for Huber, the quantile
subgradients :math:`c_i(1-\tau)` or :math:`-c_i\tau` for the pinball loss.  For the squared
loss, eliminating u in closed form gives back eq. (29) (:class:`ConvexRegressionProblem`).
The first two terms of the smooth part couple u and Gamma; the conjugate (an indicator of a
box or ball for the Lipschitz losses) is handled by its prox, and :math:`E^Tu = 0` by a
Lagrange multiplier inside the prox (:meth:`ConvexRegressionLossProblem.prox`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.optimize import linprog

from psdsos.losses import Loss, SquaredLoss
from psdsos.problems._convex import DUAL_FLOOR
from psdsos.problems._convex_base import _ConvexRegressionBase

__all__ = ["ConvexRegressionLossProblem", "loss_weights", "smooth_offset"]


def loss_weights(n, sample_weight=None):
    """c_i = 2 w_i / sum(w) (2 / n without weights): sum_i c_i l(r_i) is eq. 28's data term
    for the squared loss l(r) = r^2 / 2."""
    if sample_weight is None:
        return np.full(n, 2.0 / n)
    w = np.asarray(sample_weight, dtype=np.float64)
    w = w / float(np.max(w))
    return 2.0 * w / float(np.sum(w))


def smooth_offset(loss: Loss, E: np.ndarray, c: np.ndarray, t: np.ndarray, z0: np.ndarray,
                  beta: np.ndarray, g: np.ndarray | None = None) -> np.ndarray:
    """beta minimizing sum_i c_i l(z0_i + (E beta)_i - t_i) - g^T beta for a smooth loss l:
    damped Newton steps from ``beta`` (the curvature of l from finite differences of its
    derivative, a ridge of 1e-12 of the scale of E^T diag(c) E, backtracking), until the
    decrease stalls."""
    g = np.zeros(E.shape[1]) if g is None else g

    def obj(b):
        return float(c @ loss.value(z0 + E @ b - t)) - float(g @ b)

    f = obj(beta)
    reg = 1e-12 * float(np.trace(E.T @ E)) * float(np.max(c))
    for _ in range(50):
        r = z0 + E @ beta - t
        grad = E.T @ (c * loss.grad(r)) - g
        h = 1e-7 * (1.0 + np.abs(r))
        curv = np.maximum((loss.grad(r + h) - loss.grad(r)) / h, 0.0)
        Hm = E.T @ ((c * curv)[:, None] * E) + reg * np.eye(E.shape[1])
        step = np.linalg.solve(Hm, grad)
        t_ = 1.0
        for _ in range(40):
            fn = obj(beta - t_ * step)
            if fn <= f:
                break
            t_ *= 0.5
        else:
            break
        beta, f_old, f = beta - t_ * step, f, fn
        if f_old - f <= 1e-15 * max(abs(f), 1e-300):
            break
    return beta


class ConvexRegressionLossProblem(_ConvexRegressionBase):
    r"""Convex regression with a general loss, approximate representation (module docstring).

    Parameters
    ----------
    K : ndarray (n, n)
    Hk : ndarray (m, n, p, p)
        Kernel Hessians at the constraint points, Hk[j, i] = Hess_z k(z_j, x_i).
    Phi : ndarray (m, r)
    y : ndarray (n,)
    E : ndarray (n, e) or None
    rho, lam1, lam2 : float
    loss : psdsos.losses.Loss
        Acting on the scalar residual f(x) - y.
    sample_weight : ndarray (n,) of positive weights, optional
    F : ndarray (n, q), optional
        Landmarks (Nystrom): f = E beta + sum_l alpha_l k(., c_l) on q landmarks, K is
        then their q x q kernel matrix, F[i, l] = k(x_i, c_l) and Hk has shape (m, q, p, p);
        the fit matrix in the coordinates v = R alpha is F R^{-1} (n x q): O(n q) memory.
    """

    def __init__(self, K, Hk, Phi, y, E, rho, lam1, lam2, loss, *, sample_weight=None,
                 jitter="auto", F=None):
        from psdsos.features import cholesky_with_jitter

        if not isinstance(loss, Loss):
            raise ValueError(f"loss must be a psdsos.losses.Loss, got {loss!r}")
        self.loss = loss
        self.y = np.asarray(y, dtype=np.float64)
        n = self.y.shape[0]
        self.n = n
        self.c = loss_weights(n, sample_weight)
        self.sample_weight = sample_weight
        self._set_constraints(Hk, Phi, rho, lam1, lam2)
        self.K = np.asarray(K, dtype=np.float64)
        self.E = None if E is None or np.size(E) == 0 else np.asarray(E, dtype=np.float64)
        self.R, self.jitter_ = cholesky_with_jitter(self.K, jitter=jitter)
        q = self.K.shape[0]
        # the fitted values are Fv v, v = R alpha: Fv = R^T (K alpha = R^T R alpha) or, with
        # landmarks, F R^{-1}
        self.F = None if F is None else np.asarray(F, dtype=np.float64)
        self.Fv = self.R.T if F is None else sla.solve_triangular(
            self.R, self.F.T, trans="T", lower=False).T
        Ht = self.Hk.transpose(1, 0, 2, 3).reshape(q, -1)
        self.GH = sla.solve_triangular(self.R, Ht, trans="T", lower=False)
        self._beta = None
        if self.E is not None:
            self._Epinv = np.linalg.pinv(self.E)
            self._E_rank = int(np.linalg.matrix_rank(self.E))

    # ---- smooth part -------------------------------------------------------------------
    def coupling(self, u, G):
        r"""(value, grad_u, grad_Gamma, v) of :math:`\|Ru - G_H\Gamma\|^2/(4\rho)`;
        grad_Gamma = H(alpha) with :math:`\alpha = R^{-1}v`, the Hessians of the primal
        point at the constraint points."""
        g = self.Fv.T @ u - self.GH @ G.reshape(-1)
        v = -g / (2.0 * self.rho)
        gG = (self.GH.T @ v).reshape(self.m, self.d, self.d)
        gG = 0.5 * (gG + gG.transpose(0, 2, 1))
        return float(g @ g) / (4.0 * self.rho), self.Fv @ (-v), gG, v

    def coupling_value(self, u, G):
        g = self.Fv.T @ u - self.GH @ G.reshape(-1)
        return float(g @ g) / (4.0 * self.rho)

    def lipschitz(self):
        """Largest eigenvalue of the coupling's Hessian: lambda_max(R R^T + G_H G_H^T) /
        (2 rho)."""
        M = self.Fv.T @ self.Fv + self.GH @ self.GH.T
        return float(np.linalg.eigvalsh(0.5 * (M + M.T))[-1]) / (2.0 * self.rho) * (1 + 1e-10)

    # ---- the conjugate and its prox (with E^T u = 0) -----------------------------------
    def conjugate_value(self, u):
        r""":math:`\sum_i u_i y_i + c_i\ell^*(u_i / c_i)` (inf outside the domain)."""
        return float(u @ self.y + self.c @ self.loss.conjugate(u / self.c))

    def _prox_free(self, W, eta):
        c = self.c
        return c * self.loss.prox_conjugate((W - eta * self.y) / c, eta / c)

    def prox(self, V, eta):
        r"""argmin over :math:`E^Tu = 0` of :math:`\eta\sum_i\phi_i^*(u_i) + \frac12\|u-V\|^2`.

        With a multiplier :math:`\mu` of :math:`E^Tu = 0` the minimizer is
        :math:`u(\mu) = \operatorname{prox}_{\eta\phi^*}(V - E\mu)` (separable); mu maximizes
        the concave dual :math:`\theta(\mu)` whose gradient is :math:`E^Tu(\mu)`, found by
        Newton's method with the generalized Jacobian of the (piecewise-linear) prox and a
        backtracking line search, then u is projected onto :math:`E^Tu = 0` within the
        prox's linear piece (exact up to rounding).
        """
        if self.E is None:
            return self._prox_free(V, eta)
        if self._E_rank >= self.n:  # E^T u = 0 forces u = 0
            return np.zeros(self.n)
        E = self.E
        mu = np.zeros(E.shape[1]) if self._mu is None or self._mu.shape[0] != E.shape[1] \
            else self._mu.copy()

        def theta(mu):
            u = self._prox_free(V - E @ mu, eta)
            val = (eta * self.conjugate_value(u) if eta > 0 else 0.0) \
                + 0.5 * float((u - V) @ (u - V)) + float(mu @ (E.T @ u))
            return val, u

        val, u = theta(mu)
        nE2 = float(np.linalg.norm(E, 2)) ** 2
        scale = np.sqrt(nE2) * (float(np.linalg.norm(V)) + 1e-300)
        for _ in range(60):
            g = E.T @ u
            if float(np.linalg.norm(g)) <= 1e-14 * scale:
                break
            h = 1e-7 * (1.0 + np.abs(V - E @ mu))
            J = np.clip((self._prox_free(V - E @ mu + h, eta) - u) / h, 0.0, 1.0)
            Hm = E.T @ (J[:, None] * E) + 1e-12 * nE2 * np.eye(E.shape[1])
            step = np.linalg.solve(Hm, g)
            t, accepted = 1.0, False
            for _ in range(20):  # damped Newton step
                val_n, u_n = theta(mu + t * step)
                if val_n >= val:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                # gradient step 1 / ||E||^2: theta is concave with a ||E||^2-Lipschitz
                # gradient (the prox is nonexpansive), so it never decreases theta
                step, t = g / nE2, 1.0
                val_n, u_n = theta(mu + step)
                if val_n < val:
                    break
            if val_n - val <= 1e-16 * abs(val) and t < 1.0:
                mu, val, u = mu + t * step, val_n, u_n
                break
            mu, val, u = mu + t * step, val_n, u_n
        self._mu = mu
        # polish: remove the remaining E^T u within the free coordinates (those strictly
        # inside the prox's linear piece), which keeps u in the domain
        g = E.T @ u
        if float(np.linalg.norm(g)) > 0:
            h = 1e-7 * (1.0 + np.abs(V - E @ mu))
            J = (self._prox_free(V - E @ mu + h, eta) - u) / h
            free = J > 0.5
            Ef = E[free]
            if Ef.shape[0] >= E.shape[1]:
                corr = Ef @ np.linalg.lstsq(Ef.T @ Ef, g, rcond=None)[0]
                un = u.copy()
                un[free] = u[free] - corr
                if np.isfinite(self.conjugate_value(un)):
                    u = un
        return u

    _mu = None

    # ---- primal pieces -----------------------------------------------------------------
    def data_term(self, z):
        """sum_i c_i l(z_i - y_i)."""
        return float(self.c @ self.loss.value(z - self.y))

    def best_offset(self, z0):
        """beta minimizing sum_i c_i l(z0_i + (E beta)_i - y_i) (None without E)."""
        if self.E is None:
            return np.zeros(0)
        if not self.loss.is_smooth:
            return self._offset_lp(z0)
        beta = (self._Epinv @ (self.y - z0)) if self._beta is None else self._beta.copy()
        self._beta = smooth_offset(self.loss, self.E, self.c, self.y, z0, beta)
        return self._beta

    def _offset_lp(self, z0):
        """The pinball-type (non-smooth, piecewise-linear) case: a linear program (HiGHS)."""
        E, c, n = self.E, self.c, self.n
        e = E.shape[1]
        # residual r = z0 + E beta - y = p - q, p, q >= 0; the loss is positively
        # homogeneous, l(r) = a p + b q
        one = np.array([1.0])
        a = self.loss.value(one)[0]
        b = self.loss.value(-one)[0]
        cost = np.concatenate([np.zeros(e), c * a, c * b])
        A_eq = np.hstack([E, -np.eye(n), np.eye(n)])
        b_eq = self.y - z0
        bounds = [(None, None)] * e + [(0, None)] * (2 * n)
        res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
        if res.status != 0:  # HiGHS on a feasible bounded LP: not expected
            return self._Epinv @ (self.y - z0)
        return res.x[:e]

    def primal_point(self, v):
        """(alpha, beta, z) at the primal point of the dual variable v = R alpha."""
        alpha = sla.solve_triangular(self.R, v, lower=False)
        Ka = self.Fv @ v
        beta = self.best_offset(Ka)
        z = Ka + (self.E @ beta if self.E is not None else 0.0)
        return alpha, beta, z

    def primal_value(self, v, z, B):
        return self.data_term(z) + self.rho * float(v @ v) + self._regularizer(B)

    def hessians(self, alpha):
        return np.einsum("jipq,i->jpq", self.Hk, alpha)

    def _values(self, alpha):
        """The kernel part's values at the training points: K alpha, or F alpha."""
        return (self.K if self.F is None else self.F) @ alpha

    def objective(self, alpha, beta, B):
        """The primal objective with the exact kernel matrix (constraints not checked)."""
        from psdsos.sos._isometric import quadratic_form

        f = self._values(alpha) + (self.E @ beta if self.E is not None else 0.0)
        return self.data_term(f) + self.rho * quadratic_form(self.K, alpha) + self._regularizer(B)

    def constraint_residual(self, alpha, B, floor=0.0):
        return self._relative_residual(self.hessians(alpha), B, floor)

    def dual_floors(self):
        """Floors of the relative gap and residual (as :func:`dual_floors` of eq. 28):
        1e-6 of the loss of the best constant (or zero) fit, and of the Hessian scale."""
        if self.E is not None:
            base = self.data_term(np.full(self.n, float(np.median(self.y))))
        else:
            base = self.data_term(np.zeros(self.n))
        base = max(base, np.finfo(float).eps * self.data_term(np.zeros(self.n)), 1e-300)
        hs = self._hessian_scale()
        return DUAL_FLOOR * base, DUAL_FLOOR * self.m * base * hs**2

    def initial_point(self, G0=None, alpha0=None, beta0=None):
        """A feasible (u, Gamma) from a previous fit: u the loss's gradient at its residuals,
        brought into the domain (prox with step 0), Gamma its dual variable."""
        if G0 is None:
            G = np.zeros((self.m, self.d, self.d))
        else:
            G = np.array(G0, dtype=np.float64).reshape(self.m, self.d, self.d)
        if alpha0 is None:
            u = np.zeros(self.n)
        else:
            z = self._values(alpha0) + (self.E @ beta0 if self.E is not None else 0.0)
            u = self.c * self.loss.grad(z - self.y)
        return self.prox(u, 0.0), G

    # ---- primal (CVXPY) and its certificate ------------------------------------------
    def cvxpy_problem(self):
        r"""The primal in RKHS-isometric coordinates (as :class:`ConvexRegressionProblem`),
        with the fitted values z = F u + Q b as a variable, so that the multipliers of
        that equality are the dual variable u of the module docstring; built once."""
        import cvxpy as cp

        from psdsos.sos._isometric import isometric_basis, orthonormal_design
        from psdsos.sos._primitive import SoSBlock

        if getattr(self, "_cvx", None) is None:
            n, d, m = self.n, self.d, self.m
            iu, ju = np.triu_indices(d)
            t = len(iu)
            q = self.K.shape[0]
            Hp = self.Hk[:, :, iu, ju].transpose(0, 2, 1).reshape(m * t, q)
            w, V = np.linalg.eigh(0.5 * (self.K + self.K.T))
            Vk, s = isometric_basis(V, np.maximum(w, 0.0), rtol=q * np.finfo(np.float64).eps)
            T = Vk / s
            F = Vk * s if self.F is None else self.F @ T
            Hu = Hp @ T
            block = SoSBlock(self.Phi, d, max_condition=None)
            uvar = cp.Variable(F.shape[1], name="u")
            z = cp.Variable(n, name="z")
            fit = F @ uvar
            Q, Te = orthonormal_design(self.E)
            b = None
            if Q is not None:
                b = cp.Variable(Q.shape[1], name="b")
                fit = fit + Q @ b
            fitc = z == fit
            obj = (self.c @ self.loss.cvxpy_expr(z - self.y) + self.rho * cp.sum_squares(uvar)
                   + block.regularizer(self.lam1, self.lam2))
            cons = block.constraints_packed(cp.reshape(Hu @ uvar, (m, t), order="C"))
            prob = cp.Problem(cp.Minimize(obj), [*cons, fitc])
            self._cvx = (prob, block.B, {"u": uvar, "b": b, "z": z, "coupling": cons[0],
                                         "fitc": fitc, "Te": Te, "F": F, "Hu": Hu, "Q": Q,
                                         "T": T, "s": s})
        return self._cvx

    def evaluate_primal(self, B, params):
        from psdsos.sos._isometric import coefficients

        alpha, beta = coefficients(params)
        return self.objective(alpha, beta, B), {"alpha": alpha, "beta": beta}

    def primal_residual(self, B, extras, floor=0.0):
        return self.constraint_residual(extras["alpha"], B, floor=floor)

    def dual_point(self, B, extras, params):
        """Gamma from the Hessian constraints' multipliers; u (kept for the certifier) from
        those of z = F u + Q b, brought into the domain with E^T u = 0 (prox with step 0);
        of the two signs conventions the one with the better bound is kept."""
        from psdsos.sos._isometric import coupling_dual

        G = coupling_dual(params, self.m, self.d)
        lam = params["fitc"].dual_value
        self._u_cert = None
        if G is None or lam is None:
            return G
        lam = np.asarray(lam, dtype=np.float64)
        best = None
        for cand in (lam, -lam):
            u = self.prox(cand, 0.0)
            if not np.isfinite(self.conjugate_value(u)):
                continue
            cert = _LossCertifier(self, u, params["F"], params["Hu"])
            val = cert.smooth(G)[0]
            if best is None or val < best[0]:
                best = (val, u)
        self._u_cert = None if best is None else best[1]
        return G

    def certifier(self):
        _, _, params = self.cvxpy_problem()
        return _LossCertifier(self, getattr(self, "_u_cert", None), params["F"], params["Hu"])

    def rounding_floor(self):
        from psdsos.problems._isometric_primal import rounding_floor_of_builder

        return rounding_floor_of_builder(self)

    def program_objective(self, B):
        _, _, params = self.cvxpy_problem()
        u = np.asarray(params["u"].value, dtype=np.float64)
        z = params["F"] @ u
        if params["b"] is not None:
            z = z + params["Q"] @ np.asarray(params["b"].value, dtype=np.float64)
        return self.data_term(z) + self.rho * float(u @ u) + self._regularizer(B)


    @staticmethod
    def is_squared(loss):
        return isinstance(loss, SquaredLoss)


class _LossCertifier:
    r"""The dual of the isometric program at a fixed u (from the solver's multipliers):
    ``smooth(Gamma)`` returns :math:`\sum_i\phi_i^*(u_i) + \|F^Tu - H_u^T(w\odot
    \operatorname{vech}\Gamma)\|^2/(4\rho)`, so that :func:`psdsos.solvers._primal.dual_value`
    adds the negative part and returns D(u, Gamma), a lower bound on the optimum for every
    u in the domain with E^T u = 0 (weak duality)."""

    def __init__(self, problem, u, F, Hu):
        self.Phi, self.d = problem.Phi, problem.d
        self.lam1, self.lam2, self.rho = problem.lam1, problem.lam2, problem.rho
        self.problem, self.u, self.F, self.Hu = problem, u, F, Hu
        iu, ju = np.triu_indices(self.d)
        self._iu, self._ju = iu, ju
        self._w = np.where(iu == ju, 1.0, 2.0)
        self.hessian_scale = 0.0

    def smooth(self, G):
        if self.u is None:  # the multipliers of the last solve (set by dual_point)
            self.u = getattr(self.problem, "_u_cert", None)
        if self.u is None:
            raise ValueError("no multipliers")
        g = self.Hu.T @ (np.asarray(G)[:, self._iu, self._ju] * self._w).ravel()
        h = self.F.T @ self.u - g
        return self.problem.conjugate_value(self.u) + float(h @ h) / (4 * self.rho), None
