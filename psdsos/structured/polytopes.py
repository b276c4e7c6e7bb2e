r"""Marginal polytopes of discrete output spaces: MAP oracles, CVXPY constraints, projections.

Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), section 4: every
discrete output space :math:`\mathcal Y` is encoded by a 0/1 embedding
:math:`\varphi(y) \in \{0, 1\}^p` and its *marginal polytope* (eq. 8)

.. math::

    \mathcal M = \operatorname{conv}\,\varphi(\mathcal Y),

whose vertices are exactly the encoded structures.  Each polytope below offers

* ``map_oracle(scores)``: the MAP / linear-maximization oracle (eq. 2)
  :math:`\operatorname{argmax}_{v \in \operatorname{vert}\mathcal M} \langle \theta, v\rangle`,
  batched over the leading axis, with deterministic tie-breaking (documented per class);
* ``cvxpy_constraints(mu)``: the polytope as CVXPY constraints on a variable of shape
  ``shape`` (so the same maximization can be solved as a linear program, see
  :class:`PolytopeLP`);
* ``round(mu)``: the vertex nearest (Euclidean) to a point ``mu`` of the polytope.  For 0/1
  vertices :math:`\|v - \mu\|^2 = \langle v, \mathbf 1 - 2\mu\rangle + \|\mu\|^2`, so the
  nearest vertex is ``map_oracle(mu - 1/2)``;
* ``project_euclidean(theta)`` and ``project_kl(theta)``: the Euclidean and KL projections
  (eq. 5) the projection-based Fenchel-Young losses of the same paper need, on every
  polytope here: closed forms (simplex, unit cube, row simplex), sorting with pool adjacent
  violators (permutahedron, order simplex, knapsack KL), a one-dimensional search
  (knapsack Euclidean) and Newton's method on the dual (Birkhoff polytope).

All functions take arrays of shape ``(m, *shape)`` (a batch of score vectors) or ``shape``
(a single one) and return the same leading shape.

The module also holds the plain, batched projections :func:`project_simplex` (rows onto the
probability simplex; :meth:`Simplex.project_euclidean` uses it) and :func:`project_box`.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import isotonic_regression, linear_sum_assignment
from sklearn.exceptions import ConvergenceWarning

from psdsos.solvers import SolverStatusError
from psdsos.structured._common import as_finite
from psdsos.structured._projections import (
    project_birkhoff,
    project_knapsack_kl,
    project_order_simplex_kl,
    project_permutahedron_euclidean,
    project_permutahedron_kl,
)

__all__ = [
    "project_box",
    "project_simplex",
    "Polytope",
    "Simplex",
    "UnitCube",
    "Knapsack",
    "Birkhoff",
    "OrderSimplex",
    "RowSimplex",
    "Permutahedron",
    "PolytopeLP",
    "LP_SOLVERS",
]

#: CVXPY solvers accepted for the LP decoding (HIGHS returns vertex solutions).
LP_SOLVERS = ("HIGHS", "CLARABEL", "SCIPY")
#: Solver options of the decoding LP (scores are rescaled to max |theta| = 1 first).
_LP_OPTIONS = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}


_HIGHS_QUIET = threading.Lock()
_HIGHS_BANNER_DONE = False


def _silence_highs_banner():
    """Swallow the banner HiGHS prints to stdout once per process.

    highspy prints its copyright banner when the first ``highspy.Highs`` object of the
    process is constructed, before any option (``output_flag``, ``log_to_console``) can
    be set; CVXPY's HiGHS interface constructs one per solve.  The first construction is
    done here with file descriptor 1 pointed at ``os.devnull``; later ones print nothing.
    """
    global _HIGHS_BANNER_DONE
    if _HIGHS_BANNER_DONE:
        return
    with _HIGHS_QUIET:
        if _HIGHS_BANNER_DONE:
            return
        try:
            import highspy
        except ImportError:  # CVXPY reports the missing solver itself
            _HIGHS_BANNER_DONE = True
            return
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError, AttributeError):
            saved = None
        try:
            if saved is not None:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
            highspy.Highs()
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
        _HIGHS_BANNER_DONE = True


# --------------------------------------------------------------------------------------
# closed-form projections (plain functions, batched over rows)
# --------------------------------------------------------------------------------------
def project_box(Z: ArrayLike, lo: float, hi: float) -> np.ndarray:
    r"""Euclidean projection onto the box :math:`[lo, hi]^k`: entry-wise clipping.

    Parameters
    ----------
    Z : array-like of shape (..., k)
    lo, hi : float
        Bounds, ``lo <= hi``.

    Returns
    -------
    ndarray of the shape of ``Z``.
    """
    Z = as_finite(Z, "Z")
    if not lo <= hi:
        raise ValueError(f"lo must be <= hi, got lo={lo!r}, hi={hi!r}")
    return np.clip(Z, lo, hi)


def project_simplex(Z: ArrayLike) -> np.ndarray:
    r"""Euclidean projection of each row onto the probability simplex (sorting algorithm).

    .. math::

        \Pi_\Delta(z) = \max(z - \tau, 0), \qquad
        \tau = \frac{1}{\rho}\Big(\sum_{j \le \rho} z_{(j)} - 1\Big), \quad
        \rho = \max\Big\{j : z_{(j)} - \tfrac1j\big(\textstyle\sum_{l \le j} z_{(l)} - 1\big)
               > 0\Big\},

    with :math:`z_{(1)} \ge z_{(2)} \ge \dots` the sorted entries (Held, Wolfe and Crowder,
    1974; Duchi et al., 2008).

    Parameters
    ----------
    Z : array-like of shape (k,) or (n, k)

    Returns
    -------
    P : ndarray of the shape of ``Z``
        Non-negative rows summing to one.
    """
    Z = as_finite(Z, "Z")
    one = Z.ndim == 1
    Z2 = np.atleast_2d(Z)
    if Z2.ndim != 2 or Z2.shape[1] < 1:
        raise ValueError(f"Z must have shape (k,) or (n, k) with k >= 1, got {Z.shape}")
    # shift by the row max: the projection is unchanged by this reparametrization
    # (tau shifts with it) and large inputs (1e9) stay exact
    shift = Z2.max(axis=1, keepdims=True)
    U = -np.sort(-(Z2 - shift), axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    j = np.arange(1, Z2.shape[1] + 1)
    cond = U - css / j > 0
    rho = Z2.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    tau = css[np.arange(len(Z2)), rho - 1] / rho
    P = np.maximum(Z2 - shift - tau[:, None], 0.0)
    return P[0] if one else P


def _batch(theta, shape, name="scores"):
    """``theta`` as a float array of shape ``(m, *shape)`` and whether the input was unbatched."""
    t = np.asarray(theta, dtype=np.float64)
    single = t.shape == tuple(shape)
    if single:
        t = t[None]
    if t.shape[1:] != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} or (m, *{tuple(shape)}), "
                         f"got {np.shape(theta)}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t, single


def _unbatch(out, single):
    return out[0] if single else out


class Polytope:
    """Base class: a marginal polytope with 0/1 vertices in :math:`\\mathbb R^{shape}`."""

    shape: tuple = ()

    def map_oracle(self, scores: ArrayLike) -> np.ndarray:
        """Vertex maximizing ``<scores, v>`` (eq. 2), batched; ties broken deterministically."""
        t, single = _batch(scores, self.shape)
        return _unbatch(self._map(t), single)

    def round(self, mu: ArrayLike) -> np.ndarray:
        """Nearest vertex to ``mu`` (Euclidean): ``map_oracle(mu - 1/2)`` for 0/1 vertices."""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._map(t - 0.5), single)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        """List of CVXPY constraints describing the polytope on ``mu`` (shape ``shape``)."""
        raise NotImplementedError

    def contains(self, mu: ArrayLike, atol: float = 1e-9) -> np.ndarray | bool:
        """Boolean array: does each point of the batch lie in the polytope (to ``atol``)?"""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._contains(t, atol), single)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{\mu \in \mathcal M} \|\mu - \theta\|_2` (eq. 5)."""
        raise NotImplementedError(
            f"Euclidean projection onto the {type(self).__name__} polytope is not implemented yet"
        )

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{\mu \in \mathcal M} KL(\mu, e^{\theta - 1})` (eq. 5)."""
        raise NotImplementedError(
            f"KL projection onto the {type(self).__name__} polytope is not implemented yet"
        )

    # subclasses implement these on batches of shape (m, *shape)
    def _map(self, t):
        raise NotImplementedError

    def _contains(self, t, atol):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}{self.shape}"


class Simplex(Polytope):
    r"""Probability simplex :math:`\triangle^k = \{\mu \ge 0, \langle \mu, \mathbf 1\rangle = 1\}`.

    Marginal polytope of multiclass classification with :math:`\varphi(y) = e_y` (section 4).
    MAP = argmax; ties go to the smallest index.  Euclidean projection = sparsemax, KL
    projection = softmax.
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.shape = (self.k,)

    def _map(self, t):
        out = np.zeros_like(t)
        out[np.arange(t.shape[0]), np.argmax(t, axis=1)] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu) == 1]

    def _contains(self, t, atol):
        return np.all(t >= -atol, axis=1) & (np.abs(t.sum(axis=1) - 1.0) <= atol * self.k)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_simplex(t), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        e = np.exp(t - t.max(axis=1, keepdims=True))
        return _unbatch(e / e.sum(axis=1, keepdims=True), single)


class UnitCube(Polytope):
    r"""Unit cube :math:`[0, 1]^k`: multilabel with :math:`\varphi(y) = y \in \{0,1\}^k`.

    MAP = thresholding, label i predicted iff :math:`\theta_i > 0` (a tie, 0, is not
    predicted).  Euclidean projection = clipping, KL projection =
    :math:`\min(1, e^{\theta - 1})` (section 4).
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.shape = (self.k,)

    def _map(self, t):
        return (t > 0).astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, mu <= 1]

    def _contains(self, t, atol):
        return np.all((t >= -atol) & (t <= 1 + atol), axis=1)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(np.clip(t, 0.0, 1.0), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(np.exp(np.minimum(t - 1.0, 0.0)), single)


class Knapsack(Polytope):
    r"""Knapsack polytope :math:`\{\mu \in [0,1]^k : l \le \langle\mu, \mathbf 1\rangle \le u\}`.

    Marginal polytope of the subsets of :math:`[k]` with :math:`l \le |y| \le u` (section 4).
    MAP (the paper's sorting rule): with :math:`\pi` sorting :math:`\theta` in descending
    order (stable: equal scores keep index order), take :math:`\pi_1..\pi_l`, then those of
    :math:`\pi_{l+1}..\pi_u` with :math:`\theta > 0`.  Euclidean projection by Proposition 3
    (clip, then if the count bound is violated project onto
    :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf 1\rangle = m\}` by bisection on the shift).

    Parameters
    ----------
    k : int
    lower, upper : int
        :math:`0 \le l \le u \le k`.
    """

    def __init__(self, k: int, lower: int, upper: int) -> None:
        self.k = int(k)
        self.lower = int(lower)
        self.upper = int(upper)
        if not 0 <= self.lower <= self.upper <= self.k:
            raise ValueError(
                f"knapsack bounds must satisfy 0 <= lower <= upper <= k = {self.k}, "
                f"got lower={lower}, upper={upper}"
            )
        self.shape = (self.k,)

    def _map(self, t):
        order = np.argsort(-t, axis=1, kind="stable")
        rank = np.empty_like(order)
        rank[np.arange(t.shape[0])[:, None], order] = np.arange(self.k)
        take = (rank < self.lower) | ((rank < self.upper) & (t > 0))
        return take.astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        s = cp.sum(mu)
        return [mu >= 0, mu <= 1, s >= self.lower, s <= self.upper]

    def _contains(self, t, atol):
        s = t.sum(axis=1)
        return (np.all((t >= -atol) & (t <= 1 + atol), axis=1)
                & (s >= self.lower - atol * self.k) & (s <= self.upper + atol * self.k))

    def project_euclidean(self, theta: ArrayLike, *, tol: float = 1e-12,
                          max_iter: int = 200) -> np.ndarray:
        """Proposition 3; ``tol`` / ``max_iter``: bisection tolerance on the shift, iterations."""
        t, single = _batch(theta, self.shape, "theta")
        nu = np.clip(t, 0.0, 1.0)
        s = nu.sum(axis=1)
        out = nu.copy()
        for m, rows in ((self.upper, s > self.upper), (self.lower, s < self.lower)):
            if not np.any(rows):
                continue
            tr = t[rows]
            # sum(clip(t - tau, 0, 1)) is non-increasing in tau, = k at lo and 0 at hi
            lo = tr.min(axis=1) - 1.0
            hi = tr.max(axis=1)
            for _ in range(max_iter):
                mid = 0.5 * (lo + hi)
                big = np.clip(tr - mid[:, None], 0.0, 1.0).sum(axis=1) > m
                lo = np.where(big, mid, lo)
                hi = np.where(big, hi, mid)
                if np.all(hi - lo <= tol * (1.0 + np.abs(hi))):
                    break
            out[rows] = np.clip(tr - 0.5 * (lo + hi)[:, None], 0.0, 1.0)
        return _unbatch(out, single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`u = \min(1, e^{\theta - 1 - \tau})`, :math:`\tau` from the active bound
        of the sum (0 if none), exact by sorting (:func:`_projections.project_knapsack_kl`)."""
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_knapsack_kl(t, self.lower, self.upper), single)


