"""``psdsos`` command line (thin: argument parsing and printing; the work is in the library).

Subcommands
-----------
bures-demo
    Interpolation of a Bures-Wasserstein geodesic (PSD paper, section 3.3, Figures 1 and 6):
    leave-one-out selection of (lam1, lam2, sigma) over the grid of Appendix D.1, refit,
    held-out mean squared Bures-Wasserstein error against the true geodesic and against
    piecewise-linear interpolation of the training matrices, optional figure.

Exit codes: 0 on success, 2 for bad arguments (argparse), 1 for errors raised by the library
(bad values, solver failures, unwritable output), reported on one line as
``psdsos: error: ...`` without a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning

__all__ = ["main"]

#: Candidates with lam1 > 0 and lam2 at or below this are solved in the primal (Clarabel):
#: there the dual's accelerated gradient needs thousands of iterations (see
#: psdsos.model_selection.paper_grid_psd).
PRIMAL_BELOW = 1e-5
#: Iteration cap of the dual solver for the cross-validation fits (not the refit).
CV_MAX_ITER = 2000
#: Held-out times for the error against the true geodesic.
N_TEST = 200


def _small_grid():
    return {"lam1": [1e-3, 0.0], "lam2": [1e-2, 1e-4], "sigma": [1.0, 0.1]}


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="psdsos",
        description="Kernel sums-of-squares models: demos of the psdsos library.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    demo = sub.add_parser(
        "bures-demo",
        help="interpolate a Bures-Wasserstein geodesic (PSD paper, Figures 1 and 6)",
        description=(
            "Sample n_train PSD 2x2 matrices on a Bures-Wasserstein geodesic, select "
            "(lam1, lam2, sigma) of a PSDRegressor with the exponential kernel by "
            "leave-one-out cross-validation, refit, and report the mean squared "
            "Bures-Wasserstein distance to the true geodesic at 200 held-out times."
        ),
    )
    demo.add_argument("--out", metavar="PATH", default=None,
                      help="write the data / model / truth figure there (png, pdf, svg...)")
    demo.add_argument("--rank-one", action="store_true",
                      help="rank-one endpoints (degenerate Gaussians, Figure 6)")
    demo.add_argument("--n-train", type=int, default=12, metavar="N",
                      help="number of training matrices (default: 12)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the endpoints (default: 0)")
    demo.add_argument("--grid", choices=("paper", "small"), default="paper",
                      help="paper: Appendix D.1, 270 candidates (default); small: 8 candidates")
    demo.add_argument("--n-jobs", type=int, default=None, metavar="N",
                      help="parallel jobs for the search (joblib; -1: all cores)")
    demo.add_argument("--verbose", action="store_true", help="progress bar on stderr")
    demo.set_defaults(func=_bures_demo)
    return parser


def _fmt(v):
    return f"{v:g}"


def _bures_demo(args, out):
    from psdsos import PSDRegressor
    from psdsos.datasets import bures_geodesic_endpoints, make_bures_geodesic
    from psdsos.geometry import bures_wasserstein_distance_squared
    from psdsos.model_selection import grid_search_cv, paper_grid_psd

    A, B = bures_geodesic_endpoints(2, rank_one=args.rank_one, random_state=args.seed)
    t, M = make_bures_geodesic(args.n_train, endpoints=(A, B))
    t_test, M_test = make_bures_geodesic(t=np.linspace(0.0, 1.0, N_TEST), endpoints=(A, B))

    if args.grid == "paper":
        grid = paper_grid_psd(primal_below=PRIMAL_BELOW)
        grid_text = ("paper (Appendix D.1): lam1 in {0, 1e-8, ..., 1}, lam2 in {1e-8, ..., 1}, "
                     f"sigma in {{1, 0.1, 0.01}}; lam1 > 0 with lam2 <= {PRIMAL_BELOW:g} solved "
                     "in the primal (Clarabel)")
    else:
        grid = _small_grid()
        grid_text = "small: lam1 in {0, 1e-3}, lam2 in {1e-4, 1e-2}, sigma in {1, 0.1}"
    kind = "rank-one" if args.rank_one else "full-rank"
    print(f"psdsos bures-demo: {kind} endpoints, d = 2, n_train = {len(t)}, "
          f"seed = {args.seed}", file=out)
    print(f"grid: {grid_text}; exponential kernel", file=out)

    est = PSDRegressor("exponential", primal_solver="CLARABEL")
    with warnings.catch_warnings():
        # counted in the search result and printed below
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FitFailedWarning)
        res = grid_search_cv(est, t, M, grid, cv="loo", scoring="neg_mse", n_jobs=args.n_jobs,
                             verbose=args.verbose, cv_params={"max_iter": CV_MAX_ITER},
                             refit=False)
    n_cand = len(res.cv_results_["params"])
    note = ""
    if res.n_not_converged:
        note += (f"; {res.n_not_converged} fits stopped at max_iter = {CV_MAX_ITER} "
                 "(warnings silenced)")
    if res.n_failed:
        note += f"; {res.n_failed} fits failed (scored NaN)"
    print(f"leave-one-out CV: {n_cand} candidates x {res.n_splits_} folds = {res.n_fits} fits "
          f"in {res.wall_time:.1f} s{note}", file=out)

    best = res.best_params_
    best_nc = int(res.cv_results_["n_not_converged"][res.best_index_])
    if best_nc:
        print(f"psdsos: warning: {best_nc} of the selected candidate's {res.n_splits_} CV fits "
              "stopped at max_iter; its LOO score may be an artifact of early stopping",
              file=sys.stderr)
    with warnings.catch_warnings(record=True) as caught:  # the refit on all the matrices
        warnings.simplefilter("always")
        model = clone(est).set_params(**best).fit(t, M)
    for w in caught:
        print(f"psdsos: warning (refit): {w.message}", file=sys.stderr)
    print(f"selected: lam1 = {_fmt(best['lam1'])}, lam2 = {_fmt(best['lam2'])}, "
          f"sigma = {_fmt(best['sigma'])} (solver: {best.get('solver', 'dual')})", file=out)
    print(f"LOO score (negated mean squared Frobenius error): {res.best_score_:.6g}", file=out)

    P = model.predict(t_test)
    err_model = float(np.mean(bures_wasserstein_distance_squared(P, M_test)))
    L = _linear_interpolation(t[:, 0], M, t_test[:, 0])
    err_lin = float(np.mean(bures_wasserstein_distance_squared(L, M_test)))
    nearest = np.argmin(np.abs(t_test - t[:, 0][None, :]), axis=1)
    err_nn = float(np.mean(bures_wasserstein_distance_squared(M[nearest], M_test)))
    scale = float(np.mean(np.trace(M_test, axis1=1, axis2=2)))
    print(f"held-out mean squared Bures-Wasserstein distance to the true geodesic "
          f"({N_TEST} evenly spaced times in [0, 1]):", file=out)
    print(f"  PSD model:                          {err_model:.4g}", file=out)
    print(f"  baseline, nearest training matrix:  {err_nn:.4g}", file=out)
    print(f"  baseline, piecewise-linear interp.: {err_lin:.4g}", file=out)
    print(f"  (mean trace of the true matrices: {scale:.4g})", file=out)

    if args.out is not None:
        from psdsos.plotting import plot_bures_comparison

        idx = np.linspace(0, N_TEST - 1, 2 * len(t) - 1).round().astype(int)
        fig = plot_bures_comparison(t, M, t_test[idx], P[idx], t_test[idx], M_test[idx])
        fig.savefig(args.out, dpi=120)
        print(f"figure: {args.out}", file=out)
    return 0


def _linear_interpolation(t, M, t_new):
    """Entrywise piecewise-linear interpolation of matrices (PSD: convex combinations)."""
    order = np.argsort(t)
    t, M = t[order], M[order]
    j = np.clip(np.searchsorted(t, t_new, side="right") - 1, 0, len(t) - 2)
    w = ((t_new - t[j]) / (t[j + 1] - t[j]))[:, None, None]
    return (1.0 - w) * M[j] + w * M[j + 1]


def main(argv=None):
    """Run the ``psdsos`` command line; return the exit code.

    Parameters
    ----------
    argv : list of str or None
        Arguments without the program name (None: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for bad arguments, 1 for an error raised by the library.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
        return int(exc.code) if isinstance(exc.code, int) else 2
    start = time.perf_counter()
    try:
        code = args.func(args, sys.stdout)
    except (ValueError, RuntimeError, ArithmeticError, ImportError, OSError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        print(f"psdsos: error: {msg}", file=sys.stderr)
        return 1
    if args.verbose:
        print(f"total time: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
