"""Shared estimator machinery: declared parameter constraints, saving and loading."""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from psdsos._validation import PathLike, check_saved_arrays, check_saved_meta
from psdsos.kernels import (
    KERNELS,
    Kernel,
    LinearKernel,
    get_kernel,
    kernel_names,
    scale_bandwidth,
)
from psdsos.losses import loss_names
from psdsos.sos import load_npz, save_npz

__all__ = ["Interval", "Options", "Bandwidth", "validate_params", "load", "register_loadable",
           "resolve_kernel"]


class Interval:
    """Real (or integer) interval constraint for a hyperparameter."""

    def __init__(self, kind, left, right, closed="both", allow_none=False):
        self.kind, self.left, self.right = kind, left, right
        self.closed, self.allow_none = closed, allow_none

    def check(self, name, value, owner):
        if value is None and self.allow_none:
            return
        ok_type = isinstance(value, self.kind) and not isinstance(value, bool)
        if ok_type and self.kind is numbers.Real:
            ok_type = bool(np.isfinite(value))
        if ok_type:
            lo_ok = self.left is None or (
                value >= self.left if self.closed in ("both", "left") else value > self.left)
            hi_ok = self.right is None or (
                value <= self.right if self.closed in ("both", "right") else value < self.right)
            if lo_ok and hi_ok:
                return
        lb = "[" if self.closed in ("both", "left") else "("
        rb = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.left is None else self.left
        hi = "inf" if self.right is None else self.right
        kind = "an integer" if self.kind is numbers.Integral else "a real number"
        none = " or None" if self.allow_none else ""
        raise ValueError(
            f"{name} of {owner} must be {kind} in {lb}{lo}, {hi}{rb}{none}, got {value!r}"
        )


class Options:
    """One of a set of strings (case-insensitive), optionally also instances of ``types``."""

    def __init__(self, options, types=(), allow_none=False):
        self.options, self.types, self.allow_none = tuple(options), tuple(types), allow_none

    def check(self, name, value, owner):
        if value is None and self.allow_none:
            return
        if self.types and isinstance(value, self.types):
            return
        if isinstance(value, str) and value.lower() in [o.lower() for o in self.options]:
            return
        extra = f" or a {' / '.join(t.__name__ for t in self.types)} instance" if self.types else ""
        raise ValueError(
            f"{name} of {owner} must be one of {list(self.options)}{extra}, got {value!r}"
        )


class Bool:
    def check(self, name, value, owner):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} of {owner} must be True or False, got {value!r}")


class Verbose:
    def check(self, name, value, owner):
        if isinstance(value, (bool, np.bool_)):
            return
        if isinstance(value, numbers.Integral) and value >= 0:
            return
        raise ValueError(f"{name} of {owner} must be a bool or a non-negative int, got {value!r}")


class RandomState:
    def check(self, name, value, owner):
        if value is None or isinstance(value, np.random.Generator):
            return
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0:
            return
        raise ValueError(
            f"{name} of {owner} must be None, a non-negative int or a numpy Generator, "
            f"got {value!r}"
        )


class _RadialKernelOptions(Options):
    """``kernel``: a name of the kernel registry (read when checked, so kernels registered
    later with :func:`psdsos.kernels.register_kernel` count) or a kernel object.  By default
    the radial kernels only (for the estimators that need derivatives and a bandwidth; a
    Gram-only kernel such as "linear" is refused with its own message); ``radial_only=False``
    (the SELF estimators) also the Gram-only kernels."""

    def __init__(self, radial_only=True):
        super().__init__((), types=(Kernel,))
        self.radial_only = radial_only

    def check(self, name, value, owner):
        radial = kernel_names()
        gram_only = [n for n in kernel_names(radial_only=False) if n not in radial]
        gram_types = tuple(type(get_kernel(n)) for n in gram_only)
        self.options = radial if self.radial_only else (*radial, *gram_only)
        self.types = (Kernel,) if self.radial_only else (Kernel, *gram_types)
        if self.radial_only and (isinstance(value, gram_types) or (
                isinstance(value, str) and value.lower() in gram_only)):
            kind = (value if isinstance(value, str) else value.name).lower()
            raise ValueError(
                f"{name} of {owner} must be one of {list(self.options)} or a Kernel instance, "
                f"got {value!r}: {owner} needs a radial kernel with a bandwidth and "
                f"derivatives; the {kind!r} kernel (Gram matrices only) is offered by the "
                "SELF estimators only (SELFEstimator, KRLSEstimator, LocalizedSELF)"
            )
        super().check(name, value, owner)


