"""FenchelYoungEstimator (psdsos.structured._fy_estimator): the logistic-regression special
case against scikit-learn, first-order optimality of the fit, and the calibrated decoding of
eq. 11 against brute force over every structure."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from psdsos.structured._fenchel_young import fenchel_young_loss
from psdsos.structured._fy_estimator import FenchelYoungEstimator


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_simplex_kl_is_multinomial_logistic_regression(iris):
    X, y = iris
    lam = 1e-2
    est = FenchelYoungEstimator("multiclass", projection="kl", lam=lam, tol=1e-9,
                                max_iter=5000).fit(X, y)
    ref = LogisticRegression(C=1.0 / (len(X) * lam), tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(est.project(X), ref.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


@pytest.mark.parametrize(("projection_set", "projection"),
                         [("marginal", "euclidean"), ("unit_cube", "kl"), ("nonneg", "euclidean")])
def test_fit_is_first_order_optimal(iris, projection_set, projection):
    X, y = iris
    lam = 1e-2
    est = FenchelYoungEstimator("multiclass", projection_set=projection_set,
                                projection=projection, lam=lam, tol=1e-8,
                                max_iter=5000).fit(X, y)
    # the gradient of (1/n) sum S(W^T x_i + c, y_i) + lam/2 ||W||^2, recomputed
    Phi = np.eye(3)[y]
    theta = X @ est.coef_ + est.intercept_
    _, G = fenchel_young_loss(theta, Phi, est._C, projection)
    gW = X.T @ G / len(X) + lam * est.coef_
    gc = G.mean(axis=0)
    assert np.abs(gW).max() <= 1e-7 and np.abs(gc).max() <= 1e-7


def _all_outputs(kind, k):
    if kind == "multiclass" or kind == "ordinal":
        return np.arange(k)
    if kind == "multilabel":
        return np.array(list(itertools.product([0, 1], repeat=k)))
    return np.array([np.argsort(p) for p in itertools.permutations(range(k))])


@pytest.mark.parametrize(("kind", "k"), [("multiclass", 4), ("ordinal", 5), ("multilabel", 4),
                                         ("ranking", 4)])
def test_calibrated_decoding_is_the_expected_loss_minimizer(kind, k):
    """mu = sum_j p_j phi(y_j): the decoding of eq. 11 minimizes sum_j p_j L(yhat, y_j)
    over every structure (brute force through the space's own loss)."""
    rng = np.random.default_rng(k)
    outputs = _all_outputs(kind, k)
    est = FenchelYoungEstimator(kind, projection_set="unit_cube", max_iter=50)
    X = rng.normal(size=(len(outputs), 2))
    with warnings.catch_warnings():
        # the fit only sets up the space: decode() does not use the model
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, outputs)
    space = est.space_
    for _ in range(20):
        idx = rng.choice(len(outputs), size=3, replace=False)
        p = rng.dirichlet(np.ones(3))
        mu = p @ space.embed(outputs[idx])
        yhat = est.decode(mu[None])
        risks = [sum(pj * space.loss(outputs[i:i + 1], cand[None])[0]
                     for pj, i in zip(p, idx, strict=True)) for cand in outputs]
        got = sum(pj * space.loss(outputs[i:i + 1], yhat)[0] for pj, i in zip(p, idx, strict=True))
        assert got <= min(risks) + 1e-12


def test_output_space_object(tmp_path):
    import psdsos
    from psdsos.structured import SphereSpace
    from psdsos.structured.spaces import OrdinalSpace

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.array(["low", "mid", "high"])[np.clip((X[:, 0] + 1.5).astype(int), 0, 2)]
    space = OrdinalSpace(classes=["low", "mid", "high"])
    est = FenchelYoungEstimator(space).fit(X, y)
    assert not hasattr(space, "classes_")  # the parameter is not fitted in place
    assert list(est.classes_) == ["low", "mid", "high"]
    assert est.score(X, y) > -0.5
    est.save(tmp_path / "o.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "o.npz").predict(X), est.predict(X))
    with pytest.raises(ValueError, match="discrete output space object"):
        FenchelYoungEstimator(SphereSpace()).fit(X, y)


def test_projection_set_must_fit_the_output(iris):
    X, y = iris
    with pytest.raises(ValueError, match="does not apply to output 'multiclass'"):
        FenchelYoungEstimator("multiclass", projection_set="row_simplex").fit(X, y)
    with pytest.raises(ValueError, match="output must be one of"):
        FenchelYoungEstimator("spd").fit(X, y)


@pytest.mark.parametrize("projection", ["euclidean", "kl"])
def test_kernel_model_is_first_order_optimal_in_the_rkhs(iris, projection):
    """theta = K beta + c with lam/2 tr(beta^T K beta): at the optimum
    K (G / n + lam beta) = 0 and sum_i G_i = 0 (G the loss gradients); the fit runs in
    RKHS-isometric coordinates, this checks it in the original ones."""
    X, y = iris
    lam = 1e-3
    est = FenchelYoungEstimator("multiclass", projection=projection, model="kernel",
                                lam=lam, tol=1e-9, max_iter=5000).fit(X, y)
    K = est.kernel_(X, X)
    theta = K @ est.coef_ + est.intercept_
    np.testing.assert_allclose(theta.reshape(-1, 3), est.scores(X), atol=1e-10)
    _, G = fenchel_young_loss(theta, np.eye(3)[y], est._C, projection)
    assert np.abs(K @ (G / len(X) + lam * est.coef_)).max() <= 1e-7
    assert np.abs(G.mean(axis=0)).max() <= 1e-7
    assert est.n_iter_ < 500  # well conditioned (it took > 1000 in the beta coordinates)


@pytest.mark.parametrize("model", ["linear", "kernel"])
def test_save_and_load_round_trip(iris, tmp_path, model):
    import psdsos

    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    est = FenchelYoungEstimator("multiclass", projection="kl", model=model).fit(X, labels)
    est.save(tmp_path / "fy.npz")
    back = psdsos.load(tmp_path / "fy.npz")
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_allclose(back.project(X), est.project(X), rtol=1e-13)
    assert back.predict(X[:1])[0] in labels


def test_ranking_round_trip_and_soft_permutations(tmp_path):
    import psdsos

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    S = X @ rng.normal(size=(3, 4))
    Y = np.argsort(np.argsort(-S, axis=1), axis=1)
    est = FenchelYoungEstimator("ranking", projection_set="marginal", lam=1e-2).fit(X, Y)
    mu = est.project(X[:5])
    assert mu.shape == (5, 4, 4)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, atol=1e-9)  # doubly stochastic
    np.testing.assert_allclose(mu.sum(axis=2), 1.0, atol=1e-9)
    est.save(tmp_path / "r.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "r.npz").predict(X), est.predict(X))


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([FenchelYoungEstimator("multiclass", max_iter=50),
                          FenchelYoungEstimator("ordinal", max_iter=50)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=50 on toy data
        check(estimator)


def test_convergence_warning_names_the_right_setting(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        FenchelYoungEstimator("multiclass", max_iter=2).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="no longer decreases in float64"):
        FenchelYoungEstimator("multiclass", projection="kl", lam=1e-2, tol=1e-14,
                              max_iter=5000).fit(X, y)


def test_importable_where_the_other_estimators_are():
    import psdsos
    from psdsos.structured import FenchelYoungEstimator as FY
    from psdsos.structured import LocalizedSELF

    assert psdsos.FenchelYoungEstimator is FY
    assert psdsos.LocalizedSELF is LocalizedSELF
    assert {"FenchelYoungEstimator", "LocalizedSELF"} <= set(psdsos.__all__)
