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
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import (
    as_finite,
    check_float,
    check_int,
    check_policy,
    policy_weights,
    solve_parametric,
)
from psdsos.structured._euclidean import project_psd_cone, project_simplex

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


def _spectral(V, f):
    """``V diag(f) V^T`` batched, exactly symmetric."""
    P = (V * f[..., None, :]) @ np.swapaxes(V, -1, -2)
    return 0.5 * (P + np.swapaxes(P, -1, -2))


def _chunks(idx, per_point):
    size = max(1, _BLOCK_BUDGET // max(per_point, 1))
    for s in range(0, len(idx), size):
        yield idx[s : s + size]


def _check_spd_stack(Y, name):
    A = as_finite(Y, name)
    if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples, d, d), got {A.shape}")
    return A


def _warn_not_converged(space, gnorm, tol, max_iter):
    bad = int(np.sum(~(gnorm <= tol)))
    if bad:
        warnings.warn(
            f"{type(space).__name__} decoding did not reach tol={tol:g} (Riemannian gradient "
            f"norm) for {bad} test point(s) in max_iter={max_iter} iterations (largest norm "
            f"{float(np.max(gnorm)):.3g}); increase max_iter or tol",
            ConvergenceWarning,
            stacklevel=3,
        )


# ---- SPD decoding machinery: tracked eigendecompositions and Riemannian Newton ----------
def _sw(A):
    return np.swapaxes(A, -1, -2)


def _expm_scaled(S, s):
    """``expm(s * S)`` for symmetric S (batched)."""
    w, V = np.linalg.eigh(S)
    return _spectral(V, np.exp(s * w))


