"""Benchmark: ``psdsos convex-fit --concave`` on a real 600-row, 3-feature production table.

The first 600 rows of :func:`psdsos.datasets.load_production` (private capital, public
capital, employment -> gross state product, raw units) written to a CSV, then the CLI with
its defaults (12 candidates x 5 folds = 60 CV fits at the CV iteration cap, and the refit),
run in this process twice, side by side:

* ``auto``: the dual solver's automatic choice, which for these coupled duals (dimension
  m d (d + 1) / 2 <= 600) is the hybrid of accelerated gradient and regularized Newton steps
  (:func:`psdsos.solvers.solve_dual`, ``method="auto"``), the default of ConvexRegressor;
* ``apg``: the accelerated gradient method alone (the solver before the hybrid).

Reported per run: wall time, the number of fits (CV and refit) stopped by their iteration
cap, and the selected candidate.  One BLAS thread (threadpoolctl).

Usage::

    python benchmarks/convex_fit_cli.py [--rows 600] [--methods auto,apg]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits


def run(csv, method):
    import psdsos.estimators._convex_fit as cf
    from psdsos.cli import main
    from psdsos.solvers import solve_dual

    fits = []

    def counted(problem, **kw):
        kw["method"] = method
        res = solve_dual(problem, **kw)
        fits.append(res.converged)
        return res

    saved = cf.solve_dual
    cf.solve_dual = counted
    out = io.StringIO()
    t = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                main(["convex-fit", csv, "--target", "gsp", "--concave", "--quiet"])
            except SystemExit:
                pass
    finally:
        cf.solve_dual = saved
    wall = time.perf_counter() - t
    selected = next((ln for ln in out.getvalue().splitlines() if ln.startswith("selected")),
                    "selected: ?")
    return wall, len(fits), sum(not c for c in fits), selected


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=600)
    ap.add_argument("--methods", default="auto,apg")
    args = ap.parse_args()
    from psdsos.datasets import load_production

    b = load_production()
    X, y = b["data"][: args.rows], b["target"][: args.rows]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical "
          f"cores, 1 BLAS thread; numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "production.csv")
        np.savetxt(csv, np.column_stack([X, y]), delimiter=",",
                   header=",".join([*b["feature_names"], b["target_name"]]), comments="")
        with threadpool_limits(1):
            for method in args.methods.split(","):
                wall, n, bad, selected = run(csv, method)
                print(f"{method:5s}: {wall:7.1f} s, {n} fits, {bad} stopped at their "
                      f"iteration cap; {selected}", flush=True)


if __name__ == "__main__":
    main()
