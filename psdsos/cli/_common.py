"""Helpers shared by the commands: number formatting, output paths, the CV report."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
from sklearn.base import clone


class _UsageError(ValueError):
    """A bad command line found after parsing (e.g. a column name the file does not have):
    reported like a library error, on one line, but with exit code 2 as argparse's."""


def _fmt(v):
    return f"{v:g}"


def _report_cv_and_refit(res, est, X, Y, cv_name, score_name, max_iter, out, accept=None,
                         max_refits=1, accepted_text="accepted"):
    """Print the CV summary (and a warning if the chosen candidate's CV fits stopped at
    max_iter), refit on all the data; return (best params, model, refit warnings).

    With ``accept`` (a predicate on a fitted model), the candidates are refitted in the
    order of their CV score until one is accepted, at most ``max_refits`` of them; the first
    accepted is returned, else the best by CV.  ``res.best_index_`` and ``res.best_params_``
    then name the candidate returned (its ``best_score_`` too), and, unless the best by CV
    was accepted at once, a line says how many refits ran and whether the one returned is
    ``accepted_text``."""
    n_cand = len(res.cv_results_["params"])
    note = ""
    if res.n_not_converged:
        note += (f"; {res.n_not_converged} fits stopped at max_iter = {max_iter} "
                 "(warnings silenced)")
    if res.n_failed:
        note += f"; {res.n_failed} fits failed (scored NaN)"
    print(f"{cv_name}: {n_cand} candidates x {res.n_splits_} folds = {res.n_fits} fits "
          f"in {res.wall_time:.1f} s{note}", file=out)
    scores = np.asarray(res.cv_results_["mean_test_score"], dtype=np.float64)
    # the CV order, the first on ties first (grid_search_cv's best_index_); NaN scores out
    finite = np.where(np.isfinite(scores), scores, -np.inf)
    order = [int(i) for i in np.argsort(-finite, kind="stable") if np.isfinite(scores[i])]
    order = order or [res.best_index_]
    refits = []
    for i in order[:max(1, max_refits) if accept is not None else 1]:
        params = res.cv_results_["params"][i]
        with warnings.catch_warnings(record=True) as caught:  # the refit on all the data
            warnings.simplefilter("always")
            model = clone(est).set_params(**params).fit(X, Y)
        ok = accept is None or bool(accept(model))
        refits.append((i, model, caught, ok))
        if ok:
            break
    i, model, caught, ok = next((r for r in refits if r[3]), refits[0])
    res.best_index_ = i
    res.best_params_ = dict(res.cv_results_["params"][i])
    res.best_score_ = float(scores[i])
    best = res.best_params_
    if accept is not None and (len(refits) > 1 or not ok):
        if ok:
            rank = order.index(i) + 1
            which = "the best" if rank == 1 else f"number {rank}"
            print(f"refits: {len(refits)} (in CV order); kept {which} by CV, the first whose "
                  f"refit is {accepted_text}", file=out)
        else:
            print(f"refits: {len(refits)} (in CV order); none is {accepted_text}: kept the "
                  "best by CV", file=out)
    best_nc = int(res.cv_results_["n_not_converged"][i])
    if best_nc:
        print(f"psdsos: warning: {best_nc} of the selected candidate's {res.n_splits_} CV fits "
              f"stopped at max_iter; its {score_name} may be an artifact of early stopping",
              file=sys.stderr)
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
    from psdsos._npz import atomic_write

    ext = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, dpi=120, format=ext or None)