class _TrackedLogs:
    r"""Logarithms of :math:`M_i = R Y_i R^\top` for a moving congruence factor R.

    ``evaluate(R, W, V)`` returns, for each test point (row of R, W) and training matrix,
    an orthogonal V with :math:`V^\top M V = \operatorname{diag}(\lambda) + E` and the
    logarithm :math:`\log M = V (\operatorname{diag}(\log\lambda) + \Phi \circ E) V^\top`,
    :math:`\Phi_{jk} = (\log\lambda_j - \log\lambda_k) / (\lambda_j - \lambda_k)` (the
    Daleckii-Krein first-order term; the remainder is second order in
    :math:`r = \|E\|_F / \lambda_{\min}`).  V is refined from the previous iterate's
    eigenvectors by simultaneous Jacobi rotations (:math:`V \leftarrow V \,\mathrm{orth}(I +
    K + K^2/2)`, :math:`K_{jk} = \tan\theta_{jk}` of the 2 x 2 Jacobi angle: quadratic
    convergence, matrix products only) until :math:`r \le` ``thr``; a matrix whose rotation
    is large, that is not refined within ``max_refine`` rounds, or whose V lost
    orthogonality (> 1e-12) gets a LAPACK ``eigh`` instead.  Without V, every matrix does.
    """

    def __init__(self, A, thr, max_refine=5, kmax=1.0):
        d = A.shape[1]
        self.A, self.thr, self.max_refine, self.kmax = A, thr, max_refine, kmax
        self.iu, self.ju = np.triu_indices(d, 1)
        self.fu, self.fl = self.iu * d + self.ju, self.ju * d + self.iu  # flat (j,k), (k,j)
        self.dg = np.arange(d) * (d + 1)
        self.eye = np.eye(d)
        self.n_eigh = 0

    def _eigh(self, RT, ci, ni):
        R = np.ascontiguousarray(_sw(RT[ci]))
        lam, V = np.linalg.eigh((R @ self.A[ni]) @ RT[ci])
        self.n_eigh += len(ci)
        return lam, V

    def evaluate(self, R, W, V=None):
        A, iu, ju, fu, fl, eye = self.A, self.iu, self.ju, self.fu, self.fl, self.eye
        c, n, d = len(R), len(A), A.shape[1]
        m = c * n
        RT = np.ascontiguousarray(_sw(R))
        rows = np.arange(m)
        lam = np.empty((m, d))
        Bu = np.zeros((m, len(iu)))
        if V is None:
            lam[:], V = self._eigh(RT, rows // n, rows % n)
        else:
            V = V.reshape(m, d, d).copy()
            idx = rows
            for it in range(self.max_refine + 1):
                ci, ni = idx // n, idx % n
                Vw = V[idx]
                Ct = RT[ci] @ Vw
                B = np.ascontiguousarray(_sw(Ct)) @ (A[ni] @ Ct)
                B2 = B.reshape(len(B), d * d)
                lw = B2[:, self.dg]
                bu = 0.5 * (B2[:, fu] + B2[:, fl])
                lmin = lw.min(axis=1)
                r = np.sqrt(2.0 * np.einsum("ij,ij->i", bu, bu)) / np.where(lmin > 0, lmin, 1.0)
                fine = (r <= self.thr) & (lmin > 0)
                lam[idx[fine]], Bu[idx[fine]] = lw[fine], bu[fine]
                if fine.all() or it == self.max_refine:
                    break
                go = ~fine
                idx, Vw, lw, bu = idx[go], Vw[go], lw[go], bu[go]
                hb = 0.5 * (lw[:, ju] - lw[:, iu])
                den = hb + np.copysign(np.sqrt(hb * hb + bu * bu), hb)
                ku = np.divide(bu, den, out=np.zeros_like(bu), where=den != 0)
                kn = np.sqrt(2.0 * np.einsum("ij,ij->i", ku, ku))
                big = kn > self.kmax
                kn_max = kn[~big].max(initial=0.0)
                if big.any():  # far from the previous eigenvectors: LAPACK
                    b = idx[big]
                    lam[b], V[b] = self._eigh(RT, b // n, b % n)
                    Bu[b] = 0.0
                    idx, Vw, ku = idx[~big], Vw[~big], ku[~big]
                K = np.zeros((len(idx), d * d))
                K[:, fu] = ku
                K[:, fl] = -ku
                K = K.reshape(-1, d, d)
                Vw = Vw @ (eye + K + 0.5 * (K @ K))
                for _ in range(1 + (kn_max > 0.3)):  # Newton-Schulz polar steps
                    Vw = Vw @ (1.5 * eye - 0.5 * (np.ascontiguousarray(_sw(Vw)) @ Vw))
                V[idx] = Vw
            if not fine.all():
                b = idx[~fine]
                lam[b], V[b] = self._eigh(RT, b // n, b % n)
                Bu[b] = 0.0
            O = np.ascontiguousarray(_sw(V)) @ V - eye
            b = np.flatnonzero(np.einsum("ijk,ijk->i", O, O) > 1e-24)
            if b.size:
                lam[b], V[b] = self._eigh(RT, b // n, b % n)
                Bu[b] = 0.0
        lam = np.maximum(lam, _TINY)
        lg = np.log(lam)
        x = 0.5 * (lg[:, iu] - lg[:, ju])
        sh = np.sinh(x)
        xs = np.divide(x, sh, out=np.ones_like(x), where=sh != 0)  # x / sinh x
        Lu = xs * np.exp(-0.5 * (lg[:, iu] + lg[:, ju])) * Bu  # Daleckii-Krein term
        L = np.zeros((m, d * d))
        L[:, fu] = Lu
        L[:, fl] = Lu
        L[:, self.dg] = lg
        L = L.reshape(m, d, d)
        hu = (xs * np.cosh(x)).reshape(c, n, -1)  # Hessian multipliers (delta/2) coth(delta/2)
        Vt = np.ascontiguousarray(_sw(V))
        Wf = W.reshape(c, 1, n)
        F = (Wf @ (np.einsum("ij,ij->i", lg, lg) + 2.0 * np.einsum("ij,ij->i", Lu, Lu))
             .reshape(c, n, 1))[:, 0, 0]
        G = (Wf @ ((V @ L) @ Vt).reshape(c, n, d * d)).reshape(c, d, d)
        G = 0.5 * (G + _sw(G))
        return _Frame(V.reshape(c, n, d, d), Vt.reshape(c, n, d, d), hu, F, G, self)


class _Frame:
    """Eigen-information of one evaluation: V, V^T, Hessian multipliers, F, G."""

    def __init__(self, V, Vt, hu, F, G, tracker):
        self.V, self.Vt, self.hu, self.F, self.G = V, Vt, hu, F, G
        self.tracker, self._H = tracker, None

    def take(self, sel):
        return _Frame(self.V[sel], self.Vt[sel], self.hu[sel], self.F[sel], self.G[sel],
                      self.tracker)

    def put(self, sel, other, osel):
        for k in ("V", "Vt", "hu", "F", "G"):
            getattr(self, k)[sel] = getattr(other, k)[osel]
        self._H = None

    def hvp(self, W, P):
        r"""Riemannian Hessian of F/2 at the frame point (identity), applied to P.

        In the eigenbasis of :math:`\log M_i`, the Hessian of :math:`\tfrac12 d^2(\cdot, M_i)`
        multiplies entry (j, k) by :math:`(\delta/2)\coth(\delta/2)`,
        :math:`\delta = \log\lambda_j - \log\lambda_k` (Jacobi fields of a symmetric space).
        """
        c, n, d = self.V.shape[:3]
        if self._H is None:
            t = self.tracker
            H = np.ones((c, n, d * d))
            H[..., t.fu] = self.hu
            H[..., t.fl] = self.hu
            self._H = H.reshape(c, n, d, d)
        S = self.Vt @ (P[:, None] @ self.V)
        Z = (self.V @ (self._H * S)) @ self.Vt
        out = (W.reshape(c, 1, n) @ Z.reshape(c, n, d * d)).reshape(c, d, d)
        return 0.5 * (out + _sw(out))


def _newton_direction(fr, W, max_cg):
    """Truncated CG on Hess[P] = G (forcing term min(1/2, sqrt ||G||)); the gradient
    direction G if the first curvature is not positive (signed weights)."""
    G = fr.G
    gn2 = np.einsum("cij,cij->c", G, G)
    eta2 = np.minimum(0.25, np.sqrt(gn2)) * gn2
    P, r, q, rr = np.zeros_like(G), G.copy(), G.copy(), gn2.copy()
    act = np.flatnonzero(gn2 > 0)
    for k in range(max_cg):
        if not act.size:
            break
        Hq = fr.take(act).hvp(W[act], q[act])
        qHq = np.einsum("cij,cij->c", q[act], Hq)
        neg = ~(qHq > 1e-12 * rr[act])
        if k == 0:
            P[act[neg]] = G[act[neg]]
        pos = ~neg
        a, Hq = act[pos], Hq[pos]
        al = rr[a] / qHq[pos]
        P[a] += al[:, None, None] * q[a]
        r[a] -= al[:, None, None] * Hq
        rrn = np.einsum("cij,cij->c", r[a], r[a])
        q[a] = r[a] + (rrn / rr[a])[:, None, None] * q[a]
        rr[a] = rrn
        act = a[rrn > eta2[a]]
    return P


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
    Riemannian Newton), batched over test points, from the log-Euclidean weighted mean
    :math:`\exp(\sum_i w_i \log Y_i)` (exact when the :math:`Y_i` commute).  Everything is
    computed in the frame of a congruence factor R, :math:`Y^{-1} = R^\top R` (the metric is
    invariant under any congruence, so :math:`G = \sum_i w_i \log(R Y_i R^\top)` has the same
    norm): the Newton direction P solves :math:`\operatorname{Hess}[P] = G` by truncated
    conjugate gradients, with the Hessian of :math:`\tfrac12 d^2(\cdot, Y_i)` diagonal in the
    eigenbasis of :math:`\log(R Y_i R^\top)` (multipliers :math:`(\delta/2)\coth(\delta/2)`,
    :math:`\delta` the differences of log-eigenvalues); the gradient direction where the
    curvature is not positive (signed weights).  Step
    :math:`R \leftarrow \exp(-tP/2) R`, t = 1 halved per test point whenever F would increase.
    The first evaluation uses LAPACK ``eigh`` on every :math:`R Y_i R^\top`; later ones refine
    the previous eigenvectors with matrix products (simultaneous Jacobi rotations, quadratic
    convergence) plus a Daleckii-Krein correction of the logarithm, with LAPACK only for the
    matrices that do not converge (:class:`_TrackedLogs`); the refinement target makes the
    logarithms' error far below ``tol``.  Stops when
    :math:`\|\operatorname{grad} F\|_Y = 2\|G\|_F \le` ``tol`` (``F`` with weights summing to one).

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
        Final Riemannian gradient norms.
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
        return _spectral(V, np.maximum(w, fl))

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
        Yh = _spectral(U, np.sqrt(s))
        Yih = _spectral(U, 1.0 / np.sqrt(s))
        M = Yih[:, None] @ self.Y_train_[None] @ Yih[:, None]
        mw, mV = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
        lm = np.log(np.maximum(mw, _TINY))
        F = np.einsum("an,anj->a", W, lm * lm)
        G = ((mV * (W[..., None] * lm)[..., None, :]) @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        return F, 0.5 * (G + np.swapaxes(G, -1, -2)), Yh

    def decode(self, alpha, method="auto"):
        """Predictions of eq. 2 by batched Riemannian Newton, shape (n_test, d, d), SPD."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        Y = expm_sym(np.einsum("tn,nij->tij", W, self.logs_))
        return self._rgd(W, Y)

    def _rgd(self, W, Y):
        """Riemannian Newton from Y (class docstring), batched over test points."""
        T, n, d = len(W), len(self.Y_train_), self.Y_train_.shape[1]
        tol, max_iter = float(self.tol), int(self.max_iter)
        # refinement target: the Daleckii-Krein remainder, O(d r^2), stays below tol / 1000
        tracker = _TrackedLogs(self.Y_train_, thr=min(1e-5, max(np.sqrt(1e-3 * tol / d), 1e-9)))
        out = np.empty_like(Y)
        n_iter = np.zeros(T, dtype=int)
        gnorm = np.empty(T)
        for c in _chunks(np.arange(T), 8 * n * d * d):
            Wc = W[c]
            R = np.linalg.inv(np.linalg.cholesky(Y[c]))  # Y^{-1} = R^T R
            fr = tracker.evaluate(R, Wc)
            gn = 2.0 * np.sqrt(np.einsum("cij,cij->c", fr.G, fr.G))
            step = np.ones(len(c))
            for _ in range(max_iter):
                a = np.flatnonzero((gn > tol) & (step > _MIN_STEP))
                if not a.size:
                    break
                fa = fr.take(a)
                P = _newton_direction(fa, Wc[a], max_cg=d * (d + 1) // 2)
                Rn = _expm_scaled(P, -0.5 * step[a, None]) @ R[a]
                fn = tracker.evaluate(Rn, Wc[a], fa.V)
                ok = fn.F <= fa.F + 1e-13 * np.maximum(1.0, np.abs(fa.F))
                acc = a[ok]
                R[acc] = Rn[ok]
                fr.put(acc, fn, ok)
                step[acc] = np.minimum(2.0 * step[acc], 1.0)
                step[a[~ok]] *= 0.5
                n_iter[c[a]] += 1
                gn = 2.0 * np.sqrt(np.einsum("cij,cij->c", fr.G, fr.G))
            Ri = np.linalg.inv(R)
            Yc = Ri @ _sw(Ri)
            out[c] = 0.5 * (Yc + _sw(Yc))
            gnorm[c] = gn
        self.n_iter_, self.grad_norm_, self.n_eigh_ = n_iter, gnorm, tracker.n_eigh
        _warn_not_converged(self, gnorm, tol, max_iter)
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
        Yh = _spectral(U, np.sqrt(s))
        Yih = _spectral(U, 1.0 / np.sqrt(s))
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
        Y0 = _spectral(U, np.maximum(s, 1e-12 * top))
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
