"""Input validation shared by every layer.

Every public entry point validates its arguments here so that bad input raises a
``ValueError`` naming the argument and what was expected, never a traceback from deep
inside numpy.  This module imports nothing from psdsos.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_array_2d",
    "check_psd_targets",
    "check_scalar",
    "check_random_state",
    "check_choice",
]


def _check_real(A, name):
    """Refuse complex input: converting it to float would drop the imaginary part."""
    if np.iscomplexobj(A):
        raise ValueError(
            f"{name} must hold real numbers, got a complex array (its imaginary part would be "
            "dropped); pass the real part explicitly if that is what you mean"
        )


def check_array_2d(X, name="X", *, min_samples=1, allow_1d=False, dtype=np.float64):
    """Return ``X`` as a finite float array of shape (n_samples, n_features).

    Parameters
    ----------
    X : array-like
        The input.
    name : str
        Argument name used in error messages.
    min_samples : int
        Smallest accepted number of rows.
    allow_1d : bool
        If True, a 1-D array is read as one feature per sample (shape (n, 1)).
    """
    _check_real(X, name)
    try:
        A = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(X).__name__}: {exc}") from None
    if A.ndim == 1 and allow_1d:
        A = A[:, None]
    if A.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features), got shape {A.shape}"
        )
    if A.shape[0] < min_samples:
        raise ValueError(f"{name} must have at least {min_samples} sample(s), got {A.shape[0]}")
    if A.shape[1] < 1:
        raise ValueError(f"{name} must have at least one feature, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return A


def check_psd_targets(M, name="M", *, n_samples=None, rtol=1e-8):
    """Return ``M`` as a finite, symmetric float array of shape (n_samples, d, d).

    Symmetric indefinite targets are accepted (noisy measurements of PSD matrices).
    Symmetry is checked to relative tolerance ``rtol`` of the largest entry and the exact
    symmetric part is returned.  Complex input is refused (its imaginary part would be
    dropped silently by a float conversion).
    """
    _check_real(M, name)
    try:
        A = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array, got {type(M).__name__}: {exc}") from None
    if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples, d, d), got shape {A.shape}")
    if n_samples is not None and A.shape[0] != n_samples:
        raise ValueError(
            f"X and {name} have different numbers of samples: {n_samples} and {A.shape[0]}"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    scale = max(1.0, float(np.abs(A).max()) if A.size else 1.0)
    asym = float(np.abs(A - np.swapaxes(A, 1, 2)).max()) if A.size else 0.0
    if asym > rtol * scale:
        raise ValueError(
            f"{name} must hold symmetric matrices; largest asymmetry |M - M^T| = {asym:.3g}"
        )
    return 0.5 * (A + np.swapaxes(A, 1, 2))


def check_scalar(value, name, *, lower=None, upper=None, lower_inclusive=True,
                 upper_inclusive=True, integer=False, allow_none=False):
    """Validate a real (or integer) scalar against optional bounds and return it."""
    if value is None and allow_none:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if not integer and not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if lower is not None:
        bad = value < lower if lower_inclusive else value <= lower
        if bad:
            op = ">=" if lower_inclusive else ">"
            raise ValueError(f"{name} must be {op} {lower}, got {value!r}")
    if upper is not None:
        bad = value > upper if upper_inclusive else value >= upper
        if bad:
            op = "<=" if upper_inclusive else "<"
            raise ValueError(f"{name} must be {op} {upper}, got {value!r}")
    return int(value) if integer else float(value)


def check_choice(value, name, choices):
    """Check that ``value`` is one of ``choices`` (strings compared case-insensitively)."""
    if isinstance(value, str):
        for c in choices:
            if isinstance(c, str) and value.lower() == c.lower():
                return c
    raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def check_random_state(random_state):
    """Return a ``numpy.random.Generator`` from None, an int seed or a Generator.

    ``None`` gives a fresh unseeded generator (never the global numpy RNG).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ValueError(
        f"random_state must be None, a non-negative int or a numpy Generator, got {random_state!r}"
    )
