"""Benchmark: ShapeConstrainedRegressor (certified shapes) against monotone / convex baselines.

One BLAS thread (threadpoolctl; also run with OMP/OPENBLAS/MKL_NUM_THREADS=1); wall seconds.
1. ``accuracy``: test MSE / Var(f) vs the noise-free f, f Cobb-Douglas (sum a_p = 0.8; full
   mode also sum sqrt(x_p) / d), x ~ U[0.1, 1]^d, noise s std(f), s in {0.05, 0.2}.  All
   tuned by CV on the training set, the same shuffled 3 folds for all:
   ShapeConstrainedRegressorCV(increasing, concave) with its default grid (sigma x
   scale_bandwidth x rho x lam2; certify=False in the CV, refits certified);
   HGB(monotonic_cst) and KernelRidge (rbf, alpha x gamma) by GridSearchCV; CNLS
   (increasing, concave; no hyperparameter).  Ratio psdsos / best other (< 1: win).
2. ``cost``: one fit (sigma="scale", rho=1e-4), n = 1000: certify=False vs True, split into
   solves / branch and bound / the rest (exchange search) by wrapping two internal functions.
3. ``tightness``: random problems (d <= 2, random shapes): certified bound of each constraint
   of the raw fit vs its minimum on a dense grid of the box (10^5 points in d = 1, 1000^2 in
   d = 2; est.gradient / est.hessian with raw=True): sound iff grid min >= bound.
4. ``real``: load_engel (d = 1, + IsotonicRegression), load_production(log=True) (d = 3),
   random 70/30 splits, MSE / Var(y_test), tuned as in 1.

``--loss squared huber`` (sections 1 and 4) fits psdsos once per loss, side by side (one
column each; the baselines unchanged).  Huber's delta: ``--delta`` values in the units of y,
or ``--delta-mads`` multiples of 1.345 x MAD / 0.6745 of the residuals of psdsos's
squared-loss fit on the training part (default 1); with several, the one of the best CV
score (the same folds) is kept, and every delta's test error is in the per-run lines.  The
CV fits of a non-squared loss run up to ``--cv-max-iter`` iterations (default 20000, the
refits' max_iter: their proximal-gradient solver needs thousands of iterations where the
squared loss's Newton steps need tens; at the estimator's cv_max_iter = 1000 the held-out
scores are those of unconverged fits).

Usage::

    python benchmarks/shape_constraints.py --quick   # tiny sizes and grids (for CI)
    python benchmarks/shape_constraints.py           # full run (hours on 1 core); options
    # select parts, e.g. --sections accuracy --dims 2 --sizes 200 500 --seeds 1
    python benchmarks/shape_constraints.py --sections real --real engel \
        --loss squared huber --delta-mads 0.5 1 2      # Engel, squared vs Huber (~30 min)
"""

from __future__ import annotations

import argparse
import itertools
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
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import psdsos
import psdsos.certify._exchange as exchange_module
import psdsos.estimators._shape_fit as shape_fit
from psdsos import (
    PiecewiseLinearConvexRegressor,
    ShapeConstrainedRegressor,
    ShapeConstrainedRegressorCV,
)
from psdsos.datasets import load_engel, load_production
from psdsos.estimators._shape_cv import DEFAULT_RHOS, DEFAULT_SIGMAS
from psdsos.kernels import scale_bandwidth

#: psdsos's CV grid: sigma in multiples of scale_bandwidth, rho, lam2 (set by main())
GRID = {"sigma_mults": DEFAULT_SIGMAS, "rhos": DEFAULT_RHOS, "lam2s": None, "certify_tol": None}
#: psdsos's losses (one column each) and Huber's deltas (set by main())
LOSSES = {"losses": ("squared",), "deltas": None, "delta_mads": (1.0,), "cv_max_iter": None}


def psdsos_name(loss):
    return "psdsos" if loss == "squared" else f"psdsos {loss}"


