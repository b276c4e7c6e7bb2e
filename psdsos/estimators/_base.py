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
from psdsos.kernels import KERNELS, Kernel, LinearKernel, get_kernel, scale_bandwidth

__all__ = ["Interval", "Options", "Bandwidth", "validate_params", "load", "register_loadable",
           "resolve_kernel"]


class _RadialKernelOptions(Options):
    """``kernel`` of the estimators that need derivatives and a bandwidth: a radial kernel;
    "linear" (the SELF estimators' linear kernel) is refused with its own message."""

    def check(self, name, value, owner):
        if isinstance(value, LinearKernel) or (isinstance(value, str)
                                               and value.lower() == "linear"):
            raise ValueError(
                f"{name} of {owner} must be one of {list(self.options)} or a Kernel instance, "
                f"got {value!r}: {owner} needs a radial kernel with a bandwidth and "
                "derivatives; the linear kernel is offered by the SELF estimators only "
                "(SELFEstimator, KRLSEstimator, LocalizedSELF)"
            )
        super().check(name, value, owner)


KERNEL_OPTIONS = _RadialKernelOptions(list(KERNELS), types=(Kernel,))
#: ``kernel`` of the SELF estimators: the radial kernels and "linear" (sigma ignored).
SELF_KERNEL_OPTIONS = Options([*KERNELS, "linear"], types=(Kernel, LinearKernel))


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
