"""PSDRegressor(target="sqrt"): the SoS model fitted to the targets' PSD square roots,
predictions squared (a bound on the Bures-Wasserstein training error)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import GridSearchCV, KFold

import psdsos
from psdsos import PSDRegressor
from psdsos.estimators._psd import NegativeTargetWarning, psd_sqrt_targets
from psdsos.geometry import bures_wasserstein_distance_squared
from psdsos.model_selection import grid_search_cv, neg_bures_wasserstein_scorer


def _spd_series(n, d, seed):
    """n SPD matrices varying smoothly with t in [0, 1] (eigenvalues ~0.05 to ~10)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, n))[:, None]
    A = rng.standard_normal((d, d))
    S = np.stack([np.diag(np.exp(np.linspace(-3, 2, d) * (0.5 + ti))) for ti in t[:, 0]])
    Q, _ = np.linalg.qr(A)
    return t, Q @ S @ Q.T


def _sqrt_ref(M):
    """PSD square roots by an independent route (SVD of a symmetric PSD matrix)."""
    out = []
    for Mi in M:
        U, s, _ = np.linalg.svd(Mi)
        out.append((U * np.sqrt(s)) @ U.T)
    return np.stack(out)


def test_equals_the_fit_to_the_square_roots():
    t, M = _spd_series(25, 3, 0)
    est = PSDRegressor(sigma=0.2, lam2=1e-5, tol=1e-10, max_iter=50000, target="sqrt").fit(t, M)
    ref = PSDRegressor(sigma=0.2, lam2=1e-5, tol=1e-10, max_iter=50000).fit(t, _sqrt_ref(M))
    np.testing.assert_allclose(est.B_, ref.B_, atol=1e-8 * np.abs(ref.B_).max())
    tq = np.linspace(-0.1, 1.1, 17)[:, None]
    G = ref.predict(tq)
    P = est.predict(tq)
    np.testing.assert_allclose(P, G @ G, rtol=1e-10, atol=1e-12 * np.abs(P).max())
    np.testing.assert_array_equal(P, np.swapaxes(P, 1, 2))
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-10)


def test_predictions_psd_and_close_to_targets():
    t, M = _spd_series(30, 3, 1)
    est = PSDRegressor(sigma=0.15, lam2=1e-7, tol=1e-9, max_iter=50000, target="sqrt").fit(t, M)
    P = est.predict(t)
    assert np.linalg.eigvalsh(P).min() >= -1e-12 * np.abs(P).max()
    # near interpolation of a smooth series: small relative error at the training times
    rel = np.linalg.norm(P - M, axis=(1, 2)) / np.linalg.norm(M, axis=(1, 2))
    assert rel.max() < 1e-2


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 3), lam2=st.sampled_from([1e-2, 1e-4]))
def test_training_loss_bounds_the_bures_wasserstein_error(seed, d, lam2):
    """d_BW(F^2, M)^2 <= ||F - M^(1/2)||_F^2 at every training point (Bhatia et al. 2019)."""
    rng = np.random.default_rng(seed)
    n = 8
    t = rng.uniform(0, 1, (n, 1))
    A = rng.standard_normal((n, d, d))
    M = A @ np.swapaxes(A, 1, 2) + 1e-3 * np.eye(d)
    est = PSDRegressor(sigma=0.3, lam2=lam2, tol=1e-8, max_iter=20000, target="sqrt").fit(t, M)
    F = est.model_(t)
    R = _sqrt_ref(M)
    for i in range(n):
        bw = bures_wasserstein_distance_squared(est.predict(t[i:i + 1])[0], M[i])
        bound = float(np.sum((F[i] - R[i]) ** 2))
        assert bw <= bound * (1 + 1e-9) + 1e-10 * float(np.trace(M[i]))


def test_indefinite_targets_warn_and_fit_the_psd_part():
    t, M = _spd_series(12, 2, 2)
    M = M.copy()
    M[3] -= 2.0 * np.abs(np.linalg.eigvalsh(M[3])).max() * np.eye(2) / 3  # indefinite
    with pytest.warns(NegativeTargetWarning, match=r"1 of 12 targets in y"):
        est = PSDRegressor(sigma=0.2, lam2=1e-4, target="sqrt").fit(t, M)
    w, V = np.linalg.eigh(M[3])
    root = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    np.testing.assert_allclose(psd_sqrt_targets(M[3:4], "y")[0], root, atol=1e-12)
    assert np.linalg.eigvalsh(est.predict(t)).min() >= -1e-12


def test_psd_targets_with_rounding_errors_do_not_warn():
    t, M = _spd_series(12, 3, 3)
    # a rank-one target whose zero eigenvalues come out at +-1e-16
    v = np.array([1.0, 2.0, 3.0])
    M = M.copy()
    M[0] = np.outer(v, v)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PSDRegressor(sigma=0.2, lam2=1e-4, target="sqrt").fit(t, M)


