"""Fits with Nystrom features on many samples: no n x n array, chunked passes, the
preconditioner from r x r quantities, the landmark model of convex regression.

Independent references: dense K o K and its eigenvalues, unchunked evaluations, the dense
preconditioner path, a CVXPY formulation of the landmark model written out here (Clarabel),
and the every-training-point model when the landmarks are all the training points.
Memory guards: tracemalloc (which sees numpy's allocations) must stay far below one n x n
float64 array.
"""

from __future__ import annotations

import tracemalloc
import warnings

import cvxpy as cp
import numpy as np
import pytest

import psdsos
from psdsos import ConvexRegressor, PSDRegressor
from psdsos.features import NystromFeatures
from psdsos.kernels import get_kernel
from psdsos.problems import ConvexRegressionNystromProblem, PSDLeastSquares
from psdsos.solvers import DualPreconditioner, solve_dual
from psdsos.sos import hadamard_square_factor, sos_adjoint, sos_evaluate, sos_operator_norm_sq


def features(n, r, p=2, seed=0, sigma=0.7):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, p))
    kern = get_kernel("gaussian", sigma)
    Phi = NystromFeatures(kern, n_landmarks=r, random_state=seed).fit(X).transform(X)
    return X, Phi


def psd_targets(X, d=2, seed=0):
    rng = np.random.default_rng(seed + 100)
    A = rng.standard_normal((X.shape[0], d, d))
    M = 0.1 * np.einsum("nij,nkj->nik", A, A)
    return M + np.eye(d) * (1.5 + np.sin(3 * X[:, :1, None]))


# ---------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------
def test_working_memory_config_round_trip():
    base = psdsos.get_config()["working_memory"]
    with psdsos.config_context(working_memory=3):
        assert psdsos.get_config()["working_memory"] == 3.0
        with psdsos.config_context(working_memory=0.5):
            assert psdsos.get_config()["working_memory"] == 0.5
        assert psdsos.get_config()["working_memory"] == 3.0
    assert psdsos.get_config()["working_memory"] == base


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1", True])
def test_working_memory_must_be_positive(bad):
    with pytest.raises(ValueError, match="working_memory"):
        psdsos.set_config(working_memory=bad)


# ---------------------------------------------------------------------------------------
# SoS maps and the Hadamard square
# ---------------------------------------------------------------------------------------
def test_chunked_sos_maps_equal_one_pass():
    _, Phi = features(257, 6)
    rng = np.random.default_rng(1)
    d = 3
    G = rng.standard_normal((257, d, d))
    G = G + G.transpose(0, 2, 1)
    B = rng.standard_normal((6 * d, 6 * d))
    B = B @ B.T
    S, F = sos_adjoint(Phi, G), sos_evaluate(Phi, B, d)
    with psdsos.config_context(working_memory=1e-3):  # a handful of rows per chunk
        S2, F2 = sos_adjoint(Phi, G), sos_evaluate(Phi, B, d)
    np.testing.assert_allclose(S2, S, rtol=1e-12, atol=1e-12 * np.abs(S).max())
    np.testing.assert_allclose(F2, F, rtol=1e-12, atol=1e-12 * np.abs(F).max())


def _hadamard(Phi):
    K = Phi @ Phi.T
    return K * K


@pytest.mark.parametrize("rtol", [1e-1, 1e-4, 0.0])
def test_hadamard_square_factor_brackets_the_hadamard_square(rtol):
    _, Phi = features(300, 8, seed=2)
    H = _hadamard(Phi)
    scale = float(np.linalg.eigvalsh(H)[-1])
    V, s, c = hadamard_square_factor(Phi, tail_tol=rtol * np.trace(H), max_rank=36)
    L = (V * s) @ V.T
    np.testing.assert_allclose(V.T @ V, np.eye(s.size), atol=1e-6)
    slack = 1e-9 * scale
    assert np.linalg.eigvalsh(H - L)[0] >= -slack  # L <= K o K
    assert np.linalg.eigvalsh(L + c * np.eye(300) - H)[0] >= -slack  # K o K <= L + c I
    assert c <= rtol * np.trace(H) + 1e-10 * scale
    if rtol == 0.0:  # every pair kept: the factor is K o K itself
        np.testing.assert_allclose(L, H, atol=1e-8 * scale)


