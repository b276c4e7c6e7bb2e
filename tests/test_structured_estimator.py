"""SELFEstimator and KRLSEstimator (manifold paper, eq. 2-3, Appendix G): weights against
an explicit linear solve, the Euclidean case against scikit-learn's KernelRidge, Nystrom
weights against their formula, scikit-learn compatibility (estimator checks, GridSearchCV),
bad input, persistence without pickle, and predictions that stay in the output space.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdsos
from psdsos.features import NystromFeatures
from psdsos.kernels import GaussianKernel
from psdsos.structured import (
    EuclideanSpace,
    KRLSEstimator,
    OutputSpace,
    SELFEstimator,
    SPDSpace,
    SphereSpace,
)

#: Checks SELF fails on purpose, with the reason (scikit-learn 1.9).
EXPECTED_FAILED_CHECKS = {
    "check_non_transformer_estimators_n_iter": (
        "run for classifiers with a max_iter parameter: SELFEstimator's max_iter only "
        "overrides the iterative decoders of the manifold spaces; the discrete decoders "
        "(multiclass, ordinal) are exact combinatorial oracles with no iterations, so "
        "there is no n_iter_ to report"
    ),
}


@parametrize_with_checks(
    [SELFEstimator(), KRLSEstimator(), SELFEstimator(output="multiclass"),
     SELFEstimator(output="ordinal"), KRLSEstimator(output="ordinal")],
    expected_failed_checks=lambda est: (
        EXPECTED_FAILED_CHECKS if isinstance(est, SELFEstimator) and est.output != "euclidean"
        else {}),
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------
def circle_data(rng, n=40, noise=0.05):
    X = rng.uniform(-1, 1, size=(n, 2))
    th = 2.0 * X[:, 0] + X[:, 1] + noise * rng.standard_normal(n)
    return X, np.c_[np.cos(th), np.sin(th)]


def spd_data(rng, n=30, d=3):
    X = rng.uniform(-1, 1, size=(n, 2))
    L = np.zeros((n, d, d))
    for i in range(d):
        L[:, i, i] = X[:, 0] * (i + 1) * 0.5
    L[:, 0, 1] = L[:, 1, 0] = X[:, 1] * 0.5
    w, V = np.linalg.eigh(L)
    return X, (V * np.exp(w)[:, None, :]) @ np.swapaxes(V, 1, 2)


# ---------------------------------------------------------------------------------------
# the weights alpha(x), eq. 3
# ---------------------------------------------------------------------------------------
def test_scores_solve_the_ridge_system(rng):
    X, Y = circle_data(rng)
    lam, sigma = 1e-3, 0.4
    est = SELFEstimator(sigma=sigma, lam=lam, output="sphere").fit(X, Y)
    Xt = rng.uniform(-1, 1, (7, 2))
    k = lambda A, B: np.exp(-((A[:, None] - B[None]) ** 2).sum(-1) / (2 * sigma**2))  # noqa: E731
    ref = np.linalg.solve(k(X, X) + len(X) * lam * np.eye(len(X)), k(X, Xt)).T
    A = est.scores(Xt)
    assert A.shape == (7, 40)
    np.testing.assert_allclose(A, ref, rtol=1e-9, atol=1e-12)


def test_euclidean_self_equals_sklearn_kernel_ridge(rng):
    """SELF with Euclidean outputs is kernel ridge on the centred targets plus their mean
    with EuclideanSpace(center=True); the default (center=False) and KRLS are kernel ridge on
    the targets as they are."""
    X = rng.uniform(-1, 1, (30, 2))
    Y = np.c_[np.sin(3 * X[:, 0]), X[:, 1] ** 2] + 5.0
    lam, sigma = 1e-3, 0.5
    est = SELFEstimator(sigma=sigma, lam=lam, output=EuclideanSpace(center=True)).fit(X, Y)
    mean = Y.mean(axis=0)
    kr = KernelRidge(alpha=len(X) * lam, kernel="rbf", gamma=1 / (2 * sigma**2))
    kr_c = clone(kr).fit(X, Y - mean)
    Xt = np.r_[rng.uniform(-1, 1, (10, 2)), [[30.0, -30.0]]]  # and a point far away
    np.testing.assert_allclose(est.predict(Xt), kr_c.predict(Xt) + mean, rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(est.predict(Xt)[-1], mean, rtol=1e-12)  # shrinks to the mean
    np.testing.assert_allclose(est.output_space_.mean_, mean, rtol=1e-14)
    # 1-D targets give 1-D predictions, as a scikit-learn regressor
    est1 = SELFEstimator(sigma=sigma, lam=lam, output=EuclideanSpace(center=True)).fit(
        X, Y[:, 0])
    np.testing.assert_allclose(est1.predict(Xt), kr_c.predict(Xt)[:, 0] + mean[0], rtol=1e-8,
                               atol=1e-10)
    # uncentred: kernel ridge on Y, as KRLS with the unconstrained space
    raw = SELFEstimator(sigma=sigma, lam=lam).fit(X, Y)
    np.testing.assert_allclose(raw.predict(Xt), clone(kr).fit(X, Y).predict(Xt), rtol=1e-8,
                               atol=1e-10)
    krls = KRLSEstimator(sigma=sigma, lam=lam).fit(X, Y)
    np.testing.assert_allclose(krls.predict(Xt), raw.predict(Xt), rtol=1e-12, atol=1e-14)
    # score: minus the mean squared loss
    Yt = np.c_[np.sin(3 * Xt[:, 0]), Xt[:, 1] ** 2]
    assert est.score(Xt, Yt) == pytest.approx(-np.mean(np.sum((est.predict(Xt) - Yt) ** 2, 1)))


def test_euclidean_centring_on_linnerud_leave_one_out():
    """The issue's case: scikit-learn's linnerud (20 samples, 3 outputs, standardized
    inputs), leave-one-out mean squared error.  Uncentred SELF (the default) scored
    984 against 236 for predicting the training mean; centred it scores 338 with the
    default lam, and with a large lam it is the mean predictor (the uncentred one predicts
    0 there)."""
    from sklearn.datasets import load_linnerud
    from sklearn.model_selection import LeaveOneOut, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, Y = load_linnerud(return_X_y=True)

    def loo_mse(**kw):
        model = make_pipeline(StandardScaler(), SELFEstimator(**kw))
        return float(np.mean((cross_val_predict(model, X, Y, cv=LeaveOneOut()) - Y) ** 2))

    mean_pred = np.array([np.delete(Y, i, axis=0).mean(axis=0) for i in range(len(Y))])
    mean_mse = float(np.mean((mean_pred - Y) ** 2))
    centred, raw = loo_mse(output=EuclideanSpace(center=True)), loo_mse()
    assert mean_mse == pytest.approx(235.74, abs=0.01)
    assert raw == pytest.approx(984.2, abs=0.1)
    assert centred < 0.4 * raw and centred == pytest.approx(337.8, abs=0.1)
    assert loo_mse(lam=1e6, output=EuclideanSpace(center=True)) == pytest.approx(
        mean_mse, rel=1e-5)
    assert loo_mse(lam=1e6) > 10 * mean_mse


def test_euclidean_center_option_saved_and_old_configs_uncentred(tmp_path, rng):
    """center is part of the space's config; a config saved before it existed loads with
    center=False (the model predicts as it did), a new one keeps its value."""
    old_cfg = {"constraint": None, "lo": 0.0, "hi": 1.0, "solver": "CLARABEL", "tol": 1e-9}
    assert EuclideanSpace.from_config(old_cfg).center is False
    for center in (True, False):
        cfg = EuclideanSpace(center=center).to_config()
        assert cfg["center"] is center and EuclideanSpace.from_config(cfg).center is center
    X, Y = rng.normal(size=(12, 2)), rng.normal(size=(12, 2)) + 4.0
    est = SELFEstimator(sigma=0.7, output=EuclideanSpace(center=True)).fit(X, Y)
    est.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    assert back.output_space_.center is True
    np.testing.assert_array_equal(back.predict(X[:3]), est.predict(X[:3]))


def test_nystrom_weights(rng, seed):
    X, Y = circle_data(rng, n=50)
    lam = 1e-3
    est = SELFEstimator(sigma=0.4, lam=lam, output="sphere", n_landmarks=15,
                        random_state=seed).fit(X, Y)
    feats = NystromFeatures(GaussianKernel(0.4), n_landmarks=15, random_state=seed).fit(X)
    Phi = feats.transform(X)
    Xt = rng.uniform(-1, 1, (6, 2))
    ref = Phi @ np.linalg.solve(Phi.T @ Phi + 50 * lam * np.eye(15), feats.transform(Xt).T)
    np.testing.assert_allclose(est.scores(Xt), ref.T, rtol=1e-8, atol=1e-12)
    assert not hasattr(est, "X_fit_")
    # with every training point a landmark, Nystrom is exact kernel ridge (up to the jitter)
    full = SELFEstimator(sigma=0.4, lam=lam, output="sphere", n_landmarks=50,
                         random_state=seed).fit(X, Y)
    exact = SELFEstimator(sigma=0.4, lam=lam, output="sphere").fit(X, Y)
    np.testing.assert_allclose(full.scores(Xt), exact.scores(Xt), atol=1e-6)


# ---------------------------------------------------------------------------------------
# predictions in the space
# ---------------------------------------------------------------------------------------
def test_predictions_lie_in_their_spaces(rng):
    X, Z = circle_data(rng, n=30)
    Xt = rng.uniform(-3, 3, (200, 2))  # far from the data too: weights near 0, mixed signs
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        P = SELFEstimator(sigma=0.3, lam=1e-4, output="sphere").fit(X, Z).predict(Xt)
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-12)
    X, M = spd_data(rng)
    for out in ("spd", "spd_logeuclidean"):
        P = SELFEstimator(sigma=0.3, lam=1e-4, output=out).fit(X, M).predict(Xt[:50])
        assert np.all(np.isfinite(P)) and np.linalg.eigvalsh(P).min() > 0
    P = SELFEstimator(sigma=0.3, lam=1e-4, output="bures", decode_method="rgd").fit(
        X, M).predict(Xt[:50])
    assert np.linalg.eigvalsh(P).min() > -1e-10
    H = rng.dirichlet(np.ones(4), size=30)
    P = SELFEstimator(sigma=0.3, lam=1e-4, output="fisher_simplex").fit(X, H).predict(Xt)
    assert P.min() >= 0 and np.allclose(P.sum(axis=1), 1.0)
    P = SELFEstimator(sigma=0.3, lam=1e-4, output=EuclideanSpace("simplex")).fit(
        X, H).predict(Xt[:20])
    assert P.min() >= -1e-8 and np.allclose(P.sum(axis=1), 1.0, atol=1e-7)


def test_self_beats_krls_in_geodesic_loss_on_spd(rng):
    """With a narrow kernel the ridge weights sum to less than one between training points:
    entry-wise ridge (KRLS) shrinks the matrices towards 0 and the projection cannot undo it,
    which the affine-invariant loss punishes (manifold paper, section 4.2); SELF decodes with
    normalized weights and stays on the data's scale."""
    X, M = spd_data(rng, n=60, d=3)
    Xt, Mt = spd_data(np.random.default_rng(rng.integers(2**31)), n=40, d=3)
    sp = SELFEstimator(sigma=0.1, lam=1e-4, output="spd").fit(X, M)
    kr = KRLSEstimator(sigma=0.1, lam=1e-4, output="spd").fit(X, M)
    assert sp.score(Xt, Mt) > 10 * kr.score(Xt, Mt)  # scores are minus losses (< 0)
    P = kr.predict(Xt)
    assert np.linalg.eigvalsh(P).min() > 0  # projected onto the SPD cone


