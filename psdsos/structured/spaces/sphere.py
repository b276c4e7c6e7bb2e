r"""The unit sphere with the squared geodesic distance :math:`\arccos^2` (Rudi et al.,
"Manifold Structured Prediction", eq. 17, Table 1): Riemannian gradient descent with the
normalization retraction.
"""

from __future__ import annotations

import numpy as np

from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite, policy_weights
from psdsos.structured.spaces._manifold import _MIN_STEP, _RGDOptions, _warn_not_converged

__all__ = ["SphereSpace"]


#: Sphere: within this sine of the angle to the antipode of z_i the term arccos^2 is treated
#: as its (nonsmooth) cone point, see SphereSpace.
_KINK_TOL = 1e-7


class SphereSpace(_RGDOptions, OutputSpace):
    r"""Unit vectors of :math:`S^{k-1}` with the squared geodesic distance (eq. 17, Table 1).

    .. math::

        \Delta(z, y) = \arccos(\langle z, y\rangle)^2, \qquad
        F(y) = \sum_i w_i \arccos(\langle y, z_i\rangle)^2, \qquad
        \operatorname{grad} F(y) = -2\sum_i w_i \operatorname{Log}_y(z_i)
          = -2 \sum_i w_i \frac{\theta_i}{\sin\theta_i} (I - y y^\top) z_i,

    :math:`\theta_i = \arccos\langle y, z_i\rangle` (Table 1's gradient, written with the
    logarithm map).

    The antipode :math:`-z_i` (cut locus) is a cone point of :math:`\arccos^2(\langle\cdot,
    z_i\rangle)`: near it :math:`\theta_i^2 \approx \pi^2 - 2\pi\rho`, with :math:`\rho` the
    distance to :math:`-z_i`.  For a negative weight this is a convex kink and minimizers of F
    do sit there (observed with SELF weights).  Within :math:`\sin\theta_i \le 10^{-7}` of the
    antipode the term is left out of the gradient and, for :math:`w_i < 0`, its subdifferential
    (a ball of radius :math:`2\pi|w_i|`) is accounted for: the stationarity measure used for
    stopping (``grad_norm_``) is the norm of the least-norm element of the subdifferential,
    :math:`\max(0, \|\operatorname{grad} F_{\text{smooth}}\| - 2\pi\sum_{\text{kinks}}
    |w_i|)` (:meth:`stationarity`); it is the Riemannian gradient norm away from the kinks.

    Decoding ("rgd"): :math:`y \leftarrow R_y(-\eta \operatorname{grad} F) =
    (y + 2\eta \sum_i w_i \operatorname{Log}_y(z_i)) / \|\cdot\|` (the normalization
    retraction of Table 1), batched over test points, from the normalized extrinsic mean
    :math:`\sum_i w_i z_i / \|\sum_i w_i z_i\|` (the training output of largest weight if
    that sum vanishes), step 1/2 halved per test point whenever F would increase (doubled
    back up to 1/2 after an accepted step), stopped
    when :math:`\|\operatorname{grad} F(y)\| \le` ``tol``.

    Negative-weight policy: :func:`policy_weights` (``weights="signed"``: signed normalized
    weights when :math:`\sum\alpha > 0` and :math:`\|\alpha\|_1 \le 4\sum\alpha` -- the sphere
    is compact so a minimizer exists; else the positive part; else uniform).

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    max_iter : int, default=200
    tol : float, default=1e-8
        Stopping threshold on the Riemannian gradient norm.
    """

    name = "sphere"
    decode_methods = ("rgd",)
    #: accepted deviation of a training output from unit norm (renormalized on input)
    unit_tol = 1e-6

    def __init__(self, *, weights="signed", max_iter=200, tol=1e-8):
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y, name="Y"):
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

    def fit(self, Y_train):
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        return self

    def loss(self, Y_true, Y_pred):
        r"""Squared geodesic distances :math:`\arccos(\langle y, y'\rangle)^2`, shape (n,)."""
        T = as_finite(Y_true, "Y_true")
        P = as_finite(Y_pred, "Y_pred")
        if T.shape != P.shape or T.ndim != 2:
            raise ValueError(f"Y_true and Y_pred must have the same (n, k) shape, got "
                             f"{T.shape} and {P.shape}")
        T = T / np.linalg.norm(T, axis=1, keepdims=True)
        P = P / np.linalg.norm(P, axis=1, keepdims=True)
        d = 2.0 * np.arctan2(np.linalg.norm(T - P, axis=1), np.linalg.norm(T + P, axis=1))
        return d * d

    def project(self, Z):
        """KRLS projection: rows normalized (the first basis vector for a zero row)."""
        Z = np.array(as_finite(Z, "Z"))
        nrm = np.linalg.norm(Z, axis=1)
        zero = nrm <= 1e-300
        Z[zero] = 0.0
        Z[zero, 0] = 1.0
        nrm[zero] = 1.0
        return Z / nrm[:, None]

    def objective(self, y, w):
        """F(y) per row of ``y`` (weights used as given)."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        return self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)[0]

    def stationarity(self, y, w):
        """max(0, ||grad of the smooth terms|| - kink slack): 0 at a stationary point."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, slack = self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)
        return np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)

    def riemannian_gradient(self, y, w):
        """grad F(y) = -2 sum_i w_i Log_y(z_i), shape (m, k)."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        return -2.0 * self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)[1]

    def _eval(self, y, W):
        """F, G = sum_i w_i Log_y(z_i) over the smooth terms, and the kink slack."""
        Z = self.Y_train_
        ip = np.clip(y @ Z.T, -1.0, 1.0)
        sn = np.sqrt(np.maximum(1.0 - ip * ip, 0.0))
        theta = np.arctan2(sn, ip)
        kink = (ip < 0) & (sn <= _KINK_TOL)
        ok = (sn > 1e-300) & ~kink
        c = np.where(ip > 0, 1.0, 0.0)  # limit of theta / sin(theta) at theta = 0
        np.divide(theta, sn, out=c, where=ok)
        c[kink] = 0.0
        F = np.sum(W * theta * theta, axis=1)
        wc = W * c
        G = wc @ Z - np.sum(wc * ip, axis=1)[:, None] * y  # sum_i w_i Log_y(z_i)
        G = G - np.sum(G * y, axis=1)[:, None] * y  # exactly tangent
        slack = 2.0 * np.pi * np.sum(np.where(kink, np.maximum(-W, 0.0), 0.0), axis=1)
        return F, G, slack

    def decode(self, alpha, method="auto"):
        """Predictions of eq. 2 by batched RGD, shape (n_test, k), unit rows."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        return self._rgd(W, self._init(W))

    def _init(self, W):
        m = W @ self.Y_train_
        nrm = np.linalg.norm(m, axis=1)
        small = nrm < 1e-8
        m[small] = self.Y_train_[np.argmax(W[small], axis=1)]
        nrm[small] = 1.0
        return m / nrm[:, None]

    def _rgd(self, W, y):
        tol, max_iter = float(self.tol), int(self.max_iter)
        T = len(W)
        y = y.copy()
        F, G, slack = self._eval(y, W)
        eta = np.full(T, 0.5)
        n_iter = np.zeros(T, dtype=int)
        gnorm = np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)
        for _ in range(max_iter):
            c = np.flatnonzero((gnorm > tol) & (eta > _MIN_STEP))
            if not c.size:
                break
            yc = y[c] + 2.0 * eta[c, None] * G[c]
            yc /= np.linalg.norm(yc, axis=1, keepdims=True)
            Fc, Gc, sc = self._eval(yc, W[c])
            ok = Fc <= F[c] + 1e-13 * np.maximum(1.0, np.abs(F[c]))
            acc = c[ok]
            y[acc], F[acc], G[acc], slack[acc] = yc[ok], Fc[ok], Gc[ok], sc[ok]
            eta[acc] = np.minimum(2.0 * eta[acc], 0.5)
            eta[c[~ok]] *= 0.5
            n_iter[c] += 1
            gnorm = np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, tol, max_iter)
        return y

    def to_config(self):
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}
