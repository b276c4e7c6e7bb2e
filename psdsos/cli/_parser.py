"""The argument parser of the ``psdsos`` command line and its argument types."""

from __future__ import annotations

import argparse
import math

from psdsos.cli._bures_demo import _bures_demo
from psdsos.cli._convex_fit import PAPER_N_LANDMARKS, _convex_fit
from psdsos.cli._convex_predict import _convex_predict
from psdsos.cli._fit_common import CV_MAX_ITER
from psdsos.cli._kernels import (
    CONVEX_DEFAULT_KERNEL,
    DEMO_KERNELS,
    PAPER_KERNEL,
    hessian_kernels,
    listed,
)
from psdsos.cli._shape_fit import _shape_fit
from psdsos.estimators import RELATIVE_DEFICIT_TOL


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
            f"kernel ({listed(DEMO_KERNELS)}), its bandwidth sigma and lam2 of a "
            "PSDRegressor by leave-one-out cross-validation (dual solver), "
            "refit, and report the mean squared Bures-Wasserstein distance to the true "
            "geodesic at 200 held-out times next to piecewise-linear interpolation. "
            f"--paper: the paper's Figure 1 setting instead ({PAPER_KERNEL} kernel, "
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
                      help=f"the paper's setting: {PAPER_KERNEL} kernel, grid of Appendix D.1 "
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


def _finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


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


def _add_fit_options(fit, *, seeds):
    """The options convex-fit and shape-fit share: columns, CV grid, kernel, solver, output."""
    fit.add_argument("--target", metavar="COLUMN", help="the column to predict")
    fit.add_argument("--features", type=_name_list, metavar="A,B,...",
                     help="feature columns (default: every other numeric column)")
    fit.add_argument("--cv", type=_int_at_least(2), default=5, metavar="K",
                     help="number of cross-validation folds, shuffled (default: 5)")
    fit.add_argument("--grid", choices=("paper", "small"), default="small",
                     help="small (default): 12 candidates for convex-fit, 8 for shape-fit; "
                          "paper: Appendix D.2, 60 candidates")
    fit.add_argument("--rho", type=_float_list, metavar="V,...",
                     help="replace the grid's rho values (ridge weight on f)")
    fit.add_argument("--lam2", type=_float_list, metavar="V,...",
                     help="replace the grid's lam2 values (Frobenius weight on B)")
    fit.add_argument("--sigma", type=_float_list, metavar="V,...",
                     help="replace the grid's kernel bandwidths, as multiples of the "
                          "standardized features' scale sqrt(n_features / 2)")
    fit.add_argument("--kernel", choices=hessian_kernels(), default=CONVEX_DEFAULT_KERNEL,
                     help=f"kernel (default: {CONVEX_DEFAULT_KERNEL}, as the paper; rbf, "
                          "scikit-learn's name, is the gaussian kernel)")
    fit.add_argument("--solver", choices=("dual", "primal"), default="dual",
                     help="dual: accelerated gradient (default); primal: an SDP through CVXPY")
    fit.add_argument("--primal-solver", choices=("CLARABEL", "SCS"), default="CLARABEL",
                     help="SDP solver of --solver primal (default: CLARABEL)")
    fit.add_argument("--tol", type=_positive_float, default=None,
                     help="solver tolerance (default: the estimator's, 1e-6)")
    fit.add_argument("--max-iter", type=_int_at_least(1), default=None, metavar="N",
                     help="dual iterations of the final fit (default: the estimator's); the "
                          f"CV fits stop at min(N, {CV_MAX_ITER})")
    fit.add_argument("--random-state", type=_int_at_least(0), default=0, metavar="SEED",
                     help=f"seed of {seeds} (default: 0)")
    fit.add_argument("--n-jobs", type=int, default=None, metavar="N",
                     help="parallel jobs for the search (joblib; -1: all cores)")
    fit.add_argument("--model", metavar="OUT.npz",
                     help="save the fitted model there (.npz + JSON, with the column names)")
    fit.add_argument("--delimiter", type=_delimiter, default=",", metavar="C",
                     help="CSV cell separator (default: ','; 'tab' for tabs)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar on stderr")


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
    _add_fit_options(fit, seeds="the folds, the Nystrom landmarks, the deficit estimate and "
                                "the demo data")
    fit.add_argument("--demo", action="store_true",
                     help="built-in data: noisy samples of eq. (30) of the PSD paper "
                          "(negated with --concave)")
    fit.add_argument("--n-samples", type=_int_at_least(2), default=None, metavar="N",
                     help="--demo: number of samples (default: 50)")
    fit.add_argument("--dim", type=_int_at_least(1), default=None, metavar="D",
                     help="--demo: input dimension (default: 2)")
    fit.add_argument("--noise", type=_nonnegative_float, default=None, metavar="ETA",
                     help="--demo: noise level eta (default: 0.1)")
    fit.add_argument("--concave", action="store_true", help="fit a concave function")
    fit.add_argument("--n-landmarks", type=_landmarks, default=None, metavar="R",
                     help=f"Nystrom rank, or 'exact' (default: {PAPER_N_LANDMARKS} when every "
                          f"CV training fold has more than {PAPER_N_LANDMARKS} rows, as the "
                          "paper; otherwise exact features)")
    fit.add_argument("--plot", metavar="OUT.png",
                     help="draw the data and the fit (1 or 2 features; skipped otherwise)")
    fit.add_argument("--strict", action="store_true",
                     help="exit 1 (error) instead of warning when the relative convexity "
                          f"deficit exceeds {RELATIVE_DEFICIT_TOL:g}")
    fit.add_argument("--max-refits", type=_int_at_least(1), default=3, metavar="N",
                     help="refit the candidates in the order of their CV error until one is "
                          "certified convex (concave) on the box of the data, at most N of "
                          "them; none: the best by CV is kept (default: 3)")
    fit.set_defaults(func=_convex_fit)

    _add_shape_parser(sub)
    pred = sub.add_parser(
        "convex-predict", aliases=["predict"],
        help="predict with a model saved by convex-fit --model or shape-fit --model",
        description=(
            "Evaluate a model saved by `psdsos convex-fit --model` or `psdsos shape-fit "
            "--model` on the rows of DATA.csv, in the columns' own units (the standardization "
            "saved with the model is applied; the feature columns saved with the model must "
            "be present; other columns are copied). A shape-fit model predicts with its "
            "certified-shape predictor (the fit plus the correction its certificates "
            "require). Writes DATA.csv with a prediction column appended, to --out or stdout."
        ),
    )
    pred.add_argument("model", metavar="MODEL.npz",
                      help="file written by convex-fit --model or shape-fit --model")
    pred.add_argument("data", metavar="DATA.csv", help="CSV file with a header row")
    pred.add_argument("--out", metavar="PRED.csv", help="output file (default: stdout)")
    pred.add_argument("--features", type=_name_list, metavar="A,B,...",
                      help="feature columns, for a model saved from Python (default: the "
                           "names saved by convex-fit or shape-fit)")
    pred.add_argument("--column", metavar="NAME", default=None,
                      help="name of the prediction column (default: <target>_predicted)")
    pred.add_argument("--delimiter", type=_delimiter, default=",", metavar="C",
                      help="CSV cell separator (default: ','; 'tab' for tabs)")
    pred.add_argument("--raw", action="store_true",
                      help="shape-fit models: predict with the raw fit, without the correction "
                           "its certificates require (default: the certified-shape predictor)")
    pred.set_defaults(func=_convex_predict, verbose=False)


