"""Benchmark: ConvexRegressorCV() defaults against Nystroem + RidgeCV and HGB.

Convex truth f(x) = log sum_k exp(w_k^T x), five random linear forms w_k ~ N(0, I_p)
(seeded by p), x ~ U[-1, 1]^p, y = f(x) + 0.1 N(0, 1); error = test MSE / Var(f) on
5000 noiseless test points.  Side by side in one run, one BLAS thread (threadpoolctl):

* ``psdsos CV``: ``ConvexRegressorCV(random_state=0)`` with its defaults (3 folds; one 20%
  hold-out split beyond 200,000 samples); ``certified``: its ``certified_`` and the status of
  its certificate, ``deficit``: its sampled relative convexity deficit;
* ``psdsos fixed``: ``ConvexRegressor(n_landmarks=50)`` with its defaults (the fixed
  regularization the CV replaces);
* ``Nystroem+RidgeCV``: ``Nystroem(n_components=R)`` (R the largest rank the CV tries,
  the same rank budget) + ``RidgeCV(alphas=logspace(-8, 2, 11))``;
* ``HGB``: ``HistGradientBoostingRegressor()`` defaults.

Usage::

    python benchmarks/convex_cv.py --quick          # tiny (for CI)
    python benchmarks/convex_cv.py                  # p = 2, 5, 10 and n = 1e4, 1e5
    python benchmarks/convex_cv.py --dims 5 --sizes 10000 --huge   # adds n = 1e6
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
import sklearn
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from psdsos import ConvexRegressor, ConvexRegressorCV
from psdsos.estimators._convex_cv import HOLDOUT_MIN_SAMPLES
from psdsos.estimators._convex_path import auto_ranks


def truth(X: np.ndarray) -> np.ndarray:
    p = X.shape[1]
    W = np.random.default_rng(1000 + p).standard_normal((5, p))
    Z = X @ W.T
    m = Z.max(axis=1)
    return m + np.log(np.exp(Z - m[:, None]).sum(axis=1))


def data(n: int, p: int, seed: int, noise: float = 0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, p))
    f = truth(X)
    return X, f + noise * rng.standard_normal(n), f


def run(name, make, X, y, Xt, ft):
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = make().fit(X, y)
    secs = time.perf_counter() - t
    err = float(np.mean((est.predict(Xt) - ft) ** 2) / ft.var())
    cert = getattr(est, "certificate_", None)
    status = "-"
    if cert:
        c = next(iter(cert.values()))
        ok = getattr(est, "certified_", None)
        status = f"{c.status}" + ("" if ok is None else f" ({'kept certified' if ok else 'no'})")
    deficit = getattr(est, "convexity_deficit_", None)
    extra = ""
    if isinstance(est, ConvexRegressorCV):
        bp = est.best_params_
        extra = (f"sigma x{est.best_sigma_factor_:g}, r={bp['n_landmarks']}, "
                 f"rho={bp['rho']:g}, {len(est.cv_results_['params'])} cand x "
                 f"{est.n_splits_} splits, {est.n_refits_} refits")
    warned = sorted({c.category.__name__ for c in caught})
    return (name, err, secs, status, "-" if deficit is None else f"{deficit:.3g}", extra,
            ",".join(warned) or "-")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (for CI)")
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--huge", action="store_true", help="also n = 10^6")
    ap.add_argument("--no-fixed", action="store_true", help="skip ConvexRegressor(n_landmarks=50)")
    ap.add_argument("--out", default="convex_cv.md")
    args = ap.parse_args()
    dims, sizes = args.dims, list(args.sizes)
    if args.quick:
        dims, sizes = [2], [300]
    if args.huge:
        sizes.append(1_000_000)
    info = (f"{platform.machine()}, {platform.processor() or '?'}, {os.cpu_count()} cores; "
            f"Python {platform.python_version()}, numpy {np.__version__}, "
            f"scikit-learn {sklearn.__version__}; 1 BLAS thread")
    print(info)
    head = ("| p | n | method | test MSE / Var(f) | seconds | certificate | deficit | "
            "selected | warnings |")
    lines = [head, "|" + "---|" * 9]
    print(head)
    print(lines[1])
    with threadpool_limits(1):
        for p in dims:
            Xt, _, ft = data(5000, p, 99)
            for n in sizes:
                X, y, _ = data(n, p, 0)
                n_train = int(0.8 * n) if n > HOLDOUT_MIN_SAMPLES else n - -(-n // 3)
                ranks = [r for r in auto_ranks(n_train, p) if r is not None]
                R = max(ranks) if ranks else min(n, 100)
                if args.quick:
                    cv = lambda: ConvexRegressorCV(rhos=(1e-4, 1e-6), sigmas=(2.0,),  # noqa: E731
                                                   random_state=0)
                else:
                    cv = lambda: ConvexRegressorCV(random_state=0)  # noqa: E731
                methods = [("psdsos CV", cv)]
                if not args.no_fixed:
                    methods.append(("psdsos fixed r=50",
                                    lambda n=n: ConvexRegressor(n_landmarks=min(50, n // 2),
                                                                random_state=0)))
                methods += [
                    (f"Nystroem({R})+RidgeCV",
                     lambda R=R: make_pipeline(Nystroem(n_components=R, random_state=0),
                                               RidgeCV(alphas=np.logspace(-8, 2, 11)))),
                    ("HGB", lambda: HistGradientBoostingRegressor(random_state=0)),
                ]
                for name, make in methods:
                    row = run(name, make, X, y, Xt, ft)
                    line = (f"| {p} | {n} | {row[0]} | {row[1]:.4g} | {row[2]:.1f} | {row[3]} | "
                            f"{row[4]} | {row[5]} | {row[6]} |")
                    print(line, flush=True)
                    lines.append(line)
    with open(args.out, "w") as fh:
        fh.write(info + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