class _LossOptions(Options):
    """``loss``: a name of the loss registry (read when checked, so losses registered later
    with :func:`psdsos.losses.register_loss` count) whose required parameters are among the
    estimator's ``parameters`` (see :func:`psdsos.losses.loss_names`), or an instance of
    ``types``."""

    def __init__(self, parameters, convex_regression=False, types=()):
        super().__init__((), types=types)
        self.parameters, self.convex_regression = tuple(parameters), convex_regression

    def check(self, name, value, owner):
        self.options = loss_names(parameters=self.parameters,
                                  convex_regression=self.convex_regression)
        super().check(name, value, owner)


KERNEL_OPTIONS = _RadialKernelOptions()
#: ``kernel`` of the SELF estimators: the radial kernels and "linear" (sigma ignored).
SELF_KERNEL_OPTIONS = _RadialKernelOptions(radial_only=False)


class Bandwidth:
    """``sigma``: "scale" (from the training inputs, :func:`psdsos.kernels.scale_bandwidth`)
    or a finite real number > 0."""

    def check(self, name, value, owner):
        if isinstance(value, str) and value == "scale":
            return
        if (isinstance(value, numbers.Real) and not isinstance(value, bool)
                and np.isfinite(value) and value > 0):
            return
        raise ValueError(
            f"{name} of {owner} must be 'scale' (derived from the training inputs' spread) or "
            f"a finite real number > 0, got {value!r}"
        )


def resolve_kernel(kernel, sigma, X, sample_weight=None):
    """The fitted kernel: a Kernel object unchanged, else ``kernel`` with bandwidth ``sigma``,
    ``sigma="scale"`` meaning :func:`psdsos.kernels.scale_bandwidth` of the training ``X``
    (weighted by ``sample_weight``: rows counted w_i times).  ``"linear"`` (accepted only by
    the estimators whose constraints allow it) ignores sigma."""
    if isinstance(kernel, (Kernel, LinearKernel)):
        return kernel
    if isinstance(kernel, str) and kernel.lower() == "linear":
        return LinearKernel()
    if isinstance(sigma, str) and sigma == "scale":
        sigma = scale_bandwidth(X, sample_weight)
    return get_kernel(kernel, sigma)


def validate_params(estimator):
    """Check every constructor argument against ``estimator._parameter_constraints``."""
    owner = type(estimator).__name__
    for name, constraint in estimator._parameter_constraints.items():
        constraint.check(name, getattr(estimator, name), owner)


_LOADABLE: dict[str, Any] = {}


def register_loadable(cls):
    """Class decorator: make ``psdsos.load`` able to rebuild instances of ``cls``."""
    _LOADABLE[cls.__name__] = cls
    return cls