def test_output_object_not_modified_and_options_forwarded(rng):
    X, Z = circle_data(rng)
    space = SphereSpace(tol=1e-6)
    est = SELFEstimator(sigma=0.4, lam=1e-3, output=space, tol=1e-11, max_iter=500).fit(X, Z)
    assert space.tol == 1e-6 and not hasattr(space, "Y_train_")
    assert est.output_space_ is not space
    assert est.output_space_.tol == 1e-11 and est.output_space_.max_iter == 500
    est.predict(X[:5])
    assert np.all(est.output_space_.grad_norm_ <= 1e-11)
    # SPD: one Newton step, then the robust path (at most 20 * max_iter evaluations)
    spd = SELFEstimator(sigma=0.4, output="spd", max_iter=1, tol=1e-14).fit(*spd_data(rng))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        spd.predict(X[:3])
    assert spd.output_space_.max_iter == 1 and spd.output_space_.tol == 1e-14
    assert np.all(spd.output_space_.n_iter_ <= 21)


# ---------------------------------------------------------------------------------------
# model selection
# ---------------------------------------------------------------------------------------
def test_grid_search_over_sigma_and_lam(rng, seed):
    X, Z = circle_data(rng, n=40, noise=0.02)
    grid = GridSearchCV(
        SELFEstimator(output="sphere"),
        {"sigma": [0.02, 0.3, 30.0], "lam": [1e-5, 1e-1]},
        cv=KFold(4, shuffle=True, random_state=seed),
    ).fit(X, Z)
    # a tiny or a huge bandwidth cannot interpolate this smooth field
    assert grid.best_params_["sigma"] == 0.3
    assert grid.best_score_ <= 0
    P = grid.predict(X[:5])
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0)
    X, M = spd_data(rng, n=24)
    g2 = GridSearchCV(SELFEstimator(output="spd_logeuclidean"),
                      {"sigma": [0.003, 0.3], "lam": [1e-4]}, cv=KFold(3)).fit(X, M)
    assert g2.best_params_["sigma"] == 0.3  # 0.003: weights ~ 0, uniform-mean fallback
    assert np.linalg.eigvalsh(g2.predict(X[:3])).min() > 0


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, match",
    [
        (dict(lam=0.0), "lam"),
        (dict(lam=-1.0), "lam"),
        (dict(lam=np.inf), "lam"),
        (dict(sigma=0.0), "sigma"),
        (dict(output="hyperbolic"), "output"),
        (dict(output="sphere", decode_method="cvxpy"), "decode_method"),
        (dict(decode_method="newton"), "decode_method"),
        (dict(kernel="cosine"), "kernel"),
        (dict(n_landmarks=0), "n_landmarks"),
        (dict(n_landmarks=100), "n_landmarks"),
        (dict(max_iter=0), "max_iter"),
        (dict(tol=-1.0), "tol"),
    ],
)
def test_bad_params_raise_value_error_naming_argument(rng, params, match):
    X, Z = circle_data(rng, n=10)
    params = {"output": "sphere", **params}
    with pytest.raises(ValueError, match=match):
        SELFEstimator(**params).fit(X, Z)