# ---- machine and timing ---------------------------------------------------------------------
def machine_info() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
    except OSError:
        names = []
    cpu = names[0] if names else platform.processor() or platform.machine()
    threads = ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in
                        ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    return (f"machine: {cpu}, {os.cpu_count()} logical cores (shared), threadpoolctl limit 1 "
            f"BLAS thread, {threads}; python {platform.python_version()}, numpy "
            f"{np.__version__}, scikit-learn {sklearn.__version__}, psdsos from "
            f"{os.path.dirname(psdsos.__file__)}")


@contextmanager
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@contextmanager
def timing_hooks():
    """Accumulate the wall time of the solves and of the certificates' branch and bound."""
    acc = {"solve": 0.0, "bnb": 0.0, "n_solve": 0, "n_bnb": 0}
    solve0, cert0 = shape_fit.solve, exchange_module.certify_constraint

    def timed(fn, key):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[key] += time.perf_counter() - t
                acc["n_" + key] += 1
        return wrapper

    shape_fit.solve = timed(solve0, "solve")
    exchange_module.certify_constraint = timed(cert0, "bnb")
    try:
        yield acc
    finally:
        shape_fit.solve, exchange_module.certify_constraint = solve0, cert0


# ---- data ------------------------------------------------------------------------------------
def production_data(kind, d, n, noise, seed, n_test=2000):
    rng = np.random.default_rng(seed)
    a = 0.8 * np.linspace(1.0, 2.0, d) / np.linspace(1.0, 2.0, d).sum()
    f = ((lambda X: np.prod(X ** a, axis=1)) if kind == "cobb-douglas"
         else (lambda X: np.sqrt(X).sum(axis=1) / d))
    X = rng.uniform(0.1, 1.0, (n, d))
    Xt = rng.uniform(0.1, 1.0, (n_test, d))
    ft = f(Xt)
    y = f(X) + noise * ft.std() * rng.standard_normal(n)
    return X, y, Xt, ft


# ---- the methods -----------------------------------------------------------------------------
def grid_search(est, grid, X, y, cv):
    gs = GridSearchCV(est, grid, cv=cv, scoring="neg_mean_squared_error", error_score="raise")
    with quiet():
        gs.fit(X, y)
    return gs


def certify_setting():
    """psdsos's certify_tol when --certify-tol is given (else the estimator's default)."""
    return {} if GRID["certify_tol"] is None else {"certify_tol": GRID["certify_tol"]}


def fit_psdsos(X, y, cv, increasing=True, concave=True, **loss):
    """ShapeConstrainedRegressorCV over GRID (its defaults unless changed on the command
    line) with the keywords ``loss`` (loss, delta, cv_max_iter); returns (model, info)."""
    est = ShapeConstrainedRegressorCV(
        increasing=increasing, concave=concave, sigmas=GRID["sigma_mults"], rhos=GRID["rhos"],
        lam2s=GRID["lam2s"], cv=cv, random_state=0, **certify_setting(), **loss)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    t_fit = time.perf_counter() - t0
    best = est.best_estimator_
    cert = est.certificate_
    ft = est.cv_results_["mean_fit_time"]
    info = {
        "cv score": est.best_score_,
        "sigma/scale": est.best_sigma_factor_, "rho": est.best_params_["rho"],
        "lam2": est.best_params_["lam2"], "cv + refits s": t_fit, "n_refits": est.n_refits_,
        "refits s": est.refit_time_,
        "n_iter": best.n_iter_, "n_exchange": best.n_exchange_,
        "cv fits stopped at cv_max_iter": est.n_not_converged_,
        "slowest cv fit s": float(np.max(ft)),
        "certified": est.certified_,
        "statuses": {k: c.status for k, c in cert.items()},
        "min relative bound": min(c.relative for c in cert.values()),
        "correction": est.correction_,
        "warnings": sorted({type(w.message).__name__ + ": " + str(w.message)[:160]
                            for w in caught}),
    }
    return est, info


