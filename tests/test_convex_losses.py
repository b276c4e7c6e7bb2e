"""ConvexRegressor with loss="huber" | "quantile" | "expectile": dual and primal against an
independent CVXPY formulation, the limits that reduce to least squares, quantile properties,
the dual variables, weights, errors."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from psdsos import ConvexRegressor, load
from psdsos.estimators._convex import NonConvexFitWarning
from psdsos.features import ExactFeatures
from psdsos.kernels import GaussianKernel
from psdsos.losses import get_loss
from psdsos.problems import ConvexRegressionProblem
from psdsos.problems._convex_loss import ConvexRegressionLossProblem
from psdsos.solvers import solve_dual
from psdsos.solvers._dual_convex import solve_dual_loss
from psdsos.sos import SoSBlock

LOSSES = [("huber", {"delta": 0.15}), ("quantile", {"quantile": 0.3}),
          ("expectile", {"quantile": 0.8})]


def _data(seed=0, n=24, p=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    y = np.sum(X**2, axis=1) + 0.1 * rng.standard_t(2, n)
    return X, y, rng.uniform(-1, 1, (30, p))


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonConvexFitWarning)  # few constraint points
        return est.fit(*args, **kw)


def _reference(est, X, y, sample_weight=None):
    """Eq. 28 with the loss, written directly in CVXPY in the estimator's standardized units
    (alpha, beta, B; the loss expressions written here, not taken from psdsos.losses),
    solved with Clarabel at 1e-10."""
    U = (X - est.x_offset_) / est.x_scale_
    Zu = (est.constraint_points_ - est.x_offset_) / est.x_scale_
    t = (y - est.y_offset_) / est.y_scale_
    k = GaussianKernel(1.0)
    n, p = U.shape
    K = k(U, U)
    Hk = k.hessian(Zu, U)
    Phi = ExactFeatures(k).fit(est.constraint_points_ / est.x_scale_).transform(
        est.constraint_points_ / est.x_scale_)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    c = 2 * w / w.sum()
    a = cp.Variable(n)
    b = cp.Variable(p + 1)
    r = K @ a + np.hstack([np.ones((n, 1)), U]) @ b - t
    name = est.loss
    if name == "huber":
        data = c @ cp.huber(r, est.delta / est.y_scale_) / 2  # cp.huber = 2 h_delta
    elif name == "quantile":
        tau = est.quantile
        data = c @ cp.maximum(-tau * r, (1 - tau) * r)
    elif name == "expectile":
        tau = est.quantile
        data = c @ ((1 - tau) * cp.square(cp.pos(r)) + tau * cp.square(cp.neg(r)))
    else:
        data = c @ cp.square(r) / 2
    L = np.linalg.cholesky(K + 1e-12 * np.eye(n))
    block = SoSBlock(Phi, p, max_condition=None)
    iu, ju = np.triu_indices(p)
    H = cp.hstack([Hk[:, :, i, j] @ a for i, j in zip(iu, ju, strict=True)])
    H = cp.reshape(H, (len(iu), Zu.shape[0]), order="C").T
    obj = data + est.rho * cp.sum_squares(L.T @ a) + block.regularizer(est.lam1, est.lam2)
    prob = cp.Problem(cp.Minimize(obj), block.constraints_packed(H))
    prob.solve(solver="CLARABEL", tol_gap_rel=1e-10, tol_feas=1e-10, tol_gap_abs=1e-12)
    return prob.value


@pytest.mark.parametrize("loss, kw", LOSSES, ids=[n for n, _ in LOSSES])
@pytest.mark.parametrize("solver", ["dual", "primal"])
def test_matches_independent_cvxpy_reference(loss, kw, solver):
    X, y, Xt = _data(1)
    est = ConvexRegressor(loss=loss, **kw, constraint_points=8, random_state=0, solver=solver,
                          primal_solver="CLARABEL", tol=1e-8)
    _fit(est, X, y)
    ref = _reference(est, X, y)
    assert est.objective_ == pytest.approx(ref, rel=1e-5)
    assert est.dual_gap_ <= 1e-6  # certified
    assert est.constraint_residual_ <= 1e-5


@pytest.mark.parametrize("n", [14, pytest.param(30, marks=pytest.mark.slow)])
@pytest.mark.parametrize("loss, kw", LOSSES, ids=[n for n, _ in LOSSES])
def test_dual_equals_primal(loss, kw, n):
    X, y, Xt = _data(2, n=n)
    common = dict(loss=loss, **kw, constraint_points=8, random_state=0, tol=1e-8)
    d = _fit(ConvexRegressor(**common), X, y)
    p = _fit(ConvexRegressor(**common, solver="primal", primal_solver="CLARABEL"), X, y)
    assert d.objective_ == pytest.approx(p.objective_, rel=1e-5)
    np.testing.assert_allclose(d.predict(Xt), p.predict(Xt), atol=1e-3 * np.std(y))


def test_weighted_huber_matches_reference_and_duplicates():
    X, y, Xt = _data(3)
    w = np.random.default_rng(3).integers(1, 4, len(y))
    kw = dict(loss="huber", delta=0.15, constraint_points=8, random_state=0, tol=1e-8)
    a = _fit(ConvexRegressor(**kw), X, y, sample_weight=w)
    b = _fit(ConvexRegressor(**kw), np.repeat(X, w, axis=0), np.repeat(y, w))
    assert a.objective_ == pytest.approx(_reference(a, X, y, w), rel=1e-5)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), atol=1e-4)


def test_huber_with_large_delta_is_least_squares():
    X, y, Xt = _data(4)
    kw = dict(constraint_points=8, random_state=0, tol=1e-9)
    ls = _fit(ConvexRegressor(**kw), X, y)
    rmax = np.max(np.abs(ls.predict(X) - y))
    hub = _fit(ConvexRegressor(**kw, loss="huber", delta=1.01 * rmax), X, y)
    # same objective: h_delta(r) = r^2 / 2 below delta, and the data term is 2 h / n
    assert hub.objective_ == pytest.approx(ls.objective_, rel=1e-7)
    np.testing.assert_allclose(hub.predict(Xt), ls.predict(Xt), atol=1e-5)
    # a smaller delta changes the fit
    small = _fit(ConvexRegressor(**kw, loss="huber", delta=0.3 * rmax), X, y)
    assert np.max(np.abs(small.predict(Xt) - ls.predict(Xt))) > 1e-3


def test_expectile_one_half_is_least_squares():
    X, y, Xt = _data(5)
    kw = dict(constraint_points=8, random_state=0, tol=1e-9)
    ls = _fit(ConvexRegressor(**kw), X, y)
    ex = _fit(ConvexRegressor(**kw, loss="expectile", quantile=0.5), X, y)
    assert ex.objective_ == pytest.approx(ls.objective_, rel=1e-7)
    np.testing.assert_allclose(ex.predict(Xt), ls.predict(Xt), atol=1e-5)


@pytest.mark.parametrize("tau", [0.2, 0.5, 0.8])
def test_quantile_share_below(tau):
    # optimality with an intercept (sum_i u_i = 0, u_i in c [-tau, 1 - tau]):
    # #{y_i < f(x_i)} <= tau n <= #{y_i <= f(x_i)}, residuals within the fit's tolerance
    # counted as zero
    rng = np.random.default_rng(6)
    n = 40
    X = rng.uniform(-1, 1, (n, 1))
    y = X[:, 0] ** 2 + 0.3 * rng.standard_normal(n)
    est = _fit(ConvexRegressor(loss="quantile", quantile=tau, constraint_points=6, rho=1e-2,
                               random_state=0, tol=1e-8), X, y)
    r = est.predict(X) - y
    zero = 1e-4 * np.std(y)
    assert np.sum(r > zero) <= tau * n + 1e-9
    assert np.sum(r > -zero) >= tau * n - 1e-9


def test_quantile_curves_do_not_cross():
    rng = np.random.default_rng(7)
    n = 60
    X = rng.uniform(-2, 2, (n, 1))
    y = X[:, 0] ** 2 + (0.3 + 0.3 * np.abs(X[:, 0])) * rng.standard_normal(n)
    grid = np.linspace(X.min(), X.max(), 200)[:, None]
    curves = [
        _fit(ConvexRegressor(loss="quantile", quantile=q, constraint_points=8, rho=1e-3,
                             random_state=0, tol=1e-7), X, y).predict(grid)
        for q in (0.1, 0.5, 0.9)
    ]
    assert np.all(curves[0] <= curves[1] + 1e-6)
    assert np.all(curves[1] <= curves[2] + 1e-6)


def _problem(loss, seed=8, n=20):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sum(X**2, axis=1) + 0.2 * rng.standard_t(2, n)
    y = (y - y.mean()) / y.std()
    k = GaussianKernel(1.0)
    Z = X[:8]
    Phi = ExactFeatures(k).fit(Z).transform(Z)
    E = np.hstack([np.ones((n, 1)), X])
    args = (k(X, X), k.hessian(Z, X), Phi, y, E, 1e-2, 0.0, 1e-2)
    return args, ConvexRegressionLossProblem(*args, loss)


def test_huber_dual_variables_are_clipped_residuals():
    delta = 0.2
    _, prob = _problem(get_loss("huber", delta=delta))
    res = solve_dual_loss(prob, tol=1e-9, max_iter=50000)
    z = prob.K @ res.alpha + prob.E @ res.beta
    # u_i = c_i l'(f(x_i) - y_i) = c_i clip(r_i, -delta, delta)
    np.testing.assert_allclose(res.u, prob.c * np.clip(z - prob.y, -delta, delta),
                               atol=1e-4 * np.max(prob.c) * delta)
    assert np.max(np.abs(prob.E.T @ res.u)) < 1e-12


def test_squared_loss_through_the_proximal_solver_matches_eq29():
    args, prob = _problem(get_loss("squared"))
    ref = solve_dual(ConvexRegressionProblem(*args), tol=1e-10, max_iter=50000)
    res = solve_dual_loss(prob, tol=1e-8, max_iter=100000)
    assert res.primal_objective == pytest.approx(ref.primal_objective, rel=1e-6)


def test_prox_with_the_affine_constraint_matches_cvxpy():
    _, prob = _problem(get_loss("quantile", quantile=0.3))
    rng = np.random.default_rng(9)
    V = rng.standard_normal(prob.n) * 0.1
    eta = 0.7
    u = prob.prox(V, eta)
    x = cp.Variable(prob.n)
    lo, hi = -0.3 * prob.c, 0.7 * prob.c
    pr = cp.Problem(cp.Minimize(eta * (prob.y @ x) + 0.5 * cp.sum_squares(x - V)),
                    [prob.E.T @ x == 0, x >= lo, x <= hi])
    pr.solve(solver="CLARABEL", tol_gap_rel=1e-12, tol_feas=1e-12)
    np.testing.assert_allclose(u, x.value, atol=1e-8)
    assert np.max(np.abs(prob.E.T @ u)) < 1e-12


def test_convergence_warning():
    X, y, _ = _data(10)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        _fit(ConvexRegressor(loss="quantile", quantile=0.3, constraint_points=8, max_iter=1,
                             random_state=0), X, y)


def test_concave_quantile_is_the_negated_convex_fit():
    X, y, Xt = _data(11)
    kw = dict(constraint_points=8, random_state=0, tol=1e-8, solver="primal",
              primal_solver="CLARABEL")
    a = _fit(ConvexRegressor(**kw, loss="quantile", quantile=0.3, concave=True), X, -y)
    b = _fit(ConvexRegressor(**kw, loss="quantile", quantile=0.7), X, y)
    np.testing.assert_allclose(a.predict(Xt), -b.predict(Xt), atol=1e-4)


def test_delta_scales_with_y():
    X, y, Xt = _data(12)
    kw = dict(constraint_points=8, random_state=0, tol=1e-8, loss="huber")
    a = _fit(ConvexRegressor(**kw, delta=0.15), X, y)
    b = _fit(ConvexRegressor(**kw, delta=0.15 * 1e3), X, 1e3 * y)
    np.testing.assert_allclose(1e3 * a.predict(Xt), b.predict(Xt), rtol=1e-5, atol=1e-3)


def test_bad_loss_parameters():
    X, y, _ = _data(13, n=10)
    with pytest.raises(ValueError, match="delta"):
        ConvexRegressor(loss="huber").fit(X, y)
    with pytest.raises(ValueError, match="quantile"):
        ConvexRegressor(loss="quantile").fit(X, y)
    with pytest.raises(ValueError, match="quantile"):
        ConvexRegressor(loss="quantile", quantile=1.5).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        ConvexRegressor(loss="huber", delta=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        ConvexRegressor(delta=1.0).fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        ConvexRegressor(loss="absolute").fit(X, y)
    with pytest.raises(ValueError, match="representation"):
        ConvexRegressor(loss="huber", delta=1.0, representation="exact").fit(X, y)


def test_save_load_keeps_the_loss(tmp_path):
    X, y, Xt = _data(14)
    est = _fit(ConvexRegressor(loss="expectile", quantile=0.7, constraint_points=8,
                               random_state=0), X, y)
    est.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert back.loss == "expectile" and back.quantile == 0.7
    np.testing.assert_allclose(back.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("loss, kw", LOSSES, ids=[n for n, _ in LOSSES])
def test_without_intercept_dual_equals_primal(loss, kw):
    # no affine part: no constraint E^T u = 0, no offset beta
    X, y, Xt = _data(15, n=14)
    common = dict(loss=loss, **kw, constraint_points=8, random_state=0, tol=1e-8,
                  fit_intercept=False)
    d = _fit(ConvexRegressor(**common), X, y)
    p = _fit(ConvexRegressor(**common, solver="primal", primal_solver="CLARABEL"), X, y)
    assert d.objective_ == pytest.approx(p.objective_, rel=1e-5)
    assert d.intercept_ == 0.0 and np.all(d.coef_ == 0)


# ---- scikit-learn estimator checks with a Huber loss -------------------------------------
def _huber_for_checks():
    # as in test_convex_regressor.py: 8 Sobol constraint points, rank-4 features, capped
    # iterations, so that each check's fit stays well under a second
    return ConvexRegressor(loss="huber", delta=1.0, constraint_points=8, n_landmarks=4,
                           max_iter=200, random_state=0)


@pytest.mark.parametrize("check_name", [
    "check_sample_weights_shape", "check_sample_weights_not_an_array",
    "check_sample_weights_list", "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data", "check_fit2d_1sample",
    "check_regressors_train", "check_estimators_nan_inf",
])
def test_sklearn_checks_huber_fast(check_name):
    """The weight and fit checks of the full list (run by the slow test below, about 100 s:
    all 59 pass, measured)."""
    from sklearn.utils import estimator_checks

    est = _huber_for_checks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", NonConvexFitWarning)
        getattr(estimator_checks, check_name)(type(est).__name__, est)


@pytest.mark.slow
def test_sklearn_checks_huber_all():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", NonConvexFitWarning)
        check_estimator(_huber_for_checks())
