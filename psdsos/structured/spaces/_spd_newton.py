r"""Manifold output spaces of SELF (Rudi et al., "Manifold Structured Prediction").

Each space decodes eq. 2,

.. math::

    \hat f(x) = \operatorname*{argmin}_{y \in \mathcal M} F(y), \qquad
    F(y) = \sum_{i=1}^n w_i\, d^2(y, y_i),

with normalized weights :math:`w` from the negative-weight policy of
:mod:`psdsos.structured._common` (:func:`policy_weights`), batched over test points:

* :class:`SPDSpace` -- affine-invariant distance (eq. 16, Table 1), Riemannian Newton with
  the exponential map (eq. 15), eigenvectors tracked across iterations;
* :class:`LogEuclideanSPDSpace` -- log-Euclidean distance, closed form;
* :class:`BuresSpace` -- Bures-Wasserstein distance, an SDP in CVXPY (convex for
  :math:`w \ge 0`) or the fixed-point iteration of Alvarez-Esteban et al. (2016), which is
  Riemannian gradient descent with unit step in the Bures-Wasserstein geometry;
* :class:`SphereSpace` -- squared geodesic distance :math:`\arccos^2` (eq. 17, Table 1),
  Riemannian gradient descent with the normalization retraction;
* :class:`FisherSimplexSpace` -- histograms with the Fisher-Rao geometry through the
  square-root map onto the sphere (section 4.4).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos.geometry import (
    affine_invariant_distance,
    bures_wasserstein_distance_squared,
    check_psd,
    check_spd,
    expm_sym,
    log_euclidean_distance,
    logm_spd,
    sqrtm_psd,
)
from psdsos.geometry._matfun import spectral
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import (
    as_finite,
    check_float,
    check_int,
    check_policy,
    policy_weights,
    solve_parametric,
)
from psdsos.structured.polytopes import project_simplex
from psdsos.structured.spaces.euclidean import project_psd_cone

__all__ = [
    "SPDSpace",
    "LogEuclideanSPDSpace",
    "BuresSpace",
    "SphereSpace",
    "FisherSimplexSpace",
]

_TINY = np.finfo(np.float64).tiny
#: Largest number of (test point, training point) d x d blocks held at once by the batched
#: decoders (a memory bound: about 2 MB per array, cache-friendly).
_BLOCK_BUDGET = 2**18
#: Backtracking stops (and the point is reported as not converged) below this step size.
_MIN_STEP = 1e-12
#: Sphere: within this sine of the angle to the antipode of z_i the term arccos^2 is treated
#: as its (nonsmooth) cone point, see SphereSpace.
_KINK_TOL = 1e-7


def _chunks(idx, per_point, budget=_BLOCK_BUDGET):
    size = max(1, budget // max(per_point, 1))
    for s in range(0, len(idx), size):
        yield idx[s : s + size]


def _check_spd_stack(Y, name):
    A = as_finite(Y, name)
    if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples, d, d), got {A.shape}")
    return A


def _warn_not_converged(space, gnorm, tol, max_iter, advice="increase max_iter or tol"):
    bad = int(np.sum(~(gnorm <= tol)))
    if bad:
        warnings.warn(
            f"{type(space).__name__} decoding did not reach tol={tol:g} (Riemannian gradient "
            f"norm) for {bad} test point(s) in max_iter={max_iter} iterations (largest norm "
            f"{float(np.max(gnorm)):.3g}); {advice}",
            ConvergenceWarning,
            stacklevel=3,
        )


# ---- SPD decoding machinery: Riemannian Newton on tracked eigendecompositions ----------
def _sw(A):
    return np.swapaxes(A, -1, -2)


#: A rotation of the simultaneous Jacobi step larger than this (Frobenius norm of the
#: tangents) sends the matrix to LAPACK: it is far from the tracked eigenvectors.
_JACOBI_MAX = 1.0
#: Jacobi rounds before the matrices still not refined go to LAPACK.
_JACOBI_ROUNDS = 8
#: Largest accepted orthogonality defect ||V^T V - I||_F of a tracked eigenvector matrix
#: when a gradient norm is certified (else LAPACK).
_ORTH_TOL = 1e-12
_EPS = np.finfo(np.float64).eps
#: SPD decoding: test points solved together while (test points x training matrices x d^2)
#: stays below this; a single test point (with its own non-zero weights) above it.  Small
#: problems are dominated by per-call overhead, large ones by the arithmetic.
_SPD_BATCH = 2**15
#: SPD decoding: Newton iterations of the fast path (tracked eigenvectors) per test point;
#: a point not certified by then goes to the robust method (:meth:`_SPDNewton.robust`).
_FAST_ITER = 15


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


class _SPDNewton:
    r"""Per-fit data and the Riemannian Newton solver of :class:`SPDSpace`, batched over c
    test points that share a set of m training matrices (the rows of the work arrays are
    the c m pairs, test-major).

    ``A``: the training matrices (n, d, d); ``logs``: their logarithms.  ``n_eigh`` counts
    the LAPACK eigendecompositions of d x d matrices.  Work arrays are allocated once and
    reused (``out=``): fresh arrays of that size cost page faults comparable to the
    arithmetic.
    """

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
            # conditioned data) can overflow here: F, ||G|| and the bound become inf/NaN,
            # which the line search rejects and the stopping test never certifies
            with np.errstate(over="ignore", invalid="ignore"):
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
    def solve(self, W, tol, max_iter):
        r"""Riemannian Newton for the rows of W (c, n); returns (Y, n_iter, grad norms).

        Training matrices with zero weight for every test point of the batch are left out
        (exactly: they add nothing to F or its derivatives).  The first evaluation uses
        LAPACK, the later ones the previous eigenvectors, refined (:meth:`refine`) unless the
        gradient norm is already certified: a point is accepted when ``gn + 2 err <= tol``
        (``err`` bounds the error of the tracked logarithms, and every tracked V is
        orthonormal to 1e-12), so its exact Riemannian gradient norm is at most ``tol``.
        """
        c, d = len(W), self.d
        idx = np.flatnonzero(np.any(W != 0, axis=0))
        m = len(idx)
        A = self.A if m == self.n else self.A[idx]
        Wi = W[:, idx] if m < self.n else W
        AW = np.abs(Wi)
        budget = np.full(c, 0.05 * tol)  # refinement target: err <= tol / 20
        L0 = self.start(idx, Wi)
        w0, U0 = np.linalg.eigh(L0)
        R = (U0 * np.exp(-0.5 * w0)[:, None, :]) @ _sw(U0)  # Y^{-1/2}
        ev = self.assemble(self.evaluate(A, R, None, 0), Wi, AW)
        step, it = np.ones(c), np.zeros(c, dtype=int)
        radius, capped = np.maximum(1.0, ev.gn), np.zeros(c, dtype=bool)
        done, gn = np.zeros(c, dtype=bool), np.full(c, np.inf)
        P = None
        while True:
            cert = ~done & (ev.gn + 2.0 * ev.err <= tol)
            if cert.any():  # ||V^T V - I||_F <= sqrt(d) bound; above _ORTH_TOL: measured
                rows = (np.flatnonzero(cert)[:, None] * m + np.arange(m)).ravel()
                rows = rows[~(ev.od[rows] * np.sqrt(d) <= _ORTH_TOL)]
                if rows.size:
                    rows = rows[~(self.orth_defect(ev.V[rows]) <= _ORTH_TOL)]
                if rows.size:
                    self._lapack(ev, rows)
                    self.assemble(ev, Wi, AW)
                    continue
                gn[cert], done[cert] = ev.gn[cert], True
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
                # nonconvex F (signed weights) is not trusted, and far frames leave the
                # float range; the radius doubles after each accepted full capped step
                pn = np.sqrt(np.einsum("tij,tij->t", P, P))
                capped = pn > radius
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
                self.refine(en, AW, np.where(need, budget, np.inf))
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
            radius[acc & capped & (step == 1.0)] *= 2.0
            step[acc] = np.minimum(2.0 * step[acc], 1.0)
            step[rej] *= 0.5
        err = np.zeros(c)
        for t in np.flatnonzero(~done):  # not certified: the robust method
            R[t], k, gn[t], err[t] = self.robust(A, Wi[t], R[t], tol, max_iter - it[t])
            it[t] += k
        return self.frame_to_point(R), it, gn, err

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
        bound; returns (R, iterations, gradient norm, error bound of the norm).

        The Hessian of F/2 in the frame is formed in an orthonormal basis of the symmetric
        matrices (k = d(d+1)/2 products) and the step is :math:`P = |H|_\mu^{-1} G`
        (eigenvalues replaced by their absolute values, at least :math:`\mu = 10^{-8}
        \max|\lambda|`): a descent direction also where F is not convex (signed weights),
        Newton's near a non-degenerate minimizer.  The step length is capped by a trust
        radius (initially :math:`\max(1, \|\operatorname{grad} F\|)`, doubled after each
        accepted full capped step) and halved until the upper bound
        :math:`F + 	ext{errF}` decreases by the Armijo amount (or a full step certainly
        halves the gradient norm).  Stops when certified (``gn + 2 err <= tol``), at the
        rounding floor (``gn <= 2 err`` or no step accepted), or after ``max_iter`` trial
        points.
        """
        idx = np.flatnonzero(w)
        A, W = A[idx], w[idx][None]
        AW = np.abs(W)
        Bs = self._sym_basis()
        ev = self.assemble(self.evaluate(A, R[None], None, 0), W, AW)
        it, radius = 0, max(1.0, float(ev.gn[0]))
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
                radius *= 2.0
            R, ev = Rn, en
        return R, it, float(ev.gn[0]), float(ev.err[0])