class Birkhoff(Polytope):
    r"""Birkhoff polytope of :math:`k \times k` doubly stochastic matrices (section 4).

    Marginal polytope of permutations with :math:`\varphi(\pi)` the permutation matrix,
    :math:`\varphi(\pi)_{i, \pi_i} = 1`.  MAP is the linear assignment problem
    :math:`\operatorname{argmax}_\pi \sum_i \theta_{i, \pi_i}`, solved exactly by
    :func:`scipy.optimize.linear_sum_assignment` (deterministic for equal inputs).
    Projections: Newton's method on the 2k-dimensional dual, semismooth for the Euclidean
    one and on the log-domain Sinkhorn potentials for KL
    (:func:`psdsos.structured._projections.project_birkhoff`), both marginals within ``tol``
    of 1 (or of the rounding floor 4 k eps max|theta| for huge scores).

    Parameters
    ----------
    k : int
        Size of the matrices.
    tol : float, default=1e-10
        Marginal tolerance of the projections.
    max_iter : int, default=100
        Newton iterations per matrix; a projection short of ``tol`` warns
        (ConvergenceWarning).
    """

    def __init__(self, k: int, *, tol: float = 1e-10, max_iter: int = 100) -> None:
        self.k = int(k)
        self.shape = (self.k, self.k)
        self.tol = float(tol)
        self.max_iter = int(max_iter)

    def _project(self, theta, kl):
        t, single = _batch(theta, self.shape, "theta")
        res = project_birkhoff(t, kl=kl, tol=self.tol, max_iter=self.max_iter)
        if not np.all(res.converged):
            worst = float(res.marginal_error.max())
            warnings.warn(
                f"Birkhoff projection: marginal error {worst:.2e} > tol {self.tol:g} after "
                f"{self.max_iter} Newton iterations; increase max_iter",
                ConvergenceWarning, stacklevel=3,
            )
        return _unbatch(res.P, single)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{P} \tfrac12\|P - \Theta\|^2` over doubly
        stochastic P (batched)."""
        return self._project(theta, kl=False)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\operatorname{argmin}_{P} \langle P, \log P\rangle - \langle P,
        \Theta\rangle` over doubly stochastic P (batched)."""
        return self._project(theta, kl=True)

    def _map(self, t):
        out = np.zeros_like(t)
        for j in range(t.shape[0]):
            rows, cols = linear_sum_assignment(t[j], maximize=True)
            out[j, rows, cols] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu, axis=0) == 1, cp.sum(mu, axis=1) == 1]

    def _contains(self, t, atol):
        return (np.all(t >= -atol, axis=(1, 2))
                & np.all(np.abs(t.sum(axis=1) - 1) <= atol * self.k, axis=1)
                & np.all(np.abs(t.sum(axis=2) - 1) <= atol * self.k, axis=1))


class OrderSimplex(Polytope):
    r"""Order simplex.

    .. math::

        \{\mu \in \mathbb R^{k-1} : 1 \ge \mu_1 \ge \dots \ge \mu_{k-1} \ge 0\}

    Marginal polytope of ordinal regression with the cumulative encoding
    :math:`\varphi(y) = \sum_{i < y} e_i` (labels 0..k-1, so :math:`\varphi(y)` has ``y``
    leading ones; Proposition 4).  MAP: the score of vertex ``y`` is the cumulative sum
    :math:`\sum_{i<y} \theta_i`, O(k); ties go to the smallest label.  Euclidean projection =
    bounded antitonic regression (pool adjacent violators, then clip to [0, 1]).

    Parameters
    ----------
    k : int
        Number of ordered classes (the polytope lives in dimension k - 1 >= 1).
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        if self.k < 2:
            raise ValueError(f"the order simplex needs k >= 2 classes, got k={k}")
        self.shape = (self.k - 1,)

    def map_labels(self, t: np.ndarray) -> np.ndarray:
        """Label (number of leading ones) of the MAP vertex for a batch of scores (m, k-1)."""
        cum = np.concatenate([np.zeros((t.shape[0], 1)), np.cumsum(t, axis=1)], axis=1)
        return np.argmax(cum, axis=1)

    def _map(self, t):
        y = self.map_labels(t)
        return (np.arange(self.k - 1)[None, :] < y[:, None]).astype(np.float64)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        cons = [mu[0] <= 1, mu[self.k - 2] >= 0]
        if self.k > 2:
            cons.append(mu[:-1] >= mu[1:])
        return cons

    def _contains(self, t, atol):
        ok = (t[:, 0] <= 1 + atol) & (t[:, -1] >= -atol)
        if self.k > 2:
            ok &= np.all(t[:, :-1] >= t[:, 1:] - atol, axis=1)
        return ok

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        # antitonic regression, then the clip to [0, 1]: with constant bounds the bounded
        # isotonic regression is the clipped unbounded one
        t, single = _batch(theta, self.shape, "theta")
        out = np.stack([isotonic_regression(row, increasing=False).x for row in t])
        return _unbatch(np.clip(out, 0.0, 1.0), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        r""":math:`\min(1, \exp(\mathrm{antitonic}(\theta - 1)))`
        (:func:`psdsos.structured._projections.project_order_simplex_kl`)."""
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_order_simplex_kl(t), single)


