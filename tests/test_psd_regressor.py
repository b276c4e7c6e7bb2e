"""Tests for psdsos.PSDRegressor (PSD paper, eq. 11): the scikit-learn contract, input
validation, PSD predictions, solver agreement, warm starts, persistence and scoring.

References: the objective is recomputed here from ``predict`` and ``B_`` (not through
PSDLeastSquares), the score against ``sklearn.metrics.r2_score``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import r2_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdsos
from psdsos import PSDRegressor
from psdsos.kernels import GaussianKernel
from psdsos.solvers import InaccurateSolutionWarning, SolverStatusError

# ---------------------------------------------------------------------------------------
# scikit-learn estimator checks
# ---------------------------------------------------------------------------------------
#: Every check PSDRegressor fails, with the reason found by running it (sklearn 1.9).
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": (
        "a 2-D target of shape (n, 1) is rejected with ValueError by contract: targets are "
        "(n, d, d) matrices or 1-D scalars, never (n, k)"
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "weights equal repeated rows up to the solver's accuracy, not to rtol 1e-7: at the "
        "default tol = 1e-7 (relative duality gap) predictions agree to ~1e-5, and repeated "
        "rows make the exact features' kernel matrix singular (Cholesky with jitter, ~1e-6 "
        "even at tol 1e-12); tests/test_psd_losses.py checks the equivalence at those levels"
    ),
}


@parametrize_with_checks(
    [PSDRegressor(), PSDRegressor(target="sqrt")],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------
def psd_curve(rng, n=12, d=2, p=1, noise=0.0):
    """Targets on a smooth PSD curve (plus symmetric noise, possibly indefinite)."""
    X = rng.uniform(0.0, 1.0, size=(n, p))
    A0 = rng.standard_normal((d, d))
    A1 = rng.standard_normal((d, d))
    t = X[:, :1, None]
    L = A0 + t * A1
    M = L @ np.swapaxes(L, 1, 2) + 0.1 * np.eye(d)
    if noise:
        E = noise * rng.standard_normal((n, d, d))
        M = M + 0.5 * (E + np.swapaxes(E, 1, 2))
    return X, M


def direct_objective(est, X, M):
    """J(B_) recomputed from the estimator's predictions (eq. 11)."""
    P = est.predict(X).reshape(M.shape)
    B = est.B_
    return (
        0.5 / len(X) * np.sum((P - M) ** 2)
        + est.lam1 * np.trace(B)
        + 0.5 * est.lam2 * np.sum(B * B)
    )


# ---------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------
def _nan_X(X, M):
    X = X.copy()
    X[1, 0] = np.nan
    return X, M


def _inf_X(X, M):
    X = X.copy()
    X[1, 0] = np.inf
    return X, M


def _nan_M(X, M):
    M = M.copy()
    M[2, 0, 0] = np.nan
    return X, M


def _inf_M(X, M):
    M = M.copy()
    M[2, 1, 1] = -np.inf
    return X, M


def _asym_M(X, M):
    M = M.copy()
    M[0, 0, 1] += 0.5
    return X, M


BAD_DATA = [
    ("X-nan", _nan_X, "X contains NaN"),
    ("X-inf", _inf_X, "X contains infinity"),
    ("X-1d", lambda X, M: (X[:, 0], M), "Expected 2D array"),
    ("X-3d", lambda X, M: (X[:, :, None], M), "dim 3"),
    ("X-1-sample", lambda X, M: (X[:1], M[:1]), "minimum of 2"),
    ("M-nan", _nan_M, "y contains NaN"),
    ("M-inf", _inf_M, "y contains NaN or infinite"),
    ("M-2d", lambda X, M: (X, M.reshape(len(M), -1)), r"y must have shape \(n_samples, d, d\)"),
    ("M-2d-column", lambda X, M: (X, M[:, :1, 0]), r"y must have shape \(n_samples, d, d\)"),
    ("M-4d", lambda X, M: (X, M[..., None]), r"y must have shape \(n_samples, d, d\)"),
    ("M-not-square", lambda X, M: (X, M[:, :, :1]), r"y must have shape \(n_samples, d, d\)"),
    ("M-not-symmetric", _asym_M, "y must hold symmetric matrices"),
    ("M-too-short", lambda X, M: (X, M[:-1]), "X and y have different numbers of samples"),
    ("M-1d-too-short", lambda X, M: (X, M[:-1, 0, 0]), "X and y have different numbers of samples"),
    ("X-too-short", lambda X, M: (X[:-2], M), "X and y have different numbers of samples"),
    ("M-strings", lambda X, M: (X, np.full(M.shape, "a")), "y must be a numeric array"),
    ("M-complex", lambda X, M: (X, M + 1e-3j * M), "y must hold real numbers"),
    ("M-complex-zero-imag", lambda X, M: (X, M.astype(complex)), "y must hold real numbers"),
]