class _RGDOptions:
    """Common constructor arguments of the iterative manifold decoders."""

    def _check_options(self):
        check_policy(self.weights)
        check_int(self.max_iter, "max_iter")
        check_float(self.tol, "tol", positive=True)


# ======================================================================================
# SPD, affine-invariant
# ======================================================================================
class SPDSpace(_RGDOptions, OutputSpace):
    r"""SPD matrices with the squared affine-invariant distance (manifold paper, eq. 16).

    .. math::

        \Delta(Y, Z) = \|\log(Z^{-1/2} Y Z^{-1/2})\|_F^2, \qquad
        F(Y) = \sum_i w_i \Delta(Y, Y_i),\qquad
        \operatorname{grad} F(Y) = -2 \sum_i w_i \operatorname{Log}_Y(Y_i)
            = -2\, Y^{1/2} G(Y) Y^{1/2},

    with :math:`G(Y) = \sum_i w_i \log(Y^{-1/2} Y_i Y^{-1/2})` (Table 1; the metric is
    :math:`\langle U, V\rangle_Y = \operatorname{Tr}(Y^{-1} U Y^{-1} V)`, so
    :math:`\|\operatorname{grad} F\|_Y = 2\|G(Y)\|_F`).

    Decoding ("rgd": Riemannian optimization with the exponential map of eq. 15, here
    Riemannian Newton, :class:`_SPDNewton`): one test point at a time over its training
    matrices of non-zero weight (the others add nothing to F), or, for small problems, a
    batch of test points in the same numpy calls (``_SPD_BATCH``: there the per-call
    overhead dominates).  Start: the log-Euclidean weighted mean
    :math:`\exp(\sum_i w_i \log Y_i)` corrected by the cubic terms of the symmetric
    Baker-Campbell-Hausdorff formula (exact when the :math:`Y_i` commute; about 20 times
    smaller gradient than the plain log-Euclidean mean on generic data).  Everything
    is computed in the frame of a congruence factor R, :math:`Y^{-1} = R^\top R` (the metric
    is invariant under any congruence, so :math:`G = \sum_i w_i \log(R Y_i R^\top)` has the
    same norm): the Newton direction P solves :math:`\operatorname{Hess}[P] = G` by
    conjugate gradients (relative residual :math:`\max(\mathrm{tol}/(4\|\operatorname{grad}
    F\|), 10^{-4}\|\operatorname{grad} F\|)`, so that one step from a good start lands below
    ``tol``), with the Hessian of :math:`\tfrac12 d^2(\cdot, Y_i)` diagonal in the eigenbasis
    of :math:`\log(R Y_i R^\top)` (multipliers :math:`(\delta/2)\coth(\delta/2)`,
    :math:`\delta` the differences of log-eigenvalues); the gradient direction where the
    curvature is not positive (signed weights).  Step :math:`R \leftarrow \exp(-tP/2) R`,
    t = 1 halved whenever F would increase (beyond its error bound; a full step that halves
    the gradient norm is accepted, F's decrease being below rounding near the minimizer of
    ill-conditioned data).  The first evaluation uses LAPACK ``eigh`` on
    every :math:`R Y_i R^\top`; later ones start from the previous eigenvectors: the
    logarithm is their first-order (Daleckii-Krein) expansion, whose error is bounded by
    :math:`r^2/(2(1-r)^2)`, :math:`r = \|\text{off-diagonal}\|_F/\lambda_{\min}`; if that
    bound (summed with the weights) does not already certify the point, the eigenvectors of
    the matrices with the largest contributions are refined with matrix products
    (simultaneous Jacobi rotations, quadratic convergence; LAPACK for the few that are far
    off).  The error bound includes rounding (:meth:`_SPDNewton.rounding`); a step is
    accepted only if the upper bound F + errF does not increase, and Newton steps are capped
    by a trust radius.  Stops when :math:`\|\operatorname{grad} F\|_Y = 2\|G\|_F` plus twice
    the error bound is :math:`\le` ``tol`` (so the exact gradient norm is :math:`\le` ``tol``;
    ``F`` with weights summing to one).  A point not certified after ``_FAST_ITER`` Newton
    steps continues with the robust method (:meth:`_SPDNewton.robust`: saddle-free Newton,
    LAPACK evaluations, Armijo line search on the upper bound of F) for the rest of its
    ``max_iter`` budget.  The decode is formed from the SVD of the frame, so it is always
    symmetric positive definite; ConvergenceWarning otherwise (naming ``tol`` alone when the
    gradient norm is within its rounding bound: the certifiable floor in float64).

    Negative-weight policy: ``weights="signed"`` keeps signed weights normalized to sum one
    when :math:`\sum\alpha > 0` and :math:`\|\alpha\|_1 \le 4\sum\alpha`; the SPD manifold is a
    Hadamard manifold, so F is then coercive and bounded below (a minimizer exists, RGD
    returns a stationary point; F may be non-convex).  Otherwise the positive part is used
    (a weighted Karcher mean, geodesically convex), and uniform weights if no weight is
    positive.  ``weights="positive"`` always uses the positive part.

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    max_iter : int, default=100
        Largest number of Newton iterations (trial steps) per test point.
    tol : float, default=1e-8
        Stopping threshold on the Riemannian gradient norm.

    Attributes (after ``decode``)
    -----------------------------
    n_iter_ : ndarray of int, shape (n_test,)
    grad_norm_ : ndarray, shape (n_test,)
        Final Riemannian gradient norms, computed from the tracked eigenvectors; at
        convergence the exact norms are at most ``grad_norm_`` plus twice the error bound
        of the tracked logarithms, and that sum is at most ``tol``.
    n_eigh_ : int
        LAPACK eigendecompositions of d x d matrices used (all test points).
    """

    name = "spd"
    decode_methods = ("rgd",)

    def __init__(self, *, weights="signed", max_iter=100, tol=1e-8):
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y, name="Y"):
        """(n, d, d) symmetric positive definite matrices; ValueError naming ``name``."""
        A = _check_spd_stack(Y, name)
        return check_spd(A, name) if len(A) else A

    def fit(self, Y_train):
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.logs_ = logm_spd(self.Y_train_)
        return self

    def loss(self, Y_true, Y_pred):
        """Squared affine-invariant distances, shape (n,)."""
        return np.atleast_1d(affine_invariant_distance(Y_true, Y_pred)) ** 2

    def project(self, Z, floor=1e-12):
        r"""KRLS projection (Appendix G): eigenvalues below ``floor`` set to ``floor``.

        The floor is raised to ``1e-10 * max eigenvalue`` when that is larger, so that the
        result is numerically SPD (condition number at most 1e10).
        """
        Z = as_finite(Z, "Z")
        S = 0.5 * (Z + np.swapaxes(Z, -1, -2))
        w, V = np.linalg.eigh(S)
        top = np.abs(w).max(axis=-1, keepdims=True)
        fl = np.maximum(floor, 1e-10 * top)
        fl = np.where(fl > 0, fl, 1.0)  # all-zero matrix: identity
        return spectral(np.maximum(w, fl), V)

    # ---- the objective (public for tests and diagnostics) ---------------------------
    def objective(self, Y, w):
        r"""F(Y) = sum_i w_i Delta(Y, Y_i) for each Y of a batch (weights used as given)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        return self._eval(Y, w)[0]

    def riemannian_gradient(self, Y, w):
        r"""grad F(Y) = -2 Y^{1/2} G(Y) Y^{1/2} (weights used as given), shape (m, d, d)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, Yh = self._eval(Y, w)
        return -2.0 * Yh @ G @ Yh

    def _eval(self, Y, W):
        s, U = np.linalg.eigh(Y)
        s = np.maximum(s, _TINY)
        Yh = spectral(np.sqrt(s), U)
        Yih = spectral(1.0 / np.sqrt(s), U)
        M = Yih[:, None] @ self.Y_train_[None] @ Yih[:, None]
        mw, mV = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
        lm = np.log(np.maximum(mw, _TINY))
        F = np.einsum("an,anj->a", W, lm * lm)
        G = ((mV * (W[..., None] * lm)[..., None, :]) @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        return F, 0.5 * (G + np.swapaxes(G, -1, -2)), Yh

    def decode(self, alpha, method="auto"):
        """Predictions of eq. 2 by Riemannian Newton, shape (n_test, d, d), SPD."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        return self._newton(W)

    def _newton(self, W):
        """Riemannian Newton (class docstring), test points batched by _SPD_BATCH."""
        tol, max_iter = float(self.tol), int(self.max_iter)
        solver = _SPDNewton(self.Y_train_, self.logs_)
        out = np.empty((len(W),) + self.Y_train_.shape[1:])
        n_iter = np.zeros(len(W), dtype=int)
        gnorm, err = np.empty(len(W)), np.empty(len(W))
        for c in _chunks(np.arange(len(W)), self.Y_train_[0].size * len(self.Y_train_),
                         _SPD_BATCH):
            out[c], n_iter[c], gnorm[c], err[c] = solver.solve(W[c], tol, max_iter)
        self.n_iter_, self.grad_norm_, self.n_eigh_ = n_iter, gnorm, solver.n_eigh
        bad = ~(gnorm + 2.0 * err <= tol)
        floor = float(np.max(2.0 * err[bad], initial=0.0))
        at_floor = bad.any() and bool(np.all(gnorm[bad] <= 2.0 * err[bad]))
        _warn_not_converged(
            self, np.where(bad, np.maximum(gnorm, 2.0 * err), gnorm), tol, max_iter,
            "increase max_iter or tol" if not at_floor else
            f"the rounding of float64 at the condition numbers of these matrices limits the "
            f"certified gradient norm to about {floor:.3g}: increase tol",
        )
        return out

    def to_config(self):
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}


# ======================================================================================
# SPD, log-Euclidean
# ======================================================================================
class LogEuclideanSPDSpace(OutputSpace):
    r"""SPD matrices with the squared log-Euclidean distance; closed-form decoding.

    .. math::

        \Delta(Y, Z) = \|\log Y - \log Z\|_F^2, \qquad
        \hat f(x) = \exp\Big(\frac{\sum_i \alpha_i \log Y_i}{\sum_i \alpha_i}\Big)
                  = \exp\Big(\sum_i w_i \log Y_i\Big),

    the minimizer of eq. 2 (a weighted mean in the flat chart :math:`\log`).

    Negative-weight policy: the policy of :func:`policy_weights` (``weights="signed"``:
    signed weights normalized when :math:`\sum\alpha > 0` and :math:`\|\alpha\|_1 \le
    4\sum\alpha` -- the objective is then a strictly convex quadratic of :math:`\log Y` and the
    formula above is its exact minimizer -- else the positive part, else uniform).

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    """

    name = "spd_logeuclidean"
    decode_methods = ("closed_form",)

    def __init__(self, *, weights="signed"):
        self.weights = weights

    def check_Y(self, Y, name="Y"):
        """(n, d, d) symmetric positive definite matrices; ValueError naming ``name``."""
        A = _check_spd_stack(Y, name)
        return check_spd(A, name) if len(A) else A

    def fit(self, Y_train):
        check_policy(self.weights)
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.logs_ = logm_spd(self.Y_train_)
        return self

    def loss(self, Y_true, Y_pred):
        """Squared log-Euclidean distances, shape (n,)."""
        return np.atleast_1d(log_euclidean_distance(Y_true, Y_pred)) ** 2

    def project(self, Z, floor=1e-12):
        """KRLS projection: eigenvalue clipping as :meth:`SPDSpace.project`."""
        return SPDSpace.project(self, Z, floor)

    def decode(self, alpha, method="auto"):
        """exp(sum_i w_i log Y_i), shape (n_test, d, d)."""
        resolve_method(self, method)
        check_policy(self.weights)
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        return expm_sym(np.einsum("tn,nij->tij", W, self.logs_))

    def to_config(self):
        return {"weights": self.weights}


# ======================================================================================
# Bures-Wasserstein
# ======================================================================================
class BuresSpace(_RGDOptions, OutputSpace):
    r"""PSD matrices with the squared Bures-Wasserstein distance; the decoding is a barycenter.

    .. math::

        \Delta(Y, C) = d_{BW}^2(Y, C) = \operatorname{Tr} Y + \operatorname{Tr} C
            - 2 \operatorname{Tr}(C^{1/2} Y C^{1/2})^{1/2},
        \qquad F(Y) = \sum_i w_i\, d_{BW}^2(Y, C_i).

    **SDP ("cvxpy", the default).**  For PSD A, B the fidelity has the SDP form
    :math:`\operatorname{Tr}(A^{1/2} B A^{1/2})^{1/2} = \max\{\operatorname{Tr} X :
    \begin{psmallmatrix} A & X \\ X^\top & B\end{psmallmatrix} \succeq 0\}`
    (the optimum :math:`X = A^{1/2} U B^{1/2}` with U from the polar factor; the value is the
    nuclear norm of :math:`B^{1/2} A^{1/2}`).  Hence, for :math:`w \ge 0`, :math:`\sum w = 1`,

    .. math::

        \min_{Y \succeq 0,\ X_1..X_n}\ \operatorname{Tr} Y - 2\sum_i w_i \operatorname{Tr} X_i
        \quad \text{s.t.}\quad
        \begin{pmatrix} Y & X_i \\ X_i^\top & C_i \end{pmatrix} \succeq 0,\ i = 1..n,

    equals :math:`\min_Y F(Y) - \sum_i w_i \operatorname{Tr} C_i`.  It is convex because
    :math:`Y \mapsto -\operatorname{Tr}(C^{1/2} Y C^{1/2})^{1/2}` is convex (operator
    concavity of the square root).  The problem is built once with ``w`` a non-negative
    ``cp.Parameter`` (DPP: the objective is parameter-affine) and re-solved per test point
    (one LMI of size 2d per training point: use "rgd" for large n).

    **Fixed point ("rgd").**  The iteration of Alvarez-Esteban, del Barrio, Cuesta-Albertos
    and Matran (2016),

    .. math::

        Y \leftarrow Y^{-1/2}\Big(\sum_i w_i (Y^{1/2} C_i Y^{1/2})^{1/2}\Big)^2 Y^{-1/2}
          = \bar T Y \bar T, \qquad \bar T = \sum_i w_i T_{Y \to C_i},

    is Riemannian gradient descent with unit step in the Bures-Wasserstein geometry (Chewi
    et al., 2020): tangent vectors at Y are symmetric V with
    :math:`\operatorname{Exp}_Y(V) = (I + V) Y (I + V)`, metric
    :math:`\langle U, V\rangle_Y = \operatorname{Tr}(U Y V)`, and
    :math:`\operatorname{grad} F(Y) = 2(I - \bar T)`.  Batched over test points, started from
    :math:`(\sum_i w_i C_i^{1/2})^2` (the exact barycenter when the :math:`C_i` commute),
    stopped when :math:`\|\operatorname{grad} F\|_Y \le` ``tol``.  It needs the iterates to be
    nonsingular (a barycenter with a positive-definite training matrix among positive weights
    is).

    Negative-weight policy: with negative weights F is a difference of convex functions and
    the SDP above is no longer a relaxation of it (it would be non-convex), and the fixed
    point needs a PSD :math:`\sum_i w_i (Y^{1/2} C_i Y^{1/2})^{1/2}`.  Both methods therefore
    always use the positive part of the weights, renormalized (uniform weights if no weight
    is positive): the decoded matrix is the BW barycenter of the training outputs with
    weights :math:`\alpha_+ / \sum(\alpha_+)`.

    Parameters
    ----------
    max_iter : int, default=100
        Fixed-point iterations ("rgd").
    tol : float, default=1e-8
        "rgd": stopping threshold on the Riemannian gradient norm.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        CVXPY solver of the SDP.
    solver_tol : float, default=1e-8
        Tolerance passed to the SDP solver (the objective is then accurate to about this, the
        matrix to about its square root: use "rgd" for high accuracy).
    """

    name = "bures"
    decode_methods = ("cvxpy", "rgd")

    def __init__(self, *, max_iter=100, tol=1e-8, solver="CLARABEL", solver_tol=1e-8):
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.solver_tol = solver_tol
        self.weights = "positive"

    def check_Y(self, Y, name="Y"):
        """(n, d, d) symmetric PSD matrices (rank-deficient allowed)."""
        A = _check_spd_stack(Y, name)
        return check_psd(A, name) if len(A) else A

    def fit(self, Y_train):
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.roots_ = sqrtm_psd(self.Y_train_)
        self._problem = None
        return self

    def loss(self, Y_true, Y_pred):
        """Squared Bures-Wasserstein distances, shape (n,)."""
        return np.atleast_1d(bures_wasserstein_distance_squared(Y_true, Y_pred))

    def project(self, Z):
        """KRLS projection: eigenvalue clipping at 0 (the PSD cone)."""
        return project_psd_cone(Z)

    def objective(self, Y, w):
        """F(Y) = sum_i w_i d_BW^2(Y, C_i) per Y of a batch (weights used as given)."""
        Y = np.asarray(Y, dtype=np.float64).reshape((-1,) + self.Y_train_.shape[1:])
        w = check_alpha(w, len(self.Y_train_), "w")
        D = bures_wasserstein_distance_squared(Y[:, None], self.Y_train_[None])
        return np.sum(w * D, axis=1)

    def riemannian_gradient(self, Y, w):
        """grad F(Y) = 2 (I - sum_i w_i T_{Y -> C_i}), shape (m, d, d) (Y nonsingular)."""
        Y = np.asarray(Y, dtype=np.float64).reshape((-1,) + self.Y_train_.shape[1:])
        w = check_alpha(w, len(self.Y_train_), "w")
        Tbar, _, _ = self._tbar(Y, w)
        return 2.0 * (np.eye(Y.shape[1]) - Tbar)

    def _tbar(self, Y, W):
        s, U = np.linalg.eigh(Y)
        s = np.maximum(s, _TINY)
        Yh = spectral(np.sqrt(s), U)
        Yih = spectral(1.0 / np.sqrt(s), U)
        M = Yh[:, None] @ self.Y_train_[None] @ Yh[:, None]
        mw, mV = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
        R = mV * (W[..., None] * np.sqrt(np.maximum(mw, 0.0)))[..., None, :]
        A = (R @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        A = 0.5 * (A + np.swapaxes(A, -1, -2))
        Tbar = Yih @ A @ Yih
        return 0.5 * (Tbar + np.swapaxes(Tbar, -1, -2)), A, Yih

    def cvxpy_problem(self):
        """The barycenter SDP, built once: ``(problem, Y variable, w parameter)``."""
        import cvxpy as cp

        if self._problem is None:
            n, d = len(self.Y_train_), self.Y_train_.shape[1]
            Y = cp.Variable((d, d), symmetric=True)
            w = cp.Parameter(n, nonneg=True)
            Xs = [cp.Variable((d, d)) for _ in range(n)]
            cons = [Y >> 0]
            for X, C in zip(Xs, self.Y_train_, strict=True):
                cons.append(cp.bmat([[Y, X], [X.T, C]]) >> 0)
            traces = cp.hstack([cp.trace(X) for X in Xs])
            prob = cp.Problem(cp.Minimize(cp.trace(Y) - 2 * (w @ traces)), cons)
            self._problem = (prob, Y, w)
        return self._problem

    def decode(self, alpha, method="auto"):
        """BW barycenters with the positive-part weights, shape (n_test, d, d), PSD."""
        method = resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, "positive")
        if method == "cvxpy":
            prob, Yv, wp = self.cvxpy_problem()
            out = np.empty((len(W),) + self.Y_train_.shape[1:])
            for t in range(len(W)):
                wp.value = W[t]
                solve_parametric(prob, self.solver, check_float(self.solver_tol, "solver_tol",
                                                                positive=True))
                out[t] = project_psd_cone(np.asarray(Yv.value))
            return out
        Y0 = np.einsum("tn,nij->tij", W, self.roots_)
        Y0 = Y0 @ Y0
        # a singular start (every weighted root singular in a common direction) is lifted
        s, U = np.linalg.eigh(0.5 * (Y0 + np.swapaxes(Y0, 1, 2)))
        top = np.maximum(s[:, -1:], _TINY)
        Y0 = spectral(np.maximum(s, 1e-12 * top), U)
        return self._fixed_point(W, Y0)

    def _fixed_point(self, W, Y):
        T, n, d = len(W), len(self.Y_train_), self.Y_train_.shape[1]
        tol, max_iter = float(self.tol), int(self.max_iter)
        Y = Y.copy()
        n_iter = np.zeros(T, dtype=int)
        gnorm = np.full(T, np.inf)
        eye = np.eye(d)
        active = np.arange(T)
        for it in range(max_iter + 1):
            if not active.size:
                break
            for c in _chunks(active, n * d * d):
                Tbar, Am, Yih = self._tbar(Y[c], W[c])
                D = eye - Tbar
                gnorm[c] = 2.0 * np.sqrt(np.maximum(
                    np.einsum("aij,ajk,aki->a", D, Y[c], D), 0.0))
                go = gnorm[c] > tol
                if it < max_iter and np.any(go):
                    cg = c[go]
                    Yn = Yih[go] @ Am[go] @ Am[go] @ Yih[go]
                    Y[cg] = 0.5 * (Yn + np.swapaxes(Yn, 1, 2))
                    n_iter[cg] += 1
            active = active[gnorm[active] > tol]
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, tol, max_iter)
        return Y

    def to_config(self):
        return {"max_iter": int(self.max_iter), "tol": float(self.tol), "solver": self.solver,
                "solver_tol": float(self.solver_tol)}


# ======================================================================================
# Sphere
# ======================================================================================
class SphereSpace(_RGDOptions, OutputSpace):
    r"""Unit vectors of :math:`S^{k-1}` with the squared geodesic distance (eq. 17, Table 1).

    .. math::

        \Delta(z, y) = \arccos(\langle z, y\rangle)^2, \qquad
        F(y) = \sum_i w_i \arccos(\langle y, z_i\rangle)^2, \qquad
        \operatorname{grad} F(y) = -2\sum_i w_i \operatorname{Log}_y(z_i)
          = -2 \sum_i w_i \frac{\theta_i}{\sin\theta_i} (I - y y^\top) z_i,

    :math:`\theta_i = \arccos\langle y, z_i\rangle` (Table 1's gradient, written with the
    logarithm map).

    The antipode :math:`-z_i` (cut locus) is a cone point of :math:`\arccos^2(\langle\cdot,
    z_i\rangle)`: near it :math:`\theta_i^2 \approx \pi^2 - 2\pi\rho`, with :math:`\rho` the
    distance to :math:`-z_i`.  For a negative weight this is a convex kink and minimizers of F
    do sit there (observed with SELF weights).  Within :math:`\sin\theta_i \le 10^{-7}` of the
    antipode the term is left out of the gradient and, for :math:`w_i < 0`, its subdifferential
    (a ball of radius :math:`2\pi|w_i|`) is accounted for: the stationarity measure used for
    stopping (``grad_norm_``) is the norm of the least-norm element of the subdifferential,
    :math:`\max(0, \|\operatorname{grad} F_{\text{smooth}}\| - 2\pi\sum_{\text{kinks}}
    |w_i|)` (:meth:`stationarity`); it is the Riemannian gradient norm away from the kinks.

    Decoding ("rgd"): :math:`y \leftarrow R_y(-\eta \operatorname{grad} F) =
    (y + 2\eta \sum_i w_i \operatorname{Log}_y(z_i)) / \|\cdot\|` (the normalization
    retraction of Table 1), batched over test points, from the normalized extrinsic mean
    :math:`\sum_i w_i z_i / \|\sum_i w_i z_i\|` (the training output of largest weight if
    that sum vanishes), step 1/2 halved per test point whenever F would increase (doubled
    back up to 1/2 after an accepted step), stopped
    when :math:`\|\operatorname{grad} F(y)\| \le` ``tol``.

    Negative-weight policy: :func:`policy_weights` (``weights="signed"``: signed normalized
    weights when :math:`\sum\alpha > 0` and :math:`\|\alpha\|_1 \le 4\sum\alpha` -- the sphere
    is compact so a minimizer exists; else the positive part; else uniform).

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    max_iter : int, default=200
    tol : float, default=1e-8
        Stopping threshold on the Riemannian gradient norm.
    """

    name = "sphere"
    decode_methods = ("rgd",)
    #: accepted deviation of a training output from unit norm (renormalized on input)
    unit_tol = 1e-6

    def __init__(self, *, weights="signed", max_iter=200, tol=1e-8):
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y, name="Y"):
        """(n, k) unit rows (to 1e-6; renormalized); ValueError naming ``name``."""
        A = as_finite(Y, name)
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(f"{name} must have shape (n_samples, k), got {A.shape}")
        nrm = np.linalg.norm(A, axis=1)
        if A.size and np.abs(nrm - 1.0).max() > self.unit_tol:
            raise ValueError(
                f"{name} rows must be unit vectors (points of the sphere); largest | ||y|| - 1 | "
                f"= {float(np.abs(nrm - 1.0).max()):.3g}"
            )
        return A / nrm[:, None] if A.size else A

    def fit(self, Y_train):
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        return self

    def loss(self, Y_true, Y_pred):
        r"""Squared geodesic distances :math:`\arccos(\langle y, y'\rangle)^2`, shape (n,)."""
        T = as_finite(Y_true, "Y_true")
        P = as_finite(Y_pred, "Y_pred")
        if T.shape != P.shape or T.ndim != 2:
            raise ValueError(f"Y_true and Y_pred must have the same (n, k) shape, got "
                             f"{T.shape} and {P.shape}")
        T = T / np.linalg.norm(T, axis=1, keepdims=True)
        P = P / np.linalg.norm(P, axis=1, keepdims=True)
        d = 2.0 * np.arctan2(np.linalg.norm(T - P, axis=1), np.linalg.norm(T + P, axis=1))
        return d * d

    def project(self, Z):
        """KRLS projection: rows normalized (the first basis vector for a zero row)."""
        Z = np.array(as_finite(Z, "Z"))
        nrm = np.linalg.norm(Z, axis=1)
        zero = nrm <= 1e-300
        Z[zero] = 0.0
        Z[zero, 0] = 1.0
        nrm[zero] = 1.0
        return Z / nrm[:, None]

    def objective(self, y, w):
        """F(y) per row of ``y`` (weights used as given)."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        return self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)[0]

    def stationarity(self, y, w):
        """max(0, ||grad of the smooth terms|| - kink slack): 0 at a stationary point."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, slack = self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)
        return np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)

    def riemannian_gradient(self, y, w):
        """grad F(y) = -2 sum_i w_i Log_y(z_i), shape (m, k)."""
        y = np.atleast_2d(as_finite(y, "y"))
        w = check_alpha(w, len(self.Y_train_), "w")
        return -2.0 * self._eval(y / np.linalg.norm(y, axis=1, keepdims=True), w)[1]

    def _eval(self, y, W):
        """F, G = sum_i w_i Log_y(z_i) over the smooth terms, and the kink slack."""
        Z = self.Y_train_
        ip = np.clip(y @ Z.T, -1.0, 1.0)
        sn = np.sqrt(np.maximum(1.0 - ip * ip, 0.0))
        theta = np.arctan2(sn, ip)
        kink = (ip < 0) & (sn <= _KINK_TOL)
        ok = (sn > 1e-300) & ~kink
        c = np.where(ip > 0, 1.0, 0.0)  # limit of theta / sin(theta) at theta = 0
        np.divide(theta, sn, out=c, where=ok)
        c[kink] = 0.0
        F = np.sum(W * theta * theta, axis=1)
        wc = W * c
        G = wc @ Z - np.sum(wc * ip, axis=1)[:, None] * y  # sum_i w_i Log_y(z_i)
        G = G - np.sum(G * y, axis=1)[:, None] * y  # exactly tangent
        slack = 2.0 * np.pi * np.sum(np.where(kink, np.maximum(-W, 0.0), 0.0), axis=1)
        return F, G, slack

    def decode(self, alpha, method="auto"):
        """Predictions of eq. 2 by batched RGD, shape (n_test, k), unit rows."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        return self._rgd(W, self._init(W))

    def _init(self, W):
        m = W @ self.Y_train_
        nrm = np.linalg.norm(m, axis=1)
        small = nrm < 1e-8
        m[small] = self.Y_train_[np.argmax(W[small], axis=1)]
        nrm[small] = 1.0
        return m / nrm[:, None]

    def _rgd(self, W, y):
        tol, max_iter = float(self.tol), int(self.max_iter)
        T = len(W)
        y = y.copy()
        F, G, slack = self._eval(y, W)
        eta = np.full(T, 0.5)
        n_iter = np.zeros(T, dtype=int)
        gnorm = np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)
        for _ in range(max_iter):
            c = np.flatnonzero((gnorm > tol) & (eta > _MIN_STEP))
            if not c.size:
                break
            yc = y[c] + 2.0 * eta[c, None] * G[c]
            yc /= np.linalg.norm(yc, axis=1, keepdims=True)
            Fc, Gc, sc = self._eval(yc, W[c])
            ok = Fc <= F[c] + 1e-13 * np.maximum(1.0, np.abs(F[c]))
            acc = c[ok]
            y[acc], F[acc], G[acc], slack[acc] = yc[ok], Fc[ok], Gc[ok], sc[ok]
            eta[acc] = np.minimum(2.0 * eta[acc], 0.5)
            eta[c[~ok]] *= 0.5
            n_iter[c] += 1
            gnorm = np.maximum(2.0 * np.linalg.norm(G, axis=1) - slack, 0.0)
        self.n_iter_, self.grad_norm_ = n_iter, gnorm
        _warn_not_converged(self, gnorm, tol, max_iter)
        return y

    def to_config(self):
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}


