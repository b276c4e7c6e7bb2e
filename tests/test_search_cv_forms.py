"""grid_search_cv accepts scikit-learn's forms of ``cv`` (int, splitter, iterable of
(train, test) pairs, a generator included) plus "loo", and ``groups`` for group splitters;
each form gives the cv_results_ of scikit-learn's GridSearchCV on the same folds.  Bad
pairs and bad groups are refused with a ValueError that names the split and the problem,
without printing the index arrays."""

import numpy as np
import pytest
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    LeaveOneGroupOut,
    ShuffleSplit,
)

from psdsos import PSDRegressor
from psdsos.datasets import make_bures_geodesic
from psdsos.model_selection import grid_search_cv, neg_mse_scorer

GRID = {"lam2": [1e-1, 1e-2, 1e-3], "sigma": [1.0, 0.3]}
GROUPS = np.array([0, 0, 1, 1, 1, 2, 2, 3])


@pytest.fixture(scope="module")
def data():
    return make_bures_geodesic(8, random_state=3)


def _est():
    # tol 1e-10: warm (ours) and cold (GridSearchCV) starts stop at the same point to the
    # tolerance of the comparison (as in tests/test_model_selection.py)
    return PSDRegressor("exponential", tol=1e-10)


def _assert_same(ours, gs):
    assert ours.cv_results_["params"] == gs.cv_results_["params"]
    assert ours.best_params_ == gs.best_params_ and ours.best_index_ == gs.best_index_
    assert ours.n_splits_ == gs.n_splits_
    for k in range(gs.n_splits_):
        np.testing.assert_allclose(ours.cv_results_[f"split{k}_test_score"],
                                   gs.cv_results_[f"split{k}_test_score"], rtol=2e-4)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               gs.cv_results_["mean_test_score"], rtol=2e-4)
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"],
                                  gs.cv_results_["rank_test_score"])


@pytest.fixture(scope="module")
def shuffled_pairs(data):
    t, _ = data
    return [(tr, te) for tr, te in KFold(3, shuffle=True, random_state=0).split(t)]


@pytest.fixture(scope="module")
def sklearn_on_pairs(data, shuffled_pairs):
    t, M = data
    return GridSearchCV(_est(), GRID, cv=shuffled_pairs, scoring=neg_mse_scorer).fit(t, M)


# ------------------------------------------------------------------------------------------
# the forms of cv, compared with GridSearchCV on the same folds
# ------------------------------------------------------------------------------------------


def test_list_of_pairs_matches_gridsearchcv(data, shuffled_pairs, sklearn_on_pairs):
    t, M = data
    ours = grid_search_cv(_est(), t, M, GRID, cv=shuffled_pairs, scoring="neg_mse")
    _assert_same(ours, sklearn_on_pairs)
    # pairs of plain lists of ints work as well
    as_lists = [(tr.tolist(), te.tolist()) for tr, te in shuffled_pairs]
    again = grid_search_cv(_est(), t, M, GRID, cv=as_lists, scoring="neg_mse", refit=False)
    np.testing.assert_array_equal(again.cv_results_["mean_test_score"],
                                  ours.cv_results_["mean_test_score"])


def test_generator_of_pairs_is_read_once(data, shuffled_pairs, sklearn_on_pairs):
    t, M = data
    consumed = []

    def pairs():
        for pair in shuffled_pairs:
            consumed.append(1)
            yield pair

    ours = grid_search_cv(_est(), t, M, GRID, cv=pairs(), scoring="neg_mse")
    assert len(consumed) == len(shuffled_pairs)  # once, not once per candidate
    _assert_same(ours, sklearn_on_pairs)


def test_boolean_masks_are_rows(data, shuffled_pairs):
    t, M = data
    n = len(t)
    masks = [(np.isin(np.arange(n), tr), np.isin(np.arange(n), te)) for tr, te in shuffled_pairs]
    a = grid_search_cv(_est(), t, M, GRID, cv=masks, scoring="neg_mse", refit=False)
    b = grid_search_cv(_est(), t, M, GRID, cv=shuffled_pairs, scoring="neg_mse", refit=False)
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])


@pytest.mark.parametrize("cv", [2, ShuffleSplit(3, test_size=3, random_state=1)],
                         ids=["int", "splitter"])
def test_int_and_splitter_match_gridsearchcv(data, cv):
    t, M = data
    ours = grid_search_cv(_est(), t, M, GRID, cv=cv, scoring="neg_mse")
    gs = GridSearchCV(_est(), GRID, cv=KFold(cv) if isinstance(cv, int) else cv,
                      scoring=neg_mse_scorer).fit(t, M)
    _assert_same(ours, gs)


@pytest.mark.parametrize("splitter", [GroupKFold(2), LeaveOneGroupOut()],
                         ids=["GroupKFold", "LeaveOneGroupOut"])
