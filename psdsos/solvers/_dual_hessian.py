r"""The generalized Hessian of a negative-part dual, in orthonormal coordinates of the
symmetric matrices.

For :math:`D(\Gamma) = q(\Gamma) + \frac{1}{2\lambda_2}\|[S]_-\|_F^2` (see
:mod:`psdsos.solvers._dual_newton`, which uses it as the metric of its steps),
:func:`dual_hessian` forms
:math:`\mathbf H = \nabla^2 q + \lambda_2^{-1}\mathcal A\,\mathcal J_S\,\mathcal A^*`
densely, p = d (d + 1) / 2 coordinates per point (:func:`symmetric_basis`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsyrk

from psdsos.sos import sos_adjoint

__all__ = ["dual_hessian", "from_symmetric_coordinates", "symmetric_basis",
           "to_symmetric_coordinates"]


#: Pairs (k, l) of eigenvectors whose terms of the Hessian are bounded in sum by this
#: fraction of the curvature of q are left out (the metric stays within that fraction).
_PRUNE = 1e-6


#: Working memory of one chunk of the Hessian's pair terms (float64 entries).
_CHUNK_ENTRIES = 4_000_000


def symmetric_basis(d: int) -> np.ndarray:
    r"""An orthonormal basis (Frobenius) of the symmetric d x d matrices.

    Returns
    -------
    E : ndarray (p, d, d), p = d (d + 1) / 2
        :math:`e_a e_a^T` for a = b, :math:`(e_a e_b^T + e_b e_a^T)/\sqrt 2` for a < b, in the
        order of ``np.triu_indices(d)``.
    """
    iu, ju = np.triu_indices(d)
    E = np.zeros((len(iu), d, d))
    for t, (a, b) in enumerate(zip(iu, ju, strict=True)):
        if a == b:
            E[t, a, a] = 1.0
        else:
            E[t, a, b] = E[t, b, a] = 1.0 / np.sqrt(2.0)
    return E


def to_symmetric_coordinates(G: np.ndarray) -> np.ndarray:
    """The coordinates (m p,) of symmetric matrices G (m, d, d) in :func:`symmetric_basis`
    (point by point; the symmetric part of a non-symmetric G)."""
    G = np.asarray(G, dtype=np.float64)
    E = symmetric_basis(G.shape[1])
    return np.einsum("jab,tab->jt", G, E).reshape(-1)


def from_symmetric_coordinates(x: np.ndarray, d: int) -> np.ndarray:
    """The symmetric matrices (m, d, d) of coordinates x (m p,) (:func:`symmetric_basis`)."""
    E = symmetric_basis(d)
    return np.einsum("jt,tab->jab", np.asarray(x, dtype=np.float64).reshape(-1, len(E)), E)


def _curvature_of_q(problem: Any, caps: Any, shapes: list[tuple[int, int]],
                    Es: list[np.ndarray]) -> tuple[float, np.ndarray | None]:
    r"""(mu, U) with :math:`\nabla^2 q \approx \mu I + UU^T` in the symmetric coordinates
    (the blocks' coordinates one after the other; ``shapes`` the blocks' (m_k, d_k)):
    exact for PSD least squares (mu = n, U = None) and for problems that describe their
    curvature (``smooth_hessian_factor``, on the blocks' entries one after the other);
    otherwise the bound ``curvature_shift`` or the strong convexity modulus (a metric
    only)."""
    U = caps.smooth_hessian_factor() if caps.smooth_hessian_factor is not None else None
    if U is not None:
        mu = float(problem.strong_convexity())
        U = np.asarray(U)
        parts, o = [], 0
        for (m, d), E in zip(shapes, Es, strict=True):
            Uk = U[o:o + m * d * d].reshape(m, d, d, -1)
            o += m * d * d
            parts.append(np.einsum("jabk,tab->jtk", Uk, E).reshape(m * len(E), -1))
        return mu, np.vstack(parts)
    if caps.curvature_shift is not None:
        return float(caps.curvature_shift()), None
    return float(problem.strong_convexity()), None


def _hessian_from_eig(Phi: np.ndarray, d: int, lam2: float, w: np.ndarray, Q: np.ndarray,
                      E: np.ndarray, prune: float, floor: float) -> np.ndarray:
    r"""The negative-part term :math:`\lambda_2^{-1}\mathcal A\mathcal J_S\mathcal A^*` in the
    symmetric coordinates, from :math:`S = \mathbf Q\operatorname{diag}(w)\mathbf Q^T`.

    With :math:`Z_j = \mathbf Q^T\Psi_j` (N x d), the entry of the points j, i and basis
    matrices t, s is :math:`\sum_{kl}\Omega_{kl}(Z_jE_tZ_j^T)_{kl}(Z_iE_sZ_i^T)_{kl}`: on the
    (negative, negative) block :math:`\operatorname{tr}(E_tG_{ji}E_sG_{ij})` with
    :math:`G = Z_-^TZ_-` (a Gram matrix), on the mixed blocks twice
    :math:`X^TX` with :math:`X_{(jt),(kl)} = \Omega_{kl}^{1/2}(Z_jE_tZ_j^T)_{kl}` (one
    symmetric rank-k update); the (positive, positive) block is 0.  The pairs (k, l) whose
    terms are bounded in sum by ``floor`` are left out (``floor`` = ``prune`` times the
    smallest curvature of q: the result is then within that of the exact term, from below).
    """
    m, r = Phi.shape
    N = len(w)
    p = E.shape[0]
    neg = w <= 0  # S = lam1 I = 0 at a cold start: the ridge step (Omega = 1)
    W = (Phi @ Q.reshape(r, d * N)).reshape(m, d, N)  # W[j, c, k] = (Q^T Psi_j)[k, c]
    Wn, Wp = W[:, :, neg], W[:, :, ~neg]
    kn, kp = Wn.shape[2], Wp.shape[2]
    H = np.zeros((m * p, m * p))
    if kn:
        # (negative, negative): the block (j, i) is E^T (G_ji kron G_ji) E, G = Zn^T Zn
        Gn = Wn.reshape(m * d, kn) @ Wn.reshape(m * d, kn).T
        G4 = Gn.reshape(m, d, m, d).transpose(0, 2, 1, 3)  # [j, i] -> G_ji (d x d)
        K4 = (G4[:, :, :, None, :, None] * G4[:, :, None, :, None, :]).reshape(-1, d * d)
        Ef = E.reshape(p, d * d)
        T = (K4 @ Ef.T).reshape(m * m, d * d, p).transpose(0, 2, 1).reshape(-1, d * d)
        T = (T @ Ef.T).reshape(m, m, p, p)  # [j, i, s, t]
        H += T.transpose(0, 3, 1, 2).reshape(m * p, m * p)
    if kn and kp:
        wn, wp = w[neg], w[~neg]
        Om = wn[:, None] / (wn[:, None] - wp[None, :])  # in (0, 1]
        # ||X_(.,kl)||^2 <= a_k b_l: drop the smallest pairs while their bound sums to floor
        a = np.einsum("jck,jck->k", Wn, Wn)
        b = np.einsum("jcl,jcl->l", Wp, Wp)
        bound = 2.0 * Om * a[:, None] * b[None, :] / lam2
        keep = np.ones(bound.shape, dtype=bool)
        if floor > 0:
            flat = bound.ravel()
            order = np.argsort(flat)
            ndrop = int(np.searchsorted(np.cumsum(flat[order]), floor, side="right"))
            keep.ravel()[order[:ndrop]] = False
        # the rows and columns with a pair kept; single pairs only when that saves much
        rk, cl = keep.any(axis=1), keep.any(axis=0)
        keep = keep[np.ix_(rk, cl)]
        sOm = np.sqrt(Om[np.ix_(rk, cl)])
        Wn, Wp = Wn[:, :, rk], Wp[:, :, cl]
        kn, kp = Wn.shape[2], Wp.shape[2]
        select = keep.size > 0 and keep.mean() < 0.8
        # A[j, k, t, b] = (Zn_j E_t)[k, b]; X[j, t, k, l] = (Zn_j E_t Zp_j^T)[k, l]
        A = (Wn.transpose(0, 2, 1) @ E.transpose(1, 0, 2).reshape(d, p * d)).reshape(
            m, kn, p * d)
        rows = max(1, _CHUNK_ENTRIES // max(1, m * p * kp))
        C = np.zeros((m * p, m * p))
        buf = np.empty((m, p, min(rows, kn), kp))
        for k0 in range(0, kn, rows):
            k1 = min(kn, k0 + rows)
            c = k1 - k0
            if select and not keep[k0:k1].any():
                continue
            Xk = (A[:, k0:k1].reshape(m, c * p, d) @ Wp).reshape(m, c, p, kp)
            Xc = np.multiply(Xk.transpose(0, 2, 1, 3), sOm[k0:k1], out=buf[:, :, :c])
            Xc = Xc.reshape(m * p, c * kp)
            if select:
                Xc = Xc[:, keep[k0:k1].ravel()]
            C = dsyrk(2.0, Xc, beta=1.0, c=C, overwrite_c=True)
        H += np.triu(C) + np.triu(C, 1).T
    H /= lam2
    return H


def dual_hessian(problem: Any, G: np.ndarray, *, prune: float = _PRUNE) -> np.ndarray:
    r"""The generalized Hessian of the negative-part dual at G, in symmetric coordinates.

    .. math::

        \mathbf H = \nabla^2 q + \frac{1}{\lambda_2}\mathcal A\,\mathcal J_S\,\mathcal A^*

    (module docstring), as a dense matrix on the coordinates of
    :func:`to_symmetric_coordinates` (point-major, p = d (d + 1) / 2 per point).

    Parameters
    ----------
    problem : DualProblem
        One SoS block with a smooth q (``Phi``, ``d``, ``lam1``, ``lam2``); the curvature of
        q is :math:`\mu I + UU^T` (``strong_convexity``, ``smooth_hessian_factor``) where the
        problem describes it, else the bound ``curvature_shift``.
    G : ndarray (m, d, d)
        The dual point (symmetrized).
    prune : float
        Terms bounded in sum by ``prune`` times mu are left out (0: none).

    Returns
    -------
    ndarray (m p, m p), symmetric positive semidefinite (definite when mu > 0).
    """
    from psdsos.solvers._protocol import dual_capabilities

    caps = dual_capabilities(problem, "dual_hessian")
    if caps.blocks or caps.proximal:
        raise ValueError("dual_hessian takes one SoS block with a smooth q")
    Phi = np.asarray(problem.Phi, dtype=np.float64)
    d = int(problem.d)
    G = np.asarray(G, dtype=np.float64).reshape(Phi.shape[0], d, d)
    G = 0.5 * (G + G.transpose(0, 2, 1))
    E = symmetric_basis(d)
    mu, U = _curvature_of_q(problem, caps, [(Phi.shape[0], d)], [E])
    S = sos_adjoint(Phi, G) + float(problem.lam1) * np.eye(Phi.shape[1] * d)
    w, Q = np.linalg.eigh(S)
    H = _hessian_from_eig(Phi, d, float(problem.lam2), w, Q, E, prune, prune * mu)
    H[np.diag_indices_from(H)] += mu
    if U is not None:
        H += U @ U.T
    return H


def _cholesky(H: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of a generalized Hessian, with a shift of 1e-10 of its
    largest diagonal entry where rounding leaves it not quite positive definite."""
    try:
        return sla.cholesky(H, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        H = H + 1e-10 * float(np.max(np.abs(np.diag(H)))) * np.eye(H.shape[0])
        return sla.cholesky(H, lower=True, check_finite=False)
