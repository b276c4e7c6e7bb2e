"""Kernel bandwidths: the usable range of ``sigma``, ``sigma="scale"`` from the data, and
the warning when one bandwidth cannot serve every feature (:class:`FeatureScaleWarning`)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from types import FrameType

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


#: Largest ratio of the features' standard deviations (non-constant features) before
#: :func:`check_feature_scales` warns.  The radial kernels share one bandwidth sigma across
#: the features, and sigma="scale" is sqrt(p Var(X) / 2) >= s_max / sqrt(2) (s_max the
#: largest feature's standard deviation); a feature of standard deviation s moves the exponent
#: ||x - y||^2 / (2 sigma^2) by about 2 s^2 / (2 sigma^2) <= 2 (s / s_max)^2 between two
#: typical points.  At s_max / s = 100 that is <= 2e-4: across its whole range such a feature
#: changes the kernel by ~1e-4 relative, so the fit all but ignores it (and a sigma small
#: enough for it makes the kernel of the large features ~0 off the diagonal).  Below 100
#: (units that differ by a factor of 10, say) the features still count.
FEATURE_SCALE_RATIO = 100.0


class FeatureScaleWarning(UserWarning):
    """The features' spreads differ so much that one kernel bandwidth cannot serve them all.

    Issued at fit time by the kernel estimators when the ratio of the largest to the smallest
    standard deviation of the (non-constant) training features exceeds 100: the features of
    small spread then barely change the kernel and are effectively ignored.  Standardize the
    features first, e.g. ``make_pipeline(StandardScaler(), estimator)`` (scikit-learn's
    ``sklearn.pipeline.make_pipeline`` and ``sklearn.preprocessing.StandardScaler``).  An
    affine change of each feature keeps convexity, monotonicity and PSD-valuedness, so the
    shape-constrained estimators stay what they are in the standardized features.
    """


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside psdsos and scikit-learn (the user's
    ``fit`` call, also through a Pipeline), counted from the caller of this function's
    caller."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in (
            "psdsos", "sklearn"):
        frame, level = frame.f_back, level + 1
    return level


def check_feature_scales(X: ArrayLike, *, owner: str,
                         feature_names: Sequence[str] | None = None) -> None:
    """Warn (:class:`FeatureScaleWarning`) if the features' spreads differ by more than 100.

    The ratio is that of the largest to the smallest standard deviation of the columns of
    ``X``, constant columns left out (they do not change the kernel at all); one feature or
    fewer than two non-constant ones never warn.  The message names the features whose
    standard deviation is below 1/100 of the largest (by ``feature_names`` when given, else
    by index) and says what to do.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The training inputs, finite (validated by the caller).
    owner : str
        The estimator's class name, for the message.
    feature_names : sequence of str, optional
        The features' names (``feature_names_in_`` of a DataFrame fit).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 2:
        return
    a = np.max(np.abs(X), axis=0)
    sd = np.asarray(scaled_mean_std(X, axis=0)[1], dtype=np.float64)
    varying = sd > 1e-12 * a  # constant columns (up to the rounding of their mean) left out
    if np.count_nonzero(varying) < 2:
        return
    largest = float(np.max(sd[varying]))
    ratio = largest / float(np.min(sd[varying]))
    if not ratio > FEATURE_SCALE_RATIO:
        return
    small = np.flatnonzero(varying & (sd * FEATURE_SCALE_RATIO < largest))
    big = int(np.argmax(np.where(varying, sd, -np.inf)))

    def named(j):
        return repr(str(feature_names[j])) if feature_names is not None else str(int(j))

    listed = ", ".join(named(j) for j in small[:10]) + (", ..." if small.size > 10 else "")
    which, *verbs = (("feature", "changes", "is") if small.size == 1
                     else ("features", "change", "are"))
    warnings.warn(
        f"{owner}: the features' standard deviations differ by a factor of {ratio:.3g} (more "
        f"than {FEATURE_SCALE_RATIO:g}; largest {largest:.3g}, feature {named(big)}): with one "
        f"kernel bandwidth for all of them, {which} {listed} (standard deviation below "
        f"1/{FEATURE_SCALE_RATIO:g} of the largest) barely {verbs[0]} the kernel and "
        f"{verbs[1]} effectively ignored.  Standardize the features first: "
        f"make_pipeline(StandardScaler(), {owner}(...)) (sklearn.pipeline.make_pipeline, "
        "sklearn.preprocessing.StandardScaler)",
        FeatureScaleWarning, stacklevel=_caller_stacklevel())
