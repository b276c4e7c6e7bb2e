"""Benchmark: ``psdsos convex-fit --concave`` on a real 600-row, 3-feature production table.

The first 600 rows of :func:`psdsos.datasets.load_production` (private capital, public
capital, employment -> gross state product, raw units) written to a CSV, then the CLI with
its defaults (12 candidates x 5 folds = 60 CV fits at the CV iteration cap, and the refit),
run in this process twice, side by side:

* ``auto``: the dual solver's automatic choice, which for these coupled duals (dimension
  m d (d + 1) / 2 <= 600) is the hybrid of accelerated gradient and regularized Newton steps
  (:func:`psdsos.solvers.solve_dual`, ``method="auto"``), the default of ConvexRegressor;
* ``apg``: the accelerated gradient method alone (the solver before the hybrid).

With ``--previous``, a third run: the automatic choice with the command's previous defaults
(bandwidths 0.5, 1, 2 x scale and only the best candidate by CV refitted:
``--sigma 0.5,1,2 --max-refits 1``).

Reported per run: wall time, the number of fits (CV and refits) and of those stopped by
their iteration cap, the selected candidate and its sampled relative concavity deficit.
One BLAS thread (threadpoolctl).

Usage::

    python benchmarks/convex_fit_cli.py [--rows 600] [--methods auto,apg] [--previous]
                                        [--out FILE.md]
    python benchmarks/convex_fit_cli.py --quick     # 120 rows, one candidate (a smoke test)
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


def run(csv, method, extra=()):
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
                main(["convex-fit", csv, "--target", "gsp", "--concave", "--quiet", *extra])
            except SystemExit:
                pass
    finally:
        cf.solve_dual = saved
    wall = time.perf_counter() - t
    text = out.getvalue().splitlines()
    selected = next((ln for ln in text if ln.startswith("selected")), "selected: ?")
    deficit = next((ln.split(":")[1].split()[0] for ln in text if " deficit: " in ln), "?")
    return wall, len(fits), sum(not c for c in fits), selected, deficit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=600)
    ap.add_argument("--methods", default="auto,apg")
    ap.add_argument("--previous", action="store_true",
                    help="also run the previous defaults (--sigma 0.5,1,2 --max-refits 1)")
    ap.add_argument("--quick", action="store_true",
                    help="120 rows, one candidate, 2 folds (a smoke test)")
    ap.add_argument("--out", default=None, help="also write the table there (markdown)")
    args = ap.parse_args()
    extra = ()
    if args.quick:  # one candidate, 2 folds
        args.rows, args.methods = 120, "auto"
        extra = ("--sigma", "1", "--rho", "1e-3", "--lam2", "1e-3", "--cv", "2")
    from psdsos.datasets import load_production

    b = load_production()
    X, y = b["data"][: args.rows], b["target"][: args.rows]
    head = (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
            f"logical cores, 1 BLAS thread; numpy {np.__version__}; first {args.rows} rows")
    lines = ["| method | options | wall time (s) | fits | stopped at their cap | selected | "
             "deficit |", "|---|---|---|---|---|---|---|"]
    runs = [(method, "defaults", extra) for method in args.methods.split(",")]
    if args.previous:
        runs.append(("auto", "--sigma 0.5,1,2 --max-refits 1",
                     (*extra, "--sigma", "0.5,1,2", "--max-refits", "1")))
    print(head)
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "production.csv")
        np.savetxt(csv, np.column_stack([X, y]), delimiter=",",
                   header=",".join([*b["feature_names"], b["target_name"]]), comments="")
        with threadpool_limits(1):
            for method, label, options in runs:
                wall, n, bad, selected, deficit = run(csv, method, options)
                row = (f"| {method} | {label} | {wall:.1f} | {n} | {bad} | "
                       f"{selected.removeprefix('selected: ')} | {deficit} |")
                lines.append(row)
                print(row, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(head + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
