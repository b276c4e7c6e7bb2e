"""Benchmark: ShapeConstrainedRegressor (certified shapes) against monotone / convex baselines.

Four sections, one BLAS thread everywhere (threadpoolctl; run with OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 as well), wall seconds measured side by side in
one run:

1. ``accuracy``: held-out MSE / Var(f) against the noise-free f on monotone and concave
   production data, f(x) = prod_p x_p^{a_p} (Cobb-Douglas, sum a_p = 0.8) and in the full
   mode also f(x) = sum_p sqrt(x_p) / d; x ~ U[0.1, 1]^d, d in {2, 3}, y = f + e with
   e ~ N(0, (s std f)^2), s in {0.05, 0.2}; test set 2000 fresh points of the same law.
   Methods, each tuned by GridSearchCV (3 folds, mean squared error) on the training set
   only: psdsos ``ShapeConstrainedRegressor(increasing=True, concave=True)`` over sigma
   (multiples of ``scale_bandwidth(X_train)``) x rho x lam2 (the Frobenius weight of the
   SoS matrices: its default 1e-3 biases the fit), with ``certify=False`` and tol 1e-4
   inside the CV for speed, the best refitted with ``certify=True`` (the reported model,
   predictions by the certified-shape predictor); HistGradientBoostingRegressor with
   ``monotonic_cst=[1] * d``; KernelRidge (rbf, y standardized) over alpha x gamma;
   PiecewiseLinearConvexRegressor (CNLS, ``increasing=True, concave=True``: no
   hyperparameter).  Ratio = psdsos / best baseline (< 1: psdsos wins).
2. ``cost``: wall time of one fit with fixed hyperparameters (sigma="scale", rho=1e-4) at
   d = 2 and 3, n = 1000, Cobb-Douglas data: ``certify=False`` (the fit at the initial
   constraint points) and ``certify=True`` split into the solves (first + re-solves after
   each exchange round), the branch and bound of the certificates, and the rest (the
   exchange's search for violators, scaling), by wrapping the two internal functions.
3. ``tightness``: random problems (d in {1, 2}, random shapes among increasing /
   decreasing / convex / concave / lower, random smooth data): the certified bound of each
   constraint of the RAW fit vs its minimum over a dense grid of the training box (10^5
   points in d = 1, 1000 x 1000 in d = 2), from ``est.gradient(X, raw=True)`` and
   ``est.hessian(X, raw=True)``: soundness = grid min >= bound (the margin, relative to the
   constraint's scale, must be >= 0), tightness = (grid min - bound) / scale and, where the
   grid min is < 0, bound / grid min (<= 10 asked).
4. ``real``: load_engel (d = 1; increasing + concave; also IsotonicRegression) and
   load_production(log=True) (d = 3; increasing + concave), 5 random 70/30 splits,
   held-out MSE / Var(y_test), same tuning as section 1.

Usage::

    python benchmarks/shape_constraints.py --quick   # small sizes, < 5 minutes
    python benchmarks/shape_constraints.py           # full run (hours on 1 core)
    python benchmarks/shape_constraints.py --sections accuracy --sizes 200 500 --seeds 1
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from contextlib import contextmanager

import numpy as np
import sklearn
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.isotonic import IsotonicRegression
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import psdsos
import psdsos.estimators._shape as shape_module
import psdsos.estimators._shape_fit as shape_fit
from psdsos import PiecewiseLinearConvexRegressor, ShapeConstrainedRegressor
from psdsos.datasets import load_engel, load_production
from psdsos.kernels import scale_bandwidth

#: psdsos's CV grid: sigma in multiples of scale_bandwidth, rho, lam2 (set by main())
GRID = {"sigma_mults": (0.5, 1.0, 2.0), "rhos": (1e-2, 1e-3, 1e-4, 1e-5),
        "lam2s": (1e-3, 1e-5, 1e-7)}
CV_TOL = 1e-4


# ---- machine and timing ---------------------------------------------------------------------
def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    threads = ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in
                        ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    return (f"machine: {cpu}, {os.cpu_count()} logical cores (shared), threadpoolctl limit 1 "
            f"BLAS thread, {threads}; python {platform.python_version()}, numpy "
            f"{np.__version__}, scikit-learn {sklearn.__version__}, psdsos from "
            f"{os.path.dirname(psdsos.__file__)}")


@contextmanager
def timing_hooks():
    """Accumulate the wall time of the solves and of the certificates' branch and bound."""
    acc = {"solve": 0.0, "bnb": 0.0, "n_solve": 0}
    solve0, cert0 = shape_fit.solve, shape_module.certify_constraint

    def solve(*a, **k):
        t = time.perf_counter()
        try:
            return solve0(*a, **k)
        finally:
            acc["solve"] += time.perf_counter() - t
            acc["n_solve"] += 1

    def cert(*a, **k):
        t = time.perf_counter()
        try:
            return cert0(*a, **k)
        finally:
            acc["bnb"] += time.perf_counter() - t

    shape_fit.solve, shape_module.certify_constraint = solve, cert
    try:
        yield acc
    finally:
        shape_fit.solve, shape_module.certify_constraint = solve0, cert0


