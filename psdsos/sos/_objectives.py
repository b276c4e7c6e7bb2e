r"""Objectives of kernel SoS problems, independent of how they are solved.

Each problem object offers what the solvers ask for:

* the dual pieces used by :func:`psdsos.solvers.solve_dual` (``Phi``, ``d``, ``lam1``,
  ``lam2``, ``smooth``, ``smooth_value``, ``smooth_lipschitz``, ``strong_convexity``,
  ``primal_objective``);
* ``cvxpy_problem()`` for :func:`psdsos.solvers.solve_primal`, built once with
  ``cp.Parameter`` for the quantities that change between re-solves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import cvxpy as cp
import numpy as np

from psdsos.kernels import Kernel
from psdsos.sos._maps import sos_evaluate
from psdsos.sos._primitive import SoSBlock

__all__ = ["PSDLeastSquares", "ConvexRegressionProblem", "ConvexRegressionNystromProblem"]


class _IsometricPrimal:
    """The certificate hooks shared by both convex-regression problems, whose primal is
    built by :func:`convex_regression_cvxpy` (``solve_primal`` calls them)."""

    if TYPE_CHECKING:  # provided by the problems
        m: int
        d: int
        rho: float
        lam1: float
        lam2: float

        def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]: ...

    def dual_point(self, B: np.ndarray, extras: dict[str, Any],
                   params: dict[str, Any]) -> np.ndarray:
        """Gamma from the multipliers CVXPY returns for the Hessian constraints."""
        return coupling_dual(params, self.m, self.d)

    def certifier(self) -> IsometricDual:
        """The dual certifying a primal answer (:func:`certifier_of_builder`)."""
        return certifier_of_builder(self)

    def rounding_floor(self) -> float:
        """See :func:`rounding_floor_of_builder`."""
        return rounding_floor_of_builder(self)

    def program_objective(self, B: np.ndarray) -> float:
        """See :func:`program_objective_of_builder`."""
        return program_objective_of_builder(self, B)

    def wide_certifier(self) -> IsometricDual | None:
        """:class:`IsometricDual` over every direction of the kernel matrix down to
        eigenvalues eps^2 w_max, or None when the program already keeps them all.

        The program keeps the directions above the rounding level of K (n eps w_max); a
        function along a dropped direction has tiny values at the data but Hessians of the
        size of its RKHS norm, so it may lower eq. (28).  The dual of the wider program is
        a lower bound on its optimum: a primal answer far above it is not certified for
        eq. (28), whatever the program's own gap."""
        _, _, params = self.cvxpy_problem()
        if "F_wide" not in params:
            return None
        key = (self.rho, self.lam1, self.lam2)
        cached = getattr(self, "_wide_certifier", None)
        if cached is None or cached[0] != key:
            cached = (key, IsometricDual(self, params["F_wide"], params["Hu_wide"],
                                         params["Q"]))
            self._wide_certifier = cached
        return cached[1]


