"""The Matern kernels of nu = 3/2 and nu = 5/2 (Sobolev kernels, PSD paper, Example 1)."""

from __future__ import annotations

import numpy as np

from psdsos.kernels._base import Kernel
from psdsos.kernels._registry import register_kernel


@register_kernel("matern32")
class Matern32Kernel(Kernel):
    """Matern kernel with :math:`\\nu = 3/2` (Sobolev kernel, :math:`s - p/2 = 3/2`).

    .. math::

        k(x, y) = (1 + \\rho)\\, e^{-\\rho}, \\qquad \\rho = \\frac{\\|x - y\\|}{\\sigma}.

    The PSD paper's Example 1, eq. (15), with :math:`s - p/2 = 3/2` and the scale factor
    of the remark after Example 1: :math:`\\rho` has **no** :math:`\\sqrt{3}` factor, so
    scikit-learn's ``Matern(length_scale=l, nu=1.5)`` equals this kernel with
    ``sigma = l / sqrt(3)``.  Twice continuously differentiable
    (``differentiability = 2``):

    .. math::

        \\nabla_x k = -\\frac{e^{-\\rho}}{\\sigma^2}(x - y), \\qquad
        \\nabla_x^2 k = \\frac{e^{-\\rho}}{\\sigma^2}\\Big(-I
        + \\frac{(x - y)(x - y)^T}{\\sigma \\|x - y\\|}\\Big),

    with the second term of the Hessian equal to 0 at :math:`x = y` (its limit), so the
    Hessian there is :math:`-I / \\sigma^2`.  :meth:`hessian_hessian` raises ``ValueError``.

    Parameters
    ----------
    sigma : float, default=1.0
        Bandwidth (``l / sqrt(3)`` for scikit-learn's length scale ``l``), finite and > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import Matern32Kernel
    >>> K = Matern32Kernel(sigma=1.0)(np.zeros((1, 1)), np.ones((1, 1)))
    >>> print(round(float(K[0, 0]), 8))  # 2 / e
    0.73575888
    """

    formula = "k(x,y)=(1+rho)exp(-rho) with rho=||x-y||/sigma"
    differentiability = 2

    def _kappa(self, rho):
        return (1.0 + rho) * np.exp(-rho)

    def _dkappa(self, rho):
        return -rho * np.exp(-rho)

    def _hessian_coefs(self, rho):
        e = np.exp(-rho)
        return -e, rho * e


@register_kernel("matern52")
class Matern52Kernel(Kernel):
    """Matern kernel with :math:`\\nu = 5/2` (Sobolev kernel, :math:`s - p/2 = 5/2`).

    .. math::

        k(x, y) = \\Big(1 + \\rho + \\frac{\\rho^2}{3}\\Big) e^{-\\rho},
        \\qquad \\rho = \\frac{\\|x - y\\|}{\\sigma}.

    The PSD paper's Example 1, eq. (15), with :math:`s - p/2 = 5/2` and the scale factor
    of the remark after Example 1: :math:`\\rho` has **no** :math:`\\sqrt{5}` factor, so
    scikit-learn's ``Matern(length_scale=l, nu=2.5)`` equals this kernel with
    ``sigma = l / sqrt(5)``.  Four times continuously differentiable
    (``differentiability = 4``):

    .. math::

        \\nabla_x k &= -\\frac{(1 + \\rho) e^{-\\rho}}{3 \\sigma^2}(x - y), \\\\
        \\nabla_x^2 k &= \\frac{e^{-\\rho}}{3 \\sigma^2}\\Big(-(1 + \\rho) I
        + \\frac{(x - y)(x - y)^T}{\\sigma^2}\\Big), \\\\
        \\partial_{x_p x_q y_r y_s} k &= \\frac{e^{-\\rho}}{3 \\sigma^4}\\Big(S^{(2)}_{pqrs}
        - \\rho\\, S^{(3)}_{pqrs}(n) + \\rho (1 + \\rho)\\, n_p n_q n_r n_s\\Big),

    with :math:`n = (x - y)/\\|x - y\\|` (the last two terms vanish at :math:`x = y`).

    Parameters
    ----------
    sigma : float, default=1.0
        Bandwidth (``l / sqrt(5)`` for scikit-learn's length scale ``l``), finite and > 0.

    Examples
    --------
    The Hessian at :math:`x = y` is :math:`-I / (3\\sigma^2)`:

    >>> import numpy as np
    >>> from psdsos.kernels import Matern52Kernel
    >>> Matern52Kernel(sigma=2.0).hessian(np.zeros((1, 1)))[0, 0]
    array([[-0.08333333]])
    """

    formula = "k(x,y)=(1+rho+rho^2/3)exp(-rho) with rho=||x-y||/sigma"
    differentiability = 4

    def _kappa(self, rho):
        return (1.0 + rho + rho**2 / 3.0) * np.exp(-rho)

    def _dkappa(self, rho):
        return -rho * (1.0 + rho) * np.exp(-rho) / 3.0

    def _hessian_coefs(self, rho):
        e = np.exp(-rho) / 3.0
        return -(1.0 + rho) * e, rho**2 * e

    def _fourth_coefs(self, rho):
        e = np.exp(-rho) / 3.0
        return e, -rho * e, rho * (1.0 + rho) * e
