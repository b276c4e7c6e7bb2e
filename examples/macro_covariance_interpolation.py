r"""Real covariance matrices: PSD regression against geodesic interpolation.
=========================================================================

A real PSD-valued time series: the 3 x 3 covariance matrices of the annualized quarterly
growth rates of US real GDP, consumption and investment over rolling 5-year windows, every
3 quarters (FRED data 1959-2009, bundled as
:func:`psdsos.datasets.load_macro_covariances`): 61 matrices 0.75 years apart, eigenvalues
from 0.2 to 850.  Fifteen interior times are held out (``numpy.random.default_rng(0)``, the
split of the issue "PSD-valued interpolation on real data"), and each method predicts the
held-out matrices from the other 46:

- :class:`psdsos.PSDRegressor`, the kernel sums-of-squares model
  :math:`F(t) = \Psi(t)^\top \mathbf B \Psi(t)`, :math:`\mathbf B \succeq 0` (Muzellec,
  Bach and Rudi, eq. 3 and 11), fitted to the square roots of the matrices and predicting
  :math:`F(t)^2` (``target="sqrt"``: the training loss then bounds the Bures-Wasserstein
  error), its bandwidth and ``lam2`` chosen by :func:`psdsos.model_selection.grid_search_cv`
  with ``scoring="neg_bures_wasserstein"``, the error measure of the comparison;
- piecewise geodesic interpolation between consecutive training times
  (:class:`psdsos.geometry.PiecewiseGeodesicInterpolator`) in the log-Euclidean,
  affine-invariant and Bures-Wasserstein geometries, and linear interpolation of the
  entries;
- for reference, PSDRegressor fitted to the matrices themselves (``target="matrix"``,
  the same selection) and untuned (its defaults).

Three choices make the tuning fit the task.  *Bandwidths* of a time input are multiples of
the sampling interval h (the median gap of the training times), 4h to 12h;
``sigma="scale"`` (the spread of all times, ~9 years) is too wide for a 45-year series.
*Folds*: the task is interpolation at interior times, so the cross-validation holds out
interior training times only (5 folds at random, the first and last times in every
training fold), *repeated* with 3 random fold assignments (15 splits): one assignment of 46
times is a noisy estimate, and its noise decides between candidates of nearly equal error.
*Target*: the square roots.  Nothing is tuned on the held-out matrices.

The table gives the mean squared Bures-Wasserstein, affine-invariant and log-Euclidean
distances (the last two with the eigenvalue floor of
:func:`psdsos.model_selection.mean_squared_affine_invariant`) over the 15 held-out
matrices.  One split of 15 times is itself a noisy test: ``--splits K`` repeats the whole
comparison (selection included) over K random splits and draws the errors split by split.
The figure shows the eigenvalues along time, the (GDP, investment) block of the held-out
matrices as ellipses at one scale, and the error at each held-out time.

Run: ``python examples/macro_covariance_interpolation.py [--out fig.png]`` (well under a
minute); ``--splits 10`` (a few minutes) for the comparison over 10 splits; ``--full`` searches a
larger grid (Gaussian and Matern 5/2 kernels, 3h to 12h, lam2 1e-3 to 1e-8).
"""

import argparse
import os
import time

import numpy as np
from sklearn.model_selection import PredefinedSplit
from threadpoolctl import threadpool_limits

from psdsos import PSDRegressor
from psdsos.datasets import load_macro_covariances
from psdsos.geometry import PiecewiseGeodesicInterpolator, bures_wasserstein_distance_squared
from psdsos.model_selection import (
    grid_search_cv,
    mean_squared_affine_invariant,
    mean_squared_bures_wasserstein,
    mean_squared_log_euclidean,
)

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N_TEST = 15  # held-out interior times
BASELINES = {"log-Euclidean interpolation": "log_euclidean",
             "affine-invariant interpolation": "affine_invariant",
             "Bures-Wasserstein interpolation": "bures_wasserstein",
             "linear interpolation of entries": "euclidean"}


