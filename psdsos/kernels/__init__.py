"""Stationary radial kernels and their derivatives (the lowest psdsos layer).

.. math::

    k(x, y) = \\kappa(\\|x - y\\| / \\sigma)

Gaussian, exponential (Laplace) and Matern 3/2, 5/2 kernels (the Sobolev kernels of the
PSD paper's Example 1, eq. (15)), with values, gradients and Hessians in the first argument
(eq. (23)) and the fourth-order mixed derivatives of the exact Hessian representation
(Appendix C.5, eq. (37)).  This subpackage imports nothing from other psdsos layers.
"""

from psdsos.kernels._bandwidth import scale_bandwidth
from psdsos.kernels._base import Kernel
from psdsos.kernels._gaussian import GaussianKernel
from psdsos.kernels._linear import LinearKernel
from psdsos.kernels._matern import ExponentialKernel, Matern32Kernel, Matern52Kernel
from psdsos.kernels._registry import KERNELS, get_kernel

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
]
