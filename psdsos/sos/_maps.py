r"""The SoS evaluation map and its adjoint, in the implicit Kronecker layout.

With scalar features :math:`\phi_j \in \mathbb R^r` (rows of ``Phi``) and
:math:`\Psi_j = \phi_j \otimes I_d \in \mathbb R^{rd \times d}`, the evaluation map is

.. math::

    \mathcal A(\mathbf B)_j = \Psi_j^T \mathbf B \Psi_j
      = \sum_{a,b=1}^r \phi_{ja}\phi_{jb}\, \mathbf B_{[a,b]} \in \mathbb R^{d\times d},

where :math:`\mathbf B_{[a,b]}` is the (a, b) block of size d x d (row index a*d + p), and its
adjoint (for the Frobenius inner products) is

.. math::

    \mathcal A^*(\Gamma) = \sum_{j=1}^m \Psi_j \Gamma_j \Psi_j^T, \qquad
    \mathcal A^*(\Gamma)_{[a,b]} = \sum_j \phi_{ja}\phi_{jb}\,\Gamma_j .

Both cost O(m r^2 d^2) flops as matrix products over row chunks (temporaries within the
working-memory budget, :func:`psdsos.config_context`), and never form an m x m matrix.
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np

from psdsos._config import row_chunks

__all__ = ["sos_evaluate", "sos_adjoint", "sos_operator_norm_sq", "hadamard_square_factor"]

#: Above this many rows, the spectrum of K_Phi o K_Phi is bounded through
#: :func:`hadamard_square_factor` instead of a dense eigendecomposition.
DENSE_HADAMARD_MAX = 2000


def sos_evaluate(Phi: np.ndarray, B: np.ndarray, d: int) -> np.ndarray:
    """Evaluate Psi_j^T B Psi_j for every row phi_j of ``Phi``.

    Parameters
    ----------
    Phi : ndarray of shape (m, r)
    B : ndarray of shape (r*d, r*d)
    d : int

    Returns
    -------
    F : ndarray of shape (m, d, d), exactly symmetric when B is.
    """
    m, r = Phi.shape
    B4 = B.reshape(r, d, r, d).transpose(0, 2, 1, 3).reshape(r, r * d * d)
    F: np.ndarray = np.empty((m, d * d))
    for sl in row_chunks(m, 16 * r * d * d):
        U = (Phi[sl] @ B4).reshape(-1, r, d * d)
        F[sl] = np.einsum("jb,jbk->jk", Phi[sl], U)
    F = F.reshape(m, d, d)
    return 0.5 * (F + F.transpose(0, 2, 1))


def sos_adjoint(Phi: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Compute sum_j Psi_j G_j Psi_j^T.

    Parameters
    ----------
    Phi : ndarray of shape (m, r)
    G : ndarray of shape (m, d, d)

    Returns
    -------
    S : ndarray of shape (r*d, r*d)
    """
    m, r = Phi.shape
    d = G.shape[1]
    Gf = G.reshape(m, d * d)
    S = np.zeros((r, r * d * d))
    for sl in row_chunks(m, 16 * r * d * d):
        W = (Phi[sl, :, None] * Gf[sl, None, :]).reshape(-1, r * d * d)
        S += Phi[sl].T @ W
    S = S.reshape(r, r, d, d).transpose(0, 2, 1, 3).reshape(r * d, r * d)
    return 0.5 * (S + S.T)


def sos_operator_norm_sq(Phi: np.ndarray) -> float:
    r"""Squared operator norm of the evaluation map, :math:`\|\mathcal A\|^2` (or, for
    many rows, an upper bound, typically within 0.1%).

    :math:`\mathcal A \mathcal A^*` acts on :math:`\Gamma` as
    :math:`\Gamma_i \mapsto \sum_j (\phi_i^T\phi_j)^2 \Gamma_j`, i.e. as
    :math:`(\mathbf K_\Phi \circ \mathbf K_\Phi) \otimes I`, whose largest eigenvalue equals
    that of :math:`\mathbf K_\Phi\circ\mathbf K_\Phi` with :math:`\mathbf K_\Phi = \Phi\Phi^T`
    (PSD paper, section 3.3: ``lambda_max(K o K)``).  Up to ``DENSE_HADAMARD_MAX`` = 2000
    rows it is computed exactly (the m x m matrix, or the r^2 x r^2 Gram matrix of the
    row-wise Kronecker product :math:`Z = \Phi \odot \Phi` when m > r^2).  Beyond, the
    Hadamard square is split as :math:`L + R` by :func:`hadamard_square_factor` (L of low
    rank, at most 4 r pairs, exactly diagonalized; R PSD with trace c, at most 1e-3 of the
    largest eigenvalue when 4 r pairs suffice) and :math:`\lambda_{\max}(L) + c` is
    returned: an upper bound, which is what step sizes need, in O(m r^2) time and O(m r)
    memory.
    """
    m, r = Phi.shape
    if m <= DENSE_HADAMARD_MAX:
        if m <= r * r:
            Kphi = Phi @ Phi.T
            H = Kphi * Kphi
        else:
            Z = (Phi[:, :, None] * Phi[:, None, :]).reshape(m, r * r)
            H = Z.T @ Z
        return float(np.linalg.eigvalsh(H)[-1])
    _, s, c = hadamard_square_factor(Phi, tail_tol=("max_column", 1e-3), vectors=False)
    return float(s[-1] if s.size else 0.0) + c


