"""Certificate records of the shape constraints.

A certificate is a lower bound of a constraint function g over the box of the training data
(standardized units here; the estimator converts): proved by a branch and bound over cells
(:func:`psdsos.sos.certify_box`) where it finishes ("certified"), else the smallest value the
exchange's search and the covering found ("sampled": an estimate, not a proof).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from psdsos.sos import kernel_constraint_certificate
from psdsos.sos._constraint import KernelExpansion, ShapeConstraint, constraint_function

__all__ = ["ShapeCertificate", "certifiable", "certify_constraint", "constraint_scale"]


@dataclass(frozen=True)
class ShapeCertificate:
    """The certificate of one shape constraint over the training data's box.

    Attributes
    ----------
    bound : float
        Lower bound of the constraint function over the box, in the user's units (d_p f for
        "increasing[p]", -d_p f for "decreasing[p]", lambda_min(Hess_S f) for "convex[S]",
        lambda_min(-Hess_S f) for "concave[S]", f - lower, upper - f), of the raw fit.  Proved
        when ``status == "certified"``; the smallest value found by the search otherwise.
    status : {"certified", "sampled"}
    relative : float
        ``bound`` divided by the constraint function's scale (its mean absolute value over
        the search design, floored): a number without units.
    sampled_min : float
        The smallest value of the constraint function found by the exchange's search and the
        covering (user's units): an upper bound of the true minimum.
    correction : float
        What the certified-shape predictor adds to the constraint function (user's units;
        0 when the raw fit already satisfies it, and for a "sampled" certificate: no
        correction is proved sufficient there).
    n_cells : int
        Cells evaluated by the branch and bound.
    """

    bound: float
    status: str
    relative: float
    sampled_min: float
    correction: float = 0.0
    n_cells: int = 0

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dict (JSON-able)."""
        return asdict(self)


#: The covering is attempted up to this many features (and Hessian blocks up to
#: MAX_HESSIAN_BLOCK features: a cell's bound visits the 2^|S| vertices of its linear model);
#: beyond, the number of cells needed is out of reach and the certificate is "sampled".
MAX_CERTIFIED_FEATURES = 8


MAX_HESSIAN_BLOCK = 6


def certifiable(p: int, d: int) -> bool:
    """Whether the branch and bound is attempted on p features with blocks of size d."""
    return p <= MAX_CERTIFIED_FEATURES and d <= MAX_HESSIAN_BLOCK


#: A constraint with a margin 0 < s < tol * scale at the samples first gets this fraction of
#: the budget to prove g >= 0 outright (no correction at all; see :func:`certify_constraint`).
ZERO_GOAL_FRACTION = 0.0625


#: A constraint with a margin at the samples then gets this fraction of the budget for the
#: goal ``s - tol * scale`` (a bound close to the margin: little or no correction), then
#: the rest for the looser goal (see :func:`certify_constraint`).
TIGHT_GOAL_FRACTION = 0.125


def certify_constraint(fit: KernelExpansion, con: ShapeConstraint, box, sampled_min: float,
                       scale: float, tol: float, max_cells: int, margin_goal: bool = True):
    """(bound, status, sampled_min, n_cells, argmin) of g over the box, standardized units.

    The branch and bound (:func:`psdsos.sos.kernel_constraint_certificate`) settles every
    cell whose proved lower bound reaches the goal ``s - tol * scale``, s the sampled
    minimum, lowered to ``m - tol * scale`` when it finds a value m below s (the goal
    follows its samples: when the search's ``sampled_min`` missed a deeper violation between
    its points, the bound proved is still within tol of the scale of the true minimum, not
    "sampled").  For a margin s > 0 that goal can be far harder than the question asked
    (is g >= 0?): on a 3-feature concave fit whose smallest sampled curvature margin was
    +0.65% of its scale, the goal 1% below that margin was not reached in 2,000,000 cells
    (557 s), the goal 1% below 0 in 29,602 (8 s).  So with ``margin_goal`` and s > 0 the
    goal ``s - tol * scale`` gets ``TIGHT_GOAL_FRACTION`` of the budget, and if that runs
    out, the rest goes to the looser goal ``max(0, s - tol * scale) - tol * scale``
    (``-tol * scale`` for a margin below ``tol * scale``; >= 0, so no correction, for
    s >= 2 tol * scale).  A margin below ``tol * scale``, whose goal ``s - tol * scale`` is
    negative, is first given ``ZERO_GOAL_FRACTION`` of the budget for the goal 0 with the
    slack s / 2 (cells settled at ``min(0, m - s / 2)``, m the smallest value the covering
    finds): the bound then proves the shape without any correction, unless the covering
    finds values below s / 2.  The correction, though small, is a global quadratic or linear
    term: on a concave fit (d = 2, n = 2000, 5% noise) whose sampled margin was +0.24% of
    its scale, the bound -0.76% and its correction raised the test error from 3.5e-5 to
    4.6e-5 of Var f.  ``n_cells`` counts every stage.  ``margin_goal=False``: one run at
    ``s - tol * scale`` (ConvexRegressor's certificate, whose
    :func:`~psdsos.certify._convexity.certificate_tol` sets tol from s, and whose
    convexity deficit is the bound).
    "certified": every cell settled, ``bound`` is proved; "sampled": the budget ran out (or
    the kernel has no closed-form bound), ``bound`` is the smallest value found.
    """
    lo, hi = box
    kw: dict[str, Any] = {"sign": con.sign, "offset": con.offset}
    if con.kind == "derivative":
        kw["feature"] = con.features[0]
    elif con.kind == "hessian":
        kw["subset"] = list(con.features)
    affine = fit.beta if fit.beta.size else np.zeros(lo.shape[0] + 1)
    if not certifiable(lo.shape[0], con.d):
        return sampled_min, "sampled", sampled_min, 0, None
    slack = tol * scale
    staged = margin_goal and sampled_min > 0.0
    # (stage, its fraction of max_cells; None: what is left)
    stages: list[tuple[str, float | None]] = (
        [("zero", ZERO_GOAL_FRACTION)] if staged and sampled_min < slack else [])
    stages += [("tight", TIGHT_GOAL_FRACTION), ("loose", None)] if staged else [("tight", None)]
    smin, used, argmin = sampled_min, 0, None
    for stage, fraction in stages:
        budget = (max_cells - used if fraction is None
                  else min(max(1, int(max_cells * fraction)), max_cells - used))
        if budget < 1:
            break
        goal, atol = {"zero": (0.0, smin / 2), "tight": (smin - slack, slack),
                      "loose": (max(0.0, smin - slack) - slack, slack)}[stage]
        try:
            cert = kernel_constraint_certificate(fit.kernel, fit.C, fit.alpha, affine,
                                                 con.kind, lo, hi, goal=goal,
                                                 atol=max(atol, 0.0), max_cells=budget,
                                                 # a budget below the default grid: one cell
                                                 initial=1 if budget < 4**lo.shape[0]
                                                 else None, **kw)
        except NotImplementedError:
            return sampled_min, "sampled", sampled_min, 0, None
        smin = min(smin, float(cert.sampled_min))
        used += int(cert.n_cells)
        argmin = np.asarray(cert.argmin, dtype=np.float64)
        if cert.status == "certified":
            return float(min(cert.bound, smin)), "certified", smin, used, argmin
    return smin, "sampled", smin, used, argmin


def constraint_scale(fit: KernelExpansion, con: ShapeConstraint, design: np.ndarray) -> float:
    """The yardstick of the relative bound: mean |g| over the design, floored at 1e-2 (the
    standardized units' own scale is 1)."""
    g = constraint_function(fit, con, design)
    return max(float(np.mean(np.abs(g))), 1e-2)
