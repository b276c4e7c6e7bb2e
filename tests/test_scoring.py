"""Scorers for PSD targets: Bures-Wasserstein, affine-invariant and log-Euclidean mean squared
distances (metrics and negated scorers), by name in grid_search_cv and as scikit-learn scorer
objects in GridSearchCV; the eigenvalue floor of the affine-invariant and log-Euclidean ones."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold

from psdsos import PSDRegressor
from psdsos.datasets import make_bures_geodesic
from psdsos.geometry import (
    affine_invariant_distance,
    bures_wasserstein_distance_squared,
    log_euclidean_distance,
)
from psdsos.model_selection import (
    EIG_FLOOR,
    grid_search_cv,
    mean_squared_affine_invariant,
    mean_squared_bures_wasserstein,
    mean_squared_log_euclidean,
    neg_affine_invariant_scorer,
    neg_bures_wasserstein_scorer,
    neg_log_euclidean_scorer,
)

SEEDS = st.integers(0, 2**32 - 1)
PROPERTY = settings(max_examples=30, deadline=None)
METRICS = {
    "bures_wasserstein": (mean_squared_bures_wasserstein, neg_bures_wasserstein_scorer,
                          lambda A, B: bures_wasserstein_distance_squared(A, B)),
    "affine_invariant": (mean_squared_affine_invariant, neg_affine_invariant_scorer,
                         lambda A, B: affine_invariant_distance(A, B) ** 2),
    "log_euclidean": (mean_squared_log_euclidean, neg_log_euclidean_scorer,
                      lambda A, B: log_euclidean_distance(A, B) ** 2),
}


def random_spd(rng, d, batch=(), shift=0.5):
    G = rng.standard_normal(batch + (d, d))
    return G @ np.swapaxes(G, -1, -2) + shift * np.eye(d)


class Fixed:
    """A fitted 'estimator' whose predictions are given."""

    def __init__(self, P):
        self.P = P

    def predict(self, X):
        return self.P[: len(X)]


# ---------------------------------------------------------------------------------------------
# the metrics
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(METRICS))
def test_metric_is_the_mean_of_the_geometry_distances(name, rng):
    metric, scorer, dist2 = METRICS[name]
    T, P = random_spd(rng, 3, (6,)), random_spd(rng, 3, (6,))
    expected = float(np.mean(dist2(T, P)))
    assert metric(T, P) == pytest.approx(expected, rel=1e-10)
    assert scorer(Fixed(P), np.zeros((6, 1)), T) == pytest.approx(-expected, rel=1e-10)
    assert metric(T, T) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_sample_weight_is_a_weighted_mean(name, rng):
    metric = METRICS[name][0]
    T, P = random_spd(rng, 2, (4,)), random_spd(rng, 2, (4,))
    w = np.array([2.0, 0.0, 1.0, 3.0])
    rep = np.repeat(np.arange(4), w.astype(int))
    T[1] *= 1e-3  # row 1 (weight 0) does not hold the largest target: same floor
    assert metric(T, P, sample_weight=w) == pytest.approx(metric(T[rep], P[rep]), rel=1e-10)
    with pytest.raises(ValueError, match="(?i)sample.weight"):
        metric(T, P, sample_weight=np.zeros(4))


@pytest.mark.parametrize("metric", [mean_squared_affine_invariant, mean_squared_log_euclidean])
def test_floor_of_singular_predictions(metric):
    """A missing eigenvalue costs log^2(lambda / (eig_floor * c)), c the targets' largest
    eigenvalue, instead of infinity; the floor is documented and adjustable."""
    T = np.array([np.diag([4.0, 1.0])])
    P = np.array([np.diag([4.0, 0.0])])  # PSD, singular
    for floor in (EIG_FLOOR, 1e-4):
        expected = np.log(1.0 / (floor * 4.0)) ** 2
        assert metric(T, P, eig_floor=floor) == pytest.approx(expected, rel=1e-10)
    assert EIG_FLOOR == 1e-8
    # rounding below zero is accepted and floored too
    P2 = np.array([np.diag([4.0, -1e-12])])
    assert metric(T, P2) == pytest.approx(metric(T, P), rel=1e-12)
    for bad in (0.0, 1.0, -1e-3, np.nan, True, "1e-8"):
        with pytest.raises(ValueError, match="eig_floor"):
            metric(T, P, eig_floor=bad)
    with pytest.raises(ValueError, match="y_true holds only zero matrices"):
        metric(np.zeros((1, 2, 2)), P)


@pytest.mark.parametrize("metric", [mean_squared_affine_invariant, mean_squared_log_euclidean])
def test_floor_leaves_well_conditioned_matrices_alone(metric, rng):
    T, P = random_spd(rng, 3, (5,)), random_spd(rng, 3, (5,))
    assert metric(T, P) == pytest.approx(metric(T, P, eig_floor=1e-12), rel=1e-12)


def test_bures_wasserstein_handles_singular_matrices_without_floor():
    T = np.array([np.diag([4.0, 1.0])])
    P = np.array([np.diag([1.0, 0.0])])
    assert mean_squared_bures_wasserstein(T, P) == pytest.approx(2.0, rel=1e-12)


@PROPERTY
@given(seed=SEEDS, log_c=st.floats(-30.0, 30.0))
def test_scale_invariance_of_the_floored_metrics(seed, log_c):
    """d_AI and d_LE are invariant under a common scaling, and so is the relative floor; the
    squared Bures-Wasserstein distance scales like c."""
    rng = np.random.default_rng(seed)
    T, P = random_spd(rng, 3, (4,)), random_spd(rng, 3, (4,))
    P[0] = np.diag([1.0, 0.5, 0.0])  # singular: the floor matters
    c = float(np.exp(log_c))
    for metric in (mean_squared_affine_invariant, mean_squared_log_euclidean):
        assert metric(c * T, c * P) == pytest.approx(metric(T, P), rel=1e-8)
    assert mean_squared_bures_wasserstein(c * T, c * P) == pytest.approx(
        c * mean_squared_bures_wasserstein(T, P), rel=1e-8)


@PROPERTY
@given(seed=SEEDS)
def test_affine_invariant_metric_is_congruence_invariant(seed):
    rng = np.random.default_rng(seed)
    T, P = random_spd(rng, 3, (3,)), random_spd(rng, 3, (3,))
    G = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    GT, GP = G @ T @ G.T, G @ P @ G.T
    assert mean_squared_affine_invariant(GT, GP, eig_floor=1e-14) == pytest.approx(
        mean_squared_affine_invariant(T, P, eig_floor=1e-14), rel=1e-7)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_metric_input_validation(name, rng):
    metric = METRICS[name][0]
    T = random_spd(rng, 2, (3,))
    with pytest.raises(ValueError, match="y_pred of shape .* does not match y_true"):
        metric(T, T[:2])
    with pytest.raises(ValueError, match="y_true must have shape"):
        metric(T[0], T[0])
    with pytest.raises(ValueError, match="y_pred contains NaN"):
        metric(T, np.full_like(T, np.nan))
    with pytest.raises(ValueError, match="y_pred must be positive semi-definite.*PSD"):
        metric(T, T - 10.0 * np.eye(2))
    with pytest.raises(ValueError, match="y_true must be positive semi-definite.*neg_mse"):
        metric(T - 10.0 * np.eye(2), T)
    with pytest.raises(ValueError, match="y_true is empty"):
        metric(T[:0], T[:0])


# ---------------------------------------------------------------------------------------------
# in grid_search_cv (by name) and in scikit-learn's GridSearchCV (scorer objects)
# ---------------------------------------------------------------------------------------------
GRID = {"sigma": [0.3, 0.1], "lam2": [1e-2, 1e-4]}


def _data():
    t, M = make_bures_geodesic(12, random_state=0)
    return t, M + 0.05 * np.eye(2)  # SPD targets for the affine-invariant and LE metrics


@pytest.mark.parametrize("name", sorted(METRICS))
def test_grid_search_cv_by_name(name):
    t, M = _data()
    metric = METRICS[name][0]
    cv = KFold(3, shuffle=True, random_state=0)
    res = grid_search_cv(PSDRegressor(tol=1e-10, max_iter=100000), t, M, GRID, cv=cv,
                         scoring=f"neg_{name}")
    assert res.scoring == f"neg_{name}"
    # the best score recomputed by hand: fit on each training fold, score on its test fold
    best = res.best_params_
    scores = []
    for tr, te in cv.split(t):
        model = PSDRegressor(tol=1e-10, max_iter=100000, **best).fit(t[tr], M[tr])
        scores.append(-metric(M[te], model.predict(t[te])))
    assert res.best_score_ == pytest.approx(np.mean(scores), rel=1e-5)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_sklearn_gridsearchcv_with_make_scorer_and_callable(name):
    t, M = _data()
    metric, scorer, _ = METRICS[name]
    cv = KFold(3, shuffle=True, random_state=0)
    est = PSDRegressor(tol=1e-10, max_iter=100000)
    ours = grid_search_cv(est, t, M, GRID, cv=cv, scoring=f"neg_{name}")
    for scoring in (make_scorer(metric, greater_is_better=False), scorer):
        gs = GridSearchCV(est, GRID, cv=cv, scoring=scoring).fit(t, M)
        assert gs.best_params_ == ours.best_params_
        np.testing.assert_allclose(gs.cv_results_["mean_test_score"],
                                   ours.cv_results_["mean_test_score"], rtol=1e-5)


def test_leave_one_out_is_defined():
    t, M = _data()
    res = grid_search_cv(PSDRegressor(), t, M, {"sigma": [0.3], "lam2": [1e-3]}, cv="loo",
                         scoring="neg_bures_wasserstein")
    assert np.isfinite(res.best_score_) and res.best_score_ < 0


def test_unknown_scoring_lists_the_names():
    t, M = _data()
    with pytest.raises(ValueError, match="neg_bures_wasserstein.*neg_log_euclidean"):
        grid_search_cv(PSDRegressor(), t, M, GRID, scoring="neg_bures")


def test_singular_predictions_are_scored():
    """Rank-one targets: PSDRegressor's predictions are singular or nearly so; the floored
    metrics stay finite and the Bures-Wasserstein one needs no floor."""
    t, M = make_bures_geodesic(10, rank_one=True, random_state=0)
    model = PSDRegressor(sigma=0.3, lam1=1e-2, lam2=1e-4).fit(t, M)
    for name in METRICS:
        value = METRICS[name][1](model, t, M + 1e-3 * np.eye(2))
        assert np.isfinite(value) and value <= 0


def test_docstring_examples_run():
    import doctest

    import psdsos.model_selection._scoring as mod

    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_scalar_targets_are_one_by_one_matrices():
    a, b = np.array([4.0, 1.0, 0.0]), np.array([1.0, 1.0, 0.0])
    assert mean_squared_bures_wasserstein(a, b) == pytest.approx(1.0 / 3.0)  # (2 - 1)^2 / 3
    a, b = np.array([np.e, 1.0]), np.array([1.0, 1.0])
    for metric in (mean_squared_affine_invariant, mean_squared_log_euclidean):
        assert metric(a, b) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="y_pred must be positive semi-definite"):
        mean_squared_bures_wasserstein(a, -b)
