"""``psdsos convex-fit``: convex regression of a CSV column on the others (PSD paper, section 6)."""

from __future__ import annotations

import sys

from psdsos.cli._common import _check_output_path, _fmt, _save_figure
from psdsos.cli._csv import _fit_columns, _read_csv
from psdsos.cli._fit_common import (
    CV_MAX_ITER,
    _check_cv_size,
    _print_certificates,
    _print_header,
    _report_selection,
    _save_model,
    _search_and_refit,
    _search_grid,
    _solver_settings,
)
from psdsos.cli._scaling import _InUserUnits, _Scaling
from psdsos.estimators import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.estimators._convex import AUTO_TRAIN_CENTERS

#: Nystrom rank of the paper (Appendix D.2: rank 25 when n > 25).
PAPER_N_LANDMARKS = 25
#: Iteration cap of the dual solver for the cross-validation fits of convex-fit (not the refit).
CONVEX_CV_MAX_ITER = CV_MAX_ITER
#: Tolerance (relative duality gap) of the dual's cross-validation fits, at least: a CV score
#: needs less precision than the refit (objective within 1e-4 of its optimum, fitted values
#: within about 1% of the noise level); the CV fits also skip the box certificates.
CONVEX_CV_TOL = 1e-4
#: Held-out points of ``convex-fit --demo`` (error against the noiseless eq. 30).
N_DEMO_TEST = 1000


def _convex_grid(name):
    """(param_grid, description) of convex-fit; lam1 stays 0 as in the paper.

    The "sigma" entries are factors c: the bandwidths are c * scale_bandwidth of the
    standardized features (sqrt(n_features / 2)).  The paper's sigma^2 in {1, 5, 10} on
    inputs uniform in [-2 pi, 2 pi]^2 become the factors sigma / scale of those inputs.
    """
    from psdsos.model_selection import paper_grid_convex
    from psdsos.model_selection._grids import PAPER_CONVEX_INPUT_SCALE

    if name == "paper":
        grid = paper_grid_convex()
        grid["sigma"] = [s / PAPER_CONVEX_INPUT_SCALE for s in grid["sigma"]]
        text = ("paper (Appendix D.2): lam2 in {1e-3, ..., 1e-7}, sigma in {0.276, 0.616, "
                "0.872} x scale (the paper's sigma^2 in {1, 5, 10} relative to the spread of "
                "its inputs), rho in {1e-3, ..., 1e-6} (the paper selects rho = 1e-5 but does "
                "not list its rho grid)")
    else:
        # bandwidths of 1 to 4 x scale: a narrower kernel bends between the constraint points
        # (on a 600-row production table, 0.5 x scale won the CV with a concavity deficit of
        # 8.8 times its curvature scale, and its CV fits were the slow ones), as in
        # ConvexRegressorCV (2 and 4 x scale)
        grid = {"rho": [1e-3, 1e-5], "lam2": [1e-3, 1e-5], "sigma": [1.0, 2.0, 4.0]}
        text = "small: rho in {1e-3, 1e-5}, lam2 in {1e-3, 1e-5}, sigma in {1, 2, 4} x scale"
    return grid, text


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


def _deficit_advice(n_rows: int) -> str:
    """What to try when the fit is not certified convex, by data size: exact features expand
    f on every row (an n x n kernel), sensible up to AUTO_TRAIN_CENTERS rows only."""
    wider = "larger --sigma values (e.g. --sigma 2,4,8) or larger --lam2 values"
    if n_rows <= AUTO_TRAIN_CENTERS:
        return f"try --n-landmarks exact, more rows, or {wider}"
    return (f"try {wider}, or a larger --n-landmarks (with {n_rows} rows --n-landmarks exact "
            f"would expand f on every row, an n x n kernel)")


def _convex_fit(args, out):
    from sklearn.metrics import mean_squared_error

    from psdsos.estimators import ConvexRegressor
    from psdsos.estimators._convex_path import _CVConvexRegressor, is_certified_convex

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

    grid, grid_text, factor_of = _search_grid(args, Xs, _convex_grid)
    est = ConvexRegressor(args.kernel, lam1=0.0, solver=args.solver,
                          primal_solver=args.primal_solver, n_landmarks=r,
                          concave=args.concave, random_state=args.random_state,
                          **_solver_settings(args))
    # the CV fits skip the box certificate (a branch and bound, most of a small fit's time;
    # the refit has it) and the dual's run at CONVEX_CV_TOL at least
    cv_est = _CVConvexRegressor(**est.get_params())
    cv_params = None
    if args.solver == "dual":
        cv_params = {"max_iter": min(est.max_iter, CONVEX_CV_MAX_ITER),
                     "tol": max(est.tol, CONVEX_CV_TOL)}

    shape = "concave" if args.concave else "convex"
    _print_header("convex-fit", source, n, names, target, shape, ignored, grid_text, out)
    features_text = f"Nystrom rank {r}" if r is not None else "exact features"
    print(f"model: ConvexRegressor, {args.kernel} kernel, lam1 = 0, {features_text}, "
          f"solver = {args.solver}"
          + (f" ({args.primal_solver})" if args.solver == "primal" else ""), file=out)
    # the selected fit's deficit is reported below with the command's own advice
    # the refits in CV order until one is certified convex (ConvexRegressorCV's rule)
    res, best, model = _search_and_refit(est, Xs, ys, grid, args, cv_params, out,
                                         silenced=(NonConvexFitWarning,), cv_est=cv_est,
                                         accept=is_certified_convex,
                                         max_refits=args.max_refits,
                                         accepted_text=f"certified {shape}")
    user = _InUserUnits(model, scaling)
    _report_selection(res, best, factor_of, scaling, names, user, X, y, out)
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
    # a certificate of the Hessian on the box, when the estimator gives one
    _print_certificates(model, scaling, names, target, out, default_name=shape)
    if test is not None:
        X_test, y_test = test
        err = mean_squared_error(y_test, user.predict(X_test))
        print(f"held-out error (MSE) against the noiseless function, {len(y_test)} new "
              f"points: {err:.6g}", file=out)
    if args.model is not None:
        written = _save_model(model, args.model, names, target, scaling)
        print(f"model file: {written}", file=out)
    if plot is not None:
        title = (f"{shape} fit of {target}: rho = {_fmt(best['rho'])}, "
                 f"lam2 = {_fmt(best['lam2'])}, sigma = {_fmt(factor_of[best['sigma']])} x scale")
        fig = plot_convex_fit(user, X, y, feature_names=names, target_name=target,
                              title=title)
        _save_figure(fig, plot)
        print(f"figure: {plot}", file=out)
    return 0
