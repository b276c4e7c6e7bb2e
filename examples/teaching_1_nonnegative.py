r"""Teaching track 1: a non-negative function as a kernel sum of squares.
=====================================================================

Lesson 1 of the teaching track.  The target :math:`|\sin x|` touches 0 at
:math:`x = -\pi, 0, \pi`; its noisy samples go below 0 there.  A plain kernel ridge fit
follows the noise and goes negative.  The kernel sum-of-squares (SoS) model of the PSD paper
(Muzellec, Bach, Rudi, https://hal.science/hal-03454277, eq. 3 and 8 with d = 1)

.. math::

    f_{\mathbf B}(x) = \phi(x)^\top \mathbf B\, \phi(x), \qquad \mathbf B \succeq 0,
    \qquad \phi(x) = \mathbf R^{-\top} v(x),\ v(x)_i = k(x, x_i),\ \mathbf K = \mathbf R^\top
    \mathbf R,

cannot: with :math:`\mathbf B = \sum_k \sigma_k u_k u_k^\top`, :math:`f_{\mathbf B}(x) =
\sum_k \sigma_k (u_k^\top\phi(x))^2 \ge 0` at *every* x, a sum of squares (Remark 1).
The fit minimizes eq. (11) with d = 1,

.. math::

    \frac1{2n}\sum_i (f_{\mathbf B}(x_i) - y_i)^2 + \lambda_1 \operatorname{Tr}\mathbf B
    + \frac{\lambda_2}{2}\|\mathbf B\|_F^2 ,

a convex problem in :math:`\mathbf B` (f is linear in B): first written by hand in CVXPY
(an SDP, a few lines), then with :class:`psdsos.PSDRegressor`, which solves the same problem
through its dual (eq. 12).  The two must agree: that is the check.

Run: ``python examples/teaching_1_nonnegative.py [--out fig.png]`` (a few seconds).
"""

import argparse
import os
import time

import cvxpy as cp
import numpy as np
from threadpoolctl import threadpool_limits

from psdsos import KernelRidgeRegressor, PSDRegressor

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N = 40 if FAST else 60  # noisy samples
SIGMA = 0.3  # Gaussian kernel bandwidth, k(x, x') = exp(-(x - x')^2 / (2 sigma^2))
LAM1, LAM2 = 1e-3, 1e-4  # trace and Frobenius weights on B (eq. 6)
JITTER = 1e-9  # K + JITTER n I: keeps the Cholesky factor R of K well defined


def gaussian(a, b):
    return np.exp(-((a[:, None] - b[None, :]) ** 2) / (2 * SIGMA**2))


def fit_by_hand(x, y):
    """The SDP of eq. (11) (d = 1) in CVXPY; returns the features map and B."""
    n = len(x)
    # Step 1: features. R^T R = K (Cholesky); phi(x) = R^{-T} v(x), so phi(x_i) = R[:, i]
    # (up to the jitter): f(x_i) = R[:, i]^T B R[:, i] (paper, after eq. 7).
    R = np.linalg.cholesky(gaussian(x, x) + JITTER * n * np.eye(n)).T

    def phi(t):
        return np.linalg.solve(R.T, gaussian(x, t)).T  # rows phi(t_j)

    Phi = phi(x)
    # Step 2: the variable B with the SoS constraint B >> 0 (PSD=True), and f(x_i) linear in B.
    B = cp.Variable((n, n), PSD=True)
    f_data = cp.sum(cp.multiply(Phi @ B, Phi), axis=1)  # f(x_i) = phi_i^T B phi_i
    # Step 3: the objective of eq. (11) and a solve with an interior-point solver.
    J = (cp.sum_squares(f_data - y) / (2 * n) + LAM1 * cp.trace(B)
         + LAM2 / 2 * cp.sum_squares(B))
    problem = cp.Problem(cp.Minimize(J))
    problem.solve(solver="CLARABEL")
    if problem.status != cp.OPTIMAL:  # never use the answer of a failed solve
        raise RuntimeError(f"CLARABEL returned status {problem.status!r}")
    return phi, B.value


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(2)
    x = np.linspace(-3.5, 3.5, N)
    y = np.abs(np.sin(x)) + 0.15 * rng.standard_normal(N)  # some samples are < 0
    grid = np.linspace(-3.5, 3.5, 2001)

    # (a) by hand: the SDP
    t0 = time.perf_counter()
    phi, B = fit_by_hand(x, y)
    t_hand = time.perf_counter() - t0
    P = phi(grid)
    f_hand = np.einsum("ti,ij,tj->t", P, B, P)
    # (b) the estimator: same objective, dual solver, certified by its duality gap
    sos = PSDRegressor(sigma=SIGMA, lam1=LAM1, lam2=LAM2, tol=1e-9, max_iter=100000)
    t0 = time.perf_counter()
    sos.fit(x[:, None], y)
    t_sos = time.perf_counter() - t0
    f_sos = sos.predict(grid[:, None])
    # (c) kernel ridge regression (no constraint), same kernel
    krr = KernelRidgeRegressor(sigma=SIGMA, rho=1e-4, fit_intercept=False)
    f_krr = krr.fit(x[:, None], y).predict(grid[:, None])

    print(f"{N} noisy samples of |sin x|, {np.sum(y < 0)} of them below 0")
    print(f"min over {len(grid)} grid points: by hand (CVXPY) {f_hand.min():+.2e}, "
          f"PSDRegressor {f_sos.min():+.2e}, kernel ridge {f_krr.min():+.3f}")
    print(f"smallest eigenvalue of B: by hand {np.linalg.eigvalsh(B)[0]:+.1e}, "
          f"PSDRegressor {np.linalg.eigvalsh(sos.B_)[0]:+.1e}; "
          f"duality gap {sos.dual_gap_:.1e}")
    print(f"max |by hand - PSDRegressor| on the grid: {np.abs(f_hand - f_sos).max():.1e}; "
          f"fit times: SDP {t_hand:.2f} s, dual (eq. 12) {t_sos:.2f} s")

    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.plot(grid, np.abs(np.sin(grid)), "k:", lw=1, label="|sin x|")
        ax.plot(x, y, "k.", label="noisy samples")
        ax.plot(grid, f_krr, "C0-", label="kernel ridge (goes negative)")
        ax.plot(grid, f_hand, "C1-", lw=3, alpha=0.5, label="SoS model, by hand (CVXPY)")
        ax.plot(grid, f_sos, "C3--", label="SoS model, PSDRegressor")
        ax.set_xlabel("x")
        ax.set_ylim(top=1.6)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
        fig.tight_layout()
        if args.out is not None:
            fig.savefig(args.out, dpi=120)
            print("figure:", args.out)

    # ---- checks: what the lesson teaches --------------------------------------------------
    scale = np.abs(y).max()
    # B is PSD (to the solver's accuracy), so the SoS functions are >= 0 everywhere
    assert np.linalg.eigvalsh(sos.B_)[0] >= -1e-12 * np.linalg.eigvalsh(sos.B_)[-1]
    assert f_sos.min() >= 0.0 and f_hand.min() >= -1e-6 * scale
    # kernel ridge does go below 0 near the zeros of |sin|
    assert f_krr.min() < -0.05 * scale, f_krr.min()
    # the two SoS fits solve the same problem: the same function up to the solvers' accuracy
    # and the jitters of the two Cholesky factors (measured: 2e-5 of the scale)
    assert sos.dual_gap_ <= 1e-9
    assert np.abs(f_hand - f_sos).max() <= 1e-3 * scale
    print("checks passed")


if __name__ == "__main__":
    with threadpool_limits(1):  # small matrices: threads only add overhead
        main()
