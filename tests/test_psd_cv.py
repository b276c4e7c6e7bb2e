"""PSDRegressorCV: the search equals scikit-learn's exhaustive GridSearchCV over the same grid
and folds, leave-one-out works, bad parameters are named, predictions are PSD, and the
closed-form start is the exact optimum where the PSD constraint is inactive."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut
from sklearn.utils.estimator_checks import parametrize_with_checks

from psdsos import PSDRegressor, PSDRegressorCV
from psdsos.estimators._psd import _target_exponent
from psdsos.estimators._psd_path import _closed_form_init, _fold_transfer
from psdsos.kernels import get_kernel, scale_bandwidth
from psdsos.problems import PSDLeastSquares
from psdsos.solvers import solve_dual


def _curve(n=16, d=2, noise=0.02, seed=0):
    """A smooth PSD-valued curve of time plus symmetric noise."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 1.0, n))
    L = np.zeros((n, d, d))
    for a in range(d):
        for b in range(d):
            L[:, a, b] = np.sin(2 * np.pi * (a + 1) * t + b) * (1.0 if a == b else 0.5)
    M = L @ np.swapaxes(L, 1, 2) + 0.1 * np.eye(d)
    E = noise * rng.standard_normal((n, d, d))
    return t[:, None], M + (E + np.swapaxes(E, 1, 2)) / 2


def _neg_mse(est, X, y):
    P = est.predict(X)
    return -float(np.mean(np.sum((P - y) ** 2, axis=(1, 2))))


def _key(p):
    return (str(p["kernel"]), p["lam2"], p["sigma"])


SMALL = {"kernels": ("gaussian", "matern52"), "sigmas": (0.5, 1.0), "lam2s": (1e-2, 1e-4)}


@pytest.mark.parametrize("cv", ["kfold", "loo"])
def test_selection_equals_exhaustive_grid_search(cv):
    """Same candidates and folds as GridSearchCV(PSDRegressor(tol=cv_tol)): the same scores
    to the solver's tolerance, the same choice, the same refit."""
    X, M = _curve(n=12)
    folds = KFold(3, shuffle=True, random_state=0) if cv == "kfold" else LeaveOneOut()
    cv_tol = 1e-9
    est = PSDRegressorCV(cv=folds, cv_tol=cv_tol, cv_max_iter=20000, **SMALL).fit(X, M)
    s = scale_bandwidth(X)
    grid = {"kernel": list(SMALL["kernels"]), "sigma": [c * s for c in SMALL["sigmas"]],
            "lam2": list(SMALL["lam2s"])}
    ref = GridSearchCV(PSDRegressor(tol=cv_tol, max_iter=20000), grid, cv=folds,
                       scoring=_neg_mse).fit(X, M)
    ours = {_key(p): v for p, v in
            zip(est.cv_results_["params"], est.cv_results_["mean_test_score"], strict=True)}
    theirs = {_key(p): v for p, v in
              zip(ref.cv_results_["params"], ref.cv_results_["mean_test_score"], strict=True)}
    assert ours.keys() == theirs.keys()
    for key, v in theirs.items():
        # relative duality gap cv_tol: predictions to about sqrt(cv_tol) of the targets' scale
        assert ours[key] == pytest.approx(v, rel=100 * np.sqrt(cv_tol)), key
    # the same order of candidates (ParameterGrid's), hence the same ranks and choice
    assert [_key(p) for p in est.cv_results_["params"]] == \
        [_key(p) for p in ref.cv_results_["params"]]
    np.testing.assert_array_equal(est.cv_results_["rank_test_score"],
                                  ref.cv_results_["rank_test_score"])
    assert est.best_params_ == ref.best_params_
    assert est.best_score_ == pytest.approx(ref.best_score_, rel=100 * np.sqrt(cv_tol))
    assert est.best_sigma_factor_ * s == pytest.approx(est.best_params_["sigma"])
    assert est.n_splits_ == ref.n_splits_
    for k in range(est.n_splits_):
        assert f"split{k}_test_score" in est.cv_results_
    # the refit: PSDRegressor with the best parameters at the default tol, on all the data
    refit = PSDRegressor(**ref.best_params_).fit(X, M)
    np.testing.assert_array_equal(est.predict(X), refit.predict(X))


