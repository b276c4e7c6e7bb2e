"""Benchmark: convex regression (PSD paper eq. 28), dual solver vs primal SDP (SCS, Clarabel).

Measures in one run, with one BLAS thread everywhere (threadpoolctl), on the data of eq. (30)
(d = 2, X ~ U[-2, 2]^2, y = f_1(||x||) + 0.1 N(0, 1), seed 0), Gaussian kernel sigma = 1,
rho = 1e-4, lam1 = 0, lam2 = 1e-4, affine part fitted, the estimator's default constraint
points (``constraint_points=None``: training points chosen by greedy pivoted Cholesky, at
most 100 with exact features, 2 r with Nystrom rank r) unless a row says "all":

1. time to reach the reference objective J* to 1e-5 relative, for the dual solver and the
   primal through CVXPY with SCS and with Clarabel, n in {50, 200, 1000}: exact features
   on the constraint points for n = 50 and 200, Nystrom r = 50 (B of size 100 x 100) for
   n = 1000, and one row n = 200 with the constraint at all training points (the paper's
   choice, ``constraint_points="train"``), the slow configuration the default avoids.
   J* is the dual solver at tol 1e-9 (its relative duality gap and constraint residual are
   printed: they certify it), and each solver runs at a sequence of tolerances: the first
   run within 1e-5 of J* (and with a relative Hessian-constraint residual <= 1e-4) is
   reported, wall time of the whole fit (features, CVXPY compilation included).  Every primal
   run gets a time budget (a forked process, killed at the budget): "over budget" then, and
   the tighter tolerances of that solver are skipped;
2. the time of a full n = 1000, Nystrom r = 50 fit at tol 1e-4 and the default 1e-6
   (budget 120 s);
3. the default ConvexRegressor in input dimension 10 (n = 200 and 1000, data of eq. (30) as
   ``convex-fit --demo`` draws it, X ~ U[-2 pi, 2 pi]^10), with the default bandwidth
   sigma = "scale" = sqrt(d Var(X) / 2) (``psdsos.kernels.scale_bandwidth``) and, for
   comparison, sigma = 1 (``--dim-sigmas`` selects them): wall and CPU time, iterations,
   certificate (target < 30 s);
4. the certified convexity deficit relative to the curvature scale in d = 3, 4, 5 (same data,
   default estimator, the same bandwidths): eta = max(0, -min_x lambda_min(Hess f(x))) and
   kappa = mean_x ||Hess f(x)||_2 over 4096 scrambled Sobol points of the data's bounding box
   (seed 0), eta / kappa for the default constraint points (pivots among the training points
   and the box's corners) and for the pivots among the training points only (target 1e-3);
5. CNLS (PiecewiseLinearConvexRegressor, cutting planes) for n in {100, 300, 1000}.

Wall and CPU seconds: the machine may be shared with other jobs (CPU time is the steadier
figure); the ratios are measured side by side in this one run.

Usage::

    python benchmarks/convex_regression.py            # full run (~10-15 min, mostly budgets)
    python benchmarks/convex_regression.py --quick    # tiny sizes (CI keeps it from rotting)
    python benchmarks/convex_regression.py --only-dimensions --deficit-n 200  # sections 3-4
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

import psdsos.estimators._convex as convex_module
from psdsos import ConvexRegressor, PiecewiseLinearConvexRegressor
from psdsos.datasets import make_convex_regression
from psdsos.estimators._convex import sobol_points
from psdsos.kernels import scale_bandwidth

SIGMA, RHO, LAM1, LAM2 = 1.0, 1e-4, 0.0, 1e-4
TARGET, RES_MAX = 1e-5, 1e-4


def data(n):
    return make_convex_regression(n, 2, b=2.0, noise=0.1, random_state=0)


def _fit(X, y, kw):
    kw = dict(kw)
    defaults = kw.pop("defaults", False)  # the estimator's defaults (sigma given), else ours
    deficit = kw.pop("deficit", False)
    if kw.pop("no_corners", False):  # the previous default: training points only
        convex_module.AUTO_CORNER_FRACTION = 0.0
    base = {} if defaults else {"sigma": SIGMA, "rho": RHO, "lam1": LAM1, "lam2": LAM2}
    w0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = ConvexRegressor(**{**base, "random_state": 0, **kw}).fit(X, y)
    out = {"obj": m.objective_, "res": m.constraint_residual_, "it": m.n_iter_,
           "gap": m.dual_gap_, "wall": time.perf_counter() - w0,
           "cpu": time.process_time() - c0, "m": len(m.constraint_points_),
           "warned": any(issubclass(w.category, ConvergenceWarning) for w in caught)}
    if deficit:
        out.update(relative_deficit(m, X))
    return out


def relative_deficit(model, X, n_points=4096):
    """eta / kappa at n_points scrambled Sobol points of the data's bounding box (seed 0):
    eta = max(0, -min_x lambda_min(Hess f(x))), kappa = mean_x ||Hess f(x)||_2."""
    Z = sobol_points(X.min(axis=0), X.max(axis=0), n_points, 0)
    w = np.linalg.eigvalsh(model.hessian(Z))
    eta = max(0.0, -float(w[:, 0].min()))
    kappa = float(np.abs(w).max(axis=1).mean())
    return {"eta": eta, "kappa": kappa, "rel_deficit": eta / kappa}


def dim_sigmas(args, X):
    """The bandwidths of the dimension sections: "scale" (the default) as a number, and 1."""
    return [scale_bandwidth(X) if s == "scale" else float(s) for s in args.dim_sigmas]


def _child(conn, X, y, kw):
    try:
        conn.send(_fit(X, y, kw))
    except Exception as exc:  # reported in the table
        conn.send({"error": f"{type(exc).__name__}: {str(exc)[:80]}"})
    conn.close()


def fit_budget(X, y, kw, budget):
    """_fit in a forked process; None if it is still running after `budget` seconds."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, X, y, kw))
    p.start()
    child.close()
    try:
        out = parent.recv() if parent.poll(budget) else None
    except EOFError:  # the child died without an answer (e.g. a solver's allocation abort)
        p.join()
        return {"error": f"solver process died (exit code {p.exitcode})"}
    if out is None:
        p.kill()
    p.join()
    return out


