"""Shared estimator machinery: the kernel options; the parameter checkers (psdsos._params)
and saving and loading (psdsos._persistence) are re-exported from their own modules."""

from __future__ import annotations

import numbers

import numpy as np

from psdsos._params import (  # noqa: F401  (re-exported: moved to psdsos._params)
    Bool,
    Interval,
    Options,
    RandomState,
    Verbose,
    validate_params,
)
from psdsos._persistence import (  # noqa: F401  (re-exported: moved to psdsos._persistence)
    _saved_params,
    load,
    register_loadable,
    save_estimator,
)
from psdsos.kernels import (
    Kernel,
    LinearKernel,
    get_kernel,
    kernel_names,
    scale_bandwidth,
)
from psdsos.losses import loss_names

__all__ = ["Interval", "Options", "Bandwidth", "validate_params", "load", "register_loadable",
           "resolve_kernel"]


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
