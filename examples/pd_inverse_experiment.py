"""Learning the inverse of a positive definite matrix (manifold paper, section 4.2, Table 2).

Data (the paper's protocol): inputs X_i = U S U^T with U Haar-distributed orthogonal and S
diagonal with entries uniform on [0, 10]; the output is X_i^{-1}; the kernel is Gaussian on
the entries of X (Frobenius distance).  n_train = 1000, 100 validation and 100 test points.

Compared: SP = SELF with the affine-invariant loss Delta_PD (eq. 16), decoded by Riemannian
gradient descent (``output="spd"``), and KRLS = entry-wise kernel ridge with eigenvalues
clipped at 1e-12 (Appendix G; ``KRLSEstimator``).  Reported per dimension m: the Delta_PD
loss and the squared loss "normalized with respect to the number of dimensions", which we
read as the relative squared error ||Y_hat - Y||_F^2 / ||Y||_F^2 (the paper does not give
the formula).  Mean +- std over independent trials.

Model selection on the validation set over sigma in [0.1, 1000] and lam in [1e-6, 1]
(log grids, as the paper): KRLS by its own squared loss, SP by Delta_PD.  To keep the
selection cheap, SP's validation Delta_PD is computed with the closed-form log-Euclidean
decoding of the same weights (``output="spd_logeuclidean"``); the test figures use the
affine-invariant RGD decoding.

Usage::

    python examples/pd_inverse_experiment.py            # the paper's sizes (several minutes)
    python examples/pd_inverse_experiment.py --small    # quick run (also PSDSOS_EXAMPLE_FAST=1)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from psdsos.structured import KRLSEstimator, SELFEstimator


def make_data(n, m, rng):
    """X = U diag(s) U^T, s ~ U[0, 10] (the paper's protocol), targets X^{-1}; inputs vec(X)."""
    G = rng.standard_normal((n, m, m))
    Q, R = np.linalg.qr(G)
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]  # Haar
    s = rng.uniform(0.0, 10.0, size=(n, m))
    s = np.maximum(s, 1e-6)  # U[0, 10] can return exactly 0 (probability ~ 0)
    X = (Q * s[:, None, :]) @ np.swapaxes(Q, 1, 2)
    Y = (Q * (1.0 / s)[:, None, :]) @ np.swapaxes(Q, 1, 2)
    Y = 0.5 * (Y + np.swapaxes(Y, 1, 2))
    return X.reshape(n, -1), Y


def rel_sq(Y, P):
    return np.sum((Y - P) ** 2, axis=(1, 2)) / np.sum(Y**2, axis=(1, 2))


def select(cls, output, sigmas, lams, Xtr, Ytr, Xva, Yva, loss):
    best = None
    for s in sigmas:
        for lam in lams:
            est = cls(sigma=s, lam=lam, output=output).fit(Xtr, Ytr)
            err = float(np.mean(loss(Yva, est.predict(Xva), est)))
            if best is None or err < best[0]:
                best = (err, s, lam)
    return best[1], best[2]


def run(m, n_train, n_val, n_test, sigmas, lams, rng):
    Xtr, Ytr = make_data(n_train, m, rng)
    Xva, Yva = make_data(n_val, m, rng)
    Xte, Yte = make_data(n_test, m, rng)
    s_k, l_k = select(KRLSEstimator, "spd", sigmas, lams, Xtr, Ytr, Xva, Yva,
                      lambda Y, P, est: rel_sq(Y, P))
    s_p, l_p = select(SELFEstimator, "spd_logeuclidean", sigmas, lams, Xtr, Ytr, Xva, Yva,
                      lambda Y, P, est: est.output_space_.loss(Y, P))
    krls = KRLSEstimator(sigma=s_k, lam=l_k, output="spd").fit(Xtr, Ytr)
    sp = SELFEstimator(sigma=s_p, lam=l_p, output="spd", tol=1e-6, max_iter=200).fit(Xtr, Ytr)
    Pk, Ps = krls.predict(Xte), sp.predict(Xte)
    space = sp.output_space_
    return {
        "krls_sq": rel_sq(Yte, Pk).mean(), "sp_sq": rel_sq(Yte, Ps).mean(),
        "krls_pd": space.loss(Yte, Pk).mean(), "sp_pd": space.loss(Yte, Ps).mean(),
        "params": (s_k, l_k, s_p, l_p),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="quick run")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    small = args.small or os.environ.get("PSDSOS_EXAMPLE_FAST") == "1"
    rng = np.random.default_rng(args.seed)
    if small:
        dims, n_train, n_val, n_test, trials = [5, 10], 120, 30, 30, 2
        sigmas, lams = np.logspace(-1, 3, 5), [1e-6, 1e-3, 1.0]
    else:
        dims, n_train, n_val, n_test, trials = [5, 10, 15, 20, 25, 30], 1000, 100, 100, 3
        sigmas, lams = np.logspace(-1, 3, 9), np.logspace(-6, 0, 4)
    print(f"learning X -> X^-1 (manifold paper, Table 2): n_train={n_train}, n_test={n_test}, "
          f"{trials} trials, mean +- std")
    print()
    print("| dim | squared: KRLS | squared: SP | Delta_PD: KRLS | Delta_PD: SP | time (s) |")
    print("|---|---|---|---|---|---|")
    rows = []
    for m in dims:
        t0 = time.perf_counter()
        res = [run(m, n_train, n_val, n_test, sigmas, lams, rng) for _ in range(trials)]
        agg = {k: (np.mean([r[k] for r in res]), np.std([r[k] for r in res]))
               for k in ("krls_sq", "sp_sq", "krls_pd", "sp_pd")}
        rows.append((m, agg))
        cells = [f"{agg[k][0]:.3g} +- {agg[k][1]:.2g}"
                 for k in ("krls_sq", "sp_sq", "krls_pd", "sp_pd")]
        print(f"| {m} | {' | '.join(cells)} | {time.perf_counter() - t0:.1f} |", flush=True)
    # the paper's finding: SP is far better in Delta_PD, comparable in the squared loss
    for m, agg in rows:
        assert agg["sp_pd"][0] < agg["krls_pd"][0], f"dim {m}: SP not better in Delta_PD"
        assert agg["sp_sq"][0] < 2.0 * agg["krls_sq"][0] + 0.5, f"dim {m}: squared loss"
    print("\nchecks passed: SP beats KRLS in Delta_PD at every dimension")


if __name__ == "__main__":
    main()
