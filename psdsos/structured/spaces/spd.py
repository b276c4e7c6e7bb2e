r"""SPD matrices with the affine-invariant distance (Rudi et al., "Manifold Structured
Prediction", eq. 16, Table 1): Riemannian Newton with the exponential map (eq. 15),
eigenvectors tracked across iterations (:mod:`psdsos.structured.spaces._spd_newton`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from psdsos.geometry import affine_invariant_distance, check_spd, expm_sym, logm_spd
from psdsos.geometry._checks import SPD_TOL
from psdsos.geometry._matfun import spectral
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite, policy_weights, warn_no_minimizer
from psdsos.structured._plugins import register_output_space
from psdsos.structured.spaces import _spd_robust
from psdsos.structured.spaces._manifold import (
    _TINY,
    _check_spd_stack,
    _chunks,
    _congruence_eigh,
    _RGDOptions,
    _warn_not_converged,
)
from psdsos.structured.spaces._spd_newton import _Solved, _SPDNewton

__all__ = ["SPDSpace"]


#: SPD decoding: test points solved together while (test points x training matrices x d^2)
#: stays below this; a single test point (with its own non-zero weights) above it.  Small
#: problems are dominated by per-call overhead, large ones by the arithmetic.
_SPD_BATCH = 2**15
#: A decode not certified whose condition number is above this stopped at the edge of the
#: space (the robust path keeps condition numbers below 1e12).
_EDGE_COND = 1e11
#: The squared distances between the training matrices (for the start at the training
#: matrix of smallest F, signed weights) are computed once, at the first decode with a
#: negative weight, when n (n - 1) / 2 * d^3 is at most this (n = 1000, d = 10: about 3 s)
#: and n at most _PAIRWISE_MAX_N (the n x n array: 128 MiB); above, the training matrix of
#: smallest log-Euclidean objective stands in for that start.
_PAIRWISE_BUDGET = 2**30
_PAIRWISE_MAX_N = 4096
#: Decode status per test point (``SPDSpace.status_``).
STATUSES = ("optimal", "stationary", "uncertified")
_SOLVED_FIELDS = ("Y", "R", "n_iter", "grad_norm", "err", "F", "errF", "certified")


def _clip_eigenvalues(Z: ArrayLike, floor: float) -> np.ndarray:
    """Eigenvalues of sym(Z) floored (SPDSpace.project, LogEuclideanSPDSpace.project)."""
    Z = as_finite(Z, "Z")
    S = 0.5 * (Z + np.swapaxes(Z, -1, -2))
    w, V = np.linalg.eigh(S)
    top = np.abs(w).max(axis=-1, keepdims=True)
    fl = np.maximum(floor, 1e-10 * top)
    fl = np.where(fl > 0, fl, 1.0)  # all-zero matrix: identity
    return spectral(np.maximum(w, fl), V)


_LogsT = TypeVar("_LogsT", bound="_SPDLogs")


class _SPDLogs(OutputSpace):
    """SPD outputs stored with their logarithms ``logs_`` and projected by eigenvalue
    clipping (:class:`SPDSpace`, :class:`LogEuclideanSPDSpace`); ``_check_options`` checks
    the constructor arguments at fit."""

    def _check_options(self):
        raise NotImplementedError

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """(n, d, d) symmetric positive definite matrices; ValueError naming ``name``."""
        return _check_spd_stack(Y, name, check_spd)

    def fit(self: _LogsT, Y_train: ArrayLike) -> _LogsT:
        """Check the options, store the training matrices and their logarithms; self."""
        self._check_options()
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.logs_ = logm_spd(self.Y_train_)
        return self

    def project(self, Z: ArrayLike, floor: float = 1e-12) -> np.ndarray:
        r"""KRLS projection (Appendix G): eigenvalues below ``floor`` set to ``floor``.

        The floor is raised to ``1e-10 * max eigenvalue`` when that is larger, so that the
        result is numerically SPD (condition number at most 1e10).
        """
        return _clip_eigenvalues(Z, floor)


@register_output_space("spd")
class SPDSpace(_RGDOptions, _SPDLogs):
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
    by a trust radius (at most ``_MAX_RADIUS``, the log-condition number 1e12 the space
    holds: longer steps cannot end in it, and their exponential would overflow; starts are
    clipped into the space the same way).  Stops when :math:`\|\operatorname{grad} F\|_Y =
    2\|G\|_F` plus twice the error bound is :math:`\le` ``tol`` (so the exact gradient norm is
    :math:`\le` ``tol``; ``F`` with weights summing to one).  A point not certified after
    ``_FAST_ITER`` Newton steps continues with the robust method
    (:meth:`_SPDNewton.robust`: saddle-free Newton, LAPACK evaluations, Armijo line search on
    the upper bound of F) for the rest of its ``max_iter`` budget.  The decode is formed
    from the SVD of the frame, so it is always symmetric positive definite.  A point still
    not certified (or whose decode is not a point of the space, condition number above 1e12,
    or where LAPACK failed) goes to the robust path (:meth:`_robust`,
    :func:`._spd_robust.rgd`: Riemannian gradient descent with Armijo backtracking,
    L-BFGS-preconditioned, every evaluation by LAPACK in a re-whitened frame, iterates kept
    in the space) for up to ``20 * max_iter`` more evaluations.  ConvergenceWarning
    otherwise, reporting the largest ``grad_norm_`` above ``tol`` (naming ``tol`` alone when
    the gradient norm is within its rounding bound: the certifiable floor in float64; saying
    so when the rounding is not bounded at all or the iterate stopped at condition number
    1e12, a minimizer beyond what float64 holds).

    What is proved (``status_``).  A certified gradient norm proves stationarity, not
    optimality.  With every weight :math:`\ge 0` F is geodesically 2-strongly convex (the
    squared distance on a Hadamard manifold is), so a stationary point is the global
    minimizer, and the certified decode lies within geodesic distance ``grad_norm_ / 2`` of
    it: status "optimal".  With a negative weight F is not geodesically convex and may have
    several local minima (and saddle points): the decode is the best of several runs, its
    stationarity is certified, its optimality is not: status "stationary".  Starts
    (:meth:`_more_starts`): the BCH-corrected log-Euclidean mean for every point; for signed
    weights also the training matrix of smallest F (F at every training matrix is one
    matrix product with the pairwise distances, :meth:`pairwise_sq_distances`, computed once
    per fit when n (n - 1) / 2 d^3 <= ``_PAIRWISE_BUDGET`` and n <= ``_PAIRWISE_MAX_N``;
    above, the training matrix of smallest log-Euclidean objective) and that of largest
    weight, whenever their F is below the first run's result (the run from there then ends
    lower); where the first run is not certified, these two unconditionally and also the
    plain log-Euclidean means of the signed and of the positive weights.  The run of
    smallest F is kept (a certified one among those equal to rounding).  So F at the decode
    is at most F at every training matrix (when the pairwise distances are computed) and at
    the start, up to rounding.
    "uncertified": ``grad_norm_`` is above ``tol``; nothing is claimed.

    Negative-weight policy (:func:`~psdsos.structured.policy_weights`; docs, "Signed
    weights"): the SPD manifold with this metric is a Hadamard manifold, so with
    :math:`s = \sum_i\alpha_i > 0` F is coercive whatever :math:`\|\alpha\|_1`
    (:math:`F(Y) \ge s\, d^2(Y, Y_0) - C d(Y, Y_0) - C'` by the triangle inequality) and has a
    minimizer: ``weights="signed"`` decodes the signed weights normalized to sum one there
    (the objective of eq. 2; with a negative weight F may be non-convex, and the decoder
    proves stationarity only, see above).  Where :math:`\sum\alpha < 0` F is unbounded
    below (:math:`F(\gamma(t)) \le s t^2 + C t + C' \to -\infty` along any geodesic ray),
    and where :math:`\sum\alpha = 0` it has no minimizer in general: the positive part is
    decoded instead (a weighted Karcher mean, geodesically convex, so its certified decode
    is "optimal" for that problem; uniform weights if no weight is positive) with a
    :class:`~psdsos.structured.NoMinimizerWarning`, and ``signed_`` is False there.
    ``weights="positive"`` always uses the positive part.

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    max_iter : int, default=100
        Largest number of Newton iterations (trial steps) per test point and start.
    tol : float, default=1e-8
        Stopping threshold on the Riemannian gradient norm.

    Attributes
    ----------
    n_iter_ : ndarray of int, shape (n_test,)
        Set by ``decode`` (as the attributes below): iterations of the run kept.
    grad_norm_ : ndarray, shape (n_test,)
        Proved upper bound on the exact Riemannian gradient norm at each decode (the norm
        computed from the tracked eigenvectors plus twice the bound on its error, rounding
        included; inf where float64 does not bound the rounding); ``<= tol`` exactly where
        the decode is certified, and the figure the ConvergenceWarning reports.
    status_ : ndarray of str, shape (n_test,)
        "optimal" (certified, every decoded weight >= 0: the global minimizer to
        ``grad_norm_ / 2``), "stationary" (certified, some negative weight: a stationary
        point, the best of several runs, not proved optimal) or "uncertified"
        (``grad_norm_ > tol``).  It refers to the problem decoded: the positive part where
        ``signed_`` is False.
    objective_ : ndarray, shape (n_test,)
        F at each decode, weights normalized to sum one (computed; exact to its rounding
        bound, which is small where the decode is certified).
    n_starts_ : ndarray of int, shape (n_test,)
        Runs per test point (1 where every weight is >= 0).
    n_eigh_ : int
        LAPACK eigendecompositions of d x d matrices used (all test points).
    signed_ : ndarray of bool, shape (n_test,)
        True where the signed weights were decoded (eq. 2), False where the positive part
        was used.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import SPDSpace
    >>> Y = np.stack([np.diag([1.0, 2.0]), np.diag([4.0, 1.0]), np.diag([2.0, 8.0])])
    >>> space = SPDSpace().fit(Y)
    >>> P = space.decode(np.array([[0.5, 0.3, 0.2], [0.9, 0.4, -0.3]]))
    >>> space.status_.tolist()
    ['optimal', 'stationary']
    >>> bool(np.all(space.grad_norm_ <= space.tol))
    True
    """

    decode_methods = ("rgd",)
    symmetric_loss = True

    def __init__(self, *, weights: str = "signed", max_iter: int = 100,
                 tol: float = 1e-8) -> None:
        self.weights = weights
        self.max_iter = max_iter
        self.tol = tol

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Squared affine-invariant distances, shape (n,)."""
        return np.atleast_1d(affine_invariant_distance(Y_true, Y_pred)) ** 2

    # ---- the objective (public for tests and diagnostics) ---------------------------
    def objective(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        r"""F(Y) = sum_i w_i Delta(Y, Y_i) for each Y of a batch (weights used as given)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        return self._eval(Y, w)[0]

    def riemannian_gradient(self, Y: ArrayLike, w: ArrayLike) -> np.ndarray:
        r"""grad F(Y) = -2 Y^{1/2} G(Y) Y^{1/2} (weights used as given), shape (m, d, d)."""
        Y = _check_spd_stack(np.asarray(Y).reshape((-1,) + self.Y_train_.shape[1:]), "Y")
        w = check_alpha(w, len(self.Y_train_), "w")
        _, G, Yh = self._eval(Y, w)
        return -2.0 * Yh @ G @ Yh

    def _eval(self, Y, W):
        Yh, _, mw, mV = _congruence_eigh(Y, self.Y_train_, inverse=True)
        lm = np.log(np.maximum(mw, _TINY))
        F = np.einsum("an,anj->a", W, lm * lm)
        G = ((mV * (W[..., None] * lm)[..., None, :]) @ np.swapaxes(mV, -1, -2)).sum(axis=1)
        return F, 0.5 * (G + np.swapaxes(G, -1, -2)), Yh

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """Predictions of eq. 2 by Riemannian Newton, shape (n_test, d, d), SPD; the
        attributes (``status_``, ``grad_norm_``, ``objective_`` ...) say what is proved."""
        resolve_method(self, method)
        self._check_options()
        A = check_alpha(alpha, len(self.Y_train_))
        W, self.signed_ = policy_weights(A, self.weights)
        warn_no_minimizer(self, A, self.signed_)
        return self._newton(W)

    # ---- starts ---------------------------------------------------------------------
    def pairwise_sq_distances(self) -> np.ndarray | None:
        r"""Squared affine-invariant distances between the training matrices, (n, n).

        :math:`D_{ji} = \|\log(Y_j^{-1/2} Y_i Y_j^{-1/2})\|_F^2` (eq. 16), from the
        eigenvalues of :math:`e^{-L_j/2} Y_i e^{-L_j/2}` (:math:`L_j = \log Y_j`), computed
        once per fit and cached; None when n (n - 1) / 2 d^3 exceeds ``_PAIRWISE_BUDGET`` or n
        exceeds ``_PAIRWISE_MAX_N``.
        F at the training matrices is then ``D @ w`` (a start of the signed decoding).
        """
        n, d = self.Y_train_.shape[:2]
        cache = getattr(self, "_d2", None)
        if cache is not None and cache[0] is self.Y_train_:
            return cache[1]
        D = None
        if n <= _PAIRWISE_MAX_N and n * (n - 1) // 2 * d**3 <= _PAIRWISE_BUDGET:
            Rh = expm_sym(-0.5 * self.logs_)  # Y_j^{-1/2}
            D = np.zeros((n, n))
            for j in range(n - 1):
                S = Rh[j] @ self.Y_train_[j + 1:] @ Rh[j]
                lam = np.linalg.eigvalsh(0.5 * (S + np.swapaxes(S, -1, -2)))
                lg = np.log(np.maximum(lam, _TINY))
                D[j, j + 1:] = D[j + 1:, j] = np.einsum("ij,ij->i", lg, lg)
        self._d2 = (self.Y_train_, D)
        return D

    def _more_starts(self, W, first):
        r"""Further starts for the test points with a negative weight (F not geodesically
        convex), given the ``first`` runs (from the BCH-corrected log-Euclidean means).

        Candidates: the training matrix of smallest F and that of largest weight
        (:meth:`_training_candidates`), each kept only if its F is below
        that of the first run's result beyond the error bounds (a run from it then ends
        lower: every accepted step decreases F); where the first run is not certified, both
        unconditionally and also the plain log-Euclidean mean and that of the positive part
        of the weights.  Returns (test point of each start, logarithms of the starts).
        """
        n, shape = self.Y_train_.shape[0], self.Y_train_.shape[1:]
        signed = np.flatnonzero(np.any(W < 0, axis=1))
        Ws = W[signed]
        F1, eF1 = first.F[signed], first.errF[signed]
        with np.errstate(invalid="ignore"):
            redo = ~first.certified[signed] | ~np.isfinite(F1 + eF1)
            thr = np.where(redo, np.inf, F1 - eF1 - 1e-9 * np.maximum(1.0, np.abs(F1)))
        jbest, Fbest, jmax, Fmax = self._training_candidates(Ws)
        flat = self.logs_.reshape(n, -1)
        pos = np.maximum(Ws, 0.0)
        cands = [(self.logs_[jbest], Fbest < thr),
                 (self.logs_[jmax], (jmax != jbest) & (Fmax < thr)),
                 ((Ws @ flat).reshape(-1, *shape), redo),
                 (((pos / pos.sum(axis=1, keepdims=True)) @ flat).reshape(-1, *shape), redo)]
        owner = [signed[k] for _, k in cands]
        logs = [L[k] for L, k in cands]
        return np.concatenate(owner), np.concatenate(logs)

    def _training_candidates(self, Ws):
        r"""Per row of weights: (j_best, F(Y_j_best), j_max, F(Y_j_max)), j_max the training
        matrix of largest weight and j_best that of smallest F -- exactly, as ``D @ w``
        (:meth:`pairwise_sq_distances`), or, when D is not computed, that of smallest
        log-Euclidean objective :math:`\sum_i w_i \|\log Y_j - \log Y_i\|_F^2` (a
        matrix product), F then evaluated at both (LAPACK)."""
        r = np.arange(len(Ws))
        jmax = np.argmax(Ws, axis=1)
        D = self.pairwise_sq_distances()
        if D is not None:
            Ftr = Ws @ D
            jbest = np.argmin(Ftr, axis=1)
            return jbest, Ftr[r, jbest], jmax, Ftr[r, jmax]
        flat = self.logs_.reshape(len(self.logs_), -1)
        le = np.einsum("ij,ij->i", flat, flat)[None, :] - 2.0 * (Ws @ flat) @ flat.T
        jbest = np.argmin(le, axis=1)
        Fb, Fm = np.empty(len(Ws)), np.empty(len(Ws))
        for c in _chunks(r, self.Y_train_[0].size * len(self.Y_train_)):
            Fb[c] = self._eval(self.Y_train_[jbest[c]], Ws[c])[0]
            Fm[c] = self._eval(self.Y_train_[jmax[c]], Ws[c])[0]
        return jbest, Fb, jmax, Fm

    def _solve_rows(self, solver, W, owner, L0=None):
        """``solver.solve`` on the rows (test point ``owner[r]``, start ``L0[r]``, default
        the BCH-corrected log-Euclidean mean), batched by _SPD_BATCH; returns the
        :class:`_Solved` of all rows and a mask of the rows whose batch failed in LAPACK
        (not certified, F = inf)."""
        tol, max_iter = float(self.tol), int(self.max_iter)
        nr, shape = len(owner), self.Y_train_.shape[1:]
        res = _Solved(np.full((nr,) + shape, np.nan), np.full((nr,) + shape, np.nan),
                      np.zeros(nr, dtype=int), np.full(nr, np.inf), np.zeros(nr),
                      np.full(nr, np.inf), np.full(nr, np.inf), np.zeros(nr, dtype=bool))
        failed = np.zeros(nr, dtype=bool)
        for rows in _chunks(np.arange(nr), self.Y_train_[0].size * len(self.Y_train_),
                            _SPD_BATCH):
            try:
                sol = solver.solve(W[owner[rows]], tol, max_iter,
                                   L0=None if L0 is None else L0[rows])
            except (np.linalg.LinAlgError, FloatingPointError):
                # LAPACK failed inside the fast path (e.g. "Eigenvalues did not converge"
                # on a frame far from the data): these rows are not certified
                failed[rows] = True
                continue
            for f in _SOLVED_FIELDS:
                getattr(res, f)[rows] = getattr(sol, f)
        return res, failed

    @staticmethod
    def _choose(owner, F, errF, cert, c):
        """Row kept per test point: the first certified row (in start order) among those
        whose F is within the error bounds of the smallest F, else the first of those, else
        (no finite F) the first row."""
        ok = np.isfinite(F) & np.isfinite(errF)
        Fk = np.where(ok, F, np.inf)
        eF = np.where(ok, errF, 0.0)
        best = np.full(c, np.inf)
        np.minimum.at(best, owner, Fk)
        at_best = ok & (Fk == best[owner])
        eb = np.full(c, np.inf)
        np.minimum.at(eb, owner[at_best], eF[at_best])
        with np.errstate(invalid="ignore"):
            near = ok & (Fk <= best[owner] + eb[owner] + eF
                         + 1e-12 * np.maximum(1.0, np.abs(best[owner])))
        order = np.lexsort((np.arange(len(owner)), ~cert, ~near, owner))
        first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
        chosen = np.empty(c, dtype=int)
        chosen[owner[first]] = first
        return chosen

    def _newton(self, W):
        """Riemannian Newton (class docstring) from the BCH-corrected log-Euclidean means,
        then, for signed weights, from the starts of :meth:`_more_starts`; each run is
        continued by the robust method if not certified.  Per test point the run of smallest
        F is kept (:meth:`_choose`) and sent to the robust path (:meth:`_robust`) if not
        certified or not a point of the space."""
        tol, max_iter = float(self.tol), int(self.max_iter)
        solver = _SPDNewton(self.Y_train_, self.logs_)
        c = len(W)
        owner = np.arange(c)
        res, failed = self._solve_rows(solver, W, owner)
        if np.any(W < 0):
            own2, L2 = self._more_starts(W, res)
            if len(own2):
                res2, failed2 = self._solve_rows(solver, W, own2, L2)
                owner, failed = np.concatenate([owner, own2]), np.concatenate([failed, failed2])
                res = _Solved(*(np.concatenate([getattr(res, f), getattr(res2, f)])
                                for f in _SOLVED_FIELDS))
        pick = self._choose(owner, res.F, res.errF, res.certified & ~failed, c)
        self.n_starts_ = np.bincount(owner, minlength=c)
        out = res.Y[pick]
        n_iter, gnorm, err = res.n_iter[pick], res.grad_norm[pick], res.err[pick]
        F, failed = res.F[pick], failed[pick]
        out[failed] = np.nan
        gnorm[failed], err[failed] = np.inf, 0.0
        n_eigh = solver.n_eigh
        bad = failed | ~(gnorm + 2.0 * err <= tol)
        for t in np.flatnonzero(bad | self._not_in_space(out)):
            out[t], k, gnorm[t], err[t], F[t], ne = self._robust(W[t], out[t], tol, max_iter)
            n_iter[t] += k
            n_eigh += ne
        bound = gnorm + 2.0 * err
        bad = ~(bound <= tol)
        convex = np.all(W >= 0, axis=1)
        self.n_iter_, self.grad_norm_, self.n_eigh_ = n_iter, bound, n_eigh
        self.objective_ = F
        self.status_ = np.where(bad, "uncertified", np.where(convex, "optimal", "stationary"))
        notes = []
        unbounded = bad & ~np.isfinite(err)
        fin = bad & ~unbounded
        if fin.any():
            if np.all(gnorm[fin] <= 2.0 * err[fin]):
                notes.append(f"the rounding of float64 at the condition numbers of these "
                              f"matrices limits the certified gradient norm to about "
                              f"{float(np.max(2.0 * err[fin])):.3g}: increase tol")
            else:
                notes.append("increase max_iter or tol")
        if unbounded.any():
            notes.append(f"at {int(unbounded.sum())} of them float64 does not bound the "
                          f"rounding of the logarithms (matrices Y^-1/2 Y_i Y^-1/2 with "
                          f"condition numbers near 1e16; grad_norm_ = inf)")
        if bad.any():
            ev = np.linalg.eigvalsh(out[bad])
            edge = int(np.sum(ev[:, -1] > _EDGE_COND * ev[:, 0]))
            if edge:
                notes.append(f"{edge} of them stopped at the largest condition number the "
                              f"space holds (1e12)")
            if edge or unbounded.any():
                notes[-1] += (": the weights extrapolate far beyond the training outputs "
                               "and the minimizer is not representable; weights='positive' "
                               "or a larger lam keep decodes within range")
        advice = "; ".join(notes)
        _warn_not_converged(self, bound, tol, max_iter, advice,
                            measure="bound on the Riemannian gradient norm, grad_norm_")
        return out

    @staticmethod
    def _not_in_space(Y):
        """Per matrix: not finite, or not accepted by ``check_spd`` (batched eigvalsh)."""
        bad = ~np.all(np.isfinite(Y), axis=(1, 2))
        ok = np.flatnonzero(~bad)
        if ok.size:
            try:
                s = np.linalg.eigvalsh(Y[ok])
                bad[ok] = ~(s[:, 0] > SPD_TOL * np.abs(s).max(axis=1))
            except np.linalg.LinAlgError:
                bad[ok] = [not _spd_robust.in_space(y) for y in Y[ok]]
        return bad

    def _robust(self, w, Y_fast, tol, max_iter):
        r"""The robust path for one test point (:mod:`._spd_robust`): Riemannian gradient
        descent with Armijo backtracking in the whitened frame, from the best point so far
        (the fast path's decode if it is in the space, or the log-Euclidean mean -- capped
        at condition number 1e12 as in :class:`LogEuclideanSPDSpace` -- if lower; if neither
        is usable, the log-Euclidean mean of the positive part), for
        ``20 * max_iter`` evaluations (F decreases from the start, up to its rounding).

        Returns (Y, evaluations, gradient norm, error bound, F, LAPACK
        eigendecompositions).
        """
        idx = np.flatnonzero(w)
        A, wi = self.Y_train_[idx], w[idx]
        Lbar = np.einsum("m,mij->ij", wi, self.logs_[idx])
        mu, V = np.linalg.eigh(0.5 * (Lbar + Lbar.T))
        wp = np.maximum(w, 0.0)
        Lpos = np.einsum("m,mij->ij", wp / wp.sum(), self.logs_)
        cands = [Y_fast, spectral(np.exp(_spd_robust.clip_window(mu)), V), expm_sym(Lpos)]
        best, n_eval = None, 0
        for Y in cands:
            R = _spd_robust.frame_of(Y)
            if R is None:
                continue
            F, _, _, ok = _spd_robust.lapack_eval(A, wi, R)
            n_eval += 1
            if ok and (best is None or F < best[1]):
                best = (R, F)
            if best is not None and Y is cands[1]:
                break  # the positive-part mean only when neither other point is usable
        if best is None:  # no usable start (not expected): the identity, in the space
            best = (np.eye(A.shape[1]), None)
        R, k, gn, err, F = _spd_robust.rgd(A, wi, best[0], tol, 20 * max_iter)
        return _spd_robust.point_of(R), k, gn, err, F, (n_eval + k) * len(idx)

    def to_config(self) -> dict[str, Any]:
        return {"weights": self.weights, "max_iter": int(self.max_iter), "tol": float(self.tol)}
