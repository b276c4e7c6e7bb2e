"""PiecewiseLinearConvexRegressor with sign constraints (``increasing`` / ``decreasing``).

Reference: the full CNLS quadratic program with every Afriat inequality and the sign bounds,
written here in CVXPY (independently of the estimator's cutting planes) and solved tight
with Clarabel.
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from psdsos import load
from psdsos.datasets import load_engel
from psdsos.estimators._cnls import PiecewiseLinearConvexRegressor

# Clarabel at 1e-10 on standardized data inside the estimator, at 1e-12 on the raw data here
# (tests/test_cnls.py measures 1.2e-9 std(y) between the two on unsigned problems; the same
# margin of ~25)
THETA_ATOL = 3e-8
OBJ_RTOL = 3e-9


def _reference(X, y, *, concave=False, increasing=(), decreasing=()):
    """Dense monotone CNLS: every ordered pair (i, j) and the sign of every slope."""
    n, p = X.shape
    theta, Z = cp.Variable(n), cp.Variable((n, p))
    I, J = np.nonzero(~np.eye(n, dtype=bool))
    piece_at_j = theta[I] + cp.sum(cp.multiply(Z[I, :], X[J] - X[I]), axis=1)
    # convex: each affine piece below the fitted values; concave: above
    cons = [piece_at_j >= theta[J]] if concave else [piece_at_j <= theta[J]]
    if len(increasing):
        cons.append(Z[:, list(increasing)] >= 0)
    if len(decreasing):
        cons.append(Z[:, list(decreasing)] <= 0)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(y - theta)), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert prob.status == "optimal"
    th = np.asarray(theta.value)
    return th, np.asarray(Z.value), float(np.mean((y - th) ** 2))


def _data(n, d, seed, truth):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    return X, truth(X) + 0.3 * rng.standard_normal(n)


def _bowl(X):
    return np.sum(X**2, axis=1)


CASES = [
    # (concave, increasing, decreasing, truth): the signs bind in each case (checked below)
    (False, True, None, _bowl),
    (False, [0], [1], _bowl),
    (False, None, [1], _bowl),
    (True, True, None, lambda X: -_bowl(X)),
    (True, [1], [0], lambda X: -_bowl(X) + X[:, 0]),
]


@pytest.mark.parametrize("concave, increasing, decreasing, truth", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_dense_reference(concave, increasing, decreasing, truth, seed):
    X, y = _data(25, 2, seed, truth)
    m = PiecewiseLinearConvexRegressor(concave=concave, increasing=increasing,
                                       decreasing=decreasing).fit(X, y)
    inc = [0, 1] if increasing is True else (increasing or [])
    dec = decreasing or []
    theta, Z, obj = _reference(X, y, concave=concave, increasing=inc, decreasing=dec)
    np.testing.assert_allclose(m.theta_, theta, atol=THETA_ATOL * np.std(y))
    assert abs(m.objective_ - obj) <= OBJ_RTOL * obj
    # the constraints bind: the unsigned fit is better (otherwise the test could not fail)
    free = _reference(X, y, concave=concave)[2]
    assert obj > free * (1 + 1e-6)
    # the slopes are exactly on their side of 0
    assert np.all(m.zeta_[:, inc] >= 0.0) and np.all(m.zeta_[:, dec] <= 0.0)
    np.testing.assert_allclose(m.predict(X), m.theta_, atol=1e-9 * np.std(y))


def test_one_dimensional_matches_dense_reference():
    # 1-D, increasing and concave (an Engel-curve shape), with a decreasing stretch in the data
    x = np.linspace(0.0, 3.0, 30)
    rng = np.random.default_rng(5)
    y = np.sin(x) + 0.2 * rng.standard_normal(30)
    m = PiecewiseLinearConvexRegressor(concave=True, increasing=True).fit(x[:, None], y)
    theta, _, obj = _reference(x[:, None], y, concave=True, increasing=[0])
    np.testing.assert_allclose(m.theta_, theta, atol=THETA_ATOL * np.std(y))
    assert abs(m.objective_ - obj) <= OBJ_RTOL * obj
    assert np.all(np.diff(m.theta_) >= 0.0)


def _monotone_along_axes(m, lo, hi, d, signs, seed=0):
    """Predictions along lines parallel to each signed axis change with the stated sign."""
    rng = np.random.default_rng(seed)
    t = np.linspace(lo, hi, 201)
    for k, s in signs.items():
        for _ in range(10):
            P = np.tile(rng.uniform(lo, hi, size=d), (t.size, 1))
            P[:, k] = t
            assert np.all(s * np.diff(m.predict(P)) >= 0.0), (k, s)


def test_monotone_truth_gives_monotone_fit_everywhere():
    # increasing in x0, decreasing in x1, convex; noise large enough that the unsigned fit
    # has slopes of the wrong sign
    rng = np.random.default_rng(2)
    X = rng.uniform(0.0, 1.0, size=(80, 2))
    y = np.exp(X[:, 0]) + (1 - X[:, 1]) ** 2 + 0.3 * rng.standard_normal(80)
    free = PiecewiseLinearConvexRegressor().fit(X, y)
    assert np.any(free.zeta_[:, 0] < 0) and np.any(free.zeta_[:, 1] > 0)
    m = PiecewiseLinearConvexRegressor(increasing=[0], decreasing=[1]).fit(X, y)
    assert np.all(m.zeta_[:, 0] >= 0.0) and np.all(m.zeta_[:, 1] <= 0.0)
    # also far outside the data's box
    _monotone_along_axes(m, -3.0, 4.0, 2, {0: 1, 1: -1})
    assert m.objective_ >= free.objective_


def test_concave_increasing_on_engel_data():
    X, y = load_engel(return_X_y=True)
    m = PiecewiseLinearConvexRegressor(concave=True, increasing=True).fit(X, y)
    assert np.all(m.zeta_ >= 0.0)
    grid = np.linspace(0.0, 6000.0, 500)[:, None]
    f = m.predict(grid)
    assert np.all(np.diff(f) >= 0.0)
    assert np.all(np.diff(f, 2) <= 1e-9 * np.ptp(y))  # concave
    assert m.max_violation_ <= 1e-6 * np.std(y) * 1.0001


def test_inactive_signs_change_nothing():
    # a noiseless increasing convex truth: the unsigned fit already has slopes >= 0 at the
    # data, so adding increasing=True gives the same fitted values
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(30, 2))
    y = np.sum(X**2, axis=1)
    free = PiecewiseLinearConvexRegressor().fit(X, y)
    signed = PiecewiseLinearConvexRegressor(increasing=True).fit(X, y)
    np.testing.assert_allclose(signed.theta_, free.theta_, atol=THETA_ATOL * np.std(y))


@pytest.mark.parametrize("kwargs", [{}, {"increasing": None, "decreasing": None},
                                    {"increasing": False, "decreasing": []}])
def test_defaults_unchanged(kwargs):
    X, y = _data(30, 2, 0, _bowl)
    a = PiecewiseLinearConvexRegressor().fit(X, y)
    b = PiecewiseLinearConvexRegressor(**kwargs).fit(X, y)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    np.testing.assert_array_equal(a.zeta_, b.zeta_)


def test_sample_weight_with_signs_equals_duplication():
    X, y = _data(20, 2, 3, _bowl)
    w = np.arange(20) % 3 + 1
    a = PiecewiseLinearConvexRegressor(increasing=[0]).fit(X, y, sample_weight=w)
    b = PiecewiseLinearConvexRegressor(increasing=[0]).fit(np.repeat(X, w, axis=0),
                                                           np.repeat(y, w))
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=THETA_ATOL * np.std(y))


@pytest.mark.parametrize("increasing, decreasing", [
    ([0], [1]), (True, None), (None, True), (np.array([1]), None), ((0,), None)])
def test_save_load_round_trip(tmp_path, increasing, decreasing):
    X, y = _data(30, 2, 1, _bowl)
    m = PiecewiseLinearConvexRegressor(increasing=increasing, decreasing=decreasing).fit(X, y)
    m.save(tmp_path / "m.npz")
    m2 = load(tmp_path / "m.npz")
    for name in ("increasing", "decreasing"):
        v, v2 = getattr(m, name), getattr(m2, name)
        if isinstance(v, (list, bool)) or v is None:
            assert v2 == v and type(v2) is type(v)
        else:  # tuples come back as lists, arrays as float arrays of the same indices
            np.testing.assert_array_equal(np.asarray(v2), np.asarray(v))
    Xt = np.random.default_rng(0).uniform(-2, 2, size=(40, 2))
    np.testing.assert_array_equal(m2.predict(Xt), m.predict(Xt))
    # the loaded parameters refit to the same model
    np.testing.assert_array_equal(m2.fit(X, y).theta_, m.theta_)


@pytest.mark.parametrize("params, match", [
    ({"increasing": [2]}, "increasing .*index 2, out of range for 2 feature"),
    ({"decreasing": [0, 5]}, "decreasing .*index 5"),
    ({"decreasing": [1e300]}, "decreasing .*index 1000000"),
    ({"increasing": [-1]}, "increasing"),
    ({"increasing": [0.5]}, "increasing"),
    ({"increasing": "0"}, "increasing"),
    ({"increasing": 1}, "increasing"),
    ({"decreasing": [True]}, "decreasing"),
    ({"decreasing": [[0]]}, "decreasing"),
    ({"decreasing": {0}}, "decreasing"),
    ({"increasing": np.array(0)}, "increasing"),
    ({"increasing": [0], "decreasing": [0, 1]}, r"increasing and decreasing .*\[0\]"),
    ({"increasing": True, "decreasing": [1]}, r"increasing and decreasing .*\[1\]"),
])
def test_bad_signs_raise(params, match):
    X, y = _data(10, 2, 0, _bowl)
    with pytest.raises(ValueError, match=match):
        PiecewiseLinearConvexRegressor(**params).fit(X, y)


def test_signed_estimator_passes_clone_and_get_params():
    from sklearn.base import clone

    m = PiecewiseLinearConvexRegressor(increasing=[0, 2], decreasing=[1])
    c = clone(m)
    assert c.get_params()["increasing"] == [0, 2] and c.get_params()["decreasing"] == [1]


# ---- scikit-learn contract with signs -----------------------------------------------------
# the same expected failure as the unsigned estimator (tests/test_cnls.py): predictions at rows
# of weight 0 use the non-unique max-affine extension
@parametrize_with_checks([PiecewiseLinearConvexRegressor(increasing=True)],
                         expected_failed_checks=lambda est: {
                             "check_sample_weight_equivalence_on_dense_data":
                                 "predictions at rows of weight 0 use the non-unique "
                                 "max-affine extension"})
def test_sklearn_compatible_with_signs(estimator, check):
    check(estimator)
