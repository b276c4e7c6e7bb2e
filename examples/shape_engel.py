r"""Engel curve: food spending increasing and concave in income, certified on the data's range.
=============================================================================================

Engel's 1857 household budgets (235 Belgian working-class households, bundled as
:func:`psdsos.datasets.load_engel`): annual food expenditure against annual income, in
Belgian francs.  Engel's law says that food spending rises with income but by less and less:
the curve is **increasing and concave in income**.  A few very high incomes (up to 4958
francs against a median of 884) leave the right end of the range almost empty, and that is
where an unconstrained smooth fit goes wrong.

The fit is in income itself, not in log income: the shape the economics states (and the
data set documents) is in the levels, and in levels the certified slope is the marginal
propensity to spend on food, in francs per franc.

Three fits:

- :class:`psdsos.ShapeConstrainedRegressor` with ``increasing=True, concave=True``: a
  Gaussian-kernel model with one kernel SoS block per constraint (the PSD paper's section
  4, eq. 13-14, with d = 1 blocks, Marteau-Ferey et al. 2020), an exchange method that
  adds the most violated points of the box, and a certificate: a proved lower bound of
  f' and of -f'' over the whole income range (branch and bound over cells, with the
  RKHS bound of Aubin-Frankowski & Szabo 2020).  ``predict`` adds the smallest
  correction the certificate proves sufficient, so its shape holds on the whole range;
- kernel ridge regression (:class:`psdsos.KernelRidgeRegressor`) with the same kernel,
  bandwidth and ridge: the same problem without the shape constraints;
- isotonic regression (:class:`sklearn.isotonic.IsotonicRegression`): increasing, not
  concave, piecewise constant.

The second row of the figure shows each constraint function across the box, f'(x) and
f''(x), of the shape-constrained predictor and of kernel ridge, with the certified bound as
a horizontal line: the curve never crosses it.

Run: ``python examples/shape_engel.py [--out fig.png]`` (a few seconds);
``--paper`` adds a 5-fold cross-validated comparison of the three fits (about a minute).
"""

import argparse
import os
import time

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from psdsos import KernelRidgeRegressor, ShapeConstrainedRegressor
from psdsos.datasets import load_engel

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N_GRID = 1001 if FAST else 4001  # points of the income range for the plots and checks


def fit_all(X, y):
    """The shape-constrained fit, kernel ridge at its bandwidth and ridge, isotonic."""
    shape = ShapeConstrainedRegressor(increasing=True, concave=True, random_state=0).fit(X, y)
    krr = KernelRidgeRegressor(sigma=shape.kernel_.sigma, rho=shape.rho).fit(X, y)
    iso = IsotonicRegression(out_of_bounds="clip").fit(X[:, 0], y)
    return shape, krr, iso


def krr_derivatives(krr, t):
    """f' and f'' of kernel ridge's f = c + w x + sum_i alpha_i k(x, x_i) at the rows of t."""
    d1 = krr.kernel_.gradient(t, krr.X_fit_)[:, :, 0] @ krr.alpha_ + krr.coef_[0]
    d2 = krr.kernel_.hessian_sum(t, krr.X_fit_, krr.alpha_)[:, 0, 0]
    return d1, d2


