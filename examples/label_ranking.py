r"""Label ranking with SELF on the Birkhoff polytope (iris and wine, Cheng-Hullermeier style).
==========================================================================================

Label-ranking data sets regenerated from classification data as Cheng and Hullermeier did
(and Korba et al. / Blondel, "Structured Prediction with Projection Oracles", section 6):
fit a Gaussian naive Bayes classifier on the whole data set and rank the labels of each
instance by predicted class probability.  ``Y[i, l]`` is the rank of label ``l`` (0 = most
probable), the Y format of the ``"ranking"`` output space.

Methods (all share the kernel-ridge weights :math:`\alpha(x) = (K + n\lambda I)^{-1}v(x)`,
manifold paper eq. 3, Gaussian kernel on standardized features):

* **SELF, Birkhoff** -- :class:`psdsos.structured.SELFEstimator` with ``output="ranking"``:
  decoding :math:`\operatorname{argmin}_\pi \sum_i \alpha_i(x) L(\pi, \pi_i)` for the
  Hamming loss, = MAP on the Birkhoff polytope of :math:`\theta = G/k`,
  :math:`G = \sum_i \alpha_i(x) \varphi(\pi_i)` (Blondel eq. 9, 11), by the Hungarian
  algorithm (``decode_method="oracle"``) and, on the selected hyperparameters, also as the
  CVXPY linear program over the polytope (``"cvxpy"``, HiGHS).
* **KRLS, permutation matrices** -- per-entry kernel ridge on the embedding
  :math:`\varphi(\pi)` (the k x k permutation matrix), projected to the nearest permutation
  matrix, :math:`\operatorname{argmin}_P \|P - G\|_F = \operatorname{argmax}_P \langle P,
  G\rangle`, by ``linear_sum_assignment``.  Because the Hamming loss has
  :math:`V = -I/k, b = 0` in eq. 9, this is *the same* argmax as SELF: the two columns must
  agree exactly (asserted below).
* **KRLS, rank vectors** -- :class:`psdsos.structured.KRLSEstimator`: per-entry kernel ridge
  on the rank vectors, projected to the nearest rank vector (sorting; the permutahedron
  encoding).
* **constant** -- the most frequent training ranking.

Loss: normalized Hamming, the fraction of labels whose rank is wrong
(:math:`\frac1k\sum_l 1[\hat\pi_l \ne \pi_l]`), in %.  Outer 10-fold CV (seeded shuffle);
sigma and lambda chosen per fold and per method by an inner 5-fold CV on the training part.

Run: ``python examples/label_ranking.py [--out losses.png]`` (about 25 s; the figure shows
the test losses).  ``PSDSOS_EXAMPLE_FAST=1``: 3 outer
and 3 inner folds, a smaller grid (about 5 s).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import load_iris, load_wine
from sklearn.model_selection import KFold
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import StandardScaler

from psdsos.structured import KRLSEstimator, SELFEstimator

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")

SEED = 0
N_OUTER = 3 if FAST else 10
N_INNER = 3 if FAST else 5
SIGMAS = (0.5, 1.0, 2.0, 4.0) if FAST else (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
LAMS = (1e-4, 1e-2) if FAST else (1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
METHODS = ("SELF-Birkhoff", "KRLS-permmat", "KRLS-ranks", "constant")


def label_ranking_data(loader):
    """(X standardized, Y rank vectors): Gaussian naive Bayes probabilities -> label ranks."""
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    proba = GaussianNB().fit(X, y).predict_proba(X)
    order = np.argsort(-proba, axis=1, kind="stable")  # labels, most probable first
    Y = np.empty_like(order)
    Y[np.arange(len(Y))[:, None], order] = np.arange(Y.shape[1])[None, :]
    return X, Y


def hamming(Y_true, Y_pred):
    """Normalized Hamming loss (fraction of misplaced labels), per sample."""
    return np.mean(Y_true != Y_pred, axis=1)


def predict_all(X_tr, Y_tr, X_te, sigma, lam):
    """Predictions of every method for one (sigma, lam): the weights are computed once."""
    model = SELFEstimator(sigma=sigma, lam=lam, output="ranking").fit(X_tr, Y_tr)
    alpha = model.scores(X_te)
    space = model.output_space_
    self_pred = space.decode(alpha, "oracle")
    # KRLS on the permutation-matrix embedding, projected by linear_sum_assignment
    G = (alpha @ space.embed(Y_tr)).reshape(len(X_te), space.k_, space.k_)
    krls_perm = np.empty_like(self_pred)
    for j, Gj in enumerate(G):
        rows, cols = linear_sum_assignment(Gj, maximize=True)
        krls_perm[j, rows] = cols
    krls_ranks = space.project(alpha @ Y_tr.astype(float))  # = KRLSEstimator(...).predict
    rows, counts = np.unique(Y_tr, axis=0, return_counts=True)
    constant = np.repeat(rows[np.argmax(counts)][None], len(X_te), axis=0)
    return {"SELF-Birkhoff": self_pred, "KRLS-permmat": krls_perm, "KRLS-ranks": krls_ranks,
            "constant": constant}


def select(X, Y, rng_seed):
    """Inner CV: best (sigma, lam) for every method (ties: first in grid order)."""
    inner = KFold(N_INNER, shuffle=True, random_state=rng_seed)
    scores = {m: np.zeros((len(SIGMAS), len(LAMS))) for m in METHODS}
    for tr, va in inner.split(X):
        for a, sigma in enumerate(SIGMAS):
            for b, lam in enumerate(LAMS):
                preds = predict_all(X[tr], Y[tr], X[va], sigma, lam)
                for m in METHODS:
                    scores[m][a, b] += hamming(Y[va], preds[m]).sum()
    best = {}
    for m in METHODS:
        a, b = np.unravel_index(np.argmin(scores[m]), scores[m].shape)
        best[m] = (SIGMAS[a], LAMS[b])
    return best


def evaluate(name, loader):
    X, Y = label_ranking_data(loader)
    outer = KFold(N_OUTER, shuffle=True, random_state=SEED)
    losses = {m: [] for m in METHODS + ("SELF-LP",)}
    chosen = []
    for fold, (tr, te) in enumerate(outer.split(X)):
        best = select(X[tr], Y[tr], SEED + 1 + fold)
        chosen.append(best["SELF-Birkhoff"])
        for m in METHODS:
            pred = predict_all(X[tr], Y[tr], X[te], *best[m])[m]
            losses[m].append(hamming(Y[te], pred).mean())
        # the same SELF model decoded as an LP over the Birkhoff polytope (CVXPY, HiGHS)
        sigma, lam = best["SELF-Birkhoff"]
        lp_model = SELFEstimator(sigma=sigma, lam=lam, output="ranking",
                                 decode_method="cvxpy").fit(X[tr], Y[tr])
        pred_lp = lp_model.predict(X[te])
        losses["SELF-LP"].append(hamming(Y[te], pred_lp).mean())
        # checks against known answers, every fold:
        # (1) SELF with the Hamming loss (V = -I/k, b = 0) = KRLS on permutation matrices
        #     + linear assignment, at equal hyperparameters
        same = predict_all(X[tr], Y[tr], X[te], sigma, lam)
        np.testing.assert_array_equal(same["SELF-Birkhoff"], same["KRLS-permmat"])
        # (2) the LP decoding reaches the oracle's objective on every test point
        alpha = lp_model.scores(X[te])
        space = lp_model.output_space_
        obj_lp = [space.objective(a, p[None]) for a, p in zip(alpha, pred_lp, strict=True)]
        obj_or = [space.objective(a, p[None])
                  for a, p in zip(alpha, same["SELF-Birkhoff"], strict=True)]
        tol = 1e-7 * (1.0 + np.abs(alpha).sum(axis=1))  # LP tolerance, at the scale of alpha
        assert np.all(np.abs(np.ravel(obj_lp) - np.ravel(obj_or)) <= tol)
        # (3) the library's KRLSEstimator gives the rank-vector baseline
        if fold == 0:
            krls = KRLSEstimator(sigma=sigma, lam=lam, output="ranking").fit(X[tr], Y[tr])
            np.testing.assert_array_equal(krls.predict(X[te]), same["KRLS-ranks"])
    return X.shape, Y.shape[1], losses, chosen


def figure(all_losses, cols, path=None):
    """Test loss per method and data set (mean and standard deviation over the folds)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        print("matplotlib is not installed: no figure")
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    x = np.arange(len(all_losses))
    w = 0.8 / len(cols)
    for j, c in enumerate(cols):
        m = [100 * np.mean(v[c]) for v in all_losses.values()]
        sd = [100 * np.std(v[c]) for v in all_losses.values()]
        ax.bar(x + (j - (len(cols) - 1) / 2) * w, m, w, yerr=sd, capsize=3, label=c)
    ax.set_xticks(x, list(all_losses))
    ax.set_ylabel("normalized Hamming loss (%)")
    ax.set_title("Label ranking: SELF decoding on the Birkhoff polytope vs baselines")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        print("figure:", path)
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"Label ranking, normalized Hamming loss in % (mean +- std over {N_OUTER} outer "
          f"folds; sigma, lam by inner {N_INNER}-fold CV)")
    cols = METHODS[:1] + ("SELF-LP",) + METHODS[1:]
    header = f"{'data':<6}{'n':>5}{'k':>3}" + "".join(f"{c:>17}" for c in cols)
    print(header)
    print("-" * len(header))
    results, all_losses = {}, {}
    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        shape, k, losses, chosen = evaluate(name, loader)
        all_losses[name] = losses
        results[name] = {m: 100 * np.mean(v) for m, v in losses.items()}
        row = f"{name:<6}{shape[0]:>5}{k:>3}"
        for c in cols:
            row += f"{100 * np.mean(losses[c]):>10.2f} +-{100 * np.std(losses[c]):>4.1f}"
        print(row)
        sig, lam = zip(*chosen, strict=True)
        print(f"{'':<14}SELF (sigma, lam) per fold: "
              + ", ".join(f"({s:g}, {lm:g})" for s, lm in zip(sig, lam, strict=True)))
    print(f"total time {time.perf_counter() - t0:.1f} s")
    figure(all_losses, cols, args.out)

    # known answers: SELF equals KRLS on permutation matrices (checked per fold above); the
    # LP decoding is as good as the oracle; both beat the constant ranking by far
    for name, r in results.items():
        assert abs(r["SELF-Birkhoff"] - r["KRLS-permmat"]) < 1e-9, name
        assert abs(r["SELF-Birkhoff"] - r["SELF-LP"]) < 1e-9, name
        assert r["SELF-Birkhoff"] < 0.5 * r["constant"], name
    print("checks passed: SELF = KRLS(permutation matrices) fold by fold; LP = oracle; "
          "SELF < constant / 2")


if __name__ == "__main__":
    main()
