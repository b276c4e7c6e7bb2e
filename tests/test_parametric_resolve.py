"""Fast DPP re-solves (psdsos.structured._parametric.solve_parametric).

The reference is the ordinary CVXPY path, ``psdsos.solvers.solve_cvxpy`` (``problem.solve``
with the same solver and tolerances), run on the same problem object at the same parameter
values; closed-form projections are a second, solver-free reference.  Parameter values are
chosen so that constraints are inactive (the projection is the identity), and active.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from psdsos.solvers import InaccurateSolutionWarning, SolverStatusError, solve_cvxpy
from psdsos.structured import (
    BuresSpace,
    EuclideanSpace,
    _parametric,
    project_box,
    project_psd_cone,
    project_simplex,
)
from psdsos.structured._common import solve_parametric
from psdsos.structured.polytopes import Birkhoff, PolytopeLP, Simplex

TOL = 1e-9
# distance to an exact projection: ||y - y*||^2 <= objective gap (strong convexity, modulus
# 1 for ||y - m||^2), so near a degenerate point (a bound active with a zero multiplier) an
# interior-point solution at tolerance TOL is only ~sqrt(TOL)-accurate -- for problem.solve
# and the fast path alike (they agree far more closely, checked in _compare)
EXACT_ATOL = 3 * np.sqrt(TOL)


def _fast_path_used(problem):
    entry = _parametric._CACHE.get(problem)
    return entry is not None and entry[1] is not None


def _compare(problem, param, values, variables, atol=1e-6):
    """Fast path vs solve_cvxpy at each parameter value; returns the fast solutions.

    ``atol``: a number (times ``1 + max |reference|``) or ``atol(value, reference
    variables, reference objective)`` returning the absolute tolerance."""
    out = []
    for v in values:
        param.value = v
        val_fast = solve_parametric(problem, "CLARABEL", TOL)
        assert problem.status == cp.OPTIMAL
        fast = [np.array(x.value, dtype=float) for x in variables]
        assert _fast_path_used(problem)
        val_ref = solve_cvxpy(problem, solver="CLARABEL", tol=TOL)
        ref = [np.array(x.value, dtype=float) for x in variables]
        assert val_fast == pytest.approx(val_ref, rel=1e-7, abs=1e-7)
        for f, r in zip(fast, ref, strict=True):
            assert f.shape == r.shape
            tol = atol(v, ref, val_ref) if callable(atol) else atol * (1 + np.abs(r).max())
            np.testing.assert_allclose(f, r, rtol=0, atol=tol)
        out.append(fast[0])
    return out


def _sym_basis(d):
    """Frobenius-orthonormal basis of the symmetric d x d matrices."""
    out = []
    for j in range(d):
        for k in range(j, d):
            E = np.zeros((d, d))
            E[j, k] = E[k, j] = 1.0 if j == k else np.sqrt(0.5)
            out.append(E)
    return out


def _bures_argmin_atol(space):
    r"""Tolerance on the barycenter Y of two solves each to the solver tolerance TOL.

    Each solve's objective is within :math:`\varepsilon = 10\,\mathrm{TOL}\max(1, |v|)` of
    the optimum (Clarabel's relative/absolute gap and feasibility tolerances, with a factor
    10 of slack for the feasibility residuals' effect on the objective); F is strongly convex
    about the minimizer with modulus :math:`\mu` (the smallest eigenvalue of its Hessian in
    an orthonormal basis of the symmetric matrices, by central differences at the reference
    point), so each Y is within :math:`\sqrt{2\varepsilon/\mu}` of the minimizer and the
    two are within twice that."""

    def atol(w, ref, val):
        Y = ref[0]
        w = np.asarray(w, dtype=float)

        def F(Z):
            return float(space.objective(Z, w)[0])

        d = Y.shape[0]
        h = 1e-3 * np.sqrt(np.linalg.eigvalsh(Y)[0])
        B = _sym_basis(d)
        F0 = F(Y)
        Fa = [F(Y + h * b) + F(Y - h * b) for b in B]
        H = np.empty((len(B), len(B)))
        for a, ba in enumerate(B):
            for b, bb in enumerate(B):
                H[a, b] = (F(Y + h * (ba + bb)) + F(Y - h * (ba + bb)) - Fa[a] - Fa[b]
                           + 2 * F0) / (2 * h * h)
        mu = np.linalg.eigvalsh(0.5 * (H + H.T))[0]
        assert mu > 0
        eps = 10 * TOL * max(1.0, abs(val))
        return 2 * np.sqrt(2 * eps / mu)

    return atol


def _rand_spd(rng, n, d):
    G = rng.normal(size=(n, d, d))
    return G @ np.swapaxes(G, 1, 2) + 0.1 * np.eye(d)


# ---------------------------------------------------------------------------------------
# same solution as problem.solve
# ---------------------------------------------------------------------------------------
def test_simplex_projection_matches_problem_solve(rng):
    k = 12
    space = EuclideanSpace("simplex", tol=TOL).fit(rng.dirichlet(np.ones(k), size=5))
    prob, y, m = space.cvxpy_problem()
    inside = 0.5 * rng.dirichlet(np.ones(k)) + 0.5 / k  # well inside: no constraint active
    values = [inside, rng.normal(size=k), 100 * rng.normal(size=k), 1e-3 * rng.normal(size=k),
              np.eye(k)[3] * 5.0]
    got = _compare(prob, m, values, [y])
    np.testing.assert_allclose(got[0], inside, atol=1e-6)
    for v, g in zip(values, got, strict=True):
        np.testing.assert_allclose(g, project_simplex(v[None])[0],
                                   atol=EXACT_ATOL * (1 + abs(v).max()))
    assert np.sum(got[2] < 1e-7) > 0  # active non-negativity constraints


def test_box_projection_matches_problem_solve(rng):
    k = 10
    space = EuclideanSpace("box", lo=-1.0, hi=2.0, tol=TOL).fit(rng.uniform(-1, 2, (5, k)))
    prob, y, m = space.cvxpy_problem()
    values = [rng.uniform(-0.5, 1.5, k), 3 * rng.normal(size=k), np.full(k, 7.0)]
    got = _compare(prob, m, values, [y])
    for v, g in zip(values, got, strict=True):
        np.testing.assert_allclose(g, project_box(v, -1.0, 2.0),
                                   atol=EXACT_ATOL * (1 + abs(v).max()))
    np.testing.assert_allclose(got[2], 2.0, atol=1e-7)


def test_psd_cone_projection_matches_problem_solve(rng):
    d = 4
    space = EuclideanSpace("psd", tol=TOL).fit(_rand_spd(rng, 5, d))
    prob, y, m = space.cvxpy_problem()
    G = rng.normal(size=(3, d, d))
    values = [_rand_spd(rng, 1, d)[0], 0.5 * (G[0] + G[0].T), -np.eye(d),
              10 * (G[1] + G[1].T)]
    got = _compare(prob, m, values, [y])
    for v, g in zip(values, got, strict=True):
        np.testing.assert_allclose(g, project_psd_cone(v[None])[0],
                                   atol=EXACT_ATOL * (1 + abs(v).max()))
    np.testing.assert_allclose(got[2], 0.0, atol=1e-7)


def test_bures_sdp_matches_problem_solve(rng):
    n, d = 6, 3
    space = BuresSpace(solver_tol=TOL).fit(_rand_spd(rng, n, d))
    prob, Y, w = space.cvxpy_problem()
    values = [np.full(n, 1.0 / n), rng.dirichlet(np.ones(n)), np.eye(n)[2]]
    # Y only: the auxiliary X_i of the SDP need not be unique; the tolerance follows from
    # TOL and the strong convexity of the barycenter objective (_bures_argmin_atol)
    got = _compare(prob, w, values, [Y], atol=_bures_argmin_atol(space))
    # one-hot weights: the barycenter is that training matrix (a degenerate SDP: the
    # interior-point solution, of either path, is only ~sqrt(tol)-accurate)
    np.testing.assert_allclose(got[2], space.Y_train_[2],
                               atol=1e-4 * np.abs(space.Y_train_[2]).max())


@pytest.mark.parametrize("polytope", [Birkhoff(4), Simplex(6)], ids=["birkhoff", "simplex"])
def test_lp_decoding_matches_problem_solve(rng, polytope):
    lp = PolytopeLP(polytope, solver="CLARABEL")
    values = [rng.normal(size=polytope.shape) for _ in range(3)]
    got = _compare(lp.problem, lp.theta, values, [lp.mu])
    for v, g in zip(values, got, strict=True):
        # the fast solution rounds to an optimal vertex (PolytopeLP.solve's own check)
        best = float(np.sum(v * lp.solve(v)))
        assert float(np.sum(v * lp.polytope.round(g))) == pytest.approx(best, abs=1e-6)
        assert float(np.sum(v * g)) == pytest.approx(best, abs=1e-6)


def test_parameter_in_constraint_matrix(rng):
    """A parameter multiplying a variable: the constraint matrix is updated too."""
    k = 7
    y, m = cp.Variable(k), cp.Parameter(k)
    a = cp.Parameter(k, pos=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, a @ y == 1])
    a.value = np.ones(k)
    assert _parametric._CACHE.get(prob) is None
    for _ in range(3):
        a.value = rng.uniform(0.1, 3.0, k)
        _compare(prob, m, [rng.normal(size=k)], [y])
        np.testing.assert_allclose(a.value @ y.value, 1.0, atol=1e-7)


@pytest.mark.parametrize("constraint", ["simplex", "box", "psd"])
def test_decoder_cvxpy_matches_closed_form(rng, constraint):
    if constraint == "psd":
        Y = _rand_spd(rng, 8, 3)
    elif constraint == "simplex":
        Y = rng.dirichlet(np.ones(6), size=8)
    else:
        Y = rng.uniform(0, 1, (8, 6))
    space = EuclideanSpace(constraint).fit(Y)
    alpha = rng.normal(size=(5, 8))
    exact = space.decode(alpha, method="closed_form")
    np.testing.assert_allclose(space.decode(alpha, method="cvxpy"), exact,
                               atol=EXACT_ATOL * (1 + np.abs(exact).max()))
    assert _fast_path_used(space.cvxpy_problem()[0])


def test_new_solver_mode_when_updates_are_refused(rng):
    """Clarabel may refuse data updates (chordal decomposition): a new solver per solve."""
    n, d = 5, 2
    space = BuresSpace(solver_tol=TOL).fit(_rand_spd(rng, n, d))
    prob, Y, w = space.cvxpy_problem()
    w.value = np.full(n, 1.0 / n)
    solve_parametric(prob, "CLARABEL", TOL)
    resolver = _parametric._CACHE[prob][1]
    assert resolver._solver is not None
    resolver._solver = None  # as when is_data_update_allowed() is False
    _compare(prob, w, [rng.dirichlet(np.ones(n)), np.eye(n)[0]], [Y],
             atol=_bures_argmin_atol(space))
    assert resolver._solver is None


# ---------------------------------------------------------------------------------------
# status handling, fallbacks, state
# ---------------------------------------------------------------------------------------
def _capped_simplex():
    y, m, c = cp.Variable(4), cp.Parameter(4), cp.Parameter(4)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, y <= c, cp.sum(y) == 1])
    return prob, y, m, c


def test_infeasible_raises_solver_status_error():
    prob, y, m, c = _capped_simplex()
    m.value, c.value = np.zeros(4), np.ones(4)
    solve_parametric(prob, "CLARABEL", TOL)
    assert _fast_path_used(prob)
    np.testing.assert_allclose(y.value, 0.25, atol=1e-7)
    c.value = np.full(4, 0.1)  # sum(y) <= 0.4 < 1
    with pytest.raises(SolverStatusError, match="infeasible.*CLARABEL"):
        solve_parametric(prob, "CLARABEL", TOL)
    assert prob.status == cp.INFEASIBLE
    assert y.value is None
    with pytest.raises(SolverStatusError, match="infeasible.*CLARABEL"):
        solve_cvxpy(prob, solver="CLARABEL", tol=TOL)
    # the persistent solver recovers once the parameters are feasible again
    c.value = np.array([0.1, 1.0, 1.0, 1.0])
    m.value = np.array([1.0, 0.0, 0.0, 0.0])
    solve_parametric(prob, "CLARABEL", TOL)
    assert prob.status == cp.OPTIMAL
    np.testing.assert_allclose(y.value, [0.1, 0.3, 0.3, 0.3], atol=1e-6)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")  # CVXPY's, as in solve()
def test_iteration_limit_raises():
    prob, _, m, c = _capped_simplex()
    m.value, c.value = np.arange(4.0), np.ones(4)
    with pytest.raises(SolverStatusError, match="user_limit"):
        _parametric.solve_parametric(prob, "CLARABEL", TOL, max_iter=1)
    assert _fast_path_used(prob)


def test_optimal_inaccurate_warns(monkeypatch):
    class Almost(_parametric._PrimalOnly):
        status = "AlmostSolved"  # Clarabel's status name, read by CVXPY as a string

    prob, y, m, c = _capped_simplex()
    m.value, c.value = np.zeros(4), np.ones(4)
    solve_parametric(prob, "CLARABEL", TOL)
    monkeypatch.setattr(_parametric, "_PrimalOnly", Almost)
    with warnings.catch_warnings(record=True) as caught:  # CVXPY warns too, as in solve()
        warnings.simplefilter("always")
        solve_parametric(prob, "CLARABEL", TOL)
    assert any(issubclass(w.category, InaccurateSolutionWarning)
               and "optimal_inaccurate" in str(w.message) for w in caught)
    assert prob.status == cp.OPTIMAL_INACCURATE
    np.testing.assert_allclose(y.value, 0.25, atol=1e-7)


def test_duals_cleared_not_stale():
    prob, _, m, c = _capped_simplex()
    m.value, c.value = np.zeros(4), np.ones(4)
    solve_cvxpy(prob, solver="CLARABEL", tol=TOL)
    assert prob.constraints[2].dual_value is not None
    solve_parametric(prob, "CLARABEL", TOL)
    assert all(con.dual_value is None for con in prob.constraints)


def test_unset_parameter_raises_cvxpy_error():
    prob, _, m, c = _capped_simplex()
    m.value = np.zeros(4)
    with pytest.raises(cp.error.ParameterError):
        solve_parametric(prob, "CLARABEL", TOL)
    assert _parametric._CACHE.get(prob) is None


def test_fallbacks_give_the_ordinary_solution(rng):
    y, m = cp.Variable(5), cp.Parameter(5)
    m.value = rng.normal(size=5)
    # other solver
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, cp.sum(y) == 1])
    solve_parametric(prob, "SCS", 1e-9)
    assert _parametric._CACHE.get(prob) is None
    np.testing.assert_allclose(y.value, project_simplex(m.value[None])[0],
                               atol=EXACT_ATOL * (1 + np.abs(m.value).max()))
    # not DPP (a product of parameters multiplies the variable)
    a = cp.Parameter(pos=True, value=2.0)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(a * a * y - m)), [y >= 0])
    assert not prob.is_dcp(dpp=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solve_parametric(prob, "CLARABEL", TOL)
    assert not _fast_path_used(prob)
    np.testing.assert_allclose(y.value, np.maximum(m.value, 0) / 4,
                               atol=EXACT_ATOL * (1 + np.abs(m.value).max()))
    # no parameter at all
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - 1.0)), [y <= 0.5])
    assert solve_parametric(prob, "CLARABEL", TOL) == pytest.approx(5 * 0.25, rel=1e-6)
    assert not _fast_path_used(prob)


def test_options_change_rebuilds_and_cache_follows_problem(rng):
    y, m = cp.Variable(5), cp.Parameter(5, value=rng.normal(size=5))
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), [y >= 0, cp.sum(y) == 1])
    solve_parametric(prob, "CLARABEL", 1e-6)
    first = _parametric._CACHE[prob][1]
    solve_parametric(prob, "CLARABEL", 1e-6)
    assert _parametric._CACHE[prob][1] is first
    solve_parametric(prob, "clarabel", TOL)
    assert _parametric._CACHE[prob][1] is not first
    ref = weakref.ref(prob)  # the cache does not keep the problem alive
    del prob
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------------------------------
# property test
# ---------------------------------------------------------------------------------------
_SIMPLEX_SPACES = {}


@given(arrays(np.float64, st.integers(2, 7), elements=st.floats(-100, 100)))
def test_simplex_projection_lands_in_simplex(z):
    k = len(z)
    if k not in _SIMPLEX_SPACES:  # one space per size: re-solves of the same problem
        _SIMPLEX_SPACES[k] = EuclideanSpace("simplex", tol=TOL).fit(np.eye(k))
    space = _SIMPLEX_SPACES[k]
    p = space.decode(z[None], method="cvxpy")[0]  # alpha @ I = z
    scale = 1.0 + np.abs(z).max()
    assert p.min() >= -1e-7 * scale
    assert p.sum() == pytest.approx(1.0, abs=1e-7 * scale)
    # near the exact projection (EXACT_ATOL: e.g. z a vertex is a degenerate point)
    np.testing.assert_allclose(p, project_simplex(z[None])[0], atol=EXACT_ATOL * scale)