@pytest.mark.parametrize("label, corrupt, match", BAD_DATA, ids=[b[0] for b in BAD_DATA])
def test_bad_data_raises_value_error_naming_argument(rng, label, corrupt, match):
    X, M = psd_curve(rng, n=8, d=2)
    Xb, Mb = corrupt(X, M)
    with pytest.raises(ValueError, match=match):
        PSDRegressor(sigma=0.3).fit(Xb, Mb)


BAD_PARAMS = [
    (dict(sigma=0.0), "sigma"),
    (dict(sigma=-1.0), "sigma"),
    (dict(sigma=np.nan), "sigma"),
    (dict(sigma=np.inf), "sigma"),
    (dict(sigma="wide"), "sigma"),
    (dict(lam1=-1e-3), "lam1"),
    (dict(lam2=-1e-3), "lam2"),
    (dict(lam1=np.nan), "lam1"),
    (dict(n_landmarks=9), "n_landmarks"),
    (dict(n_landmarks=0), "n_landmarks"),
    (dict(n_landmarks=2.5), "n_landmarks"),
    (dict(kernel="laplace"), "kernel"),  # "rbf" is the Gaussian (test_conventions)
    (dict(kernel=None), "kernel"),
    (dict(solver="newton"), "^solver"),
    (dict(solver="primal", primal_solver="MOSEK"), "primal_solver"),
    (dict(primal_solver="ECOS"), "primal_solver"),
    (dict(n_landmarks=3, landmarks="kmeans"), "landmarks"),
    (dict(tol=0.0), "tol"),
    (dict(max_iter=0), "max_iter"),
    (dict(max_iter=1.5), "max_iter"),
    (dict(warm_start="yes"), "warm_start"),
    (dict(random_state=-1), "random_state"),
    (dict(verbose=-1), "verbose"),
    (dict(lam2=0.0, lam1=1e-3), "primal"),  # the dual needs lam2 > 0; points to the primal
    # Theorem 2 needs lam1 > 0 or lam2 > 0, whatever the solver
    (dict(lam2=0.0), "lam1 = lam2 = 0 is ill-posed.*lam1 > 0.*lam2 > 0"),
    (dict(lam2=0.0, solver="primal"), "lam1 = lam2 = 0 is ill-posed.*lam1 > 0.*lam2 > 0"),
    (dict(lam2=0.0, solver="primal", primal_solver="CLARABEL"), "lam1 = lam2 = 0"),
]


@pytest.mark.parametrize("params, match", BAD_PARAMS, ids=[str(p) for p, _ in BAD_PARAMS])
def test_bad_params_raise_value_error_naming_argument(rng, params, match):
    X, M = psd_curve(rng, n=8, d=2)
    est = PSDRegressor(**params)  # __init__ validates nothing
    assert est.get_params()[next(iter(params))] is params[next(iter(params))]
    with pytest.raises(ValueError, match=match):
        est.fit(X, M)


@pytest.mark.parametrize("name", ["lam1", "lam2"])
def test_infinite_regularization_raises_value_error(rng, name):
    X, M = psd_curve(rng, n=8, d=2)
    with pytest.raises(ValueError, match=name):
        PSDRegressor(**{name: np.inf}).fit(X, M)


