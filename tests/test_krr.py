"""KernelRidgeRegressor: the paper's (sigma, rho) mapped onto scikit-learn's KernelRidge."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

from psdsos.estimators import KernelRidgeRegressor
from psdsos.kernels import Matern52Kernel


def _data(rng, n=40, p=2):
    X = rng.uniform(-2, 2, (n, p))
    y = np.sin(X).sum(axis=1) + 0.5 * X[:, 0] + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("sigma, rho", [(0.7, 1e-2), (2.0, 1e-5)])
def test_equals_sklearn_kernel_ridge_without_intercept(rng, sigma, rho):
    X, y = _data(rng)
    Xt = rng.uniform(-2, 2, (15, 2))
    ours = KernelRidgeRegressor(sigma=sigma, rho=rho, fit_intercept=False).fit(X, y)
    ref = KernelRidge(alpha=len(X) * rho, kernel="rbf", gamma=1 / (2 * sigma**2)).fit(X, y)
    np.testing.assert_allclose(ours.alpha_, ref.dual_coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), rtol=1e-10, atol=1e-12)


def test_closed_form_with_affine_part(rng):
    # argmin 1/n ||y - E beta - K alpha||^2 + rho alpha^T K alpha, E = [1, X]: the normal
    # equations of the joint problem, solved directly.
    X, y = _data(rng)
    n, sigma, rho = len(X), 0.8, 1e-3
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.exp(-D2 / (2 * sigma**2))
    E = np.hstack([np.ones((n, 1)), X])
    # stationarity: K (K alpha + E beta - y) / n + rho K alpha = 0 and E^T (...) = 0
    top = np.hstack([K + n * rho * np.eye(n), E])
    bottom = np.hstack([E.T, np.zeros((3, 3))])
    sol = np.linalg.solve(np.vstack([top, bottom]), np.concatenate([y, np.zeros(3)]))
    alpha, beta = sol[:n], sol[n:]
    m = KernelRidgeRegressor(sigma=sigma, rho=rho).fit(X, y)
    np.testing.assert_allclose(m.alpha_, alpha, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose([m.intercept_, *m.coef_], beta, rtol=1e-8, atol=1e-10)
    Xt = rng.uniform(-2, 2, (10, 2))
    Kt = np.exp(-((Xt[:, None] - X[None]) ** 2).sum(-1) / (2 * sigma**2))
    np.testing.assert_allclose(m.predict(Xt), Kt @ alpha + beta[0] + Xt @ beta[1:],
                               rtol=1e-8, atol=1e-10)
    # the objective is minimal: no perturbation of (alpha, beta) decreases it
    def J(a, b):
        r = y - K @ a - E @ b
        return r @ r / n + rho * a @ K @ a
    J0 = J(m.alpha_, np.r_[m.intercept_, m.coef_])
    for _ in range(5):
        da, db = 1e-3 * rng.standard_normal(n), 1e-3 * rng.standard_normal(3)
        assert J(m.alpha_ + da, np.r_[m.intercept_, m.coef_] + db) >= J0 - 1e-12


def test_other_kernels_go_through_precomputed(rng):
    X, y = _data(rng, n=25)
    k = Matern52Kernel(0.9)
    m = KernelRidgeRegressor(kernel=k, rho=1e-3, fit_intercept=False).fit(X, y)
    ref = KernelRidge(alpha=25 * 1e-3, kernel="precomputed").fit(k(X, X), y)
    Xt = rng.uniform(-2, 2, (7, 2))
    np.testing.assert_allclose(m.predict(Xt), ref.predict(k(Xt, X)), rtol=1e-10)
    m2 = KernelRidgeRegressor(kernel="matern52", sigma=0.9, rho=1e-3,
                              fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(m2.predict(Xt), m.predict(Xt), rtol=1e-12)


@pytest.mark.parametrize("bad", [{"sigma": 0.0}, {"rho": -1.0}, {"kernel": "nope"},
                                 {"fit_intercept": "yes"}])
def test_bad_parameters_raise(rng, bad):
    X, y = _data(rng, n=10)
    with pytest.raises(ValueError, match=next(iter(bad))):
        KernelRidgeRegressor(**bad).fit(X, y)


@parametrize_with_checks([KernelRidgeRegressor(), KernelRidgeRegressor(fit_intercept=False)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
