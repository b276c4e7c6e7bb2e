"""Benchmark: time and peak memory of Nystrom fits as the number of samples grows.

Every fit runs in its own Python process (one BLAS thread, OMP/OPENBLAS/MKL_NUM_THREADS=1)
that reports its wall time and its peak resident memory (``ru_maxrss``); the figures are
the whole ``fit`` (features, constraint points, preconditioner, solver, certificate).

* ``PSDRegressor(n_landmarks=r)`` on n points of [-1, 1]^2 with noisy d x d PSD targets
  (d the matrix size), r in {50, 200}, d in {2, 5};
* ``ConvexRegressor(n_landmarks=50)`` on eq. (30)-like data in p = 2 and 5 input dimensions
  (``centers="auto"``: the landmark model beyond 2,000 samples);
* growth exponents: the slope of log(time) against log(n) between 1e4 and the largest n;
* ``--old-tree PATH``: the same cases at n = 1e4 with the psdsos checked out at PATH (the
  previous implementation), side by side;
* ``--dask``: an out-of-core ``ConvexRegressor`` fit on a ``dask.distributed`` LocalCluster
  (2 workers, 1 thread each, 1 GiB memory limit each) whose data (n rows of a lazily
  generated ``dask.array``) are never gathered, against the in-memory fit at the largest n
  that fits comfortably.

Usage::

    python benchmarks/scale.py                      # the grid up to 1e6 (about 15 minutes)
    python benchmarks/scale.py --old-tree ../old    # plus the previous implementation
    python benchmarks/scale.py --dask               # plus the out-of-core fit
    python benchmarks/scale.py --quick              # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------
# one fit (child process)
# ---------------------------------------------------------------------------------------
def _psd_data(n, d, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, 2))
    A = rng.standard_normal((n, d, d))
    M = 0.1 * np.einsum("nij,nkj->nik", A, A) / d
    M += np.eye(d) * (1.5 + np.sin(3.0 * X[:, :1, None]))
    return X, M


def _convex_data(n, p, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, p))
    y = np.sum(X**2, axis=1) + np.exp(X[:, 0]) + 0.1 * rng.standard_normal(n)
    return X, y


def child(kind, n, r, d):
    import resource
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    warnings.simplefilter("ignore")
    out = {}
    if kind == "psd":
        from psdsos import PSDRegressor

        X, M = _psd_data(n, d)
        t0 = time.perf_counter()
        est = PSDRegressor(n_landmarks=r, random_state=0).fit(X, M)
        out["time"] = time.perf_counter() - t0
        out.update(iters=int(est.n_iter_), gap=float(est.dual_gap_),
                   objective=float(est.objective_))
    elif kind == "convex":
        from psdsos import ConvexRegressor

        X, y = _convex_data(n, d)
        t0 = time.perf_counter()
        est = ConvexRegressor(n_landmarks=r, random_state=0).fit(X, y)
        out["time"] = time.perf_counter() - t0
        Xt, yt = _convex_data(4000, d, seed=1)
        yt = np.sum(Xt**2, axis=1) + np.exp(Xt[:, 0])
        out.update(iters=int(est.n_iter_), gap=float(est.dual_gap_),
                   objective=float(est.objective_),
                   deficit=float(est.convexity_deficit_),
                   test_mse=float(np.mean((est.predict(Xt) - yt) ** 2)))
    else:
        raise ValueError(kind)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out))


def run_child(kind, n, r, d, tree=ROOT, timeout=3600):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=str(tree))
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", kind, str(n),
           str(r), str(d)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=str(tree))
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    return {"error": tail[0][:120], "wall": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------
# out-of-core fit on a LocalCluster
# ---------------------------------------------------------------------------------------
def _one_thread():
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def dask_case(n, chunk_rows, p=2, r=50):
    import warnings

    import dask.array as da
    import numpy as np
    from dask.distributed import Client, LocalCluster

    from psdsos import ConvexRegressor

    warnings.simplefilter("ignore")
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GiB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_one_thread)
        rs = da.random.RandomState(0)
        X = rs.uniform(-1.0, 1.0, size=(n, p), chunks=(chunk_rows, p))
        y = (X**2).sum(axis=1) + da.exp(X[:, 0]) + 0.1 * rs.standard_normal(n,
                                                                            chunks=chunk_rows)
        t0 = time.perf_counter()
        est = ConvexRegressor(n_landmarks=r, random_state=0).fit(X, y)
        elapsed = time.perf_counter() - t0
    Xt = np.random.default_rng(1).uniform(-1.0, 1.0, (4000, p))
    yt = np.sum(Xt**2, axis=1) + np.exp(Xt[:, 0])
    return {"time": elapsed, "iters": int(est.n_iter_), "objective": float(est.objective_),
            "deficit": float(est.convexity_deficit_),
            "test_mse": float(np.mean((est.predict(Xt) - yt) ** 2)),
            "data_gb": n * (p + 1) * 8 / 2**30}


# ---------------------------------------------------------------------------------------
def exponent(rows):
    import numpy as np

    pts = [(r["n"], r["time"]) for r in rows if "time" in r and r["n"] >= 10_000]
    if len(pts) < 2:
        return float("nan")
    n, t = np.array(pts, dtype=float).T
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def plot(series, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, rows in series.items():
        ok = [r for r in rows if "time" in r]
        if not ok:
            continue
        n = [r["n"] for r in ok]
        axes[0].loglog(n, [r["time"] for r in ok], "o-", label=label)
        axes[1].loglog(n, [r["peak_mb"] / 1024 for r in ok], "o-", label=label)
    axes[0].set(xlabel="samples n", ylabel="fit time (s)", title="time")
    axes[1].set(xlabel="samples n", ylabel="peak memory (GiB)", title="memory")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes")
    ap.add_argument("--max-n", type=int, default=1_000_000, help="largest n of the grid")
    ap.add_argument("--old-tree", default=None, help="a checkout of the previous psdsos")
    ap.add_argument("--dask", action="store_true", help="the out-of-core LocalCluster fit")
    ap.add_argument("--dask-n", type=int, default=20_000_000, help="rows of the dask fit")
    ap.add_argument("--only-old", action="store_true",
                    help="only the comparison with --old-tree (and --dask if given)")
    ap.add_argument("--out", default=None, help="write the markdown tables here")
    ap.add_argument("--figure", default=None, help="write the time/memory figure here")
    ap.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, n, r, d = args.child
        child(kind, int(n), int(r), int(d))
        return

    if args.quick:
        ns = [300, 1000]
        psd_cases = [(10, 2)]
        convex_cases = [(10, 2)]
    else:
        ns = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= args.max_n]
        psd_cases = [(50, 2), (50, 5), (200, 2), (200, 5)]
        convex_cases = [(50, 2), (50, 5)]
    # r = 200 at n = 1e6: Phi and the preconditioner's factor alone take ~8 GB (O(n r))
    limit = {200: 100_000}
    if args.only_old:
        ns, psd_cases, convex_cases = [], [], []
    series = {}
    lines = [f"machine: {platform.machine()}, {os.cpu_count()} cores, one BLAS thread per fit, "
             "each fit in its own process", ""]
    lines += ["| model | r | d | n | time (s) | iterations | peak memory (GiB) | notes |",
              "|---|---|---|---|---|---|---|---|"]
    for kind, cases in (("psd", psd_cases), ("convex", convex_cases)):
        for r, d in cases:
            label = f"{'PSDRegressor' if kind == 'psd' else 'ConvexRegressor'} r={r} d={d}"
            rows = []
            for n in ns:
                if n > limit.get(r, 10**12) and not args.quick:
                    continue
                res = dict(run_child(kind, n, r, d), n=n)
                rows.append(res)
                if "time" in res:
                    note = f"gap {res['gap']:.1e}"
                    if kind == "convex":
                        note += f", test MSE {res['test_mse']:.4f}, deficit {res['deficit']:.2g}"
                    lines.append(f"| {kind} | {r} | {d} | {n} | {res['time']:.2f} | "
                                 f"{res['iters']} | {res['peak_mb'] / 1024:.2f} | {note} |")
                else:
                    lines.append(f"| {kind} | {r} | {d} | {n} | - | - | - | {res['error']} |")
                print(lines[-1], flush=True)
            series[label] = rows
    lines += ["", "| series | time exponent (n >= 1e4) |", "|---|---|"]
    for label, rows in series.items():
        lines.append(f"| {label} | {exponent(rows):.2f} |")
    if args.old_tree:
        n_old = 300 if args.quick else 10_000
        lines += ["", f"previous implementation ({args.old_tree}) at n = {n_old}, side by side:",
                  "", "| model | r | d | new (s) | old (s) | old / new | new GiB | old GiB | "
                  "objective new / old - 1 | notes |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for kind, r, d in (("psd", 200 if not args.quick else 10, 2),
                           ("convex", 50 if not args.quick else 10, 2)):
            new = run_child(kind, n_old, r, d)
            old = run_child(kind, n_old, r, d, tree=pathlib.Path(args.old_tree).resolve())
            if "time" in new and "time" in old:
                note = ("same problem" if kind == "psd" else
                        f"landmark model vs every training point; test MSE "
                        f"{new['test_mse']:.4f} vs {old['test_mse']:.4f}")
                lines.append(f"| {kind} | {r} | {d} | {new['time']:.2f} | {old['time']:.2f} | "
                             f"{old['time'] / new['time']:.1f} | {new['peak_mb'] / 1024:.2f} | "
                             f"{old['peak_mb'] / 1024:.2f} | "
                             f"{new['objective'] / old['objective'] - 1:.1e} | {note} |")
            else:
                lines.append(f"| {kind} | {r} | {d} | {new.get('error', '')} | "
                             f"{old.get('error', '')} | - | - | - | - | - |")
            print(lines[-1], flush=True)
    if args.dask:
        n_d = 20_000 if args.quick else args.dask_n
        res = dask_case(n_d, max(1000, n_d // 200))
        lines += ["", "out-of-core ConvexRegressor (r = 50, p = 2) on a LocalCluster of 2 "
                  "workers x 1 thread, 1 GiB each:", "",
                  "| n | data (GiB) | time (s) | iterations | test MSE | deficit |",
                  "|---|---|---|---|---|---|",
                  f"| {n_d} | {res['data_gb']:.2f} | {res['time']:.1f} | {res['iters']} | "
                  f"{res['test_mse']:.4f} | {res['deficit']:.2g} |"]
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
    if args.figure:
        plot(series, args.figure)


if __name__ == "__main__":
    main()
