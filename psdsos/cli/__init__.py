"""``psdsos`` command line (thin: argument parsing and printing; the work is in the library).

Subcommands
-----------
bures-demo
    Interpolation of a Bures-Wasserstein geodesic (PSD paper, section 3.3, Figures 1 and 6):
    leave-one-out selection of the kernel (Gaussian, Matern 5/2, exponential), its bandwidth
    sigma and lam2 (dual solver, warm-started path), refit, held-out mean squared
    Bures-Wasserstein error against the true geodesic and against piecewise-linear
    interpolation of the training matrices, optional figure.  ``--paper``: the paper's
    setting (exponential kernel, (lam1, lam2, sigma) over the grid of Appendix D.1).
convex-fit
    Convex (or concave) regression of one CSV column on the others with a
    :class:`~psdsos.estimators.ConvexRegressor` (PSD paper, section 6): k-fold selection of
    (rho, lam2, sigma) over the grid of Appendix D.2 or a smaller one, refit, convexity deficit,
    optional model file (.npz + JSON, with the column names) and figure. ``--demo`` runs on
    samples of eq. (30) instead of a CSV file.
convex-predict
    Predictions of a model saved by ``convex-fit --model`` on the rows of a CSV file.

CSV input: a header row, one row per sample, ``,`` between cells (``--delimiter``). Missing,
non-numeric or non-finite values in the columns used are errors (never silently dropped).

Exit codes: 0 on success, 2 for bad arguments (argparse), 1 for errors raised by the library
(bad values, solver failures, unwritable output), reported on one line as
``psdsos: error: ...`` without a traceback.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning

from psdsos.estimators import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.estimators._convex import AUTO_TRAIN_CENTERS

__all__ = ["main"]

#: Candidates with lam1 > 0 and lam2 at or below this are solved in the primal (Clarabel):
#: there the dual's accelerated gradient needs thousands of iterations (see
#: psdsos.model_selection.paper_grid_psd).  ``--paper`` only.
PRIMAL_BELOW = 1e-5
#: Iteration cap of the dual solver for the cross-validation fits (not the refit).
CV_MAX_ITER = 2000
#: Held-out times for the error against the true geodesic.
N_TEST = 200
#: Kernels cross-validated by bures-demo (without --paper).
DEMO_KERNELS = ("gaussian", "matern52", "exponential")
#: Bandwidths of bures-demo's default grid, in the units of t (training times in [0, 1]).
DEMO_SIGMAS = (1.0, 0.3, 0.1)
#: lam2 of bures-demo's default grid (lam1 = 0): the smooth kernels are best at tiny lam2.
DEMO_LAM2 = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12)
#: Smallest lam2 of the default grid with --rank-one: rank-one targets lie on the boundary
#: of the PSD cone, where the dual needs about 1 / sqrt(lam2) iterations (2,900 at 1e-6,
#: 37,000 at 1e-8 for n = 12).
RANK_ONE_MIN_LAM2 = 1e-6
#: Iteration cap of the CV fits of --rank-one without --paper (lam2 = 1e-6 needs ~3,000).
RANK_ONE_CV_MAX_ITER = 5000


def _small_grid():
    """The small grid of ``--paper --grid small`` (exponential kernel)."""
    return {"lam1": [1e-3, 0.0], "lam2": [1e-2, 1e-4], "sigma": [1.0, 0.1]}


def _demo_grid(name, rank_one):
    """(param_grid, description, number of candidates) of bures-demo."""
    if name == "paper":
        from psdsos.model_selection import paper_grid_psd

        grid = paper_grid_psd(primal_below=PRIMAL_BELOW)
        text = ("paper (Appendix D.1): exponential kernel; lam1 in {0, 1e-8, ..., 1}, "
                "lam2 in {1e-8, ..., 1}, sigma in {1, 0.1, 0.01}; lam1 > 0 with lam2 <= "
                f"{PRIMAL_BELOW:g} solved in the primal (Clarabel)")
        for part in grid:
            part["kernel"] = ["exponential"]
    elif name == "paper-small":
        grid = {"kernel": ["exponential"], **_small_grid()}
        text = ("small: exponential kernel; lam1 in {0, 1e-3}, lam2 in {1e-4, 1e-2}, "
                "sigma in {1, 0.1}")
    elif name == "small":
        lam2 = [1e-4, RANK_ONE_MIN_LAM2 if rank_one else 1e-10]
        grid = {"kernel": list(DEMO_KERNELS), "sigma": [1.0], "lam1": [0.0], "lam2": lam2}
        text = ("small: kernel in {gaussian, matern52, exponential}, sigma = 1, lam1 = 0, "
                f"lam2 in {{{_fmt(lam2[1])}, {_fmt(lam2[0])}}}; dual solver, cold starts")
    else:
        lam2 = [v for v in DEMO_LAM2 if not rank_one or v >= RANK_ONE_MIN_LAM2]
        grid = {"kernel": list(DEMO_KERNELS), "sigma": list(DEMO_SIGMAS), "lam1": [0.0],
                "lam2": lam2}
        text = ("kernel in {gaussian, matern52, exponential}, sigma in "
                f"{{{', '.join(_fmt(v) for v in DEMO_SIGMAS)}}}, lam1 = 0, lam2 in "
                f"{{{_fmt(lam2[-1])}, ..., {_fmt(lam2[0])}}} ({len(lam2)} values); dual "
                "solver, cold starts")
    parts = grid if isinstance(grid, list) else [grid]
    n_cand = sum(math.prod(len(v) for v in part.values()) for part in parts)
    return grid, text, n_cand


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="psdsos",
        description="Kernel sums-of-squares models: demos of the psdsos library.",
    )
    from psdsos import __version__

    parser.add_argument("--version", action="version", version=f"psdsos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    demo = sub.add_parser(
        "bures-demo",
        help="interpolate a Bures-Wasserstein geodesic (PSD paper, Figures 1 and 6)",
        description=(
            "Sample n_train PSD 2x2 matrices on a Bures-Wasserstein geodesic, select the "
            "kernel (gaussian, matern52, exponential), its bandwidth sigma and lam2 of a "
            "PSDRegressor by leave-one-out cross-validation (dual solver), "
            "refit, and report the mean squared Bures-Wasserstein distance to the true "
            "geodesic at 200 held-out times next to piecewise-linear interpolation. "
            "--paper: the paper's Figure 1 setting instead (exponential kernel, "
            "(lam1, lam2, sigma) over the grid of Appendix D.1)."
        ),
    )
    demo.add_argument("--out", metavar="PATH", default=None,
                      help="write the data / model / truth figure there (png, pdf, svg...)")
    demo.add_argument("--rank-one", action="store_true",
                      help="rank-one endpoints (degenerate Gaussians, Figure 6)")
    demo.add_argument("--n-train", type=int, default=12, metavar="N",
                      help="number of training matrices (default: 12)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the endpoints (default: 0)")
    demo.add_argument("--paper", action="store_true",
                      help="the paper's setting: exponential kernel, grid of Appendix D.1 "
                           "(270 candidates; one to a few minutes)")
    demo.add_argument("--grid", choices=("default", "small", "paper"), default="default",
                      help="default: 3 kernels x 3 bandwidths x 6 lam2 down to 1e-12 (54 "
                           "candidates; with --rank-one 3 lam2 down to 1e-6); small: 6 "
                           "candidates (8 with --paper), for quick looks; paper: the same "
                           "as --paper")
    demo.add_argument("--n-jobs", type=int, default=None, metavar="N",
                      help="parallel jobs for the search (joblib; -1: all cores)")
    talk = demo.add_mutually_exclusive_group()
    talk.add_argument("--verbose", action="store_true", help="progress bar on stderr")
    talk.add_argument("--quiet", action="store_true",
                      help="no progress line on stderr (results only)")
    demo.set_defaults(func=_bures_demo)
    _add_convex_parsers(sub)
    return parser


def _fmt(v):
    return f"{v:g}"


def _report_cv_and_refit(res, est, X, Y, cv_name, score_name, max_iter, out):
    """Print the CV summary (and a warning if the chosen candidate's CV fits stopped at
    max_iter), refit on all the data; return (best params, model, refit warnings)."""
    n_cand = len(res.cv_results_["params"])
    note = ""
    if res.n_not_converged:
        note += (f"; {res.n_not_converged} fits stopped at max_iter = {max_iter} "
                 "(warnings silenced)")
    if res.n_failed:
        note += f"; {res.n_failed} fits failed (scored NaN)"
    print(f"{cv_name}: {n_cand} candidates x {res.n_splits_} folds = {res.n_fits} fits "
          f"in {res.wall_time:.1f} s{note}", file=out)
    best = res.best_params_
    best_nc = int(res.cv_results_["n_not_converged"][res.best_index_])
    if best_nc:
        print(f"psdsos: warning: {best_nc} of the selected candidate's {res.n_splits_} CV fits "
              f"stopped at max_iter; its {score_name} may be an artifact of early stopping",
              file=sys.stderr)
    with warnings.catch_warnings(record=True) as caught:  # the refit on all the data
        warnings.simplefilter("always")
        model = clone(est).set_params(**best).fit(X, Y)
    return best, model, caught


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
    est = PSDRegressor("exponential", sigma=1.0, lam1=0.0, primal_solver="CLARABEL")
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


# ------------------------------------------------------------------------------------------
# convex-fit / convex-predict: convex regression of a CSV column on the others
# ------------------------------------------------------------------------------------------

#: Nystrom rank of the paper (Appendix D.2: rank 25 when n > 25).
PAPER_N_LANDMARKS = 25
#: Iteration cap of the dual solver for the cross-validation fits of convex-fit (not the refit).
CONVEX_CV_MAX_ITER = 2000
#: Held-out points of ``convex-fit --demo`` (error against the noiseless eq. 30).
N_DEMO_TEST = 1000
#: Key of the model file's JSON metadata under which convex-fit stores the column names.
COLUMNS_KEY = "cli_columns"
#: Key of the model file's JSON metadata under which convex-fit stores its standardization.
SCALING_KEY = "cli_scaling"


def _convex_grid(name):
    """(param_grid, description) of convex-fit; lam1 stays 0 as in the paper.

    The "sigma" entries are factors c: the bandwidths are c * scale_bandwidth of the
    standardized features (sqrt(n_features / 2)).  The paper's sigma^2 in {1, 5, 10} on
    inputs uniform in [-2 pi, 2 pi]^2 become the factors sigma / scale of those inputs.
    """
    from psdsos.model_selection import paper_grid_convex
    from psdsos.model_selection._search import PAPER_CONVEX_INPUT_SCALE

    if name == "paper":
        grid = paper_grid_convex()
        grid["sigma"] = [s / PAPER_CONVEX_INPUT_SCALE for s in grid["sigma"]]
        text = ("paper (Appendix D.2): lam2 in {1e-3, ..., 1e-7}, sigma in {0.276, 0.616, "
                "0.872} x scale (the paper's sigma^2 in {1, 5, 10} relative to the spread of "
                "its inputs), rho in {1e-3, ..., 1e-6} (the paper selects rho = 1e-5 but does "
                "not list its rho grid)")
    else:
        # sigma = 2 x scale: a smoother fit, easier to keep convex between the constraint
        # points (a 20,000-row income / household-size / spending table: CV error 402 and
        # deficit 0 at 2 x scale against 406 and 0.087 at 1 x scale)
        grid = {"rho": [1e-3, 1e-5], "lam2": [1e-3, 1e-5], "sigma": [0.5, 1.0, 2.0]}
        text = "small: rho in {1e-3, 1e-5}, lam2 in {1e-3, 1e-5}, sigma in {0.5, 1, 2} x scale"
    return grid, text


class _Scaling:
    """The standardization of convex-fit: u_j = (x_j - x_mean_j) / x_scale_j per feature,
    t = (y - y_mean) / y_scale (means and standard deviations of the training data; a
    constant target keeps y_scale = 1).  Convexity (concavity) is preserved by these maps,
    so a convex fit in (u, t) is a convex function of x in the user's units."""

    def __init__(self, x_mean, x_scale, y_mean, y_scale):
        self.x_mean = np.asarray(x_mean, dtype=np.float64)
        self.x_scale = np.asarray(x_scale, dtype=np.float64)
        self.y_mean, self.y_scale = float(y_mean), float(y_scale)

    @classmethod
    def from_data(cls, X, y, names):
        from psdsos._validation import scaled_mean_std

        stats = [scaled_mean_std(X[:, j]) for j in range(X.shape[1])]
        for (_, sd), name in zip(stats, names, strict=True):
            if not (math.isfinite(sd) and sd > 0):
                raise ValueError(f"feature column {name!r} is constant: it cannot explain the "
                                 "target; leave it out with --features")
        ym, ysd = scaled_mean_std(y)
        return cls([m for m, _ in stats], [sd for _, sd in stats], ym,
                   ysd if math.isfinite(ysd) and ysd > 0 else 1.0)

    @classmethod
    def from_meta(cls, meta, n_features, path):
        try:
            out = cls(meta["x_mean"], meta["x_scale"], meta["y_mean"], meta["y_scale"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: invalid {SCALING_KEY!r} metadata (expected x_mean, "
                             "x_scale, y_mean, y_scale)") from None
        ok = (out.x_mean.shape == out.x_scale.shape == (n_features,)
              and np.all(np.isfinite(out.x_mean)) and np.all(out.x_scale > 0)
              and np.all(np.isfinite(out.x_scale)) and math.isfinite(out.y_mean)
              and math.isfinite(out.y_scale) and out.y_scale > 0)
        if not ok:
            raise ValueError(f"{path}: invalid {SCALING_KEY!r} metadata: {n_features} finite "
                             "means and scales > 0 expected")
        return out

    def to_meta(self):
        return {"x_mean": self.x_mean.tolist(), "x_scale": self.x_scale.tolist(),
                "y_mean": self.y_mean, "y_scale": self.y_scale}

    def X(self, X):
        return (X - self.x_mean) / self.x_scale

    def y(self, y):
        return (y - self.y_mean) / self.y_scale

    def y_back(self, t):
        return self.y_mean + self.y_scale * np.asarray(t)


class _InUserUnits:
    """A model fitted in standardized units, predicting in the user's (for the figure)."""

    def __init__(self, model, scaling):
        self.model, self.scaling = model, scaling

    def predict(self, X):
        return self.scaling.y_back(self.model.predict(self.scaling.X(np.asarray(X))))


# ---- argument types (argparse turns ArgumentTypeError into a usage error, exit 2) ----------


def _int_at_least(lower):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lower:
            raise argparse.ArgumentTypeError(f"expected an integer >= {lower}, got {value}")
        return value

    parse.__name__ = f"integer >= {lower}"
    return parse


def _float_value(text, *, positive):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "> 0" if positive else ">= 0"
        raise argparse.ArgumentTypeError(f"expected a finite number {kind}, got {text!r}")
    return value


def _nonnegative_float(text):
    return _float_value(text, positive=False)


def _positive_float(text):
    return _float_value(text, positive=True)


def _float_list(text):
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return [_float_value(p, positive=False) for p in parts]


def _name_list(text):
    names = [p.strip() for p in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated column names without empty entries, got {text!r}")
    return names


def _landmarks(text):
    if text.strip().lower() in ("none", "exact"):
        return "exact"
    return _int_at_least(1)(text)


def _delimiter(text):
    text = {"tab": "\t", "\\t": "\t"}.get(text, text)
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"expected one character (or 'tab'), got {text!r}")
    return text


def _add_convex_parsers(sub):
    fit = sub.add_parser(
        "convex-fit",
        help="convex regression of a CSV column on the others (PSD paper, section 6)",
        description=(
            "Fit a smooth convex (or concave) function of the feature columns of DATA.csv "
            "to its --target column: a ConvexRegressor (Gaussian kernel by default, SoS "
            "Hessian constraint, eq. 28 of the PSD paper, at data points chosen by pivoted "
            "Cholesky: at most 2 R with Nystrom rank R, 100 with exact features) whose (rho, "
            "lam2, sigma) are chosen by k-fold cross-validation (mean squared error). The "
            "features and the target are standardized first (mean 0, standard deviation 1 "
            "per column; stored in the model file), so any units work; sigma is given as a "
            "multiple of the standardized features' scale sqrt(n_features / 2). Prints the "
            "chosen values, the CV error in the target's units and the convexity deficit "
            "relative to the fit's curvature scale (a warning above "
            f"{RELATIVE_DEFICIT_TOL:g}, an error with --strict); saves the model and a "
            "figure on request."
        ),
    )
    fit.add_argument("data", nargs="?", metavar="DATA.csv",
                     help="CSV file with a header row (not with --demo)")
    fit.add_argument("--target", metavar="COLUMN", help="the column to predict")
    fit.add_argument("--features", type=_name_list, metavar="A,B,...",
                     help="feature columns (default: every other numeric column)")
    fit.add_argument("--demo", action="store_true",
                     help="built-in data: noisy samples of eq. (30) of the PSD paper "
                          "(negated with --concave)")
    fit.add_argument("--n-samples", type=_int_at_least(2), default=None, metavar="N",
                     help="--demo: number of samples (default: 50)")
    fit.add_argument("--dim", type=_int_at_least(1), default=None, metavar="D",
                     help="--demo: input dimension (default: 2)")
    fit.add_argument("--noise", type=_nonnegative_float, default=None, metavar="ETA",
                     help="--demo: noise level eta (default: 0.1)")
    fit.add_argument("--cv", type=_int_at_least(2), default=5, metavar="K",
                     help="number of cross-validation folds, shuffled (default: 5)")
    fit.add_argument("--grid", choices=("paper", "small"), default="small",
                     help="small: 12 candidates (default); paper: Appendix D.2, 60 candidates")
    fit.add_argument("--rho", type=_float_list, metavar="V,...",
                     help="replace the grid's rho values (ridge weight on f)")
    fit.add_argument("--lam2", type=_float_list, metavar="V,...",
                     help="replace the grid's lam2 values (Frobenius weight on B)")
    fit.add_argument("--sigma", type=_float_list, metavar="V,...",
                     help="replace the grid's kernel bandwidths, as multiples of the "
                          "standardized features' scale sqrt(n_features / 2)")
    fit.add_argument("--kernel", choices=("gaussian", "matern32", "matern52"),
                     default="gaussian", help="kernel (default: gaussian, as the paper)")
    fit.add_argument("--concave", action="store_true", help="fit a concave function")
    fit.add_argument("--solver", choices=("dual", "primal"), default="dual",
                     help="dual: accelerated gradient (default); primal: an SDP through CVXPY")
    fit.add_argument("--primal-solver", choices=("CLARABEL", "SCS"), default="CLARABEL",
                     help="SDP solver of --solver primal (default: CLARABEL)")
    fit.add_argument("--n-landmarks", type=_landmarks, default=None, metavar="R",
                     help=f"Nystrom rank, or 'exact' (default: {PAPER_N_LANDMARKS} when every "
                          f"CV training fold has more than {PAPER_N_LANDMARKS} rows, as the "
                          "paper; otherwise exact features)")
    fit.add_argument("--tol", type=_positive_float, default=None,
                     help="solver tolerance (default: the estimator's, 1e-6)")
    fit.add_argument("--max-iter", type=_int_at_least(1), default=None, metavar="N",
                     help="dual iterations of the final fit (default: the estimator's); the "
                          f"CV fits stop at min(N, {CONVEX_CV_MAX_ITER})")
    fit.add_argument("--random-state", type=_int_at_least(0), default=0, metavar="SEED",
                     help="seed of the folds, the Nystrom landmarks, the deficit estimate "
                          "and the demo data (default: 0)")
    fit.add_argument("--n-jobs", type=int, default=None, metavar="N",
                     help="parallel jobs for the search (joblib; -1: all cores)")
    fit.add_argument("--model", metavar="OUT.npz",
                     help="save the fitted model there (.npz + JSON, with the column names)")
    fit.add_argument("--plot", metavar="OUT.png",
                     help="draw the data and the fit (1 or 2 features; skipped otherwise)")
    fit.add_argument("--delimiter", type=_delimiter, default=",", metavar="C",
                     help="CSV cell separator (default: ','; 'tab' for tabs)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    fit.add_argument("--strict", action="store_true",
                     help="exit 1 (error) instead of warning when the relative convexity "
                          f"deficit exceeds {RELATIVE_DEFICIT_TOL:g}")
    fit.set_defaults(func=_convex_fit)

    pred = sub.add_parser(
        "convex-predict",
        help="predict with a model saved by convex-fit --model",
        description=(
            "Evaluate a model saved by `psdsos convex-fit --model` on the rows of DATA.csv "
            "(the feature columns saved with the model must be present; other columns are "
            "copied). Writes DATA.csv with a prediction column appended, to --out or stdout."
        ),
    )
    pred.add_argument("model", metavar="MODEL.npz", help="file written by convex-fit --model")
    pred.add_argument("data", metavar="DATA.csv", help="CSV file with a header row")
    pred.add_argument("--out", metavar="PRED.csv", help="output file (default: stdout)")
    pred.add_argument("--features", type=_name_list, metavar="A,B,...",
                      help="feature columns, for a model saved from Python (default: the "
                           "names saved by convex-fit)")
    pred.add_argument("--column", metavar="NAME", default=None,
                      help="name of the prediction column (default: <target>_predicted)")
    pred.add_argument("--delimiter", type=_delimiter, default=",", metavar="C",
                      help="CSV cell separator (default: ','; 'tab' for tabs)")
    pred.set_defaults(func=_convex_predict, verbose=False)


# ---- CSV input ----------------------------------------------------------------------------


def _parse_float(cell):
    try:
        return float(cell)
    except ValueError:
        return None


class _CSVTable:
    """The cells of a CSV file as stripped strings, with the file line of every row."""

    def __init__(self, path, header, rows, lines):
        self.path, self.header, self.rows, self.lines = path, header, rows, lines

    def index(self, name, role):
        hits = [j for j, h in enumerate(self.header) if h == name]
        if not hits:
            cols = ", ".join(repr(h) for h in self.header)
            raise ValueError(f"{self.path}: no {role} column {name!r} (columns: {cols})")
        if len(hits) > 1:
            raise ValueError(
                f"{self.path}: the {role} column {name!r} is named {len(hits)} times in the "
                f"header (columns {', '.join(str(j + 1) for j in hits)}); rename the others"
            )
        return hits[0]

    def kind(self, j):
        """'numeric', 'text' (no cell is a number), 'mixed' or 'empty'."""
        cells = [r[j] for r in self.rows if r[j]]
        if not cells:
            return "empty"
        parsed = [_parse_float(c) is not None for c in cells]
        if all(parsed):
            return "numeric"
        return "mixed" if any(parsed) else "text"

    def first_text(self, j):
        for r, line in zip(self.rows, self.lines, strict=True):
            if r[j] and _parse_float(r[j]) is None:
                return line, r[j]
        return None, None

    def column(self, j, role):
        """Column j as floats; any empty, non-numeric or non-finite cell is an error."""
        name = self.header[j]
        out = np.empty(len(self.rows))
        for i, (r, line) in enumerate(zip(self.rows, self.lines, strict=True)):
            cell = r[j]
            where = f"{self.path}, line {line}, {role} column {name!r}"
            if not cell:
                raise ValueError(f"{where}: empty cell (missing values are not supported)")
            value = _parse_float(cell)
            if value is None:
                raise ValueError(f"{where}: {cell!r} is not a number")
            if not math.isfinite(value):
                raise ValueError(f"{where}: {cell!r} is not finite (NaN and infinities are "
                                 "not supported)")
            out[i] = value
        return out


#: Delimiters recognised in a header read as one column: (character, how to pass it).
_OTHER_DELIMITERS = ((";", "';'"), ("\t", "tab"), ("|", "'|'"), (",", "','"))


def _check_delimiter(path, header, delimiter):
    """Refuse a one-column header that another common delimiter splits into columns."""
    if len(header) != 1:
        return
    for char, shown in _OTHER_DELIMITERS:
        if char != delimiter and len(header[0].split(char)) > 1:
            raise ValueError(
                f"{path}: the header {header[0]!r} is one column with the delimiter "
                f"{delimiter!r}, but {char!r} separates it into "
                f"{len(header[0].split(char))}: the file looks {shown}-separated; read it "
                f"with --delimiter {shown}"
            )


def _read_csv(path, delimiter):
    """Read a CSV file with a header row; rows whose cells are all blank are skipped."""
    header, rows, lines = None, [], []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            try:
                for row in reader:
                    cells = [c.strip() for c in row]
                    if not any(cells):
                        continue
                    if header is None:
                        header = cells
                        _check_delimiter(path, header, delimiter)
                        continue
                    if len(cells) != len(header):
                        raise ValueError(
                            f"{path}, line {reader.line_num}: {len(cells)} cells, but the "
                            f"header has {len(header)} columns"
                        )
                    rows.append(cells)
                    lines.append(reader.line_num)
            except csv.Error as exc:
                raise ValueError(f"{path}, line {reader.line_num}: not valid CSV: {exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if header is None:
        raise ValueError(f"{path} is empty: expected a header row and data rows")
    if not rows:
        raise ValueError(f"{path} has a header but no data rows")
    return _CSVTable(path, header, rows, lines)


def _fit_columns(table, target, features):
    """(X, y, feature names, ignored columns) of convex-fit, with one-line errors."""
    ti = table.index(target, "target")
    ignored = []
    if features is not None:
        for k, name in enumerate(features):
            if name in features[:k]:
                raise ValueError(f"--features names the column {name!r} twice")
        if target in features:
            raise ValueError(f"--features lists the target column {target!r}")
        fidx = [table.index(name, "feature") for name in features]
    else:
        fidx = []
        for j, name in enumerate(table.header):
            if j == ti:
                continue
            kind = table.kind(j)
            if kind in ("text", "empty"):
                ignored.append(name or f"column {j + 1}")
                continue
            label = repr(name) if name else f"{j + 1} (no name in the header)"
            if kind == "mixed":
                line, cell = table.first_text(j)
                raise ValueError(
                    f"{table.path}, line {line}, column {label}: {cell!r} is not a number "
                    "(a column of numbers with text in it; missing values are not "
                    "supported): fix the file or choose the columns with --features"
                )
            if not name:
                raise ValueError(f"{table.path}: column {label} holds numbers; name it "
                                 "or choose the columns with --features")
            fidx.append(table.index(name, "feature"))
        if not fidx:
            raise ValueError(
                f"{table.path}: no feature columns: no numeric column besides the target "
                f"{target!r}" + (f" (non-numeric: {', '.join(ignored)})" if ignored else "")
            )
    y = table.column(ti, "target")
    X = np.column_stack([table.column(j, "feature") for j in fidx])
    return X, y, [table.header[j] for j in fidx], ignored


def _check_output_path(path, option):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option} {path}: the directory {folder} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"{option} {path} is a directory")


# ---- convex-fit ---------------------------------------------------------------------------


def _convex_data(args):
    """(X, y, feature names, target name, source text, ignored columns, demo test set)."""
    demo_only = {"--n-samples": args.n_samples, "--dim": args.dim, "--noise": args.noise}
    if args.demo:
        if args.data is not None or args.target is not None or args.features is not None:
            raise ValueError("--demo generates its data: give no DATA.csv, --target or "
                             "--features")
        from psdsos.datasets import make_convex_regression

        n = 50 if args.n_samples is None else args.n_samples
        d = 2 if args.dim is None else args.dim
        noise = 0.1 if args.noise is None else args.noise
        X, y = make_convex_regression(n, d, noise=noise, random_state=args.random_state)
        X_test, y_test = make_convex_regression(N_DEMO_TEST, d, noise=0.0,
                                                random_state=args.random_state + 1)
        if args.concave:  # the demo of a concave fit: the negated data of eq. (30)
            y, y_test = -y, -y_test
        sign = "-" if args.concave else ""
        source = (f"demo data, {sign}eq. (30) of the PSD paper (a = 1, noise = {_fmt(noise)}, "
                  f"seed = {args.random_state})")
        names = [f"x{j + 1}" for j in range(d)]
        return X, y, names, "y", source, [], (X_test, y_test)
    given = [k for k, v in demo_only.items() if v is not None]
    if given:
        raise ValueError(f"{', '.join(given)} apply to --demo only")
    if args.data is None or args.target is None:
        raise ValueError("convex-fit needs DATA.csv and --target COLUMN (or --demo)")
    table = _read_csv(args.data, args.delimiter)
    X, y, names, ignored = _fit_columns(table, args.target, args.features)
    return X, y, names, args.target, args.data, ignored, None


def _check_cv_size(n, k, source):
    min_train = n - -(-n // k)  # KFold: the largest test fold has ceil(n / k) rows
    if n < 2:
        raise ValueError(f"{source} has {n} data row; convex-fit needs at least 2")
    if n < k or min_train < 2:
        raise ValueError(
            f"{source} has {n} data rows: too few for {k}-fold cross-validation (every "
            "training fold needs 2 rows or more); lower --cv"
        )
    return min_train


def _deficit_advice(n_rows: int) -> str:
    """What to try when the fit is not certified convex, by data size: exact features expand
    f on every row (an n x n kernel), sensible up to AUTO_TRAIN_CENTERS rows only."""
    wider = "larger --sigma values (e.g. --sigma 1,2,4) or larger --lam2 values"
    if n_rows <= AUTO_TRAIN_CENTERS:
        return f"try --n-landmarks exact, more rows, or {wider}"
    return (f"try {wider}, or a larger --n-landmarks (with {n_rows} rows --n-landmarks exact "
            f"would expand f on every row, an n x n kernel)")


def _save_convex_model(model, path, feature_names, target, scaling=None):
    """ConvexRegressor.save with the column names (and the standardization of convex-fit)
    in the file's JSON metadata."""
    meta = {COLUMNS_KEY: {"features": list(feature_names), "target": target}}
    if scaling is not None:
        meta[SCALING_KEY] = scaling.to_meta()
    model.save(path, metadata=meta)
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"  # numpy's rule


def _convex_fit(args, out):
    from sklearn.metrics import mean_squared_error
    from sklearn.model_selection import KFold

    from psdsos.estimators import ConvexRegressor
    from psdsos.model_selection import grid_search_cv, relative_sigmas
    from psdsos.solvers import InaccurateSolutionWarning

    args.verbose = not args.quiet
    X, y, names, target, source, ignored, test = _convex_data(args)
    n, p = X.shape
    min_train = _check_cv_size(n, args.cv, source)
    scaling = _Scaling.from_data(X, y, names)
    Xs, ys = scaling.X(X), scaling.y(y)
    r = args.n_landmarks
    if r is None:
        r = PAPER_N_LANDMARKS if min_train > PAPER_N_LANDMARKS else None
    elif r == "exact":
        r = None
    elif r > min_train:
        raise ValueError(f"--n-landmarks {r} exceeds the {min_train} rows of the smallest "
                         f"{args.cv}-fold training set")
    plot = args.plot
    for path, option in ((args.model, "--model"), (plot, "--plot")):
        if path is not None:
            _check_output_path(path, option)
    if plot is not None and p > 2:
        print(f"psdsos: warning: --plot skipped: cannot plot a function of {p} features "
              "(only 1 or 2)", file=sys.stderr)
        plot = None
    if plot is not None:
        from psdsos.plotting import plot_convex_fit

        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError("--plot needs matplotlib: pip install psdsos[plot]") from None

    grid, grid_text = _convex_grid(args.grid)
    given = [key for key in ("rho", "lam2", "sigma") if getattr(args, key) is not None]
    if given:
        for key in given:
            grid[key] = getattr(args, key)
        grid_text = ", ".join(f"{key} in {{{', '.join(_fmt(v) for v in grid[key])}}}"
                              + (" x scale" if key == "sigma" else "")
                              for key in ("rho", "lam2", "sigma"))
        grid_text += (f" ({', '.join('--' + key for key in given)} given, the rest from the "
                      f"{args.grid} grid)")
    if any(c <= 0 for c in grid["sigma"]):
        raise ValueError(f"--sigma values must be > 0, got {', '.join(map(_fmt, grid['sigma']))}")
    factors = list(grid["sigma"])
    grid["sigma"] = relative_sigmas(factors, Xs)  # in standardized feature units
    factor_of = dict(zip(grid["sigma"], factors, strict=True))
    settings = {}
    if args.tol is not None:
        settings["tol"] = args.tol
    if args.max_iter is not None:
        settings["max_iter"] = args.max_iter
    est = ConvexRegressor(args.kernel, lam1=0.0, solver=args.solver,
                          primal_solver=args.primal_solver, n_landmarks=r,
                          concave=args.concave, random_state=args.random_state, **settings)
    cv_params = None
    if args.solver == "dual":
        cv_params = {"max_iter": min(est.max_iter, CONVEX_CV_MAX_ITER)}

    shape = "concave" if args.concave else "convex"
    print(f"psdsos convex-fit: {source}", file=out)
    print(f"data: n = {n} rows, features: {', '.join(names)}; target: {target}; "
          f"{shape} fit", file=out)
    if ignored:
        print(f"ignored non-numeric columns: {', '.join(ignored)}", file=out)
    features_text = f"Nystrom rank {r}" if r is not None else "exact features"
    print(f"grid: {grid_text}", file=out)
    print(f"model: ConvexRegressor, {args.kernel} kernel, lam1 = 0, {features_text}, "
          f"solver = {args.solver}"
          + (f" ({args.primal_solver})" if args.solver == "primal" else ""), file=out)

    cv = KFold(args.cv, shuffle=True, random_state=args.random_state)
    with warnings.catch_warnings():
        # counted in the search result and printed below
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FitFailedWarning)
        # 'optimal_inaccurate' primal solves of the CV fits (the refit's are printed)
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                category=UserWarning)
        # the selected fit's deficit is reported below
        warnings.simplefilter("ignore", NonConvexFitWarning)
        res = grid_search_cv(est, Xs, ys, grid, cv=cv, scoring="neg_mse", n_jobs=args.n_jobs,
                             verbose=args.verbose, cv_params=cv_params, refit=False)
    best, model, caught = _report_cv_and_refit(
        res, est, Xs, ys, f"{args.cv}-fold CV (shuffled, seed {args.random_state})", "CV error",
        est.max_iter if cv_params is None else cv_params["max_iter"], out)
    if any(issubclass(w.category, InaccurateSolutionWarning) for w in caught):
        # CVXPY's own "Solution may be inaccurate" says the same thing at more length
        caught = [w for w in caught if not str(w.message).startswith("Solution may be inacc")]
    # reported below with the command's own advice
    caught = [w for w in caught if not issubclass(w.category, NonConvexFitWarning)]
    for w in caught:
        print(f"psdsos: warning (refit): {' '.join(str(w.message).split())}", file=sys.stderr)

    user = _InUserUnits(model, scaling)
    sigma_std = best["sigma"]
    print(f"selected: rho = {_fmt(best['rho'])}, lam2 = {_fmt(best['lam2'])}, "
          f"sigma = {_fmt(factor_of[sigma_std])} x scale", file=out)
    widths = ", ".join(f"{name}: {_fmt(sigma_std * s)}"
                       for name, s in zip(names, scaling.x_scale, strict=True))
    print(f"bandwidth: {_fmt(sigma_std)} standardized units (in the features' units: "
          f"{widths})", file=out)
    print(f"CV error (MSE): {-res.best_score_ * scaling.y_scale ** 2:.6g}", file=out)
    print(f"training error (MSE): {mean_squared_error(y, user.predict(X)):.6g}", file=out)
    kind, hessian = ("concavity", "-Hessian") if args.concave else ("convexity", "Hessian")
    eta = model.convexity_deficit(random_state=args.random_state)
    kappa = model.curvature_scale(random_state=args.random_state)
    rel = model.convexity_deficit(random_state=args.random_state, relative=True)
    print(f"{kind} deficit: {rel:.4g} of the curvature scale (max(0, -min eigenvalue of the "
          f"{hessian}) = {eta:.4g} over the mean spectral norm of the Hessian = {kappa:.4g}, "
          "in standardized units, at 4096 Sobol points in the bounding box of the features; "
          "0: no violation found)", file=out)
    if rel > RELATIVE_DEFICIT_TOL:
        msg = (f"the fit is not {shape}: its {kind} deficit is {rel:.3g} of its curvature "
               f"scale (> {RELATIVE_DEFICIT_TOL:g}); {_deficit_advice(len(y))}")
        if args.strict:
            raise ValueError(msg + " (--strict)")
        print(f"psdsos: warning: {msg}", file=sys.stderr)
    if test is not None:
        X_test, y_test = test
        err = mean_squared_error(y_test, user.predict(X_test))
        print(f"held-out error (MSE) against the noiseless function, {len(y_test)} new "
              f"points: {err:.6g}", file=out)
    if args.model is not None:
        written = _save_convex_model(model, args.model, names, target, scaling)
        print(f"model file: {written}", file=out)
    if plot is not None:
        title = (f"{shape} fit of {target}: rho = {_fmt(best['rho'])}, "
                 f"lam2 = {_fmt(best['lam2'])}, sigma = {_fmt(factor_of[sigma_std])} x scale")
        fig = plot_convex_fit(user, X, y, feature_names=names, target_name=target,
                              title=title)
        fig.savefig(plot, dpi=120)
        print(f"figure: {plot}", file=out)
    return 0


