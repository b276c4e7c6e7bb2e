"""CNLS at scale: screening rounds, the full Afriat certificate, memory without n x n arrays.

PiecewiseLinearConvexRegressor (PSD paper eq. 27) solves loose "screening" QPs before the tight,
certified ones once n >= ``_SCREEN_MIN_N``; the tests lower that threshold to 0 so that small
problems run the same path and can be compared with the dense program (all n (n - 1) Afriat
inequalities, written independently in CVXPY) and with the tight-only loop.
"""

import tracemalloc

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import psdsos.estimators._cnls as cnls
from psdsos.datasets import make_convex_regression
from psdsos.estimators._cnls import PiecewiseLinearConvexRegressor, _solve_dense, _violations

# The answer is always a tight Clarabel solve (1e-10 on standardized data), the reference runs
# at 1e-12 on raw data; test_cnls.py measured agreement to 1.3e-10 relative in the objective
# and 1.2e-9 std(y) in the fitted values on problems of this size.  The bounds asked for here
# (1e-6 relative objective, the acceptance level of the scaling work) leave a wide margin.
OBJ_RTOL = 1e-6
THETA_ATOL = 3e-8


@pytest.fixture
def screening(monkeypatch):
    """Screening rounds from n = 1 on (the default starts them at _SCREEN_MIN_N points)."""
    monkeypatch.setattr(cnls, "_SCREEN_MIN_N", 0)


def brute_force_violation(X, theta, Z):
    """max_ij theta_i + zeta_i^T (x_j - x_i) - theta_j over all pairs i != j (dense)."""
    V = theta[:, None] + Z @ X.T - np.sum(Z * X, axis=1)[:, None] - theta[None, :]
    np.fill_diagonal(V, -np.inf)
    return float(V.max())


@pytest.mark.parametrize("n, d", [(60, 2), (50, 3)])
def test_screening_matches_dense_reference(screening, capsys, n, d):
    X, y = make_convex_regression(n, d, b=2.0, noise=0.3, random_state=1)
    m = PiecewiseLinearConvexRegressor(verbose=True).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    # screening rounds ran, and the answer comes from a tight (certified) round
    assert any("(screening)" in line for line in out)
    assert "(screening)" not in out[-1]
    theta, _, obj = _solve_dense(X, y)
    assert m.objective_ == pytest.approx(obj, rel=OBJ_RTOL)
    np.testing.assert_allclose(m.theta_, theta, atol=THETA_ATOL * np.std(y))


def test_screening_matches_tight_only_loop(monkeypatch):
    # the same optimum as the loop without screening (every QP tight), here with weights
    X, y = make_convex_regression(300, 2, b=2.0, noise=0.2, random_state=0)
    w = np.random.default_rng(0).uniform(0.5, 2.0, 300)
    monkeypatch.setattr(cnls, "_SCREEN_MIN_N", 10**9)
    ref = PiecewiseLinearConvexRegressor().fit(X, y, sample_weight=w)
    monkeypatch.setattr(cnls, "_SCREEN_MIN_N", 0)
    m = PiecewiseLinearConvexRegressor().fit(X, y, sample_weight=w)
    assert m.objective_ == pytest.approx(ref.objective_, rel=OBJ_RTOL)
    np.testing.assert_allclose(m.theta_, ref.theta_, atol=1e-6 * np.std(y))


def test_certificate_is_the_full_scan(screening):
    # max_violation_ is the largest violation over all n (n - 1) pairs, not only those in the QP
    X, y = make_convex_regression(400, 2, b=2.0, noise=0.2, random_state=2)
    m = PiecewiseLinearConvexRegressor().fit(X, y)
    assert m.n_constraints_ < 400 * 399 / 10  # the QP kept a small part of the pairs
    viol = brute_force_violation(X, m.theta_, m.zeta_)
    assert viol <= m.tol * np.std(y)
    assert m.max_violation_ == pytest.approx(max(viol, 0.0), abs=1e-12 * np.std(y))


