r"""The SPD decoder of :class:`~psdsos.structured.spaces.spd.SPDSpace`: Riemannian Newton on
tracked eigendecompositions, with certified gradient norms and a robust fallback.

:class:`_SPDNewton` holds the per-fit data and solves a batch of test points
(:meth:`_SPDNewton.solve`); :class:`_SPDEval` is the data of one evaluation of the SELF
objective at a frame.  The method is described in the docstring of :class:`SPDSpace`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from psdsos.structured.spaces._manifold import _MIN_STEP, _TINY
from psdsos.structured.spaces._spd_eigen import _SPDEigen, _SPDEval, _sw
from psdsos.structured.spaces._spd_robust import LOG_COND, clip_window

__all__ = ["_Solved", "_SPDEval", "_SPDNewton"]

#: Largest accepted orthogonality defect ||V^T V - I||_F of a tracked eigenvector matrix
#: when a gradient norm is certified (else LAPACK).
_ORTH_TOL = 1e-12
#: SPD decoding: Newton iterations of the fast path (tracked eigenvectors) per test point;
#: a point not certified by then goes to the robust method (:meth:`_SPDNewton.robust`).
_FAST_ITER = 15
#: Largest trust radius (geodesic length of one step): a step longer than the spread of
#: log-eigenvalues that the space holds (condition number 1e12) cannot end inside it, and
#: the frame's exponential would leave the float range (overflow in exp and in the
#: congruences that follow).
_MAX_RADIUS = LOG_COND


@dataclass
class _Solved:
    r"""The result of :meth:`_SPDNewton.solve` for c rows (test point, start).

    ``Y`` (c, d, d): the decodes, SPD in spectral form; ``R``: their frames
    (:math:`Y^{-1} = R^\top R`); ``n_iter``: trial steps; ``grad_norm``: the computed
    Riemannian gradient norm :math:`2\|G\|_F`; ``err``: the bound on the error of
    :math:`\|G\|_F`, so that the exact norm is at most ``grad_norm + 2 err``; ``F`` and
    ``errF``: the objective (weights as given) and the bound on its error; ``certified``:
    ``grad_norm + 2 err <= tol``.
    """

    Y: np.ndarray
    R: np.ndarray
    n_iter: np.ndarray
    grad_norm: np.ndarray
    err: np.ndarray
    F: np.ndarray
    errF: np.ndarray
    certified: np.ndarray


def frame_of_logs(L0, lo=-np.inf, hi=np.inf):
    r"""Frames :math:`R = e^{-L/2}` of the points :math:`e^{L}` (batch of symmetric L).

    The log-eigenvalues are first clipped to a window of width ``LOG_COND``
    (:func:`~._spd_robust.clip_window`: the nearest point of condition number
    :math:`\le e^{\mathrm{LOG\_COND}}`), then to ``[lo, hi]``, so that a strongly
    extrapolating start (a log-Euclidean mean of signed weights) is a point of the space and
    its frame finite (no overflow in exp)."""
    w0, U0 = np.linalg.eigh(0.5 * (L0 + _sw(L0)))
    for t in np.flatnonzero(~(w0[:, -1] - w0[:, 0] <= LOG_COND)):
        w0[t] = clip_window(w0[t])
    np.clip(w0, lo, hi, out=w0)
    return (U0 * np.exp(-0.5 * w0)[:, None, :]) @ _sw(U0)


class _SPDNewton(_SPDEigen):
    r"""Per-fit data and the Riemannian Newton solver of :class:`SPDSpace`, batched over c
    test points that share a set of m training matrices (the rows of the work arrays are
    the c m pairs, test-major).

    ``A``: the training matrices (n, d, d); ``logs``: their logarithms.  ``n_eigh`` counts
    the LAPACK eigendecompositions of d x d matrices.  Work arrays are allocated once and
    reused (``out=``): fresh arrays of that size cost page faults comparable to the
    arithmetic.
    """

    # ---- start point ---------------------------------------------------------------
    def start(self, idx, W, n_iter=2):
        r"""Logs (c, d, d) of the start points: the weighted log-Euclidean means
        :math:`\bar L = \sum_i w_i \log Y_i`, corrected by the cubic terms of the symmetric
        BCH formula (rows of W: weights on the training matrices ``idx``).

        :math:`\log(e^{X/2} e^{Y} e^{X/2}) = X + Y - \tfrac1{24}[X,[X,Y]] +
        \tfrac1{12}[Y,[Y,X]] + O(5)` turns the stationarity condition
        :math:`\sum_i w_i \log(M^{-1/2} Y_i M^{-1/2}) = 0` into the fixed point
        :math:`L = \bar L + \tfrac1{24}[L,[L,\bar L]] + \tfrac1{12}\sum_i w_i [L_i,[L_i, L]]`
        (:math:`L = \log M`, :math:`L_i = \log Y_i`, :math:`\sum_i w_i = 1`), iterated
        ``n_iter`` times from :math:`\bar L` while it contracts: the first correction must
        be at most half the weighted spread :math:`(\sum_i |w_i| \|L_i - \bar L\|_F^2)^{1/2}`,
        each later one at most half the previous one (else the last accepted iterate).
        Exact for commuting :math:`Y_i` (the commutators vanish); otherwise only the speed
        depends on it (the Newton iteration certifies the result).
        """
        d, (c, m) = self.d, W.shape
        sub = m < self.n
        Ls = self.logs[idx] if sub else self.logs
        Lf = self.logs_flat[idx] if sub else self.logs_flat
        Lb = (W @ Lf).reshape(c, d, d)
        Lb = 0.5 * (Lb + _sw(Lb))
        AW = np.abs(W)  # weighted spread^2 of the logs about Lb
        spread2 = (AW @ (self.logs_n2[idx] if sub else self.logs_n2)
                   - 2.0 * np.einsum("ti,ti->t", AW @ Lf, Lb.reshape(c, d * d))
                   + AW.sum(axis=1) * np.einsum("tij,tij->t", Lb, Lb))
        Q = (W @ (self.logs_sq[idx] if sub else self.logs_sq)).reshape(c, d, d)
        Lcat = (self.logs_cat[:, idx] if sub else self.logs_cat).reshape(d, m * d)
        XL = self._work("T1", c * m).reshape(c, m, d, d)
        L, limit = Lb, 0.5 * np.sqrt(np.maximum(spread2, 0.0))
        for _ in range(n_iter):
            X = -L
            cxxy = X @ (X @ Lb) - 2.0 * (X @ Lb) @ X + (Lb @ X) @ X
            np.matmul(X[:, None], Ls, out=XL)
            XL *= W[:, :, None, None]
            T = Lcat @ XL.reshape(c, m * d, d)  # sum_i w_i L_i X L_i
            Ln = Lb - cxxy / 24.0 + (Q @ X - 2.0 * T + X @ Q) / 12.0
            Ln = 0.5 * (Ln + _sw(Ln))
            step = np.sqrt(np.einsum("tij,tij->t", Ln - L, Ln - L))
            ok = np.isfinite(step) & (step <= limit)
            if not ok.any():
                break
            L = np.where(ok[:, None, None], Ln, L)
            limit = np.where(ok, 0.5 * step, -1.0)  # a rejected test point stops here
        return L

    def _phi(self, ev):
        r"""Phi_jk = (log l_j - log l_k) / (l_j - l_k), flat (M, d * d), and l_j + l_k, in
        work arrays of the evaluation; returns log l.

        Written :math:`\Phi = \operatorname{log1p}(u) / (u \lambda_k)`,
        :math:`u = \lambda_j / \lambda_k - 1`: no cancellation for close eigenvalues, and
        :math:`1/\lambda_k` at ties (u = 0 becomes 1e-300).
        """
        lam = np.maximum(ev.lam, _TINY)
        M, d = lam.shape
        # C-contiguous (M, d, d) operands: broadcast copies (fancy indexing along axis 1
        # would return Fortran-ordered arrays, slow to mix with the C-ordered ones)
        lr = self._work(f"E{ev.slot}", M)
        lr[:] = lam[:, :, None]
        lc = self._work("T1", M)
        lc[:] = lam[:, None, :]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            u = np.divide(lr, lc, out=self._work("T3", M))
            u -= 1.0
            u += 1e-300
            Phi = np.log1p(u, out=self._work(f"D{ev.slot}", M))
            Phi /= u
            Phi /= lc
        # u overflows only for eigenvalue ratios beyond ~1e308 (scan Phi only then; the
        # test is written so that it cannot overflow itself)
        if not np.all(1e-300 * lam.max(axis=1) < lam.min(axis=1)):
            bad = ~np.isfinite(Phi)
            if bad.any():  # eigenvalue ratios beyond the float range: the direct quotient
                # (no cancellation there: the eigenvalues are far apart)
                lj, lk = lr[bad], lc[bad]
                Phi[bad] = (np.log(lj) - np.log(lk)) / (lj - lk)
        lr += lc
        ev.Phi, ev.lsum = Phi.reshape(M, d * d), lr.reshape(M, d * d)
        return np.log(lam)

    def _columns(self, ev):
        """[V_t1 ... V_tm] per test point, (c, d, m d), for the reductions."""
        M, d = ev.V.shape[:2]
        c = ev.c
        Vc = self._work(f"C{ev.slot}", M).reshape(c, d, M // c, d)
        Vc[:] = ev.V.reshape(c, M // c, d, d).transpose(0, 2, 1, 3)
        ev.Vc = Vc.reshape(c, d, M // c * d)

    def assemble(self, ev, W, AW):
        """Per test point: G (frame gradient sum_i w_i log S_i), F, ||grad F|| = 2 ||G||_F,
        and the error bounds."""
        V = ev.V
        M, d = V.shape[:2]
        c, m = W.shape
        self._columns(ev)
        ev.H = ev.Phi = None
        if ev.diag:  # log S_i = V_i diag(log l_i) V_i^T
            lg = np.log(np.maximum(ev.lam, _TINY))
            f = np.einsum("ij,ij->i", lg, lg)
            Xc = self._work("T3", M).reshape(c, d, m * d)
            np.multiply(ev.Vc, (W[:, :, None] * lg.reshape(c, m, d)).reshape(c, 1, m * d),
                        out=Xc)
        else:
            lg = self._phi(ev)
        # a trial frame far from the tracked eigenvectors (a rejected step on badly
        # conditioned data; tracked eigenvalues <= 0, floored at the tiny float) can
        # overflow here: F, ||G|| and the bound become inf/NaN, which the line search
        # rejects, the stopping test never certifies and the refinement sends to LAPACK
        with np.errstate(over="ignore", invalid="ignore"):
            if not ev.diag:
                L = np.multiply(ev.Phi, ev.B.reshape(M, d * d),
                                out=self._work("T2", M).reshape(M, d * d))
                L[:, self.dg] = lg
                f = np.einsum("ij,ij->i", L, L)
                L *= W.reshape(M, 1)
                Xc = self._work("T3", M).reshape(c, d, m, d)
                np.matmul(V.reshape(c, m, d, d), L.reshape(c, m, d, d),
                          out=Xc.transpose(0, 2, 1, 3))  # V_i (w_i L_i)
                Xc = Xc.reshape(c, d, m * d)
            G = Xc @ _sw(ev.Vc)  # sum_i V_i (w_i L_i) V_i^T
            ev.G = 0.5 * (G + _sw(G))
            ev.F = np.einsum("ti,ti->t", W, f.reshape(c, m))
            ev.gn = 2.0 * np.sqrt(np.einsum("tij,tij->t", ev.G, ev.G))
            ev.err, ev.errF = self.err_bounds(ev.r, AW, f, self.rounding(ev.lam))
        return ev

    def hvp(self, ev, W, P):
        r"""Riemannian Hessian of F/2 at the frame points applied to P (c, d, d): in the
        eigenbasis of :math:`S_i`, entry (j, k) multiplied by :math:`(\delta/2)
        \coth(\delta/2) = \Phi_{jk} (\lambda_j + \lambda_k) / 2`, :math:`\delta =
        \log\lambda_j - \log\lambda_k` (Jacobi fields of a symmetric space; equivalently
        :math:`-D\log(S_i)[(PS_i + S_iP)/2]`)."""
        V = ev.V
        M, d = V.shape[:2]
        c, m = W.shape
        if ev.H is None:  # in place of Phi, which is not needed any more
            if ev.Phi is None:
                self._phi(ev)
            H = ev.Phi
            H *= ev.lsum
            H *= 0.5 * W.reshape(M, 1)
            ev.H, ev.Phi, ev.lsum = H.reshape(M, d, d), None, None
        Z = (P @ ev.Vc).reshape(c, d, m, d).transpose(0, 2, 1, 3)  # P_t V_ti
        Y = np.matmul(_sw(V).reshape(c, m, d, d), Z,
                      out=self._work("T2", M).reshape(c, m, d, d)).reshape(M, d, d)
        Y *= ev.H
        Xc = self._work("T3", M).reshape(c, d, m, d)
        np.matmul(V.reshape(c, m, d, d), Y.reshape(c, m, d, d), out=Xc.transpose(0, 2, 1, 3))
        out = Xc.reshape(c, d, m * d) @ _sw(ev.Vc)
        return 0.5 * (out + _sw(out))

    def newton_direction(self, ev, W, eta, act):
        r"""Conjugate gradients on :math:`\operatorname{Hess}[P] = G` (per test point, to
        relative residual ``eta``; P = 0 where ``act`` is False); the gradient direction G
        if the first curvature is not positive (signed weights: F may be non-convex), the
        last iterate at a later non-positive one."""
        G = ev.G
        gn2 = np.einsum("tij,tij->t", G, G)
        P = np.zeros_like(G)
        r = np.where(act[:, None, None], G, 0.0)
        q, rr = r.copy(), np.where(act, gn2, 0.0)
        go = act & (gn2 > 0)
        for k in range(self.d * (self.d + 1) // 2):
            if not go.any():
                break
            Hq = self.hvp(ev, W, q)
            qHq = np.einsum("tij,tij->t", q, Hq)
            bad = go & ~(qHq > 1e-12 * np.einsum("tij,tij->t", q, q))
            if k == 0:
                P[bad] = G[bad]
            go &= ~bad
            al = np.where(go, rr / np.where(go, qHq, 1.0), 0.0)[:, None, None]
            P += al * q
            r -= al * Hq
            rrn = np.einsum("tij,tij->t", r, r)
            go &= rrn > eta * eta * gn2
            q = np.where(go[:, None, None], r + (rrn / np.where(rr > 0, rr, 1.0))[:, None, None]
                         * q, 0.0)
            rr = rrn
        return P

    def _merge(self, ev, en, tests, m):
        """Copy the evaluation data of test points ``tests`` from en into ev."""
        rows = (tests[:, None] * m + np.arange(m)).ravel()
        for k in ("S", "V", "B", "lam", "r", "od"):
            getattr(ev, k)[rows] = getattr(en, k)[rows]
        for k in ("G", "F", "gn", "err", "errF"):
            getattr(ev, k)[tests] = getattr(en, k)[tests]
        ev.diag = ev.diag and en.diag
        ev.H = ev.Phi = None
        self._columns(ev)

    # ---- a batch of test points -------------------------------------------------------
    def log_range(self):
        """(lo, hi): the range of the training matrices' log-eigenvalues widened by
        ``LOG_COND`` on both sides, where the starts are kept (:func:`frame_of_logs`)."""
        if getattr(self, "_log_range", None) is None:
            ev = np.linalg.eigvalsh(self.logs)
            self._log_range = (float(ev.min()) - LOG_COND, float(ev.max()) + LOG_COND)
        return self._log_range

    def solve(self, W, tol, max_iter, L0=None):
        r"""Riemannian Newton for the rows of W (c, n); returns a :class:`_Solved`.

        ``L0`` (c, d, d): the logarithms of the start points (default: :meth:`start`, the
        BCH-corrected log-Euclidean means), kept in the space by :func:`frame_of_logs`.
        Training matrices with zero weight for every test point of the batch are left out
        (exactly: they add nothing to F or its derivatives).  The first evaluation uses
        LAPACK, the later ones the previous eigenvectors, refined (:meth:`refine`) unless the
        gradient norm is already certified: a point is accepted when ``gn + 2 err <= tol``
        (``err`` bounds the error of the tracked logarithms, and every tracked V is
        orthonormal to 1e-12), so its exact Riemannian gradient norm is at most ``tol``.
        Rows not certified after ``_FAST_ITER`` steps continue with :meth:`robust`.
        """
        c, d = len(W), self.d
        idx = np.flatnonzero(np.any(W != 0, axis=0))
        m = len(idx)
        A = self.A if m == self.n else self.A[idx]
        Wi = W[:, idx] if m < self.n else W
        AW = np.abs(Wi)
        budget = np.full(c, 0.05 * tol)  # refinement target: err <= tol / 20
        if L0 is None:
            L0 = self.start(idx, Wi)
        R = frame_of_logs(L0, *self.log_range())  # Y^{-1/2}
        ev = self.assemble(self.evaluate(A, R, None, 0), Wi, AW)
        step, it = np.ones(c), np.zeros(c, dtype=int)
        radius = np.minimum(np.maximum(1.0, ev.gn), _MAX_RADIUS)
        capped = np.zeros(c, dtype=bool)
        done, gn, err = np.zeros(c, dtype=bool), np.full(c, np.inf), np.full(c, np.inf)
        F, errF = np.full(c, np.inf), np.full(c, np.inf)
        P = None
        while True:
            cert = ~done & (ev.gn + 2.0 * ev.err <= tol)
            if cert.any():  # ||V^T V - I||_F <= sqrt(d) bound; above _ORTH_TOL: computed
                rows = (np.flatnonzero(cert)[:, None] * m + np.arange(m)).ravel()
                rows = rows[~(ev.od[rows] * np.sqrt(d) <= _ORTH_TOL)]
                if rows.size:
                    rows = rows[~(self.orth_defect(ev.V[rows]) <= _ORTH_TOL)]
                if rows.size:
                    self._lapack(ev, rows)
                    self.assemble(ev, Wi, AW)
                    continue
                gn[cert], err[cert], done[cert] = ev.gn[cert], ev.err[cert], True
                F[cert], errF[cert] = ev.F[cert], ev.errF[cert]
            act = ~done & (it < min(max_iter, _FAST_ITER)) & (step >= _MIN_STEP)
            if not act.any():
                break
            if P is None:  # relative CG residual: the step's error <= max(tol / 4, 1e-4 g^2)
                eta = np.minimum(0.5, np.maximum(0.25 * tol / np.maximum(ev.gn, _TINY),
                                                 1e-4 * ev.gn))
                P = self.newton_direction(ev, Wi, eta, act)
                # trust region: a step moves Y by the geodesic distance ||P||_F; beyond the
                # radius (initially max(1, ||grad F||), never reached where the Hessian is
                # >= the identity, e.g. nonnegative weights) the Newton model of a
                # nonconvex F (signed weights) is not trusted; the radius doubles after each
                # accepted full capped step, up to _MAX_RADIUS (far frames leave the space
                # and the float range)
                pn = np.sqrt(np.einsum("tij,tij->t", P, P))
                capped = ~(pn <= radius)
                if capped.any():
                    P[capped] *= (radius[capped] / pn[capped])[:, None, None]
            ws, Us = np.linalg.eigh(P)
            E = (Us * np.exp(-0.5 * np.where(act, step, 0.0)[:, None] * ws)[:, None, :]) @ _sw(Us)
            Rn = E @ R
            en = self.evaluate(A, Rn, ev.V, 1 - ev.slot, ev.od)
            if (act & (2.0 * self.err_bounds(en.r, AW)[0] < tol)).any():
                self.assemble(en, Wi, AW)  # maybe certified as it is
            need = act & ~(en.gn + 2.0 * en.err <= tol)
            if need.any():
                # refinement target: where the computed norm leaves room, err <= a third of
                # the room (the exact norm moves by at most the old plus the new bound, so
                # gn + 2 err <= tol then holds), else tol / 20; only the speed depends on it
                # (the certificate is checked after the refinement)
                room = (tol - en.gn - en.err) / 3.0
                room[~np.isfinite(room)] = 0.0
                self.refine(en, AW, np.where(need, np.maximum(budget, 0.9 * room), np.inf))
                self.assemble(en, Wi, AW)
            it[act] += 1
            # the upper bound on F must not increase (an evaluation whose error bound is
            # large or infinite, e.g. at a frame where eigenvalues are lost to rounding,
            # is never accepted); near a minimizer the decrease of F falls below its
            # rounding (ill-conditioned S_i), so a full step that certainly halves the
            # gradient norm is accepted as well
            with np.errstate(invalid="ignore"):
                fin = np.isfinite(en.F) & np.isfinite(en.errF)
                acc = act & fin & (
                    (en.F + en.errF <= ev.F + ev.errF + 1e-13 * np.maximum(1.0, np.abs(ev.F)))
                    | ((step == 1.0) & (en.gn + 2.0 * en.err <= 0.5 * ev.gn)))
            rej = act & ~acc
            if acc.any():
                if (acc | done).all():
                    ev = en
                else:
                    self._merge(ev, en, np.flatnonzero(acc), m)
                R[acc] = Rn[acc]
                P = None
            grow = acc & capped & (step == 1.0)
            radius[grow] = np.minimum(2.0 * radius[grow], _MAX_RADIUS)
            step[acc] = np.minimum(2.0 * step[acc], 1.0)
            step[rej] *= 0.5
        rest = ~done
        gn[rest], err[rest], F[rest], errF[rest] = (ev.gn[rest], ev.err[rest], ev.F[rest],
                                                    ev.errF[rest])
        for t in np.flatnonzero(rest):  # not certified: the robust method
            R[t], k, gn[t], err[t], F[t], errF[t] = self.robust(
                A, Wi[t], R[t], tol, max_iter - it[t])
            it[t] += k
        return _Solved(self.frame_to_point(R), R, it, gn, err, F, errF, gn + 2.0 * err <= tol)

    # ---- the robust method -------------------------------------------------------------
    @staticmethod
    def frame_to_point(R):
        """Y = R^{-1} R^{-T} in spectral form (SVD of R): symmetric, positive eigenvalues."""
        _, sv, Vt = np.linalg.svd(R)
        return (_sw(Vt) * sv[..., None, :] ** -2.0) @ Vt

    def _sym_basis(self):
        """Frobenius-orthonormal basis of the symmetric d x d matrices, (d (d + 1) / 2, d, d)."""
        d = self.d
        Bs = []
        for j in range(d):
            for k in range(j, d):
                E = np.zeros((d, d))
                if j == k:
                    E[j, j] = 1.0
                else:
                    E[j, k] = E[k, j] = np.sqrt(0.5)
                Bs.append(E)
        return np.array(Bs)

    def robust(self, A, w, R, tol, max_iter):
        r"""Damped saddle-free Riemannian Newton for one test point (weights ``w`` on the
        training matrices ``A``, frame ``R``), every evaluation by LAPACK with its rounding
        bound; returns (R, iterations, gradient norm, error bound of the norm, F, error bound
        of F).

        The Hessian of F/2 in the frame is formed in an orthonormal basis of the symmetric
        matrices (k = d(d+1)/2 products) and the step is :math:`P = |H|_\mu^{-1} G`
        (eigenvalues replaced by their absolute values, at least :math:`\mu = 10^{-8}
        \max|\lambda|`): a descent direction also where F is not convex (signed weights),
        Newton's near a non-degenerate minimizer.  The step length is capped by a trust
        radius (initially :math:`\max(1, \|\operatorname{grad} F\|)`, doubled after each
        accepted full capped step, at most ``_MAX_RADIUS``) and halved until the upper bound
        :math:`F + \text{errF}` decreases by the Armijo amount (or a full step certainly
        halves the gradient norm).  Stops when certified (``gn + 2 err <= tol``), at the
        rounding floor (``gn <= 2 err`` or no step accepted), or after ``max_iter`` trial
        points.
        """
        idx = np.flatnonzero(w)
        A, W = A[idx], w[idx][None]
        AW = np.abs(W)
        Bs = self._sym_basis()
        ev = self.assemble(self.evaluate(A, R[None], None, 0), W, AW)
        it, radius = 0, min(max(1.0, float(ev.gn[0])), _MAX_RADIUS)
        # stop also at the rounding floor: a computed gradient norm within its error bound
        while it < max_iter and not ev.gn[0] + 2.0 * ev.err[0] <= tol:
            if not (np.isfinite(ev.F[0]) and ev.gn[0] > 2.0 * ev.err[0]):
                break
            G = ev.G[0]
            HB = np.array([self.hvp(ev, W, b[None])[0] for b in Bs])
            Hm = np.einsum("aij,bij->ab", Bs, HB)
            lam, Q = np.linalg.eigh(0.5 * (Hm + Hm.T))
            mu = max(1e-8 * float(np.abs(lam).max()), _TINY)
            g = np.einsum("aij,ij->a", Bs, G)
            p = Q @ ((Q.T @ g) / np.maximum(np.abs(lam), mu))
            P = np.einsum("a,aij->ij", p, Bs)
            pn = float(np.linalg.norm(P))
            capped = pn > radius
            if capped:
                P *= radius / pn
            slope = 2.0 * float(np.sum(G * P))  # -dF/dt at t = 0, > 0
            ws, Us = np.linalg.eigh(P)
            t, accepted = 1.0, False
            while it < max_iter and t >= _MIN_STEP:
                Rn = ((Us * np.exp(-0.5 * t * ws)) @ Us.T) @ R
                en = self.assemble(self.evaluate(A, Rn[None], None, 1 - ev.slot), W, AW)
                it += 1
                ub_old, ub_new = ev.F[0] + ev.errF[0], en.F[0] + en.errF[0]
                if np.isfinite(ub_new) and (
                    ub_new <= ub_old - 1e-4 * t * slope
                    or (t == 1.0 and en.gn[0] + 2.0 * en.err[0] <= 0.5 * ev.gn[0])
                ):
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                break
            if capped and t == 1.0:
                radius = min(2.0 * radius, _MAX_RADIUS)
            R, ev = Rn, en
        return (R, it, float(ev.gn[0]), float(ev.err[0]), float(ev.F[0]),
                float(ev.errF[0]))