def test_groups_match_gridsearchcv(data, splitter):
    t, M = data
    ours = grid_search_cv(_est(), t, M, GRID, cv=splitter, groups=GROUPS, scoring="neg_mse")
    gs = GridSearchCV(_est(), GRID, cv=splitter, scoring=neg_mse_scorer).fit(t, M,
                                                                             groups=GROUPS)
    _assert_same(ours, gs)
    n_groups = len(np.unique(GROUPS))
    assert ours.n_splits_ == (2 if isinstance(splitter, GroupKFold) else n_groups)
    # no group on both sides of a split
    for tr, te in splitter.split(t, M, GROUPS):
        assert not set(GROUPS[tr]) & set(GROUPS[te])


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored:UserWarning")  # sklearn's
def test_groups_ignored_by_splitters_without_groups(data, shuffled_pairs):
    t, M = data
    kw = {"scoring": "neg_mse", "refit": False}
    for cv in (2, "loo", KFold(2), shuffled_pairs):
        a = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=cv, **kw)
        b = grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=cv, groups=GROUPS, **kw)
        np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                      b.cv_results_["mean_test_score"])


@pytest.mark.parametrize("groups", [GROUPS[:-1], GROUPS.reshape(2, 4), np.zeros((8, 1))],
                         ids=["short", "2-D", "column"])
def test_groups_of_the_wrong_shape(data, groups):
    t, M = data
    with pytest.raises(ValueError, match=r"groups must hold one label per sample: expected "
                                         r"shape \(8,\)"):
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=GroupKFold(2), groups=groups)


def test_group_splitter_without_groups_says_so(data):
    t, M = data
    with pytest.raises(ValueError, match="groups"):
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=GroupKFold(2))


# ------------------------------------------------------------------------------------------
# bad pairs: which split, what is wrong, no arrays in the message
# ------------------------------------------------------------------------------------------

TR, TE = np.arange(0, 5), np.arange(5, 8)


@pytest.mark.parametrize(
    "pairs, match",
    [
        ([(TR, TE), (TR, np.arange(5, 9))], r"cv split 1 .*test indices hold 8, outside 0\.\.7"),
        ([(TR, TE), (np.arange(-1, 5), TE)], r"cv split 1 .*train indices hold -1, outside"),
        ([(TR, np.array([], dtype=int))], r"cv split 0 .*test set is empty"),
        ([(TR, TE), ([], TE)], r"cv split 1 .*train set is empty"),
        ([(TR.astype(float), TE)], r"cv split 0 .*train indices must be integers, got dtype "
                                   r"float64"),
        ([(TR, TE.reshape(1, 3))], r"cv split 0 .*test indices must be a 1-D array"),
        ([(TR, np.zeros(5, dtype=bool))], r"cv split 0 .*boolean mask of length 5, but there "
                                          r"are n = 8 samples"),
        ([(TR, np.zeros(8, dtype=bool))], r"cv split 0 .*test mask selects no row"),
        ([(TR, TE), np.arange(8)], r"cv split 1 .*must be a \(train, test\) pair"),
        ([(TR, TE, TE)], r"cv split 0 .*must be a \(train, test\) pair.*tuple of length 3"),
        ([], "cv is an empty iterable"),
    ],
    ids=["above-n", "negative", "empty-test", "empty-train", "float", "2-D", "short-mask",
         "empty-mask", "not-a-pair", "triple", "no-pairs"],
)
def test_bad_pairs(data, pairs, match):
    t, M = data
    with pytest.raises(ValueError, match=match) as info:
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=pairs)
    message = str(info.value)
    assert "[" not in message and "array(" not in message, message  # no index arrays
    assert len(message) < 200, message


@pytest.mark.parametrize(
    "cv, match",
    [
        (2.5, "got 2.5"),
        (object(), "got an object of type object"),
        (None, "got None"),
        ({"train": TR}, "cv must be"),
        ("kfold", "cv must be 'loo', an int >= 2, a CV splitter"),
    ],
)
def test_bad_cv_values(data, cv, match):
    t, M = data
    with pytest.raises(ValueError, match=match):
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=cv)


def test_long_list_of_pairs_not_dumped(data):
    """The issue's case: a mistake in one of many pairs is reported without the arrays."""
    t, M = data
    pairs = [(TR, TE)] * 50 + [(TR, np.arange(5, 20))]
    with pytest.raises(ValueError) as info:
        grid_search_cv(_est(), t, M, {"lam2": [1e-2]}, cv=pairs)
    message = str(info.value)
    assert message.startswith("cv split 50 ") and "19" in message and len(message) < 200


# ---- the CV estimators read cv and scoring as grid_search_cv does -------------------------------
def _cv_estimators():
    from psdsos import ConvexRegressorCV, PSDRegressorCV, ShapeConstrainedRegressorCV

    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (24, 1))
    y = np.sqrt(X[:, 0] + 0.1) + 0.02 * rng.standard_normal(24)
    t, M = make_bures_geodesic(12, random_state=3)
    return [
        (PSDRegressorCV(kernels=("gaussian",), sigmas=(0.5, 1.0), lam2s=(1e-2, 1e-4)), t, M),
        (ConvexRegressorCV(sigmas=(2.0,), rhos=(1e-3, 1e-5), n_landmarks=(8,), concave=True,
                           max_refits=1, random_state=0), X, y),
        (ShapeConstrainedRegressorCV(increasing=True, sigmas=(1.0,), rhos=(1e-3, 1e-4),
                                     lam2s=(1e-3,), max_refits=1, random_state=0), X, y),
    ]


