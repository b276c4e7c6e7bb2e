"""PSDRegressor with other losses and sample weights (PSD paper, Theorems 2-3, eq. 9-10):
dual (proximal and IRLS) against the CVXPY primal (Clarabel, tight), optimality relations,
weights semantics, save/load."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from psdsos import PSDRegressor, load
from psdsos.datasets import make_bures_geodesic
from psdsos.features import ExactFeatures
from psdsos.kernels import get_kernel
from psdsos.losses import (
    EmpiricalLoss,
    EntrywiseHuberLoss,
    ExpectileLoss,
    HuberLoss,
    QuantileLoss,
)
from psdsos.problems import PSDLossProblem
from psdsos.solvers import solve_dual, solve_huber_irls, solve_primal

KW = dict(kernel="exponential", sigma=0.2, lam1=1e-4, lam2=1e-3)


def _data(n=16, seed=0, outliers=(3, 11)):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, n))
    _, M = make_bures_geodesic(t=t, random_state=seed)
    E = 0.02 * rng.standard_normal(M.shape)
    M = M + 0.5 * (E + E.transpose(0, 2, 1))
    M[[i for i in outliers if i < n]] *= 4.0
    return t[:, None], M


def _rel(a, b):
    return abs(a - b) / max(abs(a), abs(b))


LOSSES = [("squared", None), ("huber", 0.1), ("huber_entrywise", 0.05), ("absolute", None)]


@pytest.mark.parametrize("loss, delta", LOSSES)
def test_dual_matches_the_cvxpy_primal(loss, delta):
    X, M = _data()
    kw = dict(KW, loss=loss, delta=delta)
    dual = PSDRegressor(tol=1e-9, max_iter=50000, **kw).fit(X, M)
    prim = PSDRegressor(solver="primal", primal_solver="CLARABEL", tol=1e-9, **kw).fit(X, M)
    assert _rel(dual.objective_, prim.objective_) < 1e-5
    # each certified by its own duality gap, and they bracket the same optimum
    assert 0 <= dual.dual_gap_ <= 1e-9
    assert abs(prim.dual_gap_) <= 1e-7
    Xt = np.linspace(0, 1, 7)[:, None]
    scale = np.abs(prim.predict(Xt)).max()
    np.testing.assert_allclose(dual.predict(Xt), prim.predict(Xt), atol=1e-3 * scale)


@pytest.mark.parametrize("loss", [QuantileLoss(0.3), ExpectileLoss(0.8), HuberLoss(0.05)],
                         ids=repr)
def test_scalar_losses_on_the_nonnegative_model_match_the_primal(loss):
    """Loss objects of scalar losses with 1-D targets (the d = 1 non-negative model)."""
    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(-1, 1, 18))[:, None]
    y = np.exp(-3 * X[:, 0] ** 2) + 0.1 * rng.standard_normal(18)
    kw = dict(kernel="gaussian", sigma=0.3, lam1=1e-4, lam2=1e-3, loss=loss)
    dual = PSDRegressor(tol=1e-9, max_iter=50000, **kw).fit(X, y)
    prim = PSDRegressor(solver="primal", primal_solver="CLARABEL", tol=1e-9, **kw).fit(X, y)
    assert _rel(dual.objective_, prim.objective_) < 1e-5
    assert dual.predict(X).shape == (18,)


def test_huber_dual_variables_are_the_clipped_residuals_over_n():
    X, M = _data()
    n = len(X)
    model = PSDRegressor(loss="huber", delta=0.1, tol=1e-10, max_iter=50000, **KW).fit(X, M)
    R = model.predict(X) - M
    norms = np.sqrt(np.sum(R * R, axis=(1, 2)))
    assert np.sum(norms > 0.1) >= 2  # the outliers are clipped
    clipped = R * np.minimum(1.0, 0.1 / norms)[:, None, None]
    np.testing.assert_allclose(model.dual_coef_, clipped / n, atol=1e-4 * 0.1 / n)
    # the same relation through the loss object (c_i grad l)
    E = EmpiricalLoss(HuberLoss(0.1), M)
    np.testing.assert_allclose(E.grad(model.predict(X)), clipped / n, rtol=1e-12)


def test_huber_with_delta_above_the_largest_residual_equals_least_squares():
    X, M = _data(outliers=())
    ls = PSDRegressor(tol=1e-10, **KW).fit(X, M)
    R = ls.predict(X) - M
    big = 1.01 * float(np.sqrt(np.sum(R * R, axis=(1, 2))).max())
    hub = PSDRegressor(loss="huber", delta=big, tol=1e-10, max_iter=50000, **KW).fit(X, M)
    assert _rel(hub.objective_, ls.objective_) < 1e-8
    np.testing.assert_allclose(hub.predict(X), ls.predict(X), atol=1e-5)
    np.testing.assert_allclose(hub.dual_coef_, ls.dual_coef_, atol=1e-6)
    # and the objectives are the same function (exact, not a limit): at the LS solution
    hub_ls = PSDLossProblem(ls.features_.transform(X), M, KW["lam1"], KW["lam2"],
                            HuberLoss(big))
    assert hub_ls.objective(ls.B_) == pytest.approx(ls.objective_, rel=1e-14)


def test_huber_irls_matches_the_proximal_path():
    X, M = _data()
    kw = dict(KW, loss="huber", delta=0.1, tol=1e-9, max_iter=50000)
    prox = PSDRegressor(**kw).fit(X, M)
    irls = PSDRegressor(huber_method="irls", **kw).fit(X, M)
    assert _rel(prox.objective_, irls.objective_) < 1e-8
    assert irls.dual_gap_ <= 1e-9
    # D is n-strongly convex (the Huber conjugate, c_i = 1/n): a relative gap g leaves
    # |Gamma - Gamma*| <= sqrt(2 g J / n) for each
    bound = 2 * np.sqrt(2 * 1e-9 * prox.objective_ / len(X))
    assert np.linalg.norm(irls.dual_coef_ - prox.dual_coef_) <= bound


@pytest.mark.parametrize("loss, delta", [("squared", None), ("huber", 0.1)])
def test_sample_weights_are_duplicated_rows_and_zero_drops(loss, delta):
    X, M = _data(n=12)
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1])
    kw = dict(KW, loss=loss, delta=delta, tol=1e-10, max_iter=50000)
    fw = PSDRegressor(**kw).fit(X, M, sample_weight=w)
    Xt = np.linspace(0.05, 0.95, 9)[:, None]
    # duplicated rows: the same model (exact features of repeated points carry a jitter,
    # hence the tolerance of the features' own accuracy)
    fd = PSDRegressor(**kw).fit(np.repeat(X, w, axis=0), np.repeat(M, w, axis=0))
    assert _rel(fw.objective_, fd.objective_) < 1e-6
    np.testing.assert_allclose(fw.predict(Xt), fd.predict(Xt), atol=1e-4)
    # scaling all weights changes nothing
    fs = PSDRegressor(**kw).fit(X, M, sample_weight=3.5 * w)
    np.testing.assert_allclose(fs.predict(Xt), fw.predict(Xt), atol=1e-7)
    assert _rel(fs.objective_, fw.objective_) < 1e-8
    # zero weight = row dropped
    w0 = np.ones(12)
    w0[[2, 7]] = 0
    f0 = PSDRegressor(**kw).fit(X, M, sample_weight=w0)
    keep = w0 > 0
    fk = PSDRegressor(**kw).fit(X[keep], M[keep])
    np.testing.assert_allclose(f0.predict(Xt), fk.predict(Xt), rtol=0, atol=1e-12)
    assert f0.dual_coef_.shape == (10, 2, 2)


def test_weighted_least_squares_dual_matches_primal():
    X, M = _data(n=14)
    w = np.random.default_rng(3).uniform(0.2, 3.0, 14)
    dual = PSDRegressor(tol=1e-10, **KW).fit(X, M, sample_weight=w)
    prim = PSDRegressor(solver="primal", primal_solver="CLARABEL", tol=1e-9, **KW).fit(
        X, M, sample_weight=w)
    assert _rel(dual.objective_, prim.objective_) < 1e-5
    assert dual.dual_gap_ <= 1e-10


def test_targets_of_any_scale_with_other_losses():
    """The unit-scale fit (Loss.rescaled) maps back exactly: M * 2^40 with delta * 2^40
    gives the same model times 2^40 (Huber, degree 2) and absolute (degree 1)."""
    X, M = _data(n=12)
    c = 2.0**40
    for loss, delta in (("huber", 0.1), ("absolute", None)):
        lam = dict(KW)
        a = PSDRegressor(loss=loss, delta=delta, tol=1e-10, max_iter=50000, **lam).fit(X, M)
        if loss == "absolute":
            lam["lam2"] = KW["lam2"] / c  # J(cB) = c [L + lam1 Tr B + c lam2 / 2 |B|^2]
        b = PSDRegressor(loss=loss, delta=None if delta is None else delta * c, tol=1e-10,
                         max_iter=50000, **dict(lam, lam1=KW["lam1"] * (c if loss == "huber"
                                                                          else 1.0))).fit(
            X, M * c)
        np.testing.assert_allclose(b.predict(X) / c, a.predict(X), atol=1e-6)
        p = 2 if loss == "huber" else 1
        assert _rel(b.objective_, a.objective_ * c**p) < 1e-8


def test_save_load_keeps_loss_and_delta(tmp_path):
    X, M = _data(n=10)
    m = PSDRegressor(loss="huber", delta=0.1, tol=1e-8, **KW).fit(X, M)
    m.save(tmp_path / "h.npz")
    back = load(tmp_path / "h.npz")
    assert back.loss == "huber" and back.delta == 0.1 and isinstance(back.loss_, HuberLoss)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    # a built-in Loss object is saved by name and parameter
    m2 = PSDRegressor(loss=HuberLoss(0.2), tol=1e-8, **KW).fit(X, M)
    m2.save(tmp_path / "h2.npz")
    back2 = load(tmp_path / "h2.npz")
    assert back2.loss == "huber" and back2.delta == 0.2
    # a loss PSDRegressor cannot name is refused
    q = PSDRegressor(loss=ExpectileLoss(0.3), tol=1e-8, **KW).fit(X, M[:, 0, 0] ** 2)
    with pytest.raises(ValueError, match="cannot save"):
        q.save(tmp_path / "q.npz")


def test_bad_loss_settings_raise_naming_the_argument():
    X, M = _data(n=8)
    with pytest.raises(ValueError, match="delta"):
        PSDRegressor(loss="huber", **KW).fit(X, M)
    with pytest.raises(ValueError, match="delta"):
        PSDRegressor(loss="huber", delta=-1.0, **KW).fit(X, M)
    with pytest.raises(ValueError, match="delta must be None"):
        PSDRegressor(loss=HuberLoss(1.0), delta=1.0, **KW).fit(X, M)
    with pytest.raises(ValueError, match="loss"):
        PSDRegressor(loss="hinge", **KW).fit(X, M)
    with pytest.raises(ValueError, match="huber_method"):
        PSDRegressor(huber_method="irls", **KW).fit(X, M)
    with pytest.raises(ValueError, match="scalar residuals"):
        PSDRegressor(loss=QuantileLoss(0.5), **KW).fit(X, M)
    with pytest.raises(ValueError, match="sample_weight"):
        PSDRegressor(**KW).fit(X, M, sample_weight=-np.ones(8))
    with pytest.raises(ValueError, match="sample_weight"):
        PSDRegressor(**KW).fit(X, M, sample_weight=np.r_[1.0, np.zeros(7)])


def test_proximal_dual_warns_when_not_converged_and_certifies_otherwise():
    X, M = _data()
    Phi = ExactFeatures(get_kernel("exponential", 0.2)).fit(X).transform(X)
    prob = PSDLossProblem(Phi, M, 1e-4, 1e-3, HuberLoss(0.1))
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        solve_dual(prob, max_iter=2)
    res = solve_dual(prob, tol=1e-9, max_iter=50000)
    assert res.converged and res.dual_gap <= 1e-9
    # the gap is a true certificate: P(B) - (-D(G)) >= 0 and both bracket the primal optimum
    assert res.primal_objective >= res.dual_objective
    ref = solve_primal(prob, solver="CLARABEL", tol=1e-10)
    assert res.dual_objective <= ref.objective * (1 + 1e-9)
    assert res.primal_objective >= ref.dual_objective * (1 - 1e-9)
    # every iterate stays in the domain of the conjugate (balls of radius delta / n)
    n = len(X)
    assert np.all(np.sqrt(np.sum(res.G**2, axis=(1, 2))) <= 0.1 / n * (1 + 1e-12))


@pytest.mark.parametrize("loss", [HuberLoss(0.1), EntrywiseHuberLoss(0.05)], ids=repr)
def test_metric_and_euclidean_proximal_steps_reach_the_same_certified_optimum(loss):
    """The Huber losses take proximal steps in the preconditioner's metric (an inner dual
    solve per step); precondition=False gives Euclidean steps.  Both certified, both equal
    to the CVXPY primal."""
    X, M = _data()
    Phi = ExactFeatures(get_kernel("exponential", 0.2)).fit(X).transform(X)
    w = np.random.default_rng(5).uniform(0.5, 2.0, len(X))
    for weights in (None, w):
        prob = PSDLossProblem(Phi, M, 1e-4, 1e-3, loss, weights)
        assert prob.quadratic_set() is not None
        met = solve_dual(prob, tol=1e-10, max_iter=50000)
        euc = solve_dual(prob, tol=1e-10, max_iter=50000, precondition=False)
        ref = solve_primal(prob, solver="CLARABEL", tol=1e-10)
        assert met.converged and euc.converged
        assert _rel(met.primal_objective, euc.primal_objective) < 1e-9
        assert _rel(met.primal_objective, ref.objective) < 1e-7
        assert met.n_iter < euc.n_iter
        # every dual point stays in the domain (balls / boxes of size c_i delta)
        assert np.isfinite(prob.nonsmooth_value(met.G))


def test_irls_warns_when_out_of_iterations_and_refuses_other_losses():
    X, M = _data()
    Phi = ExactFeatures(get_kernel("exponential", 0.2)).fit(X).transform(X)
    prob = PSDLossProblem(Phi, M, 1e-4, 1e-3, HuberLoss(0.1))
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = solve_huber_irls(prob, tol=1e-12, max_iter=3)
    assert not res.converged and res.dual_gap > 1e-12
    with pytest.raises(ValueError, match="huber"):
        solve_huber_irls(PSDLossProblem(Phi, M, 1e-4, 1e-3, EntrywiseHuberLoss(0.1)))


@pytest.mark.parametrize("loss, delta", [("huber", 0.1), ("absolute", None)])
def test_nystrom_features_and_warm_starts_with_other_losses(loss, delta):
    """Nystrom features (m = 40 > r(r+1)/2 = 21: the preconditioner's complement case) match
    the primal; a warm start from the previous dual variable needs fewer iterations."""
    X, M = _data(n=40)
    kw = dict(KW, loss=loss, delta=delta, n_landmarks=6, random_state=0, tol=1e-9,
              max_iter=50000)
    dual = PSDRegressor(**kw).fit(X, M)
    prim = PSDRegressor(**dict(kw, solver="primal", primal_solver="CLARABEL")).fit(X, M)
    assert _rel(dual.objective_, prim.objective_) < 1e-5
    warm = PSDRegressor(warm_start=True, **kw).fit(X, M)
    cold_iters = PSDRegressor(**dict(kw, lam2=1.1 * KW["lam2"])).fit(X, M).n_iter_
    warm.set_params(lam2=1.1 * KW["lam2"]).fit(X, M)
    assert warm.n_iter_ <= cold_iters
    assert warm.dual_gap_ <= 1e-9


@pytest.mark.parametrize("loss, delta", [("huber", 0.1), ("absolute", None)])
def test_primal_with_lam2_zero_is_certified(loss, delta):
    """lam2 = 0 (trace only): the certificate scales the dual point into A*(G) + lam1 I PSD
    and picks the better of the gradient and the solver's multipliers (regression test: the
    choice once ignored the scaling and the certificate failed, gap 0.9 for absolute)."""
    X, M = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = PSDRegressor(kernel="exponential", sigma=0.2, lam1=1e-3, lam2=0.0, solver="primal",
                         primal_solver="CLARABEL", tol=1e-8, loss=loss, delta=delta).fit(X, M)
    assert 0 <= m.dual_gap_ <= 1e-8
