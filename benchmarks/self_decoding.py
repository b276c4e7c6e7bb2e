"""Benchmark: SELF decoding (psdsos.structured), time per test point.

Measures, with one BLAS thread:

1. affine-invariant SPD decoding (weighted Karcher mean, manifold paper eq. 2 / Table 1),
   n_train = 1000 matrices of size 10 x 10, per test point: psdsos's Riemannian Newton
   (``SPDSpace.decode``) against ``pyriemann``'s ``mean_riemann`` (or, when pyriemann is not
   importable, a reference Karcher fixed point written here with ``numpy.linalg.eigh``, the
   same iteration), on three kinds of weights: the weights alpha(x) of a fitted
   ``SELFEstimator`` (signed, normalized to sum one), their normalized positive part, and
   uniform(0,1)^4 weights.  Fair terms:

   * every method gets only the training matrices of non-zero weight of each test point
     (what a user calling ``mean_riemann`` would pass; psdsos drops the others itself);
   * equal accuracy: both stop at Riemannian gradient norm ``2 ||sum_i w_i log(M^-1/2 Y_i
     M^-1/2)||_F <= tol``; psdsos certifies its returned point (gradient norm plus an error
     bound <= tol); pyriemann's criterion ``||J||_F <= tol / 2`` is checked at the iterate
     *before* its last update, so it returns points several times more accurate than tol:
     it is also timed with the loosest tol in {2, 5, 10, 20} x tol (chosen post hoc on these
     test points) whose results still all reach tol ("tuned").  Every result's gradient norm
     is recomputed after the fact with ``SPDSpace.riemannian_gradient`` (LAPACK ``eigh``);
   * one BLAS thread for both; the methods are timed alternately, ``--repeat`` times each,
     and the median is reported (the machine may be shared).

2. CVXPY decodings: the problem built once with ``cp.Parameter`` (DPP) and re-solved per test
   point by the library's decoder (``EuclideanSpace("simplex")`` and ``BuresSpace``,
   ``decode(method="cvxpy")``: ``psdsos.structured._common.solve_parametric``, i.e. CVXPY's
   parameter-to-data map applied as precomputed sparse matrices and a persistent Clarabel
   solver updated in place) against building and solving a fresh problem (data as
   constants) per test point through ``psdsos.solvers.solve_cvxpy``; both with CLARABEL
   and the same solver options (tol 1e-8).

Usage::

    python benchmarks/self_decoding.py                 # full sizes (a few minutes)
    python benchmarks/self_decoding.py --quick         # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import cvxpy as cp
import numpy as np
from threadpoolctl import threadpool_limits

from psdsos.solvers import solve_cvxpy
from psdsos.structured import BuresSpace, EuclideanSpace, SELFEstimator, SPDSpace

try:  # optional reference implementation
    try:
        from pyriemann.geometry.mean import mean_riemann
    except ImportError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from pyriemann.utils.mean import mean_riemann
    import pyriemann

    REFERENCE = f"pyriemann {pyriemann.__version__} mean_riemann"
except ImportError:
    mean_riemann = None
    REFERENCE = "reference Karcher fixed point (numpy eigh)"


def rand_spd(rng, n, d):
    A = rng.standard_normal((n, d, 2 * d)) / np.sqrt(2 * d)
    return A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)


def rgrad_norm(space, P, W):
    """Riemannian gradient norms ||grad F(P_t)||_{P_t} recomputed with LAPACK eigh."""
    out = []
    for p, w in zip(P, W, strict=True):
        G = space.riemannian_gradient(p, w)[0]
        wv, V = np.linalg.eigh(p)
        pih = (V / np.sqrt(wv)) @ V.T
        out.append(np.linalg.norm(pih @ G @ pih))
    return np.array(out)


def self_weights(n_train, d, n_test, rng):
    """SELF weights alpha(x) of a SELFEstimator fitted on a seeded SPD regression problem."""
    p = 3
    X = rng.uniform(-1, 1, (n_train + n_test, p))
    Bm = rng.standard_normal((p, d, d)) / np.sqrt(d)
    S = np.einsum("np,pij->nij", X, Bm)
    S = 0.5 * (S + np.swapaxes(S, 1, 2))
    w, V = np.linalg.eigh(S)
    Y = (V * np.exp(w)[:, None, :]) @ np.swapaxes(V, 1, 2)
    N = np.eye(d) + 0.15 * rng.standard_normal((n_train + n_test, d, d))
    Y = N @ Y @ np.swapaxes(N, 1, 2) + 1e-3 * np.eye(d)
    Y = 0.5 * (Y + np.swapaxes(Y, 1, 2))[:n_train]
    est = SELFEstimator(sigma=0.5, lam=1e-3, output="spd").fit(X[:n_train], Y)
    return Y, est.scores(X[n_train:])


def _spectral(X, fun):
    w, V = np.linalg.eigh(X)
    return (V * fun(w)[..., None, :]) @ np.swapaxes(V, -1, -2)


def karcher_reference(Y, *, tol, maxiter, sample_weight):
    """Weighted Karcher mean by the fixed point M <- M^1/2 exp(nu J) M^1/2,
    J = sum_i w_i log(M^-1/2 Y_i M^-1/2), with the step rule of Congedo et al. (2015), as in
    pyriemann's ``mean_riemann``; stops when ||J||_F <= tol (checked before the update)."""
    w = sample_weight / sample_weight.sum()
    M = np.einsum("i,ijk->jk", w, Y)
    nu, tau = 1.0, np.finfo(np.float64).max
    for _ in range(maxiter):
        s, U = np.linalg.eigh(M)
        M12, Mm12 = (U * np.sqrt(s)) @ U.T, (U / np.sqrt(s)) @ U.T
        J = np.einsum("i,ijk->jk", w, _spectral(Mm12 @ Y @ Mm12, np.log))
        M = M12 @ _spectral(nu * J, np.exp) @ M12
        crit = np.linalg.norm(J)
        h = nu * crit
        if h < tau:
            nu, tau = 0.95 * nu, h
        else:
            nu *= 0.5
        if crit <= tol or nu <= tol:
            break
    return M


