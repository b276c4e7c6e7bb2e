r"""PSD matrices with the Bures-Wasserstein distance: an SDP in CVXPY (convex for
:math:`w \ge 0`) or the fixed-point iteration of Alvarez-Esteban et al. (2016), which is
Riemannian gradient descent with unit step in the Bures-Wasserstein geometry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos.geometry import bures_wasserstein_distance_squared, check_psd, sqrtm_psd
from psdsos.geometry._matfun import spectral
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import check_float, policy_weights, solve_parametric
from psdsos.structured._plugins import register_output_space
from psdsos.structured.spaces._manifold import (
    _TINY,
    _check_spd_stack,
    _chunks,
    _congruence_eigh,
    _RGDOptions,
    _warn_not_converged,
)
from psdsos.structured.spaces.euclidean import project_psd_cone

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = ["BuresSpace"]


@register_output_space("bures")
class BuresSpace(_RGDOptions, OutputSpace):
    r"""PSD matrices with the squared Bures-Wasserstein distance; the decoding is a barycenter.

    .. math::

        \Delta(Y, C) = d_{BW}^2(Y, C) = \operatorname{Tr} Y + \operatorname{Tr} C
            - 2 \operatorname{Tr}(C^{1/2} Y C^{1/2})^{1/2},
        \qquad F(Y) = \sum_i w_i\, d_{BW}^2(Y, C_i).

    **SDP ("cvxpy", the default).**  For PSD A, B the fidelity has the SDP form
    :math:`\operatorname{Tr}(A^{1/2} B A^{1/2})^{1/2} = \max\{\operatorname{Tr} X :
    \begin{psmallmatrix} A & X \\ X^\top & B\end{psmallmatrix} \succeq 0\}`
    (the optimum :math:`X = A^{1/2} U B^{1/2}` with U from the polar factor; the value is the
    nuclear norm of :math:`B^{1/2} A^{1/2}`).  Hence, for :math:`w \ge 0`, :math:`\sum w = 1`,

    .. math::

        \min_{Y \succeq 0,\ X_1..X_n}\ \operatorname{Tr} Y - 2\sum_i w_i \operatorname{Tr} X_i
        \quad \text{s.t.}\quad
        \begin{pmatrix} Y & X_i \\ X_i^\top & C_i \end{pmatrix} \succeq 0,\ i = 1..n,

    equals :math:`\min_Y F(Y) - \sum_i w_i \operatorname{Tr} C_i`.  It is convex because
    :math:`Y \mapsto -\operatorname{Tr}(C^{1/2} Y C^{1/2})^{1/2}` is convex (operator
    concavity of the square root).  The problem is built once with ``w`` a non-negative
    ``cp.Parameter`` (DPP: the objective is parameter-affine) and re-solved per test point
    (one LMI of size 2d per training point: use "rgd" for large n).

    **Fixed point ("rgd").**  The iteration of Alvarez-Esteban, del Barrio, Cuesta-Albertos
    and Matran (2016),

    .. math::

        Y \leftarrow Y^{-1/2}\Big(\sum_i w_i (Y^{1/2} C_i Y^{1/2})^{1/2}\Big)^2 Y^{-1/2}
          = \bar T Y \bar T, \qquad \bar T = \sum_i w_i T_{Y \to C_i},

    is Riemannian gradient descent with unit step in the Bures-Wasserstein geometry (Chewi
    et al., 2020): tangent vectors at Y are symmetric V with
    :math:`\operatorname{Exp}_Y(V) = (I + V) Y (I + V)`, metric
    :math:`\langle U, V\rangle_Y = \operatorname{Tr}(U Y V)`, and
    :math:`\operatorname{grad} F(Y) = 2(I - \bar T)`.  Batched over test points, started from
    :math:`(\sum_i w_i C_i^{1/2})^2` (the exact barycenter when the :math:`C_i` commute),
    stopped when :math:`\|\operatorname{grad} F\|_Y \le` ``tol``.  It needs the iterates to be
    nonsingular (a barycenter with a positive-definite training matrix among positive weights
    is).

    Negative-weight policy: with negative weights F is a difference of convex functions and
    the SDP above is no longer a relaxation of it (it would be non-convex), and the fixed
    point needs a PSD :math:`\sum_i w_i (Y^{1/2} C_i Y^{1/2})^{1/2}`.  Both methods therefore
    always use the positive part of the weights, renormalized (uniform weights if no weight
    is positive): the decoded matrix is the BW barycenter of the training outputs with
    weights :math:`\alpha_+ / \sum(\alpha_+)`.

    Parameters
    ----------
    max_iter : int, default=100
        Fixed-point iterations ("rgd").
    tol : float, default=1e-8
        "rgd": stopping threshold on the Riemannian gradient norm.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        CVXPY solver of the SDP.
    solver_tol : float, default=1e-8
        Tolerance passed to the SDP solver (the objective is then accurate to about this, the
        matrix to about its square root: use "rgd" for high accuracy).
    """

    decode_methods = ("cvxpy", "rgd")
    symmetric_loss = True

    def __init__(self, *, max_iter: int = 100, tol: float = 1e-8, solver: str = "CLARABEL",
                 solver_tol: float = 1e-8) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.solver_tol = solver_tol
        self.weights = "positive"

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """(n, d, d) symmetric PSD matrices (rank-deficient allowed)."""
        return _check_spd_stack(Y, name, check_psd)

    def fit(self, Y_train: ArrayLike) -> BuresSpace:
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.roots_ = sqrtm_psd(self.Y_train_)
        self._problem: Any = None
        return self

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Squared Bures-Wasserstein distances, shape (n,)."""
        return np.atleast_1d(bures_wasserstein_distance_squared(Y_true, Y_pred))

    def project(self, Z: ArrayLike) -> np.ndarray:
        """KRLS projection: eigenvalue clipping at 0 (the PSD cone)."""
        return project_psd_cone(Z)

    def objective(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """F(Y) = sum_i w_i d_BW^2(Y, C_i) per Y of a batch (weights used as given)."""
        Y = np.asarray(Y, dtype=np.float64).reshape((-1,) + self.Y_train_.shape[1:])
        w = check_alpha(w, len(self.Y_train_), "w")
        D = bures_wasserstein_distance_squared(Y[:, None], self.Y_train_[None])
        return np.sum(w * D, axis=1)

    def riemannian_gradient(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """grad F(Y) = 2 (I - sum_i w_i T_{Y -> C_i}), shape (m, d, d) (Y nonsingular)."""
        Y = np.asarray(Y, dtype=np.float64).reshape((-1,) + self.Y_train_.shape[1:])
        w = check_alpha(w, len(self.Y_train_), "w")
        Tbar, _, _ = self._tbar(Y, w)
        return 2.0 * (np.eye(self.Y_train_.shape[-1]) - Tbar)

    def _tbar(self, Y, W):
        _, Yih, mw, mV = _congruence_eigh(Y, self.Y_train_, inverse=False)
        R = mV * (W[..., None] * np.sqrt(np.maximum(mw, 0.0)))[..., None, :]
        A = (R @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        A = 0.5 * (A + np.swapaxes(A, -1, -2))
        Tbar = Yih @ A @ Yih
        return 0.5 * (Tbar + np.swapaxes(Tbar, -1, -2)), A, Yih

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, cp.Parameter]:
        """The barycenter SDP, built once: ``(problem, Y variable, w parameter)``."""
        import cvxpy as cp

        if self._problem is None:
            n, d = len(self.Y_train_), self.Y_train_.shape[1]
            Y = cp.Variable((d, d), symmetric=True)
            w = cp.Parameter(n, nonneg=True)
            Xs = [cp.Variable((d, d)) for _ in range(n)]
            cons = [Y >> 0]
            for X, C in zip(Xs, self.Y_train_, strict=True):
                cons.append(cp.bmat([[Y, X], [X.T, C]]) >> 0)
            traces = cp.hstack([cp.trace(X) for X in Xs])
            prob = cp.Problem(cp.Minimize(cp.trace(Y) - 2 * (w @ traces)), cons)
            self._problem = (prob, Y, w)
        return self._problem

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """BW barycenters with the positive-part weights, shape (n_test, d, d), PSD."""
        method = resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, "positive")
        if method == "cvxpy":
            prob, Yv, wp = self.cvxpy_problem()
            out = np.empty((len(W),) + self.Y_train_.shape[1:])
            for t in range(len(W)):
                wp.value = W[t]
                solve_parametric(prob, self.solver, check_float(self.solver_tol, "solver_tol",
                                                                positive=True))
                out[t] = project_psd_cone(np.asarray(Yv.value))
            return out
        Y0 = np.einsum("tn,nij->tij", W, self.roots_)
        Y0 = Y0 @ Y0
        # a singular start (every weighted root singular in a common direction) is lifted
        s, U = np.linalg.eigh(0.5 * (Y0 + np.swapaxes(Y0, 1, 2)))
        top = np.maximum(s[:, -1:], _TINY)
        Y0 = spectral(np.maximum(s, 1e-12 * top), U)
        return self._fixed_point(W, Y0)

    def _fixed_point(self, W, Y):
        T, n, d = len(W), len(self.Y_train_), self.Y_train_.shape[1]
        tol, max_iter = float(self.tol), int(self.max_iter)
        Y = Y.copy()
        n_iter = np.zeros(T, dtype=int)
        gnorm = np.full(T, np.inf)
        eye = np.eye(d)
        active = np.arange(T)
        for it in range(max_iter + 1):
            if not active.size:
                break
            for c in _chunks(active, n * d * d):
                Tbar, Am, Yih = self._tbar(Y[c], W[c])
                D = eye - Tbar
                gnorm[c] = 2.0 * np.sqrt(np.maximum(
                    np.einsum("aij,ajk,aki->a", D, Y[c], D), 0.0))
                go = gnorm[c] > tol
                if it < max_iter and np.any(go):
                    cg = c[go]
                    Yn = Yih[go] @ Am[go] @ Am[go] @ Yih[go]
                    Y[cg] = 0.5 * (Yn + np.swapaxes(Yn, 1, 2))
                    n_iter[cg] += 1
            active = active[gnorm[active] > tol]
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, tol, max_iter)
        return Y

    def to_config(self) -> dict[str, Any]:
        return {"max_iter": int(self.max_iter), "tol": float(self.tol), "solver": self.solver,
                "solver_tol": float(self.solver_tol)}
