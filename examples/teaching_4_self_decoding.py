r"""Teaching track 4: SELF structured prediction, decoding on the circle.
=====================================================================

Lesson 4 of the teaching track.  The outputs :math:`y_i` are points of the unit circle
:math:`S^1 \subset \mathbb R^2` (noisy directions :math:`\theta_i = 2\pi x_i + \varepsilon_i`)
and the loss is the squared geodesic distance :math:`\Delta(y, y') = \arccos^2\langle y,
y'\rangle`.  An average of points of the circle is not on the circle, so least squares does
not apply directly.  SELF (Rudi, Ciliberto, Marconi, Rosasco, "Manifold Structured
Prediction", https://arxiv.org/abs/1806.09908, eq. 2-3) predicts in two steps:

1. **scores**: kernel ridge weights, one per training point,
   :math:`\alpha(x) = (\mathbf K + n\lambda I)^{-1} v(x)`, :math:`v(x)_i = k(x, x_i)`
   (eq. 3); they take **both signs**;
2. **decoding**: :math:`\hat f(x) = \operatorname{argmin}_{y \in S^1} \sum_i
   \alpha_i(x)\, \Delta(y, y_i)` (eq. 2), a weighted Frechet mean with signed weights.

:class:`psdsos.SELFEstimator` with ``output="sphere"`` computes the weights
(``scores``) and decodes by multi-start Riemannian gradient descent.  On the circle the
decoding problem is one-dimensional, so we check it by brute force over 20,000 angles.  The
naive alternative (:class:`psdsos.KRLSEstimator`) averages the outputs with the same
weights in :math:`\mathbb R^2` and projects back onto the circle: a point of the circle, but
not the minimizer of eq. 2.

Run: ``python examples/teaching_4_self_decoding.py [--out fig.png]`` (a few seconds).
"""

import argparse
import os

import numpy as np

from psdsos import KRLSEstimator, SELFEstimator

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")
N = 30 if FAST else 40  # training pairs
SIGMA, LAM = 0.15, 1e-3  # Gaussian kernel bandwidth, ridge lambda of eq. 3


def sq_geodesic(Y, Z):
    """Delta(y, z) = arccos(<y, z>)^2 for all rows y of Y and z of Z."""
    return np.arccos(np.clip(Y @ Z.T, -1.0, 1.0)) ** 2


