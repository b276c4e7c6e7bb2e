r"""Projection-oracle Fenchel-Young losses: does a smaller projection set help? (Blondel 2019).
===========================================================================================

The experiments of "Structured Prediction with Projection Oracles" (section 6, Tables 1-2, 4
and 6-7) on data available offline, with a linear model trained by
:class:`psdsos.structured.FenchelYoungEstimator` for every projection set:

* **label ranking** (Tables 1-2): iris, wine and glass (bundled with psdsos:
  :func:`psdsos.datasets.load_glass`), rankings regenerated the Cheng-Hullermeier
  way (a Gaussian naive Bayes classifier fitted on the whole data set ranks the labels of
  each instance by predicted probability); projection sets: the Birkhoff polytope (the
  marginal polytope of permutations), row-stochastic matrices, the unit cube and the whole
  space; loss: normalized Hamming;
* **ordinal regression** (Table 4): scikit-learn's diabetes data with its target cut at the
  quintiles into 5 ordered classes; sets: the order simplex (the marginal polytope of the
  cumulative encoding), the unit cube, the whole space; loss: absolute;
* **multilabel** (Tables 6-7): ``make_multilabel_classification`` (seeded; the paper's data
  sets are not bundled); sets: the unit cube (the marginal polytope) and the whole space;
  loss: normalized Hamming.

Protocol of the paper (section 6, appendix B): standardized features, lambda chosen among 10
values log-spaced in [1e-4, 1e4] on a 25% hold-out of the training part, refit on the whole
training part, loss on the test part (30% of the data).  ``--paper``: 10 random splits
(mean and standard deviation), both geometries; the default (about 40 s) runs one split,
the Euclidean projections (Tables 1-2 are Euclidean) and every other lambda.  The figure
shows soft permutation matrices P(theta(x)) for four iris test points (lambda = 1), Euclidean and KL
projections onto the Birkhoff polytope (the paper's Figure 3).

The paper's own numbers come from other data (its ranking files are not available), so
compare the *orderings* of its columns: the marginal polytope best or tied.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes, load_iris, load_wine, make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import StandardScaler

from psdsos.datasets import load_glass
from psdsos.structured import FenchelYoungEstimator

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")

#: lambda grid of the paper (10 values in [1e-4, 1e4]); the default run uses every other one
LAMS = np.logspace(-4, 4, 10)
SETS = {
    "ranking": ("marginal", "row_simplex", "unit_cube", "reals"),
    "ordinal": ("marginal", "unit_cube", "reals"),
    "multilabel": ("marginal", "reals"),
}


def ranking_data(loader):
    X, y = loader(return_X_y=True)
    proba = GaussianNB().fit(X, y).predict_proba(X)
    order = np.argsort(-proba, axis=1, kind="stable")
    Y = np.empty_like(order)
    Y[np.arange(len(Y))[:, None], order] = np.arange(Y.shape[1])[None, :]
    return X, Y


def ordinal_data():
    X, t = load_diabetes(return_X_y=True)
    return X, np.searchsorted(np.quantile(t, [0.2, 0.4, 0.6, 0.8]), t)


def multilabel_data():
    return make_multilabel_classification(500, n_features=20, n_classes=8, n_labels=3,
                                          random_state=0)


def fit_with_holdout(output, projection_set, projection, X, Y, seed, lams):
    """lambda on a 25% hold-out of the training part, then refit on all of it."""
    Xa, Xb, Ya, Yb = train_test_split(X, Y, test_size=0.25, random_state=seed)
    best = None
    for lam in lams:
        est = FenchelYoungEstimator(output, projection_set=projection_set,
                                    projection=projection, lam=lam).fit(Xa, Ya)
        s = est.score(Xb, Yb)
        if best is None or s > best[0]:
            best = (s, lam)
    return FenchelYoungEstimator(output, projection_set=projection_set, projection=projection,
                                 lam=best[1]).fit(X, Y)


def run(datasets, n_splits, projections, lams):
    rows = []
    for name, output, (X, Y) in datasets:
        for projection in projections:
            losses = {s: [] for s in SETS[output]}
            for split in range(n_splits):
                Xtr, Xte, Ytr, Yte = train_test_split(X, Y, test_size=0.3, random_state=split)
                scaler = StandardScaler().fit(Xtr)
                Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
                for s in SETS[output]:
                    est = fit_with_holdout(output, s, projection, Xtr, Ytr, split, lams)
                    losses[s].append(-est.score(Xte, Yte))
            cells = []
            for s in SETS[output]:
                m, sd = np.mean(losses[s]), np.std(losses[s])
                cells.append(f"{m:.3f}" + (f" ± {sd:.3f}" if n_splits > 1 else ""))
            rows.append((name, output, projection,
                         {s: float(np.mean(v)) for s, v in losses.items()}))
            print(f"{name:10s} {projection:9s} " + "  ".join(
                f"{s}: {c}" for s, c in zip(SETS[output], cells, strict=True)), flush=True)
    return rows


def figure(path=None):
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        print("matplotlib is not installed: no figure")
        return None

    X, Y = ranking_data(load_iris)
    Xtr, Xte, Ytr, Yte = train_test_split(X, Y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    fig, axes = plt.subplots(2, 4, figsize=(9, 4.8))
    for row, projection in enumerate(("euclidean", "kl")):
        # a strong ridge (lambda = 1): soft structures, the shape of the paper's Figure 3
        est = FenchelYoungEstimator("ranking", projection=projection, lam=1.0).fit(Xtr, Ytr)
        mu = est.project(Xte[:4])
        for j in range(4):
            ax = axes[row, j]
            ax.imshow(mu[j], vmin=0, vmax=1, cmap="Blues")
            for a in range(mu.shape[1]):
                for b in range(mu.shape[2]):
                    ax.text(b, a, f"{mu[j, a, b]:.2f}", ha="center", va="center", fontsize=8,
                            color="white" if mu[j, a, b] > 0.5 else "black")
            ax.set_xticks(range(3))
            ax.set_yticks(range(3))
            ax.set_title(f"{projection}, x{j + 1}", fontsize=9)
            if j == 0:
                ax.set_ylabel("label")
            ax.set_xlabel("rank")
    fig.suptitle("Soft permutation matrices P(theta(x)) on the Birkhoff polytope (iris)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        print(f"figure: {path}")
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--paper", action="store_true",
                    help="the paper's protocol in full: 10 random splits per data set, the "
                         "10 lambdas, Euclidean and KL projections (default: 1 split, 5 "
                         "lambdas, Euclidean; about 40 s)")
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    ap.add_argument("--no-plot", action="store_true", help="skip the figure")
    ap.add_argument("--datasets", nargs="+", default=None,
                    choices=("iris", "wine", "glass", "diabetes", "synthetic"),
                    help="run only these data sets (default: all)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    datasets = [("iris", "ranking", ranking_data(load_iris)),
                ("wine", "ranking", ranking_data(load_wine)),
                ("glass", "ranking", ranking_data(load_glass)),
                ("diabetes", "ordinal", ordinal_data()),
                ("synthetic", "multilabel", multilabel_data())]
    if FAST:  # PSDSOS_EXAMPLE_FAST=1 (the test suite): iris and the multilabel data
        datasets = [datasets[0], datasets[4]]
    if args.datasets:
        datasets = [d for d in datasets if d[0] in args.datasets]
    with warnings.catch_warnings():
        # small lambdas on separable folds may stop at max_iter; counted in the losses
        warnings.simplefilter("ignore", ConvergenceWarning)
        if args.paper:
            rows = run(datasets, 10, ("euclidean", "kl"), LAMS)
        else:
            rows = run(datasets, 1, ("euclidean",), LAMS[::3] if FAST else LAMS[::2])
    # the paper's finding on label ranking (can fail): the Birkhoff polytope does at least
    # as well as the whole space
    for name, output, projection, loss in rows:
        if output == "ranking":
            assert loss["marginal"] <= loss["reals"], (name, projection, loss)
    if not args.no_plot:
        figure(args.out)
    print(f"total time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
