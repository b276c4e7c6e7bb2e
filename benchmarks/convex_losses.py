"""ConvexRegressor with other losses: dual (proximal, warm started by reweighted least
squares) against the CVXPY primal (Clarabel), same data, same tolerance.

Data of eq. 30 (a = 1, d = 2, X ~ U[-2, 2]^2) with 0.3 * Student-t(2) noise; sigma^2 = 5,
rho = 1e-4, lam2 = 1e-3 / 25, Nystrom rank 25, default constraint points, tol = 1e-6.
One BLAS thread; times are wall-clock seconds of ``fit``, both solvers measured in one run.

    python benchmarks/convex_losses.py [--quick] [--out table.md]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos import ConvexRegressor
from psdsos.datasets import convex_regression_truth
from psdsos.estimators import NonConvexFitWarning

LOSSES = [("squared", {}), ("huber", {"delta": 0.3}), ("expectile", {"quantile": 0.8}),
          ("quantile", {"quantile": 0.5})]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 16, tol 1e-4 only (CI)")
    ap.add_argument("--out", default=None, help="save the table (markdown) there")
    args = ap.parse_args(argv)
    sizes = (16,) if args.quick else (100, 200)
    tol = 1e-4 if args.quick else 1e-6
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [f"load average at start {load:.1f}; tol {tol:g}; seconds per fit (one BLAS thread)",
            "", "| n | loss | dual s | dual iterations | primal s | primal / dual | "
            "objective rel. diff |", "|---|---|---|---|---|---|---|"]
    for n in sizes:
        rng = np.random.default_rng(0)
        X = rng.uniform(-2, 2, (n, 2))
        y = convex_regression_truth(X, a=1.0) + 0.3 * rng.standard_t(2, n)
        common = dict(sigma=float(np.sqrt(5.0)), rho=1e-4, lam2=1e-3 / 25,
                      n_landmarks=25 if n > 25 else None, random_state=0, tol=tol)
        for loss, kw in LOSSES:
            with threadpool_limits(1), warnings.catch_warnings():
                warnings.simplefilter("ignore", NonConvexFitWarning)
                t0 = time.perf_counter()
                d = ConvexRegressor(loss=loss, **kw, **common).fit(X, y)
                td = time.perf_counter() - t0
                t0 = time.perf_counter()
                p = ConvexRegressor(loss=loss, **kw, **common, solver="primal",
                                    primal_solver="CLARABEL").fit(X, y)
                tp = time.perf_counter() - t0
            rel = abs(d.objective_ - p.objective_) / abs(p.objective_)
            rows.append(f"| {n} | {loss} | {td:.2f} | {d.n_iter_} | {tp:.2f} | {tp / td:.2f} "
                        f"| {rel:.1e} |")
    text = "\n".join(rows)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
