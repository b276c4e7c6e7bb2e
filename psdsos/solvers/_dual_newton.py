r"""Quasi-Newton steps for small negative-part duals: L-BFGS-B in the metric of the
generalized Hessian.

The dual of :mod:`psdsos.solvers._dual` (one SoS block, q smooth),

.. math::

    D(\Gamma) = q(\Gamma) + \frac{1}{2\lambda_2}\|[S]_-\|_F^2, \qquad
    S = \mathcal A^*(\Gamma) + \lambda_1 I = \sum_j \Psi_j\Gamma_j\Psi_j^T + \lambda_1 I,

is convex and :math:`C^1` with a Lipschitz but only semismooth gradient
:math:`\nabla D = \nabla q - \mathcal A(\lambda_2^{-1}[S]_-)`.  Its generalized Hessian
(Clarke) at :math:`\Gamma` contains

.. math::

    \mathbf H = \nabla^2 q + \frac{1}{\lambda_2}\mathcal A\,\mathcal J_S\,\mathcal A^*,
    \qquad \mathcal J_S(X) = \mathbf Q(\Omega\circ\mathbf Q^T X\mathbf Q)\mathbf Q^T,

with :math:`S = \mathbf Q\operatorname{diag}(w)\mathbf Q^T` and :math:`\Omega_{kl} = 1` when
:math:`w_k, w_l \le 0`, :math:`0` when both are :math:`> 0`, and
:math:`w_k / (w_k - w_l)` when :math:`w_k \le 0 < w_l` (the derivative of the projection
onto the negative semidefinite cone; Sun and Sun, Math. Oper. Res. 27, 2002; Zhao, Sun
and Toh, SIAM J. Optim. 20, 2010).  Where the PSD constraint is strongly active the
curvature of the negative part (up to :math:`\lambda_{\max}(\mathbf K_\Phi\circ
\mathbf K_\Phi)/\lambda_2`) and that of q (n for PSD least squares) differ by many orders
of magnitude (:math:`10^8` for 50 points at :math:`\lambda_2 = 10^{-8}`) in directions
that change from point to point with the active set:
an accelerated gradient method in any fixed metric then needs thousands of iterations at
small :math:`\lambda_2`, a Newton-type method a few.

Here :math:`\mathbf H` is formed densely in orthonormal coordinates of the symmetric
matrices (:func:`symmetric_basis`: p = d(d+1)/2 per point, dual dimension m p), which
pays while m p is a few hundred (``AUTO_MAX_DIM``), and used as a *metric*:

1. a Newton step :math:`-\mathbf H^{-1}\nabla D` with backtracking (Armijo; where the
   predicted decrease is below the rounding of D, accepted when the certified gap
   decreases, and then the next step is taken in the same metric);
2. then scipy's L-BFGS-B (``scipy.optimize.minimize``) on
   :math:`z = \mathbf L^T(\Gamma - \Gamma_c)/s` (:math:`\mathbf H = \mathbf L\mathbf L^T`,
   s the length of the step just taken, so that its first trial step is that step), for
   at most ``_CYCLE`` evaluations (``_METRIC_CYCLE`` in a metric given by the caller,
   ended sooner when the certified gap does not drop tenfold every ``_PATIENCE``
   evaluations);
3. a new :math:`\mathbf H` at the point of lowest D, and again; a new Hessian that
   brings no progress (rounding) ends the solve, not converged.

A caller may pass the first metric (``metric``): e.g. the Hessian of a nearby problem,
as :class:`psdsos.PSDRegressorCV` does for the folds (the full-data Hessian restricted to
the fold's points).  Every evaluation computes the relative duality gap of
:func:`psdsos.solvers.solve_dual` from the same eigendecomposition, and the solver stops
at the first point whose gap is at most ``tol``: the certificate does not depend on the
metric, which only decides how fast it is reached.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsyrk
from scipy.optimize import minimize

from psdsos.solvers._apg import DualResult, report_end, say
from psdsos.solvers._blocks import ProblemView, coupled_residual
from psdsos.sos import sos_adjoint, sos_evaluate

__all__ = ["AUTO_MAX_DIM", "AUTO_MIN_CONDITION", "MAX_DIM", "dual_hessian",
           "from_symmetric_coordinates", "solve_dual_lbfgs", "symmetric_basis",
           "to_symmetric_coordinates"]

#: ``method="auto"`` of :func:`psdsos.solvers.solve_dual` takes these quasi-Newton steps up
#: to this dual dimension m d (d + 1) / 2 (100 points of 3 x 3 matrices); a Hessian then
#: costs about 0.05 s (m p = 300) to 0.5 s (600) on one core.
AUTO_MAX_DIM = 600
#: ... and from this conditioning lambda_max(K_Phi o K_Phi) / (mu lam2) of the dual on (in
#: the metric of the accelerated method: below it, that method needs a few dozen iterations
#: and a Hessian costs more than it saves; 50 points of 3 x 3 matrices: lam2 <~ 1e-3).
AUTO_MIN_CONDITION = 300.0
#: ``method="lbfgs"`` refuses larger dual dimensions (a dense Hessian of 8 dim^2 bytes, formed
#: in O(dim^2 (r d)^2 / 4) operations).
MAX_DIM = 4000
#: L-BFGS-B evaluations between two Hessians: a Hessian of 50 points of 3 x 3 matrices
#: costs about as much as 20 evaluations (eigendecompositions of size 150).
_CYCLE = 15
#: The same with a metric given by the caller (no Hessian computed yet: evaluations are
#: the cheaper way to correct it).
_METRIC_CYCLE = 40
#: In the caller's metric, the certified gap must drop tenfold every this many evaluations
#: (else a Hessian at the current point).
_PATIENCE = 10
#: Regularization tau = _LM_KAPPA ||grad D|| of the Newton steps for coupled duals, and
#: their largest number of step halvings.
_LM_KAPPA = 0.1
_LM_HALVINGS = 30
_LM_PATIENCE = 200
_LM_PRUNE = 0.1
#: L-BFGS-B memory.
_MAXCOR = 10
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


class _Stop(Exception):
    """Raised inside the evaluations: converged or out of budget (caught by the solver)."""


class _Evaluations:
    """D, its gradient and the certificate at a point (one eigendecomposition per SoS
    block), with the bookkeeping: the best certified point, the point of lowest D, the last
    point, the budget.  The point x is the blocks' symmetric coordinates one after the
    other."""

    def __init__(self, problem: Any, view: ProblemView, caps: Any, *, tol: float,
                 max_iter: int, every: int, t0: float, history: bool) -> None:
        self.problem, self.view = problem, view
        self.blocks = view.blocks
        self.Es = [symmetric_basis(b.d) for b in self.blocks]
        self.shapes = [(b.m, int(b.d)) for b in self.blocks]
        self.shifts = [b.lam1 * np.eye(b.N) for b in self.blocks]
        self.offsets = [0]
        for (m, _), E in zip(self.shapes, self.Es, strict=True):
            self.offsets.append(self.offsets[-1] + m * len(E))
        self.dim = self.offsets[-1]
        self.tol, self.max_iter, self.every, self.t0 = tol, max_iter, every, t0
        self.obj_floor, self.res_floor = 1e-300, 0.0
        if caps.dual_floors is not None:
            obj_floor, self.res_floor = (float(v) for v in caps.dual_floors())
            self.obj_floor = max(obj_floor, 1e-300)
        # coupling constraints (convex regression): the primal point recovered from G
        # satisfies them only at the optimum, so the certificate also needs the relative
        # residual (as in the accelerated method)
        self.coupled = bool(caps.coupled)
        if self.coupled:
            self.res_floor = view.residual_floor(self.res_floor)
        self.count = 0
        self.best: dict[str, Any] = {}
        self.low: dict[str, Any] = {}
        self.last: dict[str, Any] = {}
        self.history: dict[str, list] | None = {"gap": [], "dual": []} if history else None
        self.converged = False
        self.n_hessian = 0

    def matrices(self, x: np.ndarray) -> list[np.ndarray]:
        """The blocks' matrices (m_k, d_k, d_k) of the coordinates x."""
        o = self.offsets
        return [np.einsum("jt,tab->jab", x[o[k]:o[k + 1]].reshape(m, -1), E)
                for k, ((m, _), E) in enumerate(zip(self.shapes, self.Es, strict=True))]

    def coords(self, flat: np.ndarray) -> np.ndarray:
        """The coordinates of the view's flat vector of the blocks' matrices."""
        parts = self.view.layout.split(np.asarray(flat, dtype=np.float64).reshape(-1))
        return np.concatenate([
            np.einsum("jab,tab->jt", G.reshape(m, d, d), E).reshape(-1)
            for G, (m, d), E in zip(parts, self.shapes, self.Es, strict=True)])

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        if self.count >= self.max_iter:
            raise _Stop
        self.count += 1
        Gs = self.matrices(x)
        ws, Qs, Bs, FBs = [], [], [], []
        negterm = 0.0
        for b, G, shift in zip(self.blocks, Gs, self.shifts, strict=True):
            w, Q = np.linalg.eigh(sos_adjoint(b.Phi, G) + shift)
            neg = w < 0
            Qn = Q[:, neg]
            B = (Qn * (-w[neg])) @ Qn.T / b.lam2
            B = 0.5 * (B + B.T)
            ws.append(w)
            Qs.append(Q)
            Bs.append(B)
            FBs.append(sos_evaluate(b.Phi, B, b.d))
            negterm += float(np.sum(w[neg] ** 2)) / (2.0 * b.lam2)
        flat = self.view.layout.join(Gs)
        q, gq = self.view.smooth(flat)
        D = float(q) + negterm
        FB = self.view.layout.join(FBs)
        P = float(self.view.primal_objective(flat, Bs, FBs))
        gap = (P + D) / max(abs(P), abs(D), self.obj_floor)
        grad = gq - FB
        g = self.coords(grad)
        true_gap = gap
        if self.coupled:
            res = coupled_residual(grad, gq, FB, self.res_floor)
            # the certificate: the gap and the residual both <= tol ("gap" below)
            gap = max(abs(gap), res)
        if self.history is not None:
            self.history["gap"].append(gap)
            self.history["dual"].append(-D)
        # scale: the size of the terms of D (its rounding error is about eps times it)
        self.last = {"x": x.copy(), "D": D, "g": g, "gap": gap, "w": ws, "Q": Qs,
                     "scale": abs(float(q)) + negterm}
        if not self.best or gap < self.best["gap"]:
            G_out, B_out = self.view.result(flat, Bs)
            self.best = {"gap": gap, "G": G_out, "B": B_out, "P": P, "D": D,
                         "true_gap": true_gap}
        if not self.low or D < self.low["D"]:
            self.low = self.last
        if self.every and (self.count % self.every == 0 or self.count == 1):
            say(f"iter {self.count:6d}  rel. gap {gap:.3e}  primal {P:.10g}  "
                f"hessians {self.n_hessian}  {time.perf_counter() - self.t0:.1f} s")
        if gap <= self.tol:
            self.converged = True
            raise _Stop
        return D, g


