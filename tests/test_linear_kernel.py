"""The linear kernel k(x, y) = <x, y> of the SELF estimators (closed forms: ridge regression)."""

import numpy as np
import pytest

import psdsos
from psdsos.estimators import ConvexRegressor, PSDRegressor
from psdsos.kernels import KERNELS, LinearKernel, get_kernel
from psdsos.structured import KRLSEstimator, SELFEstimator


def _data(seed=0, n=25, p=4, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Y = X @ rng.normal(size=(p, k)) + 0.1 * rng.normal(size=(n, k))
    return X, Y, rng.normal(size=(7, p))


def _ridge(X, Y, lam):
    """Ridge regression without intercept, objective 1/n ||Y - X W||^2 + lam ||W||^2."""
    n, p = X.shape
    return np.linalg.solve(X.T @ X + n * lam * np.eye(p), X.T @ Y)


def test_linear_kernel_values_and_name():
    X, _, Xt = _data()
    k = get_kernel("Linear", sigma=3.0)  # sigma ignored
    assert isinstance(k, LinearKernel) and k == LinearKernel()
    np.testing.assert_allclose(k(X, Xt), X @ Xt.T, rtol=1e-14)
    np.testing.assert_allclose(k.diag(X), np.sum(X**2, axis=1), rtol=1e-14)
    assert "linear" not in KERNELS  # the radial kernels only


@pytest.mark.parametrize("cls", [SELFEstimator, KRLSEstimator])
@pytest.mark.parametrize("lam", [1e-3, 0.3])
def test_linear_self_is_ridge_regression(cls, lam):
    X, Y, Xt = _data()
    W = _ridge(X, Y, lam)
    model = cls(kernel="linear", lam=lam).fit(X, Y)
    # the weights (K + n lam I)^{-1} X x solve the ridge normal equations: error ~ cond * eps
    np.testing.assert_allclose(model.predict(Xt), Xt @ W, rtol=1e-9, atol=1e-11)


def test_linear_ignores_sigma_and_zero_spread_is_fine():
    X, Y, Xt = _data()
    a = SELFEstimator(kernel="linear", sigma=1e-3, lam=0.1).fit(X, Y).predict(Xt)
    b = SELFEstimator(kernel=LinearKernel(), lam=0.1).fit(X, Y).predict(Xt)
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    # sigma="scale" is not computed for the linear kernel (no bandwidth): constant X is valid
    Xc = np.ones((6, 2))
    SELFEstimator(kernel="linear", lam=0.1).fit(Xc, np.arange(6.0)[:, None])


def test_linear_nystrom_full_rank_is_exact():
    X, Y, Xt = _data()
    W = _ridge(X, Y, 0.05)
    model = SELFEstimator(kernel="linear", lam=0.05, n_landmarks=X.shape[1],
                          random_state=0).fit(X, Y)
    # rank-p landmarks span the linear feature space: same predictor up to the jitter
    np.testing.assert_allclose(model.predict(Xt), Xt @ W, rtol=1e-8, atol=1e-9)


def test_linear_save_load(tmp_path):
    X, Y, Xt = _data()
    model = SELFEstimator(kernel="linear", lam=0.1).fit(X, Y)
    model.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    assert isinstance(back.kernel_, LinearKernel)
    np.testing.assert_array_equal(back.predict(Xt), model.predict(Xt))
    obj = SELFEstimator(kernel=LinearKernel(), lam=0.1).fit(X, Y)
    obj.save(tmp_path / "o.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "o.npz").predict(Xt), model.predict(Xt))


@pytest.mark.parametrize("kernel", ["linear", LinearKernel()])
def test_radial_estimators_refuse_linear(kernel):
    X = np.random.default_rng(0).normal(size=(8, 2))
    with pytest.raises(ValueError, match="kernel of PSDRegressor.*radial kernel"):
        PSDRegressor(kernel=kernel).fit(X, np.stack([np.eye(2)] * 8))
    with pytest.raises(ValueError, match="kernel of ConvexRegressor.*radial kernel"):
        ConvexRegressor(kernel=kernel).fit(X, np.sum(X**2, axis=1))
