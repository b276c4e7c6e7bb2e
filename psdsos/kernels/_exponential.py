"""The exponential (Laplace) kernel: the Matern kernel of nu = 1/2 (PSD paper, Example 1)."""

from __future__ import annotations

import numpy as np

from psdsos.kernels._base import Kernel
from psdsos.kernels._registry import register_kernel


@register_kernel("exponential")
class ExponentialKernel(Kernel):
    """Exponential (Laplace) kernel with the Euclidean norm.

    .. math::

        k(x, y) = \\exp\\Big(-\\frac{\\|x - y\\|}{\\sigma}\\Big),
        \\qquad \\kappa(\\rho) = e^{-\\rho}.

    The Sobolev kernel of the PSD paper's Example 1, eq. (15), with :math:`s - p/2 = 1/2`
    (remark after Example 1); scikit-learn's ``Matern(length_scale=sigma, nu=0.5)``.
    Not to be confused with ``sklearn.metrics.pairwise.laplacian_kernel``, which uses the
    L1 norm.  Continuous but not differentiable at :math:`x = y`
    (``differentiability = 0``):

    .. math::

        \\nabla_x k = -\\frac{k}{\\sigma} \\frac{x - y}{\\|x - y\\|} \\quad (x \\neq y),
        \\qquad \\nabla_x k = 0 \\quad (x = y),

    where 0 is the symmetric subgradient.  :meth:`hessian` and :meth:`hessian_hessian`
    raise ``ValueError``.

    Parameters
    ----------
    sigma : float, default=1.0
        Bandwidth: the distance over which the kernel decays by a factor e, finite and > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import ExponentialKernel
    >>> ExponentialKernel(sigma=1.0)(np.zeros((1, 2)), np.array([[3.0, 4.0]]))
    array([[0.00673795]])
    """

    formula = "k(x,y)=exp(-||x-y||/sigma)"
    differentiability = 0

    def _kappa(self, rho):
        return np.exp(-rho)

    def _dkappa(self, rho):
        return -np.exp(-rho)
