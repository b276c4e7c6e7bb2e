r"""Robust and quantile convex regression with kernel SoS (Huber and pinball losses).
=================================================================================

Reference: Muzellec, Bach, Rudi, "Learning PSD-valued functions using kernel sums-of-squares"
(https://hal.science/hal-03454277): eq. (28) with a general convex loss
(Theorem 2 holds for any convex lower-semicontinuous loss), data of eq. (30).

Part A: heavy-tailed noise
    :math:`f_1(x) = \cos\|x\| - 1 + \|x\|^2/2` (eq. 30, a = 1), d = 2,
    :math:`X \sim \mathcal U([-2, 2]^2)`, :math:`Y = f_1(X) + \eta\,T` with T Student-t with
    2 degrees of freedom (infinite variance) and :math:`\eta = 0.3`.  Methods:
    SoS least squares (:class:`psdsos.ConvexRegressor`, ``loss="squared"``), SoS Huber
    (``loss="huber"``, delta = 1.345 times the robust scale 1.4826 MAD of the least-squares
    fit's training residuals, the classical 95%-efficiency tuning), CNLS
    (:class:`psdsos.PiecewiseLinearConvexRegressor`, eq. 27) and kernel ridge
    (:class:`psdsos.estimators.KernelRidgeRegressor`, rho by 5-fold CV on the
    median absolute error, a robust score).  Both SoS fits use the same sigma^2 = 5,
    rho = 1e-4, lam2 = 1e-3 (in the paper's units, lam2 sigma^-4 in the estimator's),
    Nystrom rank 25, default constraint points: they differ in the loss only.  Error: mean
    squared error against the noiseless f_1 on fresh points, mean +- std over seeds.

Part B: convex quantile curves
    d = 1, :math:`X \sim \mathcal U([-2, 2])`,
    :math:`Y = X^2 + (0.3 + 0.15 X^2)\,\varepsilon`, :math:`\varepsilon\sim\mathcal N(0, 1)`,
    whose tau-quantile :math:`x^2 (1 + 0.15 z_\tau) + 0.3 z_\tau` is convex for every tau
    used.  ``loss="quantile"`` for tau in {0.1, 0.5, 0.9}, solved in the primal (Clarabel:
    for the pinball loss it was faster than the dual at these sizes, see
    docs/benchmarks.md); checked: the share of fresh points below each curve is close
    to tau and the curves do not cross on the data range.

Usage::

    python examples/robust_convex_regression.py            # one small run: < 1 min
    python examples/robust_convex_regression.py --paper --out-dir out   # 10 seeds: ~30 s

Matplotlib (optional extra) draws ``robust-convex-quantiles.png`` (and with ``--paper``
``robust-convex-mse.png``) in ``--out-dir``; the table goes to stdout and
``--out-dir/robust_convex_table.md``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from psdsos import ConvexRegressor, PiecewiseLinearConvexRegressor
from psdsos.datasets import convex_regression_truth
from psdsos.estimators import KernelRidgeRegressor, NonConvexFitWarning
from psdsos.model_selection import grid_search_cv

B, ETA, DOF = 2.0, 0.3, 2
SIGMA2, RHO, LAM2, RANK = 5.0, 1e-4, 1e-3, 25
TAUS = (0.1, 0.5, 0.9)
METHODS = ("SoS squared", "SoS Huber", "CNLS", "KRR")


def configure(paper):
    global SIZES, SEEDS, N_TEST, N_QUANT
    if not paper:
        SIZES, SEEDS, N_TEST, N_QUANT = (100,), (0,), 4000, 300
    else:
        SIZES, SEEDS, N_TEST, N_QUANT = (100, 200, 400), tuple(range(10)), 10_000, 1000


configure(paper=False)


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-B, B, (n, 2))
    y = convex_regression_truth(X, a=1.0) + ETA * rng.standard_t(DOF, n)
    return X, y


def huber_delta(model, X, y):
    """1.345 times the robust scale (1.4826 MAD) of the training residuals."""
    r = y - model.predict(X)
    return 1.345 * 1.4826 * float(np.median(np.abs(r - np.median(r))))


def neg_median_abs(est, X, y, sample_weight=None):
    return -float(np.median(np.abs(est.predict(X) - y)))


def run_one(n, seed):
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", NonConvexFitWarning)
        t0 = time.perf_counter()
        X, y = make_data(n, seed)
        Xt = np.random.default_rng(10_000 + seed).uniform(-B, B, (N_TEST, 2))
        ft = convex_regression_truth(Xt, a=1.0)
        sigma = float(np.sqrt(SIGMA2))
        common = dict(sigma=sigma, rho=RHO, lam2=LAM2 / SIGMA2**2,
                      n_landmarks=RANK if n > RANK else None, random_state=seed)
        ls = ConvexRegressor(**common).fit(X, y)
        delta = huber_delta(ls, X, y)
        hub = ConvexRegressor(**common, loss="huber", delta=delta).fit(X, y)
        cnls = PiecewiseLinearConvexRegressor().fit(X, y)
        krr = grid_search_cv(KernelRidgeRegressor(sigma=sigma), X, y,
                             {"rho": [10.0 ** -k for k in range(1, 8)]},
                             cv=KFold(5, shuffle=True, random_state=seed),
                             scoring=neg_median_abs).best_estimator_
        models = dict(zip(METHODS, (ls, hub, cnls, krr), strict=True))
        mse = {k: float(np.mean((m.predict(Xt) - ft) ** 2)) for k, m in models.items()}
    return {"n": n, "seed": seed, "mse": mse, "delta": delta, "hub_gap": hub.dual_gap_,
            "time": time.perf_counter() - t0}


def quantile_curves(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-B, B, (n, 1))
    noise = lambda x, e: (0.3 + 0.15 * x**2) * e  # noqa: E731
    y = X[:, 0] ** 2 + noise(X[:, 0], rng.standard_normal(n))
    Xt = rng.uniform(-B, B, (20_000, 1))
    yt = Xt[:, 0] ** 2 + noise(Xt[:, 0], rng.standard_normal(20_000))
    grid = np.linspace(X.min(), X.max(), 400)[:, None]
    fits, cover = {}, {}
    for tau in TAUS:
        m = ConvexRegressor(loss="quantile", quantile=tau, sigma=1.0, rho=1e-4, lam2=1e-3,
                            solver="primal", primal_solver="CLARABEL", tol=1e-7,
                            random_state=seed).fit(X, y)
        fits[tau] = m
        cover[tau] = float(np.mean(yt < m.predict(Xt)))
    curves = {tau: m.predict(grid) for tau, m in fits.items()}
    truth = {tau: grid[:, 0] ** 2 * (1 + 0.15 * norm.ppf(tau)) + 0.3 * norm.ppf(tau)
             for tau in TAUS}
    return X, y, grid, fits, curves, truth, cover


def figure_quantiles(X, y, grid, curves, truth, path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter(X[:, 0], y, s=8, color="0.5", label="data")
    for tau, color in zip(TAUS, ("tab:blue", "tab:red", "tab:green"), strict=True):
        ax.plot(grid[:, 0], curves[tau], color=color, label=f"SoS tau = {tau:g}")
        ax.plot(grid[:, 0], truth[tau], color=color, ls="--", lw=0.8)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("Convex quantile regression (dashed: true quantiles)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def figure_mse(stats, path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = np.arange(len(SIZES))
    for j, k in enumerate(METHODS):
        ax.bar(x + (j - 1.5) * 0.2, [stats[n][k][0] for n in SIZES], 0.2,
               yerr=[stats[n][k][1] for n in SIZES], capsize=3, label=k)
    ax.set_xticks(x, [str(n) for n in SIZES])
    ax.set_xlabel("n")
    ax.set_ylabel("test MSE")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("eq. 30 under Student-t (2 dof) noise")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--paper", action="store_true",
                    help="n in {100, 200, 400}, 10 seeds, 1000 points for the quantile curves "
                         "(about 30 s); default: one small run (< 1 min)")
    ap.add_argument("--out-dir", default=None, help="write the table and figures there")
    args = ap.parse_args(argv)
    configure(args.paper)
    t0 = time.perf_counter()
    results = [run_one(n, s) for n in SIZES for s in SEEDS]
    stats = {n: {k: (float(np.mean([r["mse"][k] for r in results if r["n"] == n])),
                     float(np.std([r["mse"][k] for r in results if r["n"] == n])))
                 for k in METHODS} for n in SIZES}
    lines = [f"Test MSE against f_1 (eq. 30, a = 1) on {N_TEST} fresh points, X ~ U[-2, 2]^2, "
             f"noise {ETA:g} * Student-t({DOF}); mean +- std over {len(SEEDS)} seed(s).", "",
             "| n | " + " | ".join(METHODS) + " | s / seed |",
             "|---" * (len(METHODS) + 2) + "|"]
    for n in SIZES:
        cell = [r for r in results if r["n"] == n]
        lines.append(f"| {n} | " + " | ".join(f"{stats[n][k][0]:.4f} +- {stats[n][k][1]:.4f}"
                                              for k in METHODS)
                     + f" | {np.mean([r['time'] for r in cell]):.1f} |")
    X, y, grid, fits, curves, truth, cover = quantile_curves(N_QUANT)
    train = {t: float(np.mean(y < fits[t].predict(X))) for t in TAUS}
    lines += ["", f"Quantile curves (d = 1, n = {N_QUANT}): share of 20,000 fresh points below "
              "each curve: " + ", ".join(f"tau {t:g}: {cover[t]:.3f}" for t in TAUS)
              + "; of the training points: " + ", ".join(f"{train[t]:.3f}" for t in TAUS)]
    lines += [f"total wall time {time.perf_counter() - t0:.0f} s"]
    print("\n".join(lines))
    out = args.out_dir
    if out is not None:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "robust_convex_table.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
    try:  # the figures are drawn (and kept open); written with --out-dir
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: no figures")
    else:
        figure_quantiles(X, y, grid, curves, truth,
                         None if out is None else os.path.join(out, "robust-convex-quantiles.png"))
        if len(SIZES) > 1:
            figure_mse(stats, None if out is None else os.path.join(out, "robust-convex-mse.png"))

    # checks: finite errors; the certified Huber fits; Huber below least squares on average
    # (heavy tails); quantile coverage of fresh points within 0.12 of tau (about 3 standard
    # deviations of an estimated quantile's coverage at n = 300); curves ordered on the data
    # range
    for r in results:
        assert all(np.isfinite(v) for v in r["mse"].values()), r
        assert r["hub_gap"] <= 1e-6, r
    for n in SIZES:
        assert stats[n]["SoS Huber"][0] < stats[n]["SoS squared"][0], stats[n]
    for t in TAUS:
        assert abs(cover[t] - t) < 0.12, cover
    assert np.all(curves[0.1] <= curves[0.5] + 1e-6) and np.all(curves[0.5] <= curves[0.9] + 1e-6)
    print("checks passed: Huber below least squares, quantile coverage within 0.12, "
          "curves ordered")


if __name__ == "__main__":
    main()
