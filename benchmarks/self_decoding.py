"""Benchmark: SELF decoding (psdsos.structured), time per test point.

Measures, with one BLAS thread:

1. affine-invariant SPD decoding (weighted Karcher mean, manifold paper eq. 2 / Table 1),
   n_train = 1000 matrices of size 10 x 10, non-negative normalized weights: psdsos's batched
   Riemannian gradient descent (``SPDSpace.decode`` on all test points at once), the same
   RGD called one test point at a time, and ``pyriemann``'s ``mean_riemann`` per test point
   when pyriemann is importable (the column is skipped with a note otherwise).  All stop at
   the same Riemannian gradient norm (pyriemann's criterion ||sum_i w_i log(M^-1/2 C_i
   M^-1/2)||_F is half of it), and the gradient norm reached is recomputed for every result
   with ``SPDSpace.riemannian_gradient``;
2. CVXPY decodings: the problem built once with ``cp.Parameter`` (DPP) and re-solved per test
   point (what ``EuclideanSpace("simplex")`` and ``BuresSpace`` do) against building and
   solving a fresh problem (data as constants) per test point.

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

from psdsos.structured import BuresSpace, EuclideanSpace, SPDSpace

try:  # optional reference implementation
    try:
        from pyriemann.geometry.mean import mean_riemann
    except ImportError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from pyriemann.utils.mean import mean_riemann
except ImportError:
    mean_riemann = None


def rand_spd(rng, n, d):
    A = rng.standard_normal((n, d, 2 * d)) / np.sqrt(2 * d)
    return A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)


def rgrad_norm(space, P, W):
    out = []
    for p, w in zip(P, W, strict=True):
        G = space.riemannian_gradient(p, w)[0]
        wv, V = np.linalg.eigh(p)
        pih = (V / np.sqrt(wv)) @ V.T
        out.append(np.linalg.norm(pih @ G @ pih))
    return np.array(out)


def bench_spd(n_train, d, n_test, tol, rng):
    Y = rand_spd(rng, n_train, d)
    A = rng.uniform(0, 1, (n_test, n_train)) ** 4  # concentrated, SELF-like weights
    W = A / A.sum(axis=1, keepdims=True)
    space = SPDSpace(weights="positive", tol=tol, max_iter=500).fit(Y)
    t0 = time.perf_counter()
    P_batch = space.decode(W)
    t_batch = (time.perf_counter() - t0) / n_test
    iters = float(space.n_iter_.mean())
    t0 = time.perf_counter()
    P_loop = np.concatenate([space.decode(W[i : i + 1]) for i in range(n_test)])
    t_loop = (time.perf_counter() - t0) / n_test
    rows = [("psdsos batched RGD", t_batch, rgrad_norm(space, P_batch, W).max(), iters),
            ("psdsos RGD, one point per call", t_loop, rgrad_norm(space, P_loop, W).max(),
             iters)]
    note = None
    if mean_riemann is not None:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            P_pr = np.array([mean_riemann(Y, tol=tol / 2, maxiter=500, sample_weight=w)
                             for w in W])
        t_pr = (time.perf_counter() - t0) / n_test
        rows.append(("pyriemann mean_riemann", t_pr, rgrad_norm(space, P_pr, W).max(),
                     float("nan")))
    else:
        note = "pyriemann is not importable: its column is skipped"
    return rows, note


def bench_cvxpy(kind, n_test, rng, quick):
    if kind == "simplex":
        k, n = (10, 50) if quick else (50, 500)
        Y = rng.dirichlet(np.ones(k), size=n)
        space = EuclideanSpace("simplex", tol=1e-8).fit(Y)
        A = rng.normal(size=(n_test, n)) / n

        def rebuild(a):
            y = cp.Variable(k)
            m = a @ Y
            prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, cp.sum(y) == 1])
            prob.solve(solver="CLARABEL")
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
            cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
            return Yv.value

    space.decode(A[:1])  # the one-time compilation, reported apart
    t0 = time.perf_counter()
    space._problem = None
    space.decode(A[:1])
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    P = space.decode(A)
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
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n_train, d, n_test = (100, 4, 4) if args.quick else (1000, 10, 50)
    tol = 1e-8
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}, cvxpy {cp.__version__}",
        "",
        f"## SPD affine-invariant decoding: n_train = {n_train}, {d} x {d}, {n_test} test "
        f"points, Riemannian gradient norm <= {tol:g}",
        "",
        "| method | ms / test point | max Riemannian grad norm reached | mean RGD iterations |",
        "|---|---|---|---|",
    ]
    with threadpool_limits(1):
        rows, note = bench_spd(n_train, d, n_test, tol, rng)
        for name, t, g, it in rows:
            lines.append(f"| {name} | {1e3 * t:.1f} | {g:.2g} | {it:.1f} |")
        if note:
            lines += ["", f"note: {note}"]
        else:
            ratio = rows[2][1] / rows[0][1]
            lines += ["", f"pyriemann / psdsos batched time ratio: {ratio:.2f}"]
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
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