def split(n, seed):
    """Held-out interior indices (sorted) and the training indices."""
    test = np.sort(np.random.default_rng(seed).choice(np.arange(1, n - 1), N_TEST,
                                                      replace=False))
    return test, np.setdiff1d(np.arange(n), test)


def interior_folds(n, n_folds=5, seed=0):
    """Folds holding out interior training times only (index 0 and n - 1 never in test)."""
    fold = np.full(n, -1)
    fold[1:-1] = np.random.default_rng(seed).permutation(n - 2) % n_folds
    return PredefinedSplit(fold)


def repeated_interior_folds(n, n_folds=5, n_repeats=3):
    """(train, test) index pairs: ``n_repeats`` random assignments of the interior training
    times (index 0 and n - 1 never in test) to ``n_folds`` folds."""
    pairs = []
    for r in range(n_repeats):
        fold = np.random.default_rng(r).permutation(n - 2) % n_folds
        for k in range(n_folds):
            test = 1 + np.flatnonzero(fold == k)
            pairs.append((np.setdiff1d(np.arange(n), test), test))
    return pairs


def grid(h, full):
    """Kernels, bandwidths (multiples of the sampling interval h) and ridges."""
    if full:
        return {"kernel": ["gaussian", "matern52"], "sigma": [f * h for f in (3, 4, 6, 8, 12)],
                "lam2": [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8]}
    return {"sigma": [f * h for f in (4, 6, 8, 12)], "lam2": [1e-4, 1e-5, 1e-6, 1e-7, 1e-8]}


def tune(t, M, target, full, n_jobs):
    """PSDRegressor tuned by repeated interior-fold cross-validation on the Bures distance."""
    h = float(np.median(np.diff(np.sort(t[:, 0]))))
    return grid_search_cv(PSDRegressor(target=target, max_iter=50000), t, M, grid(h, full),
                          cv=repeated_interior_folds(len(t)), scoring="neg_bures_wasserstein",
                          n_jobs=n_jobs, cv_params={"tol": 1e-6})


def errors(M_true, P):
    """Mean squared distances: Bures-Wasserstein, affine-invariant, log-Euclidean."""
    return (mean_squared_bures_wasserstein(M_true, P), mean_squared_affine_invariant(M_true, P),
            mean_squared_log_euclidean(M_true, P))


PSD_NAME = "PSDRegressor, square roots, CV on Bures-Wasserstein"
MATRIX_NAME = "PSDRegressor, matrices, same CV"


def compare(t, M, seed, full, n_jobs, with_references=True):
    """Fit every method on the training times of split ``seed``; predictions at the test ones."""
    test, train = split(len(t), seed)
    tr, te = (t[train], M[train]), (t[test], M[test])
    models, searches = {}, {}
    searches["sqrt"] = tune(*tr, "sqrt", full, n_jobs)
    models[PSD_NAME] = searches["sqrt"].best_estimator_
    for name, metric in BASELINES.items():
        models[name] = PiecewiseGeodesicInterpolator(metric).fit(*tr)
    if with_references:
        searches["matrix"] = tune(*tr, "matrix", full, n_jobs)
        models[MATRIX_NAME] = searches["matrix"].best_estimator_
        models["PSDRegressor, defaults (untuned)"] = PSDRegressor().fit(*tr)
    preds = {name: model.predict(te[0]) for name, model in models.items()}
    return test, train, models, searches, preds


