"""Benchmark: CNLS (PSD paper eq. 27) at scale, a plain cutting-plane loop against psdsos's.

PiecewiseLinearConvexRegressor on X uniform in [-1, 1]^d, y = ||x||^2 + 0.1 N(0, 1), for
n in {1000, 3000, 10000} (d = 2) and n in {1000, 3000} (d = 5).  Each fit runs in its own
subprocess with one thread (BLAS through threadpoolctl and OMP/OPENBLAS_NUM_THREADS, Clarabel's
Rust thread pool through RAYON_NUM_THREADS), which reports wall and CPU seconds, the peak
resident memory of the process (``ru_maxrss``: Python, CVXPY and Clarabel's factorization
included) and the fit.  "plain" is the psdsos package of an earlier commit (``--old-ref``,
extracted with ``git archive``; skipped when git or the commit is not available): every QP
solved tight with Clarabel's automatic linear solver, a scan that sorts every row.  "psdsos"
is this checkout's ``psdsos.estimators._cnls``.  The table gives the time
ratio and the relative difference of the two objectives (the same convex program).

Usage::

    python benchmarks/cnls_scale.py                 # full run (about 15 minutes, most of it
                                                    # the previous loop at n = 10^4)
    python benchmarks/cnls_scale.py --old-max-n 3000   # previous loop only up to n = 3000
    python benchmarks/cnls_scale.py --quick         # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import platform
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The commit before the scaling work (the cutting-plane loop with tight CVXPY/Clarabel solves
# in every round and Clarabel's default linear solver).
OLD_REF = "be01c6c"

_WORKER = r"""
import json, resource, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
n, d = int(sys.argv[2]), int(sys.argv[3])
import psdsos.estimators._cnls as cnls
PiecewiseLinearConvexRegressor = cnls.PiecewiseLinearConvexRegressor
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (n, d))
y = np.sum(X**2, axis=1) + 0.1 * rng.standard_normal(n)
with threadpool_limits(1):
    w0, c0 = time.perf_counter(), time.process_time()
    m = PiecewiseLinearConvexRegressor().fit(X, y)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
print(json.dumps({
    "wall": wall, "cpu": cpu, "objective": m.objective_, "rounds": int(m.n_rounds_),
    "pairs": int(m.n_constraints_), "violation": m.max_violation_ / float(np.std(y)),
    "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    "module": cnls.__file__,
}))
"""


def run_fit(module, n, d):
    """One fit in a fresh single-threaded subprocess; the worker's JSON line as a dict.

    ``module``: "current" (this checkout's psdsos) or the folder holding the psdsos package of
    an earlier commit (:func:`previous_module`), put first on the worker's path."""
    tree = ROOT if module == "current" else module
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               RAYON_NUM_THREADS="1", PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _WORKER, module, str(n), str(d)], env=env,
                         cwd=str(tree), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def previous_module(ref, directory):
    """The psdsos package of commit ``ref`` (the whole package, so that the estimator runs
    with the modules it was written against) extracted below ``directory``; the folder to
    put on the path, or None when git or the commit is not available."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "psdsos"],
                                 capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
            tar.extractall(directory, filter="data")
        else:  # our own repository's archive
            tar.extractall(directory)  # noqa: S202
    return str(directory)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--old-ref", default=OLD_REF,
                    help=f"git commit holding the previous implementation (default {OLD_REF})")
    ap.add_argument("--old-max-n", type=int, default=10_000,
                    help="largest n at which the previous implementation is run")
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 5],
                    help="input dimensions to run (default: 2 5)")
    ap.add_argument("--out", default="bench-out/cnls_scale.md")
    args = ap.parse_args(argv)
    cases = ([(300, 2), (200, 5)] if args.quick
             else [(1000, 2), (3000, 2), (10_000, 2), (1000, 5), (3000, 5)])
    cases = [(n, d) for n, d in cases if d in args.dims]
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, one thread per fit "
        f"(BLAS and Clarabel); python {platform.python_version()}",
        "",
        "## CNLS, X ~ U[-1, 1]^d, y = ||x||^2 + 0.1 eps",
        "",
        "| n | d | plain s wall (cpu) | psdsos s wall (cpu) | plain / psdsos (cpu) "
        "| rounds plain / psdsos | pairs plain / psdsos | peak RSS MB plain / psdsos "
        "| objective | rel. objective diff | max violation / std(y) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        old = previous_module(args.old_ref, tmp)
        if old is None:
            print(f"plain loop (commit {args.old_ref}) not available: psdsos only")
        for n, d in cases:
            cur = run_fit("current", n, d)
            prev = run_fit(old, n, d) if old is not None and n <= args.old_max_n else None
            if prev is None:
                row = (f"| {n} | {d} | not run | {cur['wall']:.2f} ({cur['cpu']:.2f}) | - "
                       f"| - / {cur['rounds']} | - / {cur['pairs']} | - / {cur['maxrss_mb']:.0f} "
                       f"| {cur['objective']:.10f} | - | {cur['violation']:.1e} |")
            else:
                rel = abs(prev["objective"] - cur["objective"]) / prev["objective"]
                row = (f"| {n} | {d} | {prev['wall']:.2f} ({prev['cpu']:.2f}) "
                       f"| {cur['wall']:.2f} ({cur['cpu']:.2f}) | {prev['cpu'] / cur['cpu']:.1f}x "
                       f"| {prev['rounds']} / {cur['rounds']} | {prev['pairs']} / {cur['pairs']} "
                       f"| {prev['maxrss_mb']:.0f} / {cur['maxrss_mb']:.0f} "
                       f"| {cur['objective']:.10f} | {rel:.1e} | {cur['violation']:.1e} |")
            lines.append(row)
            print(row, flush=True)

    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