def time_ours(space, W):
    t0 = time.perf_counter()
    P = space.decode(W)
    t = (time.perf_counter() - t0) / len(W)
    return P, t, float(space.n_iter_.mean()), space.n_eigh_ / len(W)


def time_reference(Y, W, tol):
    """The reference per test point on its rows of non-zero weight, stopping at
    ||J||_F <= tol / 2 (gradient norm <= tol)."""
    mean = mean_riemann if mean_riemann is not None else karcher_reference
    rows = [np.flatnonzero(w) for w in W]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = np.array([mean(Y[i], tol=tol / 2, maxiter=500, sample_weight=w[i])
                      for i, w in zip(rows, W, strict=True)])
    return P, (time.perf_counter() - t0) / len(W)


def reference_iterations(Y, W, tol):
    """Mean number of iterations of the reference (logm passes over its matrices), untimed."""
    if mean_riemann is None:
        import sys

        mod, name, fun = sys.modules[__name__], "_spectral", _spectral
    else:
        import sys

        mod, name = sys.modules[mean_riemann.__module__], "logm"
        fun = mod.logm
    count = [0]

    def counting(X, *args):
        if mean_riemann is not None or args[0] is np.log:
            count[0] += 1
        return fun(X, *args)

    setattr(mod, name, counting)
    try:
        time_reference(Y, W, tol)
    finally:
        setattr(mod, name, fun)
    return count[0] / len(W)


def median_times(runs, repeat):
    """Run each of ``runs`` (callables returning (result, time)) ``repeat`` times, alternating;
    returns the first result of each and the median time."""
    res, times = [None] * len(runs), [[] for _ in runs]
    for _ in range(repeat):
        for k, run in enumerate(runs):
            out = run()
            if res[k] is None:
                res[k] = out
            times[k].append(out[1])
    return res, [float(np.median(t)) for t in times]


