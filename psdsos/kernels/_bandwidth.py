"""Kernel bandwidths: the usable range of ``sigma`` and ``sigma="scale"`` from the data."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_array_2d, check_scalar, scaled_mean_std

#: Usable bandwidths: the derivatives scale like ``sigma**-4`` (:meth:`Kernel.hessian_hessian`)
#: and the values like ``||x - y||**2 / sigma**2``; inside ``[SIGMA_MIN, SIGMA_MAX]`` both
#: powers are finite, normal floats (``1e75**4 = 1e300``), outside they overflow or underflow.
SIGMA_MIN, SIGMA_MAX = 1e-75, 1e75


def check_sigma(sigma: float) -> float:
    """Return ``sigma`` as a float in ``[SIGMA_MIN, SIGMA_MAX]`` or raise ValueError naming it.

    A bandwidth outside this range is not representable by the kernel's derivative formulas
    (``sigma**4`` or ``sigma**-4`` leaves the float range); rescale the inputs instead.
    """
    sigma = check_scalar(sigma, "sigma", lower=0.0, lower_inclusive=False)
    if not SIGMA_MIN <= sigma <= SIGMA_MAX:
        raise ValueError(
            f"sigma (the kernel bandwidth) must be in [{SIGMA_MIN:g}, {SIGMA_MAX:g}], got "
            f"{sigma!r}: the kernel's derivatives scale like sigma**-4, which leaves the "
            "floating-point range outside it; rescale the inputs X instead"
        )
    return sigma


def scale_bandwidth(X: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
    """Bandwidth ``sigma="scale"`` from the inputs' spread, as scikit-learn's ``gamma="scale"``.

    scikit-learn's ``SVC(gamma="scale")`` uses :math:`\\gamma = 1 / (p \\operatorname{Var}(X))`
    in :math:`k(x, y) = e^{-\\gamma\\|x - y\\|^2}`, with ``Var(X) = X.var()`` the variance
    of all the entries of ``X`` together (one number, not per feature) and ``p`` the number
    of features.  Our Gaussian kernel :math:`e^{-\\|x - y\\|^2 / (2\\sigma^2)}` equals it
    for :math:`\\gamma = 1 / (2\\sigma^2)`, hence

    .. math::

        \\sigma_{\\text{scale}} = \\sqrt{\\frac{p \\operatorname{Var}(X)}{2}},

    half the root-mean-square distance between two independent training points
    (:math:`\\mathbb E\\|x - x'\\|^2 = 2 p \\operatorname{Var}` for centred features of equal
    spread).  The same :math:`\\sigma` is used for every kernel of this module.  It is
    proportional to the scale of ``X``: ``scale_bandwidth(a * X + b) == |a| *
    scale_bandwidth(X)`` for scalars ``a != 0``, ``b``, so an estimator with
    ``sigma="scale"`` sees the same kernel matrix whatever the units of the (common) scale.
    The variance is computed on ``X / max|X|`` and scaled back, so it neither overflows nor
    underflows for inputs of magnitude 1e-150 or 1e150.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training inputs (finite).
    sample_weight : array-like of shape (n_samples,) or None
        Positive row weights: the variance of the data set whose row i is repeated
        ``sample_weight[i]`` times (for integer weights the bandwidth of the duplicated
        rows; scaling all weights changes nothing).  Validated by the caller.

    Returns
    -------
    sigma : float
        Finite and > 0.

    Raises
    ------
    ValueError
        If ``X`` is not a finite 2-D array, or has zero spread (all entries equal): no scale
        can be derived; give a numeric ``sigma``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import scale_bandwidth
    >>> X = np.array([[0.0], [2.0]])          # Var(X) = 1, p = 1
    >>> print(round(scale_bandwidth(X), 6))          # sqrt(1 / 2)
    0.707107
    """
    X = check_array_2d(X, "X")
    if sample_weight is None:
        sd = scaled_mean_std(X)[1]
    else:
        sd = scaled_mean_std(X.ravel(), weights=np.repeat(sample_weight, X.shape[1]))[1]
    sigma = sd * np.sqrt(X.shape[1] / 2.0)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(
            f"X has zero spread (all {X.size} entries equal {X.flat[0]!r}): sigma='scale' "
            "(scale_bandwidth) derives the kernel bandwidth from the spread of the training "
            "inputs; give a numeric sigma > 0"
        )
    return float(sigma)
