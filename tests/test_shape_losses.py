"""ShapeConstrainedRegressor with loss="huber" | "quantile" | "expectile": the dual (the
loss's variables u, accelerated proximal gradient) against the CVXPY primal of the same
final problem solved by Clarabel at 1e-10, the squared loss unchanged, quantile and Huber
properties, parameter errors, persistence and certificates."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import psdsos
from psdsos import ShapeConstrainedRegressor
from psdsos.estimators import _shape_fit as sf
from psdsos.problems._shape_loss import ShapeRegressionLossProblem


def _data(n=30, seed=1, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 1))
    y = np.tanh(2 * X[:, 0]) + noise * rng.standard_normal(n)
    return X, y, rng


def _fit_capturing(monkeypatch, est, X, y, sample_weight=None):
    """Fit est and return the last dual problem it built (the final exchange round's)."""
    seen = []
    build = sf.build_problem

    def spy(*args, **kwargs):
        problem, active = build(*args, **kwargs)
        seen.append(problem)
        return problem, active

    monkeypatch.setattr(sf, "build_problem", spy)
    est.fit(X, y, sample_weight=sample_weight)
    monkeypatch.setattr(sf, "build_problem", build)
    return seen[-1]


def _clarabel(problem):
    prob, _, _ = problem.cvxpy_problem()
    prob.solve(solver="CLARABEL", tol_gap_rel=1e-10, tol_gap_abs=1e-12, tol_feas=1e-10)
    return float(prob.value)


CASES = [
    ("huber", {"delta": 0.1}, {"increasing": True, "concave": True}, False, 1e-7),
    ("expectile", {"quantile": 0.7}, {"increasing": True, "upper": 0.8}, False, 1e-7),
    ("huber", {"delta": 0.1}, {"increasing": True, "lower": -0.9}, True, 1e-7),
    # the pinball loss: no curvature in u, the proximal steps converge slowly (looser tol)
    ("quantile", {"quantile": 0.7}, {"concave": True, "lower": -0.9}, False, 1e-4),
]


@pytest.mark.parametrize("loss, kw, shape, weighted, tol", CASES,
                         ids=[f"{c[0]}-{'-'.join(c[2])}{'-w' if c[3] else ''}" for c in CASES])
def test_dual_matches_clarabel_primal(monkeypatch, loss, kw, shape, weighted, tol):
    X, y, rng = _data()
    w = rng.integers(1, 4, len(y)).astype(float) if weighted else None
    est = ShapeConstrainedRegressor(loss=loss, **kw, **shape, tol=tol, random_state=0)
    problem = _fit_capturing(monkeypatch, est, X, y, w)
    assert isinstance(problem, ShapeRegressionLossProblem)
    ref = _clarabel(problem)
    # the certificate: relative gap and residual <= tol; the objectives then agree to a
    # few tol (measured: 1e-7 to 2e-8 relative at tol 1e-7, 8e-6 at 1e-4)
    assert est.dual_gap_ <= tol
    assert est.constraint_residual_ <= tol
    assert est.objective_ == pytest.approx(ref, rel=10 * tol)


def test_dual_matches_estimator_primal_solver():
    X, y, _ = _data(seed=2)
    kw = dict(loss="expectile", quantile=0.3, increasing=True, tol=1e-7, random_state=0)
    d = ShapeConstrainedRegressor(**kw).fit(X, y)
    p = ShapeConstrainedRegressor(**kw, solver="primal").fit(X, y)
    assert d.objective_ == pytest.approx(p.objective_, rel=1e-6)
    G = np.linspace(-1, 1, 50)[:, None]
    np.testing.assert_allclose(d.predict(G), p.predict(G), atol=1e-3 * np.std(y))


def test_squared_loss_unchanged():
    X, y, _ = _data(seed=3)
    kw = dict(increasing=True, concave=True, random_state=0)
    a = ShapeConstrainedRegressor(**kw).fit(X, y)
    b = ShapeConstrainedRegressor(**kw, loss="squared").fit(X, y)
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    G = np.linspace(-1, 1, 50)[:, None]
    np.testing.assert_array_equal(a.predict(G), b.predict(G))


def test_expectile_one_half_and_huber_large_delta_are_squared():
    X, y, _ = _data(seed=4)
    kw = dict(increasing=True, tol=1e-8, random_state=0)
    ls = ShapeConstrainedRegressor(**kw).fit(X, y)
    rmax = np.max(np.abs(ls.predict(X, raw=True) - y))
    G = np.linspace(-1, 1, 50)[:, None]
    for extra in (dict(loss="expectile", quantile=0.5), dict(loss="huber", delta=2 * rmax)):
        est = ShapeConstrainedRegressor(**kw, **extra).fit(X, y)
        assert est.objective_ == pytest.approx(ls.objective_, rel=1e-6)
        np.testing.assert_allclose(est.predict(G), ls.predict(G), atol=1e-4 * np.std(y))


def test_quantile_share_below():
    # optimality with an intercept (sum_i u_i = ... within the box): about tau of the data
    # below the fit; residuals within the fit's tolerance count as zero
    X, y, _ = _data(n=40, seed=5, noise=0.3)
    tau = 0.8
    est = ShapeConstrainedRegressor(increasing=True, loss="quantile", quantile=tau,
                                    tol=1e-4, random_state=0).fit(X, y)
    r = est.predict(X, raw=True) - y
    zero = 1e-2 * np.std(y)
    n = len(y)
    assert np.sum(r > zero) <= tau * n + 1
    assert np.sum(r > -zero) >= tau * n - 1


def test_huber_is_robust_to_an_outlier():
    rng = np.random.default_rng(6)
    n = 40
    X = np.sort(rng.uniform(-1, 1, n))[:, None]
    clean = np.tanh(2 * X[:, 0])
    y = clean + 0.05 * rng.standard_normal(n)
    y[n // 2] += 6.0  # one gross outlier
    kw = dict(increasing=True, tol=1e-6, random_state=0)
    sq = ShapeConstrainedRegressor(**kw).fit(X, y)
    hub = ShapeConstrainedRegressor(**kw, loss="huber", delta=0.1).fit(X, y)
    err_sq = np.sqrt(np.mean((sq.predict(X) - clean) ** 2))
    err_hub = np.sqrt(np.mean((hub.predict(X) - clean) ** 2))
    assert err_hub < 0.5 * err_sq


def test_bad_loss_parameters():
    X, y, _ = _data(n=10, seed=7)
    cases = [
        (dict(loss="huber"), "delta"),
        (dict(loss="quantile"), "quantile"),
        (dict(loss="expectile"), "quantile"),
        (dict(loss="quantile", quantile=1.5), "quantile"),
        (dict(loss="huber", delta=-1.0), "delta"),
        (dict(delta=1.0), "delta"),  # delta with loss="squared"
        (dict(quantile=0.5, loss="huber", delta=1.0), "quantile"),
        (dict(loss="absolute"), "loss"),
        (dict(loss="nonsense"), "loss"),
    ]
    for params, name in cases:
        with pytest.raises(ValueError, match=name):
            ShapeConstrainedRegressor(increasing=True, **params).fit(X, y)


def test_save_load_keeps_the_loss(tmp_path):
    X, y, _ = _data(seed=8)
    est = ShapeConstrainedRegressor(increasing=True, loss="huber", delta=0.2,
                                    random_state=0).fit(X, y)
    path = os.path.join(tmp_path, "m.npz")
    est.save(path)
    back = psdsos.load(path)
    assert back.loss == "huber" and back.delta == 0.2 and back.quantile is None
    G = np.linspace(-1.5, 1.5, 40)[:, None]
    np.testing.assert_array_equal(back.predict(G), est.predict(G))


def test_files_without_loss_load_as_squared(tmp_path):
    from psdsos._npz import load_npz, save_npz

    X, y, _ = _data(seed=9)
    est = ShapeConstrainedRegressor(increasing=True, random_state=0).fit(X, y)
    path = os.path.join(tmp_path, "m.npz")
    est.save(path)
    arrays, meta = load_npz(path)
    for k in ("loss", "delta", "quantile"):
        del meta["params"][k]
    meta.pop("arrays_sha256", None)
    save_npz(path, arrays, meta)
    back = psdsos.load(path)
    assert back.loss == "squared" and back.delta is None and back.quantile is None
    G = np.linspace(-1, 1, 20)[:, None]
    np.testing.assert_array_equal(back.predict(G), est.predict(G))


@pytest.mark.parametrize("loss, kw", [("huber", {"delta": 0.1}),
                                      ("expectile", {"quantile": 0.8})])
def test_certificates_hold_with_other_losses(loss, kw):
    X, y, _ = _data(seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no UncertifiedShapeWarning, no ConvergenceWarning
        est = ShapeConstrainedRegressor(increasing=True, concave=True, loss=loss, **kw,
                                        random_state=0).fit(X, y)
    assert {c.status for c in est.certificate_.values()} == {"certified"}
    G = np.linspace(-1, 1, 200)[:, None]
    assert np.all(est.gradient(G)[:, 0] >= 0)
    assert np.all(est.hessian(G)[:, 0, 0] <= 0)



def test_cv_with_huber_passes_the_loss_and_matches_a_refit():
    from psdsos import ShapeConstrainedRegressorCV

    X, y, _ = _data(seed=11)
    y[0] += 2.0  # an outlier: the fit has residuals beyond delta (Huber's linear part)
    kw = dict(increasing=True, concave=True, loss="huber", delta=0.3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # cv_max_iter: the proximal-gradient fits of a non-squared loss need thousands
        cv = ShapeConstrainedRegressorCV(**kw, sigmas=(1.0,), rhos=(1e-4,), cv=2,
                                         cv_max_iter=20000).fit(X, y)
        best = cv.best_estimator_
        assert (best.loss, best.delta, best.quantile) == ("huber", 0.3, None)
        again = ShapeConstrainedRegressor(**kw, tol=cv.tol, certify_tol=cv.certify_tol,
                                          **cv.best_params_).fit(X, y)
        squared = ShapeConstrainedRegressor(increasing=True, concave=True, tol=cv.tol,
                                            random_state=0, **cv.best_params_).fit(X, y)
    assert np.sum(np.abs(again.predict(X, raw=True) - y) > 0.3) >= 1
    G = np.linspace(-1, 1, 50)[:, None]
    np.testing.assert_allclose(cv.predict(G), again.predict(G), atol=1e-3 * np.std(y))
    assert np.max(np.abs(cv.predict(G) - squared.predict(G))) > 0.05 * np.std(y)
    for delta in (None, -1.0, 0.0):
        with pytest.raises(ValueError, match="delta"):
            ShapeConstrainedRegressorCV(increasing=True, loss="huber", delta=delta).fit(X, y)
    with pytest.raises(ValueError, match="delta"):  # delta with the squared loss
        ShapeConstrainedRegressorCV(increasing=True, delta=1.0).fit(X, y)


def test_cv_iteration_cap_follows_the_loss():
    """cv_max_iter=None: 1000 iterations for the squared loss, 20000 for the others (whose
    proximal dual needs thousands); a given value is kept."""
    from psdsos import ShapeConstrainedRegressorCV

    assert ShapeConstrainedRegressorCV()._cv_max_iter() == 1000
    assert ShapeConstrainedRegressorCV(loss="huber", delta=1.0)._cv_max_iter() == 20000
    assert ShapeConstrainedRegressorCV(loss="quantile", quantile=0.5,
                                       cv_max_iter=50)._cv_max_iter() == 50
    with pytest.raises(ValueError, match="cv_max_iter"):
        ShapeConstrainedRegressorCV(cv_max_iter=0).fit(np.zeros((6, 1)) + np.arange(6)[:, None],
                                                       np.arange(6.0))
