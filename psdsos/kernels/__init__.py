"""Stationary radial kernels and their derivatives (the lowest psdsos layer).

.. math::

    k(x, y) = \\kappa(\\|x - y\\| / \\sigma)

Gaussian, exponential (Laplace) and Matern 3/2, 5/2 kernels (the Sobolev kernels of the
PSD paper's Example 1, eq. (15)), with values, gradients and Hessians in the first argument
(eq. (23)) and the fourth-order mixed derivatives of the exact Hessian representation
(Appendix C.5, eq. (37)).  Each kernel is one module whose class registers itself by name
(:func:`register_kernel`); :data:`KERNELS`, :func:`kernel_names` and :func:`get_kernel` read
that registry, so a kernel defined outside psdsos and registered the same way is accepted
by name everywhere (and by its aliases: ``"rbf"``, scikit-learn's name, is the Gaussian
kernel, :func:`kernel_aliases`).  One bandwidth serves all the features: the estimators
warn (:class:`FeatureScaleWarning`, :func:`check_feature_scales`) when the features'
spreads differ by more than a factor of 100.  This subpackage imports nothing from other
psdsos layers.
"""

from psdsos.kernels._bandwidth import FeatureScaleWarning, check_feature_scales, scale_bandwidth
from psdsos.kernels._base import Kernel, kernel_names
from psdsos.kernels._registry import KERNELS, get_kernel, kernel_aliases, register_kernel

# isort: off
# the kernel modules register their classes when imported: this order is that of KERNELS
from psdsos.kernels._gaussian import GaussianKernel
from psdsos.kernels._exponential import ExponentialKernel
from psdsos.kernels._matern import Matern32Kernel, Matern52Kernel
from psdsos.kernels._linear import LinearKernel
# isort: on

__all__ = [
    "Kernel",
    "GaussianKernel",
    "ExponentialKernel",
    "Matern32Kernel",
    "Matern52Kernel",
    "KERNELS",
    "LinearKernel",
    "get_kernel",
    "scale_bandwidth",
    "register_kernel",
    "kernel_names",
    "kernel_aliases",
    "check_feature_scales",
    "FeatureScaleWarning",
]
