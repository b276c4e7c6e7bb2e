r"""SPD matrices with the affine-invariant distance (Rudi et al., "Manifold Structured
Prediction", eq. 16, Table 1): Riemannian Newton with the exponential map (eq. 15),
eigenvectors tracked across iterations (:mod:`psdsos.structured.spaces._spd_newton`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from psdsos.geometry import affine_invariant_distance, check_spd, expm_sym, logm_spd
from psdsos.geometry._checks import SPD_TOL
from psdsos.geometry._matfun import spectral
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite, policy_weights, warn_no_minimizer
from psdsos.structured._plugins import register_output_space
from psdsos.structured.spaces import _spd_robust
from psdsos.structured.spaces._manifold import (
    _TINY,
    _check_spd_stack,
    _chunks,
    _congruence_eigh,
    _RGDOptions,
    _warn_not_converged,
)
from psdsos.structured.spaces._spd_newton import _SPDNewton

__all__ = ["SPDSpace"]


#: SPD decoding: test points solved together while (test points x training matrices x d^2)
#: stays below this; a single test point (with its own non-zero weights) above it.  Small
#: problems are dominated by per-call overhead, large ones by the arithmetic.
_SPD_BATCH = 2**15
#: A decode not certified whose condition number is above this stopped at the edge of the
#: space (the robust path keeps condition numbers below 1e12).
_EDGE_COND = 1e11


def _clip_eigenvalues(Z: ArrayLike, floor: float) -> np.ndarray:
    """Eigenvalues of sym(Z) floored (SPDSpace.project, LogEuclideanSPDSpace.project)."""
    Z = as_finite(Z, "Z")
    S = 0.5 * (Z + np.swapaxes(Z, -1, -2))
    w, V = np.linalg.eigh(S)
    top = np.abs(w).max(axis=-1, keepdims=True)
    fl = np.maximum(floor, 1e-10 * top)
    fl = np.where(fl > 0, fl, 1.0)  # all-zero matrix: identity
    return spectral(np.maximum(w, fl), V)


_LogsT = TypeVar("_LogsT", bound="_SPDLogs")


class _SPDLogs(OutputSpace):
    """SPD outputs stored with their logarithms ``logs_`` and projected by eigenvalue
    clipping (:class:`SPDSpace`, :class:`LogEuclideanSPDSpace`); ``_check_options`` checks
    the constructor arguments at fit."""

    def _check_options(self):
        raise NotImplementedError

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """(n, d, d) symmetric positive definite matrices; ValueError naming ``name``."""
        return _check_spd_stack(Y, name, check_spd)

    def fit(self: _LogsT, Y_train: ArrayLike) -> _LogsT:
        """Check the options, store the training matrices and their logarithms; self."""
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.logs_ = logm_spd(self.Y_train_)
        return self

    def project(self, Z: ArrayLike, floor: float = 1e-12) -> np.ndarray:
        r"""KRLS projection (Appendix G): eigenvalues below ``floor`` set to ``floor``.

        The floor is raised to ``1e-10 * max eigenvalue`` when that is larger, so that the
        result is numerically SPD (condition number at most 1e10).
        """
        return _clip_eigenvalues(Z, floor)


@register_output_space("spd")
class SPDSpace(_RGDOptions, _SPDLogs):
    r"""SPD matrices with the squared affine-invariant distance (manifold paper, eq. 16).

    .. math::

        \Delta(Y, Z) = \|\log(Z^{-1/2} Y Z^{-1/2})\|_F^2, \qquad
        F(Y) = \sum_i w_i \Delta(Y, Y_i),\qquad
        \operatorname{grad} F(Y) = -2 \sum_i w_i \operatorname{Log}_Y(Y_i)
            = -2\, Y^{1/2} G(Y) Y^{1/2},

    with :math:`G(Y) = \sum_i w_i \log(Y^{-1/2} Y_i Y^{-1/2})` (Table 1; the metric is
    :math:`\langle U, V\rangle_Y = \operatorname{Tr}(Y^{-1} U Y^{-1} V)`, so
    :math:`\|\operatorname{grad} F\|_Y = 2\|G(Y)\|_F`).

    Decoding ("rgd": Riemannian optimization with the exponential map of eq. 15, here
    Riemannian Newton, :class:`_SPDNewton`): one test point at a time over its training
    matrices of non-zero weight (the others add nothing to F), or, for small problems, a
    batch of test points in the same numpy calls (``_SPD_BATCH``: there the per-call
    overhead dominates).  Start: the log-Euclidean weighted mean
    :math:`\exp(\sum_i w_i \log Y_i)` corrected by the cubic terms of the symmetric
    Baker-Campbell-Hausdorff formula (exact when the :math:`Y_i` commute; about 20 times
    smaller gradient than the plain log-Euclidean mean on generic data).  Everything
    is computed in the frame of a congruence factor R, :math:`Y^{-1} = R^\top R` (the metric
    is invariant under any congruence, so :math:`G = \sum_i w_i \log(R Y_i R^\top)` has the
    same norm): the Newton direction P solves :math:`\operatorname{Hess}[P] = G` by
    conjugate gradients (relative residual :math:`\max(\mathrm{tol}/(4\|\operatorname{grad}
    F\|), 10^{-4}\|\operatorname{grad} F\|)`, so that one step from a good start lands below
    ``tol``), with the Hessian of :math:`\tfrac12 d^2(\cdot, Y_i)` diagonal in the eigenbasis
    of :math:`\log(R Y_i R^\top)` (multipliers :math:`(\delta/2)\coth(\delta/2)`,
    :math:`\delta` the differences of log-eigenvalues); the gradient direction where the
    curvature is not positive (signed weights).  Step :math:`R \leftarrow \exp(-tP/2) R`,
    t = 1 halved whenever F would increase (beyond its error bound; a full step that halves
    the gradient norm is accepted, F's decrease being below rounding near the minimizer of
    ill-conditioned data).  The first evaluation uses LAPACK ``eigh`` on
    every :math:`R Y_i R^\top`; later ones start from the previous eigenvectors: the
    logarithm is their first-order (Daleckii-Krein) expansion, whose error is bounded by
    :math:`r^2/(2(1-r)^2)`, :math:`r = \|\text{off-diagonal}\|_F/\lambda_{\min}`; if that
    bound (summed with the weights) does not already certify the point, the eigenvectors of
    the matrices with the largest contributions are refined with matrix products
    (simultaneous Jacobi rotations, quadratic convergence; LAPACK for the few that are far
    off).  The error bound includes rounding (:meth:`_SPDNewton.rounding`); a step is
    accepted only if the upper bound F + errF does not increase, and Newton steps are capped
    by a trust radius.  Stops when :math:`\|\operatorname{grad} F\|_Y = 2\|G\|_F` plus twice
    the error bound is :math:`\le` ``tol`` (so the exact gradient norm is :math:`\le` ``tol``;
    ``F`` with weights summing to one).  A point not certified after ``_FAST_ITER`` Newton
    steps continues with the robust method (:meth:`_SPDNewton.robust`: saddle-free Newton,
    LAPACK evaluations, Armijo line search on the upper bound of F) for the rest of its
    ``max_iter`` budget.  The decode is formed from the SVD of the frame, so it is always
    symmetric positive definite.  A point still not certified (or whose decode is not a
    point of the space, condition number above 1e12, or where LAPACK failed) goes to the
    robust path (:meth:`_robust`, :func:`._spd_robust.rgd`: Riemannian gradient descent with
    Armijo backtracking, L-BFGS-preconditioned, every evaluation by LAPACK in a re-whitened
    frame, iterates kept in the space) for up to ``20 * max_iter`` more evaluations.
    ConvergenceWarning otherwise (naming ``tol`` alone when the gradient norm is within its
    rounding bound: the certifiable floor in float64; saying so when the iterate stopped at
    condition number 1e12, a minimizer beyond what float64 holds).

    Negative-weight policy (:func:`~psdsos.structured.policy_weights`; docs, "Signed
    weights"): the SPD manifold with this metric is a Hadamard manifold, so with
    :math:`s = \sum_i\alpha_i > 0` F is coercive whatever :math:`\|\alpha\|_1`
    (:math:`F(Y) \ge s\, d^2(Y, Y_0) - C d(Y, Y_0) - C'` by the triangle inequality) and has a
    minimizer: ``weights="signed"`` decodes the signed weights normalized to sum one there
    (eq. 2 exactly; F may be non-convex and the decoder returns a certified stationary
    point).  Where :math:`\sum\alpha \le 0` eq. 2 has no minimizer in general: the positive
    part is used (a weighted Karcher mean, geodesically convex; uniform weights if no weight
    is positive) with a :class:`~psdsos.structured.NoMinimizerWarning`.
    ``weights="positive"`` always uses the positive part.

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    max_iter : int, default=100
        Largest number of Newton iterations (trial steps) per test point.
    tol : float, default=1e-8
        Stopping threshold on the Riemannian gradient norm.

    Attributes
    ----------
    n_iter_ : ndarray of int, shape (n_test,)
        Set by ``decode`` (as the attributes below): iterations per test point.
    grad_norm_ : ndarray, shape (n_test,)
        Final Riemannian gradient norms, computed from the tracked eigenvectors; at
        convergence the exact norms are at most ``grad_norm_`` plus twice the error bound
        of the tracked logarithms, and that sum is at most ``tol``.
    n_eigh_ : int
        LAPACK eigendecompositions of d x d matrices used (all test points).
    signed_ : ndarray of bool, shape (n_test,)
        True where the signed weights were decoded (eq. 2), False where the positive part
        was used.
    """

    decode_methods = ("rgd",)
    symmetric_loss = True

    def __init__(self, *, weights: str = "signed", max_iter: int = 100,
                 tol: float = 1e-8) -> None:
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Squared affine-invariant distances, shape (n,)."""
        return np.atleast_1d(affine_invariant_distance(Y_true, Y_pred)) ** 2

    # ---- the objective (public for tests and diagnostics) ---------------------------
    def objective(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        r"""F(Y) = sum_i w_i Delta(Y, Y_i) for each Y of a batch (weights used as given)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        return self._eval(Y, w)[0]

    def riemannian_gradient(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        r"""grad F(Y) = -2 Y^{1/2} G(Y) Y^{1/2} (weights used as given), shape (m, d, d)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, Yh = self._eval(Y, w)
        return -2.0 * Yh @ G @ Yh

    def _eval(self, Y, W):
        Yh, _, mw, mV = _congruence_eigh(Y, self.Y_train_, inverse=True)
        lm = np.log(np.maximum(mw, _TINY))
        F = np.einsum("an,anj->a", W, lm * lm)
        G = ((mV * (W[..., None] * lm)[..., None, :]) @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        return F, 0.5 * (G + np.swapaxes(G, -1, -2)), Yh

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """Predictions of eq. 2 by Riemannian Newton, shape (n_test, d, d), SPD."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, self.signed_ = policy_weights(A, self.weights)
        warn_no_minimizer(self, A, self.signed_)
        return self._newton(W)

    def _newton(self, W):
        """Riemannian Newton (class docstring), test points batched by _SPD_BATCH; the
        points it does not certify go to the robust path (:meth:`_robust`)."""
        tol, max_iter = float(self.tol), int(self.max_iter)
        solver = _SPDNewton(self.Y_train_, self.logs_)
        out = np.empty((len(W),) + self.Y_train_.shape[1:])
        n_iter = np.zeros(len(W), dtype=int)
        gnorm, err = np.empty(len(W)), np.empty(len(W))
        failed = np.zeros(len(W), dtype=bool)
        for c in _chunks(np.arange(len(W)), self.Y_train_[0].size * len(self.Y_train_),
                         _SPD_BATCH):
            try:
                out[c], n_iter[c], gnorm[c], err[c] = solver.solve(W[c], tol, max_iter)
            except (np.linalg.LinAlgError, FloatingPointError):
                # LAPACK failed inside the fast path (e.g. "Eigenvalues did not converge"
                # on a frame far from the data): these points are not certified
                failed[c], out[c], n_iter[c], gnorm[c], err[c] = True, np.nan, 0, np.inf, 0.0
        n_eigh = solver.n_eigh
        bad = failed | ~(gnorm + 2.0 * err <= tol)
        for t in np.flatnonzero(bad | self._not_in_space(out)):
            out[t], k, gnorm[t], err[t], ne = self._robust(W[t], out[t], tol, max_iter)
            n_iter[t] += k
            n_eigh += ne
        self.n_iter_, self.grad_norm_, self.n_eigh_ = n_iter, gnorm, n_eigh
        bad = ~(gnorm + 2.0 * err <= tol)
        floor = float(np.max(2.0 * err[bad], initial=0.0))
        at_floor = bad.any() and bool(np.all(gnorm[bad] <= 2.0 * err[bad]))
        advice = ("increase max_iter or tol" if not at_floor else
                  f"the rounding of float64 at the condition numbers of these matrices limits "
                  f"the certified gradient norm to about {floor:.3g}: increase tol")
        if bad.any():
            ev = np.linalg.eigvalsh(out[bad])
            edge = int(np.sum(ev[:, -1] > _EDGE_COND * ev[:, 0]))
            if edge:
                advice += (f"; {edge} of them stopped at the largest condition number the "
                           f"space holds (1e12): the weights extrapolate far beyond the "
                           f"training outputs and the minimizer is not representable; "
                           f"weights='positive' or a larger lam keep decodes within range")
        _warn_not_converged(
            self, np.where(bad, np.maximum(gnorm, 2.0 * err), gnorm), tol, max_iter, advice)
        return out

    @staticmethod
    def _not_in_space(Y):
        """Per matrix: not finite, or not accepted by ``check_spd`` (batched eigvalsh)."""
        bad = ~np.all(np.isfinite(Y), axis=(1, 2))
        ok = np.flatnonzero(~bad)
        if ok.size:
            try:
                s = np.linalg.eigvalsh(Y[ok])
                bad[ok] = ~(s[:, 0] > SPD_TOL * np.abs(s).max(axis=1))
            except np.linalg.LinAlgError:
                bad[ok] = [not _spd_robust.in_space(y) for y in Y[ok]]
        return bad

    def _robust(self, w, Y_fast, tol, max_iter):
        r"""The robust path for one test point (:mod:`._spd_robust`): Riemannian gradient
        descent with Armijo backtracking in the whitened frame, from the best point so far
        (the fast path's decode if it is in the space, or the log-Euclidean mean -- capped
        at condition number 1e12 as in :class:`LogEuclideanSPDSpace` -- if lower; if neither
        is usable, the log-Euclidean mean of the positive part), for
        ``20 * max_iter`` evaluations (F decreases from the start, up to its rounding).

        Returns (Y, evaluations, gradient norm, error bound, LAPACK eigendecompositions).
        """
        idx = np.flatnonzero(w)
        A, wi = self.Y_train_[idx], w[idx]
        Lbar = np.einsum("m,mij->ij", wi, self.logs_[idx])
        mu, V = np.linalg.eigh(0.5 * (Lbar + Lbar.T))
        wp = np.maximum(w, 0.0)
        Lpos = np.einsum("m,mij->ij", wp / wp.sum(), self.logs_)
        cands = [Y_fast, spectral(np.exp(_spd_robust.clip_window(mu)), V), expm_sym(Lpos)]
        best, n_eval = None, 0
        for Y in cands:
            R = _spd_robust.frame_of(Y)
            if R is None:
                continue
            F, _, _, ok = _spd_robust.lapack_eval(A, wi, R)
            n_eval += 1
            if ok and (best is None or F < best[1]):
                best = (R, F)
            if best is not None and Y is cands[1]:
                break  # the positive-part mean only when neither other point is usable
        if best is None:  # no usable start (not expected): the identity, in the space
            best = (np.eye(A.shape[1]), None)
        R, k, gn, err, _ = _spd_robust.rgd(A, wi, best[0], tol, 20 * max_iter)
        return _spd_robust.point_of(R), k, gn, err, (n_eval + k) * len(idx)

    def to_config(self) -> dict[str, Any]:
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}
