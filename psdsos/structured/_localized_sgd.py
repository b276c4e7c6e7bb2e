r"""Algorithm 3 of Ciliberto, Bach and Rudi (NeurIPS 2019): the stochastic subgradient
decoding of eq. 6 for :class:`~psdsos.structured.LocalizedSELF`.

At a test point x, with the explicit weights :math:`\alpha(x, p)` (b, |P|, m) and the raw
auxiliary outputs :math:`\eta_j`, a part p is drawn from :math:`\pi(\cdot \mid x)` and
an auxiliary pair j with probability :math:`|\alpha_j(x, p)| / A(x, p)`,
:math:`A(x, p) = \sum_j |\alpha_j(x, p)|`; the part's elements take a projected step
along :math:`\operatorname{sign}(\alpha_j) A(x, p) \nabla_z L(z_p, \eta_j)` of length
:math:`1 / (2 A(x, p) t_p)`.  The output space supplies the element loss, its gradient
(``loss_gradient``) and the projection (capability ``"element_sgd"``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos._validation import check_random_state
from psdsos.structured._krr_weights import ridge_solve

if TYPE_CHECKING:
    from psdsos.structured._localized import LocalizedSELF

__all__ = ["explicit_alpha", "eq6_objective", "predict_sgd"]


def explicit_alpha(est: LocalizedSELF, X: np.ndarray, sl: slice) -> np.ndarray:
    """Explicit alpha(x, p) (b, |P|, m) for the test points X[sl] (Algorithm 3 only)."""
    V = est._weight_rows(X, sl)
    if getattr(est, "landmark_index_", None) is not None:
        A = V @ est.coef_map_
    else:
        A = ridge_solve(est.cholesky_, V.T).T
    return A.reshape(sl.stop - sl.start, est.parts_.n_parts, est.n_aux_)


def eq6_objective(est: LocalizedSELF, z: np.ndarray, alpha: np.ndarray,
                  pi: np.ndarray) -> float:
    """Eq. 6 objective at z (output_dim, ...) for one test point."""
    idx = est.parts_.output_index
    eta = np.asarray(est._eta)  # the raw auxiliary outputs (m, d_out, ...)
    F = 0.0
    for p in range(idx.shape[0]):
        L = est.output_space_.element_loss(z[idx[p]][None], eta).reshape(est.n_aux_, -1)
        F += pi[p] * float(alpha[p] @ L.mean(axis=1))
    return F


def predict_sgd(est: LocalizedSELF, X: np.ndarray) -> np.ndarray:
    """Algorithm 3 at each test point of X, shape (n_test, output_dim, *element_shape)."""
    space = est.output_space_
    idx = est.parts_.output_index
    P, d_out = idx.shape
    T = est.max_iter if est.max_iter is not None else 50 * P
    rng = check_random_state(est.random_state)
    eta = np.asarray(est._eta)
    out = np.empty((X.shape[0], est.parts_.output_dim, *eta.shape[2:]))
    pi_all = est._pi(X)
    not_converged = 0
    for t0 in range(X.shape[0]):
        alpha = explicit_alpha(est, X, slice(t0, t0 + 1))[0]  # (P, m)
        pi = pi_all[t0]
        # start: the projected kernel-ridge average of the parts (overlap-added)
        avg = np.tensordot(alpha, eta, axes=(1, 0))  # (P, d_out, ...)
        acc = np.zeros((est.parts_.output_dim, *eta.shape[2:]))
        wsum = np.zeros(est.parts_.output_dim)
        np.add.at(acc, idx, pi[:, None].reshape((P, 1) + (1,) * (eta.ndim - 2)) * avg)
        np.add.at(wsum, idx, np.broadcast_to(pi[:, None], idx.shape))
        z0 = space.element_project(acc / wsum.reshape((-1,) + (1,) * (eta.ndim - 2)))
        z = z0.copy()
        A = np.abs(alpha).sum(axis=1)
        cdf = np.cumsum(np.abs(alpha), axis=1)
        pcdf = np.cumsum(pi)
        prev = z.copy()
        visits = np.zeros(P)
        for t in range(1, T + 1):
            p = min(int(np.searchsorted(pcdf, rng.random() * pcdf[-1], side="right")),
                    P - 1)
            if A[p] == 0:
                continue
            j = min(int(np.searchsorted(cdf[p], rng.random() * cdf[p, -1], side="right")),
                    est.n_aux_ - 1)
            visits[p] += 1
            g = np.asarray(space.loss_gradient(z[idx[p]], eta[j]), dtype=np.float64)
            u = np.sign(alpha[p, j]) * A[p] * g
            step = 1.0 / (2.0 * A[p] * visits[p])
            z[idx[p]] = space.element_project(z[idx[p]] - step * u)
            if est.tol is not None and t % P == 0:
                if np.max(np.abs(z - prev)) <= est.tol:
                    break
                prev = z.copy()
        else:
            not_converged += est.tol is not None
        if eq6_objective(est, z0, alpha, pi) < eq6_objective(est, z, alpha, pi):
            z = z0
        out[t0] = z
    if not_converged:
        warnings.warn(f"Algorithm 3 (decode_method='sgd') did not reach tol={est.tol} "
                      f"within max_iter={T} iterations for {not_converged} of "
                      f"{X.shape[0]} test points; increase max_iter (or tol)",
                      ConvergenceWarning, stacklevel=3)
    return out
