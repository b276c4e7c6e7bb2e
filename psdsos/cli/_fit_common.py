"""What convex-fit and shape-fit share: the grid, the search, the selection report, the model
file, and the certificates printed in the user's units."""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Mapping

from sklearn.exceptions import ConvergenceWarning, FitFailedWarning

from psdsos.cli._common import _fmt, _report_cv_and_refit
from psdsos.cli._scaling import COLUMNS_KEY, SCALING_KEY

#: Iteration cap of the dual solver for the cross-validation fits (not the refit).
CV_MAX_ITER = 2000


def _check_cv_size(n, k, source):
    min_train = n - -(-n // k)  # KFold: the largest test fold has ceil(n / k) rows
    if n < 2:
        raise ValueError(f"{source} has {n} data row; the fit needs at least 2")
    if n < k or min_train < 2:
        raise ValueError(
            f"{source} has {n} data rows: too few for {k}-fold cross-validation (every "
            "training fold needs 2 rows or more); lower --cv"
        )
    return min_train


def _search_grid(args, Xs, default_grid):
    """(grid with bandwidths in standardized units, its description, {bandwidth: factor}):
    ``default_grid(args.grid)`` with the values of --rho, --lam2, --sigma put in."""
    from psdsos.model_selection import relative_sigmas

    grid, grid_text = default_grid(args.grid)
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
    return grid, grid_text, dict(zip(grid["sigma"], factors, strict=True))


def _solver_settings(args):
    """The estimator's tol / max_iter when given on the command line."""
    settings = {}
    if args.tol is not None:
        settings["tol"] = args.tol
    if args.max_iter is not None:
        settings["max_iter"] = args.max_iter
    return settings


def _print_header(command, source, n, names, target, shape, ignored, grid_text, out):
    print(f"psdsos {command}: {source}", file=out)
    print(f"data: n = {n} rows, features: {', '.join(names)}; target: {target}; "
          f"{shape} fit", file=out)
    if ignored:
        print(f"ignored non-numeric columns: {', '.join(ignored)}", file=out)
    print(f"grid: {grid_text}", file=out)


def _search_and_refit(est, Xs, ys, grid, args, cv_params, out, silenced=(), cv_est=None,
                      accept=None, max_refits=1, accepted_text="accepted"):
    """k-fold search (shuffled, seeded), printed summary, refit on all the data; the refit's
    warnings other than ``silenced`` (reported by the command itself) go to stderr.
    ``cv_est``: the estimator of the CV fits when it differs from the refit's ``est``
    (convex-fit: no box certificate in the CV fits).  ``accept``, ``max_refits``,
    ``accepted_text``: the refits in CV order of :func:`_report_cv_and_refit`.
    Returns (search result, best parameters, fitted model)."""
    from sklearn.model_selection import KFold

    from psdsos.model_selection import grid_search_cv
    from psdsos.solvers import InaccurateSolutionWarning

    cv = KFold(args.cv, shuffle=True, random_state=args.random_state)
    with warnings.catch_warnings():
        # counted in the search result and printed below
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FitFailedWarning)
        # 'optimal_inaccurate' primal solves of the CV fits (the refit's are printed)
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                category=UserWarning)
        for category in silenced:  # the selected fit's are reported by the command
            warnings.simplefilter("ignore", category)
        res = grid_search_cv(est if cv_est is None else cv_est, Xs, ys, grid, cv=cv,
                             scoring="neg_mse", n_jobs=args.n_jobs,
                             verbose=args.verbose, cv_params=cv_params, refit=False)
    max_iter = est.max_iter if cv_params is None else cv_params.get("max_iter", est.max_iter)
    best, model, caught = _report_cv_and_refit(
        res, est, Xs, ys, f"{args.cv}-fold CV (shuffled, seed {args.random_state})", "CV error",
        max_iter, out, accept=accept, max_refits=max_refits, accepted_text=accepted_text)
    if any(issubclass(w.category, InaccurateSolutionWarning) for w in caught):
        # CVXPY's own "Solution may be inaccurate" says the same thing at more length
        caught = [w for w in caught if not str(w.message).startswith("Solution may be inacc")]
    for w in caught:
        if not issubclass(w.category, tuple(silenced)):
            print(f"psdsos: warning (refit): {' '.join(str(w.message).split())}",
                  file=sys.stderr)
    return res, best, model


def _report_selection(res, best, factor_of, scaling, names, user, X, y, out):
    """The selected values, the bandwidth in the features' units, CV and training errors."""
    from sklearn.metrics import mean_squared_error

    sigma_std = best["sigma"]
    print(f"selected: rho = {_fmt(best['rho'])}, lam2 = {_fmt(best['lam2'])}, "
          f"sigma = {_fmt(factor_of[sigma_std])} x scale", file=out)
    widths = ", ".join(f"{name}: {_fmt(sigma_std * s)}"
                       for name, s in zip(names, scaling.x_scale, strict=True))
    print(f"bandwidth: {_fmt(sigma_std)} standardized units (in the features' units: "
          f"{widths})", file=out)
    print(f"CV error (MSE): {-res.best_score_ * scaling.y_scale ** 2:.6g}", file=out)
    print(f"training error (MSE): {mean_squared_error(y, user.predict(X)):.6g}", file=out)


