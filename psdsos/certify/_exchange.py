"""The exchange method: where a constraint function is most violated, and the points added.

Each round searches the constraint function g over a design of the box (and by L-BFGS-B from
the worst design points), adds the points where g is below its threshold (at most one per
``MIN_SPACING`` cell) and warm starts the next solve from the previous dual point padded
with zeros.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from psdsos.certify._records import certify_constraint, constraint_scale
from psdsos.sos._constraint import KernelExpansion, ShapeConstraint, constraint_function

__all__ = ["search_step", "final_records", "most_violated", "add_points", "pad_dual"]


def most_violated(fit: KernelExpansion, con: ShapeConstraint, design: np.ndarray, box,
                  threshold: float, n_add: int,
                  n_local: int = 3) -> tuple[np.ndarray, float, np.ndarray]:
    """Points where g < threshold: the worst design points (at most n_add, spread out)
    and the local minima found from the best n_local of them (L-BFGS-B in the box).

    Returns
    -------
    points : ndarray (k, p)
    g_min : float
        The smallest value of g found (design and local searches).
    argmin : ndarray (p,)
    """
    g = constraint_function(fit, con, design)
    order = np.argsort(g)
    lo, hi = box
    best_x, best_g = design[order[0]].copy(), float(g[order[0]])
    found = []
    for i in order[:n_local]:
        res = minimize(lambda u: float(constraint_function(fit, con, u[None, :])[0]),
                       design[i], method="L-BFGS-B",
                       bounds=list(zip(lo, hi, strict=True)), options={"maxiter": 50})
        if res.fun < best_g:
            best_x, best_g = np.asarray(res.x, dtype=np.float64), float(res.fun)
        if res.fun < threshold:
            found.append(np.asarray(res.x, dtype=np.float64))
    spread = 0.05 * float(np.max(hi - lo)) if np.any(hi > lo) else 0.0
    for i in order:
        if g[i] >= threshold or len(found) >= n_add + n_local:
            break
        if all(np.max(np.abs(design[i] - z)) > spread for z in found):
            found.append(design[i])
    pts = np.array(found).reshape(-1, design.shape[1])
    return pts, best_g, best_x


#: A new constraint point closer than this (sup norm, in bandwidths) to one already there is
#: not added: the constraint nearly holds there already, and nearly repeated points make
#: the SoS features ill-conditioned (a costly B, a slow dual).
MIN_SPACING = 0.1


def add_points(Z: np.ndarray, new: np.ndarray, box) -> np.ndarray:
    """Z with the rows of new that are not within MIN_SPACING of a row of Z (or of an
    earlier row of new); standardized units (bandwidth 1)."""
    tol = MIN_SPACING
    for z in new:
        if Z.shape[0] == 0 or np.min(np.max(np.abs(Z - z), axis=1)) > tol:
            Z = np.vstack([Z, z])
    return Z


def pad_dual(G: list[np.ndarray] | None, points: list[np.ndarray],
             constraints: list[ShapeConstraint]) -> list[np.ndarray] | None:
    """The warm start after points were added: Gamma_k padded with zero matrices."""
    if G is None:
        return None
    out = []
    for Gk, Z, con in zip(G, points, constraints, strict=True):
        extra = Z.shape[0] - Gk.shape[0]
        out.append(np.concatenate([Gk, np.zeros((extra, con.d, con.d))]) if extra else Gk)
    return out


def search_step(fit: KernelExpansion, con: ShapeConstraint, design: np.ndarray, box, *,
                certify: bool, certify_tol: float, max_cells: int,
                exchange_cells: int) -> tuple[np.ndarray, tuple | None]:
    """The exchange's step for one constraint: the violators of the design search, or,
    when it finds none (and ``certify``), the certificate with a budget of
    min(max_cells, exchange_cells) cells (and its smallest point when it proves a violation
    beyond the tolerance).

    Returns
    -------
    points : ndarray (k, p)
        The points to add.
    record : tuple or None
        (bound, status, sampled minimum, cells, scale) when the certificate is final (it
        finished, or had the whole ``max_cells``), else None.
    """
    scale = constraint_scale(fit, con, design)
    thr = -certify_tol * scale
    new, smin, _ = most_violated(fit, con, design, box, thr, n_add=8)
    if new.shape[0] or not certify:
        return new, None
    budget = min(max_cells, exchange_cells)
    bound, status, smin, n_cells, argmin = certify_constraint(
        fit, con, box, smin, scale, certify_tol, budget)
    record = (bound, status, smin, n_cells, scale) if (
        status == "certified" or budget == max_cells) else None
    if argmin is not None and smin < thr:
        pts, _, _ = most_violated(fit, con, argmin[None, :], box, thr, n_add=1, n_local=1)
        return np.vstack([argmin[None, :], pts]), record
    return np.zeros((0, design.shape[1])), record


def final_records(fit: KernelExpansion, constraints: list[ShapeConstraint], box,
                  design: np.ndarray, checks: dict[int, tuple | None], *, certify: bool,
                  certify_tol: float, max_cells: int) -> list[tuple]:
    """(bound, status, sampled minimum, cells, scale) of each constraint after the last
    round: ``checks[k]`` where the exchange's last round computed it on this fit, else the
    design search and (``certify``) the branch and bound with ``max_cells`` cells;
    without ``certify`` the sampled minimum ("sampled")."""
    out = []
    for k, con in enumerate(constraints):
        rec = checks.get(k)
        if rec is None:
            scale = constraint_scale(fit, con, design)
            _, smin, _ = most_violated(fit, con, design, box, -np.inf, n_add=0)
            if certify:
                bound, status, smin, n_cells, _ = certify_constraint(
                    fit, con, box, smin, scale, certify_tol, max_cells)
            else:
                bound, status, n_cells = smin, "sampled", 0
            rec = (bound, status, smin, n_cells, scale)
        out.append(rec)
    return out
