r"""The shape constraints' functions g(z), defined once for every layer that uses them.

The model is a kernel expansion :math:`f(x) = \beta_0 + \beta^T x + \sum_l \alpha_l k(x, c_l)`
(:class:`KernelExpansion`; the affine part may be absent) and a shape constraint
(:class:`ShapeConstraint`) asks a linear functional of f to be non-negative (PSD for a
Hessian block) on a box, section 4 of the PSD paper (eq. 13-14):

* ``"value"``: :math:`g(z) = s\,(f(z) - b)`, d = 1 (bounds);
* ``"derivative"``: :math:`g(z) = s\,\partial_p f(z)`, d = 1 (monotonicity);
* ``"hessian"``: :math:`g(z) = s\,\nabla^2_S f(z)`, d = |S| (convexity, eq. 28's constraint
  for S = all features).

:func:`constraint_rows` gives g's linear map in the coefficients at points (what the SoS
blocks of the problems and of :func:`~psdsos.sos.kernel_shape_constraint` equate to
:math:`\Psi_j^T\mathbf B\Psi_j`) and :func:`constraint_function` its value at points: the
smallest eigenvalue of :math:`g(z)` for a Hessian block (what the exchange searches and
the certificates bound).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from psdsos.kernels import Kernel

__all__ = ["KINDS", "KernelExpansion", "ShapeConstraint", "constraint_function",
           "constraint_rows", "unit_kernel"]

#: The kinds of constraint function.
KINDS = ("value", "derivative", "hessian")


@dataclass(frozen=True)
class ShapeConstraint:
    """One shape constraint: ``g(z) = sign * L_z f (- offset)`` must be >= 0 (PSD).

    Parameters
    ----------
    kind : {"value", "derivative", "hessian"}
    features : tuple of int
        ``()`` for "value", ``(p,)`` for "derivative", the subset S for "hessian".
    sign : float, +1 or -1
    offset : float
        "value" only: g = sign * (f - offset).
    name : str
        A readable name, e.g. ``"increasing[0]"`` or ``"concave[0,1]"``.
    """

    kind: str
    features: tuple[int, ...] = ()
    sign: float = 1.0
    offset: float = 0.0
    name: str = field(default="")

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.sign not in (1.0, -1.0):
            raise ValueError(f"sign must be +1 or -1, got {self.sign!r}")
        if self.kind == "value" and self.features:
            raise ValueError("a 'value' constraint takes no features")
        if self.kind == "derivative" and len(self.features) != 1:
            raise ValueError("a 'derivative' constraint takes one feature")
        if self.kind == "hessian" and not self.features:
            raise ValueError("a 'hessian' constraint takes at least one feature")

    @property
    def d(self) -> int:
        """Size of the constraint's matrices (1 but for Hessian blocks)."""
        return len(self.features) if self.kind == "hessian" else 1

    @property
    def order(self) -> int:
        """Order of the derivative the constraint takes (0, 1 or 2)."""
        return KINDS.index(self.kind)


@dataclass
class KernelExpansion:
    """f(u) = beta_0 + beta^T u + sum_l alpha_l k(u, c_l).

    Attributes
    ----------
    kernel : Kernel
    C : ndarray (q, p)
        The centres c_l.
    alpha : ndarray (q,)
    beta : ndarray (1 + p,), or empty without affine part
    """

    kernel: Kernel
    C: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    def value(self, U: np.ndarray) -> np.ndarray:
        f = self.kernel(U, self.C) @ self.alpha
        return f + (self.beta[0] + U @ self.beta[1:] if self.beta.size else 0.0)

    def gradient(self, U: np.ndarray) -> np.ndarray:
        g = np.einsum("mip,i->mp", self.kernel.gradient(U, self.C), self.alpha)
        return g + (self.beta[1:] if self.beta.size else 0.0)

    def hessian(self, U: np.ndarray) -> np.ndarray:
        return self.kernel.hessian_sum(U, self.C, self.alpha)

    def norm(self) -> float:
        """||f_k||_H, the kernel part's RKHS norm."""
        a = self.alpha
        return float(np.sqrt(max(float(a @ self.kernel(self.C, self.C) @ a), 0.0)))


def constraint_function(fit: KernelExpansion, con: ShapeConstraint, U: np.ndarray,
                        chunk: int = 2048) -> np.ndarray:
    """g(u) at the rows of U: s (f - b), s d_p f, or lambda_min(s Hess_S f)."""
    out = np.empty(U.shape[0])
    for i in range(0, U.shape[0], chunk):
        V = U[i:i + chunk]
        if con.kind == "value":
            out[i:i + chunk] = con.sign * (fit.value(V) - con.offset)
        elif con.kind == "derivative":
            out[i:i + chunk] = con.sign * fit.gradient(V)[:, con.features[0]]
        else:
            S = list(con.features)
            H = fit.hessian(V)[:, S][:, :, S]
            out[i:i + chunk] = np.linalg.eigvalsh(con.sign * H)[:, 0]
    return out


def constraint_rows(con: ShapeConstraint, kernel: Kernel, C: np.ndarray, Z: np.ndarray,
                    *, packed: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """g's linear map at the points Z, before the sign: g(z_j) = s (K alpha + A beta + c).

    Parameters
    ----------
    con : ShapeConstraint
    kernel : Kernel
    C : ndarray (q, p)
        Centres of the expansion.
    Z : ndarray (m, p)
        Points.
    packed : bool, default=False
        Hessian blocks: one row per entry of the upper triangle (row-major, t = d (d + 1) / 2
        rows per point) instead of all d^2 entries.

    Returns
    -------
    K : ndarray (m t, q)
        The kernel part: row j t + k gives entry k of g(z_j) (t = 1, d^2 or d (d + 1) / 2).
    A : ndarray (m t, 1 + p)
        The affine part (coefficients beta_0, beta_1..p).
    c : ndarray (m t,)
        The constant (-offset for "value", else 0).
    """
    Z = np.asarray(Z, dtype=np.float64)
    m, p = Z.shape
    if con.kind == "value":
        return kernel(Z, C), np.hstack([np.ones((m, 1)), Z]), np.full(m, -con.offset)
    if con.kind == "derivative":
        j = con.features[0]
        A = np.zeros((m, p + 1))
        A[:, 1 + j] = 1.0
        return kernel.gradient(Z, C)[:, :, j], A, np.zeros(m)
    S = np.asarray(con.features)
    d = len(S)
    if packed:
        iu, ju = np.triu_indices(d)
        H = kernel.hessian(Z, C)[:, :, S[iu], S[ju]]  # (m, q, t)
        K = H.transpose(0, 2, 1).reshape(-1, C.shape[0])
    else:
        Hs = kernel.hessian(Z, C)[:, :, S][:, :, :, S]  # (m, q, d, d)
        K = Hs.transpose(0, 2, 3, 1).reshape(m * d * d, -1)
    return K, np.zeros((K.shape[0], p + 1)), np.zeros(K.shape[0])


def unit_kernel(kernel: Kernel) -> Kernel:
    """The kernel with bandwidth 1 (that of the standardized inputs)."""
    kernel_u = copy.copy(kernel)
    kernel_u.sigma = 1.0
    return kernel_u
