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

Both cost O(m r^2 d^2) flops as one matrix product, and never form an m x m matrix.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sos_evaluate", "sos_adjoint", "sos_operator_norm_sq"]


def sos_evaluate(Phi, B, d):
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
    U = (Phi @ B4).reshape(m, r, d * d)
    F = np.einsum("jb,jbk->jk", Phi, U).reshape(m, d, d)
    return 0.5 * (F + F.transpose(0, 2, 1))


def sos_adjoint(Phi, G):
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
    W = (Phi[:, :, None] * G.reshape(m, 1, d * d)).reshape(m, r * d * d)
    S = (Phi.T @ W).reshape(r, r, d, d).transpose(0, 2, 1, 3).reshape(r * d, r * d)
    return 0.5 * (S + S.T)


def sos_operator_norm_sq(Phi):
    r"""Squared operator norm of the evaluation map, :math:`\|\mathcal A\|^2`.

    :math:`\mathcal A \mathcal A^*` acts on :math:`\Gamma` as
    :math:`\Gamma_i \mapsto \sum_j (\phi_i^T\phi_j)^2 \Gamma_j`, i.e. as
    :math:`(\mathbf K_\Phi \circ \mathbf K_\Phi) \otimes I`, whose largest eigenvalue equals
    that of :math:`\mathbf K_\Phi\circ\mathbf K_\Phi` with :math:`\mathbf K_\Phi = \Phi\Phi^T`
    (PSD paper, section 3.3: ``lambda_max(K o K)``).  The nonzero spectrum of
    :math:`\mathbf K_\Phi\circ\mathbf K_\Phi = Z Z^T` with the row-wise Kronecker product
    :math:`Z = \Phi \odot \Phi` (m x r^2) equals that of the r^2 x r^2 matrix :math:`Z^T Z`,
    which is what is computed when m > r^2 (no m x m matrix for Nystrom features).
    """
    m, r = Phi.shape
    if m <= r * r:
        Kphi = Phi @ Phi.T
        H = Kphi * Kphi
    else:
        Z = (Phi[:, :, None] * Phi[:, None, :]).reshape(m, r * r)
        H = Z.T @ Z
    return float(np.linalg.eigvalsh(H)[-1])