def test_loo_string_and_predict_delegates():
    X, M = _curve(n=10)
    est = PSDRegressorCV(cv="loo", kernels=("gaussian",), sigmas=(1.0,),
                         lam2s=(1e-2, 1e-3)).fit(X, M)
    assert est.n_splits_ == 10
    assert est.cv_results_["split9_test_score"].shape == (2,)
    best = est.best_estimator_
    assert isinstance(best, PSDRegressor)
    assert best.lam2 == est.best_params_["lam2"] and best.sigma == est.best_params_["sigma"]
    G = np.linspace(0, 1, 7)[:, None]
    np.testing.assert_array_equal(est.predict(G), best.predict(G))
    assert est.score(X, M) == best.score(X, M)
    assert est.best_index_ == int(np.argmax(est.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("seed", range(3))
def test_predictions_are_psd(seed):
    """Noisy (indefinite) targets: every prediction of the refit is PSD, on 1000 inputs."""
    X, M = _curve(n=14, d=3, noise=0.3, seed=seed)
    est = PSDRegressorCV(kernels=("matern52",), sigmas=(0.5,), lam2s=(1e-2, 1e-4), cv=3,
                         random_state=seed).fit(X, M)
    G = np.random.default_rng(seed).uniform(-0.5, 1.5, (1000, 1))
    P = est.predict(G)
    assert P.shape == (1000, 3, 3)
    np.testing.assert_allclose(P, np.swapaxes(P, 1, 2), atol=1e-12)
    ev = np.linalg.eigvalsh(P)
    assert ev.min() >= -1e-10 * max(1.0, ev.max())


def test_custom_scorer_callable_and_make_scorer():
    """Any scikit-learn-compatible scorer plugs in: a callable (estimator, X, y) and a
    make_scorer object (here the mean absolute entry error)."""
    X, M = _curve(n=12)

    def mae(y_true, y_pred):
        return float(np.mean(np.abs(np.asarray(y_true) - np.asarray(y_pred))))

    calls = []

    def scorer(est, X_, y_):
        calls.append(len(X_))
        return _neg_mse(est, X_, y_)

    a = PSDRegressorCV(scoring=scorer, cv=3, **SMALL).fit(X, M)
    b = PSDRegressorCV(cv=3, **SMALL).fit(X, M)
    assert len(calls) == 8 * 3 and sum(calls) == 8 * 12
    np.testing.assert_allclose(a.cv_results_["mean_test_score"],
                               b.cv_results_["mean_test_score"], rtol=1e-12)
    c = PSDRegressorCV(scoring=make_scorer(mae, greater_is_better=False), cv=3,
                       **SMALL).fit(X, M)
    assert np.all(c.cv_results_["mean_test_score"] < 0)
    assert c.best_params_ in c.cv_results_["params"]


def test_closed_form_start_is_the_optimum_when_constraint_inactive():
    """PSD targets near a constant SPD matrix and a large lam2: the kernel-ridge solution
    (kernel k^2) is PSD-valued, so it is the constrained optimum; the dual solver started
    there stops at once, and the fit equals a cold one."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (10, 1))
    M = np.eye(2) + 0.05 * X[:, :, None] * np.array([[1.0, 0.5], [0.5, 1.0]])
    kernel = get_kernel("gaussian", 0.5)
    G = _closed_form_init(kernel, X, M, 1e-1)
    assert G is not None
    cold = PSDRegressor(kernel, lam2=1e-1, tol=1e-12, max_iter=50000).fit(X, M)
    np.testing.assert_allclose(G, cold.dual_coef_, rtol=1e-6, atol=1e-12)
    warm = PSDRegressor(kernel, lam2=1e-1, tol=1e-9, warm_start=True)
    warm.dual_coef_ = G
    warm.fit(X, M)
    assert warm.n_iter_ <= 2
    est = PSDRegressorCV(kernels=(kernel,), sigmas=(1.0,), lam2s=(1e-1,), cv=2).fit(X, M)
    assert est.n_closed_form_ == 2
    # indefinite coefficients: no closed form
    assert _closed_form_init(kernel, X, M * np.array([[1.0, 0.0], [0.0, -1.0]]), 1e-1) is None


def test_not_converged_counted_and_warned_once():
    X, M = _curve(n=12)
    with pytest.warns(ConvergenceWarning, match="cv_max_iter=2") as record:
        est = PSDRegressorCV(cv=2, cv_max_iter=2, kernels=("gaussian",), sigmas=(1.0,),
                             lam2s=(1e-6,)).fit(X, M)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in record) == 1
    assert est.n_not_converged_ == 2
    assert est.cv_results_["n_not_converged"].tolist() == [2]


@pytest.mark.parametrize("params, match", [
    ({"sigmas": ()}, "sigmas of PSDRegressorCV must be a non-empty"),
    ({"sigmas": (1.0, -2.0)}, "sigmas of PSDRegressorCV must hold finite"),
    ({"lam2s": (0.0,)}, "lam2s of PSDRegressorCV must hold finite numbers > 0"),
    ({"lam2s": (np.nan,)}, "lam2s of PSDRegressorCV must hold finite"),
    ({"lam2s": 1e-3}, "lam2s of PSDRegressorCV must be a non-empty"),
    ({"kernels": "gaussian"}, "kernels of PSDRegressorCV must be a non-empty sequence"),
    ({"kernels": ()}, "kernels of PSDRegressorCV must be a non-empty sequence"),
    ({"kernels": ("gaussian", "nope")}, "kernels"),
    ({"lam1": -1.0}, "lam1"),
    ({"cv": 1}, "cv must be an int >= 2"),
    ({"cv": 100}, "larger than the number of samples"),
    ({"cv": "lol"}, "cv must be 'loo', an int >= 2, a CV splitter"),
    ({"cv": 2.5}, "cv must be 'loo', an int >= 2, a CV splitter"),
    ({"scoring": "not_a_scorer"}, "scoring of PSDRegressorCV"),
    ({"scoring": 3}, "scoring of PSDRegressorCV"),
    ({"cv_tol": 0.0}, "cv_tol"),
    ({"cv_max_iter": 0}, "cv_max_iter"),
    ({"tol": -1.0}, "tol"),
    ({"n_jobs": 1.5}, "n_jobs"),
])
def test_bad_parameters(params, match):
    X, M = _curve(n=10)
    with pytest.raises(ValueError, match=match):
        PSDRegressorCV(**params).fit(X, M)


def test_bad_data():
    X, M = _curve(n=10)
    with pytest.raises(ValueError, match="y"):
        PSDRegressorCV(cv=2).fit(X, M[:, :, :1])
    with pytest.raises(ValueError):
        PSDRegressorCV(cv=2).fit(X, M[:5])


def test_not_fitted_and_clone():
    with pytest.raises(NotFittedError):
        PSDRegressorCV().predict(np.zeros((2, 1)))
    est = PSDRegressorCV(sigmas=(3.0,), lam2s=(1e-2,), cv="loo")
    assert clone(est).get_params()["sigmas"] == (3.0,)


def test_deterministic_and_parallel():
    X, M = _curve(n=12)
    a = PSDRegressorCV(cv=3, random_state=0, **SMALL).fit(X, M)
    b = PSDRegressorCV(cv=3, random_state=0, n_jobs=2, **SMALL).fit(X, M)
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])
    assert a.best_params_ == b.best_params_


#: Checks PSDRegressorCV fails, with the reason found by running them.
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": (
        "as PSDRegressor (test_psd_regressor.py): a 2-D target of shape (n, 1) is rejected "
        "by contract, targets are (n, d, d) matrices or 1-D scalars"
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "as PSDRegressor: weights equal repeated rows to the solver's accuracy, not to "
        "rtol 1e-7; with repeated rows the folds differ too"
    ),
}


@parametrize_with_checks(
    [PSDRegressorCV(kernels=("gaussian",), sigmas=(1.0,), lam2s=(1e-2, 1e-3), cv=2,
                    cv_max_iter=500, max_iter=2000)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ---------------------------------------------------------------------------------------
# PSDRegressorCV's folds started from the fits on all the data (quasi-Newton steps, the
# full-data dual solution moved to each fold, its Hessian as the first metric): the same
# selection as an exhaustive GridSearchCV of cold fits, down to lam2 = 1e-8, every fit
# certified; the transfer of the dual solution keeps S = A*(Gamma); the previous schedule
# (each split's own lam2 path) is still there and agrees.
# ---------------------------------------------------------------------------------------
FAST_GRID = {"kernels": ("gaussian", "matern32"), "sigmas": (0.5, 1.0),
        "lam2s": (1e-2, 1e-4, 1e-6, 1e-8)}


class _SplitLam2Paths(PSDRegressorCV):
    """The previous schedule: each split's own warm-started lam2 path."""

    _start_folds_from_full_fit = False


@pytest.mark.parametrize("cv", ["loo", "kfold"])
def test_fast_folds_equal_exhaustive_grid_search(cv):
    X, M = _curve(n=12, noise=0.05)
    folds = LeaveOneOut() if cv == "loo" else KFold(3, shuffle=True, random_state=0)
    cv_tol = 1e-8
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # every fit certified
        est = PSDRegressorCV(cv=folds, cv_tol=cv_tol, **FAST_GRID).fit(X, M)
    assert est._fold_starts and est.n_not_converged_ == 0
    assert np.all(est.cv_results_["mean_n_hessian"] >= 0)
    s = scale_bandwidth(X)
    grid = {"kernel": list(FAST_GRID["kernels"]), "sigma": [c * s for c in FAST_GRID["sigmas"]],
            "lam2": list(FAST_GRID["lam2s"])}
    ref = GridSearchCV(PSDRegressor(tol=cv_tol), grid, cv=folds, scoring=_neg_mse).fit(X, M)
    ours = dict(zip(map(_key, est.cv_results_["params"]), est.cv_results_["mean_test_score"],
                    strict=True))
    theirs = dict(zip(map(_key, ref.cv_results_["params"]),
                      ref.cv_results_["mean_test_score"], strict=True))
    assert ours.keys() == theirs.keys()
    for key, v in theirs.items():
        assert ours[key] == pytest.approx(v, rel=100 * np.sqrt(cv_tol)), key
    np.testing.assert_array_equal(est.cv_results_["rank_test_score"],
                                  ref.cv_results_["rank_test_score"])
    assert est.best_params_ == ref.best_params_


def test_previous_schedule_agrees():
    X, M = _curve(n=10, noise=0.05)
    kw = dict(cv=3, cv_tol=1e-8, cv_max_iter=50000, kernels=("gaussian",), sigmas=(1.0,),
              lam2s=(1e-2, 1e-4))
    fast = PSDRegressorCV(**kw).fit(X, M)
    slow = _SplitLam2Paths(**kw).fit(X, M)
    assert fast._fold_starts and not slow._fold_starts
    np.testing.assert_allclose(fast.cv_results_["mean_test_score"],
                               slow.cv_results_["mean_test_score"], rtol=1e-2)
    assert fast.best_params_ == slow.best_params_
    # unequal sample weights: each split's own path (the weighted problem)
    w = np.linspace(1.0, 2.0, len(X))
    weighted = PSDRegressorCV(**kw).fit(X, M, sample_weight=w)
    assert not weighted._fold_starts


def test_transfer_keeps_the_negative_part():
    """Moving the held-out blocks onto the training points (least squares in K o K) keeps
    A*(Gamma): at small lam2 the fold's dual value at the moved point is far closer to its
    optimum than at the restriction (held-out blocks dropped), whose negative part is off
    by Psi_h Gamma_h Psi_h^T / lam2."""
    X, M = _curve(n=14, noise=0.1)
    K = get_kernel("matern32", 0.5 * scale_bandwidth(X))(X, X)
    K2 = K * K
    train, test = np.arange(1, 14), np.array([0])
    C = _fold_transfer(K2, train, test, rcond=1e-12)  # K o K well conditioned here
    assert C.shape == (13, 1)
    np.testing.assert_allclose(K2[np.ix_(train, train)] @ C, K2[np.ix_(train, test)],
                               rtol=1e-6, atol=1e-8)
    n, lam2 = 30, 1e-8
    X, M = _curve(n=n, noise=0.1)
    kernel = get_kernel("gaussian", scale_bandwidth(X))
    full = PSDRegressor(kernel, lam2=lam2, tol=1e-10).fit(X, M)
    G = full.dual_coef_
    K = kernel(X, X)
    for h in (n // 3, n // 2, 2 * n // 3):
        train, test = np.delete(np.arange(n), h), np.array([h])
        C = _fold_transfer(K * K, train, test)
        fold = PSDRegressor(kernel, lam2=lam2).fit(X[train], M[train])
        e = _target_exponent(M[train])
        pb = PSDLeastSquares(fold.features_.transform(X[train]), np.ldexp(M[train], -e), 0.0,
                             lam2)
        best = solve_dual(pb, tol=1e-10, method="lbfgs").dual_objective

        def excess(G0, pb=pb, e=e, best=best):
            res = solve_dual(pb, init=np.ldexp(G0, -e), max_iter=1, method="lbfgs")
            return best - res.dual_objective

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            moved = excess(G[train] + np.einsum("rh,hab->rab", C, G[test]))
            dropped = excess(G[train])
        assert 0 <= moved < 1e-3 * dropped


@pytest.mark.parametrize("case", ["scalar", "lam1"])
def test_fast_folds_scalar_targets_and_trace_weight(case):
    """1-D targets (the non-negative model, d = 1) and a trace weight lam1 > 0 take the same
    path, to the same scores as GridSearchCV."""
    X, M = _curve(n=10, noise=0.05)
    lam1 = 0.0
    if case == "scalar":
        y = M[:, 0, 0] - 0.5  # partly negative: the constraint f >= 0 is active
    else:
        y, lam1 = M, 1e-3
    cv_tol = 1e-8
    kw = dict(kernels=("matern52",), sigmas=(0.5, 1.0), lam2s=(1e-3, 1e-6))
    est = PSDRegressorCV(cv=LeaveOneOut(), cv_tol=cv_tol, lam1=lam1, **kw).fit(X, y)
    assert est._fold_starts and est.n_not_converged_ == 0
    s = scale_bandwidth(X)
    grid = {"kernel": list(kw["kernels"]), "sigma": [c * s for c in kw["sigmas"]],
            "lam2": list(kw["lam2s"])}
    ref = GridSearchCV(PSDRegressor(lam1=lam1, tol=cv_tol), grid, cv=LeaveOneOut(),
                       scoring="neg_mean_squared_error" if case == "scalar" else _neg_mse
                       ).fit(X, y)
    np.testing.assert_allclose(est.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"], rtol=100 * np.sqrt(cv_tol))
    assert est.best_params_ == ref.best_params_