def time_to_accuracy(X, y, ref, tols, kw, budget=None):
    """First tol with |J - J*| / J* <= TARGET and residual <= RES_MAX: a dict, or a reason."""
    last = None
    for tol in tols:
        args = {**kw, "tol": tol}
        out = _fit(X, y, args) if budget is None else fit_budget(X, y, args, budget)
        if out is None:
            return f"over budget ({budget:.0f} s) at tol {tol:g}"
        if "error" in out:
            return f"failed at tol {tol:g}: {out['error']}"
        out["tol"] = tol
        out["rel"] = abs(out["obj"] - ref) / abs(ref)
        last = out
        if out["rel"] <= TARGET and out["res"] <= RES_MAX:
            return out
    return (f"not within {TARGET:g} (tol {last['tol']:g}: rel. err {last['rel']:.1e}, "
            f"res {last['res']:.0e}, {last['wall']:.1f} s)")


def _desc(o):
    if o is None:
        return "over budget"
    if "error" in o:
        return o["error"]
    gap = f"gap {o['gap']:.0e}, " if np.isfinite(o["gap"]) else ""
    return f"J {o['obj']:.8g}, {gap}res {o['res']:.0e}, {o['it']} it, {o['wall']:.1f} s"


def cell(out):
    if isinstance(out, str):
        return out
    it = f", {out['it']} it" if out.get("it") else ""
    return f"{out['wall']:.2f} ({out['cpu']:.2f} cpu, tol {out['tol']:g}{it})"


def ratio(a, b, budget=None):
    """a / b in wall time; a lower bound "> x" when a ran over its budget."""
    if isinstance(b, str):
        return "-"
    if isinstance(a, str):
        return (f"> {budget / b['wall']:.0f}x" if budget and a.startswith("over budget")
                else "-")
    return f"{a['wall'] / b['wall']:.1f}x"