class RowSimplex(Polytope):
    r"""Row-stochastic :math:`k \times k` matrices, :math:`\{P \ge 0, P\mathbf 1 =
    \mathbf 1\}`: a superset of the Birkhoff polytope (section 4, label ranking).

    MAP: each row's argmax (ties to the smallest index).  Projections row by row: sparsemax
    (Euclidean) and softmax (KL).  Its vertices are the 0/1 matrices with one 1 per row,
    not only permutations.
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.shape = (self.k, self.k)

    def _map(self, t):
        out = np.zeros_like(t)
        m = t.shape[0]
        idx = np.argmax(t, axis=2)
        out[np.arange(m)[:, None], np.arange(self.k)[None, :], idx] = 1.0
        return out

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        return [mu >= 0, cp.sum(mu, axis=1) == 1]

    def _contains(self, t, atol):
        return (np.all(t >= -atol, axis=(1, 2))
                & np.all(np.abs(t.sum(axis=2) - 1) <= atol * self.k, axis=1))

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        out = project_simplex(t.reshape(-1, self.k)).reshape(t.shape)
        return _unbatch(out, single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        e = np.exp(t - t.max(axis=2, keepdims=True))
        return _unbatch(e / e.sum(axis=2, keepdims=True), single)


class Permutahedron(Polytope):
    r"""Permutahedron :math:`\mathcal P(w) = \operatorname{conv}\{w_\sigma :
    \sigma \text{ a permutation}\}` (section 4, label ranking with
    :math:`\varphi(\sigma) = w_\sigma`).

    MAP: the rearrangement inequality, the largest entry of w where the score is largest
    (stable sort: ties to the smaller index).  Projections by sorting and pool adjacent
    violators (Blondel, Teboul, Berthet and Djolonga, ICML 2020): Euclidean with
    :func:`scipy.optimize.isotonic_regression`, KL in the log domain; exact.

    Parameters
    ----------
    w : array-like of shape (k,), optional
        Default ``(k, k-1, ..., 1)`` when only ``k`` is given.
    k : int, optional
    """

    def __init__(self, w: ArrayLike | None = None, *, k: int | None = None) -> None:
        if w is None:
            if k is None:
                raise ValueError("Permutahedron needs w or k")
            w = np.arange(int(k), 0, -1, dtype=np.float64)
        w = as_finite(w, "w")
        if w.ndim != 1 or w.size < 1:
            raise ValueError(f"w must be a non-empty vector, got shape {w.shape}")
        self.w = -np.sort(-w)
        self.k = w.size
        self.shape = (self.k,)

    def _map(self, t):
        out = np.empty_like(t)
        order = np.argsort(-t, axis=1, kind="stable")
        np.put_along_axis(out, order, np.broadcast_to(self.w, t.shape), axis=1)
        return out

    def round(self, mu: ArrayLike) -> np.ndarray:
        """Nearest vertex to ``mu`` (Euclidean): the rearrangement of w in mu's order."""
        t, single = _batch(mu, self.shape, "mu")
        return _unbatch(self._map(t), single)

    def cvxpy_constraints(self, mu: cp.Expression) -> list[cp.Constraint]:
        cons = [cp.sum(mu) == float(self.w.sum())]
        cons += [cp.sum_largest(mu, j) <= float(self.w[:j].sum()) for j in range(1, self.k)]
        return cons

    def _contains(self, t, atol):
        s = -np.sort(-t, axis=1)
        scale = atol * max(1.0, float(np.abs(self.w).sum()))
        top = np.cumsum(s, axis=1) <= np.cumsum(self.w)[None, :] + scale
        return np.all(top[:, :-1], axis=1) & (np.abs(s.sum(axis=1) - self.w.sum()) <= scale)

    def project_euclidean(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_permutahedron_euclidean(t, self.w), single)

    def project_kl(self, theta: ArrayLike) -> np.ndarray:
        t, single = _batch(theta, self.shape, "theta")
        return _unbatch(project_permutahedron_kl(t, self.w), single)


