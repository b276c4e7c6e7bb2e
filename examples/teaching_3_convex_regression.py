r"""Teaching track 3: convex regression with a PSD Hessian constraint.
==================================================================

Lesson 3 of the teaching track.  Noisy samples of the convex function of the PSD paper's
eq. (30), :math:`f_a(x) = (\cos(a\|x\|) - 1)/a^2 + \|x\|^2/2` (convex, but its curvature
vanishes at the origin and on the sphere :math:`\|x\| = 2\pi/a`), in 1-D and 2-D.  Three
estimators (Muzellec, Bach, Rudi, https://hal.science/hal-03454277, sections 5-6):

- kernel ridge regression (:class:`psdsos.KernelRidgeRegressor`): smooth, not convex;
- convex piecewise-linear regression, CNLS (:class:`psdsos.PiecewiseLinearConvexRegressor`,
  eq. 27): convex, not smooth (a max of affine pieces);
- kernel SoS convex regression (:class:`psdsos.ConvexRegressor`, eq. 28):
  :math:`f = \sum_i \alpha_i k(\cdot, x_i)` plus an affine part, with the Hessian written as
  a PSD kernel SoS at m constraint points :math:`z_j`,

  .. math::

      \nabla^2 f(z_j) = \Psi_j^\top \mathbf B \Psi_j, \quad \mathbf B \succeq 0,

  fitted through the dual eq. (29) (certified by its relative duality gap ``dual_gap_``).

The constraint holds at the :math:`z_j` only.  Between them, Theorem 5 and Corollary 7 bound
how negative the curvature can get, by :math:`O(h^m)` with h the largest distance from a point
to the nearest :math:`z_j` (the denser the points and the smoother the kernel and the fit,
the smaller); the fit measures it itself:
``convexity_deficit_`` is :math:`\max(0, -\min_x \lambda_{\min}\nabla^2 f(x))` over the
data's box, relative to the mean curvature: proved by a branch and bound where
``certificate_`` says "certified" (then up to 1% above the true value, the proof's slack),
else the minimum over 4096 points; when the minimum over the 4096 points exceeds 1% the fit
warns with a ``NonConvexFitWarning``.  The lesson shows a bandwidth that is too small doing
exactly that.

Run: ``python examples/teaching_3_convex_regression.py [--out fig.png]`` (a few seconds).
"""

import argparse
import os
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos import ConvexRegressor, KernelRidgeRegressor, PiecewiseLinearConvexRegressor
from psdsos.datasets import convex_regression_truth, make_convex_regression
from psdsos.estimators import RELATIVE_DEFICIT_TOL, NonConvexFitWarning

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N1, N2 = (40, 100) if FAST else (60, 200)  # samples in 1-D and in 2-D
# ridge rho on f and Frobenius weight lam2 on B (eq. 28), per dimension: the 2-D data need a
# lighter regularization to follow the flat bottom of eq. 30
PARAMS = {1: dict(rho=1e-4, lam2=1e-3), 2: dict(rho=1e-6, lam2=1e-5)}