# ---- data ------------------------------------------------------------------------------------
def production_function(kind: str, d: int):
    if kind == "cobb-douglas":
        a = np.linspace(1.0, 2.0, d)
        a = 0.8 * a / a.sum()
        return lambda X: np.prod(X ** a, axis=1), "prod x_p^a_p, a = " + np.array2string(
            a, precision=3)
    return lambda X: np.sqrt(X).sum(axis=1) / d, "sum sqrt(x_p) / d"


def production_data(kind, d, n, noise, seed, n_test=2000):
    rng = np.random.default_rng(seed)
    f, _ = production_function(kind, d)
    X = rng.uniform(0.1, 1.0, (n, d))
    Xt = rng.uniform(0.1, 1.0, (n_test, d))
    ft = f(Xt)
    y = f(X) + noise * ft.std() * rng.standard_normal(n)
    return X, y, Xt, ft


# ---- the methods -----------------------------------------------------------------------------
def grid_search(est, grid, X, y, cv):
    gs = GridSearchCV(est, grid, cv=cv, scoring="neg_mean_squared_error", error_score="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gs.fit(X, y)
    return gs


def fit_psdsos(X, y, cv, increasing=True, concave=True):
    """CV with certify=False, refit of the best with certify=True; returns (model, info)."""
    s = scale_bandwidth(X)
    base = ShapeConstrainedRegressor(increasing=increasing, concave=concave, certify=False,
                                     tol=CV_TOL, random_state=0)
    t0 = time.perf_counter()
    gs = grid_search(base, {"sigma": [m * s for m in GRID["sigma_mults"]],
                            "rho": list(GRID["rhos"]), "lam2": list(GRID["lam2s"])}, X, y, cv)
    t_cv = time.perf_counter() - t0
    best = dict(gs.best_params_)
    ft = gs.cv_results_["mean_fit_time"]
    slow = gs.cv_results_["params"][int(np.argmax(ft))]
    slow_txt = ", ".join(f"{k} {v / s if k == 'sigma' else v:g}" for k, v in slow.items())
    est = ShapeConstrainedRegressor(increasing=increasing, concave=concave, certify=True,
                                    tol=CV_TOL, random_state=0, **best)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    t_fit = time.perf_counter() - t0
    cert = est.certificate_
    info = {
        "sigma/scale": best["sigma"] / s, "rho": best["rho"], "lam2": best["lam2"],
        "cv s": t_cv,
        "refit s": t_fit, "n_iter": est.n_iter_, "n_exchange": est.n_exchange_,
        "slowest cv fit": f"{ft.max():.1f} s at {slow_txt} (sigma in units of scale)",
        "certified": all(c.status == "certified" for c in cert.values()),
        "statuses": {k: c.status for k, c in cert.items()},
        "min relative bound": min(c.relative for c in cert.values()),
        "correction": est.correction_,
        "warnings": sorted({type(w.message).__name__ + ": " + str(w.message)[:160]
                            for w in caught}),
    }
    return est, info


def fit_hgb(X, y, cv):
    d = X.shape[1]
    est = HistGradientBoostingRegressor(monotonic_cst=[1] * d, random_state=0)
    grid = {"learning_rate": [0.05, 0.1], "max_leaf_nodes": [7, 15, 31],
            "min_samples_leaf": [5, 20]}
    return grid_search(est, grid, X, y, cv).best_estimator_


def fit_krr(X, y, cv):
    s = scale_bandwidth(X)
    g0 = 1.0 / (2.0 * s**2)  # the Gaussian of bandwidth sigma="scale"
    est = TransformedTargetRegressor(KernelRidge(kernel="rbf"), transformer=StandardScaler())
    grid = {"regressor__alpha": [1e-4, 1e-3, 1e-2, 1e-1, 1.0],
            "regressor__gamma": [g0 * m for m in (0.25, 1.0, 4.0, 16.0)]}
    return grid_search(est, grid, X, y, cv).best_estimator_


def fit_cnls(X, y, cv):
    return PiecewiseLinearConvexRegressor(increasing=True, concave=True).fit(X, y)


class _Isotonic:
    def fit(self, X, y, cv):
        self.m = IsotonicRegression(out_of_bounds="clip").fit(X[:, 0], y)
        return self

    def predict(self, X):
        return self.m.predict(X[:, 0])


BASELINES = {"HGB monotone": fit_hgb, "KernelRidge": fit_krr, "CNLS": fit_cnls}


def compare(X, y, Xt, target, cv, isotonic=False):
    """Relative test MSE of psdsos and the baselines, psdsos info, times, failures."""
    res, times, fails = {}, {}, {}
    denom = np.var(target)
    t0 = time.perf_counter()
    try:
        est, info = fit_psdsos(X, y, cv)
        res["psdsos"] = np.mean((est.predict(Xt) - target) ** 2) / denom
    except Exception as exc:  # reported, not hidden
        info = {"certified": False, "statuses": {}, "warnings": []}
        fails["psdsos"] = f"{type(exc).__name__}: {exc}"
    times["psdsos"] = time.perf_counter() - t0
    methods = dict(BASELINES)
    if isotonic:
        methods["Isotonic"] = lambda X, y, cv: _Isotonic().fit(X, y, cv)
    for name, fn in methods.items():
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = fn(X, y, cv)
            res[name] = np.mean((m.predict(Xt) - target) ** 2) / denom
        except Exception as exc:
            fails[name] = f"{type(exc).__name__}: {exc}"
        times[name] = time.perf_counter() - t0
    return res, info, times, fails


def fmt(v):
    return "-" if v is None or not np.isfinite(v) else f"{v:.2e}"


def comparison_header(names):
    cols = " | ".join(names)
    return [f"| setting | {cols} | psdsos / best other | certified | psdsos sigma/scale, rho "
            "| psdsos time (cv + refit) s |",
            "|" + "---|" * (len(names) + 5)]


def comparison_row(label, names, mses, info):
    """mses: dict name -> list of values (seeds or splits); means in the table."""
    mean = {k: float(np.mean(v)) for k, v in mses.items() if len(v)}
    others = [mean[k] for k in names if k != "psdsos" and k in mean]
    ratio = mean["psdsos"] / min(others) if "psdsos" in mean and others else np.nan
    cert = f"{sum(i['certified'] for i in info)}/{len(info)}"
    hp = "; ".join(f"{i.get('sigma/scale', np.nan):g}, {i.get('rho', np.nan):g}, "
                   f"{i.get('lam2', np.nan):g}" for i in info)
    tm = ", ".join(f"{i.get('cv s', np.nan):.0f}+{i.get('refit s', np.nan):.0f}" for i in info)
    cells = " | ".join(fmt(mean.get(k)) for k in names)
    return f"| {label} | {cells} | {ratio:.2f} | {cert} | {hp} | {tm} |"


# ---- section 1: accuracy on production functions ---------------------------------------------
def section_accuracy(args, out):
    names = ["psdsos", *BASELINES]
    out += ["", "## 1. Held-out MSE / Var(f), monotone + concave production data", "",
            f"psdsos: GridSearchCV (cv={args.cv}) over sigma = {GRID['sigma_mults']} x "
            f"scale_bandwidth x rho = {GRID['rhos']} x lam2 = {GRID['lam2s']}, "
            f"certify=False, tol={CV_TOL} inside the CV; the best refitted "
            "with certify=True (same tol); predictions by the certified-shape predictor. "
            "Means over seeds " + str(list(range(args.seeds))) + "; per-seed values below.",
            ""]
    out += comparison_header(names)
    details, fail_lines = [], []
    for kind in args.functions:
        for d in args.dims:
            for n in args.sizes:
                for noise in args.noises:
                    mses = {k: [] for k in names}
                    infos = []
                    for seed in range(args.seeds):
                        X, y, Xt, ft = production_data(kind, d, n, noise, seed)
                        res, info, times, fails = compare(X, y, Xt, ft, args.cv)
                        for k, v in res.items():
                            mses[k].append(v)
                        infos.append(info)
                        details.append(
                            f"- {kind} d={d} n={n} noise={noise} seed={seed}: "
                            + ", ".join(f"{k} {fmt(v)} ({times[k]:.1f} s)"
                                        for k, v in res.items())
                            + f"; psdsos n_iter {info.get('n_iter')}, exchange rounds "
                            f"{info.get('n_exchange')}, statuses {info['statuses']}, min "
                            f"relative bound {info.get('min relative bound', np.nan):.3g}, "
                            f"correction {info.get('correction', np.nan):.3g}, slowest CV fit "
                            f"{info.get('slowest cv fit')}"
                            + (f"; warnings {info['warnings']}" if info["warnings"] else ""))
                        fail_lines += [f"- FAILED {k}: {kind} d={d} n={n} noise={noise} "
                                       f"seed={seed}: {msg}" for k, msg in fails.items()]
                        print(details[-1], flush=True)
                    row = comparison_row(f"{kind} d={d} n={n} noise={noise}", names, mses,
                                         infos)
                    out.append(row)
                    print(row, flush=True)
    out += ["", "Per run (MSE / Var(f), wall time of tuning + fit):", "", *details,
            *fail_lines]


# ---- section 2: cost of certification --------------------------------------------------------
def section_cost(args, out):
    out += ["", "## 2. Cost of the certificate (fixed sigma='scale', rho=1e-4)", "",
            "Cobb-Douglas data, noise 0.05, seed 0.  certify=False: the fit at the initial "
            "constraint points; certify=True: fit + exchange + certificates, split by "
            "wrapping the solver and the branch and bound.", "",
            "| d | n | tol | certify=False s | certify=True s | solves s (count) | branch and "
            "bound s | search + rest s | exchange rounds | n_iter | statuses | cells |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in args.cost_dims:
        for tol in args.cost_tols:
            n = args.cost_n
            X, y, _, _ = production_data("cobb-douglas", d, n, 0.05, 0)
            kw = dict(increasing=True, concave=True, rho=1e-4, tol=tol, random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                ShapeConstrainedRegressor(certify=False, **kw).fit(X, y)
                t_plain = time.perf_counter() - t0
                with timing_hooks() as acc:
                    t0 = time.perf_counter()
                    est = ShapeConstrainedRegressor(certify=True, **kw).fit(X, y)
                    t_cert = time.perf_counter() - t0
            cert = est.certificate_
            row = (f"| {d} | {n} | {tol:g} | {t_plain:.2f} | {t_cert:.2f} | {acc['solve']:.2f} "
                   f"({acc['n_solve']}) | {acc['bnb']:.2f} "
                   f"| {t_cert - acc['solve'] - acc['bnb']:.2f} | {est.n_exchange_} "
                   f"| {est.n_iter_} | "
                   + ", ".join(f"{k}: {c.status}" for k, c in cert.items())
                   + " | " + ", ".join(str(c.n_cells) for c in cert.values()) + " |")
            out.append(row)
            print(row, flush=True)


# ---- section 3: tightness and soundness ------------------------------------------------------
def random_problem(rng):
    d = int(rng.integers(1, 3))
    n = int(rng.choice([100, 200, 400]))
    lo = rng.uniform(-2.0, 0.0, d)
    hi = lo + rng.uniform(0.5, 3.0, d)
    X = rng.uniform(lo, hi, (n, d))
    c, q, w = rng.normal(size=d), rng.normal(), rng.normal(size=d)
    Z = (X - lo) / (hi - lo)
    f = Z @ c + q * (Z**2).sum(axis=1) + 0.3 * np.sin(3.0 * Z @ w)
    y = f + 0.1 * f.std() * rng.standard_normal(n)
    shapes = {}
    for p in range(d):
        r = rng.random()
        if r < 0.35:
            shapes.setdefault("increasing", []).append(p)
        elif r < 0.7:
            shapes.setdefault("decreasing", []).append(p)
    r = rng.random()
    if r < 0.4:
        shapes["convex"] = True
    elif r < 0.8:
        shapes["concave"] = True
    if rng.random() < 0.3 or not shapes:
        shapes["lower"] = float(np.quantile(y, 0.1))
    s = scale_bandwidth(X)
    params = dict(sigma=float(s * rng.choice([0.5, 1.0])), rho=float(rng.choice([1e-3, 1e-4])))
    return X, y, shapes, params


def constraint_values(est, name, G):
    """The constraint function `name` of the raw fit on the grid G (user's units)."""
    kind = name.split("[")[0]
    if kind in ("lower", "upper"):
        v = est.predict(G, raw=True)
        return v - est.lower if kind == "lower" else est.upper - v
    idx = [int(t) for t in name[name.index("[") + 1:-1].split(",")]
    if kind in ("increasing", "decreasing"):
        g = est.gradient(G, raw=True)[:, idx[0]]
        return g if kind == "increasing" else -g
    H = est.hessian(G, raw=True)[:, idx][:, :, idx]
    H = H if kind == "convex" else -H
    return np.linalg.eigvalsh(H)[:, 0]


def dense_grid(box, per_dim):
    axes = [np.linspace(box[0, p], box[1, p], per_dim) for p in range(box.shape[1])]
    return np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)


def grid_minimum(est, name, G, chunk=20000):
    vals = [constraint_values(est, name, G[i:i + chunk]) for i in range(0, len(G), chunk)]
    v = np.concatenate(vals)
    return float(v.min()), float(np.mean(np.abs(v)))


def section_tightness(args, out):
    out += ["", "## 3. Certified bound vs dense-grid minimum of the raw fit", "",
            f"{args.problems} random problems (seed {args.tight_seed}), max_exchange "
            f"{'default (10)' if args.max_exchange is None else args.max_exchange}; grid "
            f"{args.grid1} points (d = 1) or {args.grid2}^2 (d = 2) on the training box "
            "(est.x_box_); scale = |bound / relative| (the estimator's yardstick, mean |g| "
            "over its design), or the grid's mean |g| when relative = 0.  margin = grid min - "
            "bound (>= 0: sound), rel. gap = margin / scale.", "",
            "| # | d | n | shapes | sigma, rho | constraint | status | bound | grid min "
            "| margin / scale | bound / grid min | exchange rounds | fit s | grid s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(args.tight_seed)
    margins, ratios, unsound, far = [], [], [], []
    for k in range(args.problems):
        X, y, shapes, params = random_problem(rng)
        d, n = X.shape[1], X.shape[0]
        if args.max_exchange is not None:
            params["max_exchange"] = args.max_exchange
        est = ShapeConstrainedRegressor(**shapes, **params, tol=CV_TOL, random_state=k)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
        except Exception as exc:
            out.append(f"| {k} | {d} | {n} | {shapes} | {params} | FAILED | "
                       f"{type(exc).__name__}: {exc} | | | | | | | |")
            continue
        t_fit = time.perf_counter() - t0
        G = dense_grid(est.x_box_, args.grid1 if d == 1 else args.grid2)
        sh = ", ".join(f"{a}={b if not isinstance(b, float) else round(b, 3)}"
                       for a, b in shapes.items())
        for name, c in est.certificate_.items():
            t0 = time.perf_counter()
            gmin, gmean = grid_minimum(est, name, G)
            t_grid = time.perf_counter() - t0
            scale = abs(c.bound / c.relative) if c.relative != 0 else max(gmean, 1e-300)
            margin = gmin - c.bound
            ratio = c.bound / gmin if gmin < 0 else np.nan
            if c.status == "certified":
                margins.append(margin / scale)
                if np.isfinite(ratio):
                    ratios.append(ratio)
                    if gmin < -est.certify_tol * scale:  # a violation above the goal's slack
                        far.append(ratio)
                if margin < -1e-9 * scale:
                    unsound.append((k, name, c.bound, gmin))
            row = (f"| {k} | {d} | {n} | {sh} | {params['sigma']:.3g}, {params['rho']:g} "
                   f"| {name} | {c.status} | {c.bound:.4g} | {gmin:.4g} | {margin / scale:.3g} "
                   f"| {ratio:.3g} | {est.n_exchange_} | {t_fit:.1f} | {t_grid:.1f} |")
            out.append(row)
            print(row, flush=True)
    if margins:
        out += ["", f"certified constraints: {len(margins)}; unsound (grid below the bound): "
                f"{len(unsound)} {unsound}; min margin / scale {min(margins):.3g}, median "
                f"{np.median(margins):.3g}, max {max(margins):.3g}; bound / grid min where "
                f"grid min < 0: " + (f"{len(ratios)} cases, max {max(ratios):.3g}, "
                                     f"median {np.median(ratios):.3g}" if ratios else "none")
                + f"; of these with grid min < -certify_tol * scale: {len(far)}"
                + (f", bound / grid min max {max(far):.3g}, within 10x: "
                   f"{sum(r <= 10 for r in far)}" if far else "")]
        print(out[-1], flush=True)


# ---- section 4: real data --------------------------------------------------------------------
def section_real(args, out):
    out += ["", "## 4. Real data: held-out MSE / Var(y_test), random 70/30 splits", "",
            "Same tuning as section 1 (on the training part only); Engel: income -> food "
            "expenditure (d = 1); Production: log gsp on log(pc, pcap, emp) (d = 3).", ""]
    for label, loader, iso in (("engel", lambda: load_engel(return_X_y=True), True),
                               ("production(log)",
                                lambda: load_production(return_X_y=True, log=True), False)):
        if label.split("(")[0] not in args.real:
            continue
        X, y = loader()
        names = ["psdsos", *BASELINES] + (["Isotonic"] if iso else [])
        out += comparison_header(names)
        mses = {k: [] for k in names}
        infos, details = [], []
        for split in range(args.splits):
            rng = np.random.default_rng(1000 + split)
            perm = rng.permutation(len(y))
            cut = int(0.7 * len(y))
            tr, te = perm[:cut], perm[cut:]
            res, info, times, fails = compare(X[tr], y[tr], X[te], y[te], args.cv, iso)
            for k, v in res.items():
                mses[k].append(v)
            infos.append(info)
            details.append(f"- {label} split {split}: " + ", ".join(
                f"{k} {fmt(v)} ({times[k]:.1f} s)" for k, v in res.items())
                + f"; psdsos statuses {info['statuses']}, slowest CV fit "
                f"{info.get('slowest cv fit')}"
                + (f"; warnings {info['warnings']}" if info["warnings"] else "")
                + "".join(f"; FAILED {k}: {m}" for k, m in fails.items()))
            print(details[-1], flush=True)
        out.append(comparison_row(f"{label} n={len(y)} d={X.shape[1]}", names, mses, infos))
        print(out[-1], flush=True)
        out += ["", *details, ""]


SECTIONS = {"accuracy": section_accuracy, "cost": section_cost, "tightness": section_tightness,
            "real": section_real}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, < 5 minutes")
    ap.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    ap.add_argument("--sizes", nargs="+", type=int)
    ap.add_argument("--dims", nargs="+", type=int)
    ap.add_argument("--noises", nargs="+", type=float)
    ap.add_argument("--functions", nargs="+", choices=["cobb-douglas", "sqrt"])
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--cv", type=int, default=3)
    ap.add_argument("--cost-dims", nargs="+", type=int)
    ap.add_argument("--cost-n", type=int)
    ap.add_argument("--cost-tols", nargs="+", type=float, default=[1e-4, 1e-6])
    ap.add_argument("--problems", type=int)
    ap.add_argument("--tight-seed", type=int, default=0)
    ap.add_argument("--max-exchange", type=int, default=None,
                    help="tightness: the estimator's max_exchange (0: certify the first fit, "
                    "whose violations are larger)")
    ap.add_argument("--grid1", type=int, default=100000)
    ap.add_argument("--grid2", type=int)
    ap.add_argument("--real", nargs="+", choices=["engel", "production"])
    ap.add_argument("--splits", type=int)
    ap.add_argument("--sigma-mults", nargs="+", type=float)
    ap.add_argument("--rhos", nargs="+", type=float)
    ap.add_argument("--lam2s", nargs="+", type=float)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    q = args.quick
    defaults = {
        "sizes": [100] if q else [200, 500, 1000, 2000], "dims": [2] if q else [2, 3],
        "noises": [0.2] if q else [0.05, 0.2],
        "functions": ["cobb-douglas"] if q else ["cobb-douglas", "sqrt"],
        "seeds": 1 if q else 3, "cost_dims": [2] if q else [2, 3],
        "cost_n": 300 if q else 1000, "problems": 3 if q else 20, "grid2": 300 if q else 1000,
        "real": ["engel"] if q else ["engel", "production"], "splits": 1 if q else 5,
        "sigma_mults": [1.0, 2.0] if q else [0.5, 1.0, 2.0],
        "rhos": [1e-3, 1e-5] if q else [1e-2, 1e-3, 1e-4, 1e-5],
        "lam2s": [1e-3, 1e-5] if q else [1e-3, 1e-5, 1e-7],
    }
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    GRID.update(sigma_mults=tuple(args.sigma_mults), rhos=tuple(args.rhos),
                lam2s=tuple(args.lam2s))
    if q:
        args.cost_tols = args.cost_tols[:1]
    out_path = args.out or f"bench-out/shape_constraints{'-quick' if q else ''}.md"
    out = [f"# ShapeConstrainedRegressor benchmark ({'quick' if q else 'full'} mode)", "",
           machine_info(), "", "arguments: " + str(vars(args))]
    print("\n".join(out), flush=True)
    t0 = time.perf_counter()
    with threadpool_limits(1):
        for name in args.sections:
            ts = time.perf_counter()
            SECTIONS[name](args, out)
            out.append(f"\n(section {name}: {time.perf_counter() - ts:.0f} s wall)")
            print(out[-1], flush=True)
    out.append(f"\ntotal wall time {time.perf_counter() - t0:.0f} s")
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(out[-1], f"-> {out_path}", flush=True)


if __name__ == "__main__":
    main()