class _PSDPrimal:
    """The primal hooks shared by the PSD-valued regression problems (eq. 9 and 11): the
    objective from the data term ``_data_term(F_B)`` plus the regularizer, and no
    constraint besides B PSD."""

    if TYPE_CHECKING:  # provided by the problems
        Phi: np.ndarray
        d: int
        lam1: float
        lam2: float

        def _data_term(self, FB: np.ndarray) -> float: ...

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        return self.objective(B, FB)

    def objective(self, B: np.ndarray, FB: np.ndarray | None = None) -> float:
        """J(B); pass FB = A(B) if already computed."""
        if FB is None:
            FB = sos_evaluate(self.Phi, B, self.d)
        fit = self._data_term(FB)
        return fit + self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))

    def evaluate_primal(self, B: np.ndarray,
                        params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Objective (numpy) and extra primal variables after a CVXPY solve."""
        return self.objective(B), {}

    def primal_residual(self, B: np.ndarray, extras: dict[str, Any], floor: float = 0.0) -> float:
        """0: the primal has no equality constraint besides B PSD."""
        return 0.0


class PSDLeastSquares(_PSDPrimal):
    r"""PSD-valued least squares, PSD paper eq. (11).

    .. math::

        J(\mathbf B) = \frac{1}{2n}\sum_{i=1}^n \|\Psi_i^T\mathbf B\Psi_i - \mathbf M_i\|_F^2
          + \lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2,
        \qquad \mathbf B \succeq 0 .

    Its dual (Theorem 3 with :math:`L(Z) = \frac{1}{2n}\sum\|Z_i - M_i\|^2`, hence
    :math:`L^*(\Gamma) = \sum\langle\Gamma_i, M_i\rangle + \frac n2\|\Gamma_i\|^2`) is

    .. math::

        \min_\Gamma\ D(\Gamma) = \sum_i \langle\Gamma_i, \mathbf M_i\rangle
          + \frac n2 \sum_i\|\Gamma_i\|_F^2
          + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2,
        \qquad J^\star = -\min_\Gamma D(\Gamma),

    the smooth part q is n-strongly convex with n-Lipschitz gradient, and at the optimum
    :math:`\Gamma_i = (F_{\mathbf B}(x_i) - \mathbf M_i)/n` (eq. 12 up to the factor
    convention; see docs/psd-regression-math.md for the derivation).

    Parameters
    ----------
    Phi : ndarray (n, r)
        Features of the training points.
    M : ndarray (n, d, d)
        Symmetric targets.
    lam1, lam2 : float
    """

    def __init__(self, Phi: np.ndarray, M: np.ndarray, lam1: float, lam2: float) -> None:
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.M = np.asarray(M, dtype=np.float64)
        self.n, self.d = self.M.shape[0], self.M.shape[1]
        self.lam1 = float(lam1)
        self.lam2 = float(lam2)
        self._cvx: Any = None

    # ---- dual pieces -------------------------------------------------------------------
    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        """q(G) = <G, M> + n/2 ||G||^2 and its gradient M + n G."""
        return self.smooth_value(G), self.M + self.n * G

    def smooth_value(self, G: np.ndarray) -> float:
        return float(np.vdot(G, self.M) + 0.5 * self.n * np.vdot(G, G))

    def smooth_lipschitz(self) -> float:
        return float(self.n)

    def strong_convexity(self) -> float:
        return float(self.n)

    # ---- primal ------------------------------------------------------------------------
    def _data_term(self, FB):
        R = FB - self.M
        return 0.5 / self.n * float(np.vdot(R, R))

    def dual_point(self, B: np.ndarray, extras: dict[str, Any],
                   params: dict[str, Any]) -> np.ndarray:
        r"""The dual variable of eq. (12) at a primal point: :math:`\Gamma_i =
        (F_{\mathbf B}(x_i) - \mathbf M_i)/n`, optimal when B is (Theorem 3)."""
        return (sos_evaluate(self.Phi, B, self.d) - self.M) / self.n

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        """The primal SDP, built once (Parameters: lam1, lam2, and the targets M).

        Returns
        -------
        problem : cvxpy.Problem
        B : cvxpy.Variable
        params : dict of cvxpy.Parameter ("lam1", "lam2", "M")
        """
        if self._cvx is None:
            d = self.d
            # certified by solve_primal: no conditioning refusal
            block = SoSBlock(self.Phi, d, max_condition=None)
            iu, ju = np.triu_indices(d)
            w = np.where(iu == ju, 1.0, np.sqrt(2.0))  # ||X||_F^2 from the upper triangle
            Mp = cp.Parameter((self.n, len(iu)), name="M_packed")
            lam1 = cp.Parameter(nonneg=True, name="lam1")
            lam2 = cp.Parameter(nonneg=True, name="lam2")
            resid = cp.multiply(block.packed - Mp, np.broadcast_to(w, (self.n, len(iu))))
            obj = 0.5 / self.n * cp.sum_squares(resid) + block.regularizer(lam1, lam2)
            prob = cp.Problem(cp.Minimize(obj))
            self._cvx = (prob, block.B, {"lam1": lam1, "lam2": lam2, "M": Mp})
        prob, B, params = self._cvx
        iu, ju = np.triu_indices(self.d)
        params["M"].value = self.M[:, iu, ju]
        params["lam1"].value = self.lam1
        params["lam2"].value = self.lam2
        return prob, B, params


#: Fraction of the data's objective and Hessian scales below which the dual solver's
#: relative gap and residual are measured against those scales instead (dual_floors).
DUAL_FLOOR = 1e-6


def dual_floors(y, E, hess_scale, m):
    r"""Absolute floors of the relative duality gap and residual of convex regression.

    The dual solver measures the gap relative to :math:`\max(|P|, |D|)` and the Hessian
    residual relative to :math:`\max(\|\nabla q\|, \|\mathcal A(\mathbf B)\|)`; both
    are 0 at an optimum :math:`\alpha = 0, \mathbf B = 0` (a target that the affine part
    fits exactly), where the ratios are rounding over rounding.  The floors are the data's
    own scales:

    * objective: :math:`s_y = \|y - \bar y\|^2 / n` (the objective of the constant fit;
      :math:`\|y\|^2/n` without the affine part E), at least machine epsilon times
      :math:`\|y\|^2/n`;
    * Hessians (squared Frobenius norm over the m points): :math:`m\, s_y\, h^2`, h the
      largest Frobenius norm of a kernel Hessian (the Hessian of f = s_y^{1/2} k(., z_j)
      at z_j),

    each times ``DUAL_FLOOR`` = 1e-6: the certificates are unchanged unless the optimal
    objective (or fitted Hessians) are below 1e-6 (1e-3) of those scales.

    Returns
    -------
    obj_floor, res_floor_sq : float
    """
    y = np.asarray(y, dtype=np.float64)
    yc = y - y.mean() if E is not None else y
    return floors_from_moments(float(yc @ yc), float(y @ y), y.shape[0], hess_scale, m)


def floors_from_moments(css, ss, n, hess_scale, m):
    """:func:`dual_floors` from the sums of squares of the (centred, with E) targets, css,
    and of the targets, ss, over n samples."""
    s = max(css / n, np.finfo(float).eps * ss / n)
    return DUAL_FLOOR * s, DUAL_FLOOR * m * s * float(hess_scale) ** 2


class ConvexRegressionProblem(_IsometricPrimal):
    r"""Convex regression with SoS Hessian constraints, approximate representation (eq. 28).

    .. math::

        \min_{\alpha, \beta, \mathbf B \succeq 0}\ \frac1n\|y - E\beta - \mathbf K\alpha\|^2
          + \rho\,\alpha^T\mathbf K\alpha + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad H_j(\alpha) = \sum_i \alpha_i \nabla^2_z k(z_j, x_i)
          = \Psi_j^T\mathbf B\Psi_j,\ j\in[m],

    with f = E-part + sum_i alpha_i k(., x_i), E = [1, X] the unpenalized affine design
    (``fit_intercept``; absent: E is empty and this is exactly eq. 28).

    **Dual** (Proposition 9, generalized to the affine part).  Minimizing over beta
    replaces the loss by (1/n)||P(y - K alpha)||^2 with P the projection onto range(E)^perp.
    With K = R^T R (jittered Cholesky), W = R P R^T / n + rho I (Cholesky once) and
    G_H = R^{-T} H^T (n x m d^2), the minimization over alpha is explicit and

    .. math::

        D(\Gamma) = c(\Gamma)^T W^{-1} c(\Gamma) - \frac1n\|Py\|^2
          + \frac{1}{2\lambda_2}\|[\mathcal A^*\Gamma + \lambda_1 I]_-\|_F^2,
        \qquad c(\Gamma) = \frac1n R P y + \frac12 G_H \operatorname{vec}\Gamma,

    which is eq. (29) after the change of variables c = R^{-T} Z.  The primal point is
    :math:`\alpha(\Gamma) = R^{-1} W^{-1} c(\Gamma)` and
    :math:`\nabla q(\Gamma) = H(\alpha(\Gamma))`, the Hessians of f at the constraint points.
    q is convex quadratic with Lipschitz constant :math:`\lambda_{\max}(G_H^T W^{-1} G_H)/2`
    but not strongly convex when m d^2 > n (its Hessian is singular): accelerated gradient
    then converges at the O(1/k^2) rate in objective, locally linear once the active
    eigenspace of the negative part settles; the restart keeps the iterates monotone in
    practice.  (alpha(Gamma), B(Gamma)) satisfies H(alpha) = A(B) only at the optimum
    (``coupled = True``): the solver also requires the relative residual to be <= tol.

    Parameters
    ----------
    K : ndarray (n, n)
        Kernel matrix of the expansion (training) points.
    Hk : ndarray (m, n, p, p)
        Kernel Hessians in the first argument at the constraint points, Hk[j, i] =
        Hess_z k(z_j, x_i).
    Phi : ndarray (m, r)
        SoS features of the constraint points.
    y : ndarray (n,)
    E : ndarray (n, e) or None
        Unpenalized design (e.g. [1, X]).
    rho, lam1, lam2 : float
    """

    coupled = True

    def __init__(self, K: np.ndarray, Hk: np.ndarray, Phi: np.ndarray, y: np.ndarray,
                 E: np.ndarray | None, rho: float, lam1: float, lam2: float, *,
                 jitter: str | float = "auto", sample_weight: np.ndarray | None = None,
                 normalize_weights: bool = True) -> None:
        import scipy.linalg as sla

        from psdsos.features import cholesky_with_jitter

        self.y = np.asarray(y, dtype=np.float64)
        n = self.y.shape[0]
        self.n = n
        self.sw = row_scales(sample_weight, n, normalize=normalize_weights)
        self.y_w = self.y if self.sw is None else self.sw * self.y
        self.Hk = np.asarray(Hk, dtype=np.float64)
        self.m, _, self.d, _ = self.Hk.shape
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.K = np.asarray(K, dtype=np.float64)
        self.E = None if E is None or np.size(E) == 0 else np.asarray(E, dtype=np.float64)
        self.rho, self.lam1, self.lam2 = float(rho), float(lam1), float(lam2)
        self.R, self.jitter_ = cholesky_with_jitter(self.K, jitter=jitter)
        if self.E is not None:
            self.Qe = np.linalg.qr(self._rows(self.E))[0]
        else:
            self.Qe = np.zeros((n, 0))
        self._cvx: Any = None
        self._dual_ready = False
        self._last = (None, None)
        self._sla = sla

    # ---- helpers ------------------------------------------------------------------------
    def _rows(self, A):
        """S A: the rows of A times the square roots of the normalized weights (S = I
        without weights)."""
        if self.sw is None:
            return A
        return self.sw * A if A.ndim == 1 else self.sw[:, None] * A

    def _perp(self, v):
        """P S v: the weighted residual with its component in range(S E) removed (its
        squared norm / n is the data term)."""
        v = self._rows(v)
        return v - self.Qe @ (self.Qe.T @ v)

    def _prepare_dual(self):
        if self._dual_ready:
            return
        if not self.rho > 0:
            raise ValueError(
                "rho must be > 0 for the dual solver of convex regression (the minimization "
                "over alpha needs rho K positive definite); use solver='primal' for rho = 0"
            )
        sla, n = self._sla, self.n
        RS = self._fit_matrix_t()
        RQ = RS @ self.Qe
        q = RS.shape[0]
        W = (RS @ RS.T - RQ @ RQ.T) / n + self.rho * np.eye(q)
        self.W_chol = sla.cho_factor(0.5 * (W + W.T), lower=True)
        Ht = self.Hk.transpose(1, 0, 2, 3).reshape(q, -1)  # (q, m d^2): H^T
        self.GH = sla.solve_triangular(self.R, Ht, trans="T", lower=False)
        Py = self._perp(self._target())
        self.c0 = RS @ Py / n
        self.yP2 = float(Py @ Py) / n
        self._dual_ready = True

    def _fit_matrix_t(self):
        """The transposed fit matrix in the coordinates v = R alpha, rows weighted: the
        fitted values at the data are (this)^T v (K alpha = R^T R alpha)."""
        return self.R if self.sw is None else self.R * self.sw[None, :]

    def _target(self):
        """The targets, before _perp applies the weights."""
        return self.y

    def _v(self, G):
        """v = W^{-1} c(G), cached for the last G (the solver asks twice per iterate)."""
        if self._last[0] is G:
            return self._last[1]
        c = self.c0 + 0.5 * (self.GH @ G.reshape(-1))
        v = self._sla.cho_solve(self.W_chol, c)
        self._last = (G, (c, v))
        return c, v

    # ---- dual pieces -------------------------------------------------------------------------
    def smooth(self, G: np.ndarray) -> tuple[float, np.ndarray]:
        self._prepare_dual()
        c, v = self._v(G)
        grad = (self.GH.T @ v).reshape(self.m, self.d, self.d)
        return float(c @ v) - self.yP2, 0.5 * (grad + grad.transpose(0, 2, 1))

    def smooth_value(self, G: np.ndarray) -> float:
        self._prepare_dual()
        c = self.c0 + 0.5 * (self.GH @ G.reshape(-1))
        return float(c @ self._sla.cho_solve(self.W_chol, c)) - self.yP2

    def smooth_lipschitz(self) -> float:
        """lambda_max(grad^2 q) = lambda_max(U U^T), U = smooth_hessian_factor()."""
        U = self.smooth_hessian_factor()
        G = U.T @ U if U.shape[1] <= U.shape[0] else U @ U.T
        return float(np.linalg.eigvalsh(G)[-1]) * (1 + 1e-10)

    def strong_convexity(self) -> float:
        return 0.0

    def dual_floors(self) -> tuple[float, float]:
        """Absolute floors of the solver's relative gap and residual (see :func:`dual_floors`)."""
        return dual_floors(self.y, self.E, self._hessian_scale(), self.m)

    def _hessian_scale(self):
        """The largest Frobenius norm of a kernel Hessian at a constraint point."""
        return float(np.sqrt(np.max(np.sum(self.Hk * self.Hk, axis=(2, 3)))))

    def smooth_hessian_factor(self) -> np.ndarray:
        """U with grad^2 q = U U^T on vec(Gamma): U = (L_W^{-1} G_H)^T / sqrt(2), W = L_W L_W^T."""
        self._prepare_dual()
        Lw = np.tril(self.W_chol[0])
        Mh = self._sla.solve_triangular(Lw, self.GH, lower=True)
        return Mh.T / np.sqrt(2.0)

    def recover(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Primal (alpha, beta) from a dual point G."""
        self._prepare_dual()
        _, v = self._v(G)
        alpha = self._sla.solve_triangular(self.R, v, lower=False)
        beta = self._affine(alpha)
        return alpha, beta

    def _affine(self, alpha):
        if self.E is None:
            return np.zeros(0)
        r = self.y - self.K @ alpha
        return np.linalg.lstsq(self._rows(self.E), self._rows(r), rcond=None)[0]

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        self._prepare_dual()
        _, v = self._v(G)
        Ka = self.R.T @ v  # K alpha = R^T R alpha = R^T v
        r = self._perp(self.y - Ka)
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
        return float(r @ r) / self.n + self.rho * float(v @ v) + reg

    # ---- primal --------------------------------------------------------------------------
    def hessians(self, alpha: np.ndarray) -> np.ndarray:
        """H_j(alpha), shape (m, d, d)."""
        return np.einsum("jipq,i->jpq", self.Hk, alpha)

    def objective(self, alpha: np.ndarray, beta: np.ndarray, B: np.ndarray) -> float:
        """The objective of eq. (28) with the exact kernel matrix (no jitter); constraints
        not checked (see constraint_residual)."""
        f = self.K @ alpha + (self.E @ beta if self.E is not None else 0.0)
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
        r = self._rows(self.y - f)
        return float(r @ r) / self.n + self.rho * self.rkhs_norm_sq(alpha) + reg

    def evaluate_primal(self, B: np.ndarray,
                        params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Objective (numpy) and (alpha, beta) after a CVXPY solve."""
        alpha, beta = coefficients(params)
        return self.objective(alpha, beta, B), {"alpha": alpha, "beta": beta}

    def constraint_residual(self, alpha: np.ndarray, B: np.ndarray, floor: float = 0.0) -> float:
        """Relative violation ||H(alpha) - A(B)|| / max(||H(alpha)||, ||A(B)||, floor)."""
        H = self.hessians(alpha)
        F = sos_evaluate(self.Phi, B, self.d)
        den = max(float(np.linalg.norm(H)), float(np.linalg.norm(F)), floor, 1e-300)
        return float(np.linalg.norm(H - F)) / den

    def primal_residual(self, B: np.ndarray, extras: dict[str, Any], floor: float = 0.0) -> float:
        """Relative Hessian-constraint residual at a primal point (see constraint_residual),
        the denominator floored at ``floor``."""
        return self.constraint_residual(extras["alpha"], B, floor=floor)

    def _gram(self):
        """The kernel matrix of the expansion points (no jitter)."""
        return self.K

    def _spectral(self) -> tuple[np.ndarray, np.ndarray]:
        """(V, w): K = V diag(w) V^T, w clipped at 0 (cached)."""
        if getattr(self, "_eig", None) is None:
            K = self._gram()
            w, V = np.linalg.eigh(0.5 * (K + K.T))
            self._eig = (V, np.maximum(w, 0.0))
        return self._eig

    def rkhs_norm_sq(self, alpha: np.ndarray) -> float:
        r""":math:`\|f\|_{\mathcal H}^2 = \alpha^T\mathbf K\alpha` with the exact kernel matrix
        (no jitter), see :func:`quadratic_form`."""
        return quadratic_form(self._gram(), alpha)

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        r"""Primal QP + SDP of eq. (28) through the SoS primitive, in RKHS-isometric
        coordinates (see :func:`convex_regression_cvxpy`), built once.

        With :math:`\mathbf K = V\operatorname{diag}(w)V^T` and the numerically significant
        eigenvalues :math:`w_k > \varepsilon_{\text{rel}} w_{\max}` kept,
        :math:`\alpha = V_k\operatorname{diag}(w_k^{-1/2})u`, so that
        :math:`\mathbf K\alpha = V_k\operatorname{diag}(w_k^{1/2})u`,
        :math:`\alpha^T\mathbf K\alpha = \|u\|^2` and the Hessian rows become
        :math:`H_p V_k\operatorname{diag}(w_k^{-1/2})` (bounded by the norms of the
        second-derivative representers).

        Returns
        -------
        problem : cvxpy.Problem
            DPP in the Parameters ``"rho"``, ``"lam1"``, ``"lam2"``.
        B : cvxpy.Variable
        params : dict
            The Parameters, the variables ``"u"`` and ``"b"`` (None without E), the
            Hessian equality constraint ``"coupling"`` and the maps back ``"T"``
            (alpha = T u) and ``"Te"`` (beta = Te b).
        """
        if self._cvx is None:
            n, d, m = self.n, self.d, self.m
            iu, ju = np.triu_indices(d)
            Hp = self.Hk[:, :, iu, ju].transpose(0, 2, 1).reshape(m * len(iu), n)
            V, w = self._spectral()
            Vk, s = isometric_basis(V, w, rtol=n * np.finfo(np.float64).eps)
            T = Vk / s
            Ew = None if self.E is None else self._rows(self.E)
            self._cvx = convex_regression_cvxpy(self.Phi, d, self.y_w, self._rows(Vk * s),
                                                Hp @ T, Ew)
            self._cvx[2]["T"] = T
            self._cvx[2]["s"] = s
            # the directions the program leaves out (eigenvalues at the rounding level of
            # K, down to eps^2): what they could gain is checked by wide_certifier()
            Vw, sw = isometric_basis(V, w, rtol=np.finfo(np.float64).eps ** 2)
            if Vw.shape[1] > Vk.shape[1]:
                self._cvx[2]["F_wide"], self._cvx[2]["Hu_wide"] = (self._rows(Vw * sw),
                                                                   Hp @ (Vw / sw))
        return _set_weights(self._cvx, self.rho, self.lam1, self.lam2)


class ConvexRegressionNystromProblem(ConvexRegressionProblem):
    r"""Eq. (28) with the function in the span of q landmarks (Nystrom), in O(n q) memory.

    .. math::

        f = E\beta + \sum_{l=1}^q \alpha_l k(\cdot, c_l), \qquad
        \min_{\alpha,\beta,\mathbf B\succeq 0}\ \frac1n\|S(y - E\beta - \mathbf F\alpha)\|^2
          + \rho\,\alpha^T\mathbf K_{q}\alpha + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad \sum_l \alpha_l\nabla^2_z k(z_j, c_l)
          = \Psi_j^T\mathbf B\Psi_j,

    with :math:`\mathbf F_{il} = k(x_i, c_l)` (n x q, never stored: computed by row chunks),
    :math:`\mathbf K_q = \mathbf R^T\mathbf R` the landmarks' kernel matrix (jittered
    Cholesky) and S the square roots of the normalized sample weights.  The data enter
    only through the R factor of the thin QR decomposition
    :math:`S[E,\ \mathbf F\mathbf R^{-1},\ y] = Q\,T` (s = e + q + 1 columns), accumulated
    over row chunks (each chunk stacked under the previous factor and re-factored, as in
    TSQR): :math:`\|S(y - E\beta - \mathbf F\alpha)\| = \|T_y - T_E\beta - T_F v\|`
    with :math:`v = \mathbf R\alpha`, exactly, for every :math:`(\alpha, \beta)`.  Every
    quantity of :class:`ConvexRegressionProblem` is then formed from these s rows (the
    dual of eq. 29 with W q x q), so an iteration costs O(q^2 + q m d^2 + (r d)^3) whatever
    n, and the setup one pass over the data, O(n q (q + p)).

    Parameters
    ----------
    kernel : Kernel
        The kernel (in the units of X and C).
    X : ndarray (n, p)
        Training inputs.
    C : ndarray (q, p)
        Landmarks (centres of the expansion).
    Hk : ndarray (m, q, p, p)
        ``kernel.hessian(Z, C)``: Hessians at the constraint points.
    Phi : ndarray (m, r)
    y : ndarray (n,)
    fit_intercept : bool
        Unpenalized affine part E = [1, X].
    rho, lam1, lam2 : float
    compressed : tuple, optional
        ``(T, n, (css, ss))``: the factor T already accumulated (e.g. block by block on a
        dask array, :func:`compress_block` and :func:`combine_blocks`), the number of samples
        and the sums of squares of y - mean(y) (of y without intercept) and of y; X and y are
        then not used (pass None).
    """

    coupled = True

    def __init__(self, kernel: Kernel, X: np.ndarray, C: np.ndarray, Hk: np.ndarray,
                 Phi: np.ndarray, y: np.ndarray, fit_intercept: bool, rho: float, lam1: float,
                 lam2: float, *, jitter: str | float = "auto",
                 sample_weight: np.ndarray | None = None, normalize_weights: bool = True,
                 compressed: tuple[np.ndarray, int, tuple[float, float]] | None = None) -> None:
        import scipy.linalg as sla

        from psdsos.features import cholesky_with_jitter

        C = np.asarray(C, dtype=np.float64)
        if compressed is None:
            X = np.asarray(X, dtype=np.float64)
            self.y = np.asarray(y, dtype=np.float64)
            n = self.y.shape[0]
            yc = self.y - self.y.mean() if fit_intercept else self.y
            self._y_moments = (float(yc @ yc), float(self.y @ self.y))
        else:
            # (T, n, (sum of squares of y - mean(y) (or of y), of y)) from passes elsewhere
            T, n, self._y_moments = compressed
            self.y = None  # type: ignore[assignment]  # compressed: only y's moments are kept
        self.n = n
        self.sw = row_scales(sample_weight, n, normalize=normalize_weights)
        self.Hk = np.asarray(Hk, dtype=np.float64)
        self.m, _, self.d, _ = self.Hk.shape
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.rho, self.lam1, self.lam2 = float(rho), float(lam1), float(lam2)
        self.kernel, self.C = kernel, C
        self.Kq = np.asarray(kernel(C, C), dtype=np.float64)
        self.R, self.jitter_ = cholesky_with_jitter(self.Kq, jitter=jitter)
        q = C.shape[0]
        e = C.shape[1] + 1 if fit_intercept else 0
        if compressed is None:
            T = combine_blocks([compress_block(kernel, X, C, self.R, self.y, fit_intercept,
                                               self.sw)], e + q + 1)
        self.E = T[:, :e] if e else None
        self.Fc = T[:, e:e + q]
        self.y_w = T[:, -1]
        self.Qe = np.linalg.qr(self.E)[0] if self.E is not None else np.zeros((T.shape[0], 0))
        self._cvx: Any = None
        self._dual_ready = False
        self._last = (None, None)
        self._sla = sla

    def _rows(self, A):
        """The compressed rows carry the weights already."""
        return A

    def dual_floors(self) -> tuple[float, float]:
        """As :func:`dual_floors`, from the sums of squares of y (no pass over the data)."""
        return floors_from_moments(*self._y_moments, self.n, self._hessian_scale(), self.m)

    def _fit_matrix_t(self):
        return self.Fc.T

    def _target(self):
        return self.y_w

    def _affine(self, alpha):
        if self.E is None:
            return np.zeros(0)
        r = self.y_w - self.Fc @ (self.R @ alpha)
        return np.linalg.lstsq(self.E, r, rcond=None)[0]

    def primal_objective(self, G: np.ndarray, B: np.ndarray, FB: np.ndarray) -> float:
        self._prepare_dual()
        _, v = self._v(G)
        r = self._perp(self.y_w - self.Fc @ v)
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
        return float(r @ r) / self.n + self.rho * float(v @ v) + reg

    def objective(self, alpha: np.ndarray, beta: np.ndarray, B: np.ndarray) -> float:
        """Eq. (28) in the span of the landmarks, with the landmarks' exact kernel matrix
        (no jitter) in the penalty; constraints not checked."""
        r = self.y_w - self.Fc @ (self.R @ alpha)
        if self.E is not None:
            r = r - self.E @ beta
        reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
        return float(r @ r) / self.n + self.rho * self.rkhs_norm_sq(alpha) + reg

    def _gram(self):
        return self.Kq

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, dict[str, Any]]:
        """The primal of :meth:`ConvexRegressionProblem.cvxpy_problem` on the compressed
        rows: alpha = T u with T from the landmarks' kernel matrix, fit values Fc R T u."""
        if self._cvx is None:
            d, m = self.d, self.m
            q = self.Kq.shape[0]
            iu, ju = np.triu_indices(d)
            Hp = self.Hk[:, :, iu, ju].transpose(0, 2, 1).reshape(m * len(iu), q)
            V, w = self._spectral()
            Vk, s = isometric_basis(V, w, rtol=q * np.finfo(np.float64).eps)
            T = Vk / s
            FR = self.Fc @ self.R
            self._cvx = convex_regression_cvxpy(self.Phi, d, self.y_w, FR @ T, Hp @ T,
                                                self.E, n=self.n)
            self._cvx[2]["T"] = T
            self._cvx[2]["s"] = s
            Vw, sw = isometric_basis(V, w, rtol=np.finfo(np.float64).eps ** 2)
            if Vw.shape[1] > Vk.shape[1]:
                self._cvx[2]["F_wide"], self._cvx[2]["Hu_wide"] = (FR @ (Vw / sw),
                                                                   Hp @ (Vw / sw))
        return _set_weights(self._cvx, self.rho, self.lam1, self.lam2)


def compress_block(kernel, X, C, R, y, fit_intercept, sw=None, T=None):
    """Fold the rows S [E, K(X, C) R^{-1}, y] of one block of samples into the upper
    triangular factor T (s x s, s = e + q + 1; None for the first block), by row chunks
    within the working-memory budget: T^T T = (previous rows)^T (previous rows) + the
    block's, with the stability of a QR decomposition (see
    :class:`ConvexRegressionNystromProblem`).  ``sw``: the block's row scales."""
    import scipy.linalg as sla

    from psdsos._config import row_chunks

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    q = C.shape[0]
    e = p + 1 if fit_intercept else 0
    s = e + q + 1
    T = np.zeros((0, s)) if T is None else T
    for sl in row_chunks(n, 8 * (3 * s + 2 * q)):
        rows = sl.stop - sl.start
        A = np.empty((rows, s))
        if e:
            A[:, 0] = 1.0
            A[:, 1:e] = X[sl]
        A[:, e:e + q] = sla.solve_triangular(R, np.asarray(kernel(X[sl], C)).T, trans="T",
                                             lower=False).T
        A[:, -1] = y[sl]
        if sw is not None:
            A *= np.asarray(sw, dtype=np.float64)[sl, None]
        T = sla.qr(np.vstack([T, A]), mode="r", overwrite_a=True, check_finite=False)[0][:s]
    return T


def combine_blocks(factors, s):
    """The factor T of all the blocks' rows from the blocks' factors (one QR of their
    stack), padded to s x s."""
    import scipy.linalg as sla

    T = np.vstack([np.zeros((0, s)), *factors])
    if T.shape[0] > s:
        T = sla.qr(T, mode="r", check_finite=False)[0][:s]
    if T.shape[0] < s:
        T = np.vstack([T, np.zeros((s - T.shape[0], s))])
    return T


def row_scales(sample_weight, n, normalize=True):
    r"""Square roots of the normalized weights, :math:`s_i = \sqrt{n w_i / \sum_j w_j}`
    (None without weights), so that :math:`\frac1n\|S r\|^2 = \sum_i w_i r_i^2 /
    \sum_j w_j`: the weighted data term in the form of the unweighted one.
    ``normalize=False``: :math:`s_i = \sqrt{n w_i}`, the data term :math:`\sum_i w_i r_i^2`
    (the weighted least-squares steps of a general loss)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"sample_weight must be a finite positive array of shape ({n},)")
    if not normalize:
        return np.sqrt(n * w)
    w = w / float(np.max(w))
    return np.sqrt(n * w / float(np.sum(w)))


def quadratic_form(G, theta):
    r""":math:`\max(0, \theta^T\mathbf G\theta)` in extended precision (``np.longdouble``).

    The coefficients of an ill-conditioned kernel expansion are large (|alpha| ~ 1e5 for
    cond(K) ~ 1e10) and cancel: in float64 the form loses ~ n eps |alpha|^T|K||alpha| (1e-9
    relative, measured), an eigendecomposition more (3e-8).  Extended precision (where the
    platform has it; float64 otherwise) costs one non-BLAS matrix-vector product.
    """
    Gl = np.asarray(G, dtype=np.longdouble)
    t = np.asarray(theta, dtype=np.longdouble)
    return max(0.0, float(t @ (Gl @ t)))


def isometric_basis(V, w, rtol):
    r"""(V_k, sqrt(w_k)) for the eigenpairs of a Gram matrix with :math:`w_k > r w_{\max}`.

    Along a dropped direction a function of RKHS norm 1 has values of size at most
    :math:`\sqrt{w_k}`.  The approximate representation divides the Hessian rows by
    :math:`\sqrt{w_k}`, so it keeps only directions above the eigenvalues' rounding level
    (r = n eps: rounding in the rows is amplified at most by :math:`(n\epsilon)^{-1/2}`);
    the exact representation only multiplies by :math:`\sqrt{w_k}` and keeps every
    direction above :math:`\epsilon^2` (dropping more measurably raises the optimum).
    """
    w = np.asarray(w, dtype=np.float64)
    N = w.shape[0]
    wmax = float(np.max(w)) if N else 0.0
    keep = w > rtol * max(wmax, 1e-300)
    if not np.any(keep):
        keep = w >= wmax  # the zero kernel matrix: one (null) direction keeps shapes valid
    return V[:, keep], np.sqrt(np.maximum(w[keep], 1e-300))


def orthonormal_design(E):
    """(Q, Te): E beta = Q b with Q orthonormal columns, beta = Te b (min-norm on a
    rank-deficient E); (None, None) without E."""
    if E is None:
        return None, None
    U, S, Wt = np.linalg.svd(E, full_matrices=False)
    smax = float(S[0]) if S.size else 0.0
    keep = S > max(E.shape) * np.finfo(np.float64).eps * max(smax, 1e-300)
    return U[:, keep], Wt[keep].T / S[keep]


def coupling_dual(params, m, d):
    r"""The symmetric multipliers :math:`\Gamma_j` of the Hessian equality constraints of
    a CVXPY solve, in the convention of :func:`psdsos.solvers.solve_dual`.

    CVXPY's multiplier y of the packed constraint (one entry per p <= q) relates to the
    Frobenius pairing by :math:`\Gamma_{pq} = -y_k / w_k` (w = 1 on diagonals, 2 off).
    """
    y = params["coupling"].dual_value
    if y is None:
        return None
    y = np.asarray(y, dtype=np.float64).reshape(m, -1)
    iu, ju = np.triu_indices(d)
    c = -y / np.where(iu == ju, 1.0, 2.0)
    G = np.zeros((m, d, d))
    G[:, iu, ju] = c
    G[:, ju, iu] = c
    return G


def convex_regression_cvxpy(Phi, d, y, F, Hu, E, n=None):
    r"""The primal QP + SDP shared by both representations of convex regression.

    .. math::

        \min_{u,\,b,\,\mathbf B\succeq 0}\ \frac1n\|y - F u - Q b\|^2
          + \rho\|u\|^2 + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad H_u u = \operatorname{vech}(\Psi_j^T\mathbf B\Psi_j)_j,

    in RKHS-isometric coordinates u (:math:`\|f\|_{\mathcal H} = \|u\|`): the fit matrix
    F (n x k) holds the values at the training points of an orthonormal family of
    functions, H_u (m t x k, t = d(d+1)/2) their packed Hessians at the constraint points,
    Q an orthonormal basis of the range of the unpenalized design E (``n``: the number of
    samples the data term averages over, F.shape[0] by default; the compressed rows of
    :class:`ConvexRegressionNystromProblem` stand for more samples).  Every block is then
    bounded by the kernel's values and derivatives whatever the conditioning of the kernel
    matrix, which an interior-point or splitting solver needs to reach its tolerance.
    Built once through the SoS primitive, DPP in the Parameters rho, lam1, lam2.  Returns
    (problem, B, params) with the variables ``"u"``, ``"b"`` (None without E), the
    equality constraint ``"coupling"`` and ``"Te"`` (beta = Te b).
    """
    k = F.shape[1]
    n = F.shape[0] if n is None else int(n)
    m, t = Phi.shape[0], d * (d + 1) // 2
    block = SoSBlock(Phi, d, max_condition=None)  # certified by solve_primal
    u = cp.Variable(k, name="u")
    rho = cp.Parameter(nonneg=True, name="rho")
    lam1 = cp.Parameter(nonneg=True, name="lam1")
    lam2 = cp.Parameter(nonneg=True, name="lam2")
    fit = F @ u
    Q, Te = orthonormal_design(E)
    b = None
    if Q is not None:
        b = cp.Variable(Q.shape[1], name="b")
        fit = fit + Q @ b
    obj = (cp.sum_squares(y - fit) / n + rho * cp.sum_squares(u)
           + block.regularizer(lam1, lam2))
    cons = block.constraints_packed(cp.reshape(Hu @ u, (m, t), order="C"))
    prob = cp.Problem(cp.Minimize(obj), cons)
    return prob, block.B, {"rho": rho, "lam1": lam1, "lam2": lam2, "u": u, "b": b,
                           "coupling": cons[0], "Te": Te, "F": F, "Hu": Hu, "Q": Q}


def rounding_floor_of_builder(self):
    r"""Relative accuracy to which coefficients theta = T u can represent the program's
    solution: :math:`100\,N\epsilon\sqrt{w_{\max}/w_{\min}}` over the kept eigenvalues of
    the Gram matrix (the mapping back divides by :math:`\sqrt{w_k}`; measured 3e-8 for
    cond 1e12, n = 35, within this bound).  Certificates are checked against
    max(tol, this)."""
    _, _, params = self.cvxpy_problem()
    s = params["s"]
    return 100.0 * params["T"].shape[0] * np.finfo(np.float64).eps * float(s.max() / s.min())


def program_objective_of_builder(self, B):
    """The objective of the program :func:`convex_regression_cvxpy` solved, in numpy at its
    solution (u, b) and the given (projected) B: what its dual certifies."""
    _, _, params = self.cvxpy_problem()
    u = np.asarray(params["u"].value, dtype=np.float64)
    r = self.y_w - params["F"] @ u
    if params["b"] is not None:
        r = r - params["Q"] @ np.asarray(params["b"].value, dtype=np.float64)
    reg = self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.vdot(B, B))
    return float(r @ r) / self.n + self.rho * float(u @ u) + reg


def certifier_of_builder(self):
    """The dual that certifies a primal answer: :class:`IsometricDual` of the program
    :meth:`cvxpy_problem` built, at the current rho, lam1, lam2.  (For eq. 28 the dual
    solver's factor R carries a jitter, i.e. the kernel k + eps delta, whose optimum can
    exceed that of eq. 28 by more than a tight tolerance.)"""
    _, _, params = self.cvxpy_problem()
    key = (self.rho, self.lam1, self.lam2)
    cached = getattr(self, "_certifier", None)
    if cached is None or cached[0] != key:
        cached = (key, IsometricDual(self, params["F"], params["Hu"], params["Q"]))
        self._certifier = cached
    return cached[1]


class IsometricDual:
    r"""The smooth part q of the dual of :func:`convex_regression_cvxpy`'s program.

    Minimizing the Lagrangian over b and u (P the projection onto range(Q)^perp,
    :math:`g(\Gamma) = H_u^T (w\odot\operatorname{vech}\Gamma)` the Hessian pairing) gives,
    as in eq. (29),

    .. math::

        q(\Gamma) = c^T W^{-1} c - \frac1n\|Py\|^2,\qquad
        c = \frac1n F^T P y + \frac12 g(\Gamma),\qquad W = \frac1n F^T P F + \rho I,

    W well conditioned (>= rho I) since F has orthonormal-function columns.  With the
    negative-part term (:func:`psdsos.solvers.solve_dual`'s D), -D(Gamma) is a lower
    bound on the program's optimum for every Gamma: the certificate of a primal answer.
    Offers what :func:`psdsos.solvers._primal.dual_value` needs (``smooth``, ``Phi``,
    ``d``, ``lam1``, ``lam2``).
    """

    def __init__(self, problem, F, Hu, Q):
        import scipy.linalg as sla

        self.Phi, self.d = problem.Phi, problem.d
        self.lam1, self.lam2, self.rho = problem.lam1, problem.lam2, problem.rho
        self.m = problem.m
        n = problem.n
        y = problem.y_w
        PF = F if Q is None else F - Q @ (Q.T @ F)
        Py = y if Q is None else y - Q @ (Q.T @ y)
        self._chol = None
        if self.rho > 0:
            W = F.T @ PF / n + self.rho * np.eye(F.shape[1])
            self._chol = sla.cho_factor(0.5 * (W + W.T), lower=True)
        self._sla = sla
        self.c0 = PF.T @ y / n
        self.yP2 = float(Py @ Py) / n
        if self._chol is not None:
            # Hessians of the unconstrained ridge fit (Gamma = 0): the problem's curvature
            # scale, the floor of relative residuals when the optimum is f = 0, B = 0
            self.hessian_scale = float(np.linalg.norm(
                Hu @ self._sla.cho_solve(self._chol, self.c0)))
        else:
            self.hessian_scale = 0.0
        self.Hu = Hu
        iu, ju = np.triu_indices(self.d)
        self._iu, self._ju = iu, ju
        self._w = np.where(iu == ju, 1.0, 2.0)

    def smooth(self, G):
        """(q(G), None): the value only (a certificate needs no gradient)."""
        if self._chol is None:
            raise ValueError("rho must be > 0 for the dual of convex regression")
        g = self.Hu.T @ (np.asarray(G)[:, self._iu, self._ju] * self._w).ravel()
        c = self.c0 + 0.5 * g
        return float(c @ self._sla.cho_solve(self._chol, c)) - self.yP2, None


def _set_weights(cvx, rho, lam1, lam2):
    prob, B, params = cvx
    params["rho"].value = rho
    params["lam1"].value = lam1
    params["lam2"].value = lam2
    return prob, B, params


def coefficients(params):
    """(theta, beta) from a solved :func:`convex_regression_cvxpy` program."""
    theta = params["T"] @ np.asarray(params["u"].value, dtype=np.float64)
    if params["b"] is None:
        return theta, np.zeros(0)
    return theta, params["Te"] @ np.asarray(params["b"].value, dtype=np.float64)
