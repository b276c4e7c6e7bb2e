r"""Call prices: convex and decreasing in the strike, non-negative, certified on the quoted range.
===============================================================================================

No-arbitrage shape of a call-price curve: the price :math:`C(K)` of a European call is
**decreasing and convex in the strike** K, with slope in :math:`[-e^{-rT}, 0]`, and
non-negative.  Quotes are noisy and need not have that shape; a curve fitted to them and used
to price other strikes (or to read the risk-neutral density from :math:`C''`) must.

Data: :func:`psdsos.datasets.make_option_prices`, 40 strikes from 60 to 140 on a spot of 100,
quotes = Black-Scholes prices (rate 2%, maturity 6 months, volatility 25%) plus Gaussian noise
of standard deviation 0.05.  Fit: :class:`psdsos.ShapeConstrainedRegressor` with
``convex=True, decreasing=True, lower=0``: one kernel SoS block per constraint (the PSD
paper's section 4, eq. 13-14), an exchange method, and a certificate of each constraint (a
proved lower bound of :math:`-C'`, of :math:`C''` and of :math:`C` over the quoted range, by
branch and bound with the RKHS bound of Aubin-Frankowski & Szabo 2020).  Settings:

- ``solver="primal"``: with 40 quotes the CVXPY primal (Clarabel) solves each problem in
  well under a second; the dual solver is meant for thousands of points;
- ``rho=1e-7, lam2=1e-4``: chosen by 5-fold cross-validation over rho in {1e-4, ..., 1e-7}
  and lam2 in {1e-3, 1e-4} on these quotes (``--paper`` reruns the search);
- ``certify_tol=1e-3``: the certificate refines its cells until each constraint is proved
  up to 0.1% of its size.  With the default 1% the covering stops earlier, at bounds
  slightly below 0, and the certified-shape predictor turns that slack into a correction
  (up to 0.6 in price at the low strikes, from a slope and a curvature correction each
  multiplied by the width of the range).  At 0.1% the slope and curvature bounds are proved
  >= 0 and need no correction; the bound ``lower``, far from binding (the smallest price is
  about 0.25), is proved only down to -0.01, and ``predict`` adds that 0.01 as a shift.

The slope bound needs no parameter: the fit is certified convex, so its slope is
non-decreasing and lies between its values at the two ends of the range.

Run: ``python examples/shape_option_prices.py [--out fig.png]`` (a few seconds);
``--paper`` reruns the cross-validation (about a minute).
"""

import argparse
import os
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.model_selection import GridSearchCV, KFold
from threadpoolctl import threadpool_limits

from psdsos import ShapeConstrainedRegressor
from psdsos.datasets import black_scholes_call, make_option_prices

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N_GRID = 801 if FAST else 4001  # strikes of the plots and checks
MARKET = dict(spot=100.0, rate=0.02, maturity=0.5, volatility=0.25)
PARAMS = dict(rho=1e-7, lam2=1e-4)  # the 5-fold CV choice (--paper reruns it)
GRID = {"rho": [1e-4, 1e-5, 1e-6, 1e-7], "lam2": [1e-3, 1e-4]}


def make_model(**params):
    return ShapeConstrainedRegressor(convex=True, decreasing=True, lower=0.0, solver="primal",
                                     certify_tol=1e-3, random_state=0, **params)


