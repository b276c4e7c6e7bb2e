r"""The CVXPY building block for sampled PSD (or non-negativity) constraints.

Section 4 of the PSD paper (eq. 13-14): to impose :math:`g(\theta, x) \succeq 0` for all x,
impose instead

.. math::

    g(\theta, x_j) = \Psi_j^T \mathbf B \Psi_j, \quad j \in [m], \qquad \mathbf B \succeq 0,

on sampled points x_j with a fresh PSD variable B, and regularize B with
:math:`\lambda_1 \operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2` (eq. 6).
With d = 1 this is the scalar non-negative model of Marteau-Ferey et al. (2020).
"""

from __future__ import annotations

import numbers
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = ["SoSBlock", "sos_constraints"]


def _check_d(d):
    """``d`` as a positive int: an integral number >= 1 (1.0 is accepted, 1.5 is not)."""
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Real):
        raise ValueError(f"d must be a positive integer (the size of the blocks), got {d!r}")
    if isinstance(d, numbers.Integral):
        d_int = int(d)
    else:
        d_float = float(d)
        if not np.isfinite(d_float) or d_float != np.floor(d_float):
            raise ValueError(f"d must be a positive integer (the size of the blocks), got {d!r}")
        d_int = int(d_float)
    if d_int < 1:
        raise ValueError(f"d must be >= 1 (a positive integer, the size of the blocks), got {d!r}")
    return d_int


def _as_psi(Phi, d):
    """Return (Psi, d, N): Psi of shape (m, N, d), from (m, r) scalar features or (m, N, d)."""
    raw = Phi
    if np.iscomplexobj(raw):
        raise ValueError("Psi must be a real array (the SoS model is real), got complex values")
    try:
        Phi = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Psi must be a real numeric array: {exc}") from None
    if not np.all(np.isfinite(Phi)):
        raise ValueError("Psi contains NaN or infinite values")
    if Phi.ndim == 2:
        if d is None:
            raise ValueError("d must be given when Psi is the (m, r) array of scalar features")
        d = _check_d(d)
        return Phi, d, Phi.shape[1] * d, True
    if Phi.ndim == 3:
        if d is not None and _check_d(d) != Phi.shape[2]:
            raise ValueError(
                f"d={d} does not match Psi of shape {Phi.shape} (expected d = {Phi.shape[2]})"
            )
        return Phi, Phi.shape[2], Phi.shape[1], False
    raise ValueError(
        f"Psi must have shape (m, r) (scalar features, Psi_j = phi_j kron I_d) or (m, N, d), "
        f"got {Phi.shape}"
    )


def _packed_map(Phi, d, kron_layout):
    """Sparse matrix from vec(B) (column-major) to the stacked upper triangles of Psi_j^T B Psi_j.

    Row j * t + k holds entry (p_k, q_k), p_k <= q_k, of the j-th matrix, t = d (d + 1) / 2.
    """
    iu, ju = np.triu_indices(d)
    t = len(iu)
    m = Phi.shape[0]
    if kron_layout:
        r = Phi.shape[1]
        N = r * d
        # entry (j, p, q) <- phi_ja phi_jb B[a d + p, b d + q]; vec index u + N v
        a = np.arange(r)
        rows = (np.arange(m)[:, None, None, None] * t + np.arange(t)[None, :, None, None])
        u = a[None, None, :, None] * d + iu[None, :, None, None]
        v = a[None, None, None, :] * d + ju[None, :, None, None]
        vals = Phi[:, None, :, None] * Phi[:, None, None, :]
        shape = (m, t, r, r)
        rows, cols = np.broadcast_to(rows, shape), np.broadcast_to(u + N * v, shape)
        vals = np.broadcast_to(vals, shape)
    else:
        N = Phi.shape[1]
        u = np.arange(N)
        rows = np.arange(m)[:, None, None, None] * t + np.arange(t)[None, :, None, None]
        P1 = Phi[:, :, iu].transpose(0, 2, 1)  # (m, t, N): Psi_j[u, p_k]
        P2 = Phi[:, :, ju].transpose(0, 2, 1)  # (m, t, N): Psi_j[v, q_k]
        vals = P1[:, :, :, None] * P2[:, :, None, :]
        shape = (m, t, N, N)
        cols = np.broadcast_to(u[None, None, :, None] + N * u[None, None, None, :], shape)
        rows = np.broadcast_to(rows, shape)
    A = sp.csr_matrix(
        (vals.ravel(), (rows.ravel(), cols.ravel())), shape=(m * t, N * N)
    )
    A.eliminate_zeros()
    return A, N


