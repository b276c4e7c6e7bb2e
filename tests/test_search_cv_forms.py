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