class PolytopeLP:
    r"""The MAP problem as a linear program over a polytope, built once (DPP).

    .. math::

        \max_{\mu \in \mathcal M} \langle \theta, \mu \rangle

    with :math:`\theta` a ``cp.Parameter`` of shape ``polytope.shape``: each :meth:`solve`
    only sets ``theta.value`` and re-solves, so CVXPY compiles the problem once
    (``problem.is_dcp(dpp=True)`` holds).  An LP attains its maximum at a vertex; the
    solution is rounded to the nearest vertex (:meth:`Polytope.round`) and checked to be
    optimal, so an interior-point solver that returns the centre of an optimal face (ties)
    either rounds to an optimal vertex or raises -- never a silent suboptimal answer.

    Parameters
    ----------
    polytope : Polytope
    solver : {"HIGHS", "CLARABEL", "SCIPY"}
        Named CVXPY solver; HIGHS (simplex) returns vertex solutions.  Nothing is printed
        (HiGHS's once-per-process banner is swallowed).  Instances can be pickled and
        deep-copied: the CVXPY problem is rebuilt.
    """

    def __init__(self, polytope: Polytope, solver: str = "HIGHS") -> None:
        self.polytope = polytope
        self.solver = solver
        self._build()

    def _build(self):
        self.mu = cp.Variable(self.polytope.shape, name="mu")
        self.theta = cp.Parameter(self.polytope.shape, name="theta")
        objective = cp.Maximize(cp.sum(cp.multiply(self.theta, self.mu)))
        self.problem = cp.Problem(objective, self.polytope.cvxpy_constraints(self.mu))

    def __getstate__(self):
        # the CVXPY problem holds solver objects that cannot be pickled: rebuilt on unpickling
        return {"polytope": self.polytope, "solver": self.solver}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._build()

    def solve(self, scores: ArrayLike, *, rtol: float = 1e-6) -> np.ndarray:
        """Vertices maximizing ``<scores, v>``, one LP per row of the batch.

        Parameters
        ----------
        scores : ndarray of shape ``(m, *shape)`` or ``shape``
        rtol : float
            The rounded vertex must reach the LP value up to ``rtol * (1 + ||t||_1)``,
            ``t = scores / max|scores|`` (the LP is solved at that unit scale, with solver
            tolerances ``_LP_OPTIONS``; the cold start each time makes repeated solves of
            the same scores return the same vertex).

        Returns
        -------
        ndarray, same shape as ``scores``: 0/1 vertices of the polytope.

        Raises
        ------
        SolverStatusError
            Status other than optimal (status and solver named), or an LP solution that
            does not round to an optimal vertex.
        """
        t, single = _batch(scores, self.polytope.shape)
        out = np.empty_like(t)
        if str(self.solver).upper() == "HIGHS":
            _silence_highs_banner()
        for j in range(t.shape[0]):
            # the argmax is invariant to positive scaling: solve at unit scale so that the
            # solver's absolute tolerances act relative to the scores
            scale = np.abs(t[j]).max()
            tj = t[j] / scale if scale > 0 else t[j]
            self.theta.value = tj
            try:
                self.problem.solve(solver=self.solver, warm_start=False,
                                   **_LP_OPTIONS.get(self.solver, {}))
            except cp.error.SolverError as exc:
                raise SolverStatusError(f"solver {self.solver} failed: {exc}") from exc
            if self.problem.status != cp.OPTIMAL:
                raise SolverStatusError(
                    f"CVXPY status '{self.problem.status}' from solver {self.solver} "
                    "on the decoding LP"
                )
            v = self.polytope.round(self.mu.value)
            gap = self.problem.value - float(np.sum(tj * v))
            if gap > rtol * (1.0 + np.abs(tj).sum()):
                raise SolverStatusError(
                    f"the LP solution of solver {self.solver} does not round to an optimal "
                    f"vertex (gap {gap:.3g}); use lp_solver='HIGHS' (vertex solutions)"
                )
            out[j] = v
        return _unbatch(out, single)
