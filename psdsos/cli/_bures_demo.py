"""``psdsos bures-demo``: interpolation of a Bures-Wasserstein geodesic (PSD paper, section 3.3)."""

from __future__ import annotations

import math
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning

from psdsos.cli._common import _check_output_path, _fmt, _report_cv_and_refit, _save_figure
from psdsos.cli._kernels import DEMO_KERNELS, PAPER_KERNEL, listed
from psdsos.estimators import NonConvexFitWarning

#: Candidates with lam1 > 0 and lam2 at or below this are solved in the primal (Clarabel):
#: there the dual's accelerated gradient needs thousands of iterations (see
#: psdsos.model_selection.paper_grid_psd).  ``--paper`` only.
PRIMAL_BELOW = 1e-5
#: Iteration cap of the dual solver for the cross-validation fits (not the refit).
CV_MAX_ITER = 2000
#: Held-out times for the error against the true geodesic.
N_TEST = 200
#: Bandwidths of bures-demo's default grid, in the units of t (training times in [0, 1]).
DEMO_SIGMAS = (1.0, 0.3, 0.1)
#: lam2 of bures-demo's default grid (lam1 = 0): the smooth kernels are best at tiny lam2.
DEMO_LAM2 = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12)
#: Smallest lam2 of the default grid with --rank-one: rank-one targets lie on the boundary
#: of the PSD cone, where the dual needs about 1 / sqrt(lam2) iterations.
RANK_ONE_MIN_LAM2 = 1e-6
#: Iteration cap of the CV fits of --rank-one without --paper (enough at RANK_ONE_MIN_LAM2).
RANK_ONE_CV_MAX_ITER = 5000


def _small_grid():
    """The small grid of ``--paper --grid small`` (with PAPER_KERNEL)."""
    return {"lam1": [1e-3, 0.0], "lam2": [1e-2, 1e-4], "sigma": [1.0, 0.1]}


def _demo_grid(name, rank_one):
    """(param_grid, description, number of candidates) of bures-demo."""
    if name == "paper":
        from psdsos.model_selection import paper_grid_psd

        grid = paper_grid_psd(primal_below=PRIMAL_BELOW)
        text = (f"paper (Appendix D.1): {PAPER_KERNEL} kernel; lam1 in {{0, 1e-8, ..., 1}}, "
                "lam2 in {1e-8, ..., 1}, sigma in {1, 0.1, 0.01}; lam1 > 0 with lam2 <= "
                f"{PRIMAL_BELOW:g} solved in the primal (Clarabel)")
        for part in grid:
            part["kernel"] = [PAPER_KERNEL]
    elif name == "paper-small":
        grid = {"kernel": [PAPER_KERNEL], **_small_grid()}
        text = (f"small: {PAPER_KERNEL} kernel; lam1 in {{0, 1e-3}}, lam2 in {{1e-4, 1e-2}}, "
                "sigma in {1, 0.1}")
    elif name == "small":
        lam2 = [1e-4, RANK_ONE_MIN_LAM2 if rank_one else 1e-10]
        grid = {"kernel": list(DEMO_KERNELS), "sigma": [1.0], "lam1": [0.0], "lam2": lam2}
        text = (f"small: kernel in {{{listed(DEMO_KERNELS)}}}, sigma = 1, lam1 = 0, "
                f"lam2 in {{{_fmt(lam2[1])}, {_fmt(lam2[0])}}}; dual solver, cold starts")
    else:
        lam2 = [v for v in DEMO_LAM2 if not rank_one or v >= RANK_ONE_MIN_LAM2]
        grid = {"kernel": list(DEMO_KERNELS), "sigma": list(DEMO_SIGMAS), "lam1": [0.0],
                "lam2": lam2}
        text = (f"kernel in {{{listed(DEMO_KERNELS)}}}, sigma in "
                f"{{{', '.join(_fmt(v) for v in DEMO_SIGMAS)}}}, lam1 = 0, lam2 in "
                f"{{{_fmt(lam2[-1])}, ..., {_fmt(lam2[0])}}} ({len(lam2)} values); dual "
                "solver, cold starts")
    parts = grid if isinstance(grid, list) else [grid]
    n_cand = sum(math.prod(len(v) for v in part.values()) for part in parts)
    return grid, text, n_cand