class _Slow(Exception):
    """Raised inside a cycle whose certified gap decreases too slowly: a new metric."""


def _lbfgs_cycle(ev: _Evaluations, cur: dict[str, Any], L: np.ndarray, cycle: int,
                 patience: int, step: float) -> None:
    """scipy's L-BFGS-B from cur["x"] in the metric L L^T, at most ``cycle`` evaluations,
    and ended sooner when every ``patience`` evaluations the best certified gap has not
    dropped tenfold (a metric that no longer describes D: a new Hessian pays more);
    variables z = L^T (x - x_c) / s with s ``step`` times the length of the Newton step in
    the metric, so that the first trial step (of length 1 in z) is that step."""
    xc, Dc, gc = cur["x"], cur["D"], cur["g"]
    gz0 = sla.solve_triangular(L, gc, lower=True, check_finite=False)
    s = step * float(np.linalg.norm(gz0))
    if not s > 0:
        return

    start, mark = ev.count, [ev.best["gap"]]

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        if not z.any():  # the starting point, already evaluated
            return Dc, s * gz0
        done = ev.count - start
        if done and done % patience == 0:
            if ev.best["gap"] > 0.1 * mark[0]:
                raise _Slow
            mark[0] = ev.best["gap"]
        xx = xc + s * sla.solve_triangular(L, z, lower=True, trans="T", check_finite=False)
        Dz, gx = ev(xx)
        return Dz, s * sla.solve_triangular(L, gx, lower=True, check_finite=False)

    try:
        minimize(fun, np.zeros(len(xc)), jac=True, method="L-BFGS-B",
                 options={"maxcor": _MAXCOR, "ftol": 0.0, "gtol": 0.0, "maxfun": cycle,
                          "maxiter": cycle})
    except _Slow:
        pass


