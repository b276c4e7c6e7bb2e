r"""Closed-form bounds of the RKHS distance between a kernel functional at two points.

For a translation-invariant kernel and a bounded linear functional :math:`L` (point
evaluation, :math:`\partial_p`, :math:`\partial_{uu}`), :math:`\|L_x k - L_c k\|_{\mathcal{H}}^2`
depends only on :math:`\delta = x - c`; :func:`representer_radius` bounds its supremum over a
cell :math:`\{c + \delta : |\delta_p| \le h_p\}` (Aubin-Frankowski & Szabo 2020, "Hard
shape-constrained kernel machines", NeurIPS).  Used by
:mod:`psdsos.sos._box_certify`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_array_2d, check_scalar
from psdsos.kernels import GaussianKernel, Kernel, Matern32Kernel, Matern52Kernel

__all__ = ["representer_radius"]

KINDS = ("value", "derivative", "hessian")
_ORDER = {"value": 0, "derivative": 1, "hessian": 2}
_E = float(np.e)
#: Below this rho the profiles 1 - P(rho) e^{-rho} are summed as series (no cancellation).
_SERIES_RHO = 1e-2


def _one_minus(rho, third):
    """1 - (1 + rho + third rho^2) e^{-rho} >= 0 without cancellation at small rho: the series
    sum_{n >= 2} (-1)^n (n - 1)(1 - third n) rho^n / n! below 1e-2 (truncation < 1e-25 rho^2)."""
    direct = 1.0 - (1.0 + rho + third * rho**2) * np.exp(-rho)
    r = np.minimum(rho, _SERIES_RHO)
    series = sum((-1) ** n * (n - 1) * (1.0 - third * n) * r**n / np.prod(np.arange(1, n + 1))
                 for n in range(2, 10))
    return np.where(rho < _SERIES_RHO, series, direct)


def _gaussian_sq(kind, r2, t2):
    # 1 - kappa >= 0 is maximal at the corner; kappa t^2 <= min(t2max, 2/e) (x e^{-x/2} <= 2/e);
    # the negative term -kappa t^4 of the Hessian case is dropped.
    one_minus = -np.expm1(-0.5 * r2)
    if kind == "value":
        return 2.0 * one_minus
    if kind == "derivative":
        return 2.0 * (one_minus + np.minimum(t2, 2.0 / _E))
    return 2.0 * (3.0 * one_minus + 6.0 * np.minimum(t2, 2.0 / _E))


def _matern32_sq(kind, r2, t2):
    rho = np.sqrt(r2)
    if kind == "value":
        return 2.0 * _one_minus(rho, 0.0)
    if kind == "derivative":
        # rho n_p^2 e^{-rho} <= min(|delta_p|/sigma, 1/e)
        return 2.0 * (-np.expm1(-rho) + np.minimum(np.sqrt(t2), 1.0 / _E))
    raise NotImplementedError(
        "the 'matern32' kernel is only twice differentiable: the second derivatives of its "
        "RKHS functions are not bounded functionals, so no 'hessian' radius exists; use "
        "'gaussian' or 'matern52' (the certificate is then 'sampled')"
    )


def _matern52_sq(kind, r2, t2):
    rho = np.sqrt(r2)
    if kind == "value":
        return 2.0 * _one_minus(rho, 1.0 / 3.0)
    if kind == "derivative":
        # t^2 e^{-rho} <= min(t2max, rho^2 e^{-rho} <= 4/e^2)
        return (2.0 / 3.0) * (_one_minus(rho, 0.0) + np.minimum(t2, 4.0 / _E**2))
    # 2 rho s^2 e^{-rho} <= 2 min(|h_S|/sigma, 1/e); the -rho(1+rho)s^4 term is dropped
    return 2.0 * (-np.expm1(-rho) + 2.0 * np.minimum(np.sqrt(t2), 1.0 / _E))


#: kernel class -> (bracket of the squared radius, ||L_c k||^2 sigma^{2 order} per kind).
_RADII = {
    GaussianKernel: (_gaussian_sq, {"value": 1.0, "derivative": 1.0, "hessian": 3.0}),
    Matern32Kernel: (_matern32_sq, {"value": 1.0, "derivative": 1.0}),
    Matern52Kernel: (_matern52_sq, {"value": 1.0, "derivative": 1.0 / 3.0, "hessian": 1.0}),
}


def _radius_table(kernel, kind):
    """The squared-radius bracket and ||L_c k||^2 for ``kernel``, or NotImplementedError."""
    entry = _RADII.get(type(kernel))
    if entry is None:
        raise NotImplementedError(
            f"no closed-form representer radius for the {type(kernel).__name__} kernel; "
            "supported: GaussianKernel (value, derivative, hessian), Matern32Kernel (value, "
            "derivative), Matern52Kernel (value, derivative, hessian); the certificate is then "
            "'sampled'"
        )
    sq, norms = entry
    if kind not in norms:
        sq(kind, np.zeros(1), np.zeros(1))  # raises the kernel's own message
    return sq, norms[kind]


def _check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    return kind


def _check_index(kind, p, feature, subset):
    """The features the functional reads: [feature] for 'derivative', S for 'hessian'."""
    if kind == "derivative":
        f = check_scalar(feature, "feature", lower=0, upper=p - 1, integer=True)
        return [f]
    if kind == "hessian":
        if subset is None or isinstance(subset, (str, bytes)):
            raise ValueError(f"subset must be a non-empty list of feature indices, got {subset!r}")
        S = [check_scalar(q, "subset", lower=0, upper=p - 1, integer=True) for q in subset]
        if not S or len(set(S)) != len(S):
            raise ValueError(f"subset must be a non-empty list of distinct indices, got {subset!r}")
        return S
    return list(range(p))


def representer_radius(kernel: Kernel, kind: str, h: ArrayLike, *, feature: int | None = None,
                       subset: Sequence[int] | None = None) -> np.ndarray:
    r"""Upper bound of :math:`\sup_{|\delta_p| \le h_p} \|L_{c+\delta} k - L_c k\|_{\mathcal{H}}`.

    For a translation-invariant kernel the squared norm depends only on :math:`\delta`.  With
    :math:`\kappa_h = \exp(-\|h\|^2 / (2\sigma^2))`, :math:`\rho = \|\delta\|/\sigma`,
    :math:`t = \delta_p / \sigma` (derivative) or :math:`u \cdot \delta / \sigma`
    (Hessian, so :math:`t^2 \le \|h_S\|^2 / \sigma^2`), the exact squared norms and the
    bounds used are, for the Gaussian kernel,

    .. math::

        \text{value: } & 2(1 - \kappa(\delta)) \le 2 (1 - \kappa_h), \\
        \text{derivative: } & \tfrac{2}{\sigma^2}\big(1 - \kappa + \kappa t^2\big)
            \le \tfrac{2}{\sigma^2}\big(1 - \kappa_h + \min(t^2_{\max}, 2/e)\big), \\
        \partial_{uu}: & \tfrac{2}{\sigma^4}\big(3 - \kappa (t^4 - 6 t^2 + 3)\big)
            \le \tfrac{2}{\sigma^4}\big(3 (1 - \kappa_h) + 6 \min(t^2_{\max}, 2/e)\big),

    (:math:`\kappa t^2 \le t^2 e^{-t^2/2} \le 2/e`; :math:`-\kappa t^4 \le 0` dropped), the
    bound for :math:`\partial_{uu}` holding for every unit :math:`u` supported on :math:`S`.
    For the Matern kernels (:math:`e = e^{-\rho}`, :math:`n = \delta / \|\delta\|`,
    :math:`s = u \cdot n`; :math:`\rho n_p^2 \le |\delta_p| / \sigma`,
    :math:`\rho s^2 \le \|h_S\| / \sigma`):

    .. math::

        \text{3/2 value: } & 2(1 - (1 + \rho) e), \qquad
        \text{3/2 derivative: } \tfrac{2}{\sigma^2}(1 - e + \rho n_p^2 e), \\
        \text{5/2 value: } & 2(1 - (1 + \rho + \rho^2/3) e), \qquad
        \text{5/2 derivative: } \tfrac{2}{3\sigma^2}(1 - (1 + \rho) e + t^2 e), \\
        \text{5/2 } \partial_{uu}: & \tfrac{2}{\sigma^4}\big(1 - e
            + 2 \rho s^2 e - \rho (1 + \rho) s^4 e / 3\big),

    bounded by :math:`\rho \to \|h\| / \sigma` in the decreasing profiles and
    :math:`\rho n_p^2 e \le \min(h_p/\sigma, 1/e)`, :math:`t^2 e \le \min(t^2_{\max}, 4/e^2)`,
    :math:`\rho s^2 e \le \min(\|h_S\|/\sigma, 1/e)` (the Matern radii shrink like
    :math:`\sqrt{h}` for the highest derivative: its functional is only Hoelder-1/2).
    These are the squared norms :math:`L_x L_x k + L_c L_c k - 2 L_x L_c k` of the kernel's
    derivatives (:meth:`~psdsos.kernels.Kernel.hessian`,
    :meth:`~psdsos.kernels.Kernel.hessian_hessian`).

    Parameters
    ----------
    kernel : Kernel
        A :class:`~psdsos.kernels.GaussianKernel` (every kind),
        :class:`~psdsos.kernels.Matern32Kernel` ("value", "derivative") or
        :class:`~psdsos.kernels.Matern52Kernel` (every kind).
    kind : {"value", "derivative", "hessian"}
        The functional: :math:`f(x)`, :math:`\partial_p f(x)`, :math:`u^T \nabla^2 f(x) u`.
    h : array-like of shape (n_cells, p)
        Half-widths of the cells (non-negative).
    feature : int, default=None
        The feature :math:`p` of ``"derivative"``.
    subset : sequence of int, default=None
        The features :math:`S` of ``"hessian"``.

    Returns
    -------
    radius : ndarray of shape (n_cells,)
        The bound; 0 where ``h`` is 0.

    Raises
    ------
    NotImplementedError
        For another kernel, or a functional that is not bounded on its RKHS.
    ValueError
        If ``kind``, ``h``, ``feature`` or ``subset`` is invalid.

    Examples
    --------
    >>> from psdsos.kernels import GaussianKernel
    >>> r = representer_radius(GaussianKernel(1.0), "value", [[0.1, 0.0]])
    >>> print(round(float(r[0]), 4))  # sqrt(2 (1 - exp(-0.005)))
    0.0999
    """
    kind = _check_kind(kind)
    H = check_array_2d(h, "h")
    if np.any(H < 0):
        raise ValueError("h must be non-negative (half-widths of the cells)")
    sq, _ = _radius_table(kernel, kind)
    idx = _check_index(kind, H.shape[1], feature, subset)
    s = kernel.sigma
    r2 = np.einsum("np,np->n", H, H) / s**2
    t2 = np.einsum("np,np->n", H[:, idx], H[:, idx]) / s**2
    return np.sqrt(np.maximum(sq(kind, r2, t2), 0.0)) / s ** _ORDER[kind]


def _double_factorial(n):
    """n!! for an odd n >= 1."""
    return float(np.prod(np.arange(n, 0, -2)))