def fit_all(X, y):
    """The three estimators; the SoS fit's warnings are recorded, not printed."""
    p = PARAMS[X.shape[1]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sos = ConvexRegressor(**p).fit(X, y)  # sigma="scale", the default constraint points
    # kernel ridge with the same kernel and ridge: eq. 28 without the Hessian constraint
    krr = KernelRidgeRegressor(sigma=sos.kernel_.sigma, rho=p["rho"]).fit(X, y)
    cnls = PiecewiseLinearConvexRegressor().fit(X, y)
    return sos, krr, cnls, caught


def min_hessian_eig(model, X):
    """Smallest eigenvalue of the Hessian of a kernel model at the rows of X."""
    if isinstance(model, ConvexRegressor):
        H = model.hessian(X)
    else:  # kernel ridge: f = c + w^T x + sum_i alpha_i k(., x_i)
        H = model.kernel_.hessian_sum(X, model.X_fit_, model.alpha_)
    return np.linalg.eigvalsh(H)[:, 0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)

    # ---- 1-D ------------------------------------------------------------------------------
    X1, y1 = make_convex_regression(N1, 1, noise=0.3, random_state=0)
    sos1, krr1, cnls1, caught1 = fit_all(X1, y1)
    t = np.linspace(X1.min(), X1.max(), 2001)[:, None]
    h = t[1, 0] - t[0, 0]
    # an independent look at the curvature: second differences of the predictions
    d2 = {name: np.diff(m.predict(t), 2) / h**2
          for name, m in (("sos", sos1), ("krr", krr1), ("cnls", cnls1))}
    # a bandwidth too small: the Hessian constraint at the z_j no longer controls the
    # curvature between them, and the fit says so
    with warnings.catch_warnings(record=True) as caught_small:
        warnings.simplefilter("always")
        small = ConvexRegressor(sigma=0.5, **PARAMS[1]).fit(X1, y1)
    warned = any(issubclass(w.category, NonConvexFitWarning) for w in caught_small)
    print(f"1-D, {N1} samples: SoS fit sigma = {sos1.kernel_.sigma:.2f}, relative gap "
          f"{sos1.dual_gap_:.1e}, convexity_deficit_ = {sos1.convexity_deficit_:.1e}")
    print(f"  min second difference: SoS {d2['sos'].min():+.3f}, kernel ridge "
          f"{d2['krr'].min():+.3f}, CNLS {d2['cnls'].min():+.1e}")
    print(f"  sigma = 0.5: convexity_deficit_ = {small.convexity_deficit_:.2f}, "
          f"NonConvexFitWarning: {warned}")

    # ---- 2-D ------------------------------------------------------------------------------
    X2, y2 = make_convex_regression(N2, 2, noise=0.5, random_state=0)
    sos2, krr2, cnls2, caught2 = fit_all(X2, y2)
    Xt, _ = make_convex_regression(2000, 2, noise=0.0, random_state=1)  # test points
    yt = convex_regression_truth(Xt)
    mse = {name: float(np.mean((m.predict(Xt) - yt) ** 2))
           for name, m in (("sos", sos2), ("krr", krr2), ("cnls", cnls2))}
    u = np.linspace(X2.min(), X2.max(), 60)
    U, V = np.meshgrid(u, u)
    G = np.column_stack([U.ravel(), V.ravel()])
    lam_sos, lam_krr = min_hessian_eig(sos2, G), min_hessian_eig(krr2, G)
    print(f"2-D, {N2} samples: relative gap {sos2.dual_gap_:.1e}, convexity_deficit_ = "
          f"{sos2.convexity_deficit_:.1e}; min Hessian eigenvalue on the grid: SoS "
          f"{lam_sos.min():+.3f}, kernel ridge {lam_krr.min():+.3f}")
    print("  test MSE: " + ", ".join(f"{k} {v:.3f}" for k, v in mse.items()))

    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig, ax = plt.subplots(2, 2, figsize=(11, 8.5), layout="constrained")
        ax = ax.ravel()
        fits = ((krr1, "C0-", "kernel ridge"), (cnls1, "C2-", "CNLS (piecewise linear)"),
                (sos1, "C3-", "kernel SoS (convex)"), (small, "C1--", "kernel SoS, sigma = 0.5"))
        ax[0].plot(X1[:, 0], y1, "k.", ms=4, label="data")
        ax[0].plot(t[:, 0], convex_regression_truth(t), "k:", label="truth, eq. 30")
        for m, style, name in fits:
            ax[0].plot(t[:, 0], m.predict(t), style, label=name)
        ax[0].set_ylim(-1.5, 6.0)  # the flat bottom, where convexity is at stake
        ax[0].set_title("1-D fits (zoom on the bottom)", fontsize=10)
        ax[0].legend(fontsize=7)
        ax[1].axhline(0.0, color="0.5", lw=0.8)
        ax[1].plot(t[1:-1, 0], 1 - np.cos(t[1:-1, 0]), "k:", label="truth")
        for m, style, name in fits:
            ax[1].plot(t[1:-1, 0], np.diff(m.predict(t), 2) / h**2, style, label=name)
        ax[1].set_ylim(-4, 4)
        ax[1].set_title("1-D: second derivative f'' (finite differences)", fontsize=10)
        ax[1].legend(fontsize=7)
        vmax = float(np.abs(lam_krr).max())
        for a, lam, name in ((ax[2], lam_sos, "kernel SoS"), (ax[3], lam_krr, "kernel ridge")):
            im = a.pcolormesh(U, V, lam.reshape(U.shape), cmap="RdBu", vmin=-vmax, vmax=vmax)
            a.contour(U, V, lam.reshape(U.shape), levels=[0.0], colors="k", linewidths=0.8)
            a.plot(X2[:, 0], X2[:, 1], "k.", ms=2)
            a.set_title(f"2-D, {name}: min eigenvalue of the Hessian", fontsize=10)
            a.set_aspect("equal")
        ax[2].plot(*sos2.constraint_points_.T, "x", color="C1", ms=4, label="z_j")
        ax[2].legend(fontsize=7, loc="upper right")
        fig.colorbar(im, ax=ax[2:].tolist(), shrink=0.8, label="red: < 0 (not convex)")
        if args.out is not None:
            fig.savefig(args.out, dpi=110)
            print("figure:", args.out)

    # ---- checks: what the lesson teaches ---------------------------------------------------
    for sos, caught, d in ((sos1, caught1, 1), (sos2, caught2, 2)):
        assert sos.dual_gap_ <= 1e-6, (d, sos.dual_gap_)  # the estimator's default tol
        # convex up to the certificate, and no warning was raised: at the 4096 points
        # within the tolerance; over the whole box proved within it plus the proof's slack
        assert sos.convexity_deficit(relative=True) <= RELATIVE_DEFICIT_TOL, d
        assert sos.convexity_deficit_ <= 2 * RELATIVE_DEFICIT_TOL, (d, sos.convexity_deficit_)
        assert not [w for w in caught if issubclass(w.category, UserWarning)], caught
        # at the constraint points the Hessian is Psi_j^T B Psi_j with B PSD, up to the
        # solver's relative residual (<= tol = 1e-6; margin 10)
        kappa = sos.curvature_scale()
        assert min_hessian_eig(sos, sos.constraint_points_).min() >= -1e-5 * kappa
    # 1-D: second differences (no use of the estimator's Hessian) agree; kernel ridge and
    # the small bandwidth are not convex, CNLS is (a max of affine pieces)
    kappa1 = sos1.curvature_scale()
    assert d2["sos"].min() >= -RELATIVE_DEFICIT_TOL * kappa1, d2["sos"].min()
    assert d2["krr"].min() <= -0.1 * kappa1, d2["krr"].min()
    assert d2["cnls"].min() >= -1e-6 * kappa1 / h, d2["cnls"].min()
    assert warned and small.convexity_deficit_ > RELATIVE_DEFICIT_TOL
    # 2-D: kernel ridge has negative curvature, the SoS fit none on the grid (beyond the
    # certificate), and convexity costs no accuracy (measured test MSE, SoS / kernel ridge /
    # CNLS: 0.149 / 0.216 / 0.89 at n = 100, 0.089 / 0.098 / 0.22 at n = 200)
    kappa2 = sos2.curvature_scale()
    assert lam_sos.min() >= -RELATIVE_DEFICIT_TOL * kappa2, lam_sos.min()
    assert lam_krr.min() <= -0.1 * kappa2, lam_krr.min()
    assert mse["sos"] <= 1.1 * mse["krr"], mse
    print("checks passed")


if __name__ == "__main__":
    with threadpool_limits(1):  # small eigendecompositions: threads only add overhead
        main()
