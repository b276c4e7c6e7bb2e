"""Input validation shared by every layer.

Every public entry point validates its arguments here so that bad input raises a
``ValueError`` naming the argument and what was expected, never a traceback from deep
inside numpy.  This module imports nothing from psdsos.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "caller_stacklevel",
    "check_array_2d",
    "check_psd_targets",
    "check_scalar",
    "check_random_state",
    "check_choice",
]


# ---- type aliases of the public API's annotations ------------------------------------------
#: A float64 array returned by psdsos.
FloatArray = NDArray[np.float64]
#: A file path accepted by save and load.
PathLike = str | os.PathLike
#: Seeds: None (fresh unseeded generator), an int seed or a numpy Generator.
RandomStateLike = int | np.random.Generator | None


def _complex_error(name):
    return ValueError(
        f"{name} must hold real numbers, got a complex array (Complex data not supported: "
        "its imaginary part would be dropped); pass the real part explicitly if that is "
        "what you mean"
    )


def _check_real(A, name):
    """Refuse complex input: converting it to float would drop the imaginary part."""
    if np.iscomplexobj(A):
        raise _complex_error(name)


@overload
def validate_data(estimator: Any, X: ArrayLike,
                  y: Literal["no_validation"] = "no_validation", **kwargs: Any) -> np.ndarray: ...
@overload
def validate_data(estimator: Any, X: ArrayLike, y: ArrayLike | None,
                  **kwargs: Any) -> tuple[np.ndarray, np.ndarray]: ...
def validate_data(estimator: Any, X: Any = "no_validation", y: Any = "no_validation",
                  **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data``, after refusing complex ``X`` or ``y`` with a
    ValueError naming the argument (scikit-learn's own message prints the array instead)."""
    from sklearn.utils.validation import validate_data as _sk_validate_data

    for name, A in (("X", X), ("y", y)):
        if A is None or isinstance(A, str):
            continue
        dtype = getattr(A, "dtype", None)
        if not isinstance(dtype, np.dtype):
            try:  # through __array__ (objects that refuse numpy's array functions too)
                dtype = np.asarray(A).dtype
            except (TypeError, ValueError):  # ragged or odd input: scikit-learn's message
                continue
        if dtype.kind == "c":
            raise _complex_error(name)
    return _sk_validate_data(estimator, X, y, **kwargs)


def check_array_2d(X: ArrayLike, name: str = "X", *, min_samples: int = 1,
                   allow_1d: bool = False, dtype: Any = np.float64) -> NDArray[np.float64]:
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


