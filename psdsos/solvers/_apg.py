r"""The accelerated proximal-gradient loop shared by every dual solver of psdsos.

The solvers (:func:`psdsos.solvers.solve_dual` with gradient or proximal steps,
``solve_dual_loss`` for convex regression with a general loss) differ only in what is
theirs: the gradient, the step (preconditioned, probed, proximal), the certificate (a
relative duality gap, possibly with a relative constraint residual) and the recovery of
the primal point.  They provide these as a *method* object, and :func:`run_apg` runs the
one loop:

* explicit state (:class:`APGState`): the iterate x, the extrapolated point y, the FISTA
  sequence t, the step memory, the best certified point and the history;
* one momentum rule (:func:`momentum`): :math:`(1-\sqrt{\mu\eta})/(1+\sqrt{\mu\eta})` when
  D is mu-strongly convex in the metric of the steps, the FISTA sequence otherwise, and in
  both cases the gradient-mapping restart of O'Donoghue and Candes (2015): restart when
  the gradient mapping g (measured in the metric of the step) makes an acute angle with
  the last move, :math:`\langle g, x_{k+1} - x_k\rangle > 0`;
* one stopping rule: the certified error of the method's :class:`Certificate` (relative
  duality gap, or the larger of it and the relative constraint residual) at most tol;
  the returned point is the best certified one;
* one :class:`~sklearn.exceptions.ConvergenceWarning` naming the settings to change
  (max_iter, tol) when max_iter is reached first;
* one result type, :class:`DualResult` (or a subclass carrying the method's extras).

Iterates are arrays or tuples of arrays (blocks of variables, e.g. (u, Gamma)).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["APGState", "Certificate", "DualResult", "Step", "momentum", "run_apg"]


@dataclass
class DualResult:
    """Outcome of :func:`solve_dual`.

    Attributes
    ----------
    G : ndarray (m, d, d), or a tuple of them (several blocks)
        Dual variable Gamma at the returned point.
    B : ndarray (r d, r d), or a list of them (several blocks)
        Primal PSD matrix recovered from G.
    primal_objective, dual_objective : float
        P(B) and -D(G) (the dual is a maximization; P >= -D always).
    dual_gap : float
        Relative duality gap ``(P + D) / max(|P|, |D|, P_0)`` at the returned point (for
        coupled problems, the larger of ``|gap|`` and the relative constraint residual).
    n_iter : int
        Gradient evaluations (one eigendecomposition with vectors each).
    converged : bool
    message : str
        Readable stopping reason.
    step_size : float
        Last accepted step (reuse it to warm start).
    time : float
        Wall-clock seconds (all of it).
    setup_time : float
        Of which before the first iteration (constants, preconditioner).
    history : dict or None
        Per-iteration ``gap`` and ``dual`` when requested.
    n_hessian : int
        Generalized Hessians formed (``method="lbfgs"``; 0 for the gradient methods).
    method : str
        ``"apg"`` (accelerated gradient or proximal gradient) or ``"lbfgs"``
        (quasi-Newton, :mod:`psdsos.solvers._dual_newton`).
    """

    G: Any
    B: Any
    primal_objective: float
    dual_objective: float
    dual_gap: float
    n_iter: int
    converged: bool
    message: str
    step_size: float
    time: float
    history: dict | None = field(default=None, repr=False)
    setup_time: float = 0.0
    n_hessian: int = 0
    method: str = "apg"


@dataclass
class Certificate:
    """A certified point: the stopping quantity ``err`` and what the result reports."""

    err: float
    point: Any
    B: Any
    primal: float
    dual: float  # -D at ``point``
    message: str  # the stopping reason should err be <= tol
    extras: dict = field(default_factory=dict)  # fields of the method's result subclass
    log: str | None = None  # progress line (verbose)


@dataclass
class Step:
    """The next iterate, the gradient mapping for the restart test (None: ``y - x``, the
    Euclidean mapping up to its positive factor) and the step length (momentum)."""

    x: Any
    mapping: Any
    length: float


@dataclass
class APGState:
    """Explicit state of the loop."""

    x: Any  # last iterate
    y: Any  # extrapolated point, where the next gradient is taken
    eta: float  # step memory of the method (reported as ``step_size``)
    t: float = 1.0  # FISTA sequence
    best: Certificate | None = None
    history: dict[str, list] | None = None
    n_iter: int = 0


class APGMethod(Protocol):
    """What a dual solver gives the loop."""

    mu: float  # strong convexity of D in the metric of the steps (0: FISTA momentum)
    label: str  # appended to "psdsos dual solver" in messages
    err_name: str  # what Certificate.err measures

    def iterate(self, state: APGState, it: int) -> tuple[Certificate | None,
                                                        Callable[[], Step]]:
        """The certificate at this iteration (None when not checked) and the step."""
        ...


def _blocks(v: Any) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _momentum_factor(t: float, mu: float, eta: float) -> tuple[float, float]:
    """The extrapolation factor beta and the next FISTA t."""
    if mu > 0:
        qk = np.sqrt(min(mu * eta, 1.0))
        return (1 - qk) / (1 + qk), t
    t_new = 0.5 * (1 + np.sqrt(1 + 4 * t**2))
    return (t - 1) / t_new, t_new


def momentum(y: Any, xn: Any, x: Any, t: float, mu: float, eta: float,
             mapping: Any = None) -> tuple[Any, Any, float]:
    """Next (y, x, t) of accelerated proximal gradient with the gradient-mapping restart
    (see the module docstring); points are arrays or tuples of arrays."""
    blocks = isinstance(xn, tuple)
    if not blocks:  # one array: the same rule without the tuple bookkeeping
        g = y - xn if mapping is None else mapping
        if float(np.vdot(g, xn - x)) > 0:
            return xn, xn, 1.0
        beta, t = _momentum_factor(t, mu, eta)
        return xn + beta * (xn - x), xn, t
    g = tuple(a - b for a, b in zip(_blocks(y), _blocks(xn), strict=True)) if (
        mapping is None) else _blocks(mapping)
    if sum(float(np.vdot(a, b - c)) for a, b, c in zip(g, _blocks(xn), _blocks(x),
                                                      strict=True)) > 0:
        return xn, xn, 1.0
    beta, t = _momentum_factor(t, mu, eta)
    yn = tuple(b + beta * (b - c) for b, c in zip(_blocks(xn), _blocks(x), strict=True))
    return (yn if blocks else yn[0]), xn, t


def report_end(converged: bool, message: str, done: str, t0: float, every: int,
               label: str, stacklevel: int) -> None:
    """The end of a dual solve, shared by its methods: the verbose last line (``done``: what
    was spent, e.g. "120 iterations") and, short of tol, one ConvergenceWarning naming the
    method (``label``, e.g. " (quasi-Newton)"); ``stacklevel`` counts from the caller."""
    if every:
        say(f"{'converged' if converged else 'stopped'} after {done}, "
            f"{time.perf_counter() - t0:.1f} s: {message}")
    if not converged:
        warnings.warn(f"psdsos dual solver{label} did not converge: {message}. "
                      "Increase max_iter or tol.", ConvergenceWarning,
                      stacklevel=stacklevel + 1)


def run_apg(method: APGMethod, state: APGState, *, tol: float, max_iter: int, every: int,
            t0: float, result_type: type[DualResult] = DualResult,
            stacklevel: int = 2) -> DualResult:
    """Run the loop from ``state`` until the certified error is <= tol or max_iter; return
    the result at the best certified point (``stacklevel`` for the warning counts from the
    caller of this function)."""
    setup_time = time.perf_counter() - t0
    converged = False
    message = ""
    for it in range(1, max_iter + 1):
        state.n_iter = it
        cert, take_step = method.iterate(state, it)
        if cert is not None:
            if state.best is None or cert.err < state.best.err:
                state.best = cert
            if every and cert.log is not None:
                say(cert.log)
            if cert.err <= tol:
                converged, message = True, cert.message
                break
        s = take_step()
        state.y, state.x, state.t = momentum(state.y, s.x, state.x, state.t, method.mu,
                                             s.length, s.mapping)
    best = state.best
    assert best is not None  # every method certifies at its last iteration
    if not converged:
        message = (f"maximum number of iterations {max_iter} reached with "
                   f"{method.err_name} {best.err:.3e} > tol {tol:g}")
    report_end(converged, message, f"{state.n_iter} iterations", t0, every, method.label,
               stacklevel + 1)
    return result_type(
        G=best.point, B=best.B, primal_objective=best.primal, dual_objective=best.dual,
        dual_gap=best.err, n_iter=state.n_iter, converged=converged, message=message,
        step_size=state.eta, time=time.perf_counter() - t0, history=state.history,
        setup_time=setup_time, **best.extras,
    )


def say(text: str) -> None:
    """A progress line on stderr (``verbose``)."""
    print(f"[psdsos dual] {text}", file=sys.stderr, flush=True)