def _gram_eig(Phi):
    """(lam, Q): eigenpairs of Phi^T Phi (accumulated over row chunks), decreasing."""
    m, r = Phi.shape
    C = np.zeros((r, r))
    for sl in row_chunks(m, 8 * r):
        C += Phi[sl].T @ Phi[sl]
    lam, Q = np.linalg.eigh(0.5 * (C + C.T))
    return lam[::-1], Q[:, ::-1]


@overload
def hadamard_square_factor(Phi: np.ndarray, *, tail_tol: float | tuple[str, float],
                           max_rank: int | None = None, vectors: Literal[True] = True
                           ) -> tuple[np.ndarray, np.ndarray, float]: ...
@overload
def hadamard_square_factor(Phi: np.ndarray, *, tail_tol: float | tuple[str, float],
                           max_rank: int | None = None, vectors: Literal[False]
                           ) -> tuple[None, np.ndarray, float]: ...
def hadamard_square_factor(Phi: np.ndarray, *, tail_tol: float | tuple[str, float],
                           max_rank: int | None = None, vectors: bool = True
                           ) -> tuple[np.ndarray | None, np.ndarray, float]:
    r"""A low-rank part of :math:`\mathbf K_\Phi\circ\mathbf K_\Phi` and a bound on the rest,
    from r x r quantities and passes over the rows (no m x m or m x r^2 array).

    With :math:`\Phi^T\Phi = Q\Lambda Q^T` and :math:`g_a = \Phi q_a`,
    :math:`\mathbf K_\Phi = \sum_a g_a g_a^T`, so (Schur product of two sums)

    .. math::

        \mathbf K_\Phi\circ\mathbf K_\Phi = \sum_{a,b} (g_a\circ g_b)(g_a\circ g_b)^T
          = \sum_{a\le b} \omega_{ab}\, z_{ab} z_{ab}^T,\qquad z_{ab} = g_a\circ g_b,
          \ \omega_{ab} = 2 - \delta_{ab},

    a sum of r(r+1)/2 PSD rank-one terms whose traces :math:`\omega_{ab}\|z_{ab}\|^2 =
    \omega_{ab}\,[(G\circ G)^T(G\circ G)]_{ab}` come from one r x r product.  In the
    eigenbasis of :math:`\Phi^T\Phi` the traces concentrate on few pairs (products of the
    large eigenvalues).  The k pairs of largest trace are kept, :math:`L = Z_k Z_k^T`,
    diagonalized through the k x k matrix :math:`Z_k^T Z_k`, and the omitted terms R are
    PSD with :math:`\|R\| \le \operatorname{Tr} R = c`, hence

    .. math::

        V\operatorname{diag}(s)V^T \preceq \mathbf K_\Phi\circ\mathbf K_\Phi
          \preceq V\operatorname{diag}(s)V^T + c\, I .

    Parameters
    ----------
    Phi : ndarray (m, r)
    tail_tol : float or ("max_column", rtol)
        Keep the fewest pairs whose omitted trace c is <= tail_tol (an absolute value, or
        rtol times the largest pair trace, itself <= lambda_max(K o K)).
    max_rank : int, optional
        At most this many pairs (default 4 r: V is O(m r)); c is then whatever the omitted
        pairs carry.
    vectors : bool
        Also return V (m, k'); otherwise V is None.

    Returns
    -------
    V : ndarray (m, k') or None
        Orthonormal columns (eigenvectors of L with eigenvalue > 1e-10 of the largest).
    s : ndarray (k',)
        Increasing eigenvalues of L.
    c : float
        Bound on the rest: the omitted trace plus the largest eigenvalue of L dropped.
    """
    m, r = Phi.shape
    lam, Q = _gram_eig(Phi)
    N = np.zeros((r, r))
    for sl in row_chunks(m, 16 * r):
        G2 = Phi[sl] @ Q
        G2 *= G2
        N += G2.T @ G2
    ia, ib = np.triu_indices(r)
    om = np.where(ia == ib, 1.0, 2.0)
    tr = om * N[ia, ib]
    order = np.argsort(tr)[::-1]
    tr_sorted = tr[order]
    # tail[k] = trace of the pairs order[k:]
    tail = np.concatenate([np.cumsum(tr_sorted[::-1])[::-1], [0.0]])
    if isinstance(tail_tol, tuple):
        tol = float(tail_tol[1]) * float(tr_sorted[0] if tr_sorted.size else 0.0)
    else:
        tol = float(tail_tol)
    if max_rank is None:
        max_rank = 4 * r
    k_max = max(1, min(int(max_rank), tr.size))
    k = int(np.searchsorted(-tail, -tol, side="left"))  # first k with tail[k] <= tol
    k = max(1, min(k, k_max))
    kept = order[:k]
    a, b = ia[kept], ib[kept]
    w = np.sqrt(om[kept])
    Gm = np.zeros((k, k))
    chunks = row_chunks(m, 8 * (r + 2 * k))
    for sl in chunks:
        Gc = Phi[sl] @ Q
        Zc = Gc[:, a] * Gc[:, b] * w
        Gm += Zc.T @ Zc
    s, U = np.linalg.eigh(0.5 * (Gm + Gm.T))
    s_top = float(s[-1]) if s.size else 0.0
    keep = s > 1e-10 * max(s_top, 1e-300)
    dropped = float(np.max(s[~keep], initial=0.0)) if s.size else 0.0
    c = float(tail[k]) + max(dropped, 0.0)
    s, U = s[keep], U[:, keep]
    V = None
    if vectors:
        T = U / np.sqrt(s)
        V = np.empty((m, s.size))
        for sl in chunks:
            Gc = Phi[sl] @ Q
            V[sl] = (Gc[:, a] * Gc[:, b] * w) @ T
    return V, s, c
