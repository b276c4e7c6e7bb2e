"""Benchmark: CNLS (PSD paper eq. 27) by cutting planes against the dense quadratic program.

PiecewiseLinearConvexRegressor (Clarabel through CVXPY, starting from the Delaunay graph,
adding the most violated Afriat pairs each round) on the convex-regression data of the paper's
eq. (30): X uniform in [-2, 2]^2, y = (cos ||x|| - 1) + ||x||^2 / 2 + 0.1 N(0, 1), for
n in {100, 300, 1000}; for n in {100, 300} also the dense formulation: the same QP (same
standardization, Clarabel at the same tolerance) with all n (n - 1) Afriat inequalities from
the start (``n_neighbors = n - 1``: one round), with the time ratio and the agreement of the
fitted values and objectives.  At n = 1000 the dense problem (10^6 constraints) is not run:
its time grew about like n^5 from n = 100 to 300 here (0.16 to 47 CPU seconds).  One BLAS
thread (threadpoolctl); wall and CPU seconds (the CPU time is the steadier figure on a shared
machine).

Usage::

    python benchmarks/cnls.py            # full run (about two minutes, most of it dense n = 300)
    python benchmarks/cnls.py --quick    # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos.datasets import make_convex_regression
from psdsos.estimators._cnls import PiecewiseLinearConvexRegressor


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/cnls.md")
    args = ap.parse_args(argv)
    sizes = [30, 60] if args.quick else [100, 300, 1000]
    dense_max = 60 if args.quick else 300
    d = 2
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}",
        "",
        f"## CNLS, d = {d}, X ~ U[-2, 2]^d, y = f_1(||x||) + 0.1 eps (eq. 30)",
        "",
        "| n | rounds | pairs (of n(n-1)) | objective | max violation | cut s wall (cpu) "
        "| dense s wall (cpu) | dense / cut (cpu) | max abs theta diff | rel. objective diff |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    with threadpool_limits(1):
        for n in sizes:
            X, y = make_convex_regression(n, d, b=2.0, noise=0.1, random_state=0)
            m, tw, tc = timed(lambda X=X, y=y: PiecewiseLinearConvexRegressor().fit(X, y))
            frac = m.n_constraints_ / (n * (n - 1))
            row = (f"| {n} | {m.n_rounds_} | {m.n_constraints_} ({frac:.1%}) "
                   f"| {m.objective_:.8f} | {m.max_violation_:.1e} | {tw:.2f} ({tc:.2f}) ")
            if n <= dense_max:
                dense = PiecewiseLinearConvexRegressor(n_neighbors=n - 1)
                md, dw, dc = timed(lambda X=X, y=y, dense=dense: dense.fit(X, y))
                row += (f"| {dw:.2f} ({dc:.2f}) | {dc / tc:.1f}x "
                        f"| {np.abs(md.theta_ - m.theta_).max():.1e} "
                        f"| {abs(md.objective_ - m.objective_) / md.objective_:.1e} |")
            else:
                row += "| not run (~10^6 pairs) | - | - | - |"
            lines.append(row)
            print(row, flush=True)

    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
