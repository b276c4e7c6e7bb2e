"""The problem interfaces of the solvers, declared once and checked once per solve.

:class:`DualProblemProtocol` lists what :func:`psdsos.solvers.solve_dual` requires of a
problem; the optional hooks it uses when present are listed in ``OPTIONAL_DUAL_HOOKS``.
:func:`dual_capabilities` inspects a problem when a solve starts and returns a
:class:`DualCapabilities` record (a missing required method is a ``TypeError`` naming it);
the solvers read the record instead of probing the problem along the way.
:func:`primal_capabilities` does the same for :func:`psdsos.solvers.solve_primal`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["DualProblemProtocol", "DualCapabilities", "LOSS_DUAL_METHODS",
           "OPTIONAL_DUAL_HOOKS", "PrimalCapabilities", "dual_capabilities",
           "primal_capabilities", "require_methods"]


@runtime_checkable
class DualProblemProtocol(Protocol):
    r"""What :func:`psdsos.solvers.solve_dual` requires of a problem.

    The dual is :math:`\min_\Gamma q(\Gamma) + \sum_k \frac{1}{2\lambda_{2,k}}
    \|[\mathcal A_k^*(\Gamma_k) + \lambda_{1,k} I]_-\|_F^2`.  The SoS blocks are given
    either as the attributes ``Phi`` (m, r) and ``d`` (one block, Gamma of shape (m, d, d),
    as :class:`psdsos.solvers.DualProblem`) or as ``blocks``, a sequence of
    :class:`psdsos.solvers.DualBlock` (Gamma a list of blocks, as
    :class:`psdsos.solvers.BlockDualProblem`).

    Optional hooks (``OPTIONAL_DUAL_HOOKS``), used when present:

    ``smooth_value(G) -> float``
        q alone (line search); defaults to ``smooth(G)[0]``.
    ``prox(V, step)`` and ``nonsmooth_value(G)``
        q is not smooth: accelerated proximal gradient on D = f + h (both required; an
        attribute ``prox = None`` says that this instance's q is smooth).
    ``quadratic_set() -> (M, c, project) | None``
        h is quadratic on scaled sets (Huber losses): proximal steps in the metric of the
        curvature bound.
    ``dual_floors() -> (objective floor, residual floor)``
        Absolute floors of the stopping test's denominators (data scales).
    ``smooth_hessian_factor() -> U | None`` and ``curvature_shift() -> float``
        grad^2 q = mu I + U U^T (or bounded by shift I + U U^T): the preconditioner.
    ``coupled`` (bool attribute)
        The primal point recovered from Gamma satisfies the coupling constraints only at
        the optimum: the solver also requires the relative residual <= tol.
    ``recover(G)``
        The primal coefficients from Gamma (used by the estimators, not the solver).
    """

    lam1: float
    lam2: float

    def smooth(self, G: Any) -> tuple[float, Any]:
        """(q(G), grad q(G))."""
        ...

    def smooth_lipschitz(self) -> float:
        """An upper bound on the Lipschitz constant of grad q."""
        ...

    def strong_convexity(self) -> float:
        """Strong convexity modulus of q (0 if not strongly convex)."""
        ...

    def primal_objective(self, G: Any, B: Any, FB: Any) -> float:
        """Primal objective at the point recovered from (G, B); FB = A(B)."""
        ...


#: The optional hooks of a dual problem (see :class:`DualProblemProtocol`).
OPTIONAL_DUAL_HOOKS = ("smooth_value", "prox", "nonsmooth_value", "quadratic_set",
                       "dual_floors", "smooth_hessian_factor", "curvature_shift", "coupled",
                       "recover")

_REQUIRED_DUAL = ("smooth", "smooth_lipschitz", "strong_convexity", "primal_objective")


@dataclass(frozen=True)
class DualCapabilities:
    """What a dual problem offers (:func:`dual_capabilities`)."""

    blocks: bool  # several blocks (``blocks``) rather than ``Phi`` and ``d``
    proximal: bool  # prox and nonsmooth_value: proximal steps
    coupled: bool
    smooth_value: Callable[[Any], float] | None
    quadratic_set: Callable[[], Any] | None
    dual_floors: Callable[[], tuple[float, float]] | None
    smooth_hessian_factor: Callable[[], np.ndarray | None] | None
    curvature_shift: Callable[[], float] | None


def _hook(problem: Any, name: str) -> Any:
    value = getattr(problem, name, None)
    return value if callable(value) else None


#: What ``solve_dual_loss`` requires of the dual of convex regression with a general loss
#: (``psdsos.problems._convex_loss.ConvexRegressionLossProblem``).
LOSS_DUAL_METHODS = ("coupling", "coupling_value", "lipschitz", "prox", "conjugate_value",
                     "primal_point", "primal_value", "dual_floors", "initial_point")


def require_methods(problem: Any, names: tuple[str, ...], what: str) -> None:
    """TypeError naming the methods of ``names`` that ``problem`` does not provide."""
    missing = [n for n in names if not callable(getattr(problem, n, None))]
    if missing:
        raise TypeError(f"{type(problem).__name__} cannot be solved by {what}: it provides no "
                        f"{', '.join(m + '()' for m in missing)}")


def dual_capabilities(problem: Any, what: str = "solve_dual") -> DualCapabilities:
    """Check ``problem`` against :class:`DualProblemProtocol` once and record its optional
    hooks; raises TypeError naming what is missing."""
    require_methods(problem, _REQUIRED_DUAL, what)
    blocks = hasattr(problem, "blocks")
    missing = [a for a in (("lam1", "lam2") if blocks else ("Phi", "d", "lam1", "lam2"))
               if not hasattr(problem, a)]
    if missing:
        raise TypeError(f"{type(problem).__name__} cannot be solved by {what}: it has no "
                        f"attribute {', '.join(missing)} (one block: Phi, d, lam1, lam2; "
                        "several: blocks)")
    prox, nonsmooth = _hook(problem, "prox"), _hook(problem, "nonsmooth_value")
    if prox is not None and nonsmooth is None:
        raise TypeError(f"{type(problem).__name__} provides prox() but no nonsmooth_value(): "
                        "a non-smooth q needs both (prox = None: q is smooth)")
    return DualCapabilities(
        blocks=blocks, proximal=prox is not None,
        coupled=bool(getattr(problem, "coupled", False)),
        smooth_value=_hook(problem, "smooth_value"),
        quadratic_set=_hook(problem, "quadratic_set"),
        dual_floors=_hook(problem, "dual_floors"),
        smooth_hessian_factor=_hook(problem, "smooth_hessian_factor"),
        curvature_shift=_hook(problem, "curvature_shift"),
    )


@dataclass(frozen=True)
class PrimalCapabilities:
    """What a problem offers :func:`psdsos.solvers.solve_primal` beyond the required
    ``cvxpy_problem()`` and ``evaluate_primal(B, params)``: the pieces of its certificate
    (hooks, called at each certificate: they may depend on the last solve)."""

    certifier: Callable[[], Any]  # the dual problem that certifies (the problem itself)
    dual_point: Callable[..., Any] | None  # multipliers Gamma at a primal point
    primal_residual: Callable[..., float] | None
    rounding_floor: Callable[[], float]
    program_objective: Callable[[np.ndarray], float] | None
    wide_certifier: Callable[[], Any]  # a second certifier (None: there is none)


def primal_capabilities(problem: Any) -> PrimalCapabilities:
    """Check ``problem`` for :func:`psdsos.solvers.solve_primal` once and record its
    certificate hooks; raises TypeError naming what is missing."""
    require_methods(problem, ("cvxpy_problem", "evaluate_primal"), "solve_primal")
    return PrimalCapabilities(
        certifier=_hook(problem, "certifier") or (lambda: problem),
        dual_point=_hook(problem, "dual_point"),
        primal_residual=_hook(problem, "primal_residual"),
        rounding_floor=_hook(problem, "rounding_floor") or (lambda: 0.0),
        program_objective=_hook(problem, "program_objective"),
        wide_certifier=_hook(problem, "wide_certifier") or (lambda: None),
    )
