"""save / psdsos.load of the CV estimators (PSDRegressorCV, ConvexRegressorCV,
ShapeConstrainedRegressorCV): the same predictions (and gradients, Hessians, certificates)
to the last bit, the search's results restored, the splitter kept, bad files refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GroupKFold, KFold, PredefinedSplit

import psdsos
from psdsos import (
    ConvexRegressorCV,
    PSDRegressorCV,
    ShapeConstrainedRegressor,
    ShapeConstrainedRegressorCV,
)
from psdsos.kernels import Kernel, get_kernel

pytestmark = pytest.mark.filterwarnings(
    "ignore::psdsos.estimators.UncertifiedShapeWarning")


def _curve(n=12, d=2, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 1.0, n))
    L = np.zeros((n, d, d))
    for a in range(d):
        L[:, a, a] = np.sin(2 * np.pi * (a + 1) * t + a)
    M = L @ np.swapaxes(L, 1, 2) + 0.1 * np.eye(d)
    E = 0.02 * rng.standard_normal((n, d, d))
    return t[:, None], M + (E + np.swapaxes(E, 1, 2)) / 2


def _fit(kind):
    """(fitted search, test inputs, methods to compare)."""
    rng = np.random.default_rng(0)
    if kind == "PSDRegressorCV":
        X, M = _curve()
        est = PSDRegressorCV(kernels=(get_kernel("gaussian", 0.3), "matern52"),
                             sigmas=(0.5, 1.0), lam2s=(1e-2, 1e-4), cv=3).fit(X, M)
        return est, np.linspace(-0.1, 1.1, 7)[:, None], ("predict",)
    if kind == "ConvexRegressorCV":
        X = rng.uniform(-1.0, 1.0, (40, 2))
        y = np.log(np.exp(X).sum(axis=1)) + 0.05 * rng.standard_normal(40)
        est = ConvexRegressorCV(sigmas=(2.0, 4.0), rhos=(1e-3, 1e-5), n_landmarks=(10,),
                                cv=GroupKFold(3), random_state=0).fit(
                                    X, y, groups=np.arange(40) % 5)
        return est, rng.uniform(-1.2, 1.2, (9, 2)), ("predict", "gradient", "hessian")
    X = rng.uniform(0.1, 1.0, (36, 1))
    y = np.sqrt(X[:, 0]) + 0.05 * rng.standard_normal(36)
    est = ShapeConstrainedRegressorCV(increasing=True, concave=True, sigmas=(1.0,),
                                      rhos=(1e-4, 1e-6), max_refits=1,
                                      random_state=0).fit(X, y)
    return est, np.linspace(0.0, 1.2, 9)[:, None], ("predict", "gradient", "hessian")


KINDS = ["PSDRegressorCV", "ConvexRegressorCV", "ShapeConstrainedRegressorCV"]


@pytest.fixture(scope="module")
def fitted():
    return {kind: _fit(kind) for kind in KINDS}


def _read(path):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))


def _write(path, arrays, meta):
    meta = {k: v for k, v in meta.items() if k != "arrays_sha256"}
    meta["array_shapes"] = {k: list(np.shape(v)) for k, v in arrays.items()}
    np.savez(path, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
             **arrays)


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip(fitted, kind, tmp_path):
    est, Xt, methods = fitted[kind]
    est.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    assert type(back) is type(est)
    assert type(back.best_estimator_) is type(est.best_estimator_)
    assert back.get_params().keys() == est.get_params().keys()
    for method in methods:  # to the last bit
        np.testing.assert_array_equal(getattr(back, method)(Xt), getattr(est, method)(Xt))
        np.testing.assert_array_equal(getattr(back.best_estimator_, method)(Xt),
                                      getattr(est.best_estimator_, method)(Xt))
    assert back.best_params_ == est.best_params_
    assert back.best_score_ == est.best_score_ and back.best_index_ == est.best_index_
    assert back.best_sigma_factor_ == est.best_sigma_factor_
    assert back.n_features_in_ == est.n_features_in_ and back.n_iter_ == est.n_iter_
    assert back.cv_results_["params"] == est.cv_results_["params"]
    for key, value in est.cv_results_.items():
        if key == "params":
            continue
        got = back.cv_results_[key]
        if key.startswith("param_"):
            assert list(got) == list(value), key
        else:
            np.testing.assert_array_equal(got, value)
            assert got.dtype == np.asarray(value).dtype, key
    for attr in ("certificate_", "certified_", "correction_", "convexity_deficit_",
                 "n_splits_", "n_refits_", "n_not_converged_", "n_outputs_",
                 "n_closed_form_"):
        if hasattr(est, attr):
            assert getattr(back, attr) == getattr(est, attr), attr
    # saved again, the same file
    back.save(tmp_path / "again.npz")
    a1, m1 = _read(tmp_path / "m.npz")
    a2, m2 = _read(tmp_path / "again.npz")
    assert m1 == m2 and sorted(a1) == sorted(a2)
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k])


def test_kernel_objects_and_splitters_restored(fitted, tmp_path):
    est, _, _ = fitted["PSDRegressorCV"]
    est.save(tmp_path / "p.npz")
    back = psdsos.load(tmp_path / "p.npz")
    k0 = back.kernels[0]
    assert isinstance(k0, Kernel) and k0.name == "gaussian" and k0.sigma == 0.3
    assert list(back.kernels[1:]) == ["matern52"]
    assert [isinstance(p["kernel"], Kernel) for p in back.cv_results_["params"]] == \
        [isinstance(p["kernel"], Kernel) for p in est.cv_results_["params"]]
    conv, _, _ = fitted["ConvexRegressorCV"]
    conv.save(tmp_path / "c.npz")
    cv = psdsos.load(tmp_path / "c.npz").cv
    assert isinstance(cv, GroupKFold) and repr(cv) == repr(conv.cv)


def test_unsaved_splitter_is_named_and_loads_as_none(fitted, tmp_path):
    est, _, _ = fitted["ShapeConstrainedRegressorCV"]
    custom = PredefinedSplit(np.arange(36) % 3)  # an array parameter: not saved
    for cv in (custom, KFold(3, shuffle=True, random_state=np.random.RandomState(0))):
        est.set_params(cv=cv)
        try:
            est.save(tmp_path / "m.npz")
        finally:
            est.set_params(cv=3)
        _, meta = _read(tmp_path / "m.npz")
        assert meta["unsaved_params"] == {"cv": repr(cv)}
        assert psdsos.load(tmp_path / "m.npz").cv is None


def test_nan_scores_survive(fitted, tmp_path):
    """Failed CV fits score NaN (error_score): kept as NaN."""
    est, _, _ = fitted["ShapeConstrainedRegressorCV"]
    saved = est.cv_results_
    est.cv_results_ = {**saved, "split0_test_score": saved["split0_test_score"].copy()}
    est.cv_results_["split0_test_score"][-1] = np.nan
    try:
        est.save(tmp_path / "m.npz")
    finally:
        est.cv_results_ = saved
    back = psdsos.load(tmp_path / "m.npz")
    assert np.isnan(back.cv_results_["split0_test_score"][-1])


@pytest.mark.parametrize("cls", [PSDRegressorCV, ConvexRegressorCV,
                                 ShapeConstrainedRegressorCV])
def test_unfitted_save_raises(cls, tmp_path):
    with pytest.raises(NotFittedError):
        cls().save(tmp_path / "x.npz")


def test_bad_files_are_refused(fitted, tmp_path):
    est, _, _ = fitted["ConvexRegressorCV"]
    est.save(tmp_path / "m.npz")
    arrays, meta = _read(tmp_path / "m.npz")
    path = tmp_path / "bad.npz"
    # an array of the embedded best_estimator_: checked as its own file would be
    alpha = arrays["best_estimator.alpha"].copy()
    alpha[0] = np.nan
    _write(path, {**arrays, "best_estimator.alpha": alpha}, meta)
    with pytest.raises(ValueError, match="array 'alpha'.*best_estimator_.*NaN"):
        psdsos.load(path)
    _write(path, {k: v for k, v in arrays.items() if k != "best_estimator.X_fit"}, meta)
    with pytest.raises(ValueError, match="no array 'X_fit'"):
        psdsos.load(path)
    # the embedded estimator must be of the class the search refits
    _write(path, arrays, {**meta, "best_estimator": {**meta["best_estimator"],
                                                      "type": "PSDRegressor"}})
    with pytest.raises(ValueError, match="must hold a ConvexRegressor"):
        psdsos.load(path)
    # the search's results
    bad = json.loads(json.dumps(meta))
    bad["cv_results"]["columns"]["mean_test_score"]["values"].pop()
    _write(path, arrays, bad)
    with pytest.raises(ValueError, match="mean_test_score"):
        psdsos.load(path)
    _write(path, arrays, {**meta, "fitted": {**meta["fitted"], "best_index_": 99}})
    with pytest.raises(ValueError, match="best_index_"):
        psdsos.load(path)


def test_shape_regressor_round_trip_is_exact(tmp_path):
    """The fitted model predicts from its user-unit attributes, as a loaded one: equal to
    the last bit, inside and outside the box, raw or not."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (40, 2))
    y = np.sum(np.sqrt(X + 0.1), axis=1) + 0.1 * rng.standard_normal(40)
    est = ShapeConstrainedRegressor(increasing=[0], concave=[0, 1], random_state=0).fit(X, y)
    est.save(tmp_path / "s.npz")
    back = psdsos.load(tmp_path / "s.npz")
    P = rng.uniform(-0.5, 1.5, (11, 2))
    for raw in (False, True):
        for method in ("predict", "gradient", "hessian"):
            np.testing.assert_array_equal(getattr(back, method)(P, raw=raw),
                                          getattr(est, method)(P, raw=raw))