def check_psd_targets(M: ArrayLike, name: str = "M", *, n_samples: int | None = None,
                      rtol: float = 1e-8) -> NDArray[np.float64]:
    """Return ``M`` as a finite, symmetric float array of shape (n_samples, d, d).

    Symmetric indefinite targets are accepted (noisy measurements of PSD matrices).
    Symmetry is checked to relative tolerance ``rtol`` of the largest entry (whatever its
    magnitude) and the exact symmetric part is returned.  Complex input is refused (its
    imaginary part would be dropped silently by a float conversion).
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
    # relative to the largest entry (targets of any magnitude); halves first, so that
    # entries near the float range do not overflow
    At = np.swapaxes(A, 1, 2)
    scale = float(np.abs(A).max()) if A.size else 0.0
    asym = float(np.abs(0.5 * A - 0.5 * At).max()) * 2.0 if A.size else 0.0
    if asym > rtol * scale:
        raise ValueError(
            f"{name} must hold symmetric matrices; largest asymmetry |M - M^T| = {asym:.3g} "
            f"(largest entry {scale:.3g})"
        )
    return 0.5 * A + 0.5 * At


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


def class_registrar(registry, kind, name, base=None):
    """A class decorator that registers a class in ``registry`` under ``name`` (lower-cased)
    and sets its attribute ``name``: the kernel, loss and output-space registries'
    ``register_*``.

    ValueError if ``name`` is not a non-empty string or another class holds it (a class of
    the same module and qualified name, from a reloaded module, replaces it); TypeError if
    the class is not a subclass of ``base`` (when given).  ``kind`` ("kernel", "loss", ...)
    names the registry in the messages.
    """
    a = "an" if kind[:1] in "aeiou" else "a"
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name of {a} {kind} must be a non-empty string, got {name!r}")
    key = name.lower()

    def decorator(cls):
        if base is not None and not (isinstance(cls, type) and issubclass(cls, base)):
            raise TypeError(f"{a} {kind} registered as {key!r} must be a subclass of "
                            f"{base.__name__}, got {cls!r}")
        old = registry.get(key)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__,
                                                                       cls.__qualname__):
            raise ValueError(f"{a} {kind} named {key!r} is already registered "
                             f"({old.__name__}); register {cls.__name__} under another name")
        cls.name = key
        registry[key] = cls
        return cls

    return decorator


def scaled_mean_std(A, *, axis=None, center=True, weights=None):
    """Mean and standard deviation of ``A`` (along ``axis``) without overflow or underflow.

    ``A`` is first divided by its largest absolute value (along ``axis``), the statistics
    are taken there and scaled back, so every finite input gives finite statistics (values
    near 1e300 or 1e-300 included).  ``center=False``: the root mean square instead of the
    standard deviation, and a mean of 0.  An all-zero ``A`` gives (0, 0).  ``weights``
    (same shape as ``A``, non-negative, ``axis=None`` only): the weighted statistics, entry
    j counted ``weights[j]`` times (scikit-learn's sample-weight semantics).
    """
    A = np.asarray(A, dtype=np.float64)
    if weights is not None:
        if axis is not None:
            raise ValueError("scaled_mean_std: weights need axis=None")
        s = float(np.max(np.abs(A))) if A.size else 0.0
        if s == 0.0:
            return 0.0, 0.0
        An = A / s
        p = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
        m = float(p @ An) if center else 0.0
        sd = float(np.sqrt(max(float(p @ ((An - m) ** 2)), 0.0)))
        return s * m, s * sd
    a = np.max(np.abs(A), axis=axis, keepdims=True)
    a = np.where(a > 0, a, 1.0)
    An = A / a
    m = An.mean(axis=axis, keepdims=True) if center else np.zeros_like(a)
    sd = np.sqrt(np.mean((An - m) ** 2, axis=axis, keepdims=True))
    mean, std = a * m, a * sd
    if axis is None:
        return float(mean.ravel()[0]), float(std.ravel()[0])
    return np.squeeze(mean, axis=axis), np.squeeze(std, axis=axis)


def check_random_state(random_state: RandomStateLike) -> np.random.Generator:
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


# ---- saved model files: arrays and metadata checked against a schema --------------------
def _shape_text(shape):
    return "(" + ", ".join("..." if s is Ellipsis else str(s) for s in shape) + ")"


def check_saved_arrays(arrays, spec, *, symbols=None, source="the model file",
                       any_dtype=()):
    """Check the arrays of a saved model against a schema; return the bound dimensions.

    Parameters
    ----------
    arrays : dict of str to ndarray
        The arrays read from the file.
    spec : dict of str to tuple
        Required arrays (a name ending in ``"?"`` is optional) and their shapes.  A shape
        entry is an int, a dimension name (bound by the first array that uses it, then
        checked against every other use), a product of names ``"r*d"`` (one factor may be
        unbound: it is bound by division), ``None`` (any size) or ``...`` (any trailing
        dimensions).
    symbols : dict of str to int, optional
        Dimensions known beforehand (e.g. from the metadata), with where they came from in
        ``symbols["_from"]`` if given.
    source : str
        Used in messages.
    any_dtype : iterable of str
        Arrays that may hold non-numeric values (labels); the others must be numbers.  Every
        float array must be finite.

    Raises
    ------
    ValueError
        Naming the array: missing, non-numeric, NaN or infinite, or of a shape that does not
        match the schema and the other arrays.
    """
    bound = dict(symbols or {})
    origin = dict(bound.pop("_from", {}))
    for k in bound:
        origin.setdefault(k, "the metadata")
    for spec_name, shape in spec.items():
        name = spec_name.rstrip("?")
        if name not in arrays:
            if spec_name.endswith("?"):
                continue
            raise ValueError(f"{source} has no array {name!r} (a required entry is missing)")
        A = arrays[name]
        if name not in any_dtype and A.dtype.kind not in "fiub":
            raise ValueError(
                f"array {name!r} in {source} must hold numbers, got dtype {A.dtype}")
        fixed = [s for s in shape if s is not Ellipsis]
        if (Ellipsis in shape and A.ndim < len(fixed)) or (
                Ellipsis not in shape and A.ndim != len(shape)):
            raise ValueError(
                f"array {name!r} in {source} must have shape {_shape_text(shape)}, got shape "
                f"{A.shape}")
        for dim, size in zip(fixed, A.shape, strict=False):
            if dim is None:
                continue
            if isinstance(dim, int):
                if size != dim:
                    raise ValueError(
                        f"array {name!r} in {source} must have shape {_shape_text(shape)}, "
                        f"got shape {A.shape}")
                continue
            factors = dim.split("*")
            unbound = [f for f in factors if f not in bound]
            known = int(np.prod([bound[f] for f in factors if f in bound]))
            if not unbound:
                if size != known:
                    where = ", ".join(f"{f} = {bound[f]} (from {origin[f]})" for f in factors)
                    raise ValueError(
                        f"array {name!r} in {source} has shape {A.shape}, which does not "
                        f"match {_shape_text(shape)} with {where}")
            elif len(unbound) == 1 and known > 0 and size % known == 0:
                bound[unbound[0]] = size // known
                origin[unbound[0]] = f"array {name!r}"
            else:
                raise ValueError(
                    f"array {name!r} in {source} has shape {A.shape}, which does not match "
                    f"{_shape_text(shape)}")
        if A.dtype.kind == "f" and not np.all(np.isfinite(A)):
            raise ValueError(f"array {name!r} in {source} contains NaN or infinite values")
    return bound


def _meta_kind_ok(value, kind):
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind == "real":  # finite
        return real and bool(np.isfinite(value))
    if kind == "real*":  # NaN / inf allowed (a duality gap NaN for the primal, ...)
        return real
    if kind == "int":  # >= 0
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0
    if kind == "posint":
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind == "any":
        return True
    if isinstance(kind, tuple):  # alternatives
        return any(_meta_kind_ok(value, k) for k in kind)
    raise AssertionError(f"unknown metadata kind {kind!r}")  # pragma: no cover


_KIND_TEXT = {"real": "a finite real number", "real*": "a real number",
              "int": "a non-negative integer", "posint": "a positive integer",
              "bool": "true or false", "str": "a string", "dict": "a JSON object",
              "list": "a JSON list", "any": "anything", None: "null"}


def check_saved_meta(meta, spec, *, source="the model file", prefix=""):
    """Check a saved model's JSON metadata against ``spec`` (nested dicts of kinds).

    Kinds: ``"real"`` (finite), ``"real*"`` (NaN / inf allowed), ``"int"`` (>= 0),
    ``"posint"``, ``"bool"``, ``"str"``, ``"dict"``, ``"list"``, ``"any"``, ``None`` (null), a
    tuple of alternatives, or a nested spec dict (a JSON object checked recursively).  A key
    ending in ``"?"`` is optional.  Raises ValueError naming the entry.
    """
    if not isinstance(meta, dict):
        what = f"metadata entry {prefix[:-1]!r}" if prefix else "the metadata"
        raise ValueError(f"{what} of {source} must be a JSON object, got "
                         f"{type(meta).__name__}")
    for spec_key, kind in spec.items():
        key = spec_key.rstrip("?")
        path = prefix + key
        if key not in meta:
            if spec_key.endswith("?"):
                continue
            raise ValueError(f"{source} has no metadata entry {path!r} (a required entry is "
                             "missing)")
        value = meta[key]
        if isinstance(kind, dict):
            check_saved_meta(value, kind, source=source, prefix=path + ".")
            continue
        kinds = kind if isinstance(kind, tuple) else (kind,)
        ok = any(value is None if k is None else _meta_kind_ok(value, k) for k in kinds)
        if not ok:
            expected = " or ".join(_KIND_TEXT.get(k, repr(k)) for k in kinds)
            raise ValueError(f"metadata entry {path!r} of {source} must be {expected}, got "
                             f"{value!r}")


def caller_stacklevel():
    """The ``stacklevel`` for :func:`warnings.warn` that points at the first frame outside
    psdsos (the user's call), whatever the depth of the internal calls."""
    import os
    import sys

    root = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)  # the function calling warnings.warn
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame = frame.f_back
        level += 1
    return level