def bench_spd(n_train, d, n_test, tol, rng, repeat):
    """Rows (weights, method, ms / point, grad norm reached, iterations, eigh / point) and
    ratios (weights, reference / psdsos time, max |difference| of the decoded matrices)."""
    rows, ratios = [], []
    Y, alpha = self_weights(n_train, d, n_test, rng)
    s = alpha.sum(axis=1, keepdims=True)
    assert np.all(s > 0), "SELF weights with a positive sum"
    Ws = alpha / s  # signed, sum one: decoded as they are (a Hadamard manifold)
    Wp = np.maximum(alpha, 0.0)
    Wp /= Wp.sum(axis=1, keepdims=True)
    A = rng.uniform(0, 1, (n_test, n_train)) ** 4  # concentrated non-negative weights
    Wu = A / A.sum(axis=1, keepdims=True)
    kinds = (("SELF alpha(x), signed (sum one)", Ws, "signed"),
             ("SELF alpha(x), positive part", Wp, "positive"),
             ("uniform(0,1)^4, normalized", Wu, "positive"))
    for label, W, policy in kinds:
        space = SPDSpace(weights=policy, tol=tol, max_iter=500).fit(Y)
        space.decode(W[:1])  # warm-up
        nz = np.count_nonzero(W, axis=1).mean()
        (ours, ref), (t, tr) = median_times(
            [lambda W=W, space=space: time_ours(space, W)[:2],
             lambda W=W: time_reference(Y, W, tol)], repeat)
        P, Pr = ours[0], ref[0]
        _, _, it, ne = time_ours(space, W)
        g = rgrad_norm(space, P, W).max()
        rows.append((label, f"psdsos Newton (mean {nz:.0f} rows of non-zero weight)", t, g,
                     it, ne))
        itr = reference_iterations(Y, W, tol)  # each: eigh of the rows of non-zero weight
        gr = rgrad_norm(space, Pr, W).max()
        rows.append((label, REFERENCE, tr, gr, itr, itr * nz))
        diff = np.abs(P - Pr).max()
        ratios.append((label, tr / t, diff, g <= tol and gr <= tol))
        for k in (20, 10, 5, 2):  # the loosest reference tol that still reaches tol
            Pk, tk = time_reference(Y, W, k * tol)
            gk = rgrad_norm(space, Pk, W).max()
            if gk <= tol:
                (_, _), (t, tk) = median_times(
                    [lambda W=W, space=space: time_ours(space, W)[:2],
                     lambda W=W, k=k: time_reference(Y, W, k * tol)], repeat)
                itk = reference_iterations(Y, W, k * tol)
                rows.append((label, f"{REFERENCE}, tol x {k} (tuned)", tk, gk, itk, itk * nz))
                ratios.append((f"{label}, reference tol x {k} (tuned post hoc)", tk / t,
                               np.abs(P - Pk).max(), g <= tol))
                break
    return rows, ratios


