"""Benchmark: projections onto the Birkhoff polytope, psdsos's dual Newton against CVXPY.

Euclidean (a QP) and KL (an exponential-cone program) projections of k x k score matrices
(N(0, 1) entries, and N(0, 5^2)) onto the doubly stochastic matrices, for k in {10, 30, 100}:
``psdsos.structured.polytopes.Birkhoff(k)`` (Newton on the 2k-dimensional dual, marginals to
1e-10) against the same program in CVXPY solved by Clarabel at tolerance 1e-10, the way a
fair user would run it: the problem built once with a ``cp.Parameter`` for the scores
(compiled on a first solve, not timed) and re-solved per matrix; for reference also the
one-off call (the problem built and solved from scratch for each matrix).  Reported: median wall
milliseconds per matrix over the repeats, the ratio, the marginal errors of both answers
(max |P 1 - 1|, |P^T 1 - 1|), the largest entry difference and the largest relative
difference of the objectives (negative: psdsos's answer is the better one).  One BLAS thread
(threadpoolctl), the two methods timed alternately in the same run.

Usage::

    python benchmarks/projections.py            # full run (about a minute)
    python benchmarks/projections.py --quick    # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import cvxpy as cp
import numpy as np
from threadpoolctl import threadpool_limits

from psdsos.structured.polytopes import Birkhoff

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def marginal_error(P):
    return max(np.abs(P.sum(axis=0) - 1).max(), np.abs(P.sum(axis=1) - 1).max())


def objective(P, theta, kl):
    """The projection's objective (Euclidean: 1/2 ||P - theta||^2; KL: <P, log P - theta>)."""
    if kl:
        return float(np.sum(P * np.log(np.maximum(P, 1e-300))) - np.sum(P * theta))
    return 0.5 * float(np.sum((P - theta) ** 2))


def cvxpy_projector(k, kl):
    T = cp.Parameter((k, k))
    P = cp.Variable((k, k), nonneg=True)
    obj = (-cp.sum(cp.entr(P)) - cp.sum(cp.multiply(P, T)) if kl
           else 0.5 * cp.sum_squares(P - T))
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(P, axis=0) == 1, cp.sum(P, axis=1) == 1])

    def solve(theta):
        T.value = theta
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prob.solve(solver="CLARABEL", **TIGHT)
        return np.asarray(P.value)

    return solve


def cvxpy_one_off(theta, kl):
    """The same program built and solved from scratch (a one-off call, compilation included)."""
    k = theta.shape[0]
    P = cp.Variable((k, k), nonneg=True)
    obj = (-cp.sum(cp.entr(P)) - cp.sum(cp.multiply(P, theta)) if kl
           else 0.5 * cp.sum_squares(P - theta))
    prob = cp.Problem(cp.Minimize(obj), [cp.sum(P, axis=0) == 1, cp.sum(P, axis=1) == 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL", **TIGHT)
    return np.asarray(P.value)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    ap.add_argument("--repeat", type=int, default=5, help="matrices per row (default 5)")
    ap.add_argument("--out", default="bench-out/projections.md")
    args = ap.parse_args(argv)
    sizes = [4, 6] if args.quick else [10, 30, 100]
    repeat = 2 if args.quick else args.repeat
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"1 BLAS thread; numpy {np.__version__}, cvxpy {cp.__version__}",
        "",
        "## Birkhoff projections: psdsos (dual Newton, tol 1e-10) vs CVXPY + Clarabel "
        "(tol 1e-10, parametrized problem re-solved)",
        "",
        "| k | geometry | score scale | psdsos ms | CVXPY ms | CVXPY / psdsos "
        "| CVXPY one-off ms | one-off / psdsos "
        "| psdsos marginal err. | CVXPY marginal err. | max abs P diff "
        "| objective: psdsos - CVXPY (relative) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for k in sizes:
            for kl in (False, True):
                proj = Birkhoff(k).project_kl if kl else Birkhoff(k).project_euclidean
                ref = cvxpy_projector(k, kl)
                for scale in (1.0, 5.0):
                    thetas = scale * rng.normal(size=(repeat, k, k))
                    ref(thetas[0])  # compile (not timed)
                    proj(thetas[0])
                    tp, tc, to, ep, ec, diff, dobj = [], [], [], [], [], [], []
                    for theta in thetas:
                        w0 = time.perf_counter()
                        P = proj(theta)
                        tp.append(time.perf_counter() - w0)
                        w0 = time.perf_counter()
                        R = ref(theta)
                        tc.append(time.perf_counter() - w0)
                        w0 = time.perf_counter()
                        cvxpy_one_off(theta, kl)
                        to.append(time.perf_counter() - w0)
                        ep.append(marginal_error(P))
                        ec.append(marginal_error(R))
                        diff.append(np.abs(P - R).max())
                        a, b = objective(P, theta, kl), objective(R, theta, kl)
                        dobj.append((a - b) / abs(b))
                    mp, mc, mo = (1e3 * np.median(tp), 1e3 * np.median(tc),
                                  1e3 * np.median(to))
                    row = (f"| {k} | {'KL' if kl else 'Euclidean'} | {scale:g} | {mp:.2f} "
                           f"| {mc:.1f} | {mc / mp:.0f}x | {mo:.1f} | {mo / mp:.0f}x "
                           f"| {max(ep):.1e} | {max(ec):.1e} "
                           f"| {max(diff):.1e} | {max(dobj):.1e} |")
                    lines.append(row)
                    print(row, flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