def test_hadamard_square_factor_rank_cap_and_chunks():
    _, Phi = features(200, 10, seed=3)
    H = _hadamard(Phi)
    V, s, c = hadamard_square_factor(Phi, tail_tol=0.0, max_rank=12)
    assert s.size <= 12 and c > 0
    assert np.linalg.eigvalsh((V * s) @ V.T + c * np.eye(200) - H)[0] >= -1e-9 * c
    with psdsos.config_context(working_memory=1e-3):
        V2, s2, c2 = hadamard_square_factor(Phi, tail_tol=0.0, max_rank=12)
    np.testing.assert_allclose(s2, s, rtol=1e-9)
    assert c2 == pytest.approx(c, rel=1e-9)


def test_operator_norm_bound_for_many_rows(monkeypatch):
    _, Phi = features(400, 7, seed=4)
    exact = float(np.linalg.eigvalsh(_hadamard(Phi))[-1])
    assert sos_operator_norm_sq(Phi) == pytest.approx(exact, rel=1e-10)
    import psdsos.sos._maps as maps

    monkeypatch.setattr(maps, "DENSE_HADAMARD_MAX", 100)
    bound = sos_operator_norm_sq(Phi)
    assert exact * (1 - 1e-12) <= bound <= exact * (1 + 2e-3)


# ---------------------------------------------------------------------------------------
# the preconditioner built from the split factor
# ---------------------------------------------------------------------------------------
def _factor_path(monkeypatch):
    import psdsos.solvers._precond as pre

    monkeypatch.setattr(pre, "DENSE_HADAMARD_MAX", 0)


def test_split_preconditioner_dominates_the_curvature(monkeypatch):
    _, Phi = features(150, 9, seed=5)
    _factor_path(monkeypatch)
    lam2, mu = 1e-3, 150.0
    P = DualPreconditioner(Phi, 2, lam2, mu, None)
    assert P.complement and P.tail >= 0
    # P~^{-1/2} (mu I + (K o K) kron I / lam2) P~^{-1/2} <= I: the Lipschitz constant in
    # the metric is <= 1 (checked on the scalar block, d = 1 copies)
    H = mu * np.eye(150) + _hadamard(Phi) / lam2
    Pinv = np.column_stack([P(e.reshape(150, 1, 1) * np.ones((1, 2, 2))).reshape(150, 4)[:, 0]
                            for e in np.eye(150)])
    ev = np.linalg.eigvals(Pinv @ H).real
    assert ev.max() <= 1 + 1e-8
    # exact A A^* in the Lipschitz check
    G = np.random.default_rng(0).standard_normal((150, 2, 2))
    G = G + G.transpose(0, 2, 1)
    ref = np.einsum("ij,jpq->ipq", _hadamard(Phi), G)
    np.testing.assert_allclose(P.hadamard_gram(G), ref, atol=1e-10 * np.abs(ref).max())


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_split_preconditioner_reaches_the_same_optimum(monkeypatch, loss):
    X, _ = features(240, 12, seed=6)
    M = psd_targets(X)
    kw = dict(n_landmarks=12, random_state=0, tol=1e-10, max_iter=20000, lam2=1e-3)
    if loss == "huber":
        kw.update(loss="huber", delta=0.3)
    dense = PSDRegressor(**kw).fit(X, M)
    _factor_path(monkeypatch)
    import psdsos.sos._maps as maps

    monkeypatch.setattr(maps, "DENSE_HADAMARD_MAX", 0)
    split = PSDRegressor(**kw).fit(X, M)
    assert split.dual_gap_ <= 1e-10
    assert split.objective_ == pytest.approx(dense.objective_, rel=1e-8)
    np.testing.assert_allclose(split.predict(X), dense.predict(X), atol=1e-5)


