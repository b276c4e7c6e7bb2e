"""sample_weight in ConvexRegressor, CNLS, KernelRidgeRegressor and grid_search_cv.

scikit-learn semantics: integer weights = duplicated rows (checked against the fit on the
duplicated data, to the solver's tolerance), zero weight = row dropped, scaling all weights
changes nothing, negative weights are refused.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import KFold

from psdsos import ConvexRegressor, PiecewiseLinearConvexRegressor
from psdsos.estimators import KernelRidgeRegressor
from psdsos.estimators._convex import NonConvexFitWarning
from psdsos.model_selection import grid_search_cv, neg_mse_scorer


def _data(seed, n=20, p=2, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    y = np.sum(X**2, axis=1) + 0.3 * X[:, 0] + noise * rng.standard_normal(n)
    w = rng.integers(0, 4, n)
    w[:2] = (1, 2)  # at least two rows of positive weight
    return X, y, w, rng.uniform(-1, 1, (40, p))


def _dup(X, y, w):
    return np.repeat(X, w, axis=0), np.repeat(y, w)


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        # few constraint points on tiny data: the convexity certificate may warn
        warnings.simplefilter("ignore", NonConvexFitWarning)
        return est.fit(*args, **kw)


DUAL = {"solver": "dual", "tol": 1e-8, "max_iter": 20000}


# ---- ConvexRegressor ------------------------------------------------------------------------
@pytest.mark.parametrize("representation", ["approx", "exact"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_convex_integer_weights_equal_duplicated_rows_dual(representation, fit_intercept):
    X, y, w, Xt = _data(0)
    # without the affine part the dual converges slowly on these data: its default tol
    tol = 1e-8 if fit_intercept else 1e-6
    kw = dict(DUAL, representation=representation, fit_intercept=fit_intercept,
              random_state=0, tol=tol)
    a = _fit(ConvexRegressor(**kw), X, y, sample_weight=w)
    b = _fit(ConvexRegressor(**kw), *_dup(X, y, w))
    # same objective (weighted mean = mean over the duplicated rows) to the dual's tol;
    # default constraint points: chosen among the distinct rows, hence the same ones
    np.testing.assert_allclose(a.constraint_points_, b.constraint_points_)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=10 * tol)
    assert a.kernel_.sigma == pytest.approx(b.kernel_.sigma, rel=1e-12)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=0, atol=1000 * tol)


def test_convex_integer_weights_equal_duplicated_rows_primal():
    X, y, w, Xt = _data(1, n=12)
    kw = dict(solver="primal", primal_solver="CLARABEL", tol=1e-8, constraint_points=6,
              random_state=0)
    a = _fit(ConvexRegressor(**kw), X, y, sample_weight=w)
    b = _fit(ConvexRegressor(**kw), *_dup(X, y, w))
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-6)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=0, atol=1e-4)


def test_convex_weighted_dual_matches_weighted_primal():
    # the weighted problem itself, solved two ways (dual vs CVXPY + Clarabel)
    X, y, w, Xt = _data(2, n=15)
    w = w + 0.5  # non-integer weights
    kw = dict(constraint_points=8, random_state=0)
    d = _fit(ConvexRegressor(**kw, **DUAL), X, y, sample_weight=w)
    p = _fit(ConvexRegressor(**kw, solver="primal", primal_solver="CLARABEL", tol=1e-9),
             X, y, sample_weight=w)
    u = _fit(ConvexRegressor(**kw, **DUAL), X, y)
    np.testing.assert_allclose(d.objective_, p.objective_, rtol=1e-5)
    np.testing.assert_allclose(d.predict(Xt), p.predict(Xt), atol=1e-4)
    assert np.max(np.abs(d.predict(Xt) - u.predict(Xt))) > 1e-3  # the weights matter


def test_convex_zero_weight_drops_the_row():
    X, y, w, Xt = _data(3)
    w[5] = 0
    w[7] = 0
    keep = w > 0
    y = y.copy()
    y[5] = 1e3  # an outlier of weight 0 changes nothing (bandwidth, scaling, fit)
    a = _fit(ConvexRegressor(**DUAL, random_state=0), X, y, sample_weight=w)
    b = _fit(ConvexRegressor(**DUAL, random_state=0), X[keep], y[keep],
             sample_weight=w[keep])
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=0, atol=1e-12)
    assert a.X_fit_.shape[0] == keep.sum()


def test_convex_scaling_weights_changes_nothing():
    X, y, w, Xt = _data(4)
    a = _fit(ConvexRegressor(**DUAL, random_state=0), X, y, sample_weight=w)
    b = _fit(ConvexRegressor(**DUAL, random_state=0), X, y, sample_weight=1e-7 * w)
    # the same problem up to the rounding of the normalized weights, solved to a relative
    # gap of 1e-8: predictions agree to ~sqrt(tol) at worst (measured 1e-8, and 1e-8 apart
    # across OpenBLAS kernels)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=0, atol=1e-6)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=10 * DUAL["tol"])


def test_convex_unit_weights_equal_no_weights():
    X, y, _, Xt = _data(5)
    a = _fit(ConvexRegressor(**DUAL, random_state=0), X, y, sample_weight=np.ones(len(y)))
    b = _fit(ConvexRegressor(**DUAL, random_state=0), X, y)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=0, atol=1e-6)


@pytest.mark.parametrize("Est", [ConvexRegressor, PiecewiseLinearConvexRegressor,
                                 KernelRidgeRegressor])
def test_bad_weights(Est):
    X, y, _, _ = _data(6, n=8)
    with pytest.raises(ValueError, match="[Nn]egative"):
        Est().fit(X, y, sample_weight=-np.ones(8))
    with pytest.raises(ValueError, match="sample_weight"):
        Est().fit(X, y, sample_weight=np.ones(5))
    with pytest.raises(ValueError, match="[Ss]ample.weight"):
        Est().fit(X, y, sample_weight=np.zeros(8))
    with pytest.raises(ValueError):
        Est().fit(X, y, sample_weight=np.full(8, np.nan))


# ---- CNLS ------------------------------------------------------------------------------------
def test_cnls_weights():
    X, y, w, Xt = _data(7, n=25)
    a = PiecewiseLinearConvexRegressor().fit(X, y, sample_weight=w)
    b = PiecewiseLinearConvexRegressor().fit(*_dup(X, y, w))
    keep = w > 0
    # the fitted values are unique: equal at the rows of positive weight
    np.testing.assert_allclose(a.theta_, b.theta_[np.cumsum(w)[keep] - 1], atol=1e-6)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-6)
    assert a.X_fit_.shape[0] == keep.sum()  # rows of weight 0 dropped
    c = PiecewiseLinearConvexRegressor().fit(X, y, sample_weight=123.0 * w)
    np.testing.assert_allclose(a.theta_, c.theta_, atol=1e-6)


def test_cnls_weighted_matches_dense_reference():
    # independent reference: the dense weighted QP written directly in CVXPY
    X, y, w, _ = _data(8, n=15)
    w = w + 0.25
    n = len(y)
    theta = cp.Variable(n)
    Z = cp.Variable((n, 2))
    I, J = np.nonzero(~np.eye(n, dtype=bool))
    lhs = theta[I] + cp.sum(cp.multiply(Z[I, :], X[J] - X[I]), axis=1)
    prob = cp.Problem(cp.Minimize(w @ cp.square(y - theta) / w.sum()), [lhs <= theta[J]])
    prob.solve(solver="CLARABEL")
    a = PiecewiseLinearConvexRegressor().fit(X, y, sample_weight=w)
    np.testing.assert_allclose(a.theta_, theta.value, atol=1e-5)
    np.testing.assert_allclose(a.objective_, prob.value, rtol=1e-6)


# ---- KRR -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_krr_weights(fit_intercept):
    X, y, w, Xt = _data(9, n=30)
    kw = dict(rho=1e-3, fit_intercept=fit_intercept)
    a = KernelRidgeRegressor(**kw).fit(X, y, sample_weight=w)
    b = KernelRidgeRegressor(**kw).fit(*_dup(X, y, w))
    c = KernelRidgeRegressor(**kw).fit(X, y, sample_weight=0.01 * w)
    keep = w > 0
    d = KernelRidgeRegressor(**kw).fit(X[keep], y[keep], sample_weight=w[keep])
    assert a.kernel_.sigma == pytest.approx(b.kernel_.sigma, rel=1e-12)
    for other in (b, c, d):
        np.testing.assert_allclose(a.predict(Xt), other.predict(Xt), rtol=1e-8, atol=1e-10)


def test_krr_weights_match_sklearn_without_intercept():
    X, y, w, Xt = _data(10, n=30)
    w = w + 0.5
    ours = KernelRidgeRegressor(sigma=0.6, rho=1e-3, fit_intercept=False).fit(
        X, y, sample_weight=w)
    ref = KernelRidge(alpha=1e-3 * w.sum(), kernel="rbf", gamma=1 / (2 * 0.6**2)).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), rtol=1e-10, atol=1e-12)


# ---- grid_search_cv ------------------------------------------------------------------------
def test_grid_search_passes_weights_to_fits_and_scores():
    X, y, w, _ = _data(11, n=24)
    w = w + 0.5
    cv = KFold(3)
    grid = {"rho": [1e-2, 1e-4]}
    est = KernelRidgeRegressor(sigma=0.7)
    res = grid_search_cv(est, X, y, grid, cv=cv, scoring="neg_mse", sample_weight=w)
    for ci, params in enumerate(res.cv_results_["params"]):
        for k, (tr, te) in enumerate(cv.split(X)):
            m = KernelRidgeRegressor(sigma=0.7, **params).fit(X[tr], y[tr], sample_weight=w[tr])
            ref = -np.sum(w[te] * (m.predict(X[te]) - y[te]) ** 2) / np.sum(w[te])
            assert res.cv_results_[f"split{k}_test_score"][ci] == pytest.approx(ref, rel=1e-10)
    best = KernelRidgeRegressor(sigma=0.7, **res.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(res.best_estimator_.predict(X), best.predict(X), rtol=1e-12)
    # default scoring: the estimator's weighted R^2
    res2 = grid_search_cv(est, X, y, grid, cv=cv, sample_weight=w)
    tr, te = next(iter(cv.split(X)))
    m = KernelRidgeRegressor(sigma=0.7, **res2.cv_results_["params"][0]).fit(
        X[tr], y[tr], sample_weight=w[tr])
    assert res2.cv_results_["split0_test_score"][0] == pytest.approx(
        m.score(X[te], y[te], sample_weight=w[te]), rel=1e-12)


def test_neg_mse_scorer_weights():
    X, y, w, _ = _data(12, n=10)
    m = KernelRidgeRegressor().fit(X, y)
    r2 = (m.predict(X) - y) ** 2
    assert neg_mse_scorer(m, X, y, sample_weight=w) == pytest.approx(-(w @ r2) / w.sum())
    assert neg_mse_scorer(m, X, y) == pytest.approx(-np.mean(r2))
    with pytest.raises(ValueError):
        neg_mse_scorer(m, X, y, sample_weight=-np.ones(10))
    with pytest.raises(ValueError):
        grid_search_cv(KernelRidgeRegressor(), X, y, {"rho": [1e-3]}, cv=2,
                       sample_weight=-np.ones(10))
