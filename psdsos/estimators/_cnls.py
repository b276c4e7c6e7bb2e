r"""Convex nonparametric least squares (CNLS), PSD paper section 6, eq. (27).

The piecewise-linear baseline of the convex-regression experiments, fitted by a cutting-plane
loop over the Afriat inequalities (Lee, Johnson, Moreno-Centeno and Kuosmanen, 2013, "A more
efficient algorithm for convex nonparametric least squares"; Bertsimas and Mundru, 2021):
solve the quadratic program with a sparse set of pairs, add the most violated pairs found
over all :math:`n^2` of them, and re-solve until none is violated.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Sequence

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning

from psdsos._config import row_chunks
from psdsos._params import (
    DEPRECATED,
    Bool,
    Interval,
    Options,
    Renamed,
    Verbose,
    renamed_value,
    validate_params,
)
from psdsos._persistence import SavedArray, SavedEstimator, register_loadable
from psdsos._validation import FloatArray, PathLike, validate_data
from psdsos.estimators._cnls_pairs import (
    _DELAUNAY_MAX_DIM,
    _afriat_matrix,
    _feature_signs,
    _FeatureSubset,
    _initial_pairs,
    _NeighborsConstraint,
    _standardize,
)
from psdsos.estimators._common import fitted_input
from psdsos.estimators._weights import check_sample_weight
from psdsos.solvers import PRIMAL_SOLVERS, SolverStatusError, solve_cvxpy

__all__ = ["PiecewiseLinearConvexRegressor"]

# Entries of one (rows x n) block of pairwise values (violation checks, predictions): 512 kB,
# the largest array of the scan (memory O(n) apart from it, never n x n).  Small blocks stay
# in cache, which makes the scan faster than with larger blocks.
_BLOCK_ENTRIES = 1 << 16
# New pairs per round: each violating row adds its q most violated pairs, q = clip(
# ceil(_ADD_TARGET * n / rows violating), 1, _ADD_MAX).
_ADD_TARGET = 1.0
_ADD_MAX = 8
# Screening rounds solve the QP to this relative accuracy (no iterative refinement) while the
# largest violation exceeds max(_SCREEN_SWITCH, tol) (units of std(y)); the certified rounds
# after them are tight.  A screening solution's error in theta is orders of magnitude below
# 0.1 std(y), so violations above 0.1 are real; below it few pairs are still missing, and a
# tight round sees them exactly (one round fewer than switching at 10 tol, which spends a
# screening round on pairs whose violations are below the screening solutions' own error;
# same optimum).
# Below _SCREEN_MIN_N points, and for d > _DELAUNAY_MAX_DIM, every round is tight.
_SCREEN_TOL = 1e-7
_SCREEN_SWITCH = 0.1
_SCREEN_MIN_N = 500


def _row_blocks(n_rows, n_cols):
    """(start, stop) of row blocks of at most _BLOCK_ENTRIES float64 entries
    (:func:`psdsos._config.row_chunks` with that budget)."""
    for sl in row_chunks(n_rows, 8 * max(n_cols, 1), budget_mib=8 * _BLOCK_ENTRIES / 2**20):
        yield sl.start, sl.stop


def _violations(X, theta, Z, active, q, tol):
    r"""Scan all pairs: the largest violation, and per row the q most violated inactive pairs.

    violation_ij = theta_i + zeta_i^T (x_j - x_i) - theta_j (positive: the affine piece of
    x_i lies above theta_j).  ``active`` holds the sorted keys i n + j of the pairs already
    in the QP; they and the diagonal are excluded from the candidates (not from the max).
    The values are formed in row blocks of at most ``_BLOCK_ENTRIES`` entries (never n x n);
    the per-row selection runs only on the rows of a block whose largest violation is > tol.

    Returns
    -------
    vmax : float
        max(0, largest violation over all pairs).
    J, V : ndarray (n, q)
        Per row i, the columns j of its q largest inactive violations (in decreasing order)
        and their values; rows without a violation > tol hold V = -inf.
    """
    n = X.shape[0]
    q = min(q, n - 1)
    vmax = 0.0
    J_out = np.zeros((n, q), dtype=np.intp)
    V_out = np.full((n, q), -np.inf)
    c = theta - np.sum(Z * X, axis=1)  # intercepts: piece i is c_i + zeta_i^T x
    XT = np.ascontiguousarray(X.T)
    for a, b in _row_blocks(n, n):
        V = Z[a:b] @ XT
        V += c[a:b, None]
        V -= theta[None, :]
        rows = np.arange(b - a)
        V[rows, a + rows] = -np.inf
        vmax = max(vmax, float(V.max()))
        lo, hi = np.searchsorted(active, [a * n, b * n])
        k = active[lo:hi]
        V[k // n - a, k % n] = -np.inf
        hot = np.flatnonzero(V.max(axis=1) > tol)
        if hot.size == 0:
            continue
        W = V[hot]
        J = np.argpartition(W, n - q, axis=1)[:, n - q:]
        Vq = np.take_along_axis(W, J, axis=1)
        order = np.argsort(-Vq, axis=1)
        J_out[a + hot] = np.take_along_axis(J, order, axis=1)
        V_out[a + hot] = np.take_along_axis(Vq, order, axis=1)
    return vmax, J_out, V_out


def _solve_dense(X, y, *, solver="CLARABEL", tol=1e-12):
    r"""The dense CNLS program, all n (n - 1) Afriat inequalities at once (reference).

    Written with CVXPY expressions, independently of the cutting-plane code; n (n - 1)
    constraints (about a minute of Clarabel at n = 300, d = 2), so only for small n.  The
    data are used as given (not standardized), hence the tight default ``tol``.

    Returns
    -------
    theta : ndarray (n,), zeta : ndarray (n, d), objective : float
        objective = mean((y - theta)^2) evaluated in numpy.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    I, J = np.nonzero(~np.eye(n, dtype=bool))
    theta = cp.Variable(n)
    Z = cp.Variable((n, p))
    lhs = theta[I] + cp.sum(cp.multiply(Z[I, :], X[J] - X[I]), axis=1)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - theta) / n), [lhs <= theta[J]])
    solve_cvxpy(prob, solver=solver, tol=tol)
    th = np.asarray(theta.value, dtype=np.float64)
    return th, np.asarray(Z.value, dtype=np.float64), float(np.mean((y - th) ** 2))