def test_split_preconditioner_huber_metric_with_a_tail(monkeypatch):
    """A rank cap leaves c > 0: the Huber metric steps then add c / lam2 I (and still
    reach the optimum the dense path certifies)."""
    X, _ = features(200, 10, seed=7)
    M = psd_targets(X, seed=7)
    kw = dict(n_landmarks=10, random_state=0, tol=1e-9, max_iter=20000, loss="huber",
              delta=0.2, lam2=1e-3)
    dense = PSDRegressor(**kw).fit(X, M)
    _factor_path(monkeypatch)
    import psdsos.sos._maps as maps

    orig = maps.hadamard_square_factor

    def capped(Phi, *, tail_tol, max_rank=None, vectors=True):
        return orig(Phi, tail_tol=tail_tol, max_rank=8, vectors=vectors)

    import psdsos.solvers._precond as pre

    monkeypatch.setattr(pre, "hadamard_square_factor", capped)
    split = PSDRegressor(**kw).fit(X, M)
    assert split.dual_gap_ <= 1e-9
    assert split.objective_ == pytest.approx(dense.objective_, rel=1e-7)


# ---------------------------------------------------------------------------------------
# convex regression in the span of the landmarks
# ---------------------------------------------------------------------------------------
def _reference_landmark_model(kern, X, C, Z, Phi, y, E, rho, lam1, lam2, w=None):
    """The landmark model written out in CVXPY (dense F, Clarabel)."""
    n, q = X.shape[0], C.shape[0]
    m, r = Phi.shape
    d = X.shape[1]
    F = kern(X, C)
    Kq = kern(C, C)
    ev, V = np.linalg.eigh(Kq)
    Lq = V * np.sqrt(np.maximum(ev, 0.0))
    Hk = kern.hessian(Z, C)
    a = cp.Variable(q)
    B = cp.Variable((r * d, r * d), PSD=True)
    fit = F @ a
    b = None
    if E is not None:
        b = cp.Variable(E.shape[1])
        fit = fit + E @ b
    sw = np.ones(n) if w is None else np.sqrt(n * w / np.sum(w))
    obj = (cp.sum_squares(cp.multiply(sw, y - fit)) / n + rho * cp.sum_squares(Lq.T @ a)
           + lam1 * cp.trace(B) + lam2 / 2 * cp.sum_squares(B))
    cons = []
    for j in range(m):
        Psi = np.kron(Phi[j][:, None], np.eye(d))
        Hj = sum(a[l] * Hk[j, l] for l in range(q))
        cons.append(Psi.T @ B @ Psi == Hj)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value)


@pytest.mark.parametrize(("intercept", "weighted"), [(True, False), (False, False), (True, True)])
def test_landmark_problem_matches_a_dense_cvxpy_model(intercept, weighted):
    rng = np.random.default_rng(8)
    n, p = 120, 2
    X = rng.uniform(-1, 1, (n, p))
    y = np.sum(X**2, axis=1) + 0.5 * X[:, 0] + 0.05 * rng.standard_normal(n)
    kern = get_kernel("gaussian", 1.0)
    Z = X[:10]
    C = X[::12]  # 10 landmarks
    Phi = NystromFeatures(kern, n_landmarks=6, random_state=0).fit(Z).transform(Z)
    E = np.hstack([np.ones((n, 1)), X]) if intercept else None
    w = rng.uniform(0.2, 2.0, n) if weighted else None
    rho, lam1, lam2 = 1e-3, 1e-3, 1e-2
    with psdsos.config_context(working_memory=1e-3):  # many chunks in the compression
        prob = ConvexRegressionNystromProblem(kern, X, C, kern.hessian(Z, C), Phi, y,
                                              intercept, rho, lam1, lam2, sample_weight=w)
    ref = _reference_landmark_model(kern, X, C, Z, Phi, y, E, rho, lam1, lam2, w)
    with warnings.catch_warnings():
        # the no-intercept case's optimum is f = 0, B = 0: its relative gap stalls at ~1e-8
        # (ratios of rounding errors); the objective against the reference is the check
        warnings.simplefilter("ignore")
        res = solve_dual(prob, tol=1e-9, max_iter=5000)
    alpha, beta = prob.recover(res.G)
    obj = prob.objective(alpha, beta, res.B)
    assert obj == pytest.approx(ref, rel=1e-6)
    # absolute: without the affine part the optimum here is the zero function
    H = prob.hessians(alpha)
    gap = np.linalg.norm(H - sos_evaluate(Phi, res.B, 2))
    assert gap <= 1e-6 * (1.0 + np.linalg.norm(H))