def fit_hgb(X, y, cv):
    est = HistGradientBoostingRegressor(monotonic_cst=[1] * X.shape[1], random_state=0)
    grid = {"learning_rate": [0.05, 0.1], "max_leaf_nodes": [7, 15, 31],
            "min_samples_leaf": [5, 20]}
    return grid_search(est, grid, X, y, cv).best_estimator_


def fit_krr(X, y, cv):
    s = scale_bandwidth(X)
    g0 = 1.0 / (2.0 * s**2)  # the Gaussian of bandwidth sigma="scale"
    est = TransformedTargetRegressor(KernelRidge(kernel="rbf"), transformer=StandardScaler())
    grid = {"regressor__alpha": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0],
            "regressor__gamma": [g0 * m for m in (1 / 16, 0.25, 1.0, 4.0, 16.0)]}
    return grid_search(est, grid, X, y, cv).best_estimator_


BASELINES = {"HGB monotone": fit_hgb, "KernelRidge": fit_krr, "CNLS": lambda X, y, cv:
             PiecewiseLinearConvexRegressor(increasing=True, concave=True).fit(X, y)}


def huber_deltas(X, y, cv, squared):
    """LOSSES's deltas, or its multiples of 1.345 x the MAD scale of the residuals of the
    squared-loss fit ``squared`` (fitted here when None); returns (deltas, MAD scale)."""
    if LOSSES["deltas"]:
        return [float(v) for v in LOSSES["deltas"]], np.nan
    if squared is None:
        squared, _ = fit_psdsos(X, y, cv)
    r = y - squared.predict(X)
    mad = float(np.median(np.abs(r - np.median(r)))) / 0.6745
    return [1.345 * m * mad for m in LOSSES["delta_mads"]], mad


def fit_psdsos_loss(X, y, Xt, target, cv, loss, squared):
    """psdsos with ``loss``; for Huber one fit per delta, the best CV score kept.  Returns
    (model, info) with info["per delta"]: delta -> (CV MSE, test MSE / Var(target))."""
    if loss == "squared":
        return fit_psdsos(X, y, cv)
    if loss != "huber":
        raise ValueError(f"loss {loss!r}: only 'squared' and 'huber' here")
    deltas, mad = huber_deltas(X, y, cv, squared)
    cv_iter = LOSSES["cv_max_iter"] or 20000
    fits = [fit_psdsos(X, y, cv, loss="huber", delta=dl, cv_max_iter=cv_iter) for dl in deltas]
    k = int(np.argmax([info["cv score"] for _, info in fits]))
    est, info = fits[k]
    info = dict(info, delta=deltas[k], mad=mad, **{
        "cv + refits s": sum(i["cv + refits s"] for _, i in fits),
        "per delta": {dl: (-i["cv score"], np.mean((e.predict(Xt) - target) ** 2)
                           / np.var(target)) for dl, (e, i) in zip(deltas, fits, strict=True)}})
    return est, info


def compare(X, y, Xt, target, cv, isotonic=False):
    """Relative test MSE of psdsos (one entry per loss of LOSSES) and the baselines; psdsos
    info (a dict per loss), times, failures."""
    res, times, fails, infos = {}, {}, {}, {}
    cv = KFold(cv, shuffle=True, random_state=0)  # the same folds for every method
    denom = np.var(target)
    squared = None  # the squared-loss fit, whose residuals scale Huber's delta
    for loss in LOSSES["losses"]:
        name = psdsos_name(loss)
        t0 = time.perf_counter()
        try:
            est, info = fit_psdsos_loss(X, y, Xt, target, cv, loss, squared)
            squared = est if loss == "squared" else squared
            res[name] = np.mean((est.predict(Xt) - target) ** 2) / denom
        except Exception as exc:  # reported, not hidden
            info = {"certified": False, "statuses": {}, "warnings": []}
            fails[name] = f"{type(exc).__name__}: {exc}"
        times[name] = time.perf_counter() - t0
        infos[name] = info
    methods = dict(BASELINES)
    if isotonic:
        methods["Isotonic"] = lambda X, y, cv: IsotonicRegression(out_of_bounds="clip").fit(X, y)
    for name, fn in methods.items():
        t0 = time.perf_counter()
        try:
            with quiet():
                m = fn(X, y, cv)
            res[name] = np.mean((m.predict(Xt) - target) ** 2) / denom
        except Exception as exc:
            fails[name] = f"{type(exc).__name__}: {exc}"
        times[name] = time.perf_counter() - t0
    return res, infos, times, fails