def _save_model(model, path, feature_names, target, scaling=None):
    """model.save with the column names (and the standardization of the command) in the
    file's JSON metadata; returns the path written.  Called once the fit has ended: the
    save is atomic (an existing file is replaced only by a complete one), so an interrupted
    fit, search or save leaves no partial model file."""
    from psdsos._npz import npz_path

    meta = {COLUMNS_KEY: {"features": list(feature_names), "target": target}}
    if scaling is not None:
        meta[SCALING_KEY] = scaling.to_meta()
    model.save(path, metadata=meta)
    return npz_path(path)  # numpy's rule: ".npz" appended when missing


# ---- certificates in the user's units ------------------------------------------------------
_NAME = re.compile(r"^(increasing|decreasing|convex|concave)\[(\d+(?:,\d+)*)\]$")


def _field(record, key):
    value = getattr(record, key, None)
    if value is None and isinstance(record, Mapping):
        value = record.get(key)
    return value


def _certificates(model, default_name):
    """{name: record} of ``model.certificate_`` (a dict of records or one record, named
    ``default_name``); {} when the model has none."""
    cert = getattr(model, "certificate_", None)
    if cert is None:
        return {}
    if _field(cert, "bound") is not None:
        return {default_name: cert}
    if isinstance(cert, Mapping):
        return {str(k): v for k, v in cert.items()}
    return {}


def _unit_factor(kind, features, bound, scaling):
    """(factor from standardized to the user's units, exact?) for a constraint's value.

    The features are standardized column by column, u_p = (x_p - m_p) / s_p, and the target,
    t = (y - m) / s_y.  Value: s_y.  d f / d x_p = s_y (d / d u_p) / s_p.  The Hessian block
    of S in x is s_y D^-1 H_u D^-1 with D = diag(s_S): with equal scales its eigenvalues are
    those of H_u times s_y / s^2; otherwise lambda_min(H_x) >= s_y lambda_min(H_u) / s_max^2
    when lambda_min(H_u) >= 0 and >= s_y lambda_min(H_u) / s_min^2 when it is < 0, a valid
    but not exact lower bound (and s_y e / s_min^2 is the largest eigenvalue of the
    correction s_y e D^-2, so bound + correction keeps reading 0 for a corrected fit)."""
    sy = scaling.y_scale
    if kind in ("lower", "upper"):
        return sy, True
    s = [float(scaling.x_scale[j]) for j in features]
    if kind in ("increasing", "decreasing"):
        return sy / s[0], True
    exact = max(s) == min(s)
    return sy / (max(s) if bound >= 0 else min(s)) ** 2, exact


def _parse_name(name, default_features):
    """(kind, feature indices) of a certificate's name: 'increasing[0]', 'concave[0,1]',
    'lower', or a bare 'convex' / 'concave' (a whole-Hessian certificate)."""
    m = _NAME.match(name)
    if m:
        return m.group(1), [int(j) for j in m.group(2).split(",")]
    if name in ("convex", "concave"):
        return name, list(default_features)
    return name, None


def _print_certificates(model, scaling, names, target, out, default_name="convex"):
    """One line per constraint: name with column names, status, bound (user's units),
    relative bound, correction.  Returns the names whose status is not "certified"."""
    certs = _certificates(model, default_name)
    if not certs:
        return []
    print(f"certificates (lower bound of each constraint function over the box of the data, "
          f"in {target}'s units per unit of the features; 'sampled': the smallest value "
          "found, not a proof):", file=out)
    rows, notes, uncertified = [], [], []
    for name, record in certs.items():
        kind, feats = _parse_name(name, range(len(names)))
        if feats is not None and any(j >= len(names) for j in feats):
            feats = None
        bound, corr = float(_field(record, "bound")), float(_field(record, "correction") or 0)
        if feats is None and kind not in ("lower", "upper"):
            shown, factor, exact = name, 1.0, False
            notes.append(f"{name}: in standardized units (not converted)")
        else:
            shown = f"{kind}[{','.join(names[j] for j in feats)}]" if feats else kind
            factor, exact = _unit_factor(kind, feats, bound, scaling)
            corr_factor = _unit_factor(kind, feats, -1.0, scaling)[0]
            corr *= corr_factor
            if not exact:
                notes.append(f"{shown}: its features have different scales, so the bound is a "
                             "valid but conservative lower bound of the smallest eigenvalue "
                             "of the Hessian block in the user's units (relative is exact)")
        status = str(_field(record, "status"))
        if status != "certified":
            uncertified.append(shown)
        rows.append((shown, status, f"{bound * factor:.4g}",
                     f"{float(_field(record, 'relative')):.4g}", f"{corr:.4g}"))
    width = max(len(r[0]) for r in rows)
    for shown, status, b, rel, corr in rows:
        print(f"  {shown:<{width}}  {status:<9}  bound = {b:<11}  relative = {rel:<11}  "
              f"correction = {corr}", file=out)
    for note in notes:
        print(f"  note: {note}", file=out)
    return uncertified