def test_landmark_problem_primal_matches_the_dense_model():
    from psdsos.solvers import solve_primal

    rng = np.random.default_rng(9)
    n = 90
    X = rng.uniform(-1, 1, (n, 2))
    y = np.exp(X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.standard_normal(n)
    kern = get_kernel("gaussian", 0.9)
    Z, C = X[:8], X[1::10]
    Phi = NystromFeatures(kern, n_landmarks=5, random_state=1).fit(Z).transform(Z)
    prob = ConvexRegressionNystromProblem(kern, X, C, kern.hessian(Z, C), Phi, y, True,
                                          1e-3, 1e-3, 1e-2)
    ref = _reference_landmark_model(kern, X, C, Z, Phi, y, np.hstack([np.ones((n, 1)), X]),
                                    1e-3, 1e-3, 1e-2)
    res = solve_primal(prob, solver="CLARABEL", tol=1e-9)
    assert res.extras["alpha"].shape == (C.shape[0],)
    obj = prob.objective(res.extras["alpha"], res.extras["beta"], res.B)
    assert obj == pytest.approx(ref, rel=1e-6)


def _quiet_fit(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


@pytest.mark.parametrize("loss", [{}, {"loss": "huber", "delta": 0.1}])
def test_landmarks_on_every_point_are_the_every_point_model(loss):
    """Landmarks = all the training points: the same model as centers='train' (today's
    implementation), objective to 1e-6."""
    rng = np.random.default_rng(10)
    n = 14
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sum(X**2, axis=1) + 0.05 * rng.standard_normal(n)
    kw = dict(sigma=0.8, rho=1e-3, lam1=1e-3, lam2=1e-2, constraint_points="train",
              n_landmarks=n, tol=1e-8, max_iter=50000, random_state=0, **loss)
    every = _quiet_fit(ConvexRegressor(centers="train", **kw), X, y)
    lm = _quiet_fit(ConvexRegressor(centers="landmarks", **kw), X, y)
    assert lm.X_fit_.shape == (n, 2)
    assert lm.objective_ == pytest.approx(every.objective_, rel=1e-6)
    np.testing.assert_allclose(lm.predict(X), every.predict(X), atol=1e-5 * np.ptp(y))


def test_landmark_fit_dual_and_primal_agree_and_round_trip(tmp_path):
    rng = np.random.default_rng(11)
    n = 400
    X = 50.0 + 20.0 * rng.uniform(-1, 1, (n, 2))  # raw units
    y = 3.0 * np.sum(((X - 50.0) / 20.0) ** 2, axis=1) + 0.1 * rng.standard_normal(n)
    kw = dict(n_landmarks=20, centers="landmarks", random_state=0, tol=1e-9,
              max_iter=50000, rho=1e-3)
    dual = _quiet_fit(ConvexRegressor(**kw), X, y)
    primal = _quiet_fit(ConvexRegressor(solver="primal", primal_solver="CLARABEL", **kw), X, y)
    # f expands on the 2 r default constraint points (greedy pivots and the 4 corners)
    np.testing.assert_array_equal(dual.X_fit_, dual.constraint_points_)
    assert dual.alpha_.shape == (dual.X_fit_.shape[0],) and dual.X_fit_.shape[0] <= 40
    assert dual.objective_ == pytest.approx(primal.objective_, rel=1e-6)
    np.testing.assert_array_equal(dual.x_box_, np.vstack([X.min(0), X.max(0)]))
    dual.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.predict(X), dual.predict(X))
    np.testing.assert_array_equal(back.x_box_, dual.x_box_)
    # the certificate is drawn in the data's box, not the centres'
    assert back.convexity_deficit(relative=True) == dual.convexity_deficit(relative=True)
    assert back.convexity_deficit_ == dual.convexity_deficit_
    assert back.certificate_ == dual.certificate_


def test_auto_centers_switch_with_the_sample_count(monkeypatch):
    import psdsos.estimators._convex as cx

    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, (60, 2))
    y = np.sum(X**2, axis=1)
    est = _quiet_fit(ConvexRegressor(n_landmarks=5, random_state=0), X, y)
    assert est.X_fit_.shape[0] == 60  # up to AUTO_TRAIN_CENTERS: every training point
    monkeypatch.setattr(cx, "AUTO_TRAIN_CENTERS", 50)
    est = _quiet_fit(ConvexRegressor(n_landmarks=5, random_state=0), X, y)
    np.testing.assert_array_equal(est.X_fit_, est.constraint_points_)  # 2 r pivots
    assert est.X_fit_.shape[0] <= 10
    est = _quiet_fit(ConvexRegressor(n_landmarks=5, constraint_points="train",
                                     random_state=0), X, y)
    np.testing.assert_array_equal(est.X_fit_, est.features_.anchors_)  # r landmarks
    assert est.X_fit_.shape[0] == 5
    est = _quiet_fit(ConvexRegressor(random_state=0), X, y)  # no n_landmarks: every point
    assert est.X_fit_.shape[0] == 60
    with pytest.raises(ValueError, match="representation='exact'"):
        ConvexRegressor(n_landmarks=5, representation="exact").fit(X, y)
    monkeypatch.setattr(cx, "MAX_TRAIN_CENTERS", 50)
    with pytest.raises(ValueError, match="n_landmarks"):
        ConvexRegressor(centers="train").fit(X, y)
    with pytest.raises(ValueError, match="centers"):
        ConvexRegressor(centers="all").fit(X, y)