def test_not_fitted_errors(rng):
    X, M = psd_curve(rng, n=6, d=2)
    est = PSDRegressor()
    for call in (lambda: est.predict(X), lambda: est.score(X, M), lambda: est.save("unused.npz")):
        with pytest.raises(NotFittedError):
            call()
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def test_predict_validates_input(rng):
    X, M = psd_curve(rng, n=8, d=2, p=2)
    est = PSDRegressor(sigma=0.5).fit(X, M)
    with pytest.raises(ValueError, match="X has 1 features"):
        est.predict(X[:, :1])
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        est.predict(Xb)


# ---------------------------------------------------------------------------------------
# fitted model
# ---------------------------------------------------------------------------------------
def test_predictions_psd_on_1e4_random_inputs(rng):
    """Acceptance: predictions are PSD everywhere, even from noisy indefinite targets."""
    X, M = psd_curve(rng, n=15, d=3, noise=0.5)
    assert np.linalg.eigvalsh(M)[:, 0].min() < 0  # some targets are indefinite (legitimate)
    est = PSDRegressor(kernel="exponential", sigma=0.1, lam1=0.0, lam2=1e-5, tol=1e-6)
    est.fit(X, M)
    Xt = rng.uniform(-1.0, 2.0, size=(10_000, 1))
    P = est.predict(Xt)
    assert P.shape == (10_000, 3, 3)
    np.testing.assert_array_equal(P, np.swapaxes(P, 1, 2))
    scale = np.abs(P).max()
    assert np.linalg.eigvalsh(P)[:, 0].min() >= -1e-10 * scale


def test_fitted_attributes(rng):
    X, M = psd_curve(rng, n=10, d=2, p=2)
    est = PSDRegressor(sigma=0.5, lam1=1e-3, lam2=1e-3, tol=1e-9)
    assert est.fit(X, M) is est
    assert est.B_.shape == (20, 20)
    np.testing.assert_allclose(est.B_, est.B_.T, rtol=0, atol=1e-15 * np.abs(est.B_).max())
    assert np.linalg.eigvalsh(est.B_)[0] >= -1e-12 * np.abs(est.B_).max()
    assert est.n_outputs_ == 2 and est.n_features_in_ == 2
    assert est.kernel_ == GaussianKernel(0.5)
    assert 0 <= est.dual_gap_ <= 1e-9
    assert est.n_iter_ >= 1
    assert est.objective_ == pytest.approx(direct_objective(est, X, M), rel=1e-10)
    # optimality: Gamma_i = (F(x_i) - M_i) / n
    F = est.predict(X)
    np.testing.assert_allclose(est.dual_coef_, (F - M) / len(X), atol=1e-5)
    # the model evaluates F_B with the fitted features
    np.testing.assert_allclose(est.model_(X), F)
    assert est.features_.n_components == 10


def test_scalar_targets_fit_the_non_negative_model(rng):
    X = rng.uniform(-1, 1, size=(12, 1))
    y = np.sin(3 * X[:, 0]) + 0.2  # partly negative: the fit stays >= 0
    est = PSDRegressor(sigma=0.3, lam2=1e-4).fit(X, y)
    assert est.n_outputs_ == 1
    pred = est.predict(rng.uniform(-1.5, 1.5, size=(2000, 1)))
    assert pred.shape == (2000,)
    assert pred.min() >= -1e-12 * np.abs(pred).max()
    # same as the (n, 1, 1) formulation
    est3 = PSDRegressor(sigma=0.3, lam2=1e-4).fit(X, y[:, None, None])
    np.testing.assert_allclose(est3.predict(X)[:, 0, 0], est.predict(X), atol=1e-8)


def test_kernel_object_equals_kernel_name(rng):
    X, M = psd_curve(rng, n=8, d=2)
    a = PSDRegressor(kernel="gaussian", sigma=0.4, tol=1e-9).fit(X, M)
    b = PSDRegressor(kernel=GaussianKernel(0.4), sigma=123.0, tol=1e-9).fit(X, M)
    c = PSDRegressor(kernel="Gaussian", sigma=0.4, tol=1e-9).fit(X, M)
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-12)
    np.testing.assert_allclose(a.predict(X), c.predict(X), atol=1e-12)