def detail(prefix, res, times, infos, fails):
    """One line per run: every method's MSE and time, psdsos's certificate and slowest fit
    (per loss)."""
    return (f"- {prefix}: " + ", ".join(f"{k} {fmt(v)} ({times[k]:.1f} s)" for k, v in res.items())
            + "".join(detail_psdsos(k, i) for k, i in infos.items())
            + "".join(f"; FAILED {k}: {m}" for k, m in fails.items()))


def detail_psdsos(name, info):
    per = info.get("per delta")
    return (f"; {name}"
            + (f" (delta {info['delta']:.4g}, MAD scale {info['mad']:.4g}; per delta "
               "(CV MSE, test): " + ", ".join(f"{dl:.4g}: ({c:.4g}, {fmt(t)})"
                                            for dl, (c, t) in per.items()) + ")"
               if per else "")
            + f" n_iter {info.get('n_iter')}, exchange rounds {info.get('n_exchange')}, "
            f"statuses {info['statuses']}, min relative bound "
            f"{info.get('min relative bound', np.nan):.3g}, correction "
            f"{info.get('correction', np.nan):.3g}, slowest CV fit "
            f"{info.get('slowest cv fit s', np.nan):.1f} s, "
            f"CV fits stopped at cv_max_iter {info.get('cv fits stopped at cv_max_iter')}, "
            f"refits {info.get('n_refits')} ({info.get('refits s', np.nan):.1f} s)"
            + (f"; warnings {info['warnings']}" if info["warnings"] else ""))


def fmt(v):
    return "-" if v is None or not np.isfinite(v) else f"{v:.2e}"


def psdsos_names():
    return [psdsos_name(loss) for loss in LOSSES["losses"]]


def comparison_header(names):
    """With several losses, the last three columns hold one entry per loss, in the order of
    the psdsos columns, separated by " / "."""
    return [f"| setting | {' | '.join(names)} | psdsos / best other | psdsos best in "
            "| certified | psdsos sigma/scale, rho, lam2 | psdsos time (CV + refits) s |",
            "|" + "---|" * (len(names) + 6)]


def runs_won(ours, others, mses):
    """'k/r': in k of the r seeds (splits), ``ours``'s error is at most every other's."""
    mine = mses.get(ours, [])
    theirs = [mses[k] for k in others if len(mses.get(k, [])) == len(mine)]
    if not mine or not theirs:
        return "-"
    won = sum(all(v[j] >= mine[j] for v in theirs) for j in range(len(mine)))
    return f"{won}/{len(mine)}"


def comparison_row(label, names, mses, infos):
    """mses: dict name -> list of values (seeds or splits); infos: a list (seeds or splits)
    of dicts psdsos name -> info; means in the table."""
    mean = {k: float(np.mean(v)) for k, v in mses.items() if len(v)}
    ours = psdsos_names()
    others = [mean[k] for k in names if k not in ours and k in mean]
    ratio = " / ".join(f"{mean[p] / min(others):.2f}" if p in mean and others else "-"
                       for p in ours)
    best_in = " / ".join(runs_won(p, [k for k in names if k not in ours], mses) for p in ours)
    cert = " / ".join(f"{sum(i[p]['certified'] for i in infos)}/{len(infos)}" for p in ours)
    hp = " / ".join("; ".join(f"{i[p].get('sigma/scale', np.nan):g}, "
                              f"{i[p].get('rho', np.nan):g}, {i[p].get('lam2', np.nan):g}"
                              for i in infos) for p in ours)
    tm = " / ".join(", ".join(f"{i[p].get('cv + refits s', np.nan):.0f}" for i in infos)
                    for p in ours)
    cells = " | ".join(fmt(mean.get(k)) for k in names)
    return f"| {label} | {cells} | {ratio} | {best_in} | {cert} | {hp} | {tm} |"


