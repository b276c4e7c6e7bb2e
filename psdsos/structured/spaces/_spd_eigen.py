r"""Tracked eigendecompositions of the SPD decoder: the rows S_i = R Y_i R^T of one evaluation
of the SELF objective, their eigenvectors refined by simultaneous Jacobi rotations from the
previous frame (LAPACK when too far), and the certified error bounds of the log map.

:class:`_SPDEigen` holds the per-fit data and the row-wise eigen-data methods;
:class:`~psdsos.structured.spaces._spd_newton._SPDNewton` adds the Newton solver.
"""

from __future__ import annotations

import numpy as np


def _sw(A):
    return np.swapaxes(A, -1, -2)


#: A rotation of the simultaneous Jacobi step larger than this (Frobenius norm of the
#: tangents) sends the matrix to LAPACK: it is far from the tracked eigenvectors.
_JACOBI_MAX = 1.0
#: Jacobi rounds before the matrices still not refined go to LAPACK.
_JACOBI_ROUNDS = 8
_EPS = np.finfo(np.float64).eps


class _SPDEval:
    r"""The data of one evaluation of F at a frame R (:math:`Y^{-1} = R^\top R`).

    For each training matrix i (rows): :math:`S_i = R Y_i R^\top`, an orthogonal
    :math:`V_i` and :math:`B_i = V_i^\top S_i V_i = \operatorname{diag}(\lambda_i) + E_i`,
    :math:`r_i = \|E_i\|_F / \min\lambda_i`.  After :meth:`_SPDNewton.assemble`:
    :math:`\log S_i \approx V_i (\Phi_i \circ B_i) V_i^\top` (the diagonal of
    :math:`\Phi_i \circ B_i` set to :math:`\log\lambda_i`), with
    :math:`\Phi_{jk} = (\log\lambda_j - \log\lambda_k) / (\lambda_j - \lambda_k)`
    (Daleckii-Krein: the first-order expansion of log about :math:`\operatorname{diag}(\lambda)`),
    whose error is at most :math:`\rho(r) = r^2 / (2 (1 - r)^2)` in Frobenius norm
    (the second Frechet derivative of log at X is bounded by :math:`\|E\|^2 /
    \lambda_{\min}(X)^2`); G, F and the bounds ``err`` on :math:`\|G - G_{exact}\|_F` and
    ``errF`` on :math:`|F - F_{exact}|` follow.
    """

    def __init__(self, S, V, B, lam, r, slot, c):
        self.S, self.V, self.B, self.lam, self.r, self.slot, self.c = S, V, B, lam, r, slot, c
        self.H, self.Phi = None, None
        self.gn, self.err = np.full(c, np.inf), np.full(c, np.inf)  # per test point
        self.diag = False  # B exactly diagonal (every row from LAPACK)
        self.od = None  # bounds on ||V_i^T V_i - I||_2 (tracked, rounding included)