#: Largest condition number of the features accepted by :class:`SoSBlock` by default:
#: 1/sqrt(machine epsilon).  The map B -> (Psi_j^T B Psi_j)_j then has condition number
#: below 1/eps; beyond it the equality constraints are numerically rank deficient.
MAX_FEATURE_CONDITION = 1.0 / np.sqrt(np.finfo(np.float64).eps)


def _check_conditioning(Phi, max_condition):
    """Refuse features whose SoS map is numerically singular (see MAX_FEATURE_CONDITION)."""
    if Phi.size == 0:
        return
    s = np.linalg.svd(Phi, compute_uv=False)
    cond = float(s[0] / s[-1]) if s[-1] > 0 else np.inf
    if not cond <= max_condition:
        raise ValueError(
            f"Psi is numerically rank deficient: its condition number {cond:.1e} exceeds "
            f"max_condition={max_condition:.1e}, so the constraints Psi_j^T B Psi_j "
            "(condition number its square) are beyond float64 and SDP solvers fail or return "
            "violated constraints.  Use fewer or more widely spaced points z_j, a smaller "
            "kernel bandwidth sigma, or low-rank features (NystromFeatures with "
            "n_landmarks below the numerical rank); pass max_condition=None to skip this check"
        )


class SoSBlock:
    r"""A fresh PSD variable B with the affine SoS values :math:`\Psi_j^T\mathbf B\Psi_j`.

    Parameters
    ----------
    Psi : ndarray of shape (m, r) or (m, N, d)
        Either the scalar features :math:`\phi_j` (rows; then :math:`\Psi_j = \phi_j
        \otimes I_d`, the layout of the PSD paper, eq. 8, and ``d`` is required) or the
        explicit matrices :math:`\Psi_j \in \mathbb R^{N\times d}`.
    d : int, optional
        Output size when ``Psi`` holds scalar features.
    name : str, optional
        Name of the CVXPY variable.
    max_condition : float or None, default=1/sqrt(machine epsilon) (6.7e7)
        Refuse (ValueError) features whose condition number (ratio of the extreme singular
        values of the stacked features) exceeds this: the linear map
        :math:`\mathbf B\mapsto(\Psi_j^T\mathbf B\Psi_j)_j` then has a condition number
        beyond 1/eps (its square), and interior-point solvers fail while splitting solvers
        return inaccurate answers, g(x_j) < 0 among them.  Exact features (Cholesky of K)
        are ill-conditioned when the points are close compared to the bandwidth.  ``None``
        skips the check (for a caller that certifies the solve itself).

    Attributes
    ----------
    B : cvxpy.Variable of shape (N, N), PSD
    packed : cvxpy.Expression of shape (m, d (d + 1) / 2)
        Row j holds the upper triangle (row-major, p <= q) of :math:`\Psi_j^T\mathbf B\Psi_j`.
    A : scipy.sparse.csr_matrix
        The linear map from ``vec(B)`` (column-major) to ``packed`` (flattened row-major).

    Examples
    --------
    A scalar function f(x) = c0 + c1 x + c2 x^2 fitted to data under f >= 0 on 20 points:

    >>> import cvxpy as cp, numpy as np
    >>> from psdsos.sos import SoSBlock
    >>> from psdsos.features import ExactFeatures
    >>> z = np.linspace(-1, 1, 20)[:, None]
    >>> Phi = ExactFeatures("gaussian", 0.5).fit(z).transform(z)
    >>> c = cp.Variable(3)
    >>> g = c[0] + c[1] * z[:, 0] + c[2] * z[:, 0] ** 2
    >>> block = SoSBlock(Phi, d=1)
    >>> cons = block.constraints(g)
    """

    def __init__(self, Psi: ArrayLike, d: int | None = None, *, name: str = "B",
                 max_condition: float | None = MAX_FEATURE_CONDITION) -> None:
        Phi, d, N, kron = _as_psi(Psi, d)
        if max_condition is not None:
            # the stacked features: (m, r) scalar rows, or the N x (m d) matrix [Psi_1 ... Psi_m]
            _check_conditioning(Phi if kron else np.moveaxis(Phi, 1, 0).reshape(Phi.shape[1], -1),
                                max_condition)
        self.d = d
        self.m = Phi.shape[0]
        self.A, self.N = _packed_map(Phi, d, kron)
        self.B = cp.Variable((N, N), PSD=True, name=name)
        t = d * (d + 1) // 2
        flat = self.A @ cp.vec(self.B, order="F")
        self.packed = cp.reshape(flat, (self.m, t), order="C")

    def value(self, j: int) -> cp.Expression:
        """The d x d affine expression Psi_j^T B Psi_j."""
        d = self.d
        iu, ju = np.triu_indices(d)
        entries: list[list[Any]] = [[None] * d for _ in range(d)]
        for k, (p, q) in enumerate(zip(iu, ju, strict=True)):
            entries[p][q] = self.packed[j, k]
            entries[q][p] = self.packed[j, k]
        return cp.bmat(entries)

    def constraints(self, G: cp.Expression) -> list[cp.Constraint]:
        """Equality constraints G_j == Psi_j^T B Psi_j.

        Parameters
        ----------
        G : list of m affine (d, d) expressions, or (d = 1) an affine expression of shape (m,)
            The constraint function g(theta, x_j), affine in the user's variables.  A
            non-symmetric G_j also gets G_j == G_j^T.

        Returns
        -------
        list of cvxpy constraints
        """
        d, m = self.d, self.m
        iu, ju = np.triu_indices(d)
        if isinstance(G, cp.Expression):
            if d != 1:
                raise ValueError("G as a single expression is only accepted for d = 1; pass a list")
            if G.size != m:
                raise ValueError(f"G must have {m} entries (one per point), got shape {G.shape}")
            return [cp.reshape(G, (m,), order="C") == self.packed[:, 0]]
        G = list(G)
        if len(G) != m:
            raise ValueError(f"G must hold one expression per point ({m}), got {len(G)}")
        rows, extra = [], []
        for j, g in enumerate(G):
            g = cp.Constant(g) if not isinstance(g, cp.Expression) else g
            if d == 1 and g.size == 1:
                rows.append(cp.reshape(g, (1,), order="C"))
                continue
            if g.shape != (d, d):
                raise ValueError(f"G[{j}] must have shape ({d}, {d}), got {g.shape}")
            if not g.is_symmetric():
                il, jl = np.triu_indices(d, 1)
                if len(il):
                    extra.append(g[il, jl] == g[jl, il])
            rows.append(g[iu, ju])
        lhs = cp.vstack(rows)  # (m, t)
        return [lhs == self.packed] + extra

    def constraints_packed(self, Gp: cp.Expression) -> list[cp.Constraint]:
        """Equality constraints from packed upper triangles.

        Parameters
        ----------
        Gp : affine cvxpy expression of shape (m, d (d + 1) / 2)
            Row j holds the entries (p, q), p <= q (row-major), of a symmetric G_j.
        """
        t = self.d * (self.d + 1) // 2
        if tuple(Gp.shape) != (self.m, t):
            raise ValueError(f"packed G must have shape ({self.m}, {t}), got {Gp.shape}")
        return [Gp == self.packed]

    def regularizer(self, lam1: float | cp.Parameter,
                    lam2: float | cp.Parameter) -> cp.Expression:
        """lam1 Tr B + lam2 / 2 ||B||_F^2 (eq. 6); lam1, lam2 numbers or cp.Parameters."""
        return lam1 * cp.trace(self.B) + (lam2 / 2) * cp.sum_squares(self.B)


