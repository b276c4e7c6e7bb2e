"""fit(X, y, groups=g) of the CV estimators: passed to the splitter's split(X, y, groups) as
scikit-learn's GridSearchCV passes it (GroupKFold never splits a group; the scores equal
GridSearchCV's with the same splitter and groups), and checked (length, missing groups)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, GroupKFold

from psdsos import (
    ConvexRegressor,
    ConvexRegressorCV,
    PSDRegressor,
    PSDRegressorCV,
    ShapeConstrainedRegressorCV,
)
from psdsos.estimators import NonConvexFitWarning
from psdsos.kernels import scale_bandwidth

pytestmark = pytest.mark.filterwarnings(
    "ignore::psdsos.estimators.UncertifiedShapeWarning")


class _Recording(GroupKFold):
    """GroupKFold that keeps the splits it gave."""

    def split(self, X, y=None, groups=None):
        for train, test in super().split(X, y, groups):
            self.seen.append((train, test))
            yield train, test


def _recording(k=3):
    cv = _Recording(k)
    cv.seen = []
    return cv


def _curve(n=12, d=2, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 1.0, n))
    L = np.zeros((n, d, d))
    for a in range(d):
        L[:, a, a] = np.sin(2 * np.pi * (a + 1) * t + a)
    M = L @ np.swapaxes(L, 1, 2) + 0.1 * np.eye(d)
    E = 0.02 * rng.standard_normal((n, d, d))
    return t[:, None], M + (E + np.swapaxes(E, 1, 2)) / 2


def _convex_data(n=36, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, 2))
    return X, np.log(np.exp(X).sum(axis=1)) + 0.05 * rng.standard_normal(n)


def _shape_data(n=36, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.1, 1.0, (n, 1))
    return X, np.sqrt(X[:, 0]) + 0.05 * rng.standard_normal(n)


PSD_SMALL = {"kernels": ("gaussian",), "sigmas": (0.5, 1.0), "lam2s": (1e-2, 1e-4)}
CONVEX_SMALL = {"sigmas": (2.0, 4.0), "rhos": (1e-3, 1e-5), "n_landmarks": (10,),
                "max_refits": 1, "random_state": 0}
SHAPE_SMALL = {"increasing": True, "concave": True, "rhos": (1e-4, 1e-6), "sigmas": (1.0,),
               "max_refits": 1, "random_state": 0}


def _fit(kind, cv, groups, **kw):
    if kind == "psd":
        X, y = _curve()
        return PSDRegressorCV(cv=cv, **PSD_SMALL, **kw).fit(X, y, groups=groups), X
    if kind == "convex":
        X, y = _convex_data()
        return ConvexRegressorCV(cv=cv, **CONVEX_SMALL, **kw).fit(X, y, groups=groups), X
    X, y = _shape_data()
    return ShapeConstrainedRegressorCV(cv=cv, **SHAPE_SMALL, **kw).fit(X, y, groups=groups), X


KINDS = ["psd", "convex", "shape"]


@pytest.mark.parametrize("kind", KINDS)
def test_group_kfold_never_splits_a_group(kind):
    n = 12 if kind == "psd" else 36
    groups = np.repeat(np.arange(6), n // 6)[::-1]  # 6 groups of consecutive rows
    cv = _recording(3)
    est, X = _fit(kind, cv, groups)
    assert len(cv.seen) == 3
    assert sorted(np.concatenate([te for _, te in cv.seen]).tolist()) == list(range(n))
    for train, test in cv.seen:
        assert not set(groups[train]) & set(groups[test])
    # the search used those splits: one score column per split
    assert all(f"split{k}_test_score" in est.cv_results_ for k in range(3))
    assert "split3_test_score" not in est.cv_results_


def _neg_mse(est, X, y):
    P = est.predict(X)
    return -float(np.mean(np.sum((P - y) ** 2, axis=(1, 2))))


def test_psd_selection_equals_grid_search_with_groups():
    X, M = _curve()
    groups = np.repeat(np.arange(4), 3)
    cv_tol = 1e-9
    est = PSDRegressorCV(cv=GroupKFold(3), cv_tol=cv_tol, cv_max_iter=20000,
                         **PSD_SMALL).fit(X, M, groups=groups)
    s = scale_bandwidth(X)
    grid = {"kernel": list(PSD_SMALL["kernels"]), "sigma": [c * s for c in PSD_SMALL["sigmas"]],
            "lam2": list(PSD_SMALL["lam2s"])}
    ref = GridSearchCV(PSDRegressor(tol=cv_tol, max_iter=20000), grid, cv=GroupKFold(3),
                       scoring=_neg_mse).fit(X, M, groups=groups)
    assert [p["lam2"] for p in est.cv_results_["params"]] == \
        [p["lam2"] for p in ref.cv_results_["params"]]
    for k in range(3):
        # relative duality gap cv_tol: scores to about sqrt(cv_tol) of the targets' scale
        np.testing.assert_allclose(est.cv_results_[f"split{k}_test_score"],
                                   ref.cv_results_[f"split{k}_test_score"],
                                   rtol=100 * np.sqrt(cv_tol))
    np.testing.assert_array_equal(est.cv_results_["rank_test_score"],
                                  ref.cv_results_["rank_test_score"])
    assert est.best_params_ == ref.best_params_
    assert est.best_score_ == pytest.approx(ref.best_score_, rel=100 * np.sqrt(cv_tol))
    # the groups changed the folds: without them (KFold by default) the scores differ
    plain = PSDRegressorCV(cv=3, cv_tol=cv_tol, cv_max_iter=20000, **PSD_SMALL).fit(X, M)
    assert not np.allclose(plain.cv_results_["mean_test_score"],
                           est.cv_results_["mean_test_score"])


def test_convex_selection_equals_grid_search_with_groups():
    X, y = _convex_data(n=36)
    groups = np.arange(36) % 6
    cv_tol = 1e-8
    est = ConvexRegressorCV(cv=GroupKFold(3), cv_tol=cv_tol, cv_max_iter=20000,
                            extend_path=0, **CONVEX_SMALL).fit(X, y, groups=groups)
    s = scale_bandwidth(X)
    base = ConvexRegressor(tol=cv_tol, max_iter=20000, random_state=0)
    grid = [{"sigma": [m * s for m in CONVEX_SMALL["sigmas"]], "rho": [r], "lam2": [r],
             "n_landmarks": [10]} for r in CONVEX_SMALL["rhos"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", NonConvexFitWarning)
        ref = GridSearchCV(base, grid, cv=GroupKFold(3), scoring="neg_mean_squared_error",
                           refit=False).fit(X, y, groups=groups)
    ours = {tuple(sorted(p.items())): v for p, v in
            zip(est.cv_results_["params"], est.cv_results_["mean_test_score"], strict=True)}
    theirs = {tuple(sorted(p.items())): v for p, v in
              zip(ref.cv_results_["params"], ref.cv_results_["mean_test_score"], strict=True)}
    assert ours.keys() == theirs.keys()
    for key, v in theirs.items():
        assert ours[key] == pytest.approx(v, rel=1e-3), key
    best_ref = ref.cv_results_["params"][int(np.argmax(ref.cv_results_["mean_test_score"]))]
    assert est.best_params_ == best_ref


@pytest.mark.parametrize("kind", KINDS)
def test_group_splitter_without_groups_raises(kind):
    with pytest.raises(ValueError, match="groups"):
        _fit(kind, GroupKFold(3), None)


@pytest.mark.parametrize("kind", KINDS)
def test_groups_of_the_wrong_length_raise(kind):
    with pytest.raises(ValueError, match="groups"):
        _fit(kind, GroupKFold(3), np.arange(5))
    with pytest.raises(ValueError, match="groups"):
        _fit(kind, 3, np.zeros((36, 2)))


def test_groups_ignored_by_an_int_cv():
    X, M = _curve()
    a = PSDRegressorCV(cv=3, **PSD_SMALL).fit(X, M)
    b = PSDRegressorCV(cv=3, **PSD_SMALL).fit(X, M, groups=np.arange(12) % 2)
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])


@pytest.mark.parametrize("kind", ["convex", "shape"])
def test_rows_of_weight_zero_drop_their_groups(kind):
    """Rows of weight 0 are dropped before the split, with their group labels: the search
    equals that of the data without those rows."""
    X, y = _convex_data() if kind == "convex" else _shape_data()
    groups = np.arange(36) % 6
    w = np.ones(36)
    w[[0, 7]] = 0.0
    keep = w > 0
    cls, small = ((ConvexRegressorCV, CONVEX_SMALL) if kind == "convex"
                  else (ShapeConstrainedRegressorCV, SHAPE_SMALL))
    a = cls(cv=GroupKFold(3), **small).fit(X, y, sample_weight=w, groups=groups)
    b = cls(cv=GroupKFold(3), **small).fit(X[keep], y[keep], sample_weight=w[keep],
                                            groups=groups[keep])
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"],
                                  b.cv_results_["mean_test_score"])
    with pytest.raises(ValueError, match="groups"):  # the labels of all the rows are needed
        cls(cv=GroupKFold(3), **small).fit(X, y, sample_weight=w, groups=groups[keep])
