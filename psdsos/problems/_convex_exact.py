r"""Convex regression with the exact Hessian representation (PSD paper, eq. 21, 37, Prop. 17).

The function is expanded on the representers of the point evaluations at the training
points **and** of the second derivatives at the constraint points (reproducing property of
derivatives, eq. 21):

.. math::

    f = E\beta + \sum_{i=1}^n \alpha_i k_{x_i}
      + \sum_{j=1}^m \sum_{p,q=1}^d \Gamma^{(j)}_{pq}\, \partial_{pq} k_{z_j},
    \qquad \partial^2_{pq} f(z) = \langle f, \partial_{pq} k_z \rangle_{\mathcal H},

so that the Hessian of f at z_j is a linear function of the coefficients through the Gram
matrix of the family :math:`\{k_{x_i}\} \cup \{\partial_{pq} k_{z_j}\}`, which holds kernel
values, second derivatives and the fourth-order mixed derivatives
:math:`\langle \partial_{pq} k_{z_j}, \partial_{rs} k_{z_l}\rangle = \partial^4 k(z_j, z_l) /
\partial z_p \partial z_q \partial z'_r \partial z'_s`.  By the representer theorem the
solution of eq. (37) lies in that span (Proposition 17 gives it explicitly), so the finite
problem solved here is eq. (37) itself, not an approximation of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla

from psdsos.kernels import Kernel
from psdsos.problems._convex import dual_floors
from psdsos.problems._convex_base import _ConvexRegressionBase
from psdsos.problems._isometric_primal import _IsometricPrimal
from psdsos.sos._compress import row_scales
from psdsos.sos._isometric import (
    _set_weights,
    coefficients,
    convex_regression_cvxpy,
    isometric_basis,
    quadratic_form,
)

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = [
    "ConvexRegressionExactProblem",
    "exact_value",
    "exact_gradient",
    "exact_hessian",
]

#: Largest number of float64 entries of a derivative tensor built at once when evaluating.
_CHUNK_ENTRIES = 4_000_000


def _chunks(n_rows, per_row):
    step = max(1, _CHUNK_ENTRIES // max(int(per_row), 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _check_coefs(X_fit, Z, alpha, gamma):
    alpha = np.asarray(alpha, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    n, p = X_fit.shape
    if alpha.shape != (n,):
        raise ValueError(f"alpha must have shape ({n},), got {alpha.shape}")
    if gamma.shape != (Z.shape[0], p, p):
        raise ValueError(f"gamma must have shape ({Z.shape[0]}, {p}, {p}), got {gamma.shape}")
    return alpha, 0.5 * (gamma + gamma.transpose(0, 2, 1))


def exact_value(kernel: Kernel, X_fit: np.ndarray, Z: np.ndarray, alpha: np.ndarray,
                gamma: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Values of the RKHS part of an exact-representation function (eq. 21).

    .. math::

        f(x) = \sum_i \alpha_i k(x, x_i)
          + \sum_j \sum_{p,q} \Gamma^{(j)}_{pq}\,
            \frac{\partial^2 k(z, x)}{\partial z_p \partial z_q}\Big|_{z = z_j}.

    Parameters
    ----------
    kernel : Kernel
        Four times differentiable (Gaussian, Matern 5/2).
    X_fit : ndarray (n, d)
        Points x_i of the value representers.
    Z : ndarray (m, d)
        Points z_j of the second-derivative representers.
    alpha : ndarray (n,)
    gamma : ndarray (m, d, d)
        Symmetric coefficient matrices :math:`\Gamma^{(j)}`.
    X : ndarray (s, d)
        Evaluation points.

    Returns
    -------
    ndarray (s,)
    """
    alpha, gamma = _check_coefs(X_fit, Z, alpha, gamma)
    X = np.asarray(X, dtype=np.float64)
    out = kernel(X, X_fit) @ alpha
    d = X.shape[1]
    for sl in _chunks(X.shape[0], Z.shape[0] * d * d):
        out[sl] += np.einsum("jlpq,jpq->l", kernel.hessian(Z, X[sl]), gamma)
    return out