def over_splits(t, M, n_splits, full, n_jobs):
    """The comparison (selection included) on splits 0..n_splits-1: {method: errors}."""
    rows = []
    for seed in range(n_splits):
        te = split(len(t), seed)[0]
        _, _, _, _, p = compare(t, M, seed, full, n_jobs, with_references=False)
        rows.append({name: mean_squared_bures_wasserstein(M[te], P) for name, P in p.items()})
    return {name: np.array([r[name] for r in rows]) for name in rows[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    ap.add_argument("--full", action="store_true",
                    help="a larger grid: 2 kernels x 5 bandwidths x 6 ridges")
    ap.add_argument("--splits", type=int, default=1, metavar="K",
                    help="also repeat the comparison over K random splits (seeds 0..K-1)")
    ap.add_argument("--n-jobs", type=int, default=1, help="joblib jobs of the grid search")
    args = ap.parse_args(argv)
    full = args.full and not FAST

    t, M = load_macro_covariances(return_X_y=True)
    t0 = time.perf_counter()
    test, train, models, searches, preds = compare(t, M, 0, full, args.n_jobs)
    best = searches["sqrt"]
    print(f"{len(t)} covariance matrices, {len(train)} for training, {len(test)} held out; "
          f"eigenvalues {np.linalg.eigvalsh(M).min():.2f} to {np.linalg.eigvalsh(M).max():.0f}")
    h = float(np.median(np.diff(t[train, 0])))

    def readable(params):
        return {k: (f"{v / h:.0f}h" if k == "sigma" else v) for k, v in params.items()}

    print(f"grid searches ({best.n_fits} CV fits each, {time.perf_counter() - t0:.0f} s in "
          f"all; h = {h:.2f} years): square roots select {readable(best.best_params_)}, "
          f"matrices select {readable(searches['matrix'].best_params_)}")
    table = {name: errors(M[test], P) for name, P in preds.items()}
    print(f"\nmean squared distance to the {len(test)} held-out matrices (split 0):")
    print(f"  {'method':52s} {'Bures-W.':>9s} {'aff.-inv.':>9s} {'log-Eucl.':>9s}")
    for name, (bw, ai, le) in sorted(table.items(), key=lambda kv: kv[1][0]):
        print(f"  {name:52s} {bw:9.2f} {ai:9.3f} {le:9.3f}")

    per_split = None
    if args.splits > 1:
        per_split = over_splits(t, M, args.splits, full, args.n_jobs)
        print(f"\nover {args.splits} random splits (mean and median over the splits of the mean "
              "squared Bures-Wasserstein distance; splits where PSDRegressor is at or below):")
        psd = per_split[PSD_NAME]
        for name, v in sorted(per_split.items(), key=lambda kv: kv[1].mean()):
            wins = "" if name == PSD_NAME else f"{int(np.sum(psd <= v)):3d} of {len(v)}"
            print(f"  {name:52s} {v.mean():9.2f} {np.median(v):9.2f}   {wins}")

    # ---- figure --------------------------------------------------------------------------------
    try:
        import matplotlib.pyplot as plt

        from psdsos.plotting import plot_psd_ellipses, plot_psd_spectrum, psd_ellipse_scale
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    psd_name, le_name = PSD_NAME, "log-Euclidean interpolation"
    if plt is not None:
        n_ax = 3 if per_split is None else 4
        fig, axes = plt.subplots(n_ax, 1, figsize=(10, 10 + 2.5 * (n_ax - 3)),
                                 height_ratios=(1.3, 1.0, 0.8, 0.9)[:n_ax],
                                 layout="constrained")
        grid_t = np.linspace(t[0, 0], t[-1, 0], 400)[:, None]
        ax = axes[0]
        plot_psd_spectrum(ax, grid_t, models[psd_name].predict(grid_t), kind="eigenvalues",
                          color="C3", label="PSDRegressor", log=True)
        plot_psd_spectrum(ax, grid_t, models[le_name].predict(grid_t), kind="eigenvalues",
                          color="C0", label="log-Euclidean", linewidth=0.8)
        plot_psd_spectrum(ax, t[train], M[train], kind="eigenvalues", color="k",
                          marker=".", linestyle="", label="training")
        plot_psd_spectrum(ax, t[test], M[test], kind="eigenvalues", color="k", marker="o",
                          markerfacecolor="none", linestyle="", label="held out")
        handles = [ax.get_lines()[k] for k in (0, 3, 6, 9)]
        ax.legend(handles, ["PSDRegressor (CV, Bures)", "log-Euclidean interpolation",
                            "training", "held out"], fontsize=8, ncol=4, loc="lower left")
        ax.set_ylabel("eigenvalues (3 per time)")
        ax.set_title("covariance of annualized growth rates of real GDP, consumption, "
                     "investment (5-year windows)", fontsize=10)
        ax = axes[1]
        block = (0, 2)  # (realgdp, realinv)
        rows = [("held out", M[test], "k"), ("PSDRegressor", preds[psd_name], "C3"),
                ("log-Euclidean", preds[le_name], "C0")]
        s = psd_ellipse_scale(t[test], M[test], block=block, fill=0.9)  # one scale, 3 rows
        sub = np.stack([P[:, [0, 2]][:, :, [0, 2]] for _, P, _ in rows])
        gap = 2.2 * s * np.sqrt(np.linalg.eigvalsh(sub).max())  # rows do not overlap
        for k, (_, P, c) in enumerate(rows):
            plot_psd_ellipses(ax, t[test], P, block=block, scale=s, y=-gap * k, color=c)
        ax.set_yticks([-gap * k for k in range(3)], [r[0] for r in rows])
        ax.set_title("(GDP, investment) block at the held-out times, one scale for all rows",
                     fontsize=10)
        ax = axes[2]
        for name, c, mk in ((psd_name, "C3", "o"), (le_name, "C0", "s"),
                            ("linear interpolation of entries", "C2", "^")):
            ax.plot(t[test, 0], bures_wasserstein_distance_squared(M[test], preds[name]), mk,
                    color=c, label=name, ms=5)
        ax.set_yscale("log")
        ax.set_xlabel("year (middle of the window)")
        ax.set_ylabel("squared BW distance")
        ax.set_title("error at each held-out time (split 0)", fontsize=10)
        ax.legend(fontsize=8)
        if per_split is not None:
            ax = axes[3]
            k = np.arange(args.splits)
            styles = [(psd_name, "C3", "o"), (le_name, "C0", "s"),
                      ("affine-invariant interpolation", "C1", "D"),
                      ("Bures-Wasserstein interpolation", "C4", "v"),
                      ("linear interpolation of entries", "C2", "^")]
            for j, (name, c, mk) in enumerate(styles):
                v = per_split[name]
                ax.plot(k + (j - 2) * 0.08, v, mk, color=c, ms=5,
                        label=f"{name} (mean {v.mean():.2f})")
            ax.set_xticks(k)
            ax.set_xlabel("split (15 held-out interior times each; selection redone per split)")
            ax.set_ylabel("mean squared BW")
            ax.legend(fontsize=7, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
        if args.out is not None:
            fig.savefig(args.out, dpi=110)
            print("figure:", args.out)

    # ---- checks ------------------------------------------------------------------------------
    # the baseline numbers on its split (a known answer)
    assert abs(table[le_name][0] - 3.67) < 0.005, table[le_name]
    assert abs(table["linear interpolation of entries"][0] - 6.59) < 0.005
    for name, P in preds.items():  # every prediction is PSD
        assert np.linalg.eigvalsh(P).min() >= -1e-9 * np.abs(P).max(), name
    for name in BASELINES:  # the baselines interpolate the training matrices
        np.testing.assert_array_equal(models[name].predict(t[train]), M[train])
    # tuning beats the untuned model
    bw = {name: v[0] for name, v in table.items()}
    assert bw[psd_name] < bw["PSDRegressor, defaults (untuned)"]
    print("checks passed")


if __name__ == "__main__":
    with threadpool_limits(1):  # small problems: threads only add overhead
        main()