# ======================================================================================
# Fisher-Rao simplex
# ======================================================================================
class FisherSimplexSpace(_RGDOptions, OutputSpace):
    r"""Histograms with the Fisher-Rao geometry, through the square-root map (section 4.4).

    .. math::

        \pi(y) = (\sqrt{y_1}, \dots, \sqrt{y_k}) \in S^{k-1}, \qquad
        \Delta(y, y') = \arccos\Big(\sum_j \sqrt{y_j y'_j}\Big)^2
                      = d_{S^{k-1}}(\pi(y), \pi(y'))^2,

    (the paper's normalization of the Fisher-Rao distance, which is twice this arccos).
    Training outputs are first floored at ``eps`` and renormalized, :math:`\mathcal Y =
    \Delta_\epsilon` with :math:`\epsilon = 10^{-5}` as in the paper's experiment, so that
    their images lie inside the open positive orthant of the sphere.  Decoding runs the
    :class:`SphereSpace` RGD on :math:`\pi(y_i)` and maps back with
    :math:`\pi^{-1}(z) = z \odot z`, which lies on the simplex for every unit z.  With
    non-negative weights the decoded z stays in the spherical cap
    :math:`\{z_j \ge \sqrt{\epsilon'}\}` of the floored outputs (geodesically convex), so the
    prediction is in :math:`\Delta_\epsilon` up to rounding.

    Negative-weight policy: that of :class:`SphereSpace` (``weights="signed"`` by default);
    with signed weights the decoded histogram is on the simplex but may fall below ``eps``.

    Parameters
    ----------
    eps : float, default=1e-5
        Floor of the training histograms.
    weights, max_iter, tol : see :class:`SphereSpace`.
    """

    name = "fisher_simplex"
    decode_methods = ("rgd",)

    def __init__(self, *, eps=1e-5, weights="signed", max_iter=200, tol=1e-8):
        self.eps = eps
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def check_Y(self, Y, name="Y"):
        """(n, k) histograms: non-negative rows summing to 1 (to 1e-8)."""
        A = as_finite(Y, name)
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(f"{name} must have shape (n_samples, k), got {A.shape}")
        if A.size and (A.min() < -1e-12 or np.abs(A.sum(axis=1) - 1.0).max() > 1e-8):
            raise ValueError(
                f"{name} rows must be histograms: non-negative entries summing to 1"
            )
        return np.maximum(A, 0.0)

    def floor(self, Y):
        """Histograms floored at ``eps`` and renormalized (the set Delta_eps)."""
        Yf = np.maximum(Y, float(self.eps))
        return Yf / Yf.sum(axis=1, keepdims=True)

    def fit(self, Y_train):
        self._check_options()
        eps = check_float(self.eps, "eps", positive=True)
        self.Y_train_ = self.check_Y(Y_train, "Y")
        if eps * self.Y_train_.shape[1] >= 1.0:
            raise ValueError(f"eps must be < 1/k = {1.0 / self.Y_train_.shape[1]:g}, got {eps}")
        self.sphere_ = SphereSpace(weights=self.weights, max_iter=self.max_iter, tol=self.tol)
        self.sphere_.fit(np.sqrt(self.floor(self.Y_train_)))
        return self

    def loss(self, Y_true, Y_pred):
        """Squared Fisher-Rao (paper's normalization) distances, shape (n,)."""
        T = np.sqrt(np.maximum(as_finite(Y_true, "Y_true"), 0.0))
        P = np.sqrt(np.maximum(as_finite(Y_pred, "Y_pred"), 0.0))
        return SphereSpace.loss(self, T, P)

    def project(self, Z):
        """KRLS projection: Euclidean projection of each row onto the simplex."""
        return project_simplex(Z)

    def decode(self, alpha, method="auto"):
        """Histograms of eq. 2, shape (n_test, k)."""
        resolve_method(self, method)
        sp = self.sphere_
        sp.weights, sp.max_iter, sp.tol = self.weights, self.max_iter, self.tol
        z = sp.decode(alpha)
        self.n_iter_, self.grad_norm_ = sp.n_iter_, sp.grad_norm_
        y = z * z
        return y / y.sum(axis=1, keepdims=True)

    def to_config(self):
        return {"eps": float(self.eps), "weights": self.weights, "max_iter": int(self.max_iter),
                "tol": float(self.tol)}