def test_last_round_is_tight_and_warns(screening, capsys):
    # max_exchange = 1 (two rounds): a screening round, then the final round is tight
    # whatever the violations
    X, y = make_convex_regression(200, 2, b=2.0, noise=0.3, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_exchange"):
        m = PiecewiseLinearConvexRegressor(max_exchange=1, verbose=True).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert m.n_rounds_ == 2 and "(screening)" in out[0] and "(screening)" not in out[1]
    assert m.max_violation_ > m.tol * np.std(y)
    assert m.max_violation_ == pytest.approx(
        brute_force_violation(X, m.theta_, m.zeta_), abs=1e-12 * np.std(y))


def test_violation_scan_in_blocks_equals_dense(monkeypatch):
    # small blocks (3 rows of 40 columns) give the dense scan's max and top-q selection
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    theta, Z = rng.standard_normal(40), rng.standard_normal((40, 2))
    active = np.unique(rng.integers(0, 40 * 40, 200))
    dense = theta[:, None] + Z @ X.T - np.sum(Z * X, axis=1)[:, None] - theta[None, :]
    np.fill_diagonal(dense, -np.inf)
    vmax_ref = float(dense.max())
    dense.flat[active] = -np.inf
    monkeypatch.setattr(cnls, "_BLOCK_ENTRIES", 3 * 40)
    vmax, J, V = _violations(X, theta, Z, active, 3, 0.5)
    assert vmax == pytest.approx(vmax_ref, rel=1e-12)
    hot = dense.max(axis=1) > 0.5
    top = -np.sort(-dense, axis=1)[:, :3]
    np.testing.assert_allclose(V[hot], top[hot], rtol=1e-12)
    np.testing.assert_allclose(np.take_along_axis(dense, J, axis=1)[hot], top[hot], rtol=1e-12)
    assert np.all(V[~hot] == -np.inf)


def test_memory_stays_below_one_n_by_n_array():
    # tracemalloc sees numpy's, scipy's and CVXPY's allocations: a single n x n float64 array
    # (a dense violation matrix, a dense prediction) would take n^2 * 8 bytes = 18 MB here.
    # Measured: the fit peaks at 0.47 of it (CVXPY compiling a QP of ~10 pairs per point,
    # O(n)), the violation scan at 0.13 (blocks of 512 kB and the (n, 8) selections).
    n = 1500
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sum(X**2, axis=1) + 0.1 * rng.standard_normal(n)
    nn_bytes = n * n * 8
    tracemalloc.start()
    try:
        m = PiecewiseLinearConvexRegressor().fit(X, y)
        m.predict(X)
        peak_fit = tracemalloc.get_traced_memory()[1]
        theta, Z = rng.standard_normal(n), rng.standard_normal((n, 2))
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _violations(X, theta, Z, np.zeros(0, dtype=np.int64), 8, 1e-6)
        peak_scan = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert m.max_violation_ <= m.tol * np.std(y)
    assert peak_fit < 0.6 * nn_bytes, f"fit peak {peak_fit / 1e6:.1f} MB"
    assert peak_scan < 0.2 * nn_bytes, f"scan peak {peak_scan / 1e6:.1f} MB"


@pytest.mark.parametrize("d, screens, method", [(2, True, "qdldl"), (4, False, None)])
def test_screening_and_linear_solver_by_dimension(screening, monkeypatch, d, screens, method):
    # d <= 3: screening rounds and Clarabel's QDLDL; d >= 4: tight rounds only, Clarabel's own
    # choice of linear solver (faer)
    real, calls = cnls.solve_cvxpy, []

    def spy(prob, *, solver, tol, **options):
        calls.append(options)
        return real(prob, solver=solver, tol=tol, **options)

    monkeypatch.setattr(cnls, "solve_cvxpy", spy)
    X, y = make_convex_regression(60, d, b=2.0, noise=0.3, random_state=0)
    m = PiecewiseLinearConvexRegressor().fit(X, y)
    assert len(calls) == m.n_rounds_
    assert any(not c["iterative_refinement_enable"] for c in calls) == screens
    assert calls[-1]["iterative_refinement_enable"]  # the answer is a tight solve
    assert {c.get("direct_solve_method") for c in calls} == {method}


@pytest.mark.parametrize("tol", [1e-6, 0.3])
def test_screening_stops_below_the_switch_level(screening, capsys, tol):
    # screening rounds run while the largest violation exceeds max(_SCREEN_SWITCH, tol) std(y)
    # (the verbose lines print it in units of y); the round after the first one below it, and
    # every later round, is tight
    X, y = make_convex_regression(400, 2, b=2.0, noise=0.3, random_state=4)
    PiecewiseLinearConvexRegressor(tol=tol, verbose=True).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    level = max(cnls._SCREEN_SWITCH, tol) * np.std(y)
    viol = [float(line.split("max violation ")[1].split(",")[0]) for line in lines]
    screening_rounds = ["(screening)" in line for line in lines]
    assert screening_rounds[0] and not screening_rounds[-1]
    first_below = next(k for k, v in enumerate(viol) if v <= level)
    assert all(screening_rounds[: first_below + 1])
    assert not any(screening_rounds[first_below + 1:])