def solve_dual_lbfgs(problem: Any, view: ProblemView, caps: Any, *, tol: float,
                     max_iter: int, init: Any, metric: np.ndarray | None,
                     verbose: bool | int, history: bool, stacklevel: int = 2) -> DualResult:
    """The quasi-Newton method of the module docstring (called by
    :func:`psdsos.solvers.solve_dual` with ``method="lbfgs"``; arguments as there).

    ``max_iter`` counts evaluations (eigendecompositions of S, as the gradient steps of
    the accelerated method); the Hessians (``n_hessian`` of the result) come on top.
    """
    t0 = time.perf_counter()
    every = 100 if verbose is True else int(verbose or 0)
    ev = _Evaluations(problem, view, caps, tol=tol, max_iter=max_iter, every=every, t0=t0,
                      history=history)
    dim = ev.dim
    what = " + ".join(f"{m} points of size {d}" for m, d in ev.shapes)
    if dim > MAX_DIM:
        raise ValueError(f"method='lbfgs' forms dense Hessians of the dual dimension m d (d + 1) "
                         f"/ 2 = {dim} > {MAX_DIM} ({what}); use method='apg'")
    mu, U = _curvature_of_q(problem, caps, ev.shapes, ev.Es)
    if metric is not None:
        metric = np.asarray(metric, dtype=np.float64)
        if metric.shape != (dim, dim) or not np.all(np.isfinite(metric)):
            raise ValueError(f"metric must be a finite ({dim}, {dim}) matrix (the dual "
                             f"dimension m d (d + 1) / 2 of {what}), got "
                             f"shape {metric.shape}")
    if every:
        sizes = " + ".join(f"{m} blocks of size {d} x {d}" for m, d in ev.shapes)
        Bs = " + ".join(str(b.N) for b in ev.blocks)
        say(f"{type(problem).__name__}: {sizes}, dual dimension {dim}, B of size {Bs}; "
            f"quasi-Newton (L-BFGS-B in the metric of the generalized Hessian); tol {tol:g}, "
            f"max_iter {max_iter}")
    setup_time = time.perf_counter() - t0
    x0 = np.zeros(dim) if init is None else ev.coords(view.from_init(init))
    stalled = False

    def hessian(cur: dict[str, Any], floor: float = 0.0) -> np.ndarray:
        ev.n_hessian += 1
        H = np.zeros((dim, dim))
        o = ev.offsets
        for k, b in enumerate(ev.blocks):
            H[o[k]:o[k + 1], o[k]:o[k + 1]] = _hessian_from_eig(
                b.Phi, int(b.d), b.lam2, cur["w"][k], cur["Q"][k], ev.Es[k], _PRUNE,
                max(_PRUNE * max(mu, 0.0), floor))
        # mu = 0: a relative floor keeps H definite where D is flat
        H[np.diag_indices_from(H)] += mu if mu > 0 else 1e-12 * max(
            1.0, float(np.max(np.diag(H))))
        if U is not None:
            H += U @ U.T
        return H

    if ev.coupled and metric is None:
        stalled = _regularized_newton(ev, x0, hessian)
        return _result(ev, stalled, tol, max_iter, t0, every, setup_time, stacklevel)
    try:
        ev(x0)
        cur = ev.last
        H = metric
        fresh = False  # H computed at the current point
        while True:
            if H is None:
                H, fresh = hessian(cur), True
            if H is metric:
                try:
                    L = sla.cholesky(H, lower=True, check_finite=False)
                except np.linalg.LinAlgError as exc:
                    raise ValueError("metric must be symmetric positive definite") from exc
            else:
                L = _cholesky(H)
            low0, best0 = ev.low["D"], ev.best["gap"]
            # 1. the Newton step in the metric, backtracking; where its predicted decrease
            # is below the rounding of D, accepted when the certified gap decreases
            x, D, g = cur["x"], cur["D"], cur["g"]
            dx = -sla.cho_solve((L, True), g, check_finite=False)
            dec = -float(g @ dx)
            rounding = dec <= 1e-10 * cur["scale"]
            for k in range(8):
                t = 0.5**k
                D1, _g1 = ev(x + t * dx)
                if D1 <= D - 1e-4 * t * dec or (rounding and ev.last["gap"] < cur["gap"]):
                    cur = ev.last
                    break
            if not rounding:
                # 2. L-BFGS-B in the metric, from there; its first trial as long as the
                # step last tried (the Newton step where it was accepted at once)
                if H is metric:
                    _lbfgs_cycle(ev, cur, L, _METRIC_CYCLE, _PATIENCE, t)
                else:
                    _lbfgs_cycle(ev, cur, L, _CYCLE, _CYCLE, t)
                if ev.low["D"] < cur["D"]:
                    cur = ev.low
            progress = ev.low["D"] < low0 or ev.best["gap"] < best0
            if not progress and fresh:
                stalled = True  # a Hessian at the point and no progress: rounding
                raise _Stop
            # 3. a new metric at the current point (kept while the steps are in the
            # rounding regime and make progress)
            if not (rounding and progress):
                H, fresh = None, False
            else:
                fresh = False
    except _Stop:
        pass
    return _result(ev, stalled, tol, max_iter, t0, every, setup_time, stacklevel)