class _SPDEigen:
    r"""Per-fit data, work arrays and the eigen-data of the rows of an evaluation (see
    :class:`~psdsos.structured.spaces._spd_newton._SPDNewton`, which derives from it)."""

    def __init__(self, A, logs):
        n, d = A.shape[:2]
        self.A, self.n, self.d = np.ascontiguousarray(A), n, d
        self.logs = np.ascontiguousarray(logs)
        self.logs_flat = self.logs.reshape(n, d * d)
        self.logs_sq = (self.logs @ self.logs).reshape(n, d * d)  # for the BCH start
        self.logs_n2 = np.einsum("ij,ij->i", self.logs_flat, self.logs_flat)
        self.logs_cat = np.ascontiguousarray(self.logs.transpose(1, 0, 2))  # (d, n, d)
        iu, ju = np.triu_indices(d, 1)
        self.iu, self.ju = iu, ju
        self.fu, self.fl = iu * d + ju, ju * d + iu  # flat (j, k) and (k, j), j < k
        self.dg = np.arange(d) * (d + 1)
        self.eye = np.eye(d)
        self.n_eigh = 0
        self.od_lapack = 4.0 * d * d * _EPS  # orthogonality of LAPACK eigenvectors, generous
        self.od_round = 4.0 * d * _EPS  # rounding of one product by a near-orthogonal matrix
        self._ws = {}

    def _work(self, key, rows):
        """Reusable (rows, d, d) work array ``key`` (contiguous)."""
        size = rows * self.d * self.d
        buf = self._ws.get(key)
        if buf is None or buf.size < size:
            buf = self._ws[key] = np.empty(max(size, self.n * self.d * self.d))
        return buf[:size].reshape(rows, self.d, self.d)

    # ---- eigen-data (row-wise) ------------------------------------------------------
    def _pass(self, S, V, B=None):
        """B = V^T S V, its diagonal and r = ||offdiag B||_F / min diag B per row."""
        m, d = V.shape[:2]
        SV = np.matmul(S, V, out=self._work("T1", m))
        B = np.matmul(_sw(V), SV, out=B)
        B2 = B.reshape(m, d * d)
        lam = B2[:, self.dg]
        bu = B2[:, self.fu]
        lmin = lam.min(axis=1)
        r = np.full(m, np.inf)
        np.divide(np.sqrt(2.0 * np.einsum("ij,ij->i", bu, bu)), lmin, out=r, where=lmin > 0)
        return B, lam, r

    def _lapack(self, ev, rows, S=None):
        lam, V = np.linalg.eigh(ev.S[rows] if S is None else S)
        self.n_eigh += len(lam)
        ev.V[rows], ev.lam[rows], ev.r[rows], ev.od[rows] = V, lam, 0.0, self.od_lapack
        ev.B[rows] = lam[:, :, None] * self.eye
        ev.H = ev.Phi = None

    def _rotate(self, B, lam, V):
        r"""One simultaneous Jacobi step: :math:`V \leftarrow V (I + K + K^2/2)`,
        :math:`K_{jk} = -K_{kj} = \tan\theta_{jk}` of the 2 x 2 Jacobi rotation of entry
        (j, k) (quadratic convergence; :math:`(I + K + K^2/2)^\top (I + K + K^2/2) = I +
        K^4/4`).  Returns the new V and :math:`\|K\|_F` per row."""
        m, d = V.shape[:2]
        bu = B.reshape(m, d * d)[:, self.fu]
        h = 0.5 * (lam[:, self.ju] - lam[:, self.iu])
        den = np.sqrt(h * h + bu * bu)
        np.copysign(den, h, out=den)
        den += h
        t = np.divide(bu, den, out=np.zeros_like(bu), where=den != 0)
        kn = np.sqrt(2.0 * np.einsum("ij,ij->i", t, t))
        K = self._work("T2", m).reshape(m, d * d)
        K[:] = 0.0
        K[:, self.fu] = t
        np.negative(t, out=t)
        K[:, self.fl] = t
        K = K.reshape(m, d, d)
        VK = np.matmul(V, K, out=self._work("T3", m))
        Vn = VK @ K
        Vn *= 0.5
        Vn += VK
        Vn += V
        return Vn, kn

    def _orthonormalize(self, V):
        """A Newton-Schulz step towards the polar factor: V <- V (3 I - V^T V) / 2."""
        m, d = V.shape[:2]
        X = np.matmul(_sw(V), V, out=self._work("T2", m))
        X *= -0.5
        X.reshape(m, d * d)[:, self.dg] += 1.5
        return V @ X

    @staticmethod
    def rho(r):
        """Bound r^2 / (2 (1 - r)^2) on the Frobenius error of the first-order logarithm."""
        rho = np.full(r.shape, np.inf)
        ok = r < 1.0
        rho[ok] = 0.5 * (r[ok] / (1.0 - r[ok])) ** 2
        return rho

    def _weighted_rho(self, r, AW):
        """rho(r) reshaped as AW (c, m), 0 where the weight is 0 (never inf * 0)."""
        rho = self.rho(r).reshape(AW.shape)
        rho[AW == 0] = 0.0
        return rho

    def _to_refine(self, r, AW, budget):
        """Rows (flat) to refine so that, for each test point t (row of AW, shape (c, m)),
        sum_i |w_ti| rho(r_ti) <= budget_t: none where it holds, else the rows of largest
        contribution until the others sum to <= budget_t / 2."""
        c, m = AW.shape
        contrib = self._weighted_rho(r, AW) * AW
        order = np.argsort(contrib, axis=1)
        csum = np.cumsum(np.take_along_axis(contrib, order, axis=1), axis=1)
        over = (csum > 0.5 * budget[:, None]) & ~(csum[:, -1:] <= budget[:, None])
        t, k = np.nonzero(over)
        return np.sort(t * m + order[t, k])

    def refine(self, ev, AW, budget, rounds=_JACOBI_ROUNDS):
        """Jacobi steps on rows until the error bounds sum_i |w_ti| rho(r_ti) <= budget_t
        (:meth:`_to_refine`); LAPACK for the rows whose step is large (far from the
        tracked eigenvectors) or not refined in ``rounds``."""
        bad = self._to_refine(ev.r, AW, budget)
        M = len(ev.r)
        for rnd in range(rounds + 1):
            if not bad.size:
                return
            if 2 * len(bad) > M:  # most rows: all of them (cheaper than gathering)
                bad = np.arange(M)
            whole = len(bad) == M
            Sb = ev.S if whole else ev.S[bad]
            if rnd == rounds:
                self._lapack(ev, bad, Sb)
                return
            Vb, kn = self._rotate(ev.B if whole else ev.B[bad], ev.lam[bad],
                                  ev.V if whole else ev.V[bad])
            # (I + K + K^2/2)^T (I + K + K^2/2) = I + K^4 / 4
            od = kn ** 4 / 4 + (1.0 + kn + kn * kn / 2) ** 2 * ev.od[bad] + self.od_round
            far = ~(kn <= _JACOBI_MAX)
            if far.any():
                self._lapack(ev, bad[far], Sb[far])
                keep = ~far
                bad, Sb, Vb, kn, od = bad[keep], Sb[keep], Vb[keep], kn[keep], od[keep]
                whole = False
                if not bad.size:
                    return
            # re-orthonormalize where the defect K^4/4 is above ~1e-13: one Newton-Schulz
            # step (V^T V = I + D -> I - 3 D^2 / 4 + D^3 / 4), two where K^4/4 > ~1e-7
            for lim in (1e-3, 0.03):
                big = np.flatnonzero(kn > lim)
                if not big.size:
                    break
                if 2 * big.size > len(kn):
                    Vb = self._orthonormalize(Vb)
                    big = slice(None)
                else:
                    Vb[big] = self._orthonormalize(Vb[big])
                od[big] = 0.75 * od[big] ** 2 + 0.25 * od[big] ** 3 + 3 * self.od_round
            ev.od[bad] = od
            if whole:
                ev.V[:] = Vb
                _, lam, r = self._pass(Sb, ev.V, ev.B)
                ev.lam[:], ev.r[:] = lam, r
            else:
                B, lam, r = self._pass(Sb, Vb)
                ev.V[bad], ev.B[bad], ev.lam[bad], ev.r[bad] = Vb, B, lam, r
            ev.H = ev.Phi = None
            bad = self._to_refine(ev.r, AW, budget)

    def orth_defect(self, V):
        m, d = V.shape[:2]
        D = np.matmul(_sw(V), V, out=self._work("T1", m))
        D.reshape(m, d * d)[:, self.dg] -= 1.0
        return np.sqrt(np.einsum("ijk,ijk->i", D, D))

    # ---- evaluations (per test point reductions) ------------------------------------
    def evaluate(self, A, R, V, slot, od=None):
        """Congruences S_ti = R_t A_i R_t^T (R: (c, d, d)) and their eigen-data: LAPACK if V
        is None, else the tracked V (one pass, unrefined).  ``slot`` (0 or 1) names the work
        arrays kept by the evaluation (two evaluations are alive at a time)."""
        (m, d), c = A.shape[:2], len(R)
        M = c * m
        T1 = self._work("T1", M).reshape(c, m, d, d)
        if c == 1:  # one GEMM
            np.matmul(A.reshape(m * d, d), R[0].T, out=T1.reshape(m * d, d))
        else:
            np.matmul(A, _sw(R)[:, None], out=T1)
        S = np.matmul(R[:, None], T1, out=self._work(f"S{slot}", M).reshape(c, m, d, d))
        S = S.reshape(M, d, d)
        if V is None:
            lam, V = np.linalg.eigh(S)
            self.n_eigh += M
            B = self._work(f"B{slot}", M)
            B[:] = 0.0
            B.reshape(M, d * d)[:, self.dg] = lam
            ev = _SPDEval(S, V, B, lam, np.zeros(M), slot, c)
            ev.diag, ev.od = True, np.full(M, self.od_lapack)
            return ev
        Vs = self._work(f"V{slot}", M)
        Vs[:] = V
        ev = _SPDEval(S, Vs, *self._pass(S, Vs, self._work(f"B{slot}", M)), slot, c)
        ev.od = od.copy() if od is not None else self.orth_defect(Vs) + self.od_round
        return ev

    @staticmethod
    def rounding(lam):
        r"""Estimate :math:`q = \varepsilon\,\lambda_{\max}/\lambda_{\min}` per row of the
        relative effect of rounding on the smallest eigenvalue: LAPACK's approximate error
        bound for the eigenvalues of a symmetric S is :math:`\varepsilon\,\|S\|_2` (LAPACK
        Users' Guide, section 4.7; the congruence and :math:`V^\top S V` add errors of the
        same order), i.e. :math:`q\,\lambda_{\min}`; inf if :math:`\lambda_{\min} \le 0`
        (a frame beyond the float range).  Against 40-digit arithmetic at decoded points
        with condition numbers up to 1.5e8 the resulting bound on the gradient was 20-80
        times the actual error."""
        lmin = lam.min(axis=1)
        q = np.full(len(lam), np.inf)
        np.divide(_EPS * np.abs(lam).max(axis=1), lmin, out=q, where=lmin > 0)
        return q

    def err_bounds(self, r, AW, f=None, q=None):
        """Per test point sum_i |w_ti| e_ti (and, with f = ||log S||^2, the bound on the
        error of F), e = rho(r) for the expansion error and, with ``q`` (:meth:`rounding`),
        ``+ q / (1 - r - q)`` for rounding (the logarithm's derivative is at most
        1 / lambda_min along the perturbation)."""
        c, m = AW.shape
        rho = self._weighted_rho(r, AW)
        if q is not None:
            s = np.full(r.shape, np.inf)
            den = 1.0 - r - q
            np.divide(q, den, out=s, where=den > 0)
            s = s.reshape(AW.shape)
            s[AW == 0] = 0.0
            rho = rho + s
        err = np.einsum("ti,ti->t", AW, rho)
        if f is None:
            return err, None
        with np.errstate(over="ignore", invalid="ignore"):
            eF = 2.0 * np.sqrt(f.reshape(c, m)) * rho + rho * rho
        eF[AW == 0] = 0.0
        return err, np.einsum("ti,ti->t", AW, eF)