# ---- convex-predict -----------------------------------------------------------------------


def _convex_predict(args, out):
    from sklearn.metrics import mean_squared_error

    from psdsos.estimators import ConvexRegressor, load
    from psdsos.sos import load_npz

    model = load(args.model)
    if not isinstance(model, ConvexRegressor):
        raise ValueError(f"{args.model} holds a {type(model).__name__}, not a ConvexRegressor "
                         "(write one with psdsos convex-fit --model)")
    _, meta = load_npz(args.model)
    columns = meta.get(COLUMNS_KEY) or {}
    names = args.features if args.features is not None else columns.get("features")
    if names is None:
        raise ValueError(f"{args.model} has no feature names (it was not written by "
                         "psdsos convex-fit): give them with --features")
    if len(names) != model.n_features_in_:
        raise ValueError(f"the model takes {model.n_features_in_} features, but "
                         f"{len(names)} feature columns were given: {', '.join(names)}")
    for k, name in enumerate(names):
        if name in names[:k]:
            raise ValueError(f"feature column {name!r} is named twice")
    target = columns.get("target")
    column = args.column or (f"{target}_predicted" if target else "predicted")
    if args.out is not None:
        _check_output_path(args.out, "--out")
    table = _read_csv(args.data, args.delimiter)
    if column in table.header:
        raise ValueError(f"{args.data} already has a column {column!r}; name the predictions "
                         "with --column")
    X = np.column_stack([table.column(table.index(name, "feature"), "feature")
                         for name in names])
    if meta.get(SCALING_KEY) is not None:  # written by convex-fit: standardized units
        scaling = _Scaling.from_meta(meta[SCALING_KEY], model.n_features_in_, args.model)
        pred = scaling.y_back(model.predict(scaling.X(X)))
    else:
        pred = model.predict(X)

    def write(fh):
        writer = csv.writer(fh, delimiter=args.delimiter, lineterminator="\n")
        writer.writerow(table.header + [column])
        for row, v in zip(table.rows, pred, strict=True):
            writer.writerow(row + [repr(float(v))])

    if args.out is None:
        write(out)
        return 0
    with open(args.out, "w", newline="", encoding="utf-8") as fh:
        write(fh)
    print(f"psdsos convex-predict: {len(pred)} rows of {args.data}, features: "
          f"{', '.join(names)}", file=out)
    if target is not None and target in table.header:
        try:
            y = table.column(table.index(target, "target"), "target")
        except ValueError:
            y = None
        if y is not None:
            print(f"error (MSE) against column {target!r}: "
                  f"{mean_squared_error(y, pred):.6g}", file=out)
    print(f"predictions: {args.out} (column {column!r})", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
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
    if getattr(args, "verbose", False):
        print(f"total time: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code

