r"""Helpers shared by the continuous output spaces: validation, CVXPY re-solves, and the
negative-weight policy of the manifold spaces.

Negative-weight policy (manifold spaces)
----------------------------------------
SELF weights :math:`\alpha(x) = (K + n\lambda I)^{-1} v(x)` (eq. 3) may be negative and need
not sum to one.  The argmin of eq. 2 does not change when alpha is multiplied by a positive
number, so the manifold decoders work with normalized weights :math:`w` (rows summing to 1),
chosen per test point by :func:`policy_weights`:

* ``weights="signed"`` (default): :math:`w = \alpha / \sum_i \alpha_i` when
  :math:`\sum_i \alpha_i > 0` and :math:`\sum_i |\alpha_i| \le L \sum_i \alpha_i` with
  :math:`L = ` ``SIGNED_L1_BOUND`` = 4.  This is exactly eq. 2.  On a Hadamard manifold
  (affine-invariant SPD) or a compact one (sphere) the objective is then bounded below and
  coercive (:math:`\sum_i w_i d^2(y, y_i) \approx d^2(y, y_0)` far away), so a minimizer
  exists; it need not be unique (negative weights make the objective non-convex) and the
  decoders return the stationary point reached from their initialization.  The bound ``L``
  keeps :math:`\|w\|_1 \le 4`: when the weights nearly cancel (a test point far from every
  training point: all :math:`\alpha_i \approx 0`), eq. 2 extrapolates arbitrarily far and is
  numerically meaningless.
* otherwise, and always with ``weights="positive"``: the positive part,
  :math:`w = \alpha_+ / \sum_i (\alpha_i)_+` -- a Frechet mean, geodesically convex on the
  SPD manifold, within the geodesic hull of the training outputs;
* if no weight is positive: uniform weights :math:`1/n` (the Frechet mean of the training
  outputs).
"""

from __future__ import annotations

import numpy as np

from psdsos._validation import check_scalar
from psdsos.geometry._checks import as_float_array

__all__ = ["SIGNED_L1_BOUND", "policy_weights", "as_finite", "check_float", "solve_parametric"]

#: Largest ||w||_1 = sum|alpha| / sum(alpha) for which signed weights are used as they are.
SIGNED_L1_BOUND = 4.0


def as_finite(A, name):
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


def policy_weights(alpha, policy="signed"):
    """Normalized decoding weights of the negative-weight policy (module docstring).

    Parameters
    ----------
    alpha : ndarray of shape (n_test, n_train)
        Finite SELF weights.
    policy : {"signed", "positive"}

    Returns
    -------
    w : ndarray of shape (n_test, n_train)
        Rows summing to one.
    signed : ndarray of bool, shape (n_test,)
        True where the signed weights were kept.
    """
    a = np.asarray(alpha, dtype=np.float64)
    s = a.sum(axis=1)
    l1 = np.abs(a).sum(axis=1)
    if policy == "signed":
        signed = (s > 0) & (l1 <= SIGNED_L1_BOUND * s)
    else:
        signed = np.zeros(len(a), dtype=bool)
    pos = np.maximum(a, 0.0)
    ps = pos.sum(axis=1)
    w = np.full_like(a, 1.0 / max(a.shape[1], 1))
    has_pos = ps > 0
    w[has_pos] = pos[has_pos] / ps[has_pos, None]
    w[signed] = a[signed] / s[signed, None]
    return w, signed


def solve_parametric(problem, solver, tol):
    """Re-solve a DPP problem with a named solver; strict status checking (psdsos.solvers).

    Clarabel re-solves skip CVXPY's per-solve overhead (psdsos.structured._parametric);
    other solvers, and problems that path does not support, use ``problem.solve``.
    """
    from psdsos.structured._parametric import solve_parametric as _solve

    return _solve(problem, solver, tol)
