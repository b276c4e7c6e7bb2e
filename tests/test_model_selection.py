"""Tests for psdsos.model_selection: grid search with warm starts, parallel backends."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut

from psdsos import PSDRegressor
from psdsos.datasets import make_bures_geodesic
from psdsos.model_selection import (
    SearchResult,
    grid_search_cv,
    neg_mse_scorer,
    paper_grid_psd,
)
from psdsos.model_selection._search import _group_candidates, _path_order

GRID = {"lam1": [1e-3, 0.0], "lam2": [1e-1, 1e-2, 1e-3], "sigma": [1.0, 0.3]}


@pytest.fixture(scope="module")
def data():
    return make_bures_geodesic(8, random_state=3)


def _est(**kw):
    return PSDRegressor("exponential", **kw)


# ------------------------------------------------------------------------------------------
# the paper's grid
# ------------------------------------------------------------------------------------------


def test_paper_grid():
    g = paper_grid_psd()
    assert sorted(g) == ["lam1", "lam2", "sigma"]
    assert sorted(g["lam1"]) == [0.0] + [10.0**-k for k in range(8, -1, -1)]
    assert sorted(g["lam2"]) == [10.0**-k for k in range(8, -1, -1)]
    assert sorted(g["sigma"]) == [0.01, 0.1, 1.0]
    g["lam1"].append(5.0)
    assert 5.0 not in paper_grid_psd()["lam1"]  # fresh lists


def test_paper_grid_split_by_solver_same_candidates():
    from sklearn.model_selection import ParameterGrid

    split = paper_grid_psd(primal_below=1e-5)
    assert len(ParameterGrid(split)) == 270
    for p in ParameterGrid(split):
        primal = p["lam2"] <= 1e-5 and p["lam1"] > 0
        assert p["solver"] == ("primal" if primal else "dual")
        assert (p.get("primal_solver"), p.get("tol")) == (("CLARABEL", 1e-9) if primal
                                                          else (None, None))
    key = {(p["lam1"], p["lam2"], p["sigma"]) for p in ParameterGrid(split)}
    assert key == {(p["lam1"], p["lam2"], p["sigma"]) for p in ParameterGrid(paper_grid_psd())}
    with pytest.raises(ValueError, match="primal_below"):
        paper_grid_psd(primal_below="small")


def test_paper_grids_relative_to_the_data_scale():
    """With X, the paper's bandwidths keep their ratio to the spread of the paper's inputs:
    on inputs like the paper's (times uniform on [0, 1]; uniform on [-2 pi, 2 pi]^2) the
    relative grid is close to the absolute one, and it scales with the data."""
    from psdsos.model_selection import paper_grid_convex, relative_sigmas

    t = np.linspace(0.0, 1.0, 20001)[:, None]
    np.testing.assert_allclose(paper_grid_psd(t)["sigma"], [1.0, 0.1, 0.01], rtol=1e-3)
    np.testing.assert_allclose(paper_grid_psd(1e4 * t + 3.0)["sigma"],
                               [1e4, 1e3, 1e2], rtol=1e-3)
    g = np.linspace(-2 * np.pi, 2 * np.pi, 301)
    box = np.column_stack([a.ravel() for a in np.meshgrid(g, g)])
    np.testing.assert_allclose(np.square(paper_grid_convex(box)["sigma"]), [1.0, 5.0, 10.0],
                               rtol=1e-2)
    np.testing.assert_allclose(np.square(paper_grid_convex()["sigma"]), [1.0, 5.0, 10.0])
    assert paper_grid_convex()["lam2"] == [1e-3, 1e-4, 1e-5, 1e-6, 1e-7]
    split = paper_grid_psd(t, primal_below=1e-5)
    assert all(np.allclose(part["sigma"], paper_grid_psd(t)["sigma"]) for part in split)
    X = np.array([[0.0], [2000.0]])  # Var = 1e6, one feature: scale = 1000 sqrt(1/2)
    np.testing.assert_allclose(relative_sigmas([1.0, 0.5], X), [707.10678, 353.55339])
    for bad in (0.0, -1.0, np.nan, True):
        with pytest.raises(ValueError, match="factors"):
            relative_sigmas([bad], X)


# ------------------------------------------------------------------------------------------
# scikit-learn's GridSearchCV with 3-D targets
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(3)], ids=["loo", "kfold"])
def test_sklearn_gridsearchcv_accepts_3d_targets(data, cv):
    t, M = data[0][:6], data[1][:6]
    grid = {"lam2": [1e-1, 1e-3], "sigma": [1.0, 0.3]}
    gs = GridSearchCV(_est(), grid, cv=cv, n_jobs=2, scoring=neg_mse_scorer,
                      error_score="raise").fit(t, M)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert gs.best_estimator_.predict(t).shape == M.shape
    if isinstance(cv, KFold):  # R^2 (the estimator's score) is defined on folds of >= 2
        gs2 = GridSearchCV(_est(), grid, cv=cv, n_jobs=1, error_score="raise").fit(t, M)
        assert np.all(np.isfinite(gs2.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("cv", ["loo", 3], ids=["loo", "kfold"])
def test_matches_sklearn_gridsearchcv(data, cv):
    t, M = data
    # tol 1e-10: warm and cold starts stop at different points within the solver tolerance,
    # and a held-out score moves like sqrt(gap) (B is determined to ~sqrt(gap |J| / lam2))
    ours = grid_search_cv(_est(tol=1e-10), t, M, GRID, cv=cv, scoring="neg_mse")
    skl_cv = LeaveOneOut() if cv == "loo" else KFold(cv)
    gs = GridSearchCV(_est(tol=1e-10), GRID, cv=skl_cv, scoring=neg_mse_scorer).fit(t, M)
    assert ours.best_params_ == gs.best_params_
    assert ours.best_index_ == gs.best_index_
    assert ours.cv_results_["params"] == gs.cv_results_["params"]
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               gs.cv_results_["mean_test_score"], rtol=2e-4)
    np.testing.assert_allclose(ours.cv_results_["std_test_score"],
                               gs.cv_results_["std_test_score"], rtol=2e-3)
    assert ours.best_score_ == pytest.approx(gs.best_score_, rel=2e-4)
    assert ours.n_fits == len(GRID["lam1"]) * len(GRID["lam2"]) * len(GRID["sigma"]) * (
        len(t) if cv == "loo" else cv)
    # refit on all data with the best parameters
    np.testing.assert_allclose(ours.best_estimator_.predict(t), gs.best_estimator_.predict(t),
                               rtol=1e-5, atol=1e-8)


def test_default_scoring_is_estimator_score(data):
    t, M = data
    res = grid_search_cv(_est(), t, M, {"lam2": [1e-1, 1e-3]}, cv=2)
    gs = GridSearchCV(_est(), {"lam2": [1e-1, 1e-3]}, cv=KFold(2)).fit(t, M)
    assert res.scoring == "score"
    np.testing.assert_allclose(res.cv_results_["mean_test_score"],
                               gs.cv_results_["mean_test_score"], rtol=1e-4)


def test_callable_scoring_and_neg_mse(data):
    t, M = data
    calls = []

    def scorer(est, X, Y):
        calls.append(len(X))
        return neg_mse_scorer(est, X, Y)

    a = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=4, scoring=scorer)
    b = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=4, scoring="neg_mse")
    assert a.scoring == "callable" and b.scoring == "neg_mse"
    assert calls == [2, 2, 2, 2]
    assert a.best_score_ == b.best_score_ < 0
    est = _est(lam2=1e-2).fit(t[2:], M[2:])
    manual = -np.mean(np.sum((est.predict(t[:2]) - M[:2]) ** 2, axis=(1, 2)))
    assert neg_mse_scorer(est, t[:2], M[:2]) == pytest.approx(manual)


def test_loo_with_r2_warns(data):
    t, M = data
    with pytest.warns(UserWarning, match="undefined on a test fold of one sample"):
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv="loo")


# ------------------------------------------------------------------------------------------
# warm starts, ordering, determinism, parallelism
# ------------------------------------------------------------------------------------------


def test_path_order_is_a_snake_from_large_to_small():
    from sklearn.model_selection import ParameterGrid

    cands = list(ParameterGrid({"lam1": [0.0, 1e-2, 1.0], "lam2": [1e-3, 1e-1], "sigma": [1.0]}))
    order = _path_order(list(range(len(cands))), cands, ("lam1", "lam2"))
    seq = [(cands[i]["lam1"], cands[i]["lam2"]) for i in order]
    assert seq == [(1.0, 1e-1), (1.0, 1e-3), (1e-2, 1e-3), (1e-2, 1e-1), (0.0, 1e-1),
                   (0.0, 1e-3)]
    groups = _group_candidates(list(ParameterGrid(GRID)), ("lam1", "lam2"))
    assert len(groups) == 2  # one path per sigma
    assert sorted(i for g in groups for i in g) == list(range(12))


def test_warm_start_reduces_iterations():
    # the Bures demo's data; lam1 > 0 with small lam2 is where the dual needs many
    # iterations; there the previous solution on the path saves ~30% (measured: 4162 vs
    # 6125 iterations).  Where the dual does not converge in 3000 iterations anyway
    # (lam1 = 1e-4, lam2 = 1e-5) warm and cold starts cost the same.
    t, M = make_bures_geodesic(12, random_state=0)
    grid = {"lam1": [1e-2, 1e-3], "lam2": [1e-2, 1e-3, 1e-4, 1e-5], "sigma": [1.0]}
    kw = dict(cv=3, scoring="neg_mse", cv_params={"max_iter": 3000})
    warm = grid_search_cv(_est(), t, M, grid, warm_start=True, **kw)
    cold = grid_search_cv(_est(), t, M, grid, warm_start=False, **kw)
    assert warm.n_not_converged == cold.n_not_converged == 0
    assert warm.total_n_iter < 0.85 * cold.total_n_iter
    assert warm.best_params_ == cold.best_params_
    np.testing.assert_allclose(warm.cv_results_["mean_test_score"],
                               cold.cv_results_["mean_test_score"], rtol=1e-3)


def test_deterministic_and_n_jobs_independent(data):
    t, M = data
    a = grid_search_cv(_est(), t, M, GRID, cv=4, scoring="neg_mse", n_jobs=1)
    b = grid_search_cv(_est(), t, M, GRID, cv=4, scoring="neg_mse", n_jobs=2)
    c = grid_search_cv(_est(), t, M, GRID, cv=4, scoring="neg_mse", n_jobs=2,
                       backend="threading")
    for other in (b, c):
        assert other.best_params_ == a.best_params_
        for k in range(4):
            np.testing.assert_array_equal(other.cv_results_[f"split{k}_test_score"],
                                          a.cv_results_[f"split{k}_test_score"])
        np.testing.assert_array_equal(other.cv_results_["mean_n_iter"],
                                      a.cv_results_["mean_n_iter"])


def test_dask_backend_identical():
    distributed = pytest.importorskip("distributed")
    t, M = make_bures_geodesic(6, random_state=5)
    grid = {"lam2": [1e-1, 1e-2], "sigma": [1.0, 0.3]}
    ref = grid_search_cv(_est(), t, M, grid, cv="loo", scoring="neg_mse")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            res = grid_search_cv(_est(), t, M, grid, cv="loo", scoring="neg_mse",
                                 backend="dask", n_jobs=2)
    assert res.best_params_ == ref.best_params_
    np.testing.assert_array_equal(res.cv_results_["mean_test_score"],
                                  ref.cv_results_["mean_test_score"])


def test_verbose_progress(data, capsys):
    t, M = data
    grid_search_cv(_est(), t, M, {"lam2": [1e-1, 1e-2]}, cv=2, verbose=True)
    err = capsys.readouterr().err
    assert "2 candidates x 2 splits = 4 fits" in err
    assert "fits 4/4" in err


# ------------------------------------------------------------------------------------------
# result object, convergence and failures
# ------------------------------------------------------------------------------------------


def test_result_fields(data):
    t, M = data
    res = grid_search_cv(_est(), t, M, GRID, cv=2, scoring="neg_mse", refit=False)
    assert isinstance(res, SearchResult)
    assert res.best_estimator_ is None and res.n_splits_ == 2 and res.n_fits == 24
    r = res.cv_results_
    for key in ("params", "mean_test_score", "std_test_score", "rank_test_score",
                "mean_fit_time", "std_fit_time", "split0_test_score", "split1_test_score",
                "param_lam1", "param_lam2", "param_sigma", "mean_n_iter", "n_not_converged"):
        assert key in r and len(r[key]) == 12, key
    assert r["rank_test_score"][res.best_index_] == 1
    assert res.best_score_ == np.max(r["mean_test_score"])
    assert res.total_n_iter > 0 and res.n_failed == 0
    assert "cv_results_" not in repr(res)


def test_convergence_warnings_counted_once(data):
    t, M = data
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = grid_search_cv(_est(), t, M, {"lam2": [1e-3, 1e-4]}, cv=2, scoring="neg_mse",
                             cv_params={"max_iter": 1}, refit=False)
    conv = [str(w.message) for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 2 and "4 of 4" in conv[0]
    assert "selected candidate" in conv[1] and "artifact of early stopping" in conv[1]
    assert res.n_not_converged == 4
    np.testing.assert_array_equal(res.cv_results_["n_not_converged"], [2, 2])


def test_cv_params_not_used_by_refit(data):
    t, M = data
    with pytest.warns(ConvergenceWarning, match="2 of 2"):
        res = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=2, cv_params={"max_iter": 3})
    assert res.cv_results_["n_not_converged"][0] == 2
    assert res.best_estimator_.max_iter == 10000


def test_failed_fits_scored_nan_and_reported(data):
    t, M = data
    grid = {"lam2": [0.0, 1e-2]}  # lam2 = 0 is rejected by the dual solver
    with pytest.warns(FitFailedWarning, match="2 of 4"):
        res = grid_search_cv(_est(), t, M, grid, cv=2, scoring="neg_mse")
    assert res.n_failed == 2 and res.best_params_ == {"lam2": 1e-2}
    assert np.isnan(res.cv_results_["mean_test_score"][0])
    assert res.cv_results_["rank_test_score"][0] == 2
    with pytest.raises(ValueError, match="lam2 = 0"):
        grid_search_cv(_est(), t, M, grid, cv=2, error_score="raise")
    with pytest.raises(ValueError, match="all 2 cross-validation fits failed"):
        grid_search_cv(_est(), t, M, {"lam2": [0.0]}, cv=2)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "grid, match",
    [
        ({}, "non-empty dicts"),
        ([], "param_grid is empty"),
        ({"lam2": []}, r"param_grid\['lam2'\] is empty"),
        ({"lam3": [1.0]}, "not a parameter of PSDRegressor"),
        ({"lam2": 0.1}, "must be a list of values"),
        ("lam2", "dict of lists"),
    ],
)
def test_bad_grid(data, grid, match):
    t, M = data
    with pytest.raises(ValueError, match=match):
        grid_search_cv(_est(), t, M, grid)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"scoring": "r2_typo"}, "scoring must be"),
        ({"scoring": 3}, "scoring must be"),
        ({"cv": 9}, "larger than the number of samples"),
        ({"cv": 1}, "int >= 2"),
        ({"cv": "kfold"}, "cv must be"),
        ({"cv": 2.5}, "cv must be"),
        ({"error_score": "ignore"}, "error_score"),
        ({"cv_params": [1]}, "cv_params"),
    ],
)
def test_bad_options(data, kw, match):
    t, M = data
    with pytest.raises(ValueError, match=match):
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, **kw)


def test_bad_data(data):
    t, M = data
    with pytest.raises(ValueError, match="different numbers of samples"):
        grid_search_cv(_est(), t, M[:-1], {"lam2": [1e-2]})
    with pytest.raises(ValueError, match="n_samples, n_features"):
        grid_search_cv(_est(), t[:, 0], M, {"lam2": [1e-2]})
    with pytest.raises(ValueError, match="scikit-learn estimator"):
        grid_search_cv(object(), t, M, {"lam2": [1e-2]})


def test_non_convex_cv_fits_counted_once():
    # ConvexRegressor with 3 constraint points and a narrow bandwidth is convex at the points
    # only (NonConvexFitWarning); with a constraint at every training point it is certified.
    # The search silences the per-fit warnings and reports one, with the counts.
    from psdsos.estimators import ConvexRegressor, NonConvexFitWarning

    rng = np.random.default_rng(0)
    X = rng.uniform(-2.0, 2.0, size=(40, 1))
    y = np.abs(X[:, 0]) + 0.3 * rng.normal(size=40)
    est = ConvexRegressor(sigma=0.3, random_state=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = grid_search_cv(est, X, y, {"constraint_points": [3, 40]}, cv=2, refit=False)
    msgs = [str(w.message) for w in rec if issubclass(w.category, NonConvexFitWarning)]
    assert len(msgs) == 1 and "2 of 4" in msgs[0], msgs
    assert res.n_not_convex == 2
    np.testing.assert_array_equal(res.cv_results_["n_not_convex"], [2, 0])
    # the count is the certificate of each fold's fit
    for k, (tr, _) in enumerate(KFold(2).split(X)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonConvexFitWarning)
            fold = ConvexRegressor(sigma=0.3, random_state=0, constraint_points=3).fit(X[tr], y[tr])
        assert fold.convexity_deficit_ > 1e-2, k


def test_estimators_without_a_convexity_certificate_count_zero(data):
    t, M = data
    res = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=2, scoring="neg_mse", refit=False)
    assert res.n_not_convex == 0
    np.testing.assert_array_equal(res.cv_results_["n_not_convex"], [0])
