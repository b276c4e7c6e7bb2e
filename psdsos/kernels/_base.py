"""Stationary radial kernels with their derivatives in closed form.

Every kernel of this module has the form

.. math::

    k(x, y) = \\kappa(\\rho), \\qquad \\rho = \\frac{\\|x - y\\|}{\\sigma},

with a bandwidth :math:`\\sigma > 0`.  Derivatives are written with the unit vector
:math:`n = (x - y) / \\|x - y\\|` (set to 0 at :math:`x = y`) and coefficient functions of
:math:`\\rho` that stay bounded at :math:`\\rho = 0`, so that no division by zero ever happens:

.. math::

    \\nabla_x k &= \\frac{\\kappa'(\\rho)}{\\sigma} n, \\\\
    \\nabla_x^2 k &= \\frac{1}{\\sigma^2}\\big(a(\\rho) I + b(\\rho) n n^T\\big),
    \\quad a = \\kappa'(\\rho)/\\rho, \\quad b = \\kappa''(\\rho) - a(\\rho), \\\\
    \\partial_{x_p}\\partial_{x_q}\\partial_{y_r}\\partial_{y_s} k &= \\frac{1}{\\sigma^4}
    \\big(c_2(\\rho) S^{(2)}_{pqrs} + c_3(\\rho) S^{(3)}_{pqrs}(n)
    + c_4(\\rho) n_p n_q n_r n_s\\big),

where :math:`S^{(2)}_{pqrs} = \\delta_{pq}\\delta_{rs} + \\delta_{pr}\\delta_{qs}
+ \\delta_{ps}\\delta_{qr}` and :math:`S^{(3)}(n)` is the sum of the six products
:math:`\\delta_{pq} n_r n_s + \\delta_{pr} n_q n_s + \\delta_{ps} n_q n_r + \\delta_{qr} n_p n_s
+ \\delta_{qs} n_p n_r + \\delta_{rs} n_p n_q`.  With :math:`g_1 = \\kappa'/\\rho` and
:math:`g_{j+1} = g_j'/\\rho` the coefficients are :math:`c_2 = g_2`, :math:`c_3 = \\rho^2 g_3`,
:math:`c_4 = \\rho^4 g_4`.

Reference: Muzellec, Bach, Rudi, "Learning PSD-valued functions using kernel
sums-of-squares" (the PSD paper): Example 1 and eq. (15) (Sobolev / Matern kernels),
eq. (23) (Hessians of the kernel, approximate representation) and Appendix C.5, eq. (37)
(fourth-order mixed derivatives, exact representation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from psdsos._validation import check_array_2d
from psdsos.kernels._bandwidth import check_sigma

#: ``differentiability`` of the infinitely smooth Gaussian kernel (any large integer works).
_SMOOTH = 1000
#: Entries (rows x centres x features) per block of :meth:`Kernel.hessian_sum`.
_SUM_BLOCK_ENTRIES = 1 << 21



def _check_pair(X: ArrayLike, Y: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``X`` (n, p) and ``Y`` (m, p); ``Y=None`` means ``Y = X``."""
    X = check_array_2d(X, "X")
    if Y is None:
        return X, X
    Y = check_array_2d(Y, "Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(
            f"X and Y have different numbers of features: X has {X.shape[1]}, Y has {Y.shape[1]}"
        )
    return X, Y


def _s2_tensor(p):
    """Return the constant tensor S2 (p, p, p, p) of the fourth-order formula."""
    eye = np.eye(p)
    return (
        np.einsum("pq,rs->pqrs", eye, eye)
        + np.einsum("pr,qs->pqrs", eye, eye)
        + np.einsum("ps,qr->pqrs", eye, eye)
    )