def loss_note():
    losses = LOSSES["losses"]
    if tuple(losses) == ("squared",):
        return "psdsos: squared loss."
    return (f"psdsos with the losses {', '.join(losses)} (one column each); Huber's delta "
            + (f"among {LOSSES['deltas']} (units of y)" if LOSSES["deltas"] else
               f"among {LOSSES['delta_mads']} x 1.345 x the MAD scale of the squared-loss "
               "fit's training residuals")
            + ", the best CV score kept (the same folds); its CV fits up to "
            f"{LOSSES['cv_max_iter'] or 20000} iterations.")


# ---- section 1: accuracy on production functions ---------------------------------------------
def section_accuracy(args, out):
    names = [*psdsos_names(), *BASELINES]
    out += ["", "## 1. Held-out MSE / Var(f), monotone + concave production data", "",
            f"psdsos: ShapeConstrainedRegressorCV (cv = shuffled {args.cv}-fold, the same "
            f"folds for every method) over sigma = {GRID['sigma_mults']} x "
            f"scale_bandwidth x rho = {GRID['rhos']} x lam2 = "
            f"{GRID['lam2s'] or 'min(rho, 1e-7) (paired)'} "
            f"{''.join(f'(certify_tol = {v}) ' for v in certify_setting().values())}"
            "(certify=False in the CV, the best refitted with certify=True, the first "
            "certified of the 3 best kept); predictions by the certified-shape predictor. "
            "Means over seeds " + str(list(range(args.seeds))) + "; per-seed values below. "
            + loss_note(), ""]
    out += comparison_header(names)
    details = []
    for kind, d, n, noise in itertools.product(args.functions, args.dims, args.sizes,
                                               args.noises):
        mses, infos = {k: [] for k in names}, []
        for seed in range(args.seeds):
            X, y, Xt, ft = production_data(kind, d, n, noise, seed)
            res, info, times, fails = compare(X, y, Xt, ft, args.cv)
            for k, v in res.items():
                mses[k].append(v)
            infos.append(info)
            details.append(detail(f"{kind} d={d} n={n} noise={noise} seed={seed}", res, times,
                                  info, fails))
            print(details[-1], flush=True)
        out.append(comparison_row(f"{kind} d={d} n={n} noise={noise}", names, mses, infos))
        print(out[-1], flush=True)
    out += ["", "Per run (MSE / Var(f), wall time of tuning + fit):", "", *details]


# ---- section 2: cost of certification --------------------------------------------------------
#: The settings of the cost section: the estimator's defaults, and the region the CV
#: estimator selects on these data (sigma 2 x scale, small rho and lam2).
COST_SETTINGS = {"defaults (sigma scale, rho 1e-4, lam2 1e-3)": {},
                 "as selected by CV (sigma 2 x scale, rho 1e-6, lam2 1e-7)":
                 {"sigma_mult": 2.0, "rho": 1e-6, "lam2": 1e-7}}


