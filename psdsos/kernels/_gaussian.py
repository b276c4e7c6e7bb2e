"""The Gaussian (RBF) kernel."""

from __future__ import annotations

import numpy as np

from psdsos.kernels._base import _SMOOTH, Kernel
from psdsos.kernels._registry import register_kernel


@register_kernel("gaussian", aliases=("rbf",))
class GaussianKernel(Kernel):
    """Gaussian (RBF) kernel.

    .. math::

        k(x, y) = \\exp\\Big(-\\frac{\\|x - y\\|^2}{2 \\sigma^2}\\Big),
        \\qquad \\kappa(\\rho) = e^{-\\rho^2 / 2}.

    Infinitely differentiable (``differentiability`` is a large integer).  Equal to
    scikit-learn's ``RBF(length_scale=sigma)`` and to its ``kernel="rbf"``
    :math:`\\exp(-\\gamma\\|x - y\\|^2)` with :math:`\\gamma = 1 / (2\\sigma^2)`, i.e.
    :math:`\\sigma = 1 / \\sqrt{2\\gamma}`; hence ``"rbf"`` is accepted as an alias of
    ``"gaussian"`` wherever a kernel name is (:func:`psdsos.kernels.kernel_aliases`), with
    the bandwidth still given as ``sigma``.  Derivatives (first argument, with
    :math:`u = (x - y)/\\sigma`):

    .. math::

        \\nabla_x k = -\\frac{k}{\\sigma} u, \\qquad
        \\nabla_x^2 k = \\frac{k}{\\sigma^2}\\big(u u^T - I\\big), \\qquad
        \\partial_{x_p x_q y_r y_s} k = \\frac{k}{\\sigma^4}\\big(S^{(2)}_{pqrs}
        - S^{(3)}_{pqrs}(u) + u_p u_q u_r u_s\\big).

    Used in the PSD paper's experiments (eq. (23) and Appendix C.5, eq. (37)).

    Parameters
    ----------
    sigma : float, default=1.0
        Bandwidth: the standard deviation of the Gaussian profile (scikit-learn's
        ``length_scale``), finite and > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import GaussianKernel
    >>> k = GaussianKernel(sigma=2.0)
    >>> k(np.zeros((1, 2)), np.array([[2.0, 0.0]]))
    array([[0.60653066]])
    """

    formula = "k(x,y)=exp(-||x-y||^2/(2 sigma^2))"
    differentiability = _SMOOTH

    def _kappa_from_sq(self, rho2):
        return np.exp(-0.5 * rho2)

    def _kappa(self, rho):
        return np.exp(-0.5 * rho**2)

    def _dkappa(self, rho):
        return -rho * np.exp(-0.5 * rho**2)

    def _hessian_coefs(self, rho):
        e = np.exp(-0.5 * rho**2)
        return -e, rho**2 * e

    def _fourth_coefs(self, rho):
        e = np.exp(-0.5 * rho**2)
        rho2 = rho**2
        return e, -rho2 * e, rho2**2 * e
