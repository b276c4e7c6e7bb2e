r"""Teaching track 2: interpolating PSD matrices along a curve.
===========================================================

Lesson 2 of the teaching track.  Data: noisy 2 x 2 matrices :math:`\mathbf M_i` at times
:math:`t_i \in [0, 1]`, samples of a Bures-Wasserstein geodesic between two *rank-one*
matrices (every matrix on it is singular, on the boundary of the PSD cone), plus symmetric
Gaussian noise, so that some measurements are indefinite.  We want a function
:math:`t \mapsto F(t)` with PSD values at every t.

*Entrywise kernel ridge* fits each entry separately,
:math:`\hat F(t) = \sum_i \alpha_i(t) \mathbf M_i` with
:math:`\alpha(t) = (\mathbf K + n\rho I)^{-1} v(t)`: the weights :math:`\alpha_i(t)` take
both signs, so near the boundary of the cone the prediction leaves it.

The *kernel SoS model* of the PSD paper (Muzellec, Bach, Rudi,
https://hal.science/hal-03454277, eq. 3-4 and 8),

.. math::

    F_{\mathbf B}(t) = \Psi(t)^\top \mathbf B\, \Psi(t), \quad
    \Psi(t) = \phi(t) \otimes I_2, \quad \mathbf B \succeq 0 \ (2n \times 2n),

is PSD at every t by construction (Proposition 1: :math:`u^\top F_{\mathbf B}(t) u =
(\Psi(t) u)^\top \mathbf B (\Psi(t) u) \ge 0`).  :class:`psdsos.PSDRegressor` fits it by
the least-squares problem eq. (11), solved through its dual eq. (12) (no PSD constraint
there, only a negative part), and reports the relative duality gap.

The figure draws each matrix as an ellipse (a segment when it has rank one) and the
smallest eigenvalue of both fits along t; the checks count the times where each fit is not PSD.

Run: ``python examples/teaching_2_psd_interpolation.py [--out fig.png]`` (a few seconds).
"""

import argparse
import os

import numpy as np

from psdsos import PSDRegressor
from psdsos.datasets import bures_geodesic_endpoints, make_bures_geodesic

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N = 20 if FAST else 30  # noisy measurements
SIGMA = 0.2  # Gaussian kernel bandwidth, the same for both fits
RHO = 1e-4  # kernel ridge weight
NOISE = 0.02  # entries' noise level


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)

    # ---- data: a rank-one Bures geodesic, noisy symmetric measurements --------------------
    A, B = bures_geodesic_endpoints(2, rank_one=True, random_state=0)
    t, M_true = make_bures_geodesic(N, endpoints=(A, B))  # t: (N, 1), M: (N, 2, 2)
    rng = np.random.default_rng(0)
    E = NOISE * rng.standard_normal(M_true.shape)
    M = M_true + (E + E.transpose(0, 2, 1)) / 2
    t_grid, M_grid = make_bures_geodesic(t=np.linspace(0.0, 1.0, 201), endpoints=(A, B))

    # ---- entrywise kernel ridge, by hand: alpha(t) = (K + n rho I)^{-1} v(t) --------------
    def k(a, b):
        return np.exp(-((a - b.T) ** 2) / (2 * SIGMA**2))

    coef = np.linalg.solve(k(t, t) + N * RHO * np.eye(N), M.reshape(N, 4))
    F_krr = (k(t_grid, t) @ coef).reshape(-1, 2, 2)  # sum_i alpha_i(t) M_i

    # ---- the kernel SoS model: PSDRegressor (eq. 11, dual eq. 12) --------------------------
    model = PSDRegressor(sigma=SIGMA, lam1=1e-4, lam2=1e-4, tol=1e-8, max_iter=100000)
    F_sos = model.fit(t, M).predict(t_grid)

    eig_krr = np.linalg.eigvalsh(F_krr)[:, 0]
    eig_sos = np.linalg.eigvalsh(F_sos)[:, 0]

    def rmse(F):
        return float(np.sqrt(np.mean(np.sum((F - M_grid) ** 2, axis=(1, 2)))))

    print(f"{N} noisy measurements, {np.sum(np.linalg.eigvalsh(M)[:, 0] < 0)} of them "
          "indefinite")
    print(f"on {len(t_grid)} times: entrywise kernel ridge has a negative eigenvalue at "
          f"{np.sum(eig_krr < 0)} (down to {eig_krr.min():+.3f}); the SoS model at "
          f"{np.sum(eig_sos < 0)} (min eigenvalue {eig_sos.min():+.1e})")
    print(f"RMSE to the true curve: kernel ridge {rmse(F_krr):.4f}, SoS model {rmse(F_sos):.4f}")
    print(f"PSDRegressor: relative duality gap {model.dual_gap_:.1e}, {model.n_iter_} iterations")

    try:
        import matplotlib.pyplot as plt

        from psdsos.plotting import plot_psd_ellipses, psd_ellipse_scale
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5.5), height_ratios=(0.8, 1))
        show = np.arange(0, len(t_grid), 10)  # 21 ellipses per row
        s = psd_ellipse_scale(t_grid[show], M_grid[show])
        plot_psd_ellipses(ax1, t_grid[show], M_grid[show], y=0.1, scale=s, color="k")
        plot_psd_ellipses(ax1, t_grid[show], F_sos[show], y=0.0, scale=s, color="C3")
        ax1.set_yticks([0.1, 0.0], ["true geodesic", "SoS model"])
        ax1.set_title("PSD matrices as ellipses (segments: rank one)", fontsize=10)
        ax2.axhline(0.0, color="0.5", lw=0.8)
        ax2.plot(t_grid[:, 0], eig_krr, "C0-", label="entrywise kernel ridge")
        ax2.plot(t_grid[:, 0], eig_sos, "C3-", label="SoS model (PSDRegressor)")
        ax2.plot(t[:, 0], np.linalg.eigvalsh(M)[:, 0], "k.", label="measurements")
        ax2.fill_between(t_grid[:, 0], eig_krr, 0, where=eig_krr < 0, color="C0", alpha=0.2)
        ax2.set_xlabel("t")
        ax2.set_ylabel("smallest eigenvalue")
        ax2.legend(fontsize=8)
        fig.tight_layout()
        if args.out is not None:
            fig.savefig(args.out, dpi=120)
            print("figure:", args.out)

    # ---- checks: what the lesson teaches ---------------------------------------------------
    scale = float(np.abs(np.linalg.eigvalsh(M_grid)).max())
    assert model.dual_gap_ <= 1e-8  # the fit is certified optimal
    # PSD at every time (Proposition 1), up to rounding in F = Psi^T B Psi
    assert np.linalg.eigvalsh(model.B_)[0] >= -1e-12 * np.linalg.eigvalsh(model.B_)[-1]
    assert eig_sos.min() >= -1e-12 * scale, eig_sos.min()
    # entrywise kernel ridge leaves the cone on a good part of the curve (measured: about
    # 40% of the times, eigenvalues down to -0.02 ... -0.03 for this seed)
    assert np.mean(eig_krr < 0) >= 0.2 and eig_krr.min() <= -0.01 * scale, eig_krr.min()
    # and the constraint costs no accuracy (measured: the SoS model is slightly closer)
    assert rmse(F_sos) <= 1.1 * rmse(F_krr)
    print("checks passed")


if __name__ == "__main__":
    main()