def load(path: PathLike) -> Any:
    """Load a model saved with ``estimator.save(path)`` (.npz + JSON, no pickle).

    The file is checked before anything is built: its metadata against the estimator's
    schema (``_SAVED_META``), its constructor parameters against the estimator's own
    ``_parameter_constraints`` (an unknown parameter name is refused too), and its arrays
    against the array schema (``_saved_arrays``): every required array present, finite, and
    of shapes consistent with each other and with the metadata.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    The fitted estimator (or PSDModel) stored in the file.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path`` (nor at ``path + ".npz"``).
    ValueError
        If the file is not a valid psdsos model file; the message names the entry (array,
        metadata entry or parameter) at fault.
    """
    arrays, meta = load_npz(path)
    source = repr(os.fspath(path))
    typ = meta["type"]
    if typ == "PSDModel":
        from psdsos.sos import PSDModel

        return PSDModel.from_arrays(arrays, meta, source=source)
    cls = _LOADABLE.get(typ)
    if cls is None:
        raise ValueError(f"{source} holds an unknown model type {typ!r} (expected one of "
                         f"{sorted(['PSDModel', *_LOADABLE])})")
    check_saved_meta(meta, {"params": "dict", **cls._SAVED_META}, source=source)
    meta["params"] = _saved_params(cls, meta["params"], arrays, source)
    spec, symbols = cls._saved_arrays(meta, source=source)
    check_saved_arrays(arrays, spec, symbols=symbols, source=source,
                       any_dtype=getattr(cls, "_SAVED_ANY_DTYPE", ()))
    try:
        return cls._from_saved(arrays, meta)
    except (KeyError, TypeError, IndexError) as exc:  # a schema gap: still a ValueError
        raise ValueError(f"{source} is not a valid {typ} file: {type(exc).__name__} {exc}"
                         ) from None


#: Prefix of the arrays that hold array-valued constructor parameters.
_PARAM_ARRAY = "param_"


def _saved_params(cls, params, arrays, source):
    """The constructor parameters of a saved estimator, validated like ``fit`` does."""
    names = cls._get_param_names()
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(f"{source}: unknown parameter(s) {unknown} for {cls.__name__} "
                         f"(its parameters are {names})")
    params = dict(params)
    for name in names:
        key = _PARAM_ARRAY + name
        if params.get(name) == {"array": key}:
            if key not in arrays:
                raise ValueError(f"{source} has no array {key!r} (a required entry is "
                                 f"missing: the parameter {name})")
            A = arrays[key]
            if A.dtype.kind not in "fiu" or not np.all(np.isfinite(A)):
                raise ValueError(f"array {key!r} in {source} (the parameter {name}) is not "
                                 "numeric or contains NaN or infinite values")
            params[name] = A.astype(np.float64)
    try:
        validate_params(cls(**params))
    except ValueError as exc:
        raise ValueError(f"{source} holds an invalid parameter: {exc}") from None
    return params


def save_estimator(estimator, path, arrays, extra_meta):
    """Write a fitted estimator: its constructor params (JSON-able) plus arrays.

    An array-valued parameter (e.g. ConvexRegressor's ``constraint_points``) is stored as
    the array ``param_<name>`` (its JSON entry is ``{"array": "param_<name>"}``) and
    restored by :func:`load`.
    """
    params = {}
    arrays = dict(arrays)
    kernel_sigma = None
    for k, v in estimator.get_params(deep=False).items():
        if isinstance(v, LinearKernel):
            v = v.name
        if isinstance(v, Kernel):
            if type(v) not in KERNELS.values():
                raise ValueError(
                    f"cannot save {type(estimator).__name__} with a custom kernel object "
                    f"{v!r}: only built-in kernels are saved"
                )
            kernel_sigma = float(v.sigma)
            v = v.name
        if isinstance(v, np.random.Generator):
            v = None
        if isinstance(v, np.ndarray) and v.ndim > 0:
            arrays[_PARAM_ARRAY + k] = np.asarray(v, dtype=np.float64)
            v = {"array": _PARAM_ARRAY + k}
        if isinstance(v, (np.integer, np.floating, np.bool_, np.ndarray)):
            v = v.item()
        params[k] = v
    if kernel_sigma is not None:
        # a Kernel object carries its own bandwidth: it wins over the estimator's sigma
        params["sigma"] = kernel_sigma
    meta = {"type": type(estimator).__name__, "params": params, **extra_meta}
    save_npz(path, arrays, meta)