class Kernel:
    """Stationary radial kernel :math:`k(x, y) = \\kappa(\\|x - y\\| / \\sigma)`.

    .. math::

        k(x, y) = \\kappa(\\rho), \\qquad \\rho = \\frac{\\|x - y\\|}{\\sigma},
        \\qquad \\kappa(0) = 1.

    Abstract base class of :class:`GaussianKernel`, :class:`ExponentialKernel`,
    :class:`Matern32Kernel` and :class:`Matern52Kernel`.  Subclasses provide the profile
    :math:`\\kappa` and the bounded coefficient functions of its derivatives (see the module
    docstring); the base class does the validation, the geometry and the assembly.  The
    Matern kernels are the Sobolev kernels of the PSD paper's Example 1, eq. (15), with the
    scale factor of the remark after Example 1 (no :math:`\\sqrt{2\\nu}` factor).

    A new kernel is one subclass, registered by name with
    :func:`psdsos.kernels.register_kernel` where it is defined.  It sets ``formula`` and
    ``differentiability`` and implements ``_kappa(rho)`` and ``_dkappa(rho)``
    (:math:`\\kappa` and :math:`\\kappa'`, elementwise on arrays of :math:`\\rho \\ge 0`);
    ``differentiability >= 2`` also needs ``_hessian_coefs(rho)`` (the pair
    :math:`(a, b)` of :meth:`hessian`) and ``differentiability >= 4``
    ``_fourth_coefs(rho)`` (the triple :math:`(c_2, c_3, c_4)` of :meth:`hessian_hessian`),
    all finite at :math:`\\rho = 0`.  ``_kappa_from_sq(rho2)`` (the profile of
    :math:`\\rho^2`, used for Gram matrices) may be overridden to skip a square root.

    Parameters
    ----------
    sigma : float, default=1.0
        Bandwidth :math:`\\sigma`, in ``[1e-75, 1e75]`` (the derivatives scale like
        :math:`\\sigma^{-4}`, which must stay a finite float); outside it ``ValueError``
        names ``sigma``.

    Attributes
    ----------
    name : str
        Kernel name, one of the keys of :data:`KERNELS` (set by ``register_kernel``).
    formula : str
        The kernel's formula, for error messages.
    sigma : float
        The validated bandwidth.
    differentiability : int
        Number of times :math:`k` is continuously differentiable as a function of
        :math:`x - y` (a large integer, 1000, for the infinitely smooth Gaussian kernel).

    Notes
    -----
    All methods take ``X`` of shape (n, p) and ``Y`` of shape (m, p) (``Y=None`` means
    ``Y = X``); 1-D arrays are rejected.  Derivatives are taken in the first argument
    ``x``; since these kernels are even functions of :math:`x - y`, the Hessian in the
    second argument is the same array.
    """

    name: str = "kernel"
    formula: str = "k(x,y)"
    differentiability: int = 0

    def __init__(self, sigma: float = 1.0) -> None:
        if type(self) is Kernel:
            raise TypeError(
                "Kernel is an abstract base class; use GaussianKernel, ExponentialKernel, "
                "Matern32Kernel, Matern52Kernel or get_kernel(name, sigma)"
            )
        self.sigma = check_sigma(sigma)

    # ------------------------------------------------------------------ hooks
    def _kappa_from_sq(self, rho2):
        """Profile as a function of rho^2 (used for values; default goes through rho)."""
        return self._kappa(np.sqrt(rho2))

    def _kappa(self, rho):  # pragma: no cover - abstract
        raise NotImplementedError

    def _dkappa(self, rho):  # pragma: no cover - abstract
        raise NotImplementedError

    def _hessian_coefs(self, rho):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fourth_coefs(self, rho):  # pragma: no cover - abstract
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def _require(self, order, method):
        """Raise ValueError if the kernel is not ``order`` times differentiable."""
        if self.differentiability >= order:
            return

        ok = kernel_names(differentiability=order)
        alternatives = " or ".join(", ".join(repr(n) for n in ok).rsplit(", ", 1))
        if order == 2:
            what = "twice differentiable"
        else:
            what = f"{order} times differentiable"
        kink = (
            " has a kink at x=y"
            if self.differentiability == 0
            else f" is only {self.differentiability} times differentiable at x=y"
        )
        raise ValueError(
            f"the {self.name!r} kernel is not {what} ({self.formula}{kink}); "
            f"{method} needs a kernel that is {what}: use {alternatives}"
        )

    def _fourth_order(self, X, Y, method):
        """What the third- and fourth-order formulas share: the check that the kernel is 4
        times differentiable, rho, the unit vectors, (c2, c3, c4) and the identity (p, p)."""
        self._require(4, method)
        X, Y = _check_pair(X, Y)
        rho, unit = self._geometry(X, Y)
        return rho, unit, self._fourth_coefs(rho), np.eye(X.shape[1])

    def _geometry(self, X, Y):
        """Return rho (n, m) and the unit vectors n (n, m, p), n = 0 where x = y."""
        diff = X[:, None, :] - Y[None, :, :]
        r = np.sqrt(np.einsum("abp,abp->ab", diff, diff))
        unit = np.divide(diff, r[..., None], out=np.zeros_like(diff), where=r[..., None] > 0)
        return r / self.sigma, unit

    # ------------------------------------------------------------- public API
    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Gram matrix :math:`K_{ij} = k(X_i, Y_j)`.

        .. math::

            K_{ij} = \\kappa\\big(\\|X_i - Y_j\\| / \\sigma\\big).

        Parameters
        ----------
        X : array-like of shape (n, p)
            First arguments.
        Y : array-like of shape (m, p), default=None
            Second arguments; ``None`` means ``Y = X`` (the Gram matrix of ``X``).

        Returns
        -------
        K : ndarray of shape (n, m)
            Kernel values; ``K[i, j] = 1`` exactly where ``X[i] == Y[j]``.
        """
        X, Y = _check_pair(X, Y)
        sq = cdist(X, Y, metric="sqeuclidean")
        return self._kappa_from_sq(sq / self.sigma**2)

    def diag(self, X: ArrayLike) -> np.ndarray:
        """Diagonal of the Gram matrix, :math:`k(x, x) = \\kappa(0) = 1`.

        .. math::

            d_i = k(X_i, X_i) = 1.

        Parameters
        ----------
        X : array-like of shape (n, p)
            Points.

        Returns
        -------
        d : ndarray of shape (n,)
            All ones.
        """
        X = check_array_2d(X, "X")
        return np.ones(X.shape[0])

    def gradient(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Gradient of the kernel in its first argument.

        .. math::

            G_{ij} = \\nabla_x k(x, y)\\big|_{x = X_i, y = Y_j}
            = \\frac{\\kappa'(\\rho)}{\\sigma} \\frac{x - y}{\\|x - y\\|},
            \\qquad \\rho = \\|x - y\\| / \\sigma,

        and :math:`G_{ij} = 0` where :math:`X_i = Y_j` (for the exponential kernel, which
        is not differentiable there, 0 is the symmetric subgradient).

        Parameters
        ----------
        X : array-like of shape (n, p)
            Points where the gradient is taken (first argument).
        Y : array-like of shape (m, p), default=None
            Second arguments; ``None`` means ``Y = X``.

        Returns
        -------
        G : ndarray of shape (n, m, p)
            ``G[i, j]`` is the gradient in ``x`` of ``k(x, Y[j])`` at ``x = X[i]``.
        """
        X, Y = _check_pair(X, Y)
        rho, unit = self._geometry(X, Y)
        return (self._dkappa(rho) / self.sigma)[..., None] * unit

    def hessian(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Hessian of the kernel in its first argument (PSD paper, eq. (23)).

        .. math::

            H_{ij} = \\nabla_x^2 k(x, y)\\big|_{x = X_i, y = Y_j}
            = \\frac{1}{\\sigma^2}\\Big(a(\\rho) I_p + b(\\rho)\\, n n^T\\Big),
            \\quad n = \\frac{x - y}{\\|x - y\\|},
            \\quad a = \\frac{\\kappa'(\\rho)}{\\rho}, \\quad b = \\kappa''(\\rho) - a,

        with :math:`a, b` written in closed forms that are finite at :math:`\\rho = 0`
        (where :math:`b = 0`, so :math:`H = a(0) I_p / \\sigma^2`).

        Parameters
        ----------
        X : array-like of shape (n, p)
            Points where the Hessian is taken (first argument).
        Y : array-like of shape (m, p) or None, default=None
            Second arguments (``None``: the rows of ``X``).

        Returns
        -------
        H : ndarray of shape (n, m, p, p)
            ``H[i, j]`` is the (symmetric) Hessian in ``x`` of ``k(x, Y[j])`` at
            ``x = X[i]``.  Because the kernel is even in :math:`x - y`, this is also the
            Hessian in the second argument, :math:`\\partial^2 k(X_i, y) / \\partial y^2`
            at :math:`y = Y_j`.

        Raises
        ------
        ValueError
            If the kernel is not twice differentiable (the exponential kernel).
        """
        self._require(2, "hessian")
        X, Y = _check_pair(X, Y)
        rho, unit = self._geometry(X, Y)
        a, b = self._hessian_coefs(rho)
        H = b[..., None, None] * (unit[..., :, None] * unit[..., None, :])
        idx = np.arange(X.shape[1])
        H[..., idx, idx] += a[..., None]
        return H / self.sigma**2

    def hessian_sum(self, X: ArrayLike, Y: ArrayLike, weights: ArrayLike) -> np.ndarray:
        """Weighted sum of kernel Hessians, without the (n, m, p, p) array of :meth:`hessian`.

        .. math::

            S_i = \\sum_j w_j \\nabla_x^2 k(x, Y_j)\\big|_{x = X_i}
            = \\frac{1}{\\sigma^2}\\Big(\\big(\\textstyle\\sum_j w_j a(\\rho_{ij})\\big) I_p
              + \\sum_j w_j b(\\rho_{ij})\\, n_{ij} n_{ij}^T\\Big)

        (the notation of :meth:`hessian`): the Hessian of :math:`f = \\sum_j w_j k(\\cdot, Y_j)`
        at the rows of ``X``.  Computed in blocks of rows, memory O(m p) per row instead of
        O(m p^2).

        Parameters
        ----------
        X : array-like of shape (n, p)
            Points where the Hessian is taken.
        Y : array-like of shape (m, p)
            Centres.
        weights : array-like of shape (m,)
            Weights w (finite).

        Returns
        -------
        S : ndarray of shape (n, p, p)
            Symmetric Hessians.

        Raises
        ------
        ValueError
            If the kernel is not twice differentiable, or ``weights`` is not a finite vector
            of length m.
        """
        self._require(2, "hessian_sum")
        X, Y = _check_pair(X, Y)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (Y.shape[0],) or not np.all(np.isfinite(w)):
            raise ValueError(
                f"weights must be a finite vector of length {Y.shape[0]} (one per row of Y), "
                f"got shape {w.shape}"
            )
        n, p = X.shape
        S = np.empty((n, p, p))
        step = max(1, _SUM_BLOCK_ENTRIES // max(Y.shape[0] * p, 1))
        idx = np.arange(p)
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            rho, unit = self._geometry(X[sl], Y)
            a, b = self._hessian_coefs(rho)
            wu = unit * (b * w)[..., None]
            blk = np.matmul(wu.transpose(0, 2, 1), unit)
            blk[:, idx, idx] += (a @ w)[:, None]
            S[sl] = 0.5 * (blk + blk.transpose(0, 2, 1))
        return S / self.sigma**2

    def hessian_hessian(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Fourth-order mixed derivatives, two in ``x`` and two in ``y``.

        .. math::

            D_{ijpqrs} = \\frac{\\partial^4 k(x, y)}
            {\\partial x_p \\partial x_q \\partial y_r \\partial y_s}
            \\Big|_{x = X_i, y = Y_j}
            = \\frac{1}{\\sigma^4}\\Big(c_2(\\rho) S^{(2)}_{pqrs}
            + c_3(\\rho) S^{(3)}_{pqrs}(n) + c_4(\\rho)\\, n_p n_q n_r n_s\\Big),

        the inner products :math:`\\langle \\partial_{pq} k_{x}, \\partial_{rs} k_{y}
        \\rangle_{\\mathcal{H}}` of the exact Hessian representation (PSD paper, eq. (21)
        and Appendix C.5, eq. (37)).  :math:`S^{(2)}` and :math:`S^{(3)}` are defined in
        the module docstring; for the Gaussian kernel
        :math:`(c_2, c_3, c_4) = \\kappa(\\rho)\\,(1, -\\rho^2, \\rho^4)`, for the Matern 5/2
        kernel :math:`(c_2, c_3, c_4) = e^{-\\rho}(1, -\\rho, \\rho(1 + \\rho)) / 3`.

        Parameters
        ----------
        X : array-like of shape (n, p)
            First arguments.
        Y : array-like of shape (m, p), default=None
            Second arguments; ``None`` means ``Y = X``.

        Returns
        -------
        D : ndarray of shape (n, m, p, p, p, p)
            Fully symmetric in its last four axes.  Memory is ``8 n m p^4`` bytes.

        Raises
        ------
        ValueError
            If the kernel is not four times differentiable (exponential, Matern 3/2).
        """
        _, unit, (c2, c3, c4), eye = self._fourth_order(X, Y, "hessian_hessian")
        nn = unit[..., :, None] * unit[..., None, :]
        S3 = (
            np.einsum("pq,abrs->abpqrs", eye, nn)
            + np.einsum("pr,abqs->abpqrs", eye, nn)
            + np.einsum("ps,abqr->abpqrs", eye, nn)
            + np.einsum("qr,abps->abpqrs", eye, nn)
            + np.einsum("qs,abpr->abpqrs", eye, nn)
            + np.einsum("rs,abpq->abpqrs", eye, nn)
        )
        D = c3[..., None, None, None, None] * S3
        D += c4[..., None, None, None, None] * np.einsum("abpq,abrs->abpqrs", nn, nn)
        D += c2[..., None, None, None, None] * _s2_tensor(eye.shape[0])
        return D / self.sigma**4

    def hessian_gradient(self, X: ArrayLike, Y: ArrayLike | None = None) -> np.ndarray:
        """Third-order mixed derivatives, two in ``x`` and one in ``y``.

        .. math::

            T_{ijpqr} = \\frac{\\partial^3 k(x, y)}{\\partial x_p \\partial x_q \\partial y_r}
            \\Big|_{x = X_i, y = Y_j}
            = -\\frac{\\rho}{\\sigma^3}\\Big(c_2(\\rho)\\,(\\delta_{pq} n_r + \\delta_{pr} n_q
            + \\delta_{qr} n_p) + c_3(\\rho)\\, n_p n_q n_r\\Big),

        with :math:`n = (x - y)/\\|x - y\\|` and the coefficients :math:`c_2 = g_2`,
        :math:`c_3 = \\rho^2 g_3` of :meth:`hessian_hessian` (module docstring), so no new
        closed form is needed.  These are the gradients :math:`\\nabla_y \\partial_{pq}
        k_x(y)` of the functions :math:`\\partial_{pq} k_x` of the exact Hessian
        representation (PSD paper, eq. (21) and Appendix C.5, eq. (37)): the gradient of a
        fitted :math:`f = \\sum_j \\sum_{p,q} \\Gamma^{(j)}_{pq} \\partial_{pq} k_{z_j}`.

        Parameters
        ----------
        X : array-like of shape (n, p)
            First arguments (differentiated twice).
        Y : array-like of shape (m, p), default=None
            Second arguments (differentiated once); ``None`` means ``Y = X``.

        Returns
        -------
        T : ndarray of shape (n, m, p, p, p)
            Symmetric in its last three axes; 0 where ``X[i] == Y[j]``.

        Raises
        ------
        ValueError
            If the kernel is not four times differentiable (exponential, Matern 3/2).
        """
        rho, unit, (c2, c3, _), eye = self._fourth_order(X, Y, "hessian_gradient")
        sym = (
            np.einsum("pq,abr->abpqr", eye, unit)
            + np.einsum("pr,abq->abpqr", eye, unit)
            + np.einsum("qr,abp->abpqr", eye, unit)
        )
        T = (rho * c2)[..., None, None, None] * sym
        T += (rho * c3)[..., None, None, None] * np.einsum(
            "abp,abq,abr->abpqr", unit, unit, unit
        )
        return -T / self.sigma**3

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of the kernel, scikit-learn style.

        .. math::

            \\{\\texttt{sigma}: \\sigma\\}

        Parameters
        ----------
        deep : bool, default=True
            Ignored (a kernel holds no sub-objects); accepted for scikit-learn compatibility.

        Returns
        -------
        params : dict
            ``{"sigma": sigma}``.
        """
        return {"sigma": self.sigma}

    def __repr__(self):
        return f"{type(self).__name__}(sigma={self.sigma!r})"

    def __eq__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return type(self) is type(other) and self.sigma == other.sigma

    def __hash__(self):
        return hash((type(self).__name__, self.sigma))


#: Every registered kernel class by (lower-case) name, in registration order.
_REGISTRY: dict[str, type] = {}


#: Other names of registered kernels: {alias: name}, lower case (``"rbf"``: the Gaussian).
_ALIASES: dict[str, str] = {}


def _is_radial(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, Kernel)


def kernel_names(*, radial_only: bool = True, differentiability: int = 0) -> tuple[str, ...]:
    """Names of the registered kernels, in registration order.

    Parameters
    ----------
    radial_only : bool, default=True
        Only the radial kernels (:class:`Kernel` subclasses: a bandwidth and derivatives,
        the keys of :data:`KERNELS`); ``False`` adds, after them, the kernels that give
        Gram matrices only (``"linear"``), which the SELF estimators accept.
    differentiability : int, default=0
        Only the radial kernels at least this many times differentiable
        (``Kernel.differentiability``): 2 for Hessians, 4 for ``hessian_hessian``.

    Returns
    -------
    names : tuple of str

    Examples
    --------
    >>> from psdsos.kernels import kernel_names
    >>> kernel_names(differentiability=4)[:2]
    ('gaussian', 'matern52')
    """
    radial = tuple(n for n, c in _REGISTRY.items()
                   if _is_radial(c) and getattr(c, "differentiability", 0) >= differentiability)
    if radial_only or differentiability > 0:
        return radial
    return radial + tuple(n for n, c in _REGISTRY.items() if not _is_radial(c))
