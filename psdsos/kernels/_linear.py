"""The linear kernel of the SELF estimators."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_array_2d
from psdsos.kernels._base import _check_pair
from psdsos.kernels._registry import register_kernel


@register_kernel("linear")
class LinearKernel:
    """Linear kernel :math:`k(x, y) = \\langle x, y \\rangle` (for the SELF estimators only).

    .. math::

        k(x, y) = x^\\top y.

    Not a radial :class:`Kernel`: it has no bandwidth and is not listed in :data:`KERNELS`,
    so the estimators that need kernel derivatives and a bandwidth (``PSDRegressor``,
    ``ConvexRegressor``) refuse it.  The SELF estimators (``SELFEstimator``,
    ``KRLSEstimator``, ``LocalizedSELF``) accept ``kernel="linear"``: with it, the SELF
    weights are those of ridge regression, and ``KRLSEstimator(kernel="linear",
    output="euclidean")`` is ridge regression without intercept (the *Local-LS* and *LS*
    baselines of the localized paper, section 6.1, use it).

    Parameters
    ----------
    sigma : ignored, default=None
        Accepted (and ignored) so that ``get_kernel("linear", sigma)`` works like the other
        names; the attribute ``sigma`` is the constant 1.0, kept only so that saved models
        store every kernel in the same format.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import LinearKernel
    >>> LinearKernel()(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[11.]])
    """

    name: str  # "linear", set by register_kernel
    #: Unused placeholder (the linear kernel has no bandwidth).
    sigma = 1.0

    def __init__(self, sigma: float | None = None) -> None:
        pass

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Gram matrix :math:`K_{ij} = \\langle X_i, Y_j \\rangle`, shape (n, m)."""
        X, Y = _check_pair(X, Y)
        return X @ Y.T

    def diag(self, X: ArrayLike) -> np.ndarray:
        """:math:`k(x, x) = \\|x\\|^2` for each row, shape (n,)."""
        X = check_array_2d(X, "X")
        return np.einsum("ij,ij->i", X, X)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """No parameters: ``{}``."""
        return {}

    def __repr__(self):
        return "LinearKernel()"

    def __eq__(self, other):
        return isinstance(other, LinearKernel)

    def __hash__(self):
        return hash("LinearKernel")
