"""Benchmark: leave-one-out selection of PSDRegressor's kernel, bandwidth and lam2.

The issue's search: 3 kernels (gaussian, matern52, matern32) x 4 bandwidths (0.25, 0.5, 1, 2
times the data's scale) x 4 lam2 (1e-2, 1e-4, 1e-6, 1e-8) = 48 candidates, leave-one-out on
50 samples of a smooth 3 x 3 PSD-valued curve of time plus symmetric noise, one BLAS thread
(threadpoolctl), wall seconds on a possibly shared machine.  Side by side, in one process, on
the same folds:

* before: the previous schedule of :class:`psdsos.PSDRegressorCV`: per split and (kernel,
  bandwidth) the lam2 path from large to small with warm starts, every fit by the
  accelerated gradient dual solver (``solve_dual(method="apg")``), cv_tol = 1e-5,
  cv_max_iter = 3000;
* after: :class:`psdsos.PSDRegressorCV` now: the lam2 path fitted once on all the data by
  quasi-Newton steps (``method="lbfgs"``: L-BFGS-B in the metric of the dual's generalized
  Hessian), and every fold started from that solution moved to the fold, with the
  full-data Hessian as its first metric; each fit stops on its own relative duality gap
  cv_tol = 1e-5 as before;
* a reference: scikit-learn's ``GridSearchCV(PSDRegressor(tol=1e-5))`` (cold fits, the
  default dual path), for the scores and the choice.

A full leave-one-out search is 2400 fits; both are timed on ``--folds`` of the 50 folds (the
same held-out samples) and extrapolated to 50: the time per fold times 50, plus (after) the
fits on all the data, which do not grow with the folds; both plus the refit.  Per lam2: the
mean evaluations (eigendecompositions of the dual's size-150 matrix) and Hessians per fit,
the time per fit and per evaluation, the fits stopped at cv_max_iter.

Usage::

    python benchmarks/psd_cv.py                 # --folds 2 (before: several minutes)
    python benchmarks/psd_cv.py --folds 50      # the full search, no extrapolation
    python benchmarks/psd_cv.py --no-before     # after and the reference only
    python benchmarks/psd_cv.py --folds 50 --no-before --no-reference   # after, full LOO
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


class _APGRegressor(PSDRegressor):
    """PSDRegressor whose dual path is the accelerated gradient method only (before)."""

    _dual_method = "apg"


class _BeforeCV(PSDRegressorCV):
    """The previous schedule: each split's own warm-started lam2 path, accelerated
    gradient fits."""

    _start_folds_from_full_fit = False

    def _base(self, tol, max_iter):
        return _APGRegressor(lam1=self.lam1, tol=tol, max_iter=max_iter)


def _per_lam2(est, lam2s):
    """Per lam2, over the CV fits: mean evaluations, Hessians, fit seconds, seconds per
    evaluation, fits stopped at cv_max_iter."""
    r = est.cv_results_
    out = {}
    for lam2 in lam2s:
        sel = [i for i, p in enumerate(r["params"]) if p["lam2"] == lam2]
        it = float(np.mean(r["mean_n_iter"][sel]))
        ft = float(np.mean(r["mean_fit_time"][sel]))
        out[lam2] = (it, float(np.mean(r["mean_n_hessian"][sel])), ft, ft / max(it, 1e-12),
                     int(np.sum(r["n_not_converged"][sel])))
    return out


def _scores(est):
    return {tuple(sorted((k, str(v)) for k, v in p.items())): s for p, s in
            zip(est.cv_results_["params"], est.cv_results_["mean_test_score"], strict=True)}


def _max_rel(a, b):
    return max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-12) for k in b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--no-before", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        n, kernels, factors, lam2s, nfold = 12, ["gaussian"], [1.0], [1e-2, 1e-6], 2
    else:
        n, kernels, factors = 50, ["gaussian", "matern52", "matern32"], [0.25, 0.5, 1.0, 2.0]
        lam2s, nfold = [1e-2, 1e-4, 1e-6, 1e-8], args.folds
    X, M = psd_curve(n)
    held = np.linspace(0, n - 1, nfold).round().astype(int)
    s = scale_bandwidth(X)
    grid = {"kernel": kernels, "sigma": [f * s for f in factors], "lam2": lam2s}
    ncand = len(kernels) * len(factors) * len(lam2s)
    scale = n / nfold
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor()}, "
          f"load average {os.getloadavg()[0]:.2f}, python {platform.python_version()}")
    print(f"data: n = {n}, d = 3; {ncand} candidates; leave-one-out timed on {nfold} of "
          f"{n} folds (held out: {held.tolist()}), extrapolated x {scale:.1f}")
    kw = dict(kernels=kernels, sigmas=factors, lam2s=lam2s, cv=SomeLOO(held))
    runs = {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        ref = None if args.no_reference else GridSearchCV(
            PSDRegressor(tol=1e-5, max_iter=3000), grid, cv=SomeLOO(held), scoring=neg_mse,
            refit=False).fit(X, M)
        t_ref = time.perf_counter() - t0
        if not args.no_before:
            runs["before"] = _BeforeCV(**kw).fit(X, M)
        runs["after"] = PSDRegressorCV(**kw).fit(X, M)
    lines = ["| search | seconds, timed folds | est. seconds, full LOO | fits at cv_max_iter "
             "| max rel. diff. of mean CV scores vs reference | best |",
             "|---|---|---|---|---|---|"]
    theirs = None if ref is None else _scores(ref)
    if ref is not None:
        lines.append(f"| GridSearchCV(PSDRegressor(tol=1e-5)), cold (reference) | {t_ref:.1f} "
                     f"| {t_ref * scale:.0f} | | | {ref.best_params_} |")
    full = {}
    for name, est in runs.items():
        fixed = est._full_fit_time  # the fits on all the data (after): not per fold
        full[name] = fixed + (est.search_time_ - fixed) * scale + est.refit_time_
        lines.append(f"| {name}: {type(est).__name__} | {est.search_time_ + est.refit_time_:.1f}"
                     f" | {full[name]:.0f} | {est.n_not_converged_} | "
                     f"{'' if theirs is None else f'{_max_rel(_scores(est), theirs):.1e}'} | "
                     f"{est.best_params_} |")
    if len(runs) == 2:
        lines.append(f"\nratio before / after, full LOO: {full['before'] / full['after']:.1f}; "
                     f"same choice: {runs['before'].best_params_ == runs['after'].best_params_}"
                     f"; after's fits on all the data (once): {runs['after']._full_fit_time:.1f} s")
    lines += ["\nper lam2, mean over the CV fits: evaluations (eigendecompositions) / Hessians "
              "per fit, seconds per fit, ms per evaluation, fits stopped at cv_max_iter", "",
              "| lam2 | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    stats = {name: _per_lam2(est, lam2s) for name, est in runs.items()}
    for lam2 in lam2s:
        cells = []
        for name in runs:
            it, nh, ft, per, nc = stats[name][lam2]
            cells.append(f"{it:.1f} / {nh:.2f}, {ft:.3f} s, {1e3 * per:.2f} ms, {nc}")
        lines.append(f"| {lam2:g} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
