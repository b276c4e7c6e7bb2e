r"""Histograms with the Fisher-Rao geometry, through the square-root map onto the sphere
(Rudi et al., "Manifold Structured Prediction", section 4.4): projected Riemannian gradient
descent on the positive orthant of the sphere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite, check_float
from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import project_simplex
from psdsos.structured.spaces._manifold import (
    _MIN_STEP,
    _check_rows,
    _RGDOptions,
    _warn_not_converged,
)
from psdsos.structured.spaces.sphere import (
    SphereSpace,
    _next_step,
    _sphere_loss,
    best_start,
    descent_start,
    normalized_weights,
    sphere_angles,
    sphere_eval,
    training_objectives,
)

__all__ = ["FisherSimplexSpace"]


def project_orthant_cap(V: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""Nearest points of :math:`C_c = \{z \in S^{k-1} : z_j \ge c\}` to the rows of V.

    For :math:`\|x\| = 1`, :math:`\|x - v\|^2 = 1 - 2\langle x, v\rangle + \|v\|^2`, so the
    nearest point maximizes :math:`\langle x, v\rangle` over :math:`C_c`; its KKT conditions
    give :math:`x = \max(c, s v)` with the unique :math:`s > 0` such that :math:`\|x\| = 1`
    (``k c^2 < 1``), found exactly by sorting (the coordinates above the floor are the m
    largest :math:`v_j`).  Rows without a positive entry have no such s: NaN rows.
    """
    T, k = V.shape
    Vs = -np.sort(-V, axis=1)  # descending
    cs = np.cumsum(Vs * Vs, axis=1)
    m = np.arange(1, k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sqrt((1.0 - (k - m) * c * c) / cs)
        nxt = np.concatenate([Vs[:, 1:], np.full((T, 1), -np.inf)], axis=1)
        valid = (Vs > 0) & (s * Vs >= c) & (s * nxt <= c)
    valid[~np.isfinite(s)] = False
    has = valid.any(axis=1)
    sm = np.where(has, s[np.arange(T), np.argmax(valid, axis=1)], np.nan)
    X = np.maximum(c, sm[:, None] * V)
    X[~has] = np.nan
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def cone_projection_norm(z: np.ndarray, u: np.ndarray, c: np.ndarray,
                         rtol: float = 1e-12) -> np.ndarray:
    r"""Norm of the projection of the tangent vectors u onto the tangent cone of
    :math:`C_c` at z: :math:`\{v : \langle v, z\rangle = 0,\ v_j \ge 0 \text{ where }
    z_j = c\}`.

    With :math:`u = -\operatorname{grad} F(z)` this is the first-order stationarity measure
    of :math:`\min_{C_c} F` (0 exactly at a KKT point; the Riemannian gradient norm inside).
    The projection is :math:`v_j = u_j + \lambda z_j` on the free coordinates and
    :math:`\max(0, u_j + \lambda z_j)` on the active ones, with the root :math:`\lambda` of
    the non-decreasing piecewise-linear :math:`\langle v(\lambda), z\rangle`, found exactly
    at its sorted breakpoints.
    """
    act = z <= c * (1.0 + rtol)
    zf, za = np.where(act, 0.0, z), np.where(act, z, 0.0)
    a = np.sum(zf * u, axis=1)
    bF = np.sum(zf * zf, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam_b = np.where(act, -u / np.where(act, z, 1.0), np.inf)
    order = np.argsort(lam_b, axis=1)
    lb = np.take_along_axis(lam_b, order, axis=1)
    zs = np.take_along_axis(za, order, axis=1)
    us = np.take_along_axis(np.where(act, u, 0.0), order, axis=1)
    cz2 = np.cumsum(zs * zs, axis=1)
    czu = np.cumsum(zs * us, axis=1)
    # phi at breakpoint m: the terms with smaller breakpoints are positive
    z0 = np.zeros((len(z), 1))
    cz2x = np.concatenate([z0, cz2[:, :-1]], axis=1)
    czux = np.concatenate([z0, czu[:, :-1]], axis=1)
    with np.errstate(invalid="ignore"):
        phi = a[:, None] + lb * (bF[:, None] + cz2x) + czux
    m = np.sum(np.isfinite(lb) & (phi <= 0), axis=1)  # breakpoints left of the root
    r = np.arange(len(z))
    P2 = np.concatenate([z0, cz2], axis=1)[r, m]
    PU = np.concatenate([z0, czu], axis=1)[r, m]
    lam = -(a + PU) / (bF + P2)
    v = u + lam[:, None] * z
    v = np.where(act, np.maximum(v, 0.0), v)
    return np.linalg.norm(v, axis=1)


@register_output_space("fisher_simplex")
class FisherSimplexSpace(_RGDOptions, OutputSpace):
    r"""Histograms with the Fisher-Rao geometry, through the square-root map (section 4.4).

    .. math::

        \pi(y) = (\sqrt{y_1}, \dots, \sqrt{y_k}) \in S^{k-1}, \qquad
        \Delta(y, y') = \arccos\Big(\sum_j \sqrt{y_j y'_j}\Big)^2
                      = d_{S^{k-1}}(\pi(y), \pi(y'))^2,

    (the paper's normalization of the Fisher-Rao distance, which is twice this arccos);
    :math:`\pi` is an isometry of the simplex with this metric onto the closed positive
    orthant of the unit sphere.  Training outputs are first floored at ``eps`` and
    renormalized (:meth:`floor`, :math:`\epsilon = 10^{-5}` as in the paper's experiment);
    the floored histograms all lie in :math:`\mathcal Y = \Delta_\delta = \{y \in \Delta :
    y_j \ge \delta\}`, :math:`\delta = \epsilon / (1 + k\epsilon)`, the set decoded over:

    .. math::

        \hat y = \pi^{-1}(\hat z), \qquad
        \hat z \in \operatorname*{argmin}_{z \in C} \sum_i w_i \arccos(\langle z,
        \pi(y_i)\rangle)^2, \qquad C = \{z \in S^{k-1} : z_j \ge \sqrt\delta\}.

    Signed weights.  C is compact and F continuous, so a minimizer exists for every real
    weight vector: :math:`w = \alpha / \|\alpha\|_1` (the same argmin as eq. 2; uniform
    weights for alpha = 0; ``weights="positive"``: :math:`\alpha_+`).  All inner products
    :math:`\langle z, \pi(y_i)\rangle` are positive on C, so F is smooth there (the cut
    locus of the sphere lies outside the orthant), but with negative weights its minimizer
    is often on the boundary of C (a face of the simplex: some :math:`y_j = \delta`).  The
    unconstrained sphere minimizer mapped back by :math:`z \odot z` would be a different
    point: the problem is solved over C.

    Decoding ("rgd"): projected Riemannian gradient descent, :math:`z \leftarrow P_C(z +
    2\eta\sum_i w_i \operatorname{Log}_z(\pi(y_i)))` with the exact nearest-point map
    :math:`P_C` (:func:`project_orthant_cap`; inside C it is the normalization retraction of
    Table 1, so with non-negative weights the iteration is :class:`SphereSpace`'s), step
    1/2 halved whenever F would increase, doubled back after an accepted step, stopped when
    the first-order measure ``grad_norm_`` -- the norm of the projection of
    :math:`-\operatorname{grad} F` onto the tangent cone of C (:func:`cone_projection_norm`;
    the Riemannian gradient norm at interior points; 0 exactly at KKT points) -- is
    :math:`\le` ``tol``.  Starts: the positive-part extrinsic mean, the training output of
    smallest F, and with negative weights also the signed extrinsic mean and the vertex of
    :math:`\Delta_\delta` of smallest F; the point of smallest F is returned (ties within
    rounding to the first start).  With negative weights F is not geodesically convex: the
    prediction is the best of these certified local solutions.

    Parameters
    ----------
    eps : float, default=1e-5
        Floor of the training histograms.
    weights, max_iter, tol : see :class:`SphereSpace`.

    Attributes
    ----------
    n_iter_ : ndarray of shape (n_test,)
    grad_norm_ : ndarray of shape (n_test,)
        First-order measure at each prediction (see above).
    """

    decode_methods = ("rgd",)
    symmetric_loss = True

    def __init__(self, *, eps: float = 1e-5, weights: str = "signed", max_iter: int = 200,
                 tol: float = 1e-8) -> None:
        self.eps = eps
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """(n, k) histograms: non-negative rows summing to 1 (to 1e-8)."""
        A = _check_rows(Y, name)
        if A.size and (A.min() < -1e-12 or np.abs(A.sum(axis=1) - 1.0).max() > 1e-8):
            raise ValueError(
                f"{name} rows must be histograms: non-negative entries summing to 1"
            )
        return np.maximum(A, 0.0)

    def floor(self, Y: ArrayLike) -> np.ndarray:
        """Histograms floored at ``eps`` and renormalized (entries >= eps / (1 + k eps))."""
        Yf = np.maximum(Y, float(self.eps))
        return Yf / Yf.sum(axis=1, keepdims=True)

    def fit(self, Y_train: ArrayLike) -> FisherSimplexSpace:
        self._check_options()
        eps = check_float(self.eps, "eps", positive=True)
        self.Y_train_ = self.check_Y(Y_train, "Y")
        k = self.Y_train_.shape[1]
        if eps * k >= 1.0:
            raise ValueError(f"eps must be < 1/k = {1.0 / k:g}, got {eps}")
        self.sphere_ = SphereSpace(weights=self.weights, max_iter=self.max_iter, tol=self.tol)
        self.sphere_.fit(np.sqrt(self.floor(self.Y_train_)))
        #: the decoding set is Delta_delta, delta = eps / (1 + k eps)
        self.delta_ = eps / (1.0 + k * eps)
        return self

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Squared Fisher-Rao (paper's normalization) distances, shape (n,)."""
        T = np.sqrt(np.maximum(as_finite(Y_true, "Y_true"), 0.0))
        P = np.sqrt(np.maximum(as_finite(Y_pred, "Y_pred"), 0.0))
        return _sphere_loss(T, P)

    def project(self, Z: ArrayLike) -> np.ndarray:
        """KRLS projection: Euclidean projection of each row onto the simplex."""
        return project_simplex(Z)

    def _roots(self, y):
        y = np.atleast_2d(as_finite(y, "y"))
        if y.ndim != 2 or y.shape[1] != self.Y_train_.shape[1] or y.min() < 0:
            raise ValueError(f"y must be histograms of shape (m, {self.Y_train_.shape[1]})")
        z = np.sqrt(y)
        return z / np.linalg.norm(z, axis=1, keepdims=True)

    def objective(self, y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """F at the histograms ``y`` (rows), weights used as given."""
        w = check_alpha(w, len(self.Y_train_), "w")
        return sphere_eval(self._roots(y), w, self.sphere_.Y_train_)[0]

    def stationarity(self, y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """First-order measure of min over Delta_delta at the histograms ``y`` (rows)."""
        w = check_alpha(w, len(self.Y_train_), "w")
        z = self._roots(y)
        _, G, _ = sphere_eval(z, w, self.sphere_.Y_train_)
        return cone_projection_norm(z, 2.0 * G, np.sqrt(self.delta_))

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """Histograms of eq. 2 over Delta_delta, shape (n_test, k)."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W = normalized_weights(A, self.weights)
        z, gnorm, n_iter = self._solve(W)
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, float(self.tol), int(self.max_iter))
        y = z * z
        return y / y.sum(axis=1, keepdims=True)

    # -- the solver ------------------------------------------------------------------------
    def _starts(self, W):
        Z = self.sphere_.Y_train_
        k = Z.shape[1]
        c = np.sqrt(self.delta_)
        Ft, _ = training_objectives(W, Z)
        best_train = project_orthant_cap(Z[best_start(Ft)], c)
        starts = [_cap_or(np.maximum(W, 0.0) @ Z, best_train, c), best_train]
        if np.any(W < 0):
            starts.append(_cap_or(W @ Z, best_train, c))
            V = np.full((k, k), c)
            V[np.arange(k), np.arange(k)] = np.sqrt(1.0 - (k - 1) * c * c)
            _, th, _ = sphere_angles(V, Z)
            Fv = W @ (th * th).T  # (T, k)
            starts.append(V[np.argmin(Fv, axis=1)])
        return np.stack(starts)

    def _solve(self, W):
        Y0 = self._starts(W)
        S, T = Y0.shape[:2]
        z, F, gnorm, n_iter = self._pgd(np.tile(W, (S, 1)), Y0.reshape(S * T, -1))
        F, gnorm, n_iter = F.reshape(S, T), gnorm.reshape(S, T), n_iter.reshape(S, T)
        pick = best_start(F.T)
        r = np.arange(T)
        return z.reshape(S, T, -1)[pick, r], gnorm[pick, r], n_iter[pick, r]

    def _pgd(self, W, z):
        Z = self.sphere_.Y_train_
        c = np.sqrt(self.delta_)
        tol, max_iter = float(self.tol), int(self.max_iter)
        z, F, G, _, eta, n_iter = descent_start(z, W, Z)
        gnorm = cone_projection_norm(z, 2.0 * G, c)
        for _ in range(max_iter):
            a = np.flatnonzero((gnorm > tol) & (eta > _MIN_STEP))
            if not a.size:
                break
            zc = project_orthant_cap(z[a] + 2.0 * eta[a, None] * G[a], c)
            good = np.all(np.isfinite(zc), axis=1)
            zc[~good] = z[a][~good]
            Fc, Gc, _ = sphere_eval(zc, W[a], Z)
            ok = good & (Fc <= F[a] + 1e-13 * np.maximum(1.0, np.abs(F[a])))
            acc = a[ok]
            eta[acc] = _next_step(zc[ok] - z[acc], Gc[ok] - G[acc], eta[acc])
            z[acc], F[acc], G[acc] = zc[ok], Fc[ok], Gc[ok]
            eta[a[~ok]] *= 0.5
            n_iter[a] += 1
            gnorm[acc] = cone_projection_norm(z[acc], 2.0 * G[acc], c)
        return z, F, gnorm, n_iter

    def to_config(self) -> dict[str, Any]:
        return {"eps": float(self.eps), "weights": self.weights, "max_iter": int(self.max_iter),
                "tol": float(self.tol)}


def _cap_or(m, fallback, c):
    """P_C of the rows of m, the fallback where that is undefined (no positive entry)."""
    out = project_orthant_cap(m, c)
    bad = ~np.all(np.isfinite(out), axis=1)
    out[bad] = fallback[bad]
    return out
