r"""Synthetic fingerprint-like images and their ridge orientations (localized paper, section 6.2).

The FVC2004 fingerprints of the paper are not redistributable; these images imitate them:
ridges of a fixed period that follow a smooth random orientation field with singular points
(cores and deltas), obtained by Gabor-filtering white noise along the field, and the ridge
direction computed from a 7 x 7 Sobel filter, as in the paper.  Images are periodic (the
paper's footnote 2: patches wrap around the borders).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import ndimage

from psdsos._validation import RandomStateLike, check_random_state, check_scalar

__all__ = ["make_fingerprints", "sobel_orientation"]

#: 7-tap binomial smoothing and derivative filters of the 7 x 7 Sobel operator.
_SMOOTH7 = np.array([1.0, 6.0, 15.0, 20.0, 15.0, 6.0, 1.0]) / 64.0
_DERIV7 = np.array([1.0, 4.0, 5.0, 0.0, -5.0, -4.0, -1.0]) / 32.0


def sobel_orientation(images: ArrayLike, smooth: float = 2.0) -> np.ndarray:
    r"""Ridge orientation of images from the 7 x 7 Sobel gradient (angles modulo pi).

    With :math:`(g_x, g_y)` the 7 x 7 Sobel gradient (binomial smoothing
    :math:`[1, 6, 15, 20, 15, 6, 1]/64` times the binomial derivative
    :math:`[1, 4, 5, 0, -5, -4, -1]/32`, periodic borders), the gradient direction modulo
    pi is averaged in the doubled-angle representation over a Gaussian window of standard
    deviation ``smooth`` pixels, and turned by :math:`\pi/2` (ridges are orthogonal to the
    gradient):

    .. math::

        \theta = \tfrac12 \arg\big(G_s * (g_x + i g_y)^2\big) + \tfrac{\pi}{2}
        \pmod \pi \in (-\pi/2, \pi/2].

    Parameters
    ----------
    images : array-like of shape (n, H, W)
    smooth : float, default=2.0
        Standard deviation (pixels) of the averaging window, >= 0 (0: no averaging).

    Returns
    -------
    theta : ndarray of shape (n, H, W)
    """
    A = np.asarray(images, dtype=np.float64)
    if A.ndim != 3 or not np.all(np.isfinite(A)):
        raise ValueError(f"images must be a finite array of shape (n, H, W), got {A.shape}")
    smooth = check_scalar(smooth, "smooth", lower=0.0)
    gx = ndimage.convolve1d(ndimage.convolve1d(A, _SMOOTH7, axis=1, mode="wrap"),
                            _DERIV7, axis=2, mode="wrap")
    gy = ndimage.convolve1d(ndimage.convolve1d(A, _SMOOTH7, axis=2, mode="wrap"),
                            _DERIV7, axis=1, mode="wrap")
    c = (gx + 1j * gy) ** 2
    if smooth > 0:
        c = (ndimage.gaussian_filter(c.real, (0, smooth, smooth), mode="wrap")
             + 1j * ndimage.gaussian_filter(c.imag, (0, smooth, smooth), mode="wrap"))
    theta = 0.5 * np.angle(c) + np.pi / 2
    z = np.mod(theta + np.pi / 2, np.pi) - np.pi / 2
    return np.where(z == -np.pi / 2, np.pi / 2, z)


def _orientation_field(rng, H, W, scale):
    """Smooth random orientation field: half the argument of a smooth complex Gaussian field
    (its zeros are the singular points, like cores and deltas)."""
    f = rng.standard_normal((H, W)) + 1j * rng.standard_normal((H, W))
    ky = np.fft.fftfreq(H)[:, None]
    kx = np.fft.fftfreq(W)[None, :]
    filt = np.exp(-2 * (np.pi * scale) ** 2 * (kx**2 + ky**2))
    g = np.fft.ifft2(np.fft.fft2(f) * filt)
    return 0.5 * np.angle(g)


def make_fingerprints(n_images: int, shape: tuple[int, int] = (96, 128), *,
                      period: float = 8.0, field_scale: float | None = None,
                      n_orientations: int = 16, n_iter: int = 4,
                      random_state: RandomStateLike = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Fingerprint-like images and their ridge orientations (localized paper, section 6.2).

    For each image: an orientation field :math:`\theta(u) = \tfrac12 \arg g(u)`, with g a
    complex Gaussian random field smoothed at the scale ``field_scale`` (its zeros are
    singular points, as the cores and deltas of fingerprints); white noise is then filtered
    ``n_iter`` times, each pixel taking the response of the Gabor filter (period ``period``,
    envelope of standard deviation ``period / 2``) oriented along :math:`\theta(u)` (nearest of
    ``n_orientations`` directions), and squashed by :math:`\tanh` of the standardized response
    (periodic borders).  The output is the ridge direction of the 7 x 7 Sobel filter of the
    image (:func:`sobel_orientation`), angles modulo pi, for the output space
    "orientation".

    Parameters
    ----------
    n_images : int
        Number of images, >= 1.
    shape : (int, int), default=(96, 128)
        (H, W); the paper's images are 480 x 640.
    period : float, default=8.0
        Ridge period in pixels, >= 3.
    field_scale : float or None, default=None
        Correlation length (pixels) of the orientation field; None: min(H, W) / 6.
    n_orientations : int, default=16
        Directions of the Gabor filter bank, >= 4.
    n_iter : int, default=4
        Filtering rounds, >= 1.
    random_state : None, int or Generator

    Returns
    -------
    X : ndarray of shape (n_images, H, W)
        Images, values in (-1, 1).
    Y : ndarray of shape (n_images, H, W)
        Ridge orientations in (-pi/2, pi/2] (:func:`sobel_orientation` of X).
    theta : ndarray of shape (n_images, H, W)
        The orientation fields the ridges were drawn along.

    Examples
    --------
    >>> from psdsos.datasets import make_fingerprints
    >>> X, Y, theta = make_fingerprints(2, (40, 48), random_state=0)
    >>> X.shape, Y.shape
    ((2, 40, 48), (2, 40, 48))
    """
    n_images = check_scalar(n_images, "n_images", lower=1, integer=True)
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
        raise ValueError(f"shape must be (H, W), got {shape!r}")
    H = check_scalar(shape[0], "shape[0]", lower=8, integer=True)
    W = check_scalar(shape[1], "shape[1]", lower=8, integer=True)
    period = check_scalar(period, "period", lower=3.0)
    scale = (min(H, W) / 6.0 if field_scale is None
             else check_scalar(field_scale, "field_scale", lower=0.0, lower_inclusive=False))
    K = check_scalar(n_orientations, "n_orientations", lower=4, integer=True)
    n_iter = check_scalar(n_iter, "n_iter", lower=1, integer=True)
    rng = check_random_state(random_state)
    ky = np.fft.fftfreq(H)[:, None]
    kx = np.fft.fftfreq(W)[None, :]
    f0, s = 1.0 / period, period / 2.0
    phis = np.pi * np.arange(K) / K
    # Gabor transfer functions: ridges along phi have wave vector orthogonal to phi
    bank: Any = []
    for phi in phis:
        nx, ny = -np.sin(phi), np.cos(phi)
        kn = kx * nx + ky * ny
        kt = -kx * ny + ky * nx
        g = -2 * (np.pi * s) ** 2
        bank.append(np.exp(g * ((kn - f0) ** 2 + kt**2)) + np.exp(g * ((kn + f0) ** 2 + kt**2)))
    bank = np.array(bank)
    X = np.empty((n_images, H, W))
    T = np.empty((n_images, H, W))
    for t in range(n_images):
        theta = _orientation_field(rng, H, W, scale)
        k_of = np.mod(np.rint(theta / (np.pi / K)), K).astype(int)
        img = rng.standard_normal((H, W))
        for _ in range(n_iter):
            F = np.fft.fft2(img)
            resp = np.real(np.fft.ifft2(F[None] * bank))  # (K, H, W)
            img = np.take_along_axis(resp, k_of[None], axis=0)[0]
            img = np.tanh(2.0 * (img - img.mean()) / (img.std() + 1e-300))
        X[t] = img
        T[t] = theta
    return X, sobel_orientation(X), T
