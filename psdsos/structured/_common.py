r"""Helpers shared by the continuous output spaces: validation, CVXPY re-solves, and the
negative-weight policy of the manifold spaces.

Negative-weight policy (manifold spaces)
----------------------------------------
SELF weights :math:`\alpha(x) = (K + n\lambda I)^{-1} v(x)` (eq. 3) may be negative and need
not sum to one.  The argmin of eq. 2 does not change when alpha is multiplied by a positive
number, so the manifold decoders work with normalized weights :math:`w` (rows summing to 1),
chosen per test point by :func:`policy_weights`.  Whether eq. 2 has a minimizer with signed
weights depends on the space, so the rule is per space:

* Hadamard manifolds (affine-invariant SPD, :class:`~psdsos.structured.SPDSpace`) and the flat
  log-Euclidean chart (:class:`~psdsos.structured.LogEuclideanSPDSpace`):
  :math:`F(y) = \sum_i w_i d^2(y, y_i)` has a minimizer whenever :math:`\sum_i \alpha_i > 0`,
  whatever :math:`\|\alpha\|_1` (F is coercive: :math:`F(y) \ge d^2(y, y_0) - C d(y, y_0) -
  C'`; proof in the documentation, section "Signed weights").  With ``weights="signed"``
  (default) they decode :math:`w = \alpha / \sum_i \alpha_i`, the objective of eq. 2
  as it stands (log-Euclidean: its exact minimizer, a closed form; affine-invariant: with a
  negative weight F is not geodesically convex: the decoder certifies a stationary point,
  the best of several runs, not proved to be the global minimum, ``SPDSpace.status_``).
  When
  :math:`\sum_i \alpha_i \le 0` eq. 2 has no minimizer in general (F is unbounded below, or
  its infimum is not attained): those test points fall back to the positive part
  :math:`w = \alpha_+ / \sum_i (\alpha_i)_+` (a Frechet mean), or to uniform weights
  :math:`1/n` if no weight is positive, and the space warns
  (:class:`NoMinimizerWarning`) and records which points were decoded as eq. 2
  (``signed_``).
* Compact spaces (sphere, Fisher simplex): a minimizer exists for every weight vector; their
  modules handle signed weights themselves.
* Bures-Wasserstein: always the positive part (its convex SDP needs non-negative weights).
* ``weights="positive"`` (every space): always the positive part (uniform if none is
  positive), a user's choice.

``SIGNED_L1_BOUND`` (= 4) is the bound :math:`\|\alpha\|_1 \le L \sum_i \alpha_i` that the
signed policy used to require before the existence argument above; no built-in space uses
it any more.  It is kept for code that wants that older, more conservative rule:
``policy_weights(alpha, l1_bound=SIGNED_L1_BOUND)``.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos._validation import check_scalar
from psdsos.geometry._checks import as_float_array

__all__ = [
    "SIGNED_L1_BOUND",
    "NoMinimizerWarning",
    "policy_weights",
    "warn_no_minimizer",
    "as_finite",
    "check_float",
    "solve_parametric",
]

#: The former bound of the signed policy: signed weights kept only when
#: ``sum|alpha| <= SIGNED_L1_BOUND * sum(alpha)``.  Deprecated as a default (no built-in space
#: uses it: eq. 2 has a minimizer whenever sum(alpha) > 0 on the spaces that decode signed
#: weights); pass it as ``policy_weights(alpha, l1_bound=SIGNED_L1_BOUND)`` for that rule.
SIGNED_L1_BOUND = 4.0


class NoMinimizerWarning(UserWarning):
    """Eq. 2 has no minimizer for some test points (signed weights with sum(alpha) <= 0):
    they were decoded with the positive part of their weights (``weights="signed"``)."""


def as_finite(A: ArrayLike, name: str) -> np.ndarray:
    """``A`` as a finite float64 array (no shape check); ValueError naming ``name``."""
    return as_float_array(A, name)


def check_float(value, name, *, positive=False):
    """A finite real number (> 0 with ``positive``): psdsos._validation.check_scalar."""
    if positive:
        return check_scalar(value, name, lower=0.0, lower_inclusive=False)
    return check_scalar(value, name)


def check_int(value, name, lower=1):
    """An integer >= ``lower``: psdsos._validation.check_scalar."""
    return check_scalar(value, name, lower=lower, integer=True)


def check_policy(value):
    if value not in ("signed", "positive"):
        raise ValueError(f"weights must be 'signed' or 'positive', got {value!r}")
    return value


def policy_weights(alpha: ArrayLike, policy: str = "signed", *,
                   l1_bound: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    r"""Normalized decoding weights of the negative-weight policy (module docstring).

    Parameters
    ----------
    alpha : ndarray of shape (n_test, n_train)
        Finite SELF weights.
    policy : {"signed", "positive"}
        "signed": :math:`w = \alpha / \sum_i \alpha_i` where :math:`\sum_i \alpha_i > 0`
        (eq. 2 as it is: it has a minimizer there on Hadamard and flat spaces), the
        positive part elsewhere.  "positive": the positive part everywhere.
    l1_bound : float or None, default=None
        None: the existence rule above.  A number L: signed weights are kept only where
        also :math:`\|\alpha\|_1 \le L \sum_i \alpha_i` (the older rule,
        ``SIGNED_L1_BOUND``).

    Returns
    -------
    w : ndarray of shape (n_test, n_train)
        Rows summing to one: the signed weights normalized, else the positive part
        :math:`\alpha_+ / \sum_i (\alpha_i)_+`, else (no positive weight) uniform weights.
    signed : ndarray of bool, shape (n_test,)
        True where the signed weights were kept.
    """
    a = np.asarray(alpha, dtype=np.float64)
    s = a.sum(axis=1)
    if policy == "signed":
        signed = s > 0
        if l1_bound is not None:
            bound = check_scalar(l1_bound, "l1_bound", lower=1.0)
            signed &= np.abs(a).sum(axis=1) <= bound * s
    else:
        signed = np.zeros(len(a), dtype=bool)
    pos = np.maximum(a, 0.0)
    ps = pos.sum(axis=1)
    w = np.full_like(a, 1.0 / max(a.shape[1], 1))
    has_pos = ps > 0
    w[has_pos] = pos[has_pos] / ps[has_pos, None]
    w[signed] = a[signed] / s[signed, None]
    return w, signed


def warn_no_minimizer(space, alpha, signed, stacklevel=3):
    """:class:`NoMinimizerWarning` when the signed policy fell back for some test points
    (sum(alpha) <= 0: eq. 2 has no minimizer there)."""
    if space.weights != "signed":
        return
    bad = int(np.sum(~signed))
    if bad:
        s = np.asarray(alpha).sum(axis=1)[~signed]
        warnings.warn(
            f"{type(space).__name__}: for {bad} test point(s) the SELF weights sum to <= 0 "
            f"(largest sum {float(s.max()):.3g}), where eq. 2 has no minimizer; they were "
            f"decoded with the positive part of their weights (uniform weights if none is "
            f"positive).  signed_ marks the test points decoded as eq. 2; "
            f"weights='positive' uses the positive part everywhere",
            NoMinimizerWarning,
            stacklevel=stacklevel,
        )


def solve_parametric(problem, solver, tol):
    """Re-solve a DPP problem with a named solver; strict status checking (psdsos.solvers).

    Clarabel re-solves skip CVXPY's per-solve overhead (psdsos.structured._parametric);
    other solvers, and problems that path does not support, use ``problem.solve``.
    """
    from psdsos.structured._parametric import solve_parametric as _solve

    return _solve(problem, solver, tol)
