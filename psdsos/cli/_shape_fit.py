"""``psdsos shape-fit``: regression of a CSV column on the others under shape constraints
(increasing / decreasing, convex / concave in named columns, bounds on the values), with the
certificates of :class:`psdsos.ShapeConstrainedRegressor` printed in the user's units."""

from __future__ import annotations

import sys

from psdsos.cli import _fit_common as fc
from psdsos.cli._common import _check_output_path, _fmt, _UsageError
from psdsos.cli._convex_fit import _convex_grid
from psdsos.cli._csv import _fit_columns, _read_csv
from psdsos.cli._scaling import _InUserUnits, _Scaling

#: The shape options, in the order of the estimator's constraints.
SHAPE_OPTIONS = ("increasing", "decreasing", "convex", "concave")


def _feature_indices(option, given, names):
    """The indices of the columns named by --increasing etc. among the feature columns
    (True: all of them); unknown or repeated names are usage errors (exit 2)."""
    if given is None or given is True:
        return given
    out = []
    for name in given:
        if name not in names:
            listed = ", ".join(repr(c) for c in names)
            raise _UsageError(f"--{option}: {name!r} is not a feature column (feature "
                              f"columns: {listed})")
        if names.index(name) in out:
            raise _UsageError(f"--{option} names the column {name!r} twice")
        out.append(names.index(name))
    return out


def _shape_spec(args, names):
    """{option: None, True or feature indices} of the shape options, checked against each
    other in column names (the estimator would refuse the same with indices)."""
    spec = {opt: _feature_indices(opt, getattr(args, opt), names) for opt in SHAPE_OPTIONS}
    p = len(names)

    def chosen(opt):
        v = spec[opt]
        return set() if v is None else set(range(p)) if v is True else set(v)

    for a, b, why in (("increasing", "decreasing", "constant"), ("convex", "concave", "affine")):
        both = sorted(chosen(a) & chosen(b))
        if both:
            cols = ", ".join(repr(names[j]) for j in both)
            what = f"the column {cols} is" if len(both) == 1 else f"the columns {cols} are"
            raise _UsageError(f"{what} both --{a} and --{b} (the fit would be {why} in "
                              f"{'it' if len(both) == 1 else 'them'}); drop "
                              f"{'it' if len(both) == 1 else 'them'} from one of the options")
    if args.lower is not None and args.upper is not None and not args.lower < args.upper:
        raise _UsageError(f"--lower must be < --upper, got --lower {_fmt(args.lower)} "
                          f"--upper {_fmt(args.upper)}")
    if all(v is None for v in spec.values()) and args.lower is None and args.upper is None:
        raise _UsageError("no shape constraint: give at least one of --increasing, "
                          "--decreasing, --convex, --concave, --lower, --upper")
    return spec


def _shape_text(spec, names, args):
    """'increasing[income], concave[income], values >= 0' for the report."""
    parts = []
    for opt in SHAPE_OPTIONS:
        v = spec[opt]
        if v is not None:
            cols = names if v is True else [names[j] for j in v]
            parts.append(f"{opt}[{','.join(cols)}]")
    if args.lower is not None:
        parts.append(f"values >= {_fmt(args.lower)}")
    if args.upper is not None:
        parts.append(f"values <= {_fmt(args.upper)}")
    return ", ".join(parts)


def _centers(args, min_train):
    """(centers, n_landmarks, description) of --n-landmarks."""
    r = args.n_landmarks
    if r is None:
        return "auto", None, "centers: the training rows (up to 2000 rows)"
    if r == "exact":
        return "train", None, "centers: the training rows"
    if r > min_train:
        raise ValueError(f"--n-landmarks {r} exceeds the {min_train} rows of the smallest "
                         f"{args.cv}-fold training set")
    return "landmarks", r, f"centers: {r} greedy landmarks"


def _shape_grid(name):
    """(param_grid, description) of shape-fit: the paper's grid of convex-fit, or by default
    the bandwidths of ShapeConstrainedRegressorCV with a small lam2 (its Frobenius weight
    biases the constraint functions towards 0)."""
    if name == "paper":
        return _convex_grid(name)
    grid = {"rho": [1e-4, 1e-5, 1e-6, 1e-7], "lam2": [1e-7], "sigma": [1.0, 2.0]}
    text = ("small: rho in {1e-4, 1e-5, 1e-6, 1e-7}, lam2 = 1e-7, sigma in {1, 2} x scale "
            "(a small lam2: its weight biases the slopes and curvatures)")
    return grid, text