def cross_validate(K, price):
    """The grid search behind PARAMS (mean squared error on held-out quotes)."""
    search = GridSearchCV(make_model(), GRID, cv=KFold(5, shuffle=True, random_state=0),
                          scoring="neg_mean_squared_error")
    with warnings.catch_warnings():  # the CV fits' own certificates are not the point here
        warnings.simplefilter("ignore")
        search.fit(K, price)
    return search.best_params_, -search.best_score_


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    ap.add_argument("--paper", action="store_true",
                    help="rerun the 5-fold cross-validation of rho and lam2 (about a minute)")
    args = ap.parse_args(argv)

    K, price, truth = make_option_prices(40, noise=0.05, random_state=0, **MARKET)
    params = dict(PARAMS)
    if args.paper:
        t1 = time.perf_counter()
        params, cv_mse = cross_validate(K, price)
        print(f"5-fold CV ({time.perf_counter() - t1:.0f} s): {params}, "
              f"held-out MSE {cv_mse:.2e}")
    t0 = time.perf_counter()
    model = make_model(**params).fit(K, price)
    print(f"{K.shape[0]} quotes; fit + certificates in {time.perf_counter() - t0:.1f} s, "
          f"{model.n_exchange_} exchange rounds")
    print("certificate (bound over the strikes [60, 140], in price units per strike unit):")
    for name, c in model.certificate_.items():
        print(f"  {name:14s} {c.status:9s} bound {c.bound:+.3g}  relative {c.relative:+.4f}  "
              f"smallest value found {c.sampled_min:+.3g}  "
              f"correction {c.correction:.2g}")

    Kt = np.linspace(K.min(), K.max(), N_GRID)[:, None]
    true_t = black_scholes_call(Kt, **MARKET)
    fit_t = model.predict(Kt)
    slope, curv = model.gradient(Kt)[:, 0], model.hessian(Kt)[:, 0, 0]
    disc = np.exp(-MARKET["rate"] * MARKET["maturity"])
    err, err_quotes = np.abs(fit_t - true_t).max(), np.abs(price - truth).max()
    print(f"max error to the true prices: fit {err:.3f} on the range, quotes {err_quotes:.3f}")
    print(f"slope on the range: [{slope.min():+.4f}, {slope.max():+.4f}] "
          f"(no-arbitrage: within [-{disc:.4f}, 0])")

    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig, axd = plt.subplot_mosaic([["fit", "err"], ["d1", "d2"]], figsize=(11, 7.5),
                                      layout="constrained")
        a = axd["fit"]
        a.plot(K[:, 0], price, "k.", ms=5, label="quotes (noise sd 0.05)")
        a.plot(Kt[:, 0], true_t, "k:", label="Black-Scholes price")
        a.plot(Kt[:, 0], fit_t, "C3-", lw=1.5, label="ShapeConstrainedRegressor")
        a.set_xlabel("strike")
        a.set_ylabel("call price")
        a.legend(fontsize=8)
        a.set_title("fit and truth", fontsize=10)
        a = axd["err"]
        a.axhline(0.0, color="0.5", lw=0.8)
        a.plot(K[:, 0], price - truth, "k.", ms=5, label="quote - truth")
        a.plot(Kt[:, 0], fit_t - true_t, "C3-", label="fit - truth")
        a.set_xlabel("strike")
        a.legend(fontsize=8)
        a.set_title("errors to the true prices", fontsize=10)
        true_slope = -disc * _norm_cdf_d2(Kt[:, 0])
        a = axd["d1"]
        a.plot(Kt[:, 0], true_slope, "k:", label="true C'")
        a.plot(Kt[:, 0], slope, "C3-", label="fitted C'")
        dec = model.certificate_["decreasing[0]"]
        # the certificate bounds -C' from below: C' <= -bound
        a.axhline(-dec.bound, color="C3", ls="--", lw=1,
                  label=f"certified upper bound {-dec.bound:.3g}")
        a.set_title("constraint 'decreasing[0]': C'(K) <= -bound", fontsize=10)
        a = axd["d2"]
        a.plot(Kt[:, 0], np.gradient(true_slope, Kt[:, 0]), "k:", label="true C''")
        a.plot(Kt[:, 0], curv, "C3-", label="fitted C''")
        cvx = model.certificate_["convex[0]"]
        a.axhline(cvx.bound, color="C3", ls="--", lw=1,
                  label=f"certified lower bound {cvx.bound:.3g}")
        a.set_title("constraint 'convex[0]': C''(K) >= bound", fontsize=10)
        for key in ("d1", "d2"):
            axd[key].set_xlabel("strike")
            axd[key].legend(fontsize=8)
        if args.out is not None:
            fig.savefig(args.out, dpi=110)
            print("figure:", args.out)

    # ---- checks ------------------------------------------------------------------------------
    for c in model.certificate_.values():
        assert c.status == "certified", model.certificate_
        assert c.relative >= -1.1e-3, c  # proved up to certify_tol
    # the predictor's own derivatives and values on a fine grid: the no-arbitrage shape
    assert slope.max() <= 0.0 and curv.min() >= 0.0 and fit_t.min() >= 0.0
    # second differences of predict (no use of the estimator's derivatives)
    h = Kt[1, 0] - Kt[0, 0]
    dd = np.diff(fit_t, 2) / h**2
    assert dd.min() >= -1e-6 * np.abs(dd).max(), dd.min()
    # convex: the slope is non-decreasing, so the slope bound is read at the left end
    assert np.all(np.diff(slope) >= -1e-9) and slope[0] >= -disc, (slope[0], -disc)
    # smoothing beats the quotes (measured: 0.043 against 0.116 for the noisiest quote)
    assert err < err_quotes, (err, err_quotes)
    print("checks passed")


def _norm_cdf_d2(K):
    """Phi(d2) of the Black-Scholes formula (C'(K) = -exp(-rT) Phi(d2))."""
    s, r, T, v = (MARKET[k] for k in ("spot", "rate", "maturity", "volatility"))
    d2 = (np.log(s / K) + (r - 0.5 * v**2) * T) / (v * np.sqrt(T))
    return norm.cdf(d2)


if __name__ == "__main__":
    with threadpool_limits(1):  # small problems: threads only add overhead
        main()
