"""Stationary radial kernels and their derivatives (the lowest psdsos layer).

.. math::

    k(x, y) = \\kappa(\\|x - y\\| / \\sigma)

Gaussian, exponential (Laplace) and Matern 3/2, 5/2 kernels (the Sobolev kernels of the
PSD paper's Example 1, eq. (15)), with values, gradients and Hessians in the first argument
(eq. (23)) and the fourth-order mixed derivatives of the exact Hessian representation
(Appendix C.5, eq. (37)).  This subpackage imports nothing from other psdsos layers.
"""

from psdsos.kernels._kernels import (
    KERNELS,
    ExponentialKernel,
    GaussianKernel,
    Kernel,
    LinearKernel,
    Matern32Kernel,
    Matern52Kernel,
    get_kernel,
    scale_bandwidth,
)

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