@pytest.mark.parametrize("primal_solver, tol", [("CLARABEL", 1e-9), ("SCS", 1e-7)])
@pytest.mark.parametrize("n_landmarks", [None, 5])
def test_dual_and_primal_agree_through_the_estimator(rng, seed, primal_solver, tol, n_landmarks):
    X, M = psd_curve(rng, n=12, d=2, noise=0.2)
    common = dict(
        kernel="gaussian",
        sigma=0.3,
        lam1=1e-4,
        lam2=1e-3,
        n_landmarks=n_landmarks,
        random_state=seed,
    )
    dual = PSDRegressor(solver="dual", tol=1e-9, **common).fit(X, M)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        primal = PSDRegressor(solver="primal", primal_solver=primal_solver, tol=tol, **common).fit(
            X, M
        )
    assert abs(primal.dual_gap_) <= 10 * tol  # certified: dual at Gamma(B_)
    for est in (dual, primal):
        assert est.objective_ == pytest.approx(direct_objective(est, X, M), rel=1e-10)
    assert primal.objective_ == pytest.approx(dual.objective_, rel=1e-5)
    np.testing.assert_allclose(primal.predict(X), dual.predict(X), atol=1e-2)


def test_primal_handles_lam2_zero(rng):
    X, M = psd_curve(rng, n=8, d=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        a = PSDRegressor(
            sigma=0.3, lam1=1e-2, lam2=0.0, solver="primal", primal_solver="CLARABEL", tol=1e-9
        ).fit(X, M)
        b = PSDRegressor(
            sigma=0.3, lam1=1e-2, lam2=0.0, solver="primal", primal_solver="SCS", tol=1e-8
        ).fit(X, M)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-4)


def test_nystrom_landmarks(rng, seed):
    X, M = psd_curve(rng, n=14, d=2, noise=0.1)
    for landmarks in ("uniform", "greedy"):
        est = PSDRegressor(sigma=0.3, n_landmarks=5, landmarks=landmarks, random_state=seed).fit(
            X, M
        )
        assert est.B_.shape == (10, 10)
        assert est.features_.n_components == 5
        assert len(est.features_.landmark_indices_) == 5
        again = PSDRegressor(sigma=0.3, n_landmarks=5, landmarks=landmarks, random_state=seed).fit(
            X, M
        )
        np.testing.assert_array_equal(
            est.features_.landmark_indices_, again.features_.landmark_indices_
        )
        np.testing.assert_allclose(est.predict(X), again.predict(X), atol=1e-12)
    # more landmarks fit the training data at least as well (nested greedy sets)
    objs = [
        PSDRegressor(sigma=0.3, n_landmarks=r, landmarks="greedy", random_state=seed, tol=1e-9)
        .fit(X, M)
        .objective_
        for r in (2, 6, 14)
    ]
    assert objs[0] >= objs[1] - 1e-9 and objs[1] >= objs[2] - 1e-9
    exact = PSDRegressor(sigma=0.3, tol=1e-9).fit(X, M)
    assert objs[2] == pytest.approx(exact.objective_, rel=1e-6)


def test_convergence_warning(rng):
    X, M = psd_curve(rng, n=10, d=2)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = PSDRegressor(sigma=0.3, tol=1e-12, max_iter=1).fit(X, M)
    assert est.n_iter_ == 1
    assert est.dual_gap_ > 1e-12


def test_warm_start_reduces_iterations(rng):
    X, M = psd_curve(rng, n=12, d=2, noise=0.1)
    est = PSDRegressor(sigma=0.3, lam2=1e-3, tol=1e-9, warm_start=True).fit(X, M)
    est.set_params(lam2=1.05e-3).fit(X, M)
    warm = est.n_iter_
    cold = PSDRegressor(sigma=0.3, lam2=1.05e-3, tol=1e-9).fit(X, M)
    assert warm < cold.n_iter_
    assert est.objective_ == pytest.approx(cold.objective_, rel=1e-8)
    # no warm start without warm_start=True
    est2 = PSDRegressor(sigma=0.3, lam2=1e-3, tol=1e-9).fit(X, M)
    est2.set_params(lam2=1.05e-3).fit(X, M)
    assert est2.n_iter_ == cold.n_iter_
    # a training set of another size starts cold
    est.fit(X[:-1], M[:-1])
    assert (
        est.n_iter_ == PSDRegressor(sigma=0.3, lam2=1.05e-3, tol=1e-9).fit(X[:-1], M[:-1]).n_iter_
    )


