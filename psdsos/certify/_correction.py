r"""The certified-shape predictor's correction.

It adds to the fit the smallest correction that the certificates prove sufficient (all in
standardized units u, on the box [lo, hi]):

* ``derivative`` constraint in feature p with bound -e < 0: :math:`+ s\,e\,(u_p - a_p)`
  (the slope in p moves by e in the constraint's direction);
* ``hessian`` constraint on S with bound -e < 0: :math:`+ s\,\frac e2\sum_{p\in S}(u_p - a_p)^2`
  (s Hess_S moves by e I), the anchor a_p at the end of [lo_p, hi_p] that keeps the slope of
  the quadratic on the side of a monotonicity constraint in p (lo_p for increasing and convex
  or decreasing and concave, hi_p for the other two), the centre otherwise;
* bounds last: the corrected function's certified range (the bounds' certificates plus the
  extreme values of the corrections, in closed form) is moved inside [lower, upper] by a
  constant shift (one bound) or an increasing affine map of the values (both bounds), which
  keeps every derivative and Hessian constraint (their functions are multiplied by a positive
  number).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from psdsos.sos._constraint import KernelExpansion, ShapeConstraint

__all__ = ["Correction", "CorrectedFunction", "build_correction"]


@dataclass
class Correction:
    """h(u) = scale * (f(u) + sum_p lin_p (u_p - a_p) + quad_p (u_p - a_p)^2) + shift."""

    lin: np.ndarray
    quad: np.ndarray
    anchor: np.ndarray
    scale: float = 1.0
    shift: float = 0.0

    @classmethod
    def identity(cls, p: int) -> Correction:
        return cls(np.zeros(p), np.zeros(p), np.zeros(p))

    def terms(self, U):
        """(value, gradient, diagonal Hessian) of the polynomial part at the rows of U."""
        D = U - self.anchor
        return (D @ self.lin + (D * D) @ self.quad, self.lin + 2.0 * self.quad * D,
                2.0 * self.quad)

    def range(self, lo, hi) -> tuple[float, float]:
        """Min and max of the polynomial part over the box (separable: per coordinate, at
        the ends or the vertex)."""
        mn = mx = 0.0
        for j in range(lo.shape[0]):
            a, b, c = self.lin[j], self.quad[j], self.anchor[j]
            cands = [lo[j] - c, hi[j] - c]
            if b != 0.0:
                v = -a / (2.0 * b)
                if lo[j] - c <= v <= hi[j] - c:
                    cands.append(v)
            vals = [a * x + b * x * x for x in cands]
            mn += min(vals)
            mx += max(vals)
        return mn, mx

    def to_arrays(self) -> np.ndarray:
        return np.vstack([self.lin, self.quad, self.anchor,
                          np.full_like(self.lin, self.scale), np.full_like(self.lin, self.shift)])

    @classmethod
    def from_arrays(cls, A: np.ndarray) -> Correction:
        return cls(A[0].copy(), A[1].copy(), A[2].copy(), float(A[3, 0]), float(A[4, 0]))


def build_correction(constraints: list[ShapeConstraint], bounds: list[float], box) -> Correction:
    """The smallest correction the bounds prove sufficient (module docstring); ``bounds``:
    the certified (or sampled) lower bound of each constraint function, standardized."""
    lo, hi = box
    p = lo.shape[0]
    corr = Correction.identity(p)
    corr.anchor = 0.5 * (lo + hi)
    mono = np.zeros(p)
    for con in constraints:
        if con.kind == "derivative":
            mono[con.features[0]] = con.sign
    for con, b in zip(constraints, bounds, strict=True):
        e = max(0.0, -b)
        if con.kind == "derivative" and e > 0:
            corr.lin[con.features[0]] += con.sign * e
        elif con.kind == "hessian":
            for j in con.features:
                if mono[j] != 0:
                    corr.anchor[j] = lo[j] if mono[j] * con.sign > 0 else hi[j]
            if e > 0:
                corr.quad[list(con.features)] += con.sign * 0.5 * e
    # the bounds, after the shape corrections
    vlo = vhi = None
    cmin, cmax = corr.range(lo, hi)
    for con, b in zip(constraints, bounds, strict=True):
        if con.kind != "value":
            continue
        if con.sign > 0:  # f >= offset: min(f + c) - offset >= b + cmin
            vlo = (con.offset, b + cmin)
        else:  # f <= offset: offset - max(f + c) >= b - cmax
            vhi = (con.offset, b - cmax)
    if vlo is not None and vhi is not None:
        (L, bl), (U, bu) = vlo, vhi
        if bl < 0 or bu < 0:
            # values proved in [L + min(bl, 0), U - min(bu, 0)]: map that interval onto [L, U]
            a, b_ = L + min(bl, 0.0), U - min(bu, 0.0)
            corr.scale = (U - L) / (b_ - a)
            corr.shift = L - corr.scale * a
    elif vlo is not None and vlo[1] < 0:
        corr.shift = -vlo[1]
    elif vhi is not None and vhi[1] < 0:
        corr.shift = vhi[1]
    return corr


@dataclass
class CorrectedFunction:
    """The certified-shape predictor h = scale (f + correction) + shift, standardized units.

    ``box = (lo, hi)``: outside it h is extended linearly, h(P u) + grad h(P u)^T (u - P u)
    with P the projection onto the box (``extrapolation="linear"``); ``None``: the kernel
    expansion everywhere (``extrapolation="kernel"``).
    """

    fit: KernelExpansion
    correction: Correction
    box: tuple[np.ndarray, np.ndarray] | None = None

    def inside(self, U: np.ndarray, order: int) -> np.ndarray:
        """Value (order 0), gradient (1) or Hessian (2) of h at the rows of U, with the
        kernel expansion everywhere."""
        c, f = self.correction, self.fit
        if order == 0:
            return c.scale * (f.value(U) + c.terms(U)[0]) + c.shift
        if order == 1:
            return c.scale * (f.gradient(U) + c.terms(U)[1])
        return c.scale * (f.hessian(U) + np.diag(c.terms(U)[2])[None])

    def hessian_slope(self, U: np.ndarray, D: np.ndarray) -> np.ndarray:
        """sum_r d_r d/du_r of Hess h at the rows of U, along the rows of D (the correction
        is quadratic: only the kernel part contributes)."""
        f = self.fit
        out = np.empty((U.shape[0], U.shape[1], U.shape[1]))
        step = max(1, (1 << 21) // max(f.C.shape[0] * U.shape[1] ** 3, 1))
        for i in range(0, U.shape[0], step):
            # hessian_gradient differentiates its second argument once: d/du = -d/dc
            T = f.kernel.hessian_gradient(U[i:i + step], f.C)
            out[i:i + step] = -np.einsum("mlpqr,l,mr->mpq", T, f.alpha, D[i:i + step])
        return self.correction.scale * out

    def __call__(self, U: np.ndarray, order: int) -> np.ndarray:
        """Value (order 0), gradient (1) or Hessian (2) of h, extended outside the box
        (the derivatives of the interior coordinates pick up the Hessian of h and its
        derivative along u - P u)."""
        if self.box is None:
            return self.inside(U, order)
        P = np.clip(U, self.box[0], self.box[1])
        D = U - P
        out = self.inside(P, order)
        ext = np.flatnonzero(np.any(D != 0.0, axis=1))
        if ext.size == 0:
            return out
        Pe, De = P[ext], D[ext]
        inner = (De == 0.0).astype(np.float64)  # the coordinates inside [lo, hi]
        if order == 0:
            out[ext] += np.einsum("mp,mp->m", self.inside(Pe, 1), De)
        elif order == 1:
            out[ext] += inner * np.einsum("mpq,mq->mp", self.inside(Pe, 2), De)
        else:
            # d/du_p d/du_q of h(P u) + grad h(P u)^T D(u): in the inner coordinates
            # Hess h + d/dD Hess h; a cross term once; the outer block vanishes
            H = out[ext]
            mask = inner[:, :, None] * inner[:, None, :]
            both = inner[:, :, None] + inner[:, None, :]
            out[ext] = np.where(both > 0, H, 0.0) + mask * self.hessian_slope(Pe, De)
        return out