def _check_figure_path(path):
    """Fail before any work if the figure cannot be written: a missing folder, a directory,
    an unwritable folder, a format matplotlib does not know, or no matplotlib."""
    _check_output_path(path, "--out")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--out {path}: the directory {folder} is not writable")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("--out needs matplotlib: pip install psdsos[plot]") from None
    formats = Figure().canvas.get_supported_filetypes()
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in formats:
        raise ValueError(f"--out {path}: unknown figure format {ext!r} (expected a file name "
                         f"ending in one of: {', '.join('.' + f for f in sorted(formats))})")


def _bures_demo(args, out):
    from threadpoolctl import threadpool_limits

    from psdsos import PSDRegressor
    from psdsos.datasets import bures_geodesic_endpoints, make_bures_geodesic
    from psdsos.geometry import bures_wasserstein_distance_squared
    from psdsos.model_selection import grid_search_cv

    if args.out is not None:
        _check_figure_path(args.out)
    A, B = bures_geodesic_endpoints(2, rank_one=args.rank_one, random_state=args.seed)
    t, M = make_bures_geodesic(args.n_train, endpoints=(A, B))
    t_test, M_test = make_bures_geodesic(t=np.linspace(0.0, 1.0, N_TEST), endpoints=(A, B))

    paper = args.paper or args.grid == "paper"
    name = ("paper-small" if args.grid == "small" else "paper") if paper else args.grid
    grid, grid_text, n_cand = _demo_grid(name, args.rank_one)
    kind = "rank-one" if args.rank_one else "full-rank"
    print(f"psdsos bures-demo: {kind} endpoints, d = 2, n_train = {len(t)}, "
          f"seed = {args.seed}", file=out)
    print(f"grid: {grid_text}", file=out)

    # sigma, lam1 and kernel are given by every grid: nothing depends on the defaults
    est = PSDRegressor(PAPER_KERNEL, sigma=1.0, lam1=0.0, primal_solver="CLARABEL")
    n_kernels = 1 if paper else len(DEMO_KERNELS)
    cv_max_iter = RANK_ONE_CV_MAX_ITER if args.rank_one and not paper else CV_MAX_ITER
    if not args.quiet:
        end = "\n" if args.verbose else ""
        sys.stderr.write(f"psdsos bures-demo: cross-validating {n_kernels} kernel"
                         f"{'s' if n_kernels > 1 else ''} x {n_cand // n_kernels} candidates "
                         f"x {len(t)} folds ...{end}")
        sys.stderr.flush()
    t0 = time.perf_counter()
    try:
        # the matrices are tiny (n d x n d = 24 x 24): threaded BLAS only adds overhead
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
            # counted in the search result and printed below
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", FitFailedWarning)
            # cold starts: at these tiny lam2 the optimal dual variable (the residuals / n)
            # is near 0, and a warm start from a larger lam2 is farther from it than 0
            res = grid_search_cv(est, t, M, grid, cv="loo", scoring="neg_mse",
                                 n_jobs=args.n_jobs, verbose=args.verbose, warm_start=paper,
                                 cv_params={"max_iter": cv_max_iter}, refit=False)
    finally:  # end the progress line, also before an error message
        if not args.quiet and not args.verbose:
            sys.stderr.write(f" {time.perf_counter() - t0:.1f} s\n")
            sys.stderr.flush()
    with threadpool_limits(limits=1, user_api="blas"):
        best, model, caught = _report_cv_and_refit(res, est, t, M, "leave-one-out CV",
                                                   "LOO score", cv_max_iter, out)
    # reported below with the command's own advice
    caught = [w for w in caught if not issubclass(w.category, NonConvexFitWarning)]
    for w in caught:
        print(f"psdsos: warning (refit): {w.message}", file=sys.stderr)
    print(f"selected: kernel = {best['kernel']}, lam1 = {_fmt(best['lam1'])}, "
          f"lam2 = {_fmt(best['lam2'])}, sigma = {_fmt(best['sigma'])} "
          f"(solver: {best.get('solver', 'dual')})", file=out)
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
        _save_figure(fig, args.out)
        print(f"figure: {args.out}", file=out)
    return 0


def _linear_interpolation(t, M, t_new):
    """Entrywise piecewise-linear interpolation of matrices (PSD: convex combinations)."""
    order = np.argsort(t)
    t, M = t[order], M[order]
    j = np.clip(np.searchsorted(t, t_new, side="right") - 1, 0, len(t) - 2)
    w = ((t_new - t[j]) / (t[j + 1] - t[j]))[:, None, None]
    return (1.0 - w) * M[j] + w * M[j + 1]
