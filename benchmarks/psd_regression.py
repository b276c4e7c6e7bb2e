"""Benchmark: PSD-valued regression, dual solver vs primal SDP (SCS, Clarabel).

Measures in one run, with one BLAS thread everywhere (threadpoolctl):

1. time to reach the optimal objective J* to 1e-6 relative, for the dual solver and the
   primal through CVXPY with SCS and with Clarabel, n in {12, 50, 100, 200}, d = 2,
   lam1 = 0, lam2 = 1e-4 (exponential kernel, sigma = 0.1, noisy geodesic data).  Each solver
   runs at a sequence of tolerances and the first run within 1e-6 of J* is reported
   (wall time of the whole fit, features and CVXPY compilation included);
   J* comes from Clarabel at tol 1e-10 where Clarabel fits in memory and time (n <= 50),
   otherwise from the dual solver at tol 1e-11 (its duality gap certifies it);
2. time per dual iteration against one ``numpy.linalg.eigh`` of the same size (n d);
3. Nystrom scaling: r = 50, lam2 = 1e-3, n up to 10,000.

Usage::

    python benchmarks/psd_regression.py            # full run (several minutes)
    python benchmarks/psd_regression.py --quick    # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos import PSDRegressor
from psdsos.datasets import make_bures_geodesic
from psdsos.features import ExactFeatures
from psdsos.kernels import get_kernel
from psdsos.problems import PSDLeastSquares
from psdsos.solvers import solve_dual


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, n))
    _, M = make_bures_geodesic(t=t, random_state=seed)
    E = 0.02 * rng.standard_normal(M.shape)
    return t[:, None], M + 0.5 * (E + E.transpose(0, 2, 1))


def fit(n, X, M, **kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PSDRegressor(kernel="exponential", sigma=0.1, **kw).fit(X, M)
    return m, time.perf_counter() - t0


def time_to_accuracy(X, M, ref, tols, target, **kw):
    """First tolerance whose objective is within `target` of ref: (time, tol, rel err, iters)."""
    for tol in tols:
        m, t = fit(len(X), X, M, tol=tol, **kw)
        rel = abs(m.objective_ - ref) / abs(ref)
        if rel <= target:
            return t, tol, rel, m.n_iter_
    return float("nan"), tols[-1], rel, m.n_iter_


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/psd_regression.md")
    args = ap.parse_args(argv)
    sizes = [8, 12] if args.quick else [12, 50, 100, 200]
    nys = [200, 500] if args.quick else [1000, 3000, 10000]
    clarabel_max = 12 if args.quick else 50
    lam1, lam2, target = 0.0, 1e-4, 1e-6
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}",
        "",
        f"## Time to J* within {target:g} (relative), d = 2, lam1 = {lam1}, lam2 = {lam2}",
        "",
        "| n | reference | dual s (iters) | SCS s (eps) | Clarabel s | SCS / dual "
        "| Clarabel / dual |",
        "|---|---|---|---|---|---|---|",
    ]
    with threadpool_limits(1):
        for n in sizes:
            X, M = data(n)
            if n <= clarabel_max:
                mref, _ = fit(n, X, M, lam1=lam1, lam2=lam2, solver="primal",
                              primal_solver="CLARABEL", tol=1e-10)
                refname = "Clarabel 1e-10"
            else:
                mref, _ = fit(n, X, M, lam1=lam1, lam2=lam2, tol=1e-11, max_iter=20000)
                refname = f"dual 1e-11 (gap {mref.dual_gap_:.0e})"
            ref = mref.objective_
            td, told, _, itd = time_to_accuracy(X, M, ref, [1e-6, 1e-7, 1e-8, 1e-9], target,
                                                lam1=lam1, lam2=lam2)
            ts, tols, _, _ = time_to_accuracy(X, M, ref, [1e-4, 1e-5, 1e-6, 1e-7], target,
                                              lam1=lam1, lam2=lam2, solver="primal",
                                              primal_solver="SCS")
            if n <= clarabel_max:
                tc, _, _, _ = time_to_accuracy(X, M, ref, [1e-6, 1e-8, 1e-10], target,
                                               lam1=lam1, lam2=lam2, solver="primal",
                                               primal_solver="CLARABEL")
                cl, clr = f"{tc:.2f}", f"{tc / td:.1f}x"
            else:
                cl, clr = "n/a (dense KKT of size (nd)^2/2)", "-"
            lines.append(f"| {n} | {refname} | {td:.3f} ({itd}) | {ts:.2f} ({tols:g}) | {cl} "
                         f"| {ts / td:.1f}x | {clr} |")
            print(lines[-1], flush=True)

        lines += ["", "## Time per dual iteration vs one eigh of size n d (d = 2)", "",
                  "Solver only (features built before): `solve_dual` on the PSD least-squares "
                  "problem, tol 1e-8; per iteration = (total - set-up) / iterations, set-up = "
                  "constants and the preconditioner's eigendecomposition of K_Phi o K_Phi.",
                  "",
                  "| n | lam1 | iters | set-up ms | s / iter | eigh s | ratio | "
                  "ratio incl. set-up |",
                  "|---|---|---|---|---|---|---|---|"]
        rng = np.random.default_rng(1)
        for n in sizes:
            X, M = data(n)
            Phi = ExactFeatures(get_kernel("exponential", 0.1)).fit(X).transform(X)
            S = rng.standard_normal((2 * n, 2 * n))
            S = S + S.T
            reps = 20
            np.linalg.eigh(S)
            t0 = time.perf_counter()
            for _ in range(reps):
                np.linalg.eigh(S)
            te = (time.perf_counter() - t0) / reps
            for l1 in [0.0, 1e-4]:
                res = solve_dual(PSDLeastSquares(Phi, M, l1, lam2), tol=1e-8, max_iter=20000)
                per = (res.time - res.setup_time) / res.n_iter
                lines.append(f"| {n} | {l1:g} | {res.n_iter} | {res.setup_time * 1e3:.1f} | "
                             f"{per * 1e3:.2f} ms | {te * 1e3:.2f} ms | {per / te:.2f} | "
                             f"{res.time / res.n_iter / te:.2f} |")
                print(lines[-1], flush=True)

        lines += ["", "## Nystrom scaling, r = 50, lam2 = 1e-3, lam1 = 0, Gaussian sigma = 0.2",
                  "", "| n | iters | fit s | rel. gap |", "|---|---|---|---|"]
        for n in nys:
            X, M = data(n)
            t0 = time.perf_counter()
            m = PSDRegressor(kernel="gaussian", sigma=0.2, lam2=1e-3, n_landmarks=50,
                             random_state=0, tol=1e-7).fit(X, M)
            t = time.perf_counter() - t0
            lines.append(f"| {n} | {m.n_iter_} | {t:.2f} | {m.dual_gap_:.1e} |")
            print(lines[-1], flush=True)

    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
