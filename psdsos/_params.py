"""Declared constraints of estimator hyperparameters, checked by :func:`validate_params`.

Shared by every estimator layer (``psdsos.estimators`` and ``psdsos.structured``): an
estimator lists ``_parameter_constraints = {name: checker}`` and calls ``validate_params``
in ``fit`` (and :func:`psdsos.load` calls it on a saved file's parameters).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["Interval", "Options", "Bool", "Verbose", "RandomState", "validate_params"]


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



def validate_params(estimator):
    """Check every constructor argument against ``estimator._parameter_constraints``."""
    owner = type(estimator).__name__
    for name, constraint in estimator._parameter_constraints.items():
        constraint.check(name, getattr(estimator, name), owner)
