"""Exponential map, logarithm map and geodesic distance on the unit sphere S^{k-1}."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos.geometry._checks import UNIT_TOL, as_float_array, check_sphere_points

__all__ = ["sphere_exp", "sphere_log", "sphere_distance"]

#: Below this norm of y - <x, y> x with <x, y> < 0, x and y are treated as antipodal.
_ANTIPODAL_TOL = 1e-12


def _broadcast(x, y, namex, namey):
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(
            f"{namex} and {namey} must have the same dimension k, got {x.shape} and {y.shape}"
        )
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(
            f"shapes of {namex} {x.shape} and {namey} {y.shape} do not broadcast"
        ) from None
    return np.broadcast_to(x, shape), np.broadcast_to(y, shape)


def _out(a):
    return float(a) if a.ndim == 0 else a


def geodesic_angle(x: np.ndarray, y: np.ndarray) -> NDArray[np.float64]:
    r"""Angle :math:`\arccos\langle x, y\rangle = 2 \operatorname{atan2}(\|x - y\|,
    \|x + y\|)` between unit vectors along the last axis (batch shapes broadcast), in the
    second form: accurate for nearby and for nearly antipodal points.  No checks: the one
    formula of the sphere's geodesic distance (:func:`sphere_distance` checks its inputs
    first; the sphere output space of :mod:`psdsos.structured` calls it directly)."""
    return 2.0 * np.arctan2(np.linalg.norm(x - y, axis=-1), np.linalg.norm(x + y, axis=-1))


def sphere_distance(x: ArrayLike, y: ArrayLike) -> float | NDArray[np.float64]:
    r"""Geodesic (great-circle) distance on the unit sphere.

    .. math::

        d(x, y) = \arccos \langle x, y \rangle
                = 2 \operatorname{atan2}\big(\|x - y\|, \|x + y\|\big) \in [0, \pi],

    evaluated in the second form, accurate for nearby and for nearly antipodal points.

    Parameters
    ----------
    x, y : array-like of shape (k,) or (..., k)
        Unit vectors (norm 1 to within 1e-8); batch shapes broadcast.

    Returns
    -------
    d : float or ndarray of shape (...)
        Distances (a Python float for single points).

    Raises
    ------
    ValueError
        If a point is not unit-norm, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import sphere_distance
    >>> round(sphere_distance([1.0, 0.0], [0.0, 1.0]), 12)
    1.570796326795
    """
    xx = check_sphere_points(x, "x")
    yy = check_sphere_points(y, "y")
    xx, yy = _broadcast(xx, yy, "x", "y")
    return _out(geodesic_angle(xx, yy))


def sphere_exp(x: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    r"""Exponential map on the unit sphere.

    .. math::

        \operatorname{Exp}_x(v) = \cos(\|v\|)\, x + \frac{\sin \|v\|}{\|v\|}\, v ,
        \qquad \langle x, v \rangle = 0 ,

    (with :math:`\sin(0)/0 = 1`); the result is renormalized to unit norm.

    Parameters
    ----------
    x : array-like of shape (k,) or (..., k)
        Base point(s), unit vectors.
    v : array-like of shape (k,) or (..., k)
        Tangent vector(s) at ``x``: :math:`|\langle x, v\rangle| \le 10^{-8} \max(1, \|v\|)`;
        the residual normal component is removed. Batch shapes broadcast.

    Returns
    -------
    y : ndarray of shape (..., k)
        Unit vectors.

    Raises
    ------
    ValueError
        If ``x`` is not unit-norm, ``v`` is not tangent at ``x``, or shapes mismatch.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import sphere_exp
    >>> np.allclose(sphere_exp([1.0, 0.0], [0.0, np.pi / 2]), [0.0, 1.0])
    True
    """
    xx = check_sphere_points(x, "x")
    vv = as_float_array(v, "v")
    if vv.ndim < 1:
        raise ValueError(f"v must be an array of shape (k,) or (..., k), got shape {vv.shape}")
    xx, vv = _broadcast(xx, vv, "x", "v")
    inner = np.sum(xx * vv, axis=-1, keepdims=True)
    nv = np.linalg.norm(vv, axis=-1, keepdims=True)
    if np.any(np.abs(inner) > UNIT_TOL * np.maximum(1.0, nv)):
        raise ValueError(
            "v must be tangent to the sphere at x (<x, v> = 0); largest |<x, v>| = "
            f"{float(np.abs(inner).max()):.3g}"
        )
    vv = vv - inner * xx
    nv = np.linalg.norm(vv, axis=-1, keepdims=True)
    y = np.cos(nv) * xx + np.sinc(nv / np.pi) * vv
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def sphere_log(x: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    r"""Logarithm map on the unit sphere (inverse of :func:`sphere_exp`).

    .. math::

        \operatorname{Log}_x(y) = \frac{\theta}{\|p\|}\, p, \qquad
        p = y - \langle x, y \rangle x, \qquad
        \theta = \operatorname{atan2}\big(\|p\|, \langle x, y\rangle\big) = d(x, y) ,

    with :math:`\operatorname{Log}_x(x) = 0`. Undefined for antipodal points.

    Parameters
    ----------
    x, y : array-like of shape (k,) or (..., k)
        Unit vectors; batch shapes broadcast.

    Returns
    -------
    v : ndarray of shape (..., k)
        Tangent vector(s) at ``x`` with :math:`\|v\| = d(x, y)`.

    Raises
    ------
    ValueError
        If a point is not unit-norm, shapes mismatch, or some pair is antipodal
        (:math:`\|p\| \le 10^{-12}` and :math:`\langle x, y\rangle < 0`).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.geometry import sphere_log
    >>> np.allclose(sphere_log([1.0, 0.0], [0.0, 1.0]), [0.0, np.pi / 2])
    True
    """
    xx = check_sphere_points(x, "x")
    yy = check_sphere_points(y, "y")
    xx, yy = _broadcast(xx, yy, "x", "y")
    inner = np.sum(xx * yy, axis=-1, keepdims=True)
    p = yy - inner * xx
    npn = np.linalg.norm(p, axis=-1, keepdims=True)
    if np.any((npn <= _ANTIPODAL_TOL) & (inner < 0)):
        raise ValueError("sphere_log is undefined for antipodal points x and y = -x")
    theta = np.arctan2(npn, inner)
    scale = np.divide(theta, npn, out=np.zeros_like(theta), where=npn > 0)
    return scale * p
