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
shape-fit
    Shape-constrained regression of one CSV column on the others with a
    :class:`~psdsos.ShapeConstrainedRegressor`: increasing / decreasing in named columns,
    convex / concave in named columns, lower / upper bounds on the values; the same k-fold
    selection as convex-fit, then certificates of every constraint over the box of the data,
    printed in the user's units.
convex-predict (alias: predict)
    Predictions of a model saved by ``convex-fit --model`` or ``shape-fit --model`` on the rows
    of a CSV file.

CSV input: a header row, one row per sample, ``,`` between cells (``--delimiter``). Missing,
non-numeric or non-finite values in the columns used are errors (never silently dropped).

Exit codes: 0 on success, 2 for bad arguments (argparse, and column names or constraints
that do not fit the data's columns), 1 for errors raised by the library (bad values, solver
failures, unwritable output) and for ``shape-fit --strict`` when a constraint is not
certified; errors are reported on one line as ``psdsos: error: ...`` without a traceback.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

# the commands' constants and helpers stay reachable as psdsos.cli.<name>
from psdsos.cli._bures_demo import _demo_grid as _demo_grid
from psdsos.cli._bures_demo import _linear_interpolation as _linear_interpolation
from psdsos.cli._common import _UsageError
from psdsos.cli._convex_fit import _convex_grid as _convex_grid
from psdsos.cli._convex_fit import _deficit_advice as _deficit_advice
from psdsos.cli._parser import _build_parser
from psdsos.cli._scaling import COLUMNS_KEY as COLUMNS_KEY
from psdsos.cli._scaling import SCALING_KEY as SCALING_KEY
from psdsos.estimators import RELATIVE_DEFICIT_TOL as RELATIVE_DEFICIT_TOL

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``psdsos`` command line; return the exit code.

    Parameters
    ----------
    argv : list of str or None
        Arguments without the program name (None: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for bad arguments, 1 for an error raised by the library (or an
        uncertified constraint with ``shape-fit --strict``).
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
        return int(exc.code) if isinstance(exc.code, int) else 2
    start = time.perf_counter()
    try:
        code = args.func(args, sys.stdout)
    except _UsageError as exc:
        print(f"psdsos: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, ArithmeticError, ImportError, OSError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        print(f"psdsos: error: {msg}", file=sys.stderr)
        return 1
    if getattr(args, "verbose", False):
        print(f"total time: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code

