"""Declared constraints of estimator hyperparameters, checked by :func:`validate_params`.

The kernel and loss options read the kernel and loss registries when they check, so
plug-ins registered later count; :func:`resolve_kernel` builds the fitted kernel.

Shared by every estimator layer (``psdsos.estimators`` and ``psdsos.structured``): an
estimator lists ``_parameter_constraints = {name: checker}`` and calls ``validate_params``
in ``fit`` (and :func:`psdsos.load` calls it on a saved file's parameters).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from psdsos.kernels import (
    Kernel,
    check_feature_scales,
    get_kernel,
    kernel_aliases,
    kernel_names,
    scale_bandwidth,
)
from psdsos.kernels._registry import canonical_kernel_name
from psdsos.losses import loss_names

__all__ = ["Interval", "Options", "Bool", "Verbose", "RandomState", "validate_params",
           "Bandwidth", "resolve_kernel", "warn_feature_scales"]


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
    """One of a set of strings, optionally also instances of ``types``.

    Exact spelling unless ``ignore_case`` (the CVXPY solver names, which the estimators
    upper-case before use): an estimator compares its option with ``==``, so a spelling
    accepted here but not recognised there would silently take another branch.
    """

    def __init__(self, options, types=(), allow_none=False, ignore_case=False):
        self.options, self.types, self.allow_none = tuple(options), tuple(types), allow_none
        self.ignore_case = ignore_case

    def check(self, name, value, owner):
        if value is None and self.allow_none:
            return
        if self.types and isinstance(value, self.types):
            return
        if isinstance(value, str) and value in self.options:
            return
        if (self.ignore_case and isinstance(value, str)
                and value.lower() in [o.lower() for o in self.options]):
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


#: The default of a renamed parameter's old name: "not given".
DEPRECATED = "deprecated"


class Renamed:
    """The check of a renamed parameter's old name: ``"deprecated"`` (not given), or a value
    that ``constraint`` (the old name's own check) accepts."""

    def __init__(self, constraint):
        self.constraint = constraint

    def check(self, name, value, owner):
        if isinstance(value, str) and value == DEPRECATED:
            return
        self.constraint.check(name, value, owner)


def renamed_value(estimator, old, new, version="0.3", convert=None):
    """The value of the parameter ``new``, or of its old name ``old`` when that was given:
    then a FutureWarning says to use ``new`` (the old name is removed in ``version``).
    ``convert`` maps an old value to the new name's meaning."""
    value = getattr(estimator, old)
    if isinstance(value, str) and value == DEPRECATED:
        return getattr(estimator, new)
    owner = type(estimator).__name__
    warnings.warn(f"{old} of {owner} is renamed {new} (the same name as in the other "
                  f"estimators) and will be removed in psdsos {version}; use {new}"
                  + ("" if convert is None else f"={convert(value)!r}"),
                  FutureWarning, stacklevel=3)
    return value if convert is None else convert(value)


def validate_params(estimator):
    """Check every constructor argument against ``estimator._parameter_constraints``."""
    owner = type(estimator).__name__
    for name, constraint in estimator._parameter_constraints.items():
        constraint.check(name, getattr(estimator, name), owner)


class _RadialKernelOptions(Options):
    """``kernel``: a name of the kernel registry (read when checked, so kernels registered
    later with :func:`psdsos.kernels.register_kernel` count) or a kernel object.  By default
    the radial kernels only (for the estimators that need derivatives and a bandwidth; a
    Gram-only kernel such as "linear" is refused with its own message); ``radial_only=False``
    (the SELF estimators) also the Gram-only kernels."""

    def __init__(self, radial_only=True):
        # the registry looks names up in lower case
        super().__init__((), types=(Kernel,), ignore_case=True)
        self.radial_only = radial_only

    def check(self, name, value, owner):
        radial = kernel_names()
        gram_only = [n for n in kernel_names(radial_only=False) if n not in radial]
        gram_types = tuple(type(get_kernel(n)) for n in gram_only)
        names = radial if self.radial_only else (*radial, *gram_only)
        # aliases ("rbf": scikit-learn's name of the Gaussian kernel) after the names
        self.options = (*names, *(a for a, n in kernel_aliases().items() if n in names))
        self.types = (Kernel,) if self.radial_only else (Kernel, *gram_types)
        if self.radial_only and (isinstance(value, gram_types) or (
                isinstance(value, str) and canonical_kernel_name(value) in gram_only)):
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
        super().__init__((), types=types, ignore_case=True)  # looked up in lower case
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
    (weighted by ``sample_weight``: rows counted w_i times).  A kernel of the registry that
    gives Gram matrices only (``"linear"``; accepted only by the estimators whose options
    allow it, checked before) ignores sigma."""
    if not isinstance(kernel, str):  # a kernel object (its type checked by the options)
        return kernel
    if canonical_kernel_name(kernel) not in kernel_names():
        return get_kernel(kernel)
    if isinstance(sigma, str) and sigma == "scale":
        sigma = scale_bandwidth(X, sample_weight)
    return get_kernel(kernel, sigma)


def warn_feature_scales(estimator, kernel, X):
    """:func:`psdsos.kernels.check_feature_scales` of the training ``X`` (validated) when
    ``kernel`` (a name, a list of names as ``PSDRegressorCV``'s ``kernels``, or kernel objects)
    has a bandwidth shared by the features: a radial kernel (a :class:`Kernel`, whose
    ``k(x, y) = kappa(||x - y|| / sigma)`` is isotropic).  Gram-only kernels ("linear") have no
    bandwidth and are not checked.  The features are named by ``feature_names_in_`` when the
    estimator was fitted on a DataFrame.  Called once per ``fit`` (a CV estimator calls it
    itself and silences its inner fits)."""
    kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
    if not any(isinstance(k, Kernel) or (isinstance(k, str)
                                         and canonical_kernel_name(k) in kernel_names())
               for k in kernels):
        return
    check_feature_scales(X, owner=type(estimator).__name__,
                         feature_names=getattr(estimator, "feature_names_in_", None))


def _nonempty_list(value):
    """``list(value)``, or None when ``value`` is not iterable (a grid's entries)."""
    try:
        return list(value)
    except TypeError:
        return None


class PositiveGrid:
    """A non-empty sequence of finite reals > 0 (>= 0 with ``zero``)."""

    def __init__(self, zero: bool = False, allow_none: bool = False) -> None:
        self.zero = zero
        self.allow_none = allow_none

    def check(self, name: str, value: Any, owner: str) -> None:
        if value is None and self.allow_none:
            return
        what = ">= 0" if self.zero else "> 0"
        vals = _nonempty_list(value)
        if not vals:
            raise ValueError(f"{name} of {owner} must be a non-empty sequence of numbers "
                             f"{what}, got {value!r}")
        for v in vals:
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool)
            if ok:
                x = float(v)
                ok = bool(np.isfinite(x)) and (x >= 0.0 if self.zero else x > 0.0)
            if not ok:
                raise ValueError(f"{name} of {owner} must hold finite numbers {what}, got "
                                 f"{v!r}")


class KernelGrid:
    """A non-empty sequence of kernels, each a name or a Kernel object (``kernels`` of the CV
    estimators)."""

    def check(self, name: str, value: Any, owner: str) -> None:
        if isinstance(value, (str, Kernel)):
            raise ValueError(f"{name} of {owner} must be a non-empty sequence of kernels "
                             f"(names or Kernel objects), got {value!r}; write ({value!r},)")
        vals = _nonempty_list(value)
        if not vals:
            raise ValueError(f"{name} of {owner} must be a non-empty sequence of kernels "
                             f"(names or Kernel objects), got {value!r}")
        for v in vals:
            KERNEL_OPTIONS.check(name, v, owner)
