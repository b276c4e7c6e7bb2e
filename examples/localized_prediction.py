"""Localized structured prediction by parts (Ciliberto, Bach, Rudi, NeurIPS 2019, section 6).
==========================================================================================

Two experiments of the paper, on synthetic data:

1. Section 6.1 (intra-locality): x = (x_1, ..., x_``|P|``) ~ N(0, M(gamma) kron I_k) with
   M_pq = exp(-gamma ``|p - q|`` / ``|P|``) (eq. 23), a shared regression vector w (uniform in the
   unit ball) and, part by part, y_p = <w, x_p> + eps_p with eps_p ~ N(0, 0.5^2) (our reading
   of "y_i = w^T x_i + eps": each part's output is the same linear function of that part's
   input).  Local-LS (LocalizedSELF with the linear restriction kernel, every (sample,
   part) pair) against global least squares (ridge regression of y on the whole x), lambda
   chosen on a hold-out split in [1e-6, 10]; test MSE over gamma and ``|P|`` (Figure 4).  Also
   the empirical intra-locality matrix C_pq of eq. 21 for the linear kernel (Figure 3),
   whose normalized version is exp(-2 gamma ``|p - q|`` / ``|P|``) in expectation.
2. Section 6.2 (ridge directions): synthetic fingerprint-like images
   (psdsos.datasets.make_fingerprints; FVC2004 is not redistributable), Y the ridge
   direction of a 7 x 7 Sobel filter, 20 x 20 patches at stride 5 (circular).  Local-Delta
   (LocalizedSELF, orientation loss sin^2 per pixel), Local-LS (same, squared loss on the
   angles), Global-Delta (SELF with the loss of eq. 24: one part, the whole image) and KRLS
   (kernel ridge on the angles), Gaussian kernels, test error of eq. 24 (Figure 6), and the
   intra-locality of the central patch against every patch (Figure 7).

The script ends by checking the paper's qualitative findings: no gain of Local-LS at
gamma = 0, a large gain at large gamma and ``|P|``, the normalized C_pq close to its closed form,
and the Figure 6 ordering (Local-Delta best).

Usage::

    python examples/localized_prediction.py            # about a minute
    python examples/localized_prediction.py --paper    # the paper's sizes (hours)
    PSDSOS_EXAMPLE_FAST=1 python examples/localized_prediction.py   # seconds (tests)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from psdsos.datasets import make_fingerprints
from psdsos.kernels import scale_bandwidth
from psdsos.structured import KRLSEstimator, LocalizedSELF, intra_locality
from psdsos.structured.parts import Blocks, Patches2D

LAMBDAS = np.logspace(-6, 1, 6)


# --------------------------------------------------------------------------- section 6.1
def simulate(n, P, k, gamma, w, rng, shared_noise=False):
    """Eq. 23 inputs (n, P k) and outputs y_p = <w, x_p> + 0.5 eps_p, shape (n, P); with
    ``shared_noise`` one eps per sample for all its parts (the other reading of eq. 23)."""
    d = np.abs(np.subtract.outer(np.arange(P), np.arange(P))) / P
    L = np.linalg.cholesky(np.exp(-gamma * d) + 1e-12 * np.eye(P))
    Z = np.einsum("pq,nqk->npk", L, rng.standard_normal((n, P, k)))
    Y = Z @ w + 0.5 * rng.standard_normal((n, 1 if shared_noise else P))
    return Z.reshape(n, P * k), Y


def holdout_fit(make, X, Y, idx):
    """Fit make(lam) for every lam of LAMBDAS on the first 70% of the permutation idx, keep
    the best on the other 30%, refit it on everything."""
    tr, va = idx[: int(0.7 * len(X))], idx[int(0.7 * len(X)):]
    errs = [np.mean((make(lam).fit(X[tr], Y[tr]).predict(X[va]) - Y[va]) ** 2)
            for lam in LAMBDAS]
    return make(LAMBDAS[int(np.argmin(errs))]).fit(X, Y)


def section_61(gammas, n_parts, k, n_train, n_test, runs, seed, shared_noise=False):
    """Test MSE of LS and Local-LS, arrays (len(gammas), len(n_parts))."""
    ls = np.zeros((len(gammas), len(n_parts)))
    local = np.zeros_like(ls)
    for g, gamma in enumerate(gammas):
        for b, P in enumerate(n_parts):
            for r in range(runs):
                rng = np.random.default_rng([seed, g, b, r])
                w = rng.standard_normal(k)
                w *= rng.uniform() ** (1 / k) / np.linalg.norm(w)  # uniform in the unit ball
                X, Y = simulate(n_train, P, k, gamma, w, rng, shared_noise)
                Xt, Yt = simulate(n_test, P, k, gamma, w, rng, shared_noise)
                idx = rng.permutation(n_train)  # the same hold-out split for both
                glob = holdout_fit(lambda lam: KRLSEstimator("linear", lam=lam), X, Y, idx)
                # the linear restriction kernel has rank k: Nystrom with r = k is exact
                r_ny = min(k, n_train * P)
                loc = holdout_fit(lambda lam, P=P, r_ny=r_ny: LocalizedSELF(
                    "linear", lam=lam, parts=Blocks(P, k, 1), n_landmarks=r_ny,
                    random_state=0), X, Y, idx)
                ls[g, b] += np.mean((glob.predict(Xt) - Yt) ** 2) / runs
                local[g, b] += np.mean((loc.predict(Xt) - Yt) ** 2) / runs
    return ls, local


# --------------------------------------------------------------------------- section 6.2
def eq24(Z, Y):
    return float(np.mean(np.sin(Z - Y) ** 2))


def section_62(shape, n_train, n_test, n_aux, n_landmarks, seed):
    X, Y, _ = make_fingerprints(n_train + n_test + 1, shape, random_state=seed)
    n = len(X)
    Xf, Yf = X.reshape(n, -1), Y.reshape(n, -1)
    tr, va, te = np.arange(n_train), np.array([n_train]), np.arange(n_train + 1, n)
    parts = Patches2D(shape, 20, stride=5, circular=True)
    s_loc = scale_bandwidth(parts.extract_inputs(Xf[tr]).reshape(-1, parts.input_index.shape[1]))
    s_glob = scale_bandwidth(Xf[tr])
    models = {
        "Local-Delta": lambda lam, c: LocalizedSELF(
            "gaussian", c * s_loc, lam=lam, parts=parts, output="orientation", n_aux=n_aux,
            n_landmarks=n_landmarks, random_state=0),
        "Local-LS": lambda lam, c: LocalizedSELF(
            "gaussian", c * s_loc, lam=lam, parts=parts, output="euclidean", n_aux=n_aux,
            n_landmarks=n_landmarks, random_state=0),
        # one part (the whole image): SELF with the loss of eq. 24, and kernel ridge
        "Global-Delta": lambda lam, c: LocalizedSELF("gaussian", c * s_glob, lam=lam,
                                                     output="orientation"),
        "KRLS": lambda lam, c: LocalizedSELF("gaussian", c * s_glob, lam=lam,
                                             output="euclidean"),
    }
    errors, preds = {}, {}
    for name, make in models.items():
        # sigma (factors of the "scale" bandwidth) and lambda on a validation image
        best = min(((eq24(make(lam, c).fit(Xf[tr], Yf[tr]).predict(Xf[va]), Yf[va]), lam, c)
                    for c in (1.0, 2.0) for lam in (1e-6, 1e-3)),
                   key=lambda t: t[0])
        model = make(best[1], best[2]).fit(Xf[tr], Yf[tr])
        Z = model.predict(Xf[te])
        errors[name] = eq24(Z, Yf[te])
        preds[name] = Z[0].reshape(shape)
    center = (shape[0] // 2 // 5) * (shape[1] // 5) + shape[1] // 2 // 5
    Cp = intra_locality(Xf[: n_train], parts, "gaussian", "scale", rows=[center],
                        normalize=True)[0]
    rows = np.arange(0, shape[0], 5)
    cols = np.arange(0, shape[1], 5)
    return errors, preds, X[te[0]], Y[te[0]], Cp.reshape(len(rows), len(cols))


# --------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--paper", action="store_true",
                    help="the paper's sizes (k = 1000, 100 runs, 50 training images of "
                         "480 x 640, m = 30,000): hours")
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shared-noise", action="store_true",
                    help="section 6.1 with one noise draw per sample shared by its parts "
                         "(default: independent noise per part)")
    args = ap.parse_args(argv)
    fast = os.environ.get("PSDSOS_EXAMPLE_FAST") == "1"
    if args.paper:
        cfg61 = dict(gammas=[0.0, 1.0, 10.0, 100.0], n_parts=[1, 2, 5, 10, 20, 50], k=1000,
                     n_train=100, n_test=1000, runs=100)
        cfg62 = dict(shape=(480, 640), n_train=50, n_test=30, n_aux=30_000,
                     n_landmarks=2000)
    elif fast:
        cfg61 = dict(gammas=[0.0, 100.0], n_parts=[1, 8], k=10, n_train=40, n_test=200,
                     runs=2)
        cfg62 = dict(shape=(40, 60), n_train=4, n_test=2, n_aux=800, n_landmarks=150)
    else:
        cfg61 = dict(gammas=[0.0, 1.0, 10.0, 100.0], n_parts=[1, 2, 5, 10, 20], k=20,
                     n_train=100, n_test=500, runs=2)
        cfg62 = dict(shape=(60, 80), n_train=10, n_test=4, n_aux=3000, n_landmarks=400)

    t0 = time.perf_counter()
    ls, local = section_61(**cfg61, seed=args.seed, shared_noise=args.shared_noise)
    print("Section 6.1: test MSE, rows gamma, columns |P| =", cfg61["n_parts"])
    for g, gamma in enumerate(cfg61["gammas"]):
        print(f"  gamma = {gamma:6.1f}  LS       " + "  ".join(f"{v:.4f}" for v in ls[g]))
        print("                 Local-LS " + "  ".join(f"{v:.4f}" for v in local[g]))
    # Figure 3: intra-locality of eq. 23 data, linear kernel
    P3, k3, n3 = 20, cfg61["k"], 100
    C3 = {}
    rng = np.random.default_rng(args.seed)
    for gamma in (0.0, 10.0, 100.0):
        X3, _ = simulate(n3, P3, k3, gamma, np.zeros(k3), rng)
        C3[gamma] = intra_locality(X3, Blocks(P3, k3, 1), "linear", normalize=True)
    d3 = np.abs(np.subtract.outer(np.arange(P3), np.arange(P3))) / P3
    c_err = max(np.abs(C3[g] - np.exp(-2 * g * d3)).max() for g in C3)
    print(f"  normalized C_pq vs exp(-2 gamma |p-q|/|P|): max deviation {c_err:.3f} "
          f"(n = {n3}, k = {k3})")
    t61 = time.perf_counter() - t0

    t0 = time.perf_counter()
    errors, preds, x_img, y_img, Cp = section_62(**cfg62, seed=args.seed)
    t62 = time.perf_counter() - t0
    print("Section 6.2: test error of eq. 24 (mean sin^2 of the angle error)")
    for name, e in errors.items():
        print(f"  {name:12s} {e:.4f}")
    print(f"(times: section 6.1 {t61:.1f} s, section 6.2 {t62:.1f} s)")

    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        plt = None
        print("matplotlib is not installed: no figure")
    if plt is not None:
        fig = plt.figure(figsize=(15, 8))
        ax = fig.add_subplot(2, 4, 1)
        for g, gamma in enumerate(cfg61["gammas"]):
            (line,) = ax.semilogy(cfg61["n_parts"], ls[g], "--", marker="o")
            ax.semilogy(cfg61["n_parts"], local[g], "-", marker="s", color=line.get_color(),
                        label=f"gamma={gamma:g}")
        ax.set_xlabel("|P|")
        ax.set_ylabel("test MSE (dashed: LS, solid: Local-LS)")
        ax.set_title("Sec. 6.1 (Fig. 4)")
        ax.legend(fontsize=7)
        for a, gamma in enumerate(C3):
            ax = fig.add_subplot(2, 4, 2 + a)
            ax.imshow(C3[gamma], vmin=0, vmax=1)
            ax.set_title(f"C_pq, gamma={gamma:g} (Fig. 3)")
        panels = [("input", x_img, "gray"), ("truth", y_img, "hsv")]
        panels += [(name, preds[name], "hsv") for name in preds]
        for a, (title, img, cmap) in enumerate(panels[:4]):
            ax = fig.add_subplot(4, 8, 17 + a + (a // 4) * 4)
            ax.imshow(img, cmap=cmap)
            ax.set_title(title if title in ("input", "truth") else
                         f"{title} {errors[title]:.3f}", fontsize=8)
            ax.axis("off")
        for a, (title, img, cmap) in enumerate(panels[4:]):
            ax = fig.add_subplot(4, 8, 25 + a)
            ax.imshow(img, cmap=cmap)
            ax.set_title(f"{title} {errors[title]:.3f}", fontsize=8)
            ax.axis("off")
        ax = fig.add_subplot(2, 4, 7)
        names = list(errors)
        ax.bar(range(len(names)), [errors[n] for n in names])
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_title("Sec. 6.2 test error eq. 24 (Fig. 6)")
        ax = fig.add_subplot(2, 4, 8)
        ax.imshow(Cp)
        ax.set_title("C_pq, central patch (Fig. 7)")
        fig.tight_layout()
        if args.out is not None:
            fig.savefig(args.out, dpi=80)
            print(f"figure saved to {args.out}")

    # ---- checks against the paper's findings
    gi0 = cfg61["gammas"].index(0.0)
    ratio0 = local[gi0, -1] / ls[gi0, -1]
    ratio_hi = local[-1, -1] / ls[-1, -1]
    print(f"Local-LS / LS at |P| = {cfg61['n_parts'][-1]}: gamma = 0: {ratio0:.2f}, "
          f"gamma = {cfg61['gammas'][-1]:g}: {ratio_hi:.2f}")
    assert 0.5 < ratio0 < 2.0, "gamma = 0: parts are copies, no gain from locality"
    assert ratio_hi < 0.5, "large gamma: locality gives a large gain"
    # C_pq estimate: standard deviation ~ 2 sqrt(2 / (n k)); 6 of it
    assert c_err < 6 * 2 * np.sqrt(2 / (n3 * k3)) + 0.05
    assert errors["Local-Delta"] == min(errors.values()), "Fig. 6: Local-Delta is best"
    print("checks passed")


if __name__ == "__main__":
    main()
