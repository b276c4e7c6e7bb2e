r"""Convex regression with the squared loss and SoS Hessian constraints (PSD paper eq. 28, 29).

:class:`ConvexRegressionProblem` expands f on the training points,
:class:`ConvexRegressionNystromProblem` on landmarks (data compressed by
:mod:`psdsos.sos._compress`); both offer the dual pieces of
:func:`psdsos.solvers.solve_dual` and the CVXPY primal of
:func:`psdsos.sos._isometric.convex_regression_cvxpy`.
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np

from psdsos.kernels import Kernel
from psdsos.problems._convex_base import _ConvexRegressionBase
from psdsos.problems._isometric_primal import _IsometricPrimal
from psdsos.sos._compress import combine_blocks, compress_block, row_scales
from psdsos.sos._isometric import (
    _set_weights,
    coefficients,
    convex_regression_cvxpy,
    isometric_basis,
    quadratic_form,
)

__all__ = ["ConvexRegressionProblem", "ConvexRegressionNystromProblem"]


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


class ConvexRegressionProblem(_IsometricPrimal, _ConvexRegressionBase):
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

    _DUAL_NEEDS_RHO = ("the dual solver of convex regression (the minimization over alpha "
                       "needs rho K positive definite)")

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
        self._set_constraints(Hk, Phi, rho, lam1, lam2)
        self.K = np.asarray(K, dtype=np.float64)
        self.E = None if E is None or np.size(E) == 0 else np.asarray(E, dtype=np.float64)
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
    def _perp(self, v):
        """P S v: the weighted residual with its component in range(S E) removed (its
        squared norm / n is the data term)."""
        v = self._rows(v)
        return v - self.Qe @ (self.Qe.T @ v)

    def _factor_dual(self):
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
        return float(r @ r) / self.n + self.rho * float(v @ v) + self._regularizer(B)

    # ---- primal --------------------------------------------------------------------------
    def hessians(self, alpha: np.ndarray) -> np.ndarray:
        """H_j(alpha), shape (m, d, d)."""
        return np.einsum("jipq,i->jpq", self.Hk, alpha)

    def objective(self, alpha: np.ndarray, beta: np.ndarray, B: np.ndarray) -> float:
        """The objective of eq. (28) with the exact kernel matrix (no jitter); constraints
        not checked (see constraint_residual)."""
        f = self.K @ alpha + (self.E @ beta if self.E is not None else 0.0)
        r = self._rows(self.y - f)
        return float(r @ r) / self.n + self.rho * self.rkhs_norm_sq(alpha) + self._regularizer(B)

    def evaluate_primal(self, B: np.ndarray,
                        params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Objective (numpy) and (alpha, beta) after a CVXPY solve."""
        alpha, beta = coefficients(params)
        return self.objective(alpha, beta, B), {"alpha": alpha, "beta": beta}

    def constraint_residual(self, alpha: np.ndarray, B: np.ndarray, floor: float = 0.0) -> float:
        """Relative violation ||H(alpha) - A(B)|| / max(||H(alpha)||, ||A(B)||, floor)."""
        return self._relative_residual(self.hessians(alpha), B, floor)

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
            d, m = self.d, self.m
            q = self._gram().shape[0]
            iu, ju = np.triu_indices(d)
            Hp = self.Hk[:, :, iu, ju].transpose(0, 2, 1).reshape(m * len(iu), q)
            V, w = self._spectral()
            Vk, s = isometric_basis(V, w, rtol=q * np.finfo(np.float64).eps)
            T = Vk / s
            Ew = None if self.E is None else self._rows(self.E)
            self._cvx = convex_regression_cvxpy(self.Phi, d, self.y_w, self._fit_values(Vk, s),
                                                Hp @ T, Ew, n=self.n)
            self._cvx[2]["T"] = T
            self._cvx[2]["s"] = s
            # the directions the program leaves out (eigenvalues at the rounding level of
            # K, down to eps^2): what they could gain is checked by wide_certifier()
            Vw, sw = isometric_basis(V, w, rtol=np.finfo(np.float64).eps ** 2)
            if Vw.shape[1] > Vk.shape[1]:
                self._cvx[2]["F_wide"], self._cvx[2]["Hu_wide"] = (self._fit_values(Vw, sw),
                                                                   Hp @ (Vw / sw))
        return _set_weights(self._cvx, self.rho, self.lam1, self.lam2)

    def _fit_values(self, V, s):
        """The weighted values at the data of the functions alpha = V / s (the columns of
        the program's fit matrix): S K V / s = S V s for eigenpairs (V, s^2) of K."""
        return self._rows(V * s)


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
        self._set_constraints(Hk, Phi, rho, lam1, lam2)
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
        return float(r @ r) / self.n + self.rho * float(v @ v) + self._regularizer(B)

    def objective(self, alpha: np.ndarray, beta: np.ndarray, B: np.ndarray) -> float:
        """Eq. (28) in the span of the landmarks, with the landmarks' exact kernel matrix
        (no jitter) in the penalty; constraints not checked."""
        r = self.y_w - self.Fc @ (self.R @ alpha)
        if self.E is not None:
            r = r - self.E @ beta
        return float(r @ r) / self.n + self.rho * self.rkhs_norm_sq(alpha) + self._regularizer(B)

    def _gram(self):
        return self.Kq

    def _fit_values(self, V, s):
        """The primal of :meth:`ConvexRegressionProblem.cvxpy_problem` on the compressed
        rows: alpha = V / s with V, s^2 from the landmarks' kernel matrix, fit values
        Fc R V / s."""
        return self.Fc @ self.R @ (V / s)