def bench_cvxpy(kind, n_test, rng, quick):
    if kind == "simplex":
        k, n = (10, 50) if quick else (50, 500)
        Y = rng.dirichlet(np.ones(k), size=n)
        space = EuclideanSpace("simplex", tol=1e-8, center=False).fit(Y)
        A = rng.normal(size=(n_test, n)) / n

        def rebuild(a):
            y = cp.Variable(k)
            m = a @ Y
            prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, cp.sum(y) == 1])
            solve_cvxpy(prob, solver="CLARABEL", tol=1e-8)  # the options of the DPP path
            return y.value
    else:
        n, d = (4, 2) if quick else (20, 3)
        Y = rand_spd(rng, n, d)
        space = BuresSpace(solver_tol=1e-8).fit(Y)
        A = rng.uniform(0, 1, (n_test, n))

        def rebuild(a):
            w = a / a.sum()
            Yv = cp.Variable((d, d), symmetric=True)
            Xs = [cp.Variable((d, d)) for _ in range(n)]
            cons = [Yv >> 0] + [cp.bmat([[Yv, X], [X.T, C]]) >> 0 for X, C in zip(Xs, Y,
                                                                              strict=True)]
            obj = cp.trace(Yv) - 2 * sum(w[i] * cp.trace(Xs[i]) for i in range(n))
            solve_cvxpy(cp.Problem(cp.Minimize(obj), cons), solver="CLARABEL", tol=1e-8)
            return Yv.value

    space.decode(A[:1], method="cvxpy")  # the one-time compilation, reported apart
    t0 = time.perf_counter()
    space._problem = None
    space.decode(A[:1], method="cvxpy")
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    P = space.decode(A, method="cvxpy")
    t_dpp = (time.perf_counter() - t0) / n_test
    t0 = time.perf_counter()
    R = [rebuild(a) for a in A]
    t_re = (time.perf_counter() - t0) / n_test
    diff = max(np.abs(np.asarray(r) - p.reshape(np.shape(r))).max() for r, p in zip(R, P,
                                                                                     strict=True))
    return t_first, t_dpp, t_re, diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/self_decoding.md")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timings per method, alternating (default 3, 1 with --quick)")
    ap.add_argument("--spd-only", action="store_true", help="skip the CVXPY section")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    rng = np.random.default_rng(0)
    n_train, d, n_test = (100, 4, 4) if args.quick else (1000, 10, 50)
    tol = 1e-8
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread, load average {load:.2f} at start; numpy {np.__version__}, "
        f"cvxpy {cp.__version__}; reference: {REFERENCE}",
        "",
        f"## SPD affine-invariant decoding: n_train = {n_train}, {d} x {d}, {n_test} test "
        f"points, Riemannian gradient norm <= {tol:g}",
        "",
        f"Each method gets the rows of non-zero weight only; median of {repeat} alternating "
        "timings; gradient norms recomputed with LAPACK.",
        "",
        "| weights | method | ms / test point | max Riemannian grad norm reached "
        "| mean iterations | LAPACK eigh / test point |",
        "|---|---|---|---|---|---|",
    ]
    with threadpool_limits(1):
        rows, ratios = bench_spd(n_train, d, n_test, tol, rng, repeat)
        for wl, name, t, g, it, ne in rows:
            lines.append(f"| {wl} | {name} | {1e3 * t:.1f} | {g:.2g} | {it:.1f} | {ne:.0f} |")
        lines.append("")
        for wl, r, diff, ok in ratios:
            lines.append(f"reference / psdsos time ratio, {wl}: {r:.2f} (max |difference| of "
                         f"the decoded matrices {diff:.1g}"
                         f"{'' if ok else '; NOT both at the gradient norm tol'})")
        if args.spd_only:
            lines.append("")
            text = "\n".join(lines)
            print(text)
            _save(args.out, text)
            return
        lines += [
            "",
            "## CVXPY decoding: DPP re-solve vs rebuilding the problem per test point",
            "",
            "| problem | first solve incl. compilation (s) | DPP re-solve ms / point "
            "| rebuild + solve ms / point | rebuild / DPP | max |difference| |",
            "|---|---|---|---|---|---|",
        ]
        n_cv = 5 if args.quick else 30
        for kind in ("simplex", "bures"):
            t_first, t_dpp, t_re, diff = bench_cvxpy(kind, n_cv, rng, args.quick)
            label = ("simplex projection (squared loss)" if kind == "simplex"
                     else "Bures-Wasserstein barycenter SDP")
            lines.append(f"| {label} | {t_first:.3f} | {1e3 * t_dpp:.1f} | {1e3 * t_re:.1f} "
                         f"| {t_re / t_dpp:.2f} | {diff:.1g} |")
    text = "\n".join(lines)
    print(text)
    _save(args.out, text)


def _save(out, text):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
