r"""The robust path of the affine-invariant SPD decoder: Riemannian gradient descent with
Armijo backtracking, every evaluation by LAPACK in a whitened frame.

Used by :class:`~psdsos.structured.spaces.spd.SPDSpace` for the test points that the fast
Newton path (:mod:`psdsos.structured.spaces._spd_newton`) does not certify: a gradient norm
above ``tol``, a decode that is not a point of the space, or a LAPACK failure.  It is slow
(linear convergence) but needs nothing beyond a descent direction: with signed weights
:math:`F(Y) = \sum_i w_i d^2(Y, Y_i)` is not geodesically convex, and where Newton's model
fails, the negative gradient still decreases F.

Frame: :math:`Y^{-1} = R^\top R`; the metric is congruence-invariant, so with
:math:`S_i = R Y_i R^\top` (eigendecomposed by LAPACK),
:math:`F = \sum_i w_i \|\log S_i\|_F^2`, :math:`G = \sum_i w_i \log S_i` and
:math:`\|\operatorname{grad} F\|_Y = 2\|G\|_F`.  The step along :math:`-\operatorname{grad}
F` by the exponential map (eq. 15) is :math:`Y(t) = R^{-1} e^{2tG} R^{-\top}`, i.e.
:math:`R \leftarrow e^{-tG} R`: the frame is re-whitened at every step, so the matrices
:math:`S_i` have the conditioning of the data relative to the iterate, not that of Y.
"""

from __future__ import annotations

import numpy as np

from psdsos.geometry._checks import SPD_TOL

_EPS = np.finfo(np.float64).eps
#: Armijo constant and the smallest step tried.
_ARMIJO = 1e-4
_MIN_STEP = 1e-14
#: Largest step (in units of the gradient) tried after repeated full acceptances.
_MAX_STEP = 1e6


#: Largest spread of log-eigenvalues of a decode: condition number 1 / SPD_TOL (with a
#: margin of 1e-3 for the rounding of exp and eigh), what ``check_spd`` accepts.
LOG_COND = float(np.log(1.0 / SPD_TOL)) - 1e-3


def clip_window(mu, width=LOG_COND):
    r"""The values ``mu`` clipped to the window [c, c + width] that minimizes
    :math:`\phi(c) = \sum_j (\mu_j - \operatorname{clip}(\mu_j, c, c + w))^2` (the Euclidean
    projection of ``mu`` onto the vectors of spread at most ``width``: the union over c of
    the boxes :math:`[c, c + w]^d`).  :math:`\phi` is convex and quadratic between the
    breakpoints :math:`\mu_j` and :math:`\mu_j - w`; on each piece its stationary point is
    the mean of :math:`\mu_j` (below the window) and :math:`\mu_j - w` (above), clipped to
    the piece: the best of these is exact."""
    mu = np.asarray(mu, dtype=np.float64)
    if mu.max() - mu.min() <= width:
        return mu.copy()
    br = np.unique(np.concatenate([mu, mu - width]))
    best, best_c = np.inf, mu.min()
    for lo, hi in zip(br[:-1], br[1:], strict=True):
        mid = 0.5 * (lo + hi)
        below, above = mu < mid, mu > mid + width
        cnt = below.sum() + above.sum()
        c = (mu[below].sum() + (mu[above] - width).sum()) / cnt if cnt else mid
        c = min(max(c, lo), hi)
        ph = float(np.sum((mu - np.clip(mu, c, c + width)) ** 2))
        if ph < best:
            best, best_c = ph, c
    return np.clip(mu, best_c, best_c + width)


def lapack_eval(A, w, R):
    r"""F, G and the bounds on the errors of :math:`\|G\|_F` and F at the frame R (one test
    point).

    ``A``: training matrices (m, d, d) with weights ``w`` (m,).  Returns (F, G, (err, errF),
    ok); ``ok`` is False when an :math:`S_i` has a non-positive computed eigenvalue (the
    frame is beyond the float range of the data) -- then F = inf.  ``err`` is the rounding
    bound :math:`\sum_i |w_i| e_i`, :math:`e_i = q_i / (1 - q_i)`,
    :math:`q_i = \varepsilon\lambda_{\max}(S_i)/\lambda_{\min}(S_i)` (LAPACK's eigenvalue
    error :math:`\varepsilon\|S_i\|_2`, through the derivative :math:`1/\lambda` of the
    logarithm; the bound of the Newton path, :meth:`_SPDNewton.rounding`, found 20-80 times
    the actual error against 40-digit arithmetic), and ``errF``
    :math:`= \sum_i |w_i| (2\|\log S_i\|_F e_i + e_i^2)`.
    """
    S = R @ A @ R.T
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    try:
        lam, V = np.linalg.eigh(S)
    except np.linalg.LinAlgError:
        return np.inf, None, (np.inf, np.inf), False
    lmin = lam.min(axis=1)
    if not (np.all(np.isfinite(lam)) and np.all(lmin > 0)):
        return np.inf, None, (np.inf, np.inf), False
    lg = np.log(lam)
    F = float(w @ np.einsum("ij,ij->i", lg, lg))
    G = np.einsum("m,mij,mj,mkj->ik", w, V, lg, V)
    G = 0.5 * (G + G.T)
    q = _EPS * lam.max(axis=1) / lmin
    e = np.where(q < 0.5, q / (1.0 - q), np.inf)
    aw = np.abs(w)
    err = float(aw @ e)
    errF = float(aw @ (2.0 * np.sqrt(np.einsum("ij,ij->i", lg, lg)) * e + e * e))
    return F, G, (err, errF), True


