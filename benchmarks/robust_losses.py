"""Benchmark: Huber PSD regression (dual, proximal steps) against least squares and the primal.

Measured in one run, one BLAS thread everywhere (threadpoolctl), d = 2, exponential kernel
sigma = 0.1, lam1 = 0, lam2 = 1e-4 (the setting of benchmarks/psd_regression.py), data: a
noisy Bures geodesic (entries' noise 0.01) with 10% of the matrices replaced by Wishart
outliers, Huber delta = 0.1:

1. time to the optimal objective J* within 1e-6 (relative) for
   - the least-squares dual fit (preconditioned accelerated gradient) on the same data, and
     the same without the preconditioner (Euclidean steps),
   - Huber, dual: proximal steps in the preconditioner's metric (the default), Euclidean
     proximal steps (``precondition=False``), reweighted least squares ("irls"),
   - Huber, primal through CVXPY (SCS; Clarabel where it fits, n <= 50),
   each run at a sequence of tolerances, the first run within 1e-6 of J* reported (wall
   time of the whole fit, features and CVXPY compilation included); J* from the dual at
   tol 1e-11 (certified by its duality gap);
2. the ratios Huber / least squares (target <= 3) and primal / Huber dual (target >= 10).

Usage::

    python benchmarks/robust_losses.py            # full run (a few minutes)
    python benchmarks/robust_losses.py --quick    # tiny sizes (CI keeps it from rotting)
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
from psdsos.losses import HuberLoss
from psdsos.problems import PSDLeastSquares, PSDLossProblem
from psdsos.solvers import solve_dual

KW = dict(kernel="exponential", sigma=0.1, lam1=0.0, lam2=1e-4)
DELTA = 0.1


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, n))
    _, M = make_bures_geodesic(t=t, random_state=seed)
    E = 0.01 * rng.standard_normal(M.shape)
    M = M + (E + E.transpose(0, 2, 1)) / np.sqrt(2)
    out = rng.choice(n, max(1, n // 10), replace=False)
    W = 2.0 * rng.standard_normal((len(out), 2, 2))
    M[out] = W @ W.transpose(0, 2, 1)
    return t[:, None], M


def fit(X, M, **kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = PSDRegressor(**KW, **kw).fit(X, M)
    return m, time.perf_counter() - t0


def time_to_accuracy(X, M, ref, tols, target, **kw):
    """First tolerance whose objective is within `target` of ref: (time, tol, iters)."""
    for tol in tols:
        m, t = fit(X, M, tol=tol, **kw)
        if abs(m.objective_ - ref) / abs(ref) <= target:
            return t, tol, m.n_iter_
    return float("nan"), tols[-1], m.n_iter_


def unpreconditioned(X, M, ref, tols, target, huber=False):
    """The dual without the preconditioner (Euclidean steps), least squares or Huber
    (features included in the time)."""
    for tol in tols:
        t0 = time.perf_counter()
        Phi = ExactFeatures(get_kernel(KW["kernel"], KW["sigma"])).fit(X).transform(X)
        prob = (PSDLossProblem(Phi, M, KW["lam1"], KW["lam2"], HuberLoss(DELTA)) if huber
                else PSDLeastSquares(Phi, M, KW["lam1"], KW["lam2"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_dual(prob, tol=tol, max_iter=100000, precondition=False)
        t = time.perf_counter() - t0
        if abs(res.primal_objective - ref) / abs(ref) <= target:
            return t, tol, res.n_iter
    return float("nan"), tols[-1], res.n_iter


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/robust_losses.md")
    args = ap.parse_args(argv)
    sizes = [12] if args.quick else [50, 100]
    clarabel_max = 12 if args.quick else 50
    target = 1e-6
    dual_tols = [1e-6, 1e-7, 1e-8, 1e-9]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}; load average {load:.1f} at the start",
        "",
        f"## Time (s) to J* within {target:g}, d = 2, lam2 = {KW['lam2']}, Huber delta = {DELTA}",
        "",
        "| n | LS dual (iters) | LS dual, Euclidean (iters) | Huber prox (iters) "
        "| Huber prox, Euclidean (iters) | Huber IRLS (inner iters) | Huber SCS "
        "| Huber Clarabel | Huber prox / LS | SCS / Huber prox | Clarabel / Huber prox |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with threadpool_limits(1):
        for n in sizes:
            X, M = data(n)
            ls_ref = fit(X, M, tol=1e-11, max_iter=100000)[0].objective_
            h_ref_model = fit(X, M, loss="huber", delta=DELTA, tol=1e-11, max_iter=100000)[0]
            h_ref = h_ref_model.objective_
            tl, _, il = time_to_accuracy(X, M, ls_ref, dual_tols, target)
            tu, _, iu = unpreconditioned(X, M, ls_ref, dual_tols, target)
            te, _, ie = unpreconditioned(X, M, h_ref, dual_tols, target, huber=True)
            th, _, ih = time_to_accuracy(X, M, h_ref, dual_tols, target, loss="huber",
                                         delta=DELTA, max_iter=100000)
            ti, _, ii = time_to_accuracy(X, M, h_ref, dual_tols, target, loss="huber",
                                         delta=DELTA, huber_method="irls", max_iter=100000)
            ts, _, _ = time_to_accuracy(X, M, h_ref, [1e-5, 1e-6, 1e-7, 1e-8], target,
                                        loss="huber", delta=DELTA, solver="primal",
                                        primal_solver="SCS")
            if n <= clarabel_max:
                tc, _, _ = time_to_accuracy(X, M, h_ref, [1e-6, 1e-8, 1e-10], target,
                                            loss="huber", delta=DELTA, solver="primal",
                                            primal_solver="CLARABEL")
                cl, clr = f"{tc:.2f}", f"{tc / th:.1f}x"
            else:
                cl, clr = "n/a (dense KKT)", "-"
            lines.append(f"| {n} | {tl:.3f} ({il}) | {tu:.3f} ({iu}) | {th:.3f} ({ih}) | "
                         f"{te:.3f} ({ie}) | {ti:.3f} ({ii}) | {ts:.2f} | {cl} | {th / tl:.1f}x | "
                         f"{ts / th:.1f}x | {clr} |")
            print(lines[-1], flush=True)
    lines += ["", f"J* (Huber) certified by the dual at tol 1e-11: relative gap "
              f"{h_ref_model.dual_gap_:.1e} at the largest n."]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
