"""Kernels by name: :data:`KERNELS` and :func:`get_kernel`."""

from __future__ import annotations

from typing import Literal, overload

from psdsos._validation import check_choice
from psdsos.kernels._base import Kernel
from psdsos.kernels._gaussian import GaussianKernel
from psdsos.kernels._linear import LinearKernel
from psdsos.kernels._matern import ExponentialKernel, Matern32Kernel, Matern52Kernel

#: Kernel classes by name (the names accepted by :func:`get_kernel`).
KERNELS = {
    "gaussian": GaussianKernel,
    "exponential": ExponentialKernel,
    "matern32": Matern32Kernel,
    "matern52": Matern52Kernel,
}


# "linear" is also a str: the first overload wins for it (mypy's documented overlap)
@overload
def get_kernel(kernel: Literal["linear"] | LinearKernel,  # type: ignore[overload-overlap]
               sigma: float | None = None) -> LinearKernel: ...
@overload
def get_kernel(kernel: str | Kernel, sigma: float | None = None) -> Kernel: ...
def get_kernel(kernel: str | Kernel | LinearKernel,
               sigma: float | None = None) -> Kernel | LinearKernel:
    """Return a :class:`Kernel` from a name and a bandwidth, or a Kernel unchanged.

    .. math::

        k(x, y) = \\kappa(\\|x - y\\| / \\sigma), \\quad
        \\kappa \\in \\{e^{-\\rho^2/2},\\ e^{-\\rho},\\ (1 + \\rho) e^{-\\rho},\\
        (1 + \\rho + \\rho^2/3) e^{-\\rho}\\}

    (Gaussian, exponential, Matern 3/2, Matern 5/2; the last three are the Sobolev kernels
    of the PSD paper's Example 1, eq. (15)).

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52", "linear"} or Kernel
        Kernel name (case-insensitive) or a :class:`Kernel` (or :class:`LinearKernel`)
        instance.  An instance is returned **unchanged** and ``sigma`` is then ignored (the
        instance carries its own bandwidth).  ``"linear"`` gives :class:`LinearKernel`
        (no bandwidth: ``sigma`` is ignored); only the SELF estimators accept it.
    sigma : float, default=None
        Bandwidth in ``[1e-75, 1e75]``; required when ``kernel`` is a radial kernel's name.

    Returns
    -------
    kernel : Kernel

    Raises
    ------
    ValueError
        If ``kernel`` is not one of the names above or a Kernel (the message names
        ``kernel`` and lists the choices), or if ``sigma`` is missing, not a real number,
        not in ``[1e-75, 1e75]`` (the message names ``sigma`` and the range).

    Examples
    --------
    >>> from psdsos.kernels import get_kernel
    >>> get_kernel("Matern52", sigma=0.5)
    Matern52Kernel(sigma=0.5)
    """
    if isinstance(kernel, (Kernel, LinearKernel)):
        return kernel
    if isinstance(kernel, str) and kernel.lower() == "linear":
        return LinearKernel()
    name = check_choice(kernel, "kernel", list(KERNELS))
    if sigma is None:
        raise ValueError(
            f"sigma (the kernel bandwidth) must be given with kernel={kernel!r}: "
            "a finite real number > 0, got None"
        )
    return KERNELS[name](sigma=sigma)