def angle(Y):
    return np.mod(np.arctan2(Y[..., 1], Y[..., 0]), 2 * np.pi)


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 1.0, N))
    theta = 2 * np.pi * x + 0.5 * rng.standard_normal(N)
    Y = np.c_[np.cos(theta), np.sin(theta)]  # unit rows: points of S^1

    self_ = SELFEstimator(sigma=SIGMA, lam=LAM, output="sphere").fit(x[:, None], Y)
    krls = KRLSEstimator(sigma=SIGMA, lam=LAM, output="sphere").fit(x[:, None], Y)
    x_test = np.linspace(0.0, 1.0, 201)[:, None]
    alpha = self_.scores(x_test)  # (201, N): step 1, the signed weights alpha_i(x)
    # the same weights by hand (eq. 3): a linear solve with the regularized kernel matrix
    K = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * SIGMA**2))
    v = np.exp(-((x[:, None] - x_test[:, 0]) ** 2) / (2 * SIGMA**2))  # (N, 201)
    alpha_hand = np.linalg.solve(K + N * LAM * np.eye(N), v).T
    Y_self = self_.predict(x_test)  # step 2: decoding, eq. 2
    Y_krls = krls.predict(x_test)  # average sum_i alpha_i(x) y_i, then projection

    # the decoding objective F_x(y) = sum_i alpha_i(x) Delta(y, y_i) at both predictions, and
    # its minimum by brute force over a fine grid of the circle
    phi = np.linspace(0.0, 2 * np.pi, 20000, endpoint=False)
    F_grid = alpha @ sq_geodesic(np.c_[np.cos(phi), np.sin(phi)], Y).T  # (201, 20000)
    F_self = np.sum(alpha * sq_geodesic(Y_self, Y), axis=1)
    F_krls = np.sum(alpha * sq_geodesic(Y_krls, Y), axis=1)
    F_brute = F_grid.min(axis=1)

    print(f"{N} training directions; weights alpha_i(x): {np.mean(alpha < 0):.0%} negative, "
          f"sum between {alpha.sum(axis=1).min():.2f} and {alpha.sum(axis=1).max():.2f}")
    print(f"decoding objective over {len(x_test)} test inputs: SELF - brute force "
          f"<= {np.max(F_self - F_brute):+.1e}; projected average - SELF up to "
          f"{np.max(F_krls - F_self):.3f}")
    truth = np.c_[np.cos(2 * np.pi * x_test[:, 0]), np.sin(2 * np.pi * x_test[:, 0])]
    for name, Z in (("SELF", Y_self), ("projected average", Y_krls)):
        err = np.mean(np.diag(sq_geodesic(Z, truth)))
        print(f"  {name:18s}: mean squared geodesic error to the noiseless curve {err:.4f}")

    j = int(np.argmax(F_krls - F_self))  # the test input where the two differ most
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        a = alpha[j]
        fig, ax = plt.subplots(1, 3, figsize=(13, 4.2), layout="constrained")
        ax[0].axhline(0.0, color="0.5", lw=0.8)
        ax[0].stem(x, a, basefmt=" ")
        ax[0].axvline(x_test[j, 0], color="C3", ls="--", label=f"x = {x_test[j, 0]:.3f}")
        ax[0].set_xlabel("training input x_i")
        ax[0].set_title("step 1: signed weights alpha_i(x)", fontsize=10)
        ax[0].legend(fontsize=8)
        c = np.linspace(0, 2 * np.pi, 400)
        ax[1].plot(np.cos(c), np.sin(c), color="0.7", lw=1)
        vmax = float(np.abs(a).max())
        sc = ax[1].scatter(Y[:, 0], Y[:, 1], c=a, cmap="RdBu_r", vmin=-vmax, vmax=vmax,
                           s=20 + 300 * np.abs(a) / vmax, edgecolors="k", linewidths=0.5)
        avg = a @ Y  # the naive average, inside the disc
        ax[1].plot(*avg, "s", color="C2", label="average sum alpha_i y_i")
        ax[1].plot([avg[0], Y_krls[j, 0]], [avg[1], Y_krls[j, 1]], "C2:")
        ax[1].plot(*Y_krls[j], "o", color="C2", ms=9, label="... projected")
        ax[1].plot(*Y_self[j], "*", color="C3", ms=15, label="SELF decode (eq. 2)")
        ax[1].set_aspect("equal")
        ax[1].set_title("outputs y_i coloured by alpha_i(x)", fontsize=10)
        ax[1].legend(fontsize=7, loc="center")
        fig.colorbar(sc, ax=ax[1], shrink=0.7, label="alpha_i(x)")
        ax[2].plot(phi, F_grid[j], "k-", lw=1, label="F_x(angle), 20,000 angles")
        ax[2].axvline(angle(Y_self[j]), color="C3", label="SELF decode")
        ax[2].axvline(angle(Y_krls[j]), color="C2", ls="--", label="projected average")
        ax[2].set_xlabel("angle of y (radians)")
        ax[2].set_title("step 2: F_x(y) = sum_i alpha_i(x) d(y, y_i)^2", fontsize=10)
        ax[2].legend(fontsize=7)
        if args.out is not None:
            fig.savefig(args.out, dpi=110)
            print("figure:", args.out)

    # ---- checks: what the lesson teaches ---------------------------------------------------
    # (the weights sum to about 1, so F is a weighted mean of squared angles, in rad^2)
    assert np.allclose(np.linalg.norm(Y_self, axis=1), 1.0)  # decodes lie on the circle
    assert np.allclose(np.linalg.norm(Y_krls, axis=1), 1.0)
    assert np.any(alpha < 0)  # the weights are signed
    # step 1 is kernel ridge (eq. 3); K + n lam I has condition number < 1e4 here
    assert np.allclose(alpha, alpha_hand, rtol=0, atol=1e-9 * np.abs(alpha).max())
    avg = alpha @ Y  # the naive prediction is the normalized weighted average
    assert np.allclose(Y_krls, avg / np.linalg.norm(avg, axis=1, keepdims=True), atol=1e-9)
    # the decode is the global minimizer of eq. 2: no angle of the fine grid does better (the
    # grid's own error, about F'' (pi / 20000)^2 / 2 < 1e-7 rad^2, is covered by the margin)
    assert np.all(F_self <= F_brute + 1e-6), np.max(F_self - F_brute)
    # the projected average is a point of the circle, but not the minimizer: never better,
    # and somewhere clearly worse (measured: by up to 0.084 rad^2 with 30 training pairs,
    # 0.012 with 40)
    assert np.all(F_krls >= F_self - 1e-9)
    assert np.max(F_krls - F_self) >= 5e-3, np.max(F_krls - F_self)
    print("checks passed")


if __name__ == "__main__":
    main()