def sos_constraints(G: cp.Expression, Psi: ArrayLike, d: int | None = None, *,
                    max_condition: float | None = MAX_FEATURE_CONDITION
                    ) -> tuple[cp.Variable, list[cp.Constraint]]:
    """Impose G_j == Psi_j^T B Psi_j with a fresh PSD variable B (eq. 14).

    Parameters
    ----------
    G : list of (d, d) affine CVXPY expressions, or an affine expression of shape (m,) for d = 1
    Psi : ndarray (m, r) scalar features (Psi_j = phi_j kron I_d) or (m, N, d)
    d : int, optional
        Required with (m, r) features; inferred from G[0] when omitted.
    max_condition : float or None
        Numerically rank-deficient features are refused (ValueError naming the remedies);
        see :class:`SoSBlock`.

    Returns
    -------
    B : cvxpy.Variable (N, N), PSD
    constraints : list
        Add them to your problem, and ``SoSBlock.regularizer``-style terms on B to the
        objective.  Regularize B (lam1 Tr B with lam1 > 0, or lam2/2 ||B||_F^2 with
        lam2 > 0; Theorem 2): without it B is determined only through
        Psi_j^T B Psi_j, so it is not unique, and the set of values reached,
        {(Psi_j^T B Psi_j)_j : B PSD}, need not be closed (it is when no nonzero PSD B has
        Psi_j^T B Psi_j = 0 for all j), so the infimum of your problem need not be
        attained.  The estimators of psdsos refuse lam1 = lam2 = 0 for these reasons.
    """
    if d is None and np.ndim(Psi) == 2:
        if isinstance(G, cp.Expression):
            d = 1
        else:
            g0 = G[0]
            d = 1 if np.size(g0) == 1 else (g0.shape[0] if hasattr(g0, "shape") else 1)
    block = SoSBlock(Psi, d, max_condition=max_condition)
    return block.B, block.constraints(G)
