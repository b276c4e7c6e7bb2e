"""Benchmark: ConvexRegressor with default settings on data in the units users have.

Convexity is preserved by positive scalings and shifts of x and y, and ConvexRegressor is
equivariant under them (``sigma="scale"``; the problem is solved in standardized units and
mapped back).  This script checks what that buys on raw-unit data, for each case below:

* the default fit on the raw data against the same estimator on data standardized by hand
  (sklearn's StandardScaler on X, y centred and scaled, predictions mapped back): the ratio
  of their test MSE against the noiseless curve (target: <= 1.25);
* the fitted curvature against the true one: the worst ratio
  min_x lambda_min(Hess f_hat(x)) / lambda_min(Hess f(x)) over a grid of the bounding box of
  the training inputs (target: >= -0.05, "nowhere below -5% of the true curvature");
* the relative convexity deficit eta / kappa (ConvexRegressor.convexity_deficit with
  relative=True: 4096 Sobol points of the training box);
* the same fit with y x 1e200 and with x x 1e-60: finite, and equal to the raw fit mapped
  by the scaling (largest relative difference of the predictions).

Cases (noise: Gaussian, standard deviation as given):

* income: x ~ U[400, 5000], spending 300 + 0.05 x + 2e-5 (x - 400)^2, noise 20;
* cost: x ~ U[0.02, 0.3], cost exp(8 x), noise 0.2;
* horsepower: x ~ U[50, 250], fuel use 4 + 4e-4 (x - 40)^2, noise 0.5;
* 2-D: income x1 ~ U[400, 5000] and rent x2 ~ U[1000, 6000],
  f = 0.02 x1 + 1e-5 ((x1 - 2700)^2 + 0.5 (x2 - 3500)^2 + 0.3 (x1 - 2700)(x2 - 3500)),
  noise 10.

One BLAS thread (threadpoolctl); seeds 0, 1, 2 (quick: seed 0, fewer points).

Usage::

    python benchmarks/convex_raw_units.py            # full run
    python benchmarks/convex_raw_units.py --quick    # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos.estimators import ConvexRegressor


def _income(x):
    return 300.0 + 0.05 * x[:, 0] + 2e-5 * (x[:, 0] - 400.0) ** 2


def _income_hess(x):
    return np.full(len(x), 4e-5)[:, None, None]


def _cost(x):
    return np.exp(8.0 * x[:, 0])


def _cost_hess(x):
    return (64.0 * np.exp(8.0 * x[:, 0]))[:, None, None]


def _hp(x):
    return 4.0 + 4e-4 * (x[:, 0] - 40.0) ** 2


def _hp_hess(x):
    return np.full(len(x), 8e-4)[:, None, None]


_A2 = 1e-5 * np.array([[2.0, 0.3], [0.3, 1.0]])  # Hessian of the 2-D case


def _two(x):
    u = x - np.array([2700.0, 3500.0])
    return 0.02 * x[:, 0] + 0.5 * np.einsum("np,pq,nq->n", u, _A2, u)


def _two_hess(x):
    return np.broadcast_to(_A2, (len(x), 2, 2))


#: name, box (lo, hi per feature), truth, its Hessian, noise standard deviation
CASES = [
    ("income [400, 5000]", [(400.0, 5000.0)], _income, _income_hess, 20.0),
    ("cost [0.02, 0.3]", [(0.02, 0.3)], _cost, _cost_hess, 0.2),
    ("horsepower [50, 250]", [(50.0, 250.0)], _hp, _hp_hess, 0.5),
    ("2-D income x rent", [(400.0, 5000.0), (1000.0, 6000.0)], _two, _two_hess, 10.0),
]


def sample(box, n, rng):
    lo, hi = np.array(box).T
    return lo + (hi - lo) * rng.uniform(size=(n, len(box)))


def grid(box, m):
    axes = [np.linspace(lo, hi, m) for lo, hi in box]
    return np.column_stack([a.ravel() for a in np.meshgrid(*axes)])


def fit_hand_standardized(X, y):
    """The same estimator on data standardized by hand; returns a predict function."""
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(X)
    ym, ys = y.mean(), y.std()
    est = ConvexRegressor(random_state=0).fit(sc.transform(X), (y - ym) / ys)
    return lambda Z: ym + ys * est.predict(sc.transform(Z))


def run_case(name, box, f, hess, noise, n, seed, n_grid):
    rng = np.random.default_rng(seed)
    X = sample(box, n, rng)
    y = f(X) + noise * rng.standard_normal(n)
    Xt = sample(box, 2000, rng)
    t0 = time.perf_counter()
    raw = ConvexRegressor(random_state=0).fit(X, y)
    t_raw = time.perf_counter() - t0
    hand = fit_hand_standardized(X, y)
    mse_raw = float(np.mean((raw.predict(Xt) - f(Xt)) ** 2))
    mse_hand = float(np.mean((hand(Xt) - f(Xt)) ** 2))
    # the training data's bounding box, where convexity_deficit looks too
    G = grid(list(zip(X.min(axis=0), X.max(axis=0), strict=True)),
             n_grid if len(box) == 1 else int(np.sqrt(n_grid)))
    lam_fit = np.linalg.eigvalsh(raw.hessian(G))[:, 0]
    lam_true = np.linalg.eigvalsh(hess(G))[:, 0]
    curv = float(np.min(lam_fit / lam_true))
    rel = raw.convexity_deficit(relative=True)
    # extreme magnitudes: equivariance (predictions of the raw fit mapped by the scaling)
    big = ConvexRegressor(random_state=0).fit(X, 1e200 * y)
    tiny = ConvexRegressor(random_state=0).fit(1e-60 * X, y)
    p = raw.predict(Xt)
    pb, pt = big.predict(Xt) / 1e200, tiny.predict(1e-60 * Xt)
    finite = bool(np.all(np.isfinite(big.predict(Xt))) and np.all(np.isfinite(pt))
                  and np.all(np.isfinite(tiny.hessian(1e-60 * G))))
    span = float(np.ptp(p))
    eq = max(float(np.max(np.abs(pb - p))), float(np.max(np.abs(pt - p)))) / span
    return {"name": name, "seed": seed, "n": n, "sigma": raw.kernel_.sigma, "t": t_raw,
            "iters": raw.n_iter_, "mse_raw": mse_raw, "mse_hand": mse_hand,
            "ratio": mse_raw / mse_hand, "curv": curv, "rel": rel, "finite": finite, "eq": eq}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/convex_raw_units.md")
    args = ap.parse_args(argv)
    n, seeds, n_grid = (30, [0], 201) if args.quick else (200, [0, 1, 2], 2001)
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}",
        "",
        f"## ConvexRegressor() defaults on raw-unit data, n = {n} training points, "
        "2000 test points",
        "",
        "MSE against the noiseless curve; hand: the same estimator on StandardScaler-ed X and "
        "standardized y (mapped back); curvature: min over a grid of the training box of "
        "lambda_min(Hess f_hat) / lambda_min(Hess f); rel. deficit: eta / kappa; "
        "equivariance: max |f_hat(y x 1e200) / 1e200 - f_hat|, |f_hat(x x 1e-60) - f_hat| "
        "over the range of f_hat.",
        "",
        "| case | seed | sigma (scale) | fit s (iters) | MSE raw | MSE hand | raw / hand "
        "| min curvature ratio | rel. deficit | extremes finite | equivariance |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # overflow is a failure here
        for name, box, f, hess, noise in CASES:
            for seed in seeds:
                r = run_case(name, box, f, hess, noise, n, seed, n_grid)
                rows.append(r)
                lines.append(
                    f"| {name} | {seed} | {r['sigma']:.4g} | {r['t']:.2f} ({r['iters']}) "
                    f"| {r['mse_raw']:.4g} | {r['mse_hand']:.4g} | {r['ratio']:.3f} "
                    f"| {r['curv']:.3f} | {r['rel']:.2e} | {r['finite']} | {r['eq']:.1e} |")
    worst_ratio = max(r["ratio"] for r in rows)
    worst_curv = min(r["curv"] for r in rows)
    ok = worst_ratio <= 1.25 and worst_curv >= -0.05 and all(r["finite"] for r in rows)
    lines += ["", f"worst MSE ratio raw / hand: {worst_ratio:.3f} (target <= 1.25); worst "
              f"curvature ratio: {worst_curv:.3f} (target >= -0.05); targets "
              f"{'met' if ok else 'NOT met'}"]
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")
    return rows


if __name__ == "__main__":
    main()