def exact_gradient(kernel: Kernel, X_fit: np.ndarray, Z: np.ndarray, alpha: np.ndarray,
                   gamma: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Gradients of the RKHS part of an exact-representation function, shape (s, d).

    .. math::

        \nabla f(x) = \sum_i \alpha_i \nabla_x k(x, x_i)
          + \sum_j \sum_{p,q} \Gamma^{(j)}_{pq}\,
            \nabla_x \frac{\partial^2 k(z, x)}{\partial z_p \partial z_q}\Big|_{z = z_j}

    (third-order kernel derivatives, :meth:`psdsos.kernels.Kernel.hessian_gradient`).
    Parameters as in :func:`exact_value`.
    """
    alpha, gamma = _check_coefs(X_fit, Z, alpha, gamma)
    X = np.asarray(X, dtype=np.float64)
    out = np.einsum("lir,i->lr", kernel.gradient(X, X_fit), alpha)
    d = X.shape[1]
    for sl in _chunks(X.shape[0], Z.shape[0] * d**3):
        out[sl] += np.einsum("jlpqr,jpq->lr", kernel.hessian_gradient(Z, X[sl]), gamma)
    return out


def exact_hessian(kernel: Kernel, X_fit: np.ndarray, Z: np.ndarray, alpha: np.ndarray,
                  gamma: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Hessians of the RKHS part of an exact-representation function, shape (s, d, d).

    .. math::

        \nabla^2 f(x)_{rs} = \sum_i \alpha_i \partial^2_{rs} k(x, x_i)
          + \sum_j \sum_{p,q} \Gamma^{(j)}_{pq}\,
            \frac{\partial^4 k(z, x)}{\partial z_p \partial z_q \partial x_r \partial x_s}
            \Big|_{z = z_j}

    (fourth-order kernel derivatives, :meth:`psdsos.kernels.Kernel.hessian_hessian`).
    At x = z_j this is the left-hand side of the constraint of eq. (37).
    Parameters as in :func:`exact_value`.
    """
    alpha, gamma = _check_coefs(X_fit, Z, alpha, gamma)
    X = np.asarray(X, dtype=np.float64)
    out = kernel.hessian_sum(X, X_fit, alpha)
    d = X.shape[1]
    for sl in _chunks(X.shape[0], Z.shape[0] * d**4):
        out[sl] += np.einsum("jlpqrs,jpq->lrs", kernel.hessian_hessian(Z, X[sl]), gamma)
    return 0.5 * (out + out.transpose(0, 2, 1))


class ConvexRegressionExactProblem(_IsometricPrimal, _ConvexRegressionBase):
    r"""Convex regression with the exact Hessian representation (PSD paper, eq. 37).

    .. math::

        \min_{f \in \mathcal H,\ \beta,\ \mathbf B \succeq 0}\
          \frac1n\sum_{i=1}^n (y_i - (E\beta)_i - f(x_i))^2 + \rho\|f\|_{\mathcal H}^2
          + \lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad
          \sum_{p,q}\langle f, \partial_{pq}k_{z_j}\rangle e_p e_q^T
          = \Psi_j^T\mathbf B\Psi_j,\ j\in[m],

    with E the unpenalized design (e.g. ``[1, X]``, whose Hessian is 0; ``None`` gives
    eq. 37 exactly).  By the representer theorem (Proposition 17) the solution is
    :math:`f = \sum_i \alpha_i k_{x_i} + \sum_j\sum_{p,q}\Gamma^{(j)}_{pq}\partial_{pq}k_{z_j}`.

    **Finite form.**  Let :math:`t = d(d+1)/2` and use the N = n + m t functions
    :math:`b = (k_{x_1}, \dots, k_{x_n}, \partial_{p_kq_k}k_{z_j})` (p_k <= q_k; the
    p > q ones are duplicates) with Gram matrix

    .. math::

        \mathbf G = \begin{pmatrix} \mathbf K & \mathbf C \\ \mathbf C^T & \mathbf D
        \end{pmatrix}, \quad
        \mathbf C_{i,(j,k)} = \partial^2_{p_kq_k} k(z_j, x_i), \quad
        \mathbf D_{(j,k),(l,k')} = \frac{\partial^4 k(z_j, z_l)}
          {\partial z_{p_k}\partial z_{q_k}\partial z'_{p_{k'}}\partial z'_{q_{k'}}}.

    With :math:`f = \sum_b \theta_b b`: :math:`f(X) = \mathbf G_{X}\theta` (first n rows of
    G), the packed Hessians at the z_j are :math:`\mathbf G_Z\theta` (last m t rows) and
    :math:`\|f\|^2 = \theta^T\mathbf G\theta`.  The primal (:meth:`cvxpy_problem`) is a
    QP + SDP, solved in the RKHS-isometric coordinates u of the eigendecomposition of G
    (:math:`\theta = V_k\operatorname{diag}(w_k^{-1/2})u`, :math:`\|f\|^2 = \|u\|^2`),
    so that the solver sees bounded data whatever the conditioning of G.  The objective is
    always evaluated with the exact G (:meth:`objective`).  ``R`` (with
    :math:`\mathbf R^T\mathbf R = \mathbf G + \varepsilon I`, adaptive jitter
    ``jitter_``) is kept for callers that need a factor of G.

    **Dual** (Proposition 17, on :func:`psdsos.solvers.solve_dual`).  For a symmetric
    :math:`\Gamma = (\Gamma^{(j)})` put :math:`h_\Gamma = \sum_j\sum_{pq}\Gamma^{(j)}_{pq}
    \partial_{pq}k_{z_j}` and P the projection onto range(E)^perp.  Minimizing the
    Lagrangian over f and beta gives

    .. math::

        f_\Gamma = \sum_i a_i k_{x_i} + \frac{1}{2\rho} h_\Gamma,\quad
        a = U(n\rho I + U^T\mathbf K U)^{-1}U^T\big(y - \tfrac{1}{2\rho}h_\Gamma(X)\big),

    (U an orthonormal basis of range(E)^perp; with E empty this is Proposition 17's
    :math:`\alpha + \delta/2` with W = (K/n + rho I)^{-1}) and

    .. math::

        q(\Gamma) = -\frac1n\|Py\|^2 + \frac1n (Py)^T f_\Gamma(X)
          + \frac12\langle f_\Gamma, h_\Gamma\rangle_{\mathcal H},
        \qquad \nabla q(\Gamma) = \big(\nabla^2 f_\Gamma(z_j)\big)_{j},

    a convex quadratic (not strongly convex) whose Hessian in the packed coefficients
    :math:`c = w\odot\Gamma_{\text{packed}}` (w = 1 on diagonals, 2 off) is
    :math:`(\mathbf D - \mathbf C^T U (n\rho I + U^T\mathbf KU)^{-1}U^T\mathbf C)/(2\rho)`.
    The dual solved is :math:`\min_\Gamma q(\Gamma) + \frac{1}{2\lambda_2}
    \|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2` (the exact Gram, no jitter).

    Parameters
    ----------
    kernel : Kernel
        Four times differentiable (Gaussian or Matern 5/2).
    X : ndarray (n, d)
        Training inputs.
    Z : ndarray (m, d)
        Constraint points z_j.
    Phi : ndarray (m, r)
        SoS features of the constraint points (:math:`\Psi_j = \phi_j \otimes I_d`).
    y : ndarray (n,)
    E : ndarray (n, e) or None
        Unpenalized design.
    rho, lam1, lam2 : float
        Ridge on f, trace and Frobenius weights on B (eq. 37).
    jitter : "auto" or float
        Passed to :func:`psdsos.features.cholesky_with_jitter` for G.

    Attributes
    ----------
    G : ndarray (N, N)
        The Gram matrix above.
    R : ndarray (N, N)
        Its jittered upper Cholesky factor; ``jitter_`` the jitter.

    Notes
    -----
    Cost: forming D takes O(m^2 d^4) kernel derivatives (memory 8 m^2 d^4 bytes), the
    Cholesky of G O((n + m t)^3); the SDP has n + m t + e scalar variables and an
    r d x r d PSD block.  Compared to the approximate representation (eq. 28, n
    coefficients) the primal grows by m t coefficients and the Gram matrix by fourth-order
    derivatives (section 5.2.2).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import GaussianKernel
    >>> from psdsos.features import ExactFeatures
    >>> from psdsos.solvers import solve_primal
    >>> from psdsos.problems import ConvexRegressionExactProblem
    >>> X = np.linspace(-1, 1, 8)[:, None]; y = X[:, 0] ** 2
    >>> k = GaussianKernel(0.5)
    >>> Phi = ExactFeatures(k).fit(X).transform(X)
    >>> prob = ConvexRegressionExactProblem(k, X, X, Phi, y, None, 1e-4, 0.0, 1e-3)
    >>> res = solve_primal(prob, solver="CLARABEL", tol=1e-9)
    >>> bool(prob.constraint_residual(res.extras["alpha"], res.extras["gamma"], res.B) < 1e-6)
    True
    """

    _DUAL_NEEDS_RHO = "the dual of the exact representation (Proposition 17 divides by rho)"

    def __init__(self, kernel: Kernel, X: np.ndarray, Z: np.ndarray, Phi: np.ndarray,
                 y: np.ndarray, E: np.ndarray | None, rho: float, lam1: float, lam2: float, *,
                 jitter: str | float = "auto", sample_weight: np.ndarray | None = None) -> None:
        from psdsos.features import cholesky_with_jitter

        if getattr(kernel, "differentiability", 0) < 4:
            raise ValueError(
                f"kernel {getattr(kernel, 'name', kernel)!r} is not four times differentiable; "
                "the exact representation (eq. 37) needs fourth-order kernel derivatives: "
                "use a Gaussian or Matern 5/2 kernel"
            )
        self.kernel = kernel
        self.X = np.asarray(X, dtype=np.float64)
        self.Z = np.asarray(Z, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.Phi = np.asarray(Phi, dtype=np.float64)
        if self.X.ndim != 2 or self.Z.ndim != 2 or self.X.shape[1] != self.Z.shape[1]:
            raise ValueError(
                f"X and Z must be 2-D with the same number of columns, got X {self.X.shape} "
                f"and Z {self.Z.shape}"
            )
        n, d = self.X.shape
        m = self.Z.shape[0]
        if self.y.shape != (n,):
            raise ValueError(f"y must have shape ({n},), got {self.y.shape}")
        if self.Phi.ndim != 2 or self.Phi.shape[0] != m:
            raise ValueError(f"Phi must have shape ({m}, r), got {self.Phi.shape}")
        self.n, self.d, self.m = n, d, m
        self.sw = row_scales(sample_weight, n)
        self.y_w = self.y if self.sw is None else self.sw * self.y
        self.E = None if E is None or np.size(E) == 0 else np.asarray(E, dtype=np.float64)
        if self.E is not None and self.E.shape[0] != n:
            raise ValueError(f"E must have {n} rows, got shape {self.E.shape}")
        self.rho, self.lam1, self.lam2 = float(rho), float(lam1), float(lam2)
        self.iu, self.ju = np.triu_indices(d)
        t = len(self.iu)
        self.t = t
        self.w = np.where(self.iu == self.ju, 1.0, 2.0)  # packed weights of Frobenius <.,.>
        K = kernel(self.X, self.X)
        C = kernel.hessian(self.Z, self.X)[:, :, self.iu, self.ju]  # (m, n, t)
        C = C.transpose(1, 0, 2).reshape(n, m * t)
        D4 = kernel.hessian_hessian(self.Z, self.Z)[:, :, self.iu, self.ju]  # (m, m, t, d, d)
        D = D4[..., self.iu, self.ju].transpose(0, 2, 1, 3).reshape(m * t, m * t)
        G = np.block([[K, C], [C.T, D]])
        self.K, self.C, self.D = K, C, 0.5 * (D + D.T)
        self.G = 0.5 * (G + G.T)
        self.R, self.jitter_ = cholesky_with_jitter(self.G, jitter=jitter, name="G")
        self._cvx: Any = None
        self._dual_ready = False
        self._last = (None, None)

    # ---- coefficient bookkeeping ----------------------------------------------------------
    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(alpha (n,), gamma (m, d, d) symmetric) from theta = (alpha, packed coefficients)."""
        theta = np.asarray(theta, dtype=np.float64)
        n, m, d = self.n, self.m, self.d
        c = theta[n:].reshape(m, self.t) / self.w
        gamma = np.zeros((m, d, d))
        gamma[:, self.iu, self.ju] = c
        gamma[:, self.ju, self.iu] = c
        return theta[:n].copy(), gamma

    def join(self, alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """theta = (alpha, w * packed gamma), the inverse of :meth:`split`."""
        gamma = np.asarray(gamma, dtype=np.float64)
        gamma = 0.5 * (gamma + gamma.transpose(0, 2, 1))
        c = gamma[:, self.iu, self.ju] * self.w
        return np.concatenate([np.asarray(alpha, dtype=np.float64), c.ravel()])

    def _unpack(self, packed):
        """(m, t) or (m t,) packed symmetric matrices -> (m, d, d)."""
        packed = np.asarray(packed).reshape(self.m, self.t)
        H = np.zeros((self.m, self.d, self.d))
        H[:, self.iu, self.ju] = packed
        H[:, self.ju, self.iu] = packed
        return H

    def _affine(self, fX):
        if self.E is None:
            return np.zeros(0)
        return np.linalg.lstsq(self._rows(self.E), self._rows(self.y - fX), rcond=None)[0]

    # ---- primal ---------------------------------------------------------------------------
    def values(self, alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """f(x_i) of the RKHS part at the training points, (n,)."""
        return self.G[: self.n] @ self.join(alpha, gamma)

    def hessians(self, alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """Hessians of f at the constraint points, (m, d, d): the left side of eq. (37)."""
        return self._unpack(self.G[self.n:] @ self.join(alpha, gamma))

    def _spectral(self) -> tuple[np.ndarray, np.ndarray]:
        """(V, w): G = V diag(w) V^T, w clipped at 0 (cached)."""
        if getattr(self, "_eig", None) is None:
            w, V = np.linalg.eigh(self.G)
            self._eig = (V, np.maximum(w, 0.0))
        return self._eig

    def rkhs_norm_sq(self, alpha: np.ndarray, gamma: np.ndarray) -> float:
        r""":math:`\|f\|^2 = \theta^T\mathbf G\theta` with the exact Gram matrix (no jitter),
        in extended precision (``quadratic_form``)."""
        return quadratic_form(self.G, self.join(alpha, gamma))

    def objective(self, alpha: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                  B: np.ndarray) -> float:
        """Primal objective of eq. (37) (constraints not checked: see constraint_residual)."""
        f = self.values(alpha, gamma)
        if self.E is not None:
            f = f + self.E @ np.asarray(beta, dtype=np.float64)
        r = self._rows(self.y - f)
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.sum(B * B))
        return float(r @ r) / self.n + self.rho * self.rkhs_norm_sq(alpha, gamma) + reg

    def constraint_residual(self, alpha: np.ndarray, gamma: np.ndarray, B: np.ndarray,
                            floor: float = 0.0) -> float:
        """Relative violation ||H(f) - A(B)||_F / max(||H(f)||_F, ||A(B)||_F, floor) of
        eq. (37)."""
        return self._relative_residual(self.hessians(alpha, gamma), B, floor)

    def evaluate_primal(self, B: np.ndarray,
                        params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Objective (numpy) and the coefficients (alpha, gamma, beta) after a CVXPY solve."""
        theta, beta = coefficients(params)
        alpha, gamma = self.split(theta)
        return self.objective(alpha, gamma, beta, B), {"alpha": alpha, "gamma": gamma,
                                                        "beta": beta}

    def primal_residual(self, B: np.ndarray, extras: dict[str, Any], floor: float = 0.0) -> float:
        """Relative Hessian-constraint residual at a primal point (see constraint_residual),
        the denominator floored at ``floor``."""
        return self.constraint_residual(extras["alpha"], extras["gamma"], B, floor=floor)

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        r"""Primal QP + SDP of eq. (37) through the SoS primitive, built once.

        In the RKHS-isometric coordinates of the shared builder (``convex_regression_cvxpy``):
        with :math:`\mathbf G = V\operatorname{diag}(w)V^T` (numerically significant
        eigenpairs), :math:`\theta = V_k\operatorname{diag}(w_k^{-1/2})u`, the values at the
        training points are the first n rows of :math:`V_k\operatorname{diag}(w_k^{1/2})u`,
        the packed Hessians the last m t rows, and :math:`\|f\|^2 = \|u\|^2`.

        Returns
        -------
        problem : cvxpy.Problem
            DPP in its Parameters ``"rho"``, ``"lam1"``, ``"lam2"``.
        B : cvxpy.Variable
        params : dict
            The Parameters, the variables ``"u"`` and ``"b"`` (None without E), the Hessian
            equality constraint ``"coupling"`` and the maps back ``"T"`` (theta = T u:
            alpha then the packed coefficients w * Gamma_j[p <= q]) and ``"Te"``.
        """
        if self._cvx is None:
            n = self.n
            Vk, s = isometric_basis(*self._spectral(), rtol=np.finfo(np.float64).eps ** 2)
            L = Vk * s
            self._cvx = convex_regression_cvxpy(
                self.Phi, self.d, self.y_w, self._rows(L[:n]), L[n:],
                None if self.E is None else self._rows(self.E))
            self._cvx[2]["T"] = Vk / s
            self._cvx[2]["s"] = s
        return _set_weights(self._cvx, self.rho, self.lam1, self.lam2)

    # ---- dual (Proposition 17) -------------------------------------------------------------
    def _factor_dual(self):
        n = self.n
        if self.E is None:
            U = np.eye(n)
        else:
            # orthonormal basis of range(S E)^perp from a complete QR
            SE = self._rows(self.E)
            Qfull = np.linalg.qr(SE, mode="complete")[0]
            rank = np.linalg.matrix_rank(SE)
            U = Qfull[:, rank:]
        # with weights the data term is ||U^T S (y - f(X))||^2 / n: U becomes S U (= U
        # without weights, where U^T r and U U^T r have the same norm)
        U = self._rows(U)
        self.U = U
        M = n * self.rho * np.eye(U.shape[1]) + U.T @ self.K @ U
        self.M_chol = sla.cho_factor(0.5 * (M + M.T), lower=True)
        self.Uy = U.T @ self.y
        self.yP2 = float(self.Uy @ self.Uy) / n

    def _point(self, G):
        """(c, a, fX, Hpacked) at the dual point G, cached for the last G."""
        if self._last[0] is G:
            return self._last[1]
        c = (np.asarray(G)[:, self.iu, self.ju] * self.w).ravel()
        hX = self.C @ c
        a = self.U @ sla.cho_solve(self.M_chol, self.U.T @ (self.y - hX / (2 * self.rho)))
        fX = self.K @ a + hX / (2 * self.rho)
        Hp = self.C.T @ a + self.D @ c / (2 * self.rho)
        out = (c, a, hX, fX, Hp)
        self._last = (G, out)
        return out

    def _q(self, c, a, hX, fX):
        fh = float(a @ hX) + float(c @ (self.D @ c)) / (2 * self.rho)  # <f_G, h_G>
        return -self.yP2 + float(self.Uy @ (self.U.T @ fX)) / self.n + 0.5 * fh

    def dual_floors(self) -> tuple[float, float]:
        """Absolute floors of the solver's relative gap and residual
        (:func:`psdsos.problems._convex.dual_floors`)."""
        H0 = self.kernel.hessian(self.Z[:1], self.Z[:1])[0, 0]
        return dual_floors(self.y, self.E, float(np.linalg.norm(H0)), self.m)

    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """q(G) and its gradient, the Hessians of f_G at the constraint points (m, d, d)."""
        self._prepare_dual()
        c, a, hX, fX, Hp = self._point(G)
        return self._q(c, a, hX, fX), self._unpack(Hp)

    def smooth_value(self, G: np.ndarray) -> float:
        """q(G) alone."""
        self._prepare_dual()
        c = (np.asarray(G)[:, self.iu, self.ju] * self.w).ravel()
        hX = self.C @ c
        a = self.U @ sla.cho_solve(self.M_chol, self.U.T @ (self.y - hX / (2 * self.rho)))
        fX = self.K @ a + hX / (2 * self.rho)
        return self._q(c, a, hX, fX)

    def smooth_lipschitz(self) -> float:
        """lambda_max of the Hessian of q in the Frobenius geometry of Sym(R^d)^m."""
        self._prepare_dual()
        Q = self._packed_hessian()
        sw = np.tile(np.sqrt(self.w), self.m)
        Q = sw[:, None] * Q * sw[None, :]
        return float(np.linalg.eigvalsh(0.5 * (Q + Q.T))[-1]) * (1 + 1e-10) + 1e-300

    def strong_convexity(self) -> float:
        """0: q is not strongly convex in general."""
        return 0.0

    def _packed_hessian(self):
        UC = self.U.T @ self.C
        L = np.linalg.cholesky(sla.cho_solve(self.M_chol, np.eye(UC.shape[0])))
        S = L.T @ UC  # C^T U M^{-1} U^T C = S^T S
        Q = (self.D - S.T @ S) / (2 * self.rho)
        return 0.5 * (Q + Q.T)

    def smooth_hessian_factor(self) -> np.ndarray:
        """U with grad^2 q = U U^T on vec(Gamma) (symmetric directions), for the
        dual preconditioner: from the eigendecomposition of the packed Hessian, mapped
        through c = w * vech(Gamma)."""
        self._prepare_dual()
        lam, V = np.linalg.eigh(self._packed_hessian())
        keep = lam > 1e-12 * max(lam[-1], 1e-300)
        F = (V[:, keep] * np.sqrt(lam[keep])).reshape(self.m, len(self.iu), -1)
        d = self.d
        Uf = np.zeros((self.m, d, d, F.shape[2]))
        for idx, (a, b) in enumerate(zip(self.iu, self.ju, strict=True)):
            Uf[:, a, b] = F[:, idx]
            Uf[:, b, a] = F[:, idx]
        return Uf.reshape(self.m * d * d, -1)

    def recover(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Primal (alpha, gamma, beta) from a dual point G (Proposition 17)."""
        self._prepare_dual()
        c, a, hX, fX, _ = self._point(G)
        alpha, gamma = self.split(np.concatenate([a, c / (2 * self.rho)]))
        return alpha, gamma, self._affine(fX)

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        """Objective of eq. (37) at (f_G, beta(f_G), B), with the exact Gram matrix."""
        self._prepare_dual()
        c, a, hX, fX, _ = self._point(G)
        r = self.Uy - self.U.T @ fX
        norm2 = (float(a @ self.K @ a) + float(a @ hX) / self.rho
                 + float(c @ (self.D @ c)) / (4 * self.rho**2))
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.sum(B * B))
        return float(r @ r) / self.n + self.rho * norm2 + reg