@register_loadable
class PiecewiseLinearConvexRegressor(RegressorMixin, SavedEstimator, BaseEstimator):
    r"""Convex nonparametric least squares (CNLS), PSD paper eq. (27).

    Solves the least-squares problem over convex functions (eq. 26) on piecewise-affine
    functions, the quadratic program

    .. math::

        \min_{\theta \in \mathbb R^n,\ \zeta_1, \dots, \zeta_n \in \mathbb R^d}
          \frac1n \sum_{i=1}^n (y_i - \theta_i)^2
        \quad \text{s.t.} \quad
          \theta_i + \zeta_i^T (x_j - x_i) \le \theta_j, \qquad i, j \in [n],

    where :math:`\theta_i` is the fitted value at :math:`x_i` (n,) and :math:`\zeta_i` a
    subgradient there (d,): the constraints (the Afriat inequalities
    :math:`f(x_j) \ge f(x_i) + \zeta_i^T (x_j - x_i)`) say that the affine piece of
    :math:`x_i` lies below every :math:`\theta_j`.  The paper's eq. (27) prints
    :math:`x_i - x_j`, a sign slip for a subgradient at :math:`x_i`.  The prediction is the
    max-affine function

    .. math::

        \hat f(x) = \max_{i=1..n} \{\hat\theta_i + \hat\zeta_i^T (x - x_i)\}.

    The fitted values :math:`\hat\theta` are unique, the subgradients :math:`\hat\zeta` are
    not (outside the convex hull of the data, :math:`\hat f` is one of many valid extensions).
    With ``concave=True`` the estimator fits :math:`-y`, and stores and predicts the negation:
    :math:`\hat\zeta_i` are supergradients and :math:`\hat f` is a min of affine pieces.

    Monotonicity (``increasing``, ``decreasing``) adds sign constraints on the slopes at every
    data point, the monotone CNLS of Kuosmanen (2008), "Representation theorem for convex
    nonparametric least squares", *Econometrics Journal* 11, 308-325:

    .. math::

        \zeta_{ik} \ge 0 \quad (k \in \text{increasing}), \qquad
        \zeta_{ik} \le 0 \quad (k \in \text{decreasing}), \qquad i \in [n].

    Every affine piece is then non-decreasing (non-increasing) in :math:`x_k`, and so is their
    max (min, if ``concave``): the fit is monotone in those features on the whole space, not
    only at the data.  The signs apply to the slopes of the fitted function itself, with or
    without ``concave`` (an increasing concave fit has supergradients :math:`\ge 0`).  The
    returned slopes lie exactly on their side of 0 (the solver's values, at most its tolerance
    over, are clipped to 0; the Afriat scan and ``max_violation_`` are of the clipped slopes).

    The :math:`n(n-1)` constraints are not formed: a cutting-plane loop starts from a sparse
    set of pairs (neighbours, see ``n_neighbors``), solves the QP with those (a sparse
    constraint matrix, 2 + d non-zeros per pair), scans all :math:`n^2` pairs in row blocks
    of 512 kB (never an n x n array) for violations
    :math:`\theta_i + \zeta_i^T (x_j - x_i) - \theta_j > \text{tol} \cdot \text{std}(y)`, adds
    for each violating point its most violated pairs (up to 8 each, fewer while many points
    violate), and re-solves, until no pair is violated.  From 500 points on and for
    d <= 3, the first rounds are screening rounds, QPs solved to a relative accuracy of
    ``min(1e-7, tol)``, whose only use is to find violated pairs; once the largest violation is
    below 0.1 std(y) (or ``tol`` if larger) every QP is solved tight.  The loop ends only on a
    tight solve whose full scan finds no violation above tol, and the last allowed round
    (``max_exchange + 1``) is always tight: the returned fit is a tight solve and ``max_violation_``
    its full-scan certificate.  The constraints only grow, so the loop ends after finitely many
    rounds with the exact CNLS solution.  Memory is O(number of pairs), a small multiple of n
    (see the benchmarks page).
    Internally X is centred and scaled per feature and y standardized, each first divided by
    its largest absolute value so that no step overflows or underflows: the problem is
    equivariant under :math:`y \to a y + b` (:math:`\hat\theta \to a\hat\theta + b`,
    :math:`\hat\zeta \to a\hat\zeta`, with :math:`a > 0`) and under
    :math:`x_k \to c_k x_k + e_k`, :math:`c_k > 0` (:math:`\hat\zeta_k \to \hat\zeta_k / c_k`),
    so data in any units (``y`` from 1e-300 to 1e300) is solved as well as standardized data
    and the solution is mapped back.  Only a fit whose values or slopes exceed the float64
    range is refused (ValueError).  Constant targets are fitted without a solve (the constant
    is the solution).

    Parameters
    ----------
    tol : float, default=1e-6
        Stopping tolerance: largest allowed Afriat violation, relative to the standard
        deviation of y.  Each tight QP is solved to ``clip(tol * 1e-4, 1e-12, 1e-10)`` with
        Clarabel (gap and feasibility), ``clip(tol * 1e-4, 1e-9, 1e-6)`` with SCS; screening
        QPs to ``max(that, min(1e-7, tol))``.
    max_exchange : int, default=49
        Largest number of rounds that add pairs (the exchange): at most ``max_exchange + 1``
        QP solves (50 by default).  ``max_rounds = k`` (the old name, deprecated) is
        ``max_exchange = k - 1``.
    primal_solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        CVXPY solver for each QP (status checked by :func:`psdsos.solvers.solve_cvxpy`).
        Clarabel (interior point) cannot be warm-started, and the constraint set changes every
        round anyway; it is much faster than OSQP at comparable accuracy.  For d <= 3 Clarabel
        runs with its QDLDL factorization (sparse pair graphs, little fill), for d >= 4 with
        faer (more fill); screening rounds skip iterative refinement.  The benchmarks page
        gives the measured figures.
        SCS is a slower, lower-accuracy fallback.
    concave : bool, default=False
        Fit a concave function instead (min of affine pieces).
    increasing : None, bool or list of int, default=None
        Features in which the fit is non-decreasing: ``True`` for all, a list of feature
        indices (0 to n_features - 1) for some, ``None`` or ``False`` for none.  Imposed as
        :math:`\zeta_{ik} \ge 0` at every data point (above).
    decreasing : None, bool or list of int, default=None
        Features in which the fit is non-increasing (:math:`\zeta_{ik} \le 0`), as
        ``increasing``; no feature may be in both (ValueError).
    n_neighbors : "auto" or int, default="auto"
        Starting pairs.  ``"auto"``: consecutive points for d = 1, the Delaunay graph for
        d = 2, 3, the 2 d + 2 nearest neighbours for d >= 4.  An integer k: the k nearest
        neighbours of each point (both directions); k >= n - 1 gives the dense problem.
    verbose : bool or int, default=False
        Print one line per round.
    max_rounds, solver : deprecated
        The old names of ``max_exchange`` (``max_rounds = max_exchange + 1``) and
        ``primal_solver``: used when given, with a ``FutureWarning``; removed in 0.3.

    Attributes
    ----------
    theta_ : ndarray of shape (n_samples,)
        Fitted values at the training points.
    zeta_ : ndarray of shape (n_samples, n_features)
        Subgradients (supergradients if ``concave``) at the training points; columns of
        ``increasing`` features are >= 0, of ``decreasing`` ones <= 0.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (the anchors of the affine pieces).
    objective_ : float
        :math:`\frac1n \sum_i (y_i - \hat\theta_i)^2` (inf when it exceeds the float64
        range, i.e. residuals beyond about 1e154).
    n_rounds_ : int
        Number of QP solves (screening and tight).
    n_constraints_ : int
        Number of Afriat pairs in the final QP (the dense problem has n (n - 1)).
    max_violation_ : float
        Largest Afriat violation over all pairs at the solution, in units of y.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos import PiecewiseLinearConvexRegressor
    >>> X = np.linspace(-1, 1, 9)[:, None]
    >>> m = PiecewiseLinearConvexRegressor().fit(X, X[:, 0] ** 2)
    >>> bool(np.allclose(m.theta_, X[:, 0] ** 2, atol=1e-6))
    True
    >>> m.predict([[0.1]]).shape
    (1,)

    An increasing concave fit (a production function, say):

    >>> m = PiecewiseLinearConvexRegressor(concave=True, increasing=True)
    >>> m = m.fit(X + 1, np.sqrt(X[:, 0] + 1))
    >>> bool(np.all(m.zeta_ >= 0))
    True
    """

    _parameter_constraints = {
        "tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "max_exchange": Interval(numbers.Integral, 0, None),
        "primal_solver": Options(PRIMAL_SOLVERS, ignore_case=True),
        "max_rounds": Renamed(Interval(numbers.Integral, 1, None)),
        "solver": Renamed(Options(PRIMAL_SOLVERS, ignore_case=True)),
        "concave": Bool(),
        "increasing": _FeatureSubset(),
        "decreasing": _FeatureSubset(),
        "n_neighbors": _NeighborsConstraint(),
        "verbose": Verbose(),
    }

    def __init__(self, *, tol: float = 1e-6, max_exchange: int = 49,
                 primal_solver: str = "CLARABEL", concave: bool = False,
                 increasing: bool | Sequence[int] | None = None,
                 decreasing: bool | Sequence[int] | None = None,
                 n_neighbors: int | str = "auto", verbose: bool | int = False,
                 max_rounds: int | str = DEPRECATED, solver: str = DEPRECATED) -> None:
        self.tol = tol
        self.max_exchange = max_exchange
        self.primal_solver = primal_solver
        self.max_rounds = max_rounds
        self.solver = solver
        self.concave = concave
        self.increasing = increasing
        self.decreasing = decreasing
        self.n_neighbors = n_neighbors
        self.verbose = verbose

    def _solve_qp(self, Xs, ys, keys, sw=None, *, tight=True, signs=None):
        n, p = Xs.shape
        A = _afriat_matrix(Xs, keys // n, keys % n)
        v = cp.Variable(n * (p + 1))
        resid = v[:n] - ys if sw is None else cp.multiply(sw, v[:n] - ys)
        constraints = [A @ v >= 0]
        # sign constraints s_k zeta_ik >= 0 on the QP's slopes (signs already mapped through
        # the concave negation by fit): n bounds per constrained feature, in every round
        for s in (1, -1):
            cols = np.flatnonzero(signs == s) if signs is not None else np.zeros(0, np.intp)
            if cols.size:
                idx = (n + np.arange(n)[:, None] * p + cols[None, :]).ravel()
                constraints.append(s * v[idx] >= 0)
        # sum of squares without the 1/n of eq. (27) (same minimizer): the solver's absolute
        # gap tolerance then bounds the error in theta more tightly than with the 1/n or with
        # the norm ||theta - y||_2.  The problem is rebuilt each round: its constraint matrix
        # changes shape, so a CVXPY Parameter would not spare the compilation.
        prob = cp.Problem(cp.Minimize(cp.sum_squares(resid)), constraints)
        solver = self._primal_solver.upper()
        # Clarabel (interior point) is cheap to run tight; SCS (first order) gets a looser target.
        lo, hi = (1e-12, 1e-10) if solver == "CLARABEL" else (1e-9, 1e-6)
        tol = float(np.clip(self.tol * 1e-4, lo, hi))
        options = {}
        if not tight:  # a screening round: only its violations are used
            tol = max(tol, min(_SCREEN_TOL, self.tol))
        if solver == "CLARABEL":
            # refinement only in the certified rounds; the linear solver by dimension: for
            # d <= 3 (Delaunay-like pair graphs, little fill) QDLDL, faster there than
            # Clarabel's automatic choice (faer); for d >= 4 (nearest-neighbour graphs, more
            # fill) faer's supernodal factorization, faster there than QDLDL
            options = {"iterative_refinement_enable": tight}
            if p <= _DELAUNAY_MAX_DIM:
                options["direct_solve_method"] = "qdldl"
        # The subgradients of hull vertices are unbounded in the QP (their Afriat rows leave
        # a recession cone), so the dual has no strictly feasible point and an interior-point
        # solve can stall near its tolerance (Clarabel: InsufficientProgress, seen on ~1 in
        # 300 random problems at 1e-10).  Re-solve at 10 and 100 times the tolerance: theta
        # is still certified (the Afriat scan of the caller, and the solver's gap).
        for k, t in enumerate((tol, 10 * tol, 100 * tol)):
            try:
                solve_cvxpy(prob, solver=solver, tol=t, **options)
                break
            except SolverStatusError:
                if k == 2:
                    raise
        Z = v.value[n:].reshape(n, p).copy()
        if signs is not None:
            # the interior-point solution meets the sign bounds only to the solver's
            # tolerance: put the slopes exactly on their side (a change of that size, which the
            # caller's Afriat scan of the returned slopes accounts for), so that the fit is
            # exactly monotone
            Z[:, signs > 0] = np.maximum(Z[:, signs > 0], 0.0)
            Z[:, signs < 0] = np.minimum(Z[:, signs < 0], 0.0)
        return v.value[:n].copy(), Z

    def _cutting_planes(self, Xs, ys, y_scale, sw=None, signs=None):
        """Solve on the standardized data; return theta, Z, pair keys, rounds, max violation
        and None, or the advice of the ConvergenceWarning when violations > tol remain.

        Screening rounds (QP to ``_SCREEN_TOL``) add violated pairs until the largest
        violation is below ``max(_SCREEN_SWITCH, tol)``; from then on every QP is solved tight,
        and the loop ends only on a tight solve whose full scan finds no violation > tol.
        """
        n = Xs.shape[0]
        keys = _initial_pairs(Xs, self.n_neighbors)
        # all pairs already, or a small problem: nothing to screen; for d >= 4 screening
        # costs more rounds than it saves in solves
        tight = (keys.size >= n * (n - 1) or n < _SCREEN_MIN_N
                 or Xs.shape[1] > _DELAUNAY_MAX_DIM)
        t0 = time.perf_counter()
        rounds = self._max_exchange + 1
        for rnd in range(1, rounds + 1):
            tight = tight or rnd == rounds  # the answer is always a tight solve
            theta, Z = self._solve_qp(Xs, ys, keys, sw, tight=tight, signs=signs)
            vmax, J, V = _violations(Xs, theta, Z, keys, _ADD_MAX, self.tol)
            if self.verbose:
                with np.errstate(over="ignore"):  # inf beyond the float range
                    r2 = (ys - theta) ** 2 if sw is None else sw**2 * (ys - theta) ** 2
                    obj = np.mean(r2) * np.float64(y_scale) ** 2
                print(f"[CNLS] round {rnd}{'' if tight else ' (screening)'}: {keys.size} "
                      f"pairs, objective {obj:.8g}, max violation "
                      f"{vmax * y_scale:.3e}, {time.perf_counter() - t0:.2f} s")
            if tight and vmax <= self.tol:
                return theta, Z, keys, rnd, vmax, None
            viol = V > self.tol
            n_rows = int(np.count_nonzero(viol[:, 0]))
            if not tight and (vmax <= max(_SCREEN_SWITCH, self.tol) or n_rows == 0):
                tight = True
                if n_rows == 0:  # nothing new: re-solve the same pairs tight
                    continue
            if n_rows == 0:
                advice = "raise tol" + (" or use primal_solver='CLARABEL'"
                                        if self._primal_solver.upper() != "CLARABEL" else "")
                return theta, Z, keys, rnd, vmax, (
                    f"the remaining violations are in the QP already (solver accuracy); {advice}")
            if rnd < rounds:
                # each violating row adds its q most violated pairs, q growing as fewer rows
                # violate (about _ADD_TARGET * n new pairs per round, at most _ADD_MAX per row)
                q = int(np.clip(np.ceil(_ADD_TARGET * n / n_rows), 1, V.shape[1]))
                viol[:, q:] = False
                I = np.broadcast_to(np.arange(n)[:, None], V.shape)
                keys = np.union1d(keys, I[viol] * n + J[viol])
        return theta, Z, keys, rnd, vmax, "raise max_exchange"

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> PiecewiseLinearConvexRegressor:
        """Fit the CNLS estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            At least 2 samples.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights: the objective becomes
            sum_i w_i (y_i - theta_i)^2 / sum_i w_i (integer weights =
            duplicated rows; rows of weight 0 are dropped, so ``theta_`` and ``X_fit_``
            hold the rows of positive weight; scaling all the weights changes nothing).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Invalid parameters (among them a feature index of ``increasing`` or
            ``decreasing`` out of range, or a feature in both), X not 2-D, NaN/inf, fewer
            than 2 samples, len(y) != len(X).
        psdsos.solvers.SolverStatusError
            A QP ended with a status other than optimal.
        """
        validate_params(self)
        self._max_exchange = int(renamed_value(self, "max_rounds", "max_exchange",
                                               convert=lambda k: int(k) - 1))
        self._primal_solver = str(renamed_value(self, "solver", "primal_solver"))
        X, y = validate_data(self, X, y, reset=True, dtype=np.float64, ensure_2d=False,
                             ensure_min_samples=2, y_numeric=True)
        if X.ndim != 2:
            raise ValueError(
                f"X must be 2-D of shape (n_samples, n_features), got shape {X.shape}; "
                "reshape a single feature with X.reshape(-1, 1)"
            )
        self.n_features_in_ = X.shape[1]  # validate_data sets it only with ensure_2d=True
        X, y, w = check_sample_weight(sample_weight, X, y)
        if X.shape[0] < 2:
            raise ValueError(
                f"sample_weight leaves {X.shape[0]} sample of positive weight; at least 2 "
                "are required"
            )
        # square roots of the normalized weights (mean 1): the QP's residuals sw * (theta - y)
        sw = None if w is None else np.sqrt(w / float(np.mean(w)))
        n, p = X.shape
        sign = -1.0 if self.concave else 1.0
        # slopes of the user's function: +1 >= 0, -1 <= 0; the QP fits sign * y, whose slopes
        # are sign * those (x_scale, y_scale > 0 keep the signs)
        signs = _feature_signs(self.increasing, self.decreasing, type(self).__name__, p)
        qp_signs = (signs * int(sign)).astype(np.int8) if np.any(signs) else None
        # the problem is equivariant under y -> a y + b and per-feature x -> c x + e: solve it
        # on standardized data (overflow- and underflow-free, _standardize), map back
        Xs, x_mean, x_scale = _standardize(X)
        ys, y_mean, y_scale = _standardize(y[:, None])
        ys, y_mean, y_scale = sign * ys[:, 0], float(y_mean[0]), float(y_scale[0])

        if np.ptp(y) > 0:
            theta, Z, keys, rnd, vmax, stop = self._cutting_planes(Xs, ys, y_scale, sw,
                                                                   qp_signs)
        else:
            # constant y: theta = y, zeta = 0 is exact, whereas a QP solve would be exact only
            # to the square root of its tolerance (every inequality tight and degenerate)
            theta, Z, keys, rnd, vmax, stop = np.zeros(n), np.zeros((n, p)), [], 0, 0.0, None
        if stop is not None:
            warnings.warn(
                f"{type(self).__name__} stopped after {rnd} rounds with Afriat violations up "
                f"to {vmax * y_scale:.3e} (> tol * std(y) = {self.tol * y_scale:.3e}); {stop}",
                ConvergenceWarning, stacklevel=2,
            )
        with np.errstate(over="ignore"):
            theta_ = y_mean + sign * y_scale * theta
            zeta_ = sign * (y_scale * Z) / x_scale
            if not np.all(np.isfinite(zeta_)):  # tiny feature scales against a large y
                zeta_ = sign * y_scale * (Z / x_scale)
            r2 = (y - theta_) ** 2
            # inf beyond the float range
            objective = float(np.mean(r2) if w is None else (w @ r2) / float(np.sum(w)))
        if not (np.all(np.isfinite(theta_)) and np.all(np.isfinite(zeta_))):
            raise ValueError(
                "X and y: the fitted values or slopes of this fit exceed the float64 range "
                f"(std(y) = {y_scale:.3g}, smallest feature std {float(np.min(x_scale)):.3g}); "
                "rescale y or X"
            )
        self.theta_ = theta_
        self.zeta_ = zeta_
        self.X_fit_ = X
        self.objective_ = objective
        self.n_rounds_ = rnd
        self.n_constraints_ = len(keys)
        self.max_violation_ = float(vmax * y_scale)
        return self

    def predict(self, X: ArrayLike) -> FloatArray:
        """Evaluate the max-affine (min-affine if ``concave``) fitted function.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Where the function is evaluated.

        Returns
        -------
        ndarray of shape (m,)
        """
        X = fitted_input(self, X, "theta_")
        return _max_affine(X, self.theta_, self.zeta_, self.X_fit_, self.concave)

    # ---- persistence: the saved file (psdsos.load), n fitted points in p dimensions ----------
    _saved_fitted_attr = "theta_"
    _fitted_arrays = {"X_fit": SavedArray(("n", "p"), dtype=np.float64),
                      "theta": SavedArray(("n",), dtype=np.float64),
                      "zeta": SavedArray(("n", "p"), dtype=np.float64)}
    _fitted_scalars = {"objective_": "real*", "n_rounds_": "int", "n_constraints_": "int",
                       "max_violation_": "real*", "n_features_in_": "posint"}
    _saved_dims = {"p": "fitted.n_features_in_"}

    def save(self, path: PathLike) -> None:
        """Save the fitted model to ``path`` (.npz + JSON metadata; never pickle)."""
        self._save(path)

    @classmethod
    def _saved_constructor_params(cls, meta):
        # files written before the renaming hold max_rounds and solver: the same settings
        # under the new names (no FutureWarning for a file the user did not write that way)
        params = dict(meta["params"])
        rounds = params.pop("max_rounds", DEPRECATED)
        if rounds != DEPRECATED:
            params.setdefault("max_exchange", int(rounds) - 1)
        solver = params.pop("solver", DEPRECATED)
        if solver != DEPRECATED:
            params.setdefault("primal_solver", solver)
        return params


def _max_affine(Xt, theta, Z, X, concave):
    """max_i (or min_i) of theta_i + zeta_i^T (x - x_i) for each row x of Xt, in blocks."""
    c = theta - np.sum(Z * X, axis=1)
    out = np.empty(Xt.shape[0])
    for a, b in _row_blocks(Xt.shape[0], X.shape[0]):
        P = Xt[a:b] @ Z.T + c
        out[a:b] = P.min(axis=1) if concave else P.max(axis=1)
    return out