def frame_of(Y):
    """Symmetric frame R = Y^{-1/2} of an SPD matrix (None if Y is not numerically SPD)."""
    if not np.all(np.isfinite(Y)):
        return None
    try:
        s, U = np.linalg.eigh(0.5 * (Y + Y.T))
    except np.linalg.LinAlgError:
        return None
    if not s.min() > SPD_TOL * np.abs(s).max():
        return None
    return (U * s ** -0.5) @ U.T


def point_of(R):
    """Y = R^{-1} R^{-T} in spectral form (SVD of R): symmetric, positive eigenvalues."""
    _, sv, Vt = np.linalg.svd(R)
    return (Vt.T * sv ** -2.0) @ Vt


def in_space(Y):
    """Y is a point of the space: finite, and accepted by ``check_spd`` (eigenvalues of
    ``eigvalsh`` above 1e-12 times the largest)."""
    if not np.all(np.isfinite(Y)):
        return False
    try:
        s = np.linalg.eigvalsh(0.5 * (Y + Y.T))
    except np.linalg.LinAlgError:
        return False
    return bool(s.min() > SPD_TOL * np.abs(s).max())


def _frame_ok(R):
    """The point of the frame R is in the space with a margin: condition number of
    Y = R^{-1} R^{-T} (the squared singular-value ratio of R) at most exp(LOG_COND)."""
    if not np.all(np.isfinite(R)):
        return False
    sv = np.linalg.svd(R, compute_uv=False)
    return bool(np.all(np.isfinite(sv)) and sv.min() > 0
                and 2.0 * (np.log(sv.max()) - np.log(sv.min())) <= LOG_COND)


def rgd(A, w, R, tol, max_iter, memory=10):
    r"""Riemannian gradient descent with Armijo backtracking from the frame R, its
    directions preconditioned by L-BFGS.

    In frame coordinates (:math:`Z = R \xi R^\top` for a tangent vector :math:`\xi` at Y)
    the gradient is :math:`g = -2G`, the step along a direction p is
    :math:`R \leftarrow e^{-tp/2} R` (the point :math:`\operatorname{Exp}_Y(t\xi_p)`, eq. 15)
    and parallel transport along that geodesic is the identity on frame coordinates
    (:math:`E \xi E^\top`, :math:`E = Y^{1/2} e^{Z/2} Y^{-1/2}`, seen from the new frame).
    So the L-BFGS two-loop recursion on the last ``memory`` pairs (s, y) (s the step, y the
    change of g; a pair is kept only if :math:`\langle s, y\rangle > 0`) is Riemannian
    L-BFGS with parallel transport; where its direction is not a descent direction, the
    negative gradient is used (plain RGD).  The step t = 1 is halved until the Armijo
    condition :math:`F(t) \le F + 10^{-4}\, t \langle g, p\rangle` holds.  Near a minimizer
    of ill-conditioned data the decrease of F falls below its rounding, so a trial point is
    also accepted when F has not increased beyond its error bound and the gradient norm has
    decreased.  A trial point outside the space (condition number above exp(LOG_COND) <
    1 / SPD_TOL, or eigenvalues lost to rounding) is rejected, so the iterates stay in the
    space.  Stops when certified (``gn + 2 err <= tol``), at the rounding floor
    (``gn <= 2 err``), when no step is accepted, or after ``max_iter`` evaluations.

    Returns (R, evaluations, gradient norm, its error bound, F).
    """
    F, G, (err, errF), ok = lapack_eval(A, w, R)
    if not ok:
        return R, 1, np.inf, np.inf, np.inf
    it, pairs = 1, []
    g = -2.0 * G
    gn = float(np.linalg.norm(g))
    while it < max_iter and not gn + 2.0 * err <= tol and gn > 2.0 * err:
        p = _two_loop(g, pairs)
        slope = float(np.sum(g * p))
        if not slope < -1e-12 * gn * float(np.linalg.norm(p)):
            p, pairs = -g, []
            slope = -gn * gn
        lamP, UP = np.linalg.eigh(p)
        t = 1.0 if pairs else min(1.0, 1.0 / max(gn, 1e-300))  # first RGD step: ||t p|| <= 1
        accepted = False
        while it < max_iter and t >= _MIN_STEP:
            with np.errstate(over="ignore", invalid="ignore"):  # checked by _frame_ok
                Rn = ((UP * np.exp(-0.5 * t * lamP)) @ UP.T) @ R
            it += 1
            if _frame_ok(Rn):
                Fn, Gn, (errn, errFn), okn = lapack_eval(A, w, Rn)
                gnn = 2.0 * float(np.linalg.norm(Gn)) if okn else np.inf
                if okn and (Fn <= F + _ARMIJO * t * slope
                            or (Fn <= F + errF + errFn and gnn < gn)):
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            if pairs:  # retry from the plain gradient direction
                pairs = []
                continue
            break
        gnew = -2.0 * Gn
        sk, yk = t * p, gnew - g
        sy = float(np.sum(sk * yk))
        if sy > 1e-12 * float(np.linalg.norm(sk)) * float(np.linalg.norm(yk)):
            pairs = (pairs + [(sk, yk, 1.0 / sy)])[-memory:]
        R, F, g, err, errF, gn = Rn, Fn, gnew, errn, errFn, gnn
    return R, it, gn, err, F


def _two_loop(g, pairs):
    """-H g by the L-BFGS two-loop recursion (H0 = <s, y> / <y, y> of the last pair)."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(np.sum(s * q))
        q -= a * y
        alphas.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(np.sum(s * y)) / float(np.sum(y * y))
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        b = rho * float(np.sum(y * q))
        q += (a - b) * s
    return -q