# ---------------------------------------------------------------------------------------
# memory guards: an n x n float64 array would be 8 n^2 bytes
# ---------------------------------------------------------------------------------------
def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_convex_landmark_fit_allocates_no_n_by_n_array():
    rng = np.random.default_rng(13)
    n = 6000
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sum(X**2, axis=1) + 0.05 * rng.standard_normal(n)
    est = ConvexRegressor(n_landmarks=10, random_state=0)
    with psdsos.config_context(working_memory=4):
        peak = _peak(lambda: _quiet_fit(est, X, y).predict(X))
    assert est.X_fit_.shape[0] <= 20
    assert peak < 8 * n * n / 8, f"peak {peak / 2**20:.1f} MiB"


def test_psd_nystrom_fit_allocates_no_n_by_n_array():
    X, _ = features(6000, 4)
    M = psd_targets(X)
    est = PSDRegressor(n_landmarks=16, random_state=0)
    with psdsos.config_context(working_memory=4):
        peak = _peak(lambda: est.fit(X, M).predict(X))
    assert est.dual_gap_ <= est.tol
    assert peak < 8 * 6000 * 6000 / 8, f"peak {peak / 2**20:.1f} MiB"


def test_psd_large_problem_objective_matches_dense_path(monkeypatch):
    """m > 2000 rows: the split factor (4 r of the r (r + 1) / 2 pairs, c > 0) reaches the
    optimum of the complete factor (every pair, c = 0)."""
    X, Phi = features(2100, 10, seed=14)
    M = psd_targets(X, seed=14)
    prob = PSDLeastSquares(Phi, M, 0.0, 1e-3)
    split = solve_dual(prob, tol=1e-10)
    import psdsos.solvers._precond as pre

    orig = pre.hadamard_square_factor
    tails = []

    def complete(Phi, *, tail_tol, max_rank=None, vectors=True):
        out = orig(Phi, tail_tol=0.0, max_rank=55, vectors=vectors)
        tails.append(out[2])
        return out

    monkeypatch.setattr(pre, "hadamard_square_factor", complete)
    full = solve_dual(prob, tol=1e-10)
    assert tails and tails[0] <= 1e-9 * np.sum(np.sum(Phi**2, axis=1) ** 2)
    assert split.primal_objective == pytest.approx(full.primal_objective, rel=1e-8)