def section_cost(args, out):
    out += ["", "## 2. Cost of the certificate", "",
            "Cobb-Douglas data, noise 0.05, seed 0.  certify=False: the fit at the initial "
            "constraint points; certify=True: fit + exchange + certificates, split by "
            "wrapping the solver and the branch and bound.", "",
            "| setting | d | n | tol | certify=False s | certify=True s | solves s (count) | "
            "branch and bound s | search + rest s | exchange rounds | n_iter | statuses | "
            "cells |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    n = args.cost_n
    for (label, setting), d, tol in itertools.product(COST_SETTINGS.items(), args.cost_dims,
                                                      args.cost_tols):
        X, y, _, _ = production_data("cobb-douglas", d, n, 0.05, 0)
        kw = dict(increasing=True, concave=True, rho=setting.get("rho", 1e-4), tol=tol,
                  random_state=0)
        if setting:
            kw.update(sigma=setting["sigma_mult"] * scale_bandwidth(X), lam2=setting["lam2"])
        with quiet():
            t0 = time.perf_counter()
            ShapeConstrainedRegressor(certify=False, **kw).fit(X, y)
            t_plain = time.perf_counter() - t0
            with timing_hooks() as acc:
                est = ShapeConstrainedRegressor(certify=True, **kw).fit(X, y)
                t_cert = time.perf_counter() - t0 - t_plain
        cert = est.certificate_
        out.append(f"| {label} | {d} | {n} | {tol:g} | {t_plain:.2f} | {t_cert:.2f} | "
                   f"{acc['solve']:.2f} ({acc['n_solve']}) | {acc['bnb']:.2f} | "
                   f"{t_cert - acc['solve'] - acc['bnb']:.2f} | {est.n_exchange_} | "
                   f"{est.n_iter_} | "
                   + ", ".join(f"{k}: {c.status}" for k, c in cert.items())
                   + " | " + ", ".join(str(c.n_cells) for c in cert.values()) + " |")
        print(out[-1], flush=True)


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
        if r < 0.7:
            shapes.setdefault("increasing" if r < 0.35 else "decreasing", []).append(p)
    r = rng.random()
    if r < 0.8:
        shapes["convex" if r < 0.4 else "concave"] = True
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


def grid_minimum(est, name, G, chunk=20000):
    v = np.concatenate([constraint_values(est, name, G[i:i + chunk])
                        for i in range(0, len(G), chunk)])
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
        est = ShapeConstrainedRegressor(**shapes, **params, tol=1e-4, random_state=k)
        t0 = time.perf_counter()
        try:
            with quiet():
                est.fit(X, y)
        except Exception as exc:
            out.append(f"| {k} | {d} | {n} | {shapes} | {params} | FAILED | "
                       f"{type(exc).__name__}: {exc} | | | | | | | |")
            continue
        t_fit = time.perf_counter() - t0
        axes = [np.linspace(lo, hi, args.grid1 if d == 1 else args.grid2)
                for lo, hi in est.x_box_.T]
        G = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
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
        def q(v):
            return (f"{len(v)} cases, max {max(v):.3g}, median {np.median(v):.3g}, within 10x "
                    f"{sum(r <= 10 for r in v)}" if v else "none")
        out += ["", f"certified constraints: {len(margins)}; unsound (grid below the bound): "
                f"{len(unsound)} {unsound}; margin / scale: {q(margins)}; bound / grid min "
                f"where grid min < 0: {q(ratios)}; of these with grid min < -certify_tol * "
                f"scale: {q(far)}"]
        print(out[-1], flush=True)


# ---- section 4: real data --------------------------------------------------------------------
def section_real(args, out):
    out += ["", "## 4. Real data: held-out MSE / Var(y_test), random 70/30 splits", "",
            "Same tuning as section 1 (on the training part only); Engel: income -> food "
            "expenditure (d = 1); Production: log gsp on log(pc, pcap, emp) (d = 3). "
            + loss_note(), ""]
    for label in args.real:
        iso = label == "engel"
        X, y = (load_engel(return_X_y=True) if iso
                else load_production(return_X_y=True, log=True))
        names = [*psdsos_names(), *BASELINES] + (["Isotonic"] if iso else [])
        out += comparison_header(names)
        mses, infos, details = {k: [] for k in names}, [], []
        for split in range(args.splits):
            perm = np.random.default_rng(1000 + split).permutation(len(y))
            tr, te = perm[:int(0.7 * len(y))], perm[int(0.7 * len(y)):]
            res, info, times, fails = compare(X[tr], y[tr], X[te], y[te], args.cv, iso)
            for k, v in res.items():
                mses[k].append(v)
            infos.append(info)
            details.append(detail(f"{label} split {split}", res, times, info, fails))
            print(details[-1], flush=True)
        out.append(comparison_row(f"{label} n={len(y)} d={X.shape[1]}", names, mses, infos))
        print(out[-1], flush=True)
        out += ["", *details, ""]


SECTIONS = dict(accuracy=section_accuracy, cost=section_cost, tightness=section_tightness,
                real=section_real)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes and grids, for CI (a minute)")
    ap.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    ap.add_argument("--functions", nargs="+", choices=["cobb-douglas", "sqrt"])
    ap.add_argument("--real", nargs="+", choices=["engel", "production"])
    ap.add_argument("--cost-tols", nargs="+", type=float, default=[1e-4, 1e-6])
    for flag in ("sizes", "dims", "cost-dims"):
        ap.add_argument(f"--{flag}", nargs="+", type=int)
    for flag in ("noises", "sigma-mults", "rhos", "lam2s"):
        ap.add_argument(f"--{flag}", nargs="+", type=float)
    for flag in ("seeds", "cost-n", "problems", "grid2", "splits"):
        ap.add_argument(f"--{flag}", type=int)
    ap.add_argument("--cv", type=int, default=3)
    ap.add_argument("--tight-seed", type=int, default=0)
    ap.add_argument("--grid1", type=int, default=100000)
    ap.add_argument("--max-exchange", type=int, default=None,
                    help="tightness: the estimator's max_exchange (0: certify the first fit)")
    ap.add_argument("--loss", nargs="+", choices=["squared", "huber"], default=["squared"],
                    help="psdsos's losses (accuracy, real), one column each")
    ap.add_argument("--delta", nargs="+", type=float, default=None,
                    help="Huber's delta(s) in the units of y (several: chosen by CV)")
    ap.add_argument("--delta-mads", nargs="+", type=float, default=[1.0],
                    help="Huber's delta(s) as multiples of 1.345 x the MAD scale of the "
                    "squared-loss fit's training residuals (when --delta is not given)")
    ap.add_argument("--certify-tol", type=float, default=None,
                    help="certify_tol of psdsos's refits (accuracy, real; default: the "
                         "estimator's)")
    ap.add_argument("--cv-max-iter", type=int, default=None,
                    help="cv_max_iter of psdsos's CV fits with a non-squared loss (20000)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    q = args.quick
    defaults = {
        "sizes": [60] if q else [200, 500, 1000, 2000], "dims": [2] if q else [2, 3],
        "noises": [0.2] if q else [0.05, 0.2],
        "functions": ["cobb-douglas"] if q else ["cobb-douglas", "sqrt"],
        "seeds": 1 if q else 3, "cost_dims": [2] if q else [2, 3],
        "cost_n": 150 if q else 1000, "problems": 1 if q else 20, "grid2": 100 if q else 1000,
        "real": ["engel"] if q else ["engel", "production"], "splits": 1 if q else 5,
        "sigma_mults": [2.0] if q else list(DEFAULT_SIGMAS),
        "rhos": [1e-4] if q else list(DEFAULT_RHOS),
        "lam2s": [1e-5] if q else None,
    }
    for k, v in defaults.items():
        setattr(args, k, v if getattr(args, k) is None else getattr(args, k))
    GRID.update(sigma_mults=tuple(args.sigma_mults), rhos=tuple(args.rhos),
                lam2s=None if args.lam2s is None else tuple(args.lam2s),
                certify_tol=args.certify_tol)
    LOSSES.update(losses=tuple(dict.fromkeys(args.loss)), deltas=args.delta,
                  delta_mads=tuple(args.delta_mads), cv_max_iter=args.cv_max_iter)
    if q:
        args.cost_tols = args.cost_tols[:1]
        args.cv = min(args.cv, 2)
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
