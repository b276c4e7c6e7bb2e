"""Benchmark: leave-one-out selection of PSDRegressor's kernel, bandwidth and lam2.

The issue's search: 3 kernels (gaussian, matern52, matern32) x 4 bandwidths (0.25, 0.5, 1, 2
times the data's scale) x 4 lam2 (1e-2, 1e-4, 1e-6, 1e-8) = 48 candidates, leave-one-out on
50 samples of a smooth 3 x 3 PSD-valued curve of time plus symmetric noise, one BLAS thread
(threadpoolctl), wall seconds on a possibly shared machine.

* before: scikit-learn's ``GridSearchCV(PSDRegressor(), ...)``, every fit cold at the
  default tol = 1e-7;
* after: :class:`psdsos.PSDRegressorCV` (lam2 path with warm starts, closed-form starts
  where the PSD constraint is inactive, cv_tol = 1e-5, cv_max_iter = 3000).

A full leave-one-out search is 2400 fits; both are timed on ``--folds`` of the 50 folds (the
same held-out samples) and the time per fold is extrapolated to 50 (stated in the table).

Usage::

    python benchmarks/psd_cv.py                 # --folds 2 (several minutes)
    python benchmarks/psd_cv.py --folds 50      # the full search, no extrapolation
    python benchmarks/psd_cv.py --quick         # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, LeaveOneOut
from threadpoolctl import threadpool_limits

from psdsos import PSDRegressor, PSDRegressorCV
from psdsos.kernels import scale_bandwidth


def psd_curve(n=50, d=3, noise=0.05, seed=0):
    """A smooth PSD-valued curve of time t in [0, 1] (A(t) A(t)^T + 0.1 I), plus symmetric
    Gaussian noise of standard deviation ``noise`` (the targets may be indefinite)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 1.0, n))
    A = np.zeros((n, d, d))
    for a in range(d):
        for b in range(d):
            A[:, a, b] = np.sin(2 * np.pi * (a + 1) * t + b) * (1.0 if a == b else 0.5)
    M = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    E = noise * rng.standard_normal((n, d, d))
    return t[:, None], M + (E + np.swapaxes(E, 1, 2)) / 2


class SomeLOO:
    """The leave-one-out splits of the given held-out samples only."""

    def __init__(self, held_out):
        self.held_out = list(held_out)

    def split(self, X, y=None, groups=None):
        splits = list(LeaveOneOut().split(X))
        for i in self.held_out:
            yield splits[i]

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(self.held_out)


def neg_mse(est, X, y):
    P = est.predict(X)
    return -float(np.mean(np.sum((P - y) ** 2, axis=(1, 2))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        n, kernels, factors, lam2s, nfold = 12, ["gaussian"], [1.0], [1e-2, 1e-4], 2
    else:
        n, kernels, factors = 50, ["gaussian", "matern52", "matern32"], [0.25, 0.5, 1.0, 2.0]
        lam2s, nfold = [1e-2, 1e-4, 1e-6, 1e-8], args.folds
    X, M = psd_curve(n)
    held = np.linspace(0, n - 1, nfold).round().astype(int)
    s = scale_bandwidth(X)
    grid = {"kernel": kernels, "sigma": [f * s for f in factors], "lam2": lam2s}
    ncand = len(kernels) * len(factors) * len(lam2s)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor()}, "
          f"load average {os.getloadavg()[0]:.2f}, python {platform.python_version()}")
    print(f"data: n = {n}, d = 3; {ncand} candidates; leave-one-out timed on {nfold} of "
          f"{n} folds (held out: {held.tolist()}), extrapolated x {n / nfold:.1f}")
    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        ref = GridSearchCV(PSDRegressor(), grid, cv=SomeLOO(held), scoring=neg_mse,
                           refit=False).fit(X, M)
        t_before = time.perf_counter() - t0
        t0 = time.perf_counter()
        est = PSDRegressorCV(kernels=kernels, sigmas=factors, lam2s=lam2s,
                             cv=SomeLOO(held)).fit(X, M)
        t_after = time.perf_counter() - t0
    ours = {tuple(sorted(p.items(), key=lambda kv: kv[0])): v for p, v in
            zip(est.cv_results_["params"], est.cv_results_["mean_test_score"], strict=True)}
    def rel(p, v):
        return abs(ours[tuple(sorted(p.items(), key=lambda kv: kv[0]))] - v) / max(abs(v), 1e-12)

    pairs = list(zip(ref.cv_results_["params"], ref.cv_results_["mean_test_score"], strict=True))
    diff = max(rel(p, v) for p, v in pairs)
    # lam2 >= 1e-4: fits that converge on both sides (the smaller lam2 stop at max_iter)
    diff_conv = max(rel(p, v) for p, v in pairs if p["lam2"] >= 1e-4)
    scale = n / nfold
    rows.append(("GridSearchCV(PSDRegressor()), cold, tol 1e-7", t_before, t_before * scale,
                 str(ref.best_params_)))
    full_after = est.search_time_ * scale + est.refit_time_
    rows.append(("PSDRegressorCV (cv_tol 1e-5)", t_after, full_after, str(est.best_params_)))
    lines = ["| search | seconds on the timed folds | est. seconds, full LOO | best |",
             "|---|---|---|---|"]
    lines += [f"| {a} | {b:.1f} | {c:.0f} | {d} |" for a, b, c, d in rows]
    lines.append(f"\nmax relative difference of the mean CV scores: {diff:.2e} (lam2 >= 1e-4: "
                 f"{diff_conv:.2e}); "
                 f"CV fits stopped at cv_max_iter: {est.n_not_converged_}; closed-form starts: "
                 f"{est.n_closed_form_}")
    per = est.cv_results_["mean_fit_time"]
    lam2_of = [p["lam2"] for p in est.cv_results_["params"]]
    lines.append("mean fit time per lam2 (PSDRegressorCV): " + ", ".join(
        f"{lam2:g}: {np.mean([t for v, t in zip(lam2_of, per, strict=True) if v == lam2]):.2f} s"
        for lam2 in lam2s))
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
