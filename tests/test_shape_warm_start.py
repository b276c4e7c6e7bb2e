"""ShapeConstrainedRegressor(warm_start=True): a refit with the same features and constraints
starts from the previous fit's final constraint points and dual point (dual_coef_, saved with
the model); anything else starts cold, silently."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import psdsos
from psdsos import ShapeConstrainedRegressor
from psdsos.estimators import UncertifiedShapeWarning

pytestmark = pytest.mark.filterwarnings(
    "ignore::psdsos.estimators.UncertifiedShapeWarning")

TOL = 1e-8


def _data(n=50, p=2, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, p))
    y = np.sum(np.sqrt(X + 0.1), axis=1) + noise * rng.standard_normal(n)
    return X, y


def _atol(y):
    """Predictions of two fits at a relative duality gap TOL: the objective is strongly
    convex in the fitted values, so they differ by about sqrt(TOL) of the targets' spread."""
    return 10 * np.sqrt(TOL) * float(np.std(y))


#: An exchange that adds points (8 initial points), and one with a bound.
SHAPES = {"exchange": dict(increasing=True, concave=True, constraint_points=8),
          "bound": dict(increasing=[0], concave=[0, 1], upper=4.0)}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_warm_refit_same_data_is_fast_and_the_same_fit(shape):
    X, y = _data()
    kw = dict(random_state=0, tol=TOL, **SHAPES[shape])
    est = ShapeConstrainedRegressor(warm_start=True, **kw).fit(X, y)
    cold_iter, points = est.n_iter_, {k: v.copy() for k, v in est.constraint_points_.items()}
    assert isinstance(est.dual_coef_, list) and len(est.dual_coef_) == len(est.certificate_)
    for G, (name, Z) in zip(est.dual_coef_, est.constraint_points_.items(), strict=True):
        assert G.shape[0] == Z.shape[0], name
    P = np.random.default_rng(1).uniform(-0.2, 1.2, (40, 2))
    before = est.predict(P)
    est.fit(X, y)
    # from the final dual point on the final points: the solver's certificate holds at once
    assert est.n_iter_ <= max(5, cold_iter // 20), (est.n_iter_, cold_iter)
    assert est.n_exchange_ == 0
    np.testing.assert_allclose(est.predict(P), before, rtol=0, atol=_atol(y))
    for name, Z in points.items():  # the previous fit's points kept (none added)
        np.testing.assert_allclose(est.constraint_points_[name], Z, rtol=1e-12, atol=1e-12)
    # the same fit as a cold one
    cold = ShapeConstrainedRegressor(**kw).fit(X, y)
    assert cold.n_iter_ == cold_iter
    np.testing.assert_allclose(est.predict(P), cold.predict(P), rtol=0, atol=_atol(y))
    assert {k: c.status for k, c in est.certificate_.items()} == \
        {k: c.status for k, c in cold.certificate_.items()}


def test_cold_without_warm_start():
    X, y = _data()
    est = ShapeConstrainedRegressor(increasing=True, random_state=0, tol=TOL).fit(X, y)
    first, n_iter = est.predict(X), est.n_iter_
    est.fit(X, y)
    assert est.n_iter_ == n_iter
    np.testing.assert_array_equal(est.predict(X), first)


@pytest.mark.parametrize("change", ["constraints", "bound", "features"])
def test_other_constraints_or_features_start_cold(change):
    """Silently cold: the fit equals that of a fresh estimator, to the last bit."""
    X, y = _data()
    # no certificates (the fits are the same; a 3-feature proof costs a minute)
    est = ShapeConstrainedRegressor(increasing=True, concave=True, upper=4.0, warm_start=True,
                                    certify=False, constraint_points=16, max_exchange=2,
                                    random_state=0, tol=TOL).fit(X, y)
    if change == "constraints":
        est.set_params(concave=None)
    elif change == "bound":
        est.set_params(upper=4.5)
    else:
        X, y = _data(n=30, p=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about the cold start
        warnings.simplefilter("ignore", UncertifiedShapeWarning)
        est.fit(X, y)
    fresh = ShapeConstrainedRegressor(**est.get_params()).fit(X, y)
    assert est.n_iter_ == fresh.n_iter_
    np.testing.assert_array_equal(est.predict(X), fresh.predict(X))
    assert [G.shape for G in est.dual_coef_] == [G.shape for G in fresh.dual_coef_]


def test_primal_solver_has_no_dual_point_and_refits_cold():
    X, y = _data(n=20)
    est = ShapeConstrainedRegressor(increasing=True, constraint_points=6, max_exchange=0,
                                    warm_start=True, random_state=0).fit(X, y)
    assert est.dual_coef_ is not None
    est.set_params(solver="primal").fit(X, y)
    assert not hasattr(est, "dual_coef_")
    est.set_params(solver="dual").fit(X, y)  # after a primal fit: cold
    fresh = ShapeConstrainedRegressor(**est.get_params()).fit(X, y)
    assert est.n_iter_ == fresh.n_iter_


def test_dual_point_saved_and_a_loaded_model_warm_starts(tmp_path):
    X, y = _data()
    est = ShapeConstrainedRegressor(increasing=True, concave=True, constraint_points=8,
                                    warm_start=True, random_state=0, tol=TOL).fit(X, y)
    cold_iter = est.n_iter_
    est.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    assert len(back.dual_coef_) == len(est.dual_coef_)
    for a, b in zip(back.dual_coef_, est.dual_coef_, strict=True):
        np.testing.assert_array_equal(a, b)
    back.fit(X, y)
    assert back.n_iter_ <= max(5, cold_iter // 20)
    np.testing.assert_allclose(back.predict(X), est.predict(X), rtol=0, atol=_atol(y))


def _without_dual_point(src, dst):
    """The file as written before dual_coef_ was saved."""
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
    for k in [k for k in arrays if k.startswith("dual_coef_")]:
        del arrays[k]
        del meta["array_shapes"][k]
    del meta["arrays_sha256"]
    np.savez(dst, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    return meta


def test_file_without_dual_point_loads_and_warm_starts_cold(tmp_path):
    X, y = _data()
    est = ShapeConstrainedRegressor(increasing=True, constraint_points=8, warm_start=True,
                                    random_state=0, tol=TOL).fit(X, y)
    est.save(tmp_path / "m.npz")
    _without_dual_point(tmp_path / "m.npz", tmp_path / "old.npz")
    back = psdsos.load(tmp_path / "old.npz")
    assert not hasattr(back, "dual_coef_")
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    back.fit(X, y)
    fresh = ShapeConstrainedRegressor(**back.get_params()).fit(X, y)
    assert back.n_iter_ == fresh.n_iter_


def test_bad_dual_point_in_a_file_is_named(tmp_path):
    X, y = _data(n=30)
    est = ShapeConstrainedRegressor(increasing=True, constraint_points=8, random_state=0,
                                    tol=TOL).fit(X, y)
    est.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
    del meta["arrays_sha256"]
    arrays["dual_coef_0"] = arrays["dual_coef_0"][:-1]
    meta["array_shapes"]["dual_coef_0"] = list(arrays["dual_coef_0"].shape)
    np.savez(tmp_path / "bad.npz",
             __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(ValueError, match="dual_coef_0.*increasing"):
        psdsos.load(tmp_path / "bad.npz")