def _result(ev: _Evaluations, stalled: bool, tol: float, max_iter: int, t0: float,
            every: int, setup_time: float, stacklevel: int) -> DualResult:
    best = ev.best
    converged = ev.converged
    what = "relative duality gap and residual" if ev.coupled else "relative duality gap"
    if converged:
        message = f"{what} {best['gap']:.3e} <= tol {tol:g}"
    elif stalled:
        message = (f"no further progress (rounding) after {ev.count} evaluations with "
                   f"{what} {best['gap']:.3e} > tol {tol:g}")
    else:
        message = (f"maximum number of iterations {max_iter} reached with {what} "
                   f"{best['gap']:.3e} > tol {tol:g}")
    report_end(converged, message, f"{ev.count} iterations ({ev.n_hessian} Hessians)", t0,
               every, " (quasi-Newton)", stacklevel + 2)
    return DualResult(
        G=best["G"], B=best["B"], primal_objective=best["P"], dual_objective=-best["D"],
        dual_gap=best["true_gap"], n_iter=ev.count, converged=converged, message=message,
        step_size=1.0, time=time.perf_counter() - t0, history=ev.history,
        setup_time=setup_time, n_hessian=ev.n_hessian, method="lbfgs",
    )


def _regularized_newton(ev: _Evaluations, x0: np.ndarray, hessian: Any) -> bool:
    r"""Regularized semismooth Newton steps for a coupled dual (convex regression).

    There q's curvature has the rank of the expansion (a few dozen) while the dual has
    m d (d + 1) / 2 coordinates, and D is nearly flat in the directions where neither q
    nor the active negative part acts: the minimizers are not isolated (the multipliers of
    the Hessian constraints need not be unique), and a quasi-Newton model in a nearly
    singular metric takes wild steps.  Each step here solves
    :math:`(\mathbf H + \tau\mathbf I)\,\delta = -\nabla D` with
    :math:`\tau = \kappa\|\nabla D\|` (a Levenberg-Marquardt regularization: fast local
    convergence without isolated solutions under an error bound, Li, Fukushima, Qi and
    Yamashita, Comput. Optim. Appl. 26, 2003), with Armijo backtracking on D.  Returns
    True when a step finds no decrease (rounding).
    """
    try:
        ev(x0)
        cur = ev.last
        mark, mark_err = ev.count, ev.best["gap"]
        while True:
            if ev.count - mark >= _LM_PATIENCE:
                # the certified error must halve every _LM_PATIENCE evaluations: slower
                # progress is the drift towards a minimizer at infinity (flat directions)
                if ev.best["gap"] > 0.5 * mark_err:
                    return True
                mark, mark_err = ev.count, ev.best["gap"]
            g = cur["g"]
            tau = _LM_KAPPA * float(np.linalg.norm(g))
            # terms of the Hessian bounded in sum by a fraction of tau are left out: the
            # regularization dominates them
            H = hessian(cur, _LM_PRUNE * tau)
            H[np.diag_indices_from(H)] += tau
            L = _cholesky(H)
            dx = -sla.cho_solve((L, True), g, check_finite=False)
            dec = -float(g @ dx)
            t = 1.0
            for _ in range(_LM_HALVINGS):
                D1, _g1 = ev(cur["x"] + t * dx)
                if D1 <= cur["D"] - 1e-4 * t * dec:
                    break
                t *= 0.5
            else:
                return True
            cur = ev.last
    except _Stop:
        return False
