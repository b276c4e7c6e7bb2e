r"""The unit sphere with the squared geodesic distance :math:`\arccos^2` (Rudi et al.,
"Manifold Structured Prediction", eq. 17, Table 1): multi-start Riemannian gradient descent
with the normalization retraction, on the signed weights of eq. 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos.geometry._sphere import geodesic_angle
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite
from psdsos.structured._plugins import register_output_space
from psdsos.structured.spaces._manifold import (
    _BLOCK_BUDGET,
    _MIN_STEP,
    _RGDOptions,
    _warn_not_converged,
)

__all__ = ["SphereSpace"]


#: Sphere: a point within this angle of the antipode of z_i is treated as the cone point
#: (cut locus) of arccos^2(<., z_i>) itself, see SphereSpace.
_KINK_TOL = 1e-12
#: inner products above this in absolute value get their angle from ||y -+ z|| (accurate
#: near 0 and pi, where arccos of the rounded inner product loses half the digits; below
#: it the error of arccos is at most about 1e-16 / sin(theta) < 1e-14)
_NEAR = 1.0 - 1e-4
#: longest step (radians): the Barzilai-Borwein steps may be long, but a run should not
#: leap over the basin of its start (with negative weights F has many local minima)
_MAX_ANGLE = 0.1


def normalized_weights(alpha: np.ndarray, policy: str = "signed") -> np.ndarray:
    r"""Decoding weights :math:`w = \alpha / \|\alpha\|_1` (rows), the argmin of eq. 2 kept.

    ``policy="positive"`` uses :math:`\alpha_+` instead.  A row of zeros (every point is a
    minimizer) gets uniform weights: the Frechet mean of the training outputs.
    """
    a = np.maximum(alpha, 0.0) if policy == "positive" else np.asarray(alpha, dtype=float)
    l1 = np.abs(a).sum(axis=1)
    w = np.full_like(a, 1.0 / max(a.shape[1], 1))
    nz = l1 > 0
    w[nz] = a[nz] / l1[nz, None]
    return w


def sphere_angles(y: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inner products, angles and ||z - <y, z> y|| of rows y (m, k) and z (n, k), accurate
    near 0 and pi (computed from ||y - z|| and ||y + z|| there)."""
    ip = np.clip(y @ Z.T, -1.0, 1.0)
    theta = np.arccos(ip)
    sn = np.sqrt(np.maximum(1.0 - ip * ip, 0.0))
    t, i = np.nonzero(np.abs(ip) > _NEAR)
    if t.size:
        yt, zi = y[t], Z[i]
        theta[t, i] = 2.0 * np.arctan2(np.linalg.norm(yt - zi, axis=1),
                                       np.linalg.norm(yt + zi, axis=1))
        sn[t, i] = np.linalg.norm(zi - ip[t, i, None] * yt, axis=1)
    return ip, theta, sn


def sphere_eval(y: np.ndarray, W: np.ndarray,
                Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""F, G = sum_i w_i Log_y(z_i) over the differentiable terms, and the kink slack.

    A term whose antipode :math:`-z_i` is within ``_KINK_TOL`` of y is at its cone point:
    it is left out of G and its net weight :math:`\omega` enters the slack
    :math:`-2\pi\omega`, so that the steepest-descent rate at y is
    :math:`\max(0, 2\|G\| - \text{slack})` (see :class:`SphereSpace`).
    """
    ip, theta, sn = sphere_angles(y, Z)
    kink = theta >= np.pi - _KINK_TOL
    ok = (sn > 0) & ~kink
    c = np.where(ip > 0, 1.0, 0.0)  # limit of theta / sin(theta) at theta = 0
    np.divide(theta, sn, out=c, where=ok)
    c[kink] = 0.0
    F = np.sum(W * theta * theta, axis=1)
    wc = W * c
    G = wc @ Z - np.sum(wc * ip, axis=1)[:, None] * y  # sum_i w_i Log_y(z_i)
    G = G - np.sum(G * y, axis=1)[:, None] * y  # exactly tangent
    omega = np.sum(np.where(kink, W, 0.0), axis=1)
    return F, G, -2.0 * np.pi * omega


def descent_measure(G: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Steepest-descent rate max(0, ||grad F_smooth|| - slack) (the gradient norm off kinks)."""
    return np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)