def test_scalar_targets_fit_the_root_and_predict_the_square():
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(-1, 1, 30))[:, None]
    y = (1 + x[:, 0]) ** 2
    est = PSDRegressor(sigma=0.4, lam2=1e-6, tol=1e-9, target="sqrt").fit(x, y)
    ref = PSDRegressor(sigma=0.4, lam2=1e-6, tol=1e-9).fit(x, np.sqrt(y))
    xq = np.linspace(-1, 1, 9)[:, None]
    assert est.predict(xq).shape == (9,)
    np.testing.assert_allclose(est.predict(xq), ref.predict(xq) ** 2, rtol=1e-9, atol=1e-12)
    with pytest.warns(NegativeTargetWarning):
        PSDRegressor(sigma=0.4, target="sqrt").fit(x, y - 0.5)


def test_score_uses_the_squared_predictions():
    t, M = _spd_series(20, 2, 5)
    est = PSDRegressor(sigma=0.2, lam2=1e-4, target="sqrt").fit(t, M)
    P = est.predict(t)
    r2 = 1 - np.sum((P - M) ** 2) / np.sum((M - M.mean(axis=0)) ** 2)
    assert est.score(t, M) == pytest.approx(r2, rel=1e-12)


@pytest.mark.parametrize("bad", ["root", "Sqrt", None, 2])
def test_bad_target_names_the_parameter(bad):
    t, M = _spd_series(6, 2, 6)
    with pytest.raises(ValueError, match="target"):
        PSDRegressor(target=bad).fit(t, M)


def test_save_load_round_trip(tmp_path):
    t, M = _spd_series(15, 2, 7)
    est = PSDRegressor(sigma=0.2, lam2=1e-4, target="sqrt").fit(t, M)
    path = tmp_path / "m.npz"
    est.save(path)
    back = psdsos.load(path)
    assert back.target == "sqrt"
    np.testing.assert_array_equal(back.predict(t), est.predict(t))


def test_files_without_the_option_load_as_matrix(tmp_path):
    """A file written before ``target`` existed (no such entry) predicts F_B, as before."""
    from psdsos._npz import load_npz, save_npz

    t, M = _spd_series(15, 2, 8)
    est = PSDRegressor(sigma=0.2, lam2=1e-4).fit(t, M)
    path = tmp_path / "m.npz"
    est.save(path)
    arrays, meta = load_npz(str(path))
    assert meta["params"]["target"] == "matrix"
    del meta["params"]["target"]
    meta.pop("arrays_sha256", None)
    save_npz(str(path), arrays, meta)
    back = psdsos.load(path)
    assert back.target == "matrix"
    np.testing.assert_array_equal(back.predict(t), est.predict(t))


def test_grid_search_cv_selects_as_gridsearchcv():
    t, M = _spd_series(24, 2, 9)
    grid = {"sigma": [0.1, 0.3], "lam2": [1e-3, 1e-5]}
    base = PSDRegressor(target="sqrt", tol=1e-9, max_iter=50000)
    cv = KFold(4, shuffle=True, random_state=0)
    ours = grid_search_cv(base, t, M, grid, cv=cv, scoring="neg_bures_wasserstein",
                          cv_params={"tol": 1e-9})
    ref = GridSearchCV(base, grid, cv=cv, scoring=neg_bures_wasserstein_scorer).fit(t, M)
    assert ours.best_params_ == ref.best_params_
    # both fit at tol = 1e-9 (relative duality gap): predictions agree to about sqrt(tol)
    # relative, scores (squared errors) to that times the largest score
    a = np.sort(ours.cv_results_["mean_test_score"])
    b = np.sort(ref.cv_results_["mean_test_score"])
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())


def test_psd_regressor_cv_target_equals_grid_search():
    """PSDRegressorCV(target="sqrt") selects as GridSearchCV over PSDRegressor(target="sqrt")
    with the same folds and scorer, and warns about indefinite targets once."""
    from psdsos import PSDRegressorCV
    from psdsos.kernels import scale_bandwidth

    t, M = _spd_series(20, 2, 10)
    cv = KFold(4, shuffle=True, random_state=0)
    est = PSDRegressorCV(kernels=("gaussian",), sigmas=(0.5, 1.0), lam2s=(1e-3, 1e-6), cv=cv,
                         scoring=neg_bures_wasserstein_scorer, cv_tol=1e-9,
                         cv_max_iter=50000, target="sqrt").fit(t, M)
    s = scale_bandwidth(t)
    grid = {"kernel": ["gaussian"], "sigma": [0.5 * s, 1.0 * s], "lam2": [1e-3, 1e-6]}
    ref = GridSearchCV(PSDRegressor(target="sqrt", tol=1e-9, max_iter=50000), grid, cv=cv,
                       scoring=neg_bures_wasserstein_scorer).fit(t, M)
    assert est.best_params_ == ref.best_params_
    assert est.best_estimator_.target == "sqrt"
    a, b = est.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())
    Mi = M.copy()
    Mi[2] -= 0.7 * np.abs(np.linalg.eigvalsh(M[2])).max() * np.eye(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PSDRegressorCV(kernels=("gaussian",), sigmas=(1.0,), lam2s=(1e-3,), cv=3,
                       target="sqrt").fit(t, Mi)
    assert sum(issubclass(c.category, NegativeTargetWarning) for c in caught) == 1