def _shape_fit(args, out):
    from psdsos.estimators import ShapeConstrainedRegressor, UncertifiedShapeWarning
    from psdsos.estimators._shape_cv import default_cv_points

    args.verbose = not args.quiet
    if args.target is None:
        raise _UsageError("shape-fit needs --target COLUMN (the column to predict)")
    table = _read_csv(args.data, args.delimiter)
    X, y, names, ignored = _fit_columns(table, args.target, args.features)
    spec = _shape_spec(args, names)
    min_train = fc._check_cv_size(X.shape[0], args.cv, args.data)
    centers, r, centers_text = _centers(args, min_train)
    if args.model is not None:
        _check_output_path(args.model, "--model")
    scaling = _Scaling.from_data(X, y, names)
    Xs, ys = scaling.X(X), scaling.y(y)
    # bounds in the target's units -> the standardized target the estimator sees
    bounds = {key: None if v is None else float(scaling.y(v))
              for key, v in (("lower", args.lower), ("upper", args.upper))}
    grid, grid_text, factor_of = fc._search_grid(args, Xs, _shape_grid)
    est = ShapeConstrainedRegressor(
        **spec, **bounds, kernel=args.kernel, lam1=0.0, solver=args.solver,
        primal_solver=args.primal_solver, centers=centers, n_landmarks=r,
        certify_tol=args.certify_tol, max_cells=args.max_cells,
        max_exchange=args.max_exchange, random_state=args.random_state,
        **fc._solver_settings(args))
    # the CV fits hold the constraints at their points only (no exchange, no certificate),
    # as many as ShapeConstrainedRegressorCV's (fewer than the refit's beyond two features)
    cv_params = {"certify": False, "max_exchange": 0,
                 "constraint_points": default_cv_points(X.shape[1])}
    if args.solver == "dual":
        cv_params["max_iter"] = min(est.max_iter, fc.CV_MAX_ITER)
        # a candidate's score needs less than the refit's gap (ShapeConstrainedRegressorCV's
        # cv_tol)
        cv_params["tol"] = max(est.tol, 1e-4)

    fc._print_header("shape-fit", args.data, X.shape[0], names, args.target,
                  f"shape-constrained ({_shape_text(spec, names, args)})", ignored, grid_text,
                  out)
    print(f"model: ShapeConstrainedRegressor, {args.kernel} kernel, lam1 = 0, {centers_text}, "
          f"solver = {args.solver}"
          + (f" ({args.primal_solver})" if args.solver == "primal" else "")
          + f"; certificates: certify_tol = {_fmt(args.certify_tol)}, max_cells = "
          f"{args.max_cells} per constraint", file=out)
    # the refits in CV order until every constraint is certified (ShapeConstrainedRegressorCV)
    res, best, model = fc._search_and_refit(
        est, Xs, ys, grid, args, cv_params, out, silenced=(UncertifiedShapeWarning,),
        accept=lambda m: all(c.status == "certified" for c in m.certificate_.values()),
        max_refits=args.max_refits, accepted_text="certified (every constraint)")
    user = _InUserUnits(model, scaling)
    fc._report_selection(res, best, factor_of, scaling, names, user, X, y, out)
    uncertified = fc._print_certificates(model, scaling, names, args.target, out)
    print(f"exchange rounds: {model.n_exchange_}; certified-shape predictor: correction "
          f"{model.correction_:.4g} of the constraints' scale (0: the predictions are the "
          "raw fit)", file=out)
    if args.model is not None:
        written = fc._save_model(model, args.model, names, args.target, scaling)
        print(f"model file: {written}", file=out)
    if uncertified:
        msg = (f"the constraints {', '.join(uncertified)} are not proved on the box of the "
               "data (status 'sampled': the smallest value found, not a bound); raise "
               "--max-cells or --certify-tol")
        if args.strict:
            print(f"psdsos: error: {msg} (--strict)", file=sys.stderr)
            return 1
        print(f"psdsos: warning: {msg}", file=sys.stderr)
    return 0