@pytest.mark.parametrize(
    "params",
    [
        dict(sigma=0.3),
        dict(kernel="matern52", sigma=0.5, n_landmarks=6, landmarks="greedy", random_state=0),
        dict(kernel=GaussianKernel(0.3), random_state=np.random.default_rng(0)),
    ],
)
def test_save_load_round_trip(rng, tmp_path, params):
    X, M = psd_curve(rng, n=12, d=2, noise=0.1)
    est = PSDRegressor(lam1=1e-4, **params).fit(X, M)
    path = tmp_path / "reg.npz"
    est.save(path)
    loaded = psdsos.load(path)
    assert type(loaded) is PSDRegressor
    Xt = rng.uniform(-0.5, 1.5, size=(500, 1))
    P, Q = est.predict(Xt), loaded.predict(Xt)
    np.testing.assert_allclose(Q, P, rtol=0, atol=1e-12 * np.abs(P).max())
    for attr in ("objective_", "n_iter_", "dual_gap_", "n_features_in_", "n_outputs_"):
        assert getattr(loaded, attr) == getattr(est, attr)
    for k, v in loaded.get_params().items():
        if k not in ("kernel", "random_state", "sigma"):
            assert v == est.get_params()[k]
    assert loaded.score(X, M) == pytest.approx(est.score(X, M), rel=1e-12)
    # scalar targets keep their 1-D predictions
    y = np.abs(M[:, 0, 0])
    est1 = PSDRegressor(sigma=0.3).fit(X, y)
    est1.save(tmp_path / "scalar")
    loaded1 = psdsos.load(tmp_path / "scalar.npz")
    assert loaded1.predict(Xt).shape == (500,)
    np.testing.assert_allclose(loaded1.predict(Xt), est1.predict(Xt), rtol=0, atol=1e-12)


def test_save_load_predictions_bit_identical(tmp_path):
    X, M = psd_curve(np.random.default_rng(0), n=12, d=2, noise=0.1)
    est = PSDRegressor(sigma=0.3, lam1=1e-4).fit(X, M)
    est.save(tmp_path / "reg.npz")
    Xt = np.random.default_rng(1).uniform(-0.5, 1.5, size=(500, 1))
    np.testing.assert_array_equal(psdsos.load(tmp_path / "reg.npz").predict(Xt), est.predict(Xt))


def test_save_refuses_custom_kernel(rng, tmp_path):
    class MyKernel(GaussianKernel):
        name = "mine"

    X, M = psd_curve(rng, n=6, d=2)
    est = PSDRegressor(kernel=MyKernel(0.3)).fit(X, M)
    with pytest.raises(ValueError, match="custom kernel"):
        est.save(tmp_path / "x.npz")


def test_score_is_r2(rng):
    X, M = psd_curve(rng, n=12, d=2, noise=0.3)
    est = PSDRegressor(sigma=0.3, lam2=1e-3).fit(X, M)
    P = est.predict(X)
    # perfect prediction
    assert est.score(X, P) == 1.0
    # matches the pooled R^2 over all entries = sklearn's variance-weighted multioutput R^2
    n = len(X)
    ref = r2_score(M.reshape(n, -1), P.reshape(n, -1), multioutput="variance_weighted")
    assert est.score(X, M) == pytest.approx(ref, rel=1e-12)
    direct = 1 - np.sum((P - M) ** 2) / np.sum((M - M.mean(axis=0)) ** 2)
    assert est.score(X, M) == pytest.approx(direct, rel=1e-12)
    w = rng.uniform(0.1, 2.0, size=n)
    ref_w = r2_score(
        M.reshape(n, -1), P.reshape(n, -1), sample_weight=w, multioutput="variance_weighted"
    )
    assert est.score(X, M, sample_weight=w) == pytest.approx(ref_w, rel=1e-12)
    # scalar targets: the usual R^2
    y = np.abs(M[:, 0, 0])
    est1 = PSDRegressor(sigma=0.3).fit(X, y)
    assert est1.score(X, y) == pytest.approx(r2_score(y, est1.predict(X)), rel=1e-12)
    assert est1.score(X, est1.predict(X)) == 1.0


