r"""Euclidean and KL projections onto the polytopes of :mod:`psdsos.structured.polytopes`.

Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), eq. 5: the
projection of scores :math:`\theta` onto a convex set :math:`\mathcal C` in the geometry of
:math:`\Psi`,

.. math::

    P_\Psi(\theta) = \operatorname{argmin}_{u \in \mathcal C} B_\Psi(u, \nabla\Psi^*(\theta)),

with :math:`\Psi = \tfrac12\|\cdot\|^2` (Euclidean: :math:`\operatorname{argmin}_u
\tfrac12\|u - \theta\|^2`) or :math:`\Psi(u) = \langle u, \log u\rangle` (KL:
:math:`\operatorname{argmin}_u \mathrm{KL}(u, e^{\theta - 1})`, i.e. :math:`\operatorname{argmin}_u
\langle u, \log u\rangle - \langle u, \theta\rangle`).

Plain functions on batches (leading axis), used by the polytope classes:

* the permutahedron :math:`\mathcal P(w) = \operatorname{conv}\{w_\sigma\}`, by sorting and
  pool-adjacent-violators (Blondel, Teboul, Berthet and Djolonga, "Fast differentiable
  sorting and ranking", ICML 2020, Propositions 3-4): exact;
* the order simplex in the KL geometry, :math:`\min(1, \exp(\mathrm{antitonic}(\theta - 1)))`:
  exact;
* the knapsack polytope in the KL geometry, by sorting (the optimality conditions give
  :math:`u = \min(1, e^{\theta - 1 - \tau})` with one scalar :math:`\tau`): exact;
* the Birkhoff polytope (doubly stochastic matrices) in both geometries, by Newton's method
  on the 2k-dimensional dual (semismooth for the Euclidean one, whose primal is
  :math:`P = [\Theta + \alpha\mathbf 1^T + \mathbf 1\beta^T]_+`; for KL
  :math:`P = \exp(\Theta + \alpha\mathbf 1^T + \mathbf 1\beta^T)`, the log-domain Sinkhorn
  potentials, started by Sinkhorn sweeps): to a stated tolerance on the marginals.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.special import logsumexp

__all__ = [
    "project_permutahedron_euclidean",
    "project_permutahedron_kl",
    "project_order_simplex_kl",
    "project_knapsack_kl",
    "project_birkhoff",
    "BirkhoffResult",
]


# --------------------------------------------------------------------------------------
# permutahedron
# --------------------------------------------------------------------------------------
def _sorted_rows(theta, w):
    """theta (m, k) as floats, w checked and sorted in descending order, the descending
    order of each row of theta and the sorted rows."""
    theta = np.asarray(theta, dtype=np.float64)
    k = theta.shape[1]
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (k,) or not np.all(np.isfinite(w)):
        raise ValueError(f"w must be a finite vector of length {k}, got shape {w.shape}")
    order = np.argsort(-theta, axis=1, kind="stable")
    return theta, -np.sort(-w), order, np.take_along_axis(theta, order, axis=1)


def project_permutahedron_euclidean(theta, w):
    r"""Euclidean projection of each row of ``theta`` onto the permutahedron P(w).

    With :math:`\sigma` sorting :math:`\theta` in descending order and :math:`w` sorted in
    descending order, :math:`P(\theta)_{\sigma} = \theta_\sigma - v` where
    :math:`v = \operatorname{argmin}_{v_1 \ge \dots \ge v_k} \|v - (\theta_\sigma - w)\|^2`
    (antitonic regression, :func:`scipy.optimize.isotonic_regression`).

    Parameters
    ----------
    theta : ndarray of shape (m, k)
    w : array-like of shape (k,)

    Returns
    -------
    ndarray of shape (m, k)
    """
    theta, w, order, s = _sorted_rows(theta, w)
    out = np.empty_like(theta)
    for i in range(theta.shape[0]):
        v = isotonic_regression(s[i] - w, increasing=False).x
        out[i, order[i]] = s[i] - v
    return out


def _pav_kl(s, logw):
    """Pool adjacent violators for the KL permutahedron: blocks B with value
    gamma_B = logsumexp(s_B) - logsumexp(logw_B), required non-increasing; returns the
    per-entry gamma."""
    k = len(s)
    starts, ends, ls, lw = [], [], [], []
    for j in range(k):
        starts.append(j)
        ends.append(j + 1)
        ls.append(s[j])
        lw.append(logw[j])
        # merge while the previous block's value is below the last one's (a violation)
        while len(starts) > 1 and ls[-2] - lw[-2] < ls[-1] - lw[-1]:
            ls[-2] = np.logaddexp(ls[-2], ls[-1])
            lw[-2] = np.logaddexp(lw[-2], lw[-1])
            ends[-2] = ends[-1]
            for lst in (starts, ends, ls, lw):
                lst.pop()
    gamma = np.empty(k)
    for a, b, x, y in zip(starts, ends, ls, lw, strict=True):
        gamma[a:b] = x - y
    return gamma


def project_permutahedron_kl(theta, w):
    r"""KL projection of each row of ``theta`` onto the permutahedron P(w), w > 0.

    :math:`\operatorname{argmin}_{u \in \mathcal P(w)} \langle u, \log u\rangle - \langle u,
    \theta\rangle`.  With :math:`\sigma` sorting :math:`\theta` in descending order,
    :math:`u_{\sigma_j} = e^{\theta_{\sigma_j} - \gamma_j}`, where the non-increasing
    :math:`\gamma` is found by pool adjacent violators with block value
    :math:`\gamma_B = \log\sum_{j \in B} e^{\theta_{\sigma_j}} - \log\sum_{j\in B} w_j`
    (so :math:`\sum_B u = \sum_B w` on every block).  In the log domain: finite for any
    finite ``theta``.

    Parameters
    ----------
    theta : ndarray of shape (m, k)
    w : array-like of shape (k,), entries > 0

    Returns
    -------
    ndarray of shape (m, k)
    """
    theta, w, order, s = _sorted_rows(theta, w)
    if np.any(w <= 0):
        raise ValueError("the KL projection onto the permutahedron needs w > 0")
    logw = np.log(w)
    out = np.empty_like(theta)
    for i in range(theta.shape[0]):
        gamma = _pav_kl(s[i], logw)
        out[i, order[i]] = np.exp(s[i] - gamma)
    return out


# --------------------------------------------------------------------------------------
# order simplex, knapsack (KL)
# --------------------------------------------------------------------------------------
def project_order_simplex_kl(theta):
    r"""KL projection of each row onto :math:`\{1 \ge u_1 \ge \dots \ge u_p \ge 0\}`.

    :math:`u = \min(1, \exp(\mathrm{antitonic}(\theta - 1)))`: the isotonic regression of a
    separable Bregman divergence pools blocks at the mean of the natural parameter
    :math:`\log u = \theta - 1` (the block minimizer of
    :math:`\sum_B c\log c - c\,\theta_j`), and the constant upper bound clips.
    """
    theta = np.asarray(theta, dtype=np.float64)
    out = np.empty_like(theta)
    for i, row in enumerate(theta):
        out[i] = np.exp(np.minimum(isotonic_regression(row - 1.0, increasing=False).x, 0.0))
    return out


def project_knapsack_kl(theta, lower, upper):
    r"""KL projection of each row onto :math:`\{u \in [0, 1]^k : l \le \sum u \le u_b\}`.

    The optimality conditions give :math:`u_j = \min(1, e^{\theta_j - 1 - \tau})` with
    :math:`\tau = 0` when :math:`\sum_j \min(1, e^{\theta_j - 1})` lies in :math:`[l, u_b]`,
    else :math:`\tau` solves :math:`\sum_j u_j = l` (:math:`\tau < 0`) or :math:`= u_b`
    (:math:`\tau > 0`).  With the entries sorted in descending order and the first q of
    them at 1, :math:`e^{-\tau} = (c - q) / \sum_{j > q} e^{\theta_j - 1}`; the right q is
    the one consistent with the clipping.  Exact, O(k log k), in the log domain.
    """
    theta = np.asarray(theta, dtype=np.float64)
    m, k = theta.shape
    out = np.exp(np.minimum(theta - 1.0, 0.0))
    s0 = out.sum(axis=1)
    for i in np.flatnonzero((s0 < lower) | (s0 > upper)):
        c = float(lower) if s0[i] < lower else float(upper)
        if c <= 0.0:
            out[i] = 0.0
            continue
        if c >= k:
            out[i] = 1.0
            continue
        t = np.sort(theta[i] - 1.0)[::-1]
        # log of the tail sums sum_{j >= q} e^{t_j}, q = 0..k-1
        tail = np.logaddexp.accumulate(t[::-1])[::-1]
        for q in range(int(np.floor(c)) + 1):
            if q >= k:
                break
            neg_tau = np.log(c - q) - tail[q]  # -tau
            # consistent: the first q clipped (t_j - tau >= 0), the rest not (< 0)
            if (q == 0 or t[q - 1] + neg_tau >= 0.0) and t[q] + neg_tau <= 0.0:
                out[i] = np.exp(np.minimum(theta[i] - 1.0 + neg_tau, 0.0))
                break
        else:  # pragma: no cover - the conditions always hold for one q
            raise RuntimeError("knapsack KL projection: no consistent clipping level")
    return out


# --------------------------------------------------------------------------------------
# Birkhoff polytope: Newton on the dual
# --------------------------------------------------------------------------------------
class BirkhoffResult:
    """Projections ``P`` (m, k, k), the final marginal errors (m,), the Newton iterations
    (m,), the dual variables ``alpha``, ``beta`` (m, k) with P = link(Theta + alpha 1^T
    + 1 beta^T) (a warm start for nearby scores), and ``converged`` (m,): marginal error
    within ``tol`` or, for huge scores, within the rounding floor 4 k eps max|Theta|."""

    def __init__(self, P, marginal_error, n_iter, alpha, beta, converged):
        self.P = P
        self.marginal_error = marginal_error
        self.n_iter = n_iter
        self.alpha = alpha
        self.beta = beta
        self.converged = converged


def _birkhoff_batch(T, kl, tol, max_iter, init=None):
    """Newton on the dual for a batch T (m, k, k), vectorized over the batch: one batched
    linear solve of the (2k x 2k) Newton systems and one batched Armijo search per step,
    on the matrices not yet within their tolerance."""
    m, k, _ = T.shape
    eps = np.finfo(float).eps
    # rounding floor: Z = T + a + b is formed from numbers of size max|T|
    tols = np.maximum(tol, 4.0 * k * eps * np.maximum(1.0, np.abs(T).max(axis=(1, 2))))
    if init is not None:  # warm start (e.g. the previous scores' dual variables)
        a, b = np.array(init[0], dtype=np.float64), np.array(init[1], dtype=np.float64)
    elif kl:
        a = -logsumexp(T, axis=2)
        b = np.zeros((m, k))
        for _ in range(5):  # Sinkhorn sweeps (log domain) as the start
            b = -logsumexp(T + a[:, :, None], axis=1)
            a = -logsumexp(T + b[:, None, :], axis=2)
    else:
        r, c, S = T.sum(axis=2), T.sum(axis=1), T.sum(axis=(1, 2))
        a = (1.0 - r) / k + ((S - k) / (2.0 * k * k))[:, None]
        b = (1.0 - c) / k + ((S - k) / (2.0 * k * k))[:, None]

    def primal(Tb, ab, bb):
        Z = Tb + ab[:, :, None] + bb[:, None, :]
        if kl:
            with np.errstate(over="ignore"):  # an overflowing trial step is rejected
                return Z, np.exp(Z)
        return Z, np.maximum(Z, 0.0)

    def dual(Z, P, ab, bb):  # convex dual objective, minimized
        phi = P.sum(axis=(1, 2)) if kl else 0.5 * np.sum(P * P, axis=(1, 2))
        return phi - ab.sum(axis=1) - bb.sum(axis=1)

    def marg(P):
        return np.maximum(np.abs(P.sum(axis=2) - 1.0).max(axis=1),
                          np.abs(P.sum(axis=1) - 1.0).max(axis=1))

    Z, P = primal(T, a, b)
    h = dual(Z, P, a, b)
    err = marg(P)
    its = np.zeros(m, dtype=int)
    stuck = np.zeros(m, dtype=bool)
    eye = np.arange(k)
    for _ in range(max_iter):
        act = np.flatnonzero((err > tols) & ~stuck)
        if act.size == 0:
            break
        its[act] += 1
        Ta, aa, ba, Pa, Za, ha, ea = T[act], a[act], b[act], P[act], Z[act], h[act], err[act]
        gr, gc = Pa.sum(axis=2) - 1.0, Pa.sum(axis=1) - 1.0
        D = Pa if kl else (Za > 0).astype(np.float64)
        H = np.zeros((act.size, 2 * k, 2 * k))
        H[:, eye, eye] = D.sum(axis=2)
        H[:, k + eye, k + eye] = D.sum(axis=1)
        H[:, :k, k:] = D
        H[:, k:, :k] = D.transpose(0, 2, 1)
        diag = H[:, np.arange(2 * k), np.arange(2 * k)]
        H[:, np.arange(2 * k), np.arange(2 * k)] += 1e-12 * np.maximum(1.0, diag.max(axis=1))[
            :, None]
        g = np.concatenate([gr, gc], axis=1)
        try:
            d = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            d = -g
        slope = np.einsum("ij,ij->i", g, d)
        bad = ~(slope < 0)
        d[bad] = -g[bad]
        slope[bad] = -np.einsum("ij,ij->i", g[bad], g[bad])
        t = np.ones(act.size)
        done = np.zeros(act.size, dtype=bool)
        an, bn = aa.copy(), ba.copy()
        Zn, Pn, hn = Za.copy(), Pa.copy(), ha.copy()
        flat = 1e-13 * (1.0 + np.abs(ha))  # dual decreases below this are rounding
        for _ in range(70):
            todo = np.flatnonzero(~done)
            if todo.size == 0:
                break
            ta = t[todo][:, None]
            a_t, b_t = aa[todo] + ta * d[todo, :k], ba[todo] + ta * d[todo, k:]
            Z_t, P_t = primal(Ta[todo], a_t, b_t)
            h_t = dual(Z_t, P_t, a_t, b_t)
            ok = np.isfinite(h_t) & (h_t <= ha[todo] + 1e-4 * t[todo] * slope[todo])
            near = np.isfinite(h_t) & ~ok & (h_t <= ha[todo] + flat[todo])
            if np.any(near):  # near the optimum: judge by the marginals instead
                ok[near] = marg(P_t[near]) < ea[todo[near]]
            acc = todo[ok]
            an[acc], bn[acc], Zn[acc], Pn[acc], hn[acc] = (a_t[ok], b_t[ok], Z_t[ok],
                                                          P_t[ok], h_t[ok])
            done[acc] = True
            t[todo[~ok]] *= 0.5
            small = todo[~ok][t[todo[~ok]] < 1e-20]
            if small.size:
                done[small] = True
                stuck[act[small]] = True
        a[act], b[act], Z[act], P[act], h[act] = an, bn, Zn, Pn, hn
        err[act] = marg(Pn)
    return P, err, its, a, b, tols


def project_birkhoff(Theta, *, kl=False, tol=1e-10, max_iter=100, init=None):
    r"""Euclidean (``kl=False``) or KL projection of k x k matrices onto the Birkhoff
    polytope, by Newton's method on the dual.

    Euclidean: :math:`\min_{P \ge 0,\ P\mathbf 1 = P^T\mathbf 1 = \mathbf 1}
    \tfrac12\|P - \Theta\|^2`, whose dual (minimized) is
    :math:`\tfrac12\|[\Theta + \alpha\oplus\beta]_+\|^2 - \langle\alpha + \beta, \mathbf 1
    \rangle` with :math:`P = [\Theta + \alpha\oplus\beta]_+`, piecewise quadratic: Newton
    with the generalized Hessian :math:`\begin{pmatrix}\operatorname{diag}(M\mathbf 1) & M
    \\ M^T & \operatorname{diag}(M^T\mathbf 1)\end{pmatrix}`, :math:`M` the support of P,
    converges in finitely many steps once the support is found.  KL: the dual
    :math:`\sum e^{\Theta + \alpha\oplus\beta} - \langle\alpha + \beta, \mathbf 1\rangle`
    (the log-domain Sinkhorn potentials), Newton with the Hessian built from P.  Both with
    an Armijo backtracking line search on the dual; stop when both marginals are within
    ``tol`` of 1 (max norm).

    Parameters
    ----------
    Theta : ndarray of shape (m, k, k)
    kl : bool
    tol : float
        Marginal tolerance.
    max_iter : int
        Newton iterations per matrix.
    init : tuple (alpha, beta) of arrays (m, k), optional
        Dual variables to start from (``BirkhoffResult.alpha`` / ``beta`` of nearby scores).

    Returns
    -------
    BirkhoffResult
    """
    Theta = np.asarray(Theta, dtype=np.float64)
    # a per-row shift does not change the projection (absorbed in alpha); it keeps the
    # dual's numbers near the scale of P
    shift = Theta.max(axis=2)
    T = Theta - shift[:, :, None]
    if init is not None:
        a0, b0 = (np.asarray(v, dtype=np.float64) for v in init)
        if a0.shape != shift.shape or b0.shape != shift.shape:
            raise ValueError(f"init must be two arrays of shape {shift.shape}, got "
                             f"{a0.shape} and {b0.shape}")
        init = (a0 + shift, b0)
    P, err, its, a, b, tols = _birkhoff_batch(T, kl, tol, max_iter, init)
    return BirkhoffResult(P, err, its, a - shift, b, err <= tols)