def training_objectives(W: np.ndarray, Z: np.ndarray,
                        antipodes: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    r"""F at every training output (and at its antipode), shape (m, n) each: two matrix
    products with :math:`\theta_{ij}^2` and :math:`(\pi - \theta_{ij})^2`, in column blocks."""
    n = len(Z)
    Ft = np.empty((len(W), n))
    Fa = np.empty((len(W), n)) if antipodes else None
    step = max(1, _BLOCK_BUDGET // max(n, 1))
    for s in range(0, n, step):
        _, th, _ = sphere_angles(Z[s : s + step], Z)  # (block, n)
        Ft[:, s : s + step] = W @ (th * th).T
        if Fa is not None:
            Fa[:, s : s + step] = W @ ((np.pi - th) ** 2).T
    return Ft, Fa


#: Angles of the grid that adds a start on the circle with signed weights.
_CIRCLE_GRID = 720


def best_start(F_cand: np.ndarray, tie: float = 1e-12) -> np.ndarray:
    """Row-wise index of the smallest candidate value, the first one on (rounding) ties."""
    lo = F_cand.min(axis=1, keepdims=True)
    return np.argmax(F_cand <= lo + tie * np.maximum(1.0, np.abs(lo)), axis=1)


def descent_start(y: np.ndarray, W: np.ndarray, Z: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                             np.ndarray]:
    """The state a batch of descents starts from: a copy of the starting points y (T, k),
    the objectives, gradients and slacks of :func:`sphere_eval` there, the initial steps
    (0.5) and the iteration counts (0)."""
    y = y.copy()
    F, G, slack = sphere_eval(y, W, Z)
    T = len(W)
    return y, F, G, slack, np.full(T, 0.5), np.zeros(T, dtype=int)


def _sphere_loss(Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
    """Squared geodesic distances of unit-normalized rows (SphereSpace.loss)."""
    T = as_finite(Y_true, "Y_true")
    P = as_finite(Y_pred, "Y_pred")
    if T.shape != P.shape or T.ndim != 2:
        raise ValueError(f"Y_true and Y_pred must have the same (n, k) shape, got "
                         f"{T.shape} and {P.shape}")
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    P = P / np.linalg.norm(P, axis=1, keepdims=True)
    d = geodesic_angle(T, P)
    return d * d


def _unit_rows(Z: np.ndarray) -> np.ndarray:
    """Z (..., k) with its rows (last axis) scaled to unit norm; a zero row (norm <= 1e-300)
    becomes the first basis vector."""
    Z = np.array(Z, dtype=np.float64)
    nrm = np.linalg.norm(Z, axis=-1)
    zero = nrm <= 1e-300
    Z[zero] = 0.0
    Z[zero, 0] = 1.0
    nrm[zero] = 1.0
    return Z / nrm[..., None]


@register_output_space("sphere")
class SphereSpace(_RGDOptions, OutputSpace):
    r"""Unit vectors of :math:`S^{k-1}` with the squared geodesic distance (eq. 17, Table 1).

    .. math::

        \Delta(z, y) = \arccos(\langle z, y\rangle)^2, \qquad
        F(y) = \sum_i w_i \arccos(\langle y, z_i\rangle)^2, \qquad
        \operatorname{grad} F(y) = -2\sum_i w_i \operatorname{Log}_y(z_i)
          = -2 \sum_i w_i \frac{\theta_i}{\sin\theta_i} (I - y y^\top) z_i,

    :math:`\theta_i = \arccos\langle y, z_i\rangle` (Table 1's gradient, written with the
    logarithm map).

    Signed weights (eq. 2 as it stands).  The sphere is compact and F is continuous, so F
    has a minimizer for *every* real weight vector; the decoder minimizes F with
    :math:`w = \alpha / \|\alpha\|_1` (a positive multiple of alpha: the same argmin, also
    when :math:`\sum_i \alpha_i \le 0`; uniform weights if alpha is zero, when every point
    is a minimizer).  ``weights="positive"`` uses :math:`\alpha_+` instead.

    Cut locus.  :math:`\arccos^2(\langle\cdot, z_i\rangle)` is not differentiable at the
    antipode :math:`-z_i`: with :math:`\rho` the distance to :math:`-z_i`,
    :math:`\theta_i^2 = (\pi - \rho)^2 = \pi^2 - 2\pi\rho + \rho^2`, a cone point.  For
    :math:`w_i < 0` it is a convex kink, and minimizers of F do sit there (with SELF
    weights too); for :math:`w_i > 0` it is a concave one, never a minimizer.  Within
    ``_KINK_TOL`` :math:`= 10^{-12}` of :math:`-z_i` the term is treated as the cone point:
    it is left out of the gradient and, with :math:`\omega` the net weight of such terms,
    the directional derivative of F along a unit tangent v is
    :math:`\langle \operatorname{grad} F_{\text{smooth}}, v\rangle - 2\pi\omega`; the
    stationarity measure ``grad_norm_`` is the steepest-descent rate
    :math:`\max(0, \|\operatorname{grad} F_{\text{smooth}}\| + 2\pi\omega)`
    (:meth:`stationarity`), which is 0 exactly when 0 is in the subdifferential of a convex
    kink, and the true Riemannian gradient norm :math:`\|\operatorname{grad} F\|` at every
    other point (however close to an antipode).

    Decoding ("rgd"): :math:`y \leftarrow R_y(-\eta \operatorname{grad} F) =
    (y + 2\eta \sum_i w_i \operatorname{Log}_y(z_i)) / \|\cdot\|` (the normalization
    retraction of Table 1), batched, step 1/2 halved whenever F would increase (doubled
    back up to 1/2 after an accepted step), stopped when the measure is :math:`\le`
    ``tol``.  Starts: the normalized extrinsic mean of the positive part,
    :math:`\sum_i (w_i)_+ z_i / \|\cdot\|`, and the training output of smallest F; with
    negative weights also the signed extrinsic mean and the antipode :math:`-z_j` of
    smallest F (F at every training output and antipode costs two matrix products with
    :math:`\theta_{ij}^2`).  Each run ends by trying the antipode of the negative-weight
    output nearest to it (the exact cone point).  The point of smallest F is returned
    (ties within rounding go to the first start), so F at the prediction is never above F
    at any training output.  With negative weights F is not geodesically convex: the
    prediction is the best of these certified local solutions, not a certified global
    minimum.

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
        Decode the signed weights (eq. 2) or their positive part.
    max_iter : int, default=200
        Iterations of each run.
    tol : float, default=1e-8
        Stopping threshold on the stationarity measure (the Riemannian gradient norm of F
        with :math:`\|w\|_1 = 1`); a :class:`~sklearn.exceptions.ConvergenceWarning` names
        ``max_iter`` when a prediction does not reach it.

    Attributes
    ----------
    n_iter_ : ndarray of shape (n_test,)
        Iterations of the run that gave each prediction.
    grad_norm_ : ndarray of shape (n_test,)
        Stationarity measure at each prediction (see above).
    """

    name = "sphere"
    symmetric_loss = True
    decode_methods = ("rgd",)
    #: accepted deviation of a training output from unit norm (renormalized on input)
    unit_tol = 1e-6

    def __init__(self, *, weights: str = "signed", max_iter: int = 200,
                 tol: float = 1e-8) -> None:
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """(n, k) unit rows (to 1e-6; renormalized); ValueError naming ``name``."""
        A = as_finite(Y, name)
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(f"{name} must have shape (n_samples, k), got {A.shape}")
        nrm = np.linalg.norm(A, axis=1)
        if A.size and np.abs(nrm - 1.0).max() > self.unit_tol:
            raise ValueError(
                f"{name} rows must be unit vectors (points of the sphere); largest | ||y|| - 1 | "
                f"= {float(np.abs(nrm - 1.0).max()):.3g}"
            )
        return A / nrm[:, None] if A.size else A

    def fit(self, Y_train: ArrayLike) -> SphereSpace:
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        return self

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        r"""Squared geodesic distances :math:`\arccos(\langle y, y'\rangle)^2`, shape (n,)."""
        return _sphere_loss(Y_true, Y_pred)

    def project(self, Z: ArrayLike) -> np.ndarray:
        """KRLS projection: rows normalized (the first basis vector for a zero row)."""
        return _unit_rows(as_finite(Z, "Z"))

    # ---- per-element operations (LocalizedSELF's Algorithm 3): elements are unit vectors
    def loss_gradient(self, Z: ArrayLike, Y: ArrayLike) -> np.ndarray:
        r"""Ambient gradient in Z of :math:`\arccos(\langle z, y\rangle)^2`,
        :math:`-2 \frac{\theta}{\sin\theta} y`, over the last axis (unit rows, broadcast)."""
        Z, Y = np.asarray(Z, dtype=np.float64), np.asarray(Y, dtype=np.float64)
        th = geodesic_angle(Z, Y)
        s = np.sin(th)
        ratio = np.where(s > 1e-12, th / np.maximum(s, 1e-12), 1.0)
        return -2.0 * ratio[..., None] * Y

    def element_loss(self, Z: np.ndarray, E: np.ndarray) -> np.ndarray:
        return geodesic_angle(Z, E) ** 2

    def element_project(self, Z: np.ndarray) -> np.ndarray:
        """Rows normalized, as :meth:`project` (the first basis vector for a zero row)."""
        return _unit_rows(Z)

    def _points(self, y):
        y = np.atleast_2d(as_finite(y, "y"))
        return y / np.linalg.norm(y, axis=1, keepdims=True)

    def objective(self, y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """F(y) per row of ``y`` (weights used as given)."""
        w = check_alpha(w, len(self.Y_train_), "w")
        return sphere_eval(self._points(y), w, self.Y_train_)[0]

    def stationarity(self, y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """max(0, ||grad F_smooth|| - kink slack): the Riemannian gradient norm off the cut
        loci, the steepest-descent rate at a cone point (0 iff 0 is a subgradient)."""
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, slack = sphere_eval(self._points(y), w, self.Y_train_)
        return descent_measure(G, slack)

    def riemannian_gradient(self, y: ArrayLike, w: ArrayLike) -> np.ndarray:
        """grad F(y) = -2 sum_i w_i Log_y(z_i), shape (m, k) (cone-point terms left out)."""
        w = check_alpha(w, len(self.Y_train_), "w")
        return -2.0 * sphere_eval(self._points(y), w, self.Y_train_)[1]

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """Predictions of eq. 2 by multi-start RGD, shape (n_test, k), unit rows."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W = normalized_weights(A, self.weights)
        y, F, gnorm, n_iter = self._solve(W)
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, float(self.tol), int(self.max_iter))
        return y

    # -- the solver ------------------------------------------------------------------------
    def _starts(self, W):
        """Start points, shape (S, T, k), S = 2 (or 4 if some weight is negative, 5 on the
        circle: the best point of a grid of angles)."""
        Z = self.Y_train_
        Ft, Fa = training_objectives(W, Z, antipodes=bool(np.any(W < 0)))
        j = best_start(Ft)
        best_train = Z[j]
        starts = [_normalize_or(np.maximum(W, 0.0) @ Z, best_train), best_train]
        if Fa is not None:
            starts.append(_normalize_or(W @ Z, best_train))
            starts.append(-Z[best_start(Fa)])
            if Z.shape[1] == 2:
                # the circle with signed weights: local minima can nearly tie; the best of a
                # grid of _CIRCLE_GRID angles starts a run in the global minimum's basin (F
                # is Lipschitz, the basins are wider than the grid)
                phi = np.linspace(0.0, 2.0 * np.pi, _CIRCLE_GRID, endpoint=False)
                grid = np.column_stack([np.cos(phi), np.sin(phi)])
                _, th, _ = sphere_angles(grid, Z)  # (grid, n)
                Fg = W @ (th * th).T
                starts.append(grid[best_start(Fg)])
        return np.stack(starts)

    def _solve(self, W):
        if self.Y_train_.shape[1] == 1:  # S^0 = {-1, 1}: no tangent space, compare F
            pts = np.array([[1.0], [-1.0]])
            F2 = np.stack([sphere_eval(np.tile(p, (len(W), 1)), W, self.Y_train_)[0]
                           for p in pts], axis=1)
            j = best_start(F2)
            zero = np.zeros(len(W))
            return pts[j], F2[np.arange(len(W)), j], zero, zero.astype(int)
        Y0 = self._starts(W)
        S, T = Y0.shape[:2]
        WW = np.tile(W, (S, 1))
        y, F, gnorm, n_iter = self._rgd(WW, Y0.reshape(S * T, -1))
        acc, Fc, Gc, sc, cand = self._try_cone_points(np.arange(S * T), y, F, WW)
        y[acc], F[acc] = cand, Fc
        gnorm[acc] = descent_measure(Gc, sc)
        F, gnorm, n_iter = F.reshape(S, T), gnorm.reshape(S, T), n_iter.reshape(S, T)
        pick = best_start(F.T)
        r = np.arange(T)
        return y.reshape(S, T, -1)[pick, r], F[pick, r], gnorm[pick, r], n_iter[pick, r]

    def _rgd(self, W, y):
        Z = self.Y_train_
        tol, max_iter = float(self.tol), int(self.max_iter)
        y, F, G, slack, eta, n_iter = descent_start(y, W, Z)
        gnorm = descent_measure(G, slack)
        for _ in range(max_iter):
            c = np.flatnonzero((gnorm > tol) & (eta > _MIN_STEP))
            if not c.size:
                break
            D = _escape(y[c], G[c], slack[c])
            eta[c] = np.minimum(eta[c], _MAX_ANGLE / np.maximum(2.0 * np.linalg.norm(D, axis=1),
                                                                1e-300))
            yc = y[c] + 2.0 * eta[c, None] * D
            yc /= np.linalg.norm(yc, axis=1, keepdims=True)
            Fc, Gc, sc = sphere_eval(yc, W[c], Z)
            ok = Fc <= F[c] + 1e-13 * np.maximum(1.0, np.abs(F[c]))
            acc = c[ok]
            eta[acc] = _next_step(yc[ok] - y[acc], Gc[ok] - G[acc], eta[acc])
            y[acc], F[acc], G[acc], slack[acc] = yc[ok], Fc[ok], Gc[ok], sc[ok]
            eta[c[~ok]] *= 0.5
            n_iter[c] += 1
            # a rejected step is where runs oscillate about a convex cone point: try it
            rej, Fr, Gr, sr, cand = self._try_cone_points(c[~ok], y, F, W)
            y[rej], F[rej], G[rej], slack[rej] = cand, Fr, Gr, sr
            gnorm[c] = descent_measure(G[c], slack[c])
        return y, F, gnorm, n_iter

    def _try_cone_points(self, rows, y, F, W):
        """For the given rows: the exact antipode -z_i of the negative-weight output nearest
        to the antipode of y, where F is not higher there (rows, F, G, slack, points)."""
        Z = self.Y_train_
        rows = rows[np.any(W[rows] < 0, axis=1)]
        if not rows.size:
            e = np.zeros(0, dtype=int)
            return e, np.zeros(0), np.zeros((0, Z.shape[1])), np.zeros(0), y[e]
        ip = np.where(W[rows] < 0, y[rows] @ Z.T, np.inf)
        cand = -Z[np.argmin(ip, axis=1)]
        Fc, Gc, sc = sphere_eval(cand, W[rows], Z)
        ok = Fc <= F[rows]
        return rows[ok], Fc[ok], Gc[ok], sc[ok], cand[ok]

    def to_config(self) -> dict[str, Any]:
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}


def _normalize_or(m, fallback):
    nrm = np.linalg.norm(m, axis=1)
    out = fallback.copy()
    ok = nrm > 1e-8
    out[ok] = m[ok] / nrm[ok, None]
    return out


def _escape(y, G, slack):
    """The search direction G, or, at a concave cone point where G vanishes (every direction
    descends), the tangent direction of the smallest coordinate of y."""
    stuck = (slack < 0) & (np.linalg.norm(G, axis=1) < 1e-300)
    if not np.any(stuck):
        return G
    G = G.copy()
    ys = y[stuck]
    e = np.zeros_like(ys)
    e[np.arange(len(ys)), np.argmin(np.abs(ys), axis=1)] = 1.0
    e -= np.sum(e * ys, axis=1)[:, None] * ys
    ne = np.linalg.norm(e, axis=1, keepdims=True)
    G[stuck] = e / np.where(ne > 0, ne, 1.0) * (-slack[stuck, None] / 2)
    return G


def _next_step(s, dG, eta):
    r"""Step after an accepted one: the Barzilai-Borwein step :math:`\|s\|^2 / \langle s,
    \Delta \operatorname{grad} F\rangle` (:math:`\operatorname{grad} F = -2G`) where the
    curvature along s is positive, else twice the last step; within [1e-6, 1e6].  With
    normalized weights the curvature scale is about :math:`2\sum_i w_i`, which may be far
    below 2 (weights of nearly cancelling signs): a fixed step would crawl."""
    ss = np.sum(s * s, axis=1)
    sy = -2.0 * np.sum(s * dG, axis=1)
    out = 2.0 * eta
    pos = sy > 1e-300
    out[pos] = ss[pos] / sy[pos]
    return np.clip(out, 1e-6, 1e6)
