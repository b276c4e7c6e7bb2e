r"""Histograms with the Fisher-Rao geometry, through the square-root map onto the sphere
(Rudi et al., "Manifold Structured Prediction", section 4.4).
"""

from __future__ import annotations

import numpy as np

from psdsos.structured._base import OutputSpace, resolve_method
from psdsos.structured._common import as_finite, check_float
from psdsos.structured.polytopes import project_simplex
from psdsos.structured.spaces._manifold import _RGDOptions
from psdsos.structured.spaces.sphere import SphereSpace

__all__ = ["FisherSimplexSpace"]


class FisherSimplexSpace(_RGDOptions, OutputSpace):
    r"""Histograms with the Fisher-Rao geometry, through the square-root map (section 4.4).

    .. math::

        \pi(y) = (\sqrt{y_1}, \dots, \sqrt{y_k}) \in S^{k-1}, \qquad
        \Delta(y, y') = \arccos\Big(\sum_j \sqrt{y_j y'_j}\Big)^2
                      = d_{S^{k-1}}(\pi(y), \pi(y'))^2,

    (the paper's normalization of the Fisher-Rao distance, which is twice this arccos).
    Training outputs are first floored at ``eps`` and renormalized, :math:`\mathcal Y =
    \Delta_\epsilon` with :math:`\epsilon = 10^{-5}` as in the paper's experiment, so that
    their images lie inside the open positive orthant of the sphere.  Decoding runs the
    :class:`SphereSpace` RGD on :math:`\pi(y_i)` and maps back with
    :math:`\pi^{-1}(z) = z \odot z`, which lies on the simplex for every unit z.  With
    non-negative weights the decoded z stays in the spherical cap
    :math:`\{z_j \ge \sqrt{\epsilon'}\}` of the floored outputs (geodesically convex), so the
    prediction is in :math:`\Delta_\epsilon` up to rounding.

    Negative-weight policy: that of :class:`SphereSpace` (``weights="signed"`` by default);
    with signed weights the decoded histogram is on the simplex but may fall below ``eps``.

    Parameters
    ----------
    eps : float, default=1e-5
        Floor of the training histograms.
    weights, max_iter, tol : see :class:`SphereSpace`.
    """

    name = "fisher_simplex"
    decode_methods = ("rgd",)

    def __init__(self, *, eps=1e-5, weights="signed", max_iter=200, tol=1e-8):
        self.eps = eps
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y, name="Y"):
        """(n, k) histograms: non-negative rows summing to 1 (to 1e-8)."""
        A = as_finite(Y, name)
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(f"{name} must have shape (n_samples, k), got {A.shape}")
        if A.size and (A.min() < -1e-12 or np.abs(A.sum(axis=1) - 1.0).max() > 1e-8):
            raise ValueError(
                f"{name} rows must be histograms: non-negative entries summing to 1"
            )
        return np.maximum(A, 0.0)

    def floor(self, Y):
        """Histograms floored at ``eps`` and renormalized (the set Delta_eps)."""
        Yf = np.maximum(Y, float(self.eps))
        return Yf / Yf.sum(axis=1, keepdims=True)

    def fit(self, Y_train):
        self._check_options()
        eps = check_float(self.eps, "eps", positive=True)
        self.Y_train_ = self.check_Y(Y_train, "Y")
        if eps * self.Y_train_.shape[1] >= 1.0:
            raise ValueError(f"eps must be < 1/k = {1.0 / self.Y_train_.shape[1]:g}, got {eps}")
        self.sphere_ = SphereSpace(weights=self.weights, max_iter=self.max_iter, tol=self.tol)
        self.sphere_.fit(np.sqrt(self.floor(self.Y_train_)))
        return self

    def loss(self, Y_true, Y_pred):
        """Squared Fisher-Rao (paper's normalization) distances, shape (n,)."""
        T = np.sqrt(np.maximum(as_finite(Y_true, "Y_true"), 0.0))
        P = np.sqrt(np.maximum(as_finite(Y_pred, "Y_pred"), 0.0))
        return SphereSpace.loss(self, T, P)

    def project(self, Z):
        """KRLS projection: Euclidean projection of each row onto the simplex."""
        return project_simplex(Z)

    def decode(self, alpha, method="auto"):
        """Histograms of eq. 2, shape (n_test, k)."""
        resolve_method(self, method)
        sp = self.sphere_
        sp.weights, sp.max_iter, sp.tol = self.weights, self.max_iter, self.tol
        z = sp.decode(alpha)
        self.n_iter_, self.grad_norm_ = sp.n_iter_, sp.grad_norm_
        y = z * z
        return y / y.sum(axis=1, keepdims=True)

    def to_config(self):
        return {"eps": float(self.eps), "weights": self.weights, "max_iter": int(self.max_iter),
                "tol": float(self.tol)}