@pytest.mark.parametrize(
    "output, X, y, match",
    [
        ("sphere", [[0.0, np.nan], [1.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], "NaN"),
        ("sphere", [[0.0, 1.0]], [[1.0, 0.0]], "sample"),
        ("sphere", [[0.0], [1.0]], [[1.0, 1.0], [0.0, 1.0]], "y rows must be unit"),
        ("sphere", [[0.0], [1.0], [2.0]], [[1.0, 0.0], [0.0, 1.0]], "X and y"),
        ("spd", [[0.0], [1.0]], [np.eye(2), -np.eye(2)], "y must be symmetric positive"),
        ("spd", [[0.0], [1.0]], np.eye(2), "y must have shape"),
        ("fisher_simplex", [[0.0], [1.0]], [[0.5, 0.6], [1.0, 0.0]], "y rows must be hist"),
        ("euclidean", [[0.0], [1.0]], [[np.inf], [1.0]], "y contains NaN"),
        ("euclidean", [[0.0], [1.0]], None, "requires y to be passed"),
    ],
)
def test_bad_data_raise_value_error(output, X, y, match):
    with pytest.raises(ValueError, match=match):
        SELFEstimator(output=output).fit(X, y)


def test_not_fitted_and_predict_validation(rng):
    with pytest.raises(NotFittedError):
        SELFEstimator().predict([[0.0]])
    with pytest.raises(NotFittedError):
        SELFEstimator().scores([[0.0]])
    X, Z = circle_data(rng, n=10)
    est = SELFEstimator(output="sphere").fit(X, Z)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="y rows must be unit"):
        est.score(X, 2 * Z)