def _add_shape_parser(sub):
    fit = sub.add_parser(
        "shape-fit",
        help="regression of a CSV column on the others under shape constraints, certified",
        description=(
            "Fit a smooth function of the feature columns of DATA.csv to its --target column "
            "under shape constraints: increasing or decreasing in named columns, convex or "
            "concave in named columns (jointly: the Hessian block of those columns), lower "
            "and upper bounds on the values (a ShapeConstrainedRegressor: one kernel SoS "
            "block per constraint). (rho, lam2, sigma) are chosen by k-fold cross-validation "
            "(mean squared error; the CV fits hold the constraints at their constraint points "
            "only), then the refit searches the box of the data for violations, adds them as "
            "constraint points, and proves a lower bound of every constraint function over "
            "the box (its certificate: 'certified', or 'sampled' when the budget of cells "
            "runs out). The features and the target are standardized first (mean 0, "
            "standard deviation 1 per column; stored in the model file): a positive scaling "
            "of each feature keeps monotonicity and convexity in it, so the constraints mean "
            "the same in the columns' own units; --lower and --upper are in the target's "
            "units, and the certificates are printed in the columns' units (the bound of a "
            "Hessian block of columns with different spreads is then a valid but "
            "conservative lower bound of its smallest eigenvalue). Put DATA.csv before "
            "--convex / --concave without a value."
        ),
    )
    fit.add_argument("data", metavar="DATA.csv", help="CSV file with a header row")
    _add_fit_options(fit, seeds="the folds, the constraint points and the search")
    shape = fit.add_argument_group("shape constraints (column names among the features)")
    for opt, what in (("increasing", "non-decreasing"), ("decreasing", "non-increasing")):
        shape.add_argument(f"--{opt}", type=_name_list, metavar="A,B,...",
                           help=f"the fit is {what} in each of these columns")
    for opt in ("convex", "concave"):
        shape.add_argument(f"--{opt}", type=_name_list, nargs="?", const=True,
                           metavar="A,B,...",
                           help=f"the fit is jointly {opt} in these columns (no value: in "
                                "all the features)")
    shape.add_argument("--lower", type=_finite_float, metavar="X",
                       help="lower bound of the values, in the target's units")
    shape.add_argument("--upper", type=_finite_float, metavar="X",
                       help="upper bound of the values, in the target's units")
    fit.add_argument("--n-landmarks", type=_landmarks, default=None, metavar="R",
                     help="expand the fit on R greedy landmarks, or 'exact': on every "
                          "training row (default: every row up to 2000 rows, 200 landmarks "
                          "beyond)")
    fit.add_argument("--certify-tol", type=_positive_float, default=1e-2, metavar="TOL",
                     help="relative tolerance of the violation search and of the "
                          "certificates (default: 1e-2)")
    fit.add_argument("--max-cells", type=_int_at_least(1), default=400_000, metavar="N",
                     help="budget of cells per constraint of the certificates' branch and "
                          "bound; beyond it the status is 'sampled' (default: 400000)")
    fit.add_argument("--max-exchange", type=_int_at_least(0), default=10, metavar="N",
                     help="rounds of the violation search of the refit (default: 10)")
    fit.add_argument("--strict", action="store_true",
                     help="exit 1 (after the report) when a constraint's certificate is not "
                          "'certified'")
    fit.add_argument("--max-refits", type=_int_at_least(1), default=3, metavar="N",
                     help="refit the candidates in the order of their CV error until one has "
                          "every constraint certified, at most N of them; none: the best by "
                          "CV is kept (default: 3)")
    fit.set_defaults(func=_shape_fit)