def cross_validate(X, y, n_splits=5):
    """Mean held-out squared error of the three fits over shuffled folds."""
    err = {"shape": [], "kernel ridge": [], "isotonic": []}
    for tr, te in KFold(n_splits, shuffle=True, random_state=0).split(X):
        shape, krr, iso = fit_all(X[tr], y[tr])
        for name, pred in (("shape", shape.predict(X[te])), ("kernel ridge", krr.predict(X[te])),
                           ("isotonic", iso.predict(X[te, 0]))):
            err[name].append(float(np.mean((pred - y[te]) ** 2)))
    return {k: float(np.mean(v)) for k, v in err.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    ap.add_argument("--paper", action="store_true",
                    help="also cross-validate the three fits (5 folds, about a minute)")
    args = ap.parse_args(argv)

    X, y = load_engel(return_X_y=True)
    t0 = time.perf_counter()
    shape, krr, iso = fit_all(X, y)
    elapsed = time.perf_counter() - t0
    print(f"{X.shape[0]} households; fits in {elapsed:.1f} s; bandwidth "
          f"{shape.kernel_.sigma:.0f} francs, {shape.n_exchange_} exchange rounds")
    print("certificate (bound over the income range, in the user's units):")
    for name, c in shape.certificate_.items():
        print(f"  {name:14s} {c.status:9s} bound {c.bound:+.3g}  relative {c.relative:+.4f}  "
              f"correction {c.correction:.2g}")

    t = np.linspace(X.min(), X.max(), N_GRID)[:, None]
    d1, d2 = shape.gradient(t)[:, 0], shape.hessian(t)[:, 0, 0]
    k1, k2 = krr_derivatives(krr, t)
    inc, ccv = shape.certificate_["increasing[0]"], shape.certificate_["concave[0]"]
    print(f"slope f' on the range: certified fit >= {d1.min():.3f}, kernel ridge down to "
          f"{k1.min():+.3f} (at income {t[np.argmin(k1), 0]:.0f})")
    print(f"curvature f'': certified fit <= {d2.max():+.2g}, kernel ridge up to {k2.max():+.2g}")
    shift = np.abs(shape.predict(t) - shape.predict(t, raw=True)).max()
    print(f"predict differs from the raw fit by at most {shift:.2g} francs")
    if args.paper:
        t1 = time.perf_counter()
        cv = cross_validate(X, y)
        print(f"5-fold CV mean squared error ({time.perf_counter() - t1:.0f} s): "
              + ", ".join(f"{k} {v:.0f}" for k, v in cv.items()))

    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig, axd = plt.subplot_mosaic([["fit", "fit"], ["d1", "d2"]], figsize=(11, 7.5),
                                      layout="constrained")
        top, left, right = axd["fit"], axd["d1"], axd["d2"]
        top.plot(X[:, 0], y, "k.", ms=3, label="households")
        top.plot(t[:, 0], krr.predict(t), "C0-", lw=1, label="kernel ridge (same kernel, rho)")
        top.plot(t[:, 0], iso.predict(t[:, 0]), "C2-", lw=1, label="isotonic regression")
        top.plot(t[:, 0], shape.predict(t), "C3-", lw=2,
                 label="ShapeConstrainedRegressor (increasing, concave)")
        top.set_xlabel("annual household income (Belgian francs)")
        top.set_ylabel("annual food expenditure")
        top.set_title("Engel curve (Engel 1857, Koenker & Bassett 1982)", fontsize=10)
        top.legend(fontsize=8, loc="upper left")
        left.plot(t[:, 0], k1, "C0-", lw=1, label="kernel ridge")
        left.plot(t[:, 0], d1, "C3-", lw=2, label="shape-constrained")
        left.axhline(inc.bound, color="C3", ls="--", lw=1,
                     label=f"certified lower bound {inc.bound:.3f}")
        left.axhline(0.0, color="0.5", lw=0.8)
        left.set_ylim(-0.6, 1.2)  # kernel ridge leaves the frame
        left.set_title("constraint 'increasing[0]': f'(x) >= bound (kernel ridge clipped)",
                       fontsize=10)
        right.plot(t[:, 0], k2, "C0-", lw=1, label="kernel ridge")
        right.plot(t[:, 0], d2, "C3-", lw=2, label="shape-constrained")
        # the certificate bounds -f'' from below: f'' <= -bound
        right.axhline(-ccv.bound, color="C3", ls="--", lw=1,
                      label=f"certified upper bound {-ccv.bound:.2g}")
        right.set_ylim(2.0 * float(d2.min()), -1.0 * float(d2.min()))
        right.set_title("constraint 'concave[0]': f''(x) <= -bound (kernel ridge clipped)",
                        fontsize=10)
        for a in (left, right):
            a.set_xlabel("income")
            a.legend(fontsize=8)
        if args.out is not None:
            fig.savefig(args.out, dpi=110)
            print("figure:", args.out)

    # ---- checks ------------------------------------------------------------------------------
    for c in shape.certificate_.values():
        assert c.status == "certified", shape.certificate_
        # proved >= 0 or within the estimator's certify_tol (1e-2, relative) below it
        assert c.relative >= -0.011, c
    # the predictor's own derivatives, on a fine grid (an independent check of the claim):
    # increasing and concave, to rounding
    assert d1.min() >= 0.0 and d2.max() <= 1e-12, (d1.min(), d2.max())
    # second differences of predict (no use of the estimator's derivatives)
    h = t[1, 0] - t[0, 0]
    dd = np.diff(shape.predict(t), 2) / h**2
    assert dd.max() <= 1e-6 * np.abs(dd).max() + 1e-9, dd.max()
    # the raw fit's slope is at least its certified bound (the bound is proved, not sampled)
    assert shape.gradient(t, raw=True)[:, 0].min() >= inc.bound
    # without the constraints the same kernel model decreases in the sparse right end
    assert k1.min() < 0.0 and k2.max() > 0.0, (k1.min(), k2.max())
    print("checks passed")


if __name__ == "__main__":
    with threadpool_limits(1):  # small problems: threads only add overhead
        main()