BAD_SCORE_M = [
    ("flat", lambda M: M.reshape(len(M), -1), r"y must have shape \(n_samples, d, d\)"),
    ("same-size-other-shape", lambda M: M.reshape(2, 4, 4), "different numbers of samples"),
    ("wrong-d", lambda M: np.tile(M, (1, 2, 2)), r"y must have shape \(n_samples, 2, 2\)"),
    ("nan", lambda M: np.where(np.arange(M.size).reshape(M.shape) == 3, np.nan, M),
     "y contains NaN"),
    ("complex", lambda M: M + 0j, "y must hold real numbers"),
    ("too-short", lambda M: M[:-1], "different numbers of samples"),
]


@pytest.mark.parametrize("label, corrupt, match", BAD_SCORE_M, ids=[b[0] for b in BAD_SCORE_M])
def test_score_validates_M(rng, label, corrupt, match):
    # score once reshaped any M with the right number of entries and scored NaN silently
    X, M = psd_curve(rng, n=8, d=2)
    est = PSDRegressor(sigma=0.3).fit(X, M)
    with pytest.raises(ValueError, match=match):
        est.score(X, corrupt(M))


# ---------------------------------------------------------------------------------------
# scale: targets of any magnitude (J(c B; c M, c lam1) = c^2 J(B; M, lam1))
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["dual", "primal"])
@pytest.mark.parametrize("lam1", [0.0, 1e-2])
@pytest.mark.parametrize("c", [1e160, 1e-160, 2.0**-500])
def test_fit_is_scale_equivariant(rng, solver, lam1, c):
    # targets whose squares overflow once predicted 0 with objective inf
    X, M = psd_curve(rng, n=8, d=2)
    kw = dict(sigma=0.3, lam2=1e-2, solver=solver, primal_solver="CLARABEL", tol=1e-10)
    ref = PSDRegressor(lam1=lam1, **kw).fit(X, M)
    est = PSDRegressor(lam1=lam1 * c, **kw).fit(X, c * M)
    # power-of-two c: the solver sees bit-identical data; otherwise M / 2^e differs from the
    # reference's in the last bit and the answers agree to the solver's tolerance
    # (strong convexity lam2 = 1e-2: ||B - B*|| <= sqrt(2 gap / lam2))
    exact = np.frexp(c)[0] == 0.5
    rtol = 1e-12 if exact else (1e-9 if solver == "dual" else 1e-4)
    scale_B = np.abs(ref.B_).max()
    np.testing.assert_allclose(est.B_ / c, ref.B_, rtol=0, atol=rtol * scale_B)
    P, P_ref = est.predict(X), ref.predict(X)
    assert np.all(np.isfinite(P)) and np.abs(P).max() > 0
    np.testing.assert_allclose(P / c, P_ref, rtol=0, atol=rtol * np.abs(P_ref).max())
    if solver == "dual":
        np.testing.assert_allclose(est.dual_coef_ / c, ref.dual_coef_, rtol=0,
                                   atol=rtol * np.abs(ref.dual_coef_).max())
        assert est.dual_gap_ <= kw["tol"]
    assert est.score(X, c * M) == pytest.approx(ref.score(X, M), abs=rtol)
    if 1e-150 < c < 1e150:
        assert est.objective_ / c / c == pytest.approx(ref.objective_, rel=max(rtol, 1e-12))
    else:  # J itself is beyond the float range: inf above, (sub)normal-or-zero below
        assert est.objective_ == (np.inf if c > 1 else pytest.approx(0.0, abs=1e-300))