def _dimension_sections(args, dim_sizes, budget, deficit_cases):
    """Input dimension 10 (default estimator) and the convexity deficit in d = 3-5."""
    sig_txt = "sigma: " + ", ".join(
        "'scale' = sqrt(d Var X / 2) (the default)" if s == "scale" else s
        for s in args.dim_sigmas)
    lines = ["", f"## Default ConvexRegressor in input dimension 10 ({sig_txt})", "",
             "Data of eq. (30) as `convex-fit --demo` draws it (X ~ U[-2 pi, 2 pi]^d, noise "
             f"0.1, seed 0); defaults otherwise; budget {budget:.0f} s per fit (target < 30 s).",
             "", "| n | d | sigma | m | wall s | cpu s | iters | rel. gap | residual | warned |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)

    def row(n, d, sigma, out, extra=""):
        if out is None or "error" in out:
            return f"| {n} | {d} | {sigma:.3g} | | {_desc(out)} (budget {budget:.0f} s) |" + extra
        return (f"| {n} | {d} | {sigma:.3g} | {out['m']} | {out['wall']:.1f} | {out['cpu']:.1f} "
                f"| {out['it']} | {out['gap']:.1e} | {out['res']:.1e} | "
                f"{'yes' if out['warned'] else 'no'} |")

    for n, d in dim_sizes:
        X, y = make_convex_regression(n, d, noise=0.1, random_state=0)
        for sigma in dim_sigmas(args, X):
            out = fit_budget(X, y, {"defaults": True, "sigma": sigma}, budget)
            lines.append(row(n, d, sigma, out, " | | | | |"))
            print(lines[-1], flush=True)

    head = ["", "## Certified convexity deficit relative to the curvature scale, d = 3-5", "",
            "eta = max(0, -min lambda_min(Hess f)) and kappa = mean ||Hess f||_2 over 4096 "
            "scrambled Sobol points of the data's bounding box; default ConvexRegressor "
            "(constraint points: pivots among the training points and the box corners; in "
            "d = 5 up to 200 of them while n >= 5 per point) against as many pivots among "
            "the training points only; "
            f"budget {budget:.0f} s per fit (target eta / kappa < 1e-3).", "",
            "| n | d | sigma | constraint points | m | eta / kappa | wall s | cpu s | iters "
            "| warned |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += head
    print("\n".join(head), flush=True)
    for n, d in deficit_cases:
        X, y = make_convex_regression(n, d, noise=0.1, random_state=0)
        for sigma in dim_sigmas(args, X):
            for name, extra in (("training + corners", {}),
                                ("training only", {"no_corners": True})):
                out = fit_budget(X, y, {"defaults": True, "sigma": sigma, "deficit": True,
                                        **extra}, budget)
                if out is None or "error" in out:
                    lines.append(f"| {n} | {d} | {sigma:.3g} | {name} | | {_desc(out)} | | | "
                                 "| |")
                else:
                    lines.append(
                        f"| {n} | {d} | {sigma:.3g} | {name} | {out['m']} | "
                        f"{out['rel_deficit']:.1e} | {out['wall']:.1f} | {out['cpu']:.1f} | "
                        f"{out['it']} | {'yes' if out['warned'] else 'no'} |")
                print(lines[-1], flush=True)
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--out", default="bench-out/convex_regression.md")
    ap.add_argument("--only-dimensions", action="store_true",
                    help="only the sections on input dimension 10 and the deficits in d = 3-5")
    ap.add_argument("--deficit-n", type=int, nargs="+", default=[200, 1000], metavar="N",
                    help="sample sizes of the deficit section (default: 200 1000)")
    ap.add_argument("--dim-sigmas", nargs="+", default=["scale", "1"], metavar="S",
                    help="bandwidths of the dimension sections: 'scale' (the default "
                         "bandwidth) and/or numbers (default: scale 1)")
    ap.add_argument("--dim-budget", type=float, default=300.0, metavar="S",
                    help="time budget of each fit in the dimension sections (default: 300)")
    args = ap.parse_args(argv)
    if args.quick:
        sizes, budget = [(20, None, None), (30, None, None)], 8.0
        big, big_budget, cnls_sizes = (100, 10), 5.0, [30, 60]
        dim_sizes, dim_budget = [(20, 3)], 10.0
        deficit_cases = [(20, 2)]
    else:
        sizes = [(50, None, None), (200, None, None), (1000, 50, None), (200, None, "train")]
        budget = 60.0
        big, big_budget, cnls_sizes = (1000, 50), 120.0, [100, 300, 1000]
        dim_sizes, dim_budget = [(200, 10), (1000, 10)], args.dim_budget
        deficit_cases = [(n, d) for n in args.deficit_n for d in (3, 4, 5)]
    if args.only_dimensions:
        sizes, cnls_sizes, big = [], [], None
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        "(shared with other jobs during this run), 1 BLAS thread; "
        f"numpy {np.__version__}",
        "",
        f"## Time to J* within {TARGET:g} (relative; and Hessian residual <= {RES_MAX:g}), "
        f"d = 2, sigma = {SIGMA:g}, rho = {RHO:g}, lam1 = {LAM1:g}, lam2 = {LAM2:g}",
        "",
        f"Seconds wall (CPU, tolerance reached, iterations); primal budget {budget:.0f} s per "
        "run (forked, killed at the budget).",
        "",
        "| n | features | constraint points | J* (which; the candidates) | dual | SCS "
        "| Clarabel | SCS / dual | Clarabel / dual |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    with threadpool_limits(1):
        for n, r, cp_ in sizes:
            X, y = data(n)
            feats = "exact" if r is None else f"Nystrom r = {r}"
            kw = {"n_landmarks": r, "constraint_points": cp_}
            cps = ConvexRegressor(n_landmarks=r, constraint_points=cp_,
                                  random_state=0)._constraint_points(X)
            where = ("all training points" if cps is X
                     else f"{len(cps)} training points (pivots)")
            # candidates for J*: the dual at tol 1e-9 and Clarabel at tol 1e-8 (each under
            # the budget); J* = the lower objective among those whose relative Hessian
            # residual is <= 1e-6 (a point far from feasible does not certify anything).
            dref = fit_budget(X, y, {**kw, "tol": 1e-9, "max_iter": 20000}, budget)
            cl = fit_budget(X, y, {**kw, "solver": "primal", "primal_solver": "CLARABEL",
                                   "tol": 1e-8}, budget)
            cands = [(o["obj"], name) for o, name in ((dref, "dual 1e-9"),
                                                       (cl, "Clarabel 1e-8"))
                     if o is not None and "error" not in o and o["res"] <= 1e-6]
            if not cands:
                lines.append(f"| {n} | {feats} | {where} | no certified reference (dual: "
                             f"{_desc(dref)}; Clarabel: {_desc(cl)}) | | | | | |")
                print(lines[-1], flush=True)
                continue
            J, refname = min(cands)
            td = time_to_accuracy(X, y, J, [1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
                                  {**kw, "max_iter": 20000}, budget=budget)
            ts = time_to_accuracy(X, y, J, [1e-5, 1e-7], {
                **kw, "solver": "primal", "primal_solver": "SCS", "max_iter": 200000},
                budget=budget)
            if cl is None:
                tc = f"over budget ({budget:.0f} s) at tol 1e-08"
            elif "error" in cl:
                tc = f"failed: {cl['error']}"
            else:
                cl["tol"], cl["rel"] = 1e-8, abs(cl["obj"] - J) / abs(J)
                tc = cl if cl["rel"] <= TARGET and cl["res"] <= RES_MAX else (
                    f"not within {TARGET:g} (rel. err {cl['rel']:.1e}, res {cl['res']:.0e}, "
                    f"{cl['wall']:.1f} s)")
            row = (f"| {n} | {feats} | {where} | {J:.8g} ({refname}; dual 1e-9: {_desc(dref)}; "
                   f"Clarabel: {_desc(cl)}) | {cell(td)} | {cell(ts)} | {cell(tc)} "
                   f"| {ratio(ts, td, budget)} | {ratio(tc, td, budget)} |")
            lines.append(row)
            print(row, flush=True)

        n, r = big or (0, 0)
        X, y = data(max(n, 2))
        if big:
            lines += ["", f"## Full fit, n = {n}, Nystrom r = {r}, dual, default constraint "
                      f"points (target < 30 s)",
                      "", "| n | r | tol | wall s | cpu s | iters | rel. gap | residual |",
                      "|---|---|---|---|---|---|---|---|"]
        for tol in (1e-4, 1e-6) if big else ():
            out = fit_budget(X, y, {"n_landmarks": r, "tol": tol}, big_budget)
            if out is None or "error" in out:
                lines.append(f"| {n} | {r} | {tol:g} | {_desc(out)} (budget {big_budget:.0f} s) "
                             "| | | | |")
            else:
                lines.append(f"| {n} | {r} | {tol:g} | {out['wall']:.2f} | {out['cpu']:.2f} "
                             f"| {out['it']} | {out['gap']:.1e} | {out['res']:.1e} |")
            print(lines[-1], flush=True)

        lines += _dimension_sections(args, dim_sizes, dim_budget, deficit_cases)

        lines += ["", "## CNLS (eq. 27, cutting planes, Clarabel), same data", "",
                  "| n | wall s | cpu s | rounds | pairs |", "|---|---|---|---|---|"]
        for n in cnls_sizes:
            X, y = data(n)
            w0, c0 = time.perf_counter(), time.process_time()
            m = PiecewiseLinearConvexRegressor().fit(X, y)
            lines.append(f"| {n} | {time.perf_counter() - w0:.2f} | "
                         f"{time.process_time() - c0:.2f} | {m.n_rounds_} "
                         f"| {m.n_constraints_} |")
            print(lines[-1], flush=True)

    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