def test_krls_requires_a_projection(rng):
    class NoProjection(OutputSpace):
        name = "noproj"

        def check_Y(self, Y, name="Y"):
            return np.asarray(Y, float)

    X, Z = circle_data(rng, n=10)
    with pytest.raises(ValueError, match="output 'noproj' offers no projection"):
        KRLSEstimator(output=NoProjection()).fit(X, Z)


# ---------------------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, params, kind",
    [
        (SELFEstimator, dict(output="sphere", sigma=0.4), "circle"),
        (SELFEstimator, dict(output=SphereSpace(weights="positive"), n_landmarks=12,
                             landmarks="greedy", random_state=0), "circle"),
        (SELFEstimator, dict(output="spd", kernel=GaussianKernel(0.5), tol=1e-10), "spd"),
        (SELFEstimator, dict(output="bures", decode_method="rgd"), "spd"),
        (SELFEstimator, dict(output=EuclideanSpace("box", lo=-1, hi=1)), "scalar"),
        (KRLSEstimator, dict(output="spd_logeuclidean", random_state=np.random.default_rng(0),
                             n_landmarks=10), "spd"),
    ],
)
def test_save_load_round_trip(rng, tmp_path, cls, params, kind):
    if kind == "circle":
        X, Y = circle_data(rng, n=30)
    elif kind == "spd":
        X, Y = spd_data(rng, n=20)
    else:
        X = rng.uniform(-1, 1, (20, 1))
        Y = np.sin(3 * X[:, 0])
    est = cls(lam=1e-3, **params).fit(X, Y)
    est.save(tmp_path / "m.npz")
    loaded = psdsos.load(tmp_path / "m.npz")
    assert type(loaded) is cls
    Xt = rng.uniform(-1, 1, (15, X.shape[1]))
    np.testing.assert_array_equal(loaded.scores(Xt), est.scores(Xt))
    np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))
    assert loaded.output_space_.to_config() == est.output_space_.to_config()
    assert loaded.n_features_in_ == est.n_features_in_
    # the file holds no pickle: it loads with allow_pickle=False
    with np.load(tmp_path / "m.npz", allow_pickle=False) as data:
        assert "Y_train" in data.files


def test_save_refuses_unregistered_space(rng, tmp_path):
    class MySphere(SphereSpace):
        pass

    X, Z = circle_data(rng, n=10)
    est = SELFEstimator(output=MySphere()).fit(X, Z)
    with pytest.raises(ValueError, match="output"):
        est.save(tmp_path / "m.npz")
    est = SELFEstimator(output=SPDSpace()).fit(*spd_data(rng, n=10))
    est.save(tmp_path / "ok.npz")  # a registered space object is fine
    assert isinstance(psdsos.load(tmp_path / "ok.npz").output, SPDSpace)