@pytest.mark.parametrize("lam1, c", [(1e10, 1e-300), (1e300, 1e-10), (10.0, 1.0)])
def test_large_lam1_gives_zero_exactly(rng, lam1, c):
    # lam1 >= lambda_max((1/n) sum Psi_i M_i Psi_i^T) makes B = 0 optimal (KKT at B = 0);
    # lam1 / 2^e once overflowed to inf (LinAlgError, NaN in the primal)
    X, M = psd_curve(rng, n=8, d=2)
    est = PSDRegressor(sigma=0.3, lam1=lam1).fit(X, c * M)
    assert np.all(est.B_ == 0) and np.all(est.predict(X) == 0)
    J0 = 0.5 * np.mean(np.sum(M**2, axis=(1, 2)))  # J(0) at c = 1
    if c > 1e-150:
        assert est.objective_ / c / c == pytest.approx(J0, rel=1e-12)
    else:  # c^2 J0 is below the float range
        assert est.objective_ == 0.0


@pytest.mark.parametrize("c", [1e-160, 1.0, 1e160])
def test_asymmetry_is_relative_to_the_targets(rng, c):
    # symmetry was once checked against max(1, max|M|): tiny asymmetric targets passed
    X, M = psd_curve(rng, n=8, d=2)
    M = M.copy()
    M[0, 0, 1] += 1e-4 * np.abs(M).max()
    with pytest.raises(ValueError, match="y must hold symmetric matrices"):
        PSDRegressor(sigma=0.3).fit(X, c * M)


@pytest.mark.parametrize("c", [1e100, 1e-100])
def test_objective_scales_with_the_targets(rng, c):
    X, M = psd_curve(rng, n=8, d=2)
    kw = dict(sigma=0.3, lam2=1e-2, tol=1e-10)
    ref = PSDRegressor(lam1=1e-2, **kw).fit(X, M)
    est = PSDRegressor(lam1=1e-2 * c, **kw).fit(X, c * M)
    assert est.objective_ / c / c == pytest.approx(ref.objective_, rel=1e-9)


# ---------------------------------------------------------------------------------------
# known bugs (reported; see the reasons)
# ---------------------------------------------------------------------------------------
def test_primal_respects_max_iter(rng):
    X, M = psd_curve(rng, n=8, d=2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            PSDRegressor(sigma=0.3, solver="primal", primal_solver="SCS", max_iter=1, tol=1e-9).fit(
                X, M
            )
            raised = False
        except SolverStatusError:
            raised = True
    warned = any(
        issubclass(w.category, (ConvergenceWarning, InaccurateSolutionWarning)) for w in rec
    )
    assert raised or warned


def test_no_stale_dual_coef_after_primal_refit(rng):
    X, M = psd_curve(rng, n=8, d=2)
    est = PSDRegressor(sigma=0.3).fit(X, M)
    assert hasattr(est, "dual_coef_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        est.set_params(solver="primal", primal_solver="CLARABEL").fit(X, M + np.eye(2))
    assert not hasattr(est, "dual_coef_")


def test_separated_points_isotropic_targets():
    X = np.arange(4.0)[:, None]
    est = PSDRegressor(sigma=0.12, lam2=1e-3).fit(X, np.ones((4, 1, 1)))
    np.testing.assert_allclose(est.predict(X), 1.0, atol=0.1)


@pytest.mark.parametrize("params", [{"solver": "DUAL"}, {"solver": "Primal"},
                                    {"landmarks": "Uniform", "n_landmarks": 3},
                                    {"huber_method": "IRLS"}, {"target": "SQRT"}])
def test_options_are_spelled_exactly(params):
    """An option accepted in another spelling would silently take the other branch (solver=
    "DUAL" ran the primal); only the CVXPY solver names ignore case."""
    X = np.linspace(0, 1, 6)[:, None]
    M = np.stack([np.eye(2) * (1 + x) for x in X[:, 0]])
    name = next(iter(params))
    with pytest.raises(ValueError, match=name):
        PSDRegressor(**params).fit(X, M)
    PSDRegressor(solver="primal", primal_solver="clarabel", lam2=1e-3).fit(X, M)