# ---------------------------------------------------------------------------------------
# out-of-core: dask arrays
# ---------------------------------------------------------------------------------------
def _dask_data(n=1500, seed=15):
    rng = np.random.default_rng(seed)
    X = 10.0 + 3.0 * rng.uniform(-1, 1, (n, 2))
    y = np.sum((X - 10.0) ** 2, axis=1) + np.exp((X[:, 0] - 10.0) / 3.0)
    return X, y + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dask_fit_equals_the_in_memory_fit(fit_intercept):
    da = pytest.importorskip("dask.array")
    X, y = _dask_data()
    # without the affine part this target's optimum is f = 0, where the relative residual
    # is a ratio of rounding errors (~1e-6): the default tol
    kw = dict(n_landmarks=15, centers="landmarks", random_state=0,
              tol=1e-7 if fit_intercept else 1e-6, fit_intercept=fit_intercept)
    mem = _quiet_fit(ConvexRegressor(**kw), X, y)
    lazy = _quiet_fit(ConvexRegressor(**kw), da.from_array(X, chunks=(400, 2)),
                      da.from_array(y, chunks=250))  # y chunked differently: rechunked
    # fewer rows than the candidate sample: the same constraint points
    np.testing.assert_array_equal(lazy.constraint_points_, mem.constraint_points_)
    # both fits are tol-accurate; their rounding differs (statistics and the factor are
    # accumulated by blocks): objectives within the solver's tolerance, predictions within
    # sqrt(tol) of the data's range (the objective is strongly convex in the fitted values)
    tol = kw["tol"]
    assert lazy.objective_ == pytest.approx(mem.objective_, rel=10 * tol)
    np.testing.assert_allclose(lazy.predict(X), mem.predict(X), atol=np.sqrt(tol) * np.ptp(y))
    np.testing.assert_allclose(lazy.x_box_, mem.x_box_)
    assert lazy.n_features_in_ == 2


def test_dask_fit_on_a_distributed_cluster():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("dask.distributed")
    import dask.array as da

    X, y = _dask_data(900, seed=16)
    kw = dict(n_landmarks=10, centers="landmarks", random_state=0, tol=1e-9)
    mem = _quiet_fit(ConvexRegressor(**kw), X, y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        lazy = _quiet_fit(ConvexRegressor(**kw), da.from_array(X, chunks=(300, 2)),
                          da.from_array(y, chunks=300))
    assert lazy.objective_ == pytest.approx(mem.objective_, rel=10 * kw["tol"])


def test_dask_fit_refuses_what_it_cannot_do():
    pytest.importorskip("dask.array")
    import dask.array as da

    X, y = _dask_data(300)
    dX, dy = da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="n_landmarks=None"):
        ConvexRegressor().fit(dX, dy)
    with pytest.raises(ValueError, match="sample_weight"):
        ConvexRegressor(n_landmarks=5).fit(dX, dy, sample_weight=np.ones(300))
    with pytest.raises(ValueError, match="loss='huber'"):
        ConvexRegressor(n_landmarks=5, loss="huber", delta=1.0).fit(dX, dy)
    with pytest.raises(ValueError, match="both be dask arrays"):
        ConvexRegressor(n_landmarks=5).fit(dX, y)
    bad = X.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        ConvexRegressor(n_landmarks=5).fit(da.from_array(bad, chunks=(100, 2)), dy)
    with pytest.raises(ValueError, match="2-D"):
        ConvexRegressor(n_landmarks=5).fit(dy, dy)


def test_exact_features_on_too_many_samples_name_n_landmarks(monkeypatch):
    import psdsos.estimators._psd as psd_mod

    monkeypatch.setattr(psd_mod, "MAX_EXACT_SAMPLES", 50)
    X, _ = features(60, 3)
    with pytest.raises(ValueError, match="n_landmarks"):
        PSDRegressor().fit(X, 1.0 + X[:, 0] ** 2)
    assert PSDRegressor(n_landmarks=10, random_state=0).fit(X, 1.0 + X[:, 0] ** 2).dual_gap_ < 1e-6


@pytest.mark.parametrize("centers", ["train", "landmarks"])
def test_non_convex_warning_points_at_the_caller(centers):
    from psdsos.estimators import NonConvexFitWarning

    rng = np.random.default_rng(17)
    X = rng.uniform(-1, 1, (30, 2))
    y = np.sin(4 * X[:, 0])
    with pytest.warns(NonConvexFitWarning) as rec:
        ConvexRegressor(sigma=0.3, constraint_points=4, n_landmarks=4, centers=centers,
                        random_state=0).fit(X, y)
    assert all(r.filename == __file__ for r in rec if r.category is NonConvexFitWarning)
