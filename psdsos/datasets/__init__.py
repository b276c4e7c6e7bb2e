"""Seeded generators for the experiments of the papers (``random_state`` everywhere).

- :func:`make_bures_geodesic`, :func:`bures_geodesic_endpoints`: PSD matrices along a
  Bures-Wasserstein geodesic (PSD paper, section 3.3, Figures 1 and 6).
- :func:`make_convex_regression`, :func:`convex_regression_truth`: noisy samples of the convex
  but not strictly convex radial function of eq. (30) (PSD paper, section 6.1, Figures 2-4).
- :func:`make_fingerprints`, :func:`sobel_orientation`: fingerprint-like images and their
  ridge orientations (localized structured prediction paper, section 6.2).
- :func:`load_glass`: the forensic glass data, bundled (label ranking, Blondel 2019, Tables 1-2).
- :func:`load_engel`, :func:`load_production`: real economic data with a known shape, bundled
  (an Engel curve, increasing and concave; US state production, increasing and concave).
- :func:`load_macrodata`, :func:`load_macro_covariances`: US quarterly real GDP, consumption
  and investment (1959-2009, FRED via statsmodels, public domain), bundled, and their rolling
  3 x 3 covariance matrices of growth rates: a real PSD-valued time series.
- :func:`make_option_prices`, :func:`black_scholes_call`: noisy Black-Scholes call quotes,
  convex and decreasing in the strike.

Randomness only through ``psdsos._validation.check_random_state`` (never the global numpy RNG).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos._validation import RandomStateLike, check_array_2d, check_random_state, check_scalar
from psdsos.datasets._economics import (
    ENGEL_FEATURES,
    PRODUCTION_FEATURES,
    load_engel,
    load_production,
)
from psdsos.datasets._fingerprints import make_fingerprints, sobel_orientation
from psdsos.datasets._geodesic import bures_geodesic_endpoints, make_bures_geodesic
from psdsos.datasets._glass import GLASS_CLASSES, GLASS_FEATURES, load_glass
from psdsos.datasets._macro import MACRO_FEATURES, load_macro_covariances, load_macrodata
from psdsos.datasets._options import black_scholes_call, make_option_prices

__all__ = [
    "ENGEL_FEATURES",
    "GLASS_CLASSES",
    "GLASS_FEATURES",
    "MACRO_FEATURES",
    "PRODUCTION_FEATURES",
    "black_scholes_call",
    "load_engel",
    "load_glass",
    "load_macro_covariances",
    "load_macrodata",
    "load_production",
    "make_option_prices",
    "bures_geodesic_endpoints",
    "convex_regression_truth",
    "make_bures_geodesic",
    "make_convex_regression",
    "make_fingerprints",
    "sobel_orientation",
]


def _f_a(r, a):
    # (cos(a r) - 1) / a^2 = -2 sin^2(a r / 2) / a^2, without the cancellation of cos - 1.
    return 0.5 * r**2 - 2.0 * (np.sin(0.5 * a * r) / a) ** 2


def convex_regression_truth(X: ArrayLike, a: float = 1.0) -> NDArray[np.float64]:
    r"""Noiseless target of the convex-regression experiment (PSD paper, eq. 30).

    .. math::

        f_a(x) = \frac{\cos(a \|x\|) - 1}{a^2} + \frac{\|x\|^2}{2},
        \qquad f_a''(r) = 1 - \cos(a r) \ge 0 \ \text{(radially)} ,

    a convex function whose Hessian is PSD but singular at the origin and on the spheres
    :math:`\|x\| = 2\pi k / a` (there the radial curvature :math:`1 - \cos(a r)` vanishes; the
    tangential curvature :math:`1 - \sin(a r)/(a r)` stays positive). Evaluated as
    :math:`\|x\|^2/2 - 2 \sin^2(a\|x\|/2)/a^2` to avoid the cancellation in :math:`\cos - 1`.

    Parameters
    ----------
    X : array-like of shape (n_samples, d) or (n_samples,)
        Points; a 1-D array is read as ``n_samples`` points in dimension 1 (Figure 2).
    a : float, default=1.0
        Frequency, a > 0.

    Returns
    -------
    y : ndarray of shape (n_samples,)
        :math:`f_a(X_i)`.

    Raises
    ------
    ValueError
        If ``X`` is not a finite 1-D/2-D array or ``a <= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.datasets import convex_regression_truth
    >>> r = 2 * np.pi
    >>> np.allclose(convex_regression_truth([[r, 0.0]]), r**2 / 2)
    True
    """
    X = check_array_2d(X, "X", allow_1d=True)
    a = check_scalar(a, "a", lower=0.0, lower_inclusive=False)
    return _f_a(np.linalg.norm(X, axis=1), a)


def make_convex_regression(n_samples: int, d: int = 2, *, a: float = 1.0,
                           b: float | None = None, noise: float = 0.1,
                           random_state: RandomStateLike = None
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Noisy samples of a convex, not strictly convex function (PSD paper, eq. 30).

    .. math::

        X_i \sim \mathcal U([-b, b]^d), \qquad
        Y_i = f_a(\|X_i\|) + \eta\, \varepsilon_i, \qquad
        \varepsilon_i \overset{iid}{\sim} \mathcal N(0, 1),

    with :math:`f_a(r) = (\cos(a r) - 1)/a^2 + r^2/2` (:func:`convex_regression_truth`) and
    :math:`\eta` = ``noise``. All of ``X`` is drawn before the noise, so the inputs for a
    given seed do not depend on ``noise``; draw a test set (the paper evaluates the MSE on
    10000 extra points) with another seed.

    Parameters
    ----------
    n_samples : int
        Number of samples, >= 1.
    d : int, default=2
        Input dimension, >= 1 (the paper's Figure 3 uses d = 2).
    a : float, default=1.0
        Frequency a > 0 of :math:`f_a` (Figures 3 and 4 use a = 1).
    b : float, default=None
        Half-width of the sampling cube, b > 0. The paper does not state it; ``None`` means
        :math:`b = 2\pi / a`: the cube then contains the ball of radius :math:`2\pi/a`, so
        besides the origin the whole sphere :math:`\|x\| = 2\pi/a`, where the Hessian is
        singular, lies in the domain, and along each axis :math:`f_a'' = 1 - \cos(a r)` runs
        through a full period on each side of 0 (the shape of Figure 2).
    noise : float, default=0.1
        Noise level :math:`\eta \ge 0`.
    random_state : None, int or numpy.random.Generator, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, d)
        Inputs.
    y : ndarray of shape (n_samples,)
        Noisy outputs.

    Raises
    ------
    ValueError
        For ``n_samples < 1``, ``d < 1``, ``a <= 0``, ``b <= 0``, ``noise < 0`` or an invalid
        ``random_state``.

    Examples
    --------
    >>> from psdsos.datasets import make_convex_regression
    >>> X, y = make_convex_regression(50, 2, noise=0.1, random_state=0)
    >>> X.shape, y.shape
    ((50, 2), (50,))
    """
    n_samples = check_scalar(n_samples, "n_samples", lower=1, integer=True)
    d = check_scalar(d, "d", lower=1, integer=True)
    a = check_scalar(a, "a", lower=0.0, lower_inclusive=False)
    b = 2.0 * np.pi / a if b is None else check_scalar(b, "b", lower=0.0, lower_inclusive=False)
    noise = check_scalar(noise, "noise", lower=0.0)
    rng = check_random_state(random_state)
    X = rng.uniform(-b, b, size=(n_samples, d))
    eps = rng.standard_normal(n_samples)
    y = _f_a(np.linalg.norm(X, axis=1), a) + noise * eps
    return X, y
