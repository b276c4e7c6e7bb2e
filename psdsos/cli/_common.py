"""Helpers shared by the commands: number formatting, output paths, the CV report."""

from __future__ import annotations

import os
import sys
import warnings

from sklearn.base import clone


class _UsageError(ValueError):
    """A bad command line found after parsing (e.g. a column name the file does not have):
    reported like a library error, on one line, but with exit code 2 as argparse's."""


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


def _check_output_path(path, option):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option} {path}: the directory {folder} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"{option} {path} is a directory")


def _save_figure(fig, path):
    """``fig.savefig`` through an atomic write (a failed or interrupted save leaves an
    existing file at ``path`` as it was); the format from the file name's extension, as
    ``savefig`` infers it from a name."""
    from psdsos._persistence import atomic_write

    ext = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, dpi=120, format=ext or None)