CV_ESTIMATORS = _cv_estimators()
CV_IDS = [type(e).__name__ for e, _, _ in CV_ESTIMATORS]


@pytest.mark.parametrize("est, X, y", CV_ESTIMATORS, ids=CV_IDS)
def test_cv_estimators_take_pairs_as_the_splitter_gives_them(est, X, y):
    """cv as (train, test) pairs: the same search as the splitter that made them."""
    from sklearn.base import clone

    splitter = KFold(3, shuffle=True, random_state=1)
    pairs = list(splitter.split(X))
    a = clone(est).set_params(cv=splitter).fit(X, y)
    b = clone(est).set_params(cv=pairs).fit(X, y)
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])
    assert a.best_params_ == b.best_params_


@pytest.mark.parametrize("est, X, y", CV_ESTIMATORS, ids=CV_IDS)
def test_cv_estimators_name_a_bad_pair_without_dumping_it(est, X, y):
    from sklearn.base import clone

    n = len(X)
    pairs = [(np.arange(0, n - 4), np.arange(n - 4, n))] * 2 + [(np.arange(5), np.arange(n + 3))]
    with pytest.raises(ValueError) as info:
        clone(est).set_params(cv=pairs).fit(X, y)
    message = str(info.value)
    assert message.startswith("cv split 2 ") and str(n + 2) in message, message
    assert "[" not in message and len(message) < 200, message


@pytest.mark.parametrize("est, X, y", CV_ESTIMATORS, ids=CV_IDS)
@pytest.mark.parametrize("cv, match", [(1, "cv must be an int >= 2"),
                                       ("kfold", "cv must be 'loo', an int >= 2, a CV splitter"),
                                       (None, "got None")])
def test_cv_estimators_refuse_what_grid_search_cv_refuses(est, X, y, cv, match):
    from sklearn.base import clone

    with pytest.raises(ValueError, match=match):
        clone(est).set_params(cv=cv).fit(X, y)
    with pytest.raises(ValueError, match=match):
        grid_search_cv(_est(), *make_bures_geodesic(8, random_state=3), {"lam2": [1e-2]},
                       cv=cv)


def test_psd_regressor_cv_takes_the_scorer_names_of_grid_search_cv(data):
    """scoring="neg_bures_wasserstein" (refused before) is the scorer object's search."""
    from psdsos import PSDRegressorCV
    from psdsos.model_selection import neg_bures_wasserstein_scorer

    t, M = data
    kw = {"kernels": ("gaussian",), "sigmas": (0.5, 1.0), "lam2s": (1e-2, 1e-4), "cv": 2}
    by_name = PSDRegressorCV(scoring="neg_bures_wasserstein", **kw).fit(t, M)
    by_object = PSDRegressorCV(scoring=neg_bures_wasserstein_scorer, **kw).fit(t, M)
    np.testing.assert_array_equal(by_name.cv_results_["mean_test_score"],
                                  by_object.cv_results_["mean_test_score"])
    with pytest.raises(ValueError, match="scoring of PSDRegressorCV: scoring must be None, one"):
        PSDRegressorCV(scoring="neg_nonsense", **kw).fit(t, M)


def test_grid_search_cv_takes_scikit_learn_scorer_names():
    """Scalar targets: scikit-learn's "neg_mean_squared_error" is psdsos's "neg_mse"."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (16, 1))
    y = np.sin(3 * X[:, 0]) + 2.0
    grid = {"lam2": [1e-2, 1e-3]}
    ours = grid_search_cv(_est(), X, y, grid, cv=2, scoring="neg_mse")
    theirs = grid_search_cv(_est(), X, y, grid, cv=2, scoring="neg_mean_squared_error")
    np.testing.assert_allclose(theirs.cv_results_["mean_test_score"],
                               ours.cv_results_["mean_test_score"], rtol=1e-9)
    with pytest.raises(ValueError, match="a scikit-learn scorer name"):
        grid_search_cv(_est(), X, y, grid, cv=2, scoring="neg_nonsense")


def test_shape_cv_checks_the_shapes_before_any_fit():
    """A bad feature index is the parameter's ValueError, not "All the fits failed"."""
    from psdsos import ShapeConstrainedRegressorCV

    rng = np.random.default_rng(0)
    X, y = rng.uniform(0.0, 1.0, (20, 2)), rng.standard_normal(20)
    with pytest.raises(ValueError, match=r"increasing holds feature index 5, outside 0\.\.1"):
        ShapeConstrainedRegressorCV(increasing=[5]).fit(X, y)
    with pytest.raises(ValueError, match="lower must be < upper"):
        ShapeConstrainedRegressorCV(lower=1.0, upper=0.0).fit(X, y)
