"""Signed SELF weights on the SPD spaces (manifold paper, eq. 2-3).

On a Hadamard manifold eq. 2 has a minimizer whenever sum(alpha) > 0, whatever ||alpha||_1
(docs: "Signed weights"), so SPDSpace and LogEuclideanSPDSpace decode the signed weights
there; sum(alpha) <= 0 falls back to the positive part, with NoMinimizerWarning.

Independent references: the weighted log-Euclidean mean from scipy's logm / expm; the
Riemannian gradient recomputed with scipy.linalg.eigh at the decoded point; a plain
Riemannian gradient flow written here (exponential-map steps with Armijo backtracking,
from the weighted log-Euclidean mean), whose objective the decode must not exceed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from psdsos.geometry import check_spd
from psdsos.structured import (
    SIGNED_L1_BOUND,
    LogEuclideanSPDSpace,
    NoMinimizerWarning,
    SELFEstimator,
    SPDSpace,
    policy_weights,
)

TOL = 1e-8


# ---------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------
def ref_eval(Ys, w, Y):
    """F(Y) and G = sum_i w_i log(Y^-1/2 Y_i Y^-1/2) with scipy.linalg.eigh, one by one."""
    s, U = sl.eigh(Y)
    Yih = (U / np.sqrt(s)) @ U.T
    F, G = 0.0, np.zeros_like(Y)
    for Yi, wi in zip(Ys, w, strict=True):
        if wi == 0:
            continue
        lam, V = sl.eigh(Yih @ Yi @ Yih)
        L = (V * np.log(lam)) @ V.T
        F += wi * float(np.sum(L * L))
        G += wi * L
    return F, 0.5 * (G + G.T)


def ref_grad_norm(Ys, w, Y):
    """||grad F(Y)||_Y = 2 ||G||_F (Table 1), recomputed with scipy."""
    return 2.0 * float(np.linalg.norm(ref_eval(Ys, w, Y)[1]))


def ref_le_mean(Ys, w):
    L = sum(wi * sl.logm(Yi).real for wi, Yi in zip(w, Ys, strict=True))
    return sl.expm(0.5 * (L + L.T))


def flow_eval(Ys, w, Y):
    """F and G as ref_eval, batched with numpy's eigh (for the gradient flow's speed)."""
    s, U = np.linalg.eigh(Y)
    Yih = (U / np.sqrt(s)) @ U.T
    lam, V = np.linalg.eigh(Yih @ Ys @ Yih)
    lg = np.log(lam)
    G = np.einsum("n,nij,nj,nkj->ik", w, V, lg, V)
    return float(w @ np.sum(lg * lg, axis=1)), 0.5 * (G + G.T)


def ref_flow(Ys, w, Y, tol=1e-9, max_iter=3000):
    """Plain Riemannian gradient descent: Y <- Y^1/2 expm(2 t G) Y^1/2 = Exp_Y(-t grad F)
    (eq. 15), t halved until the Armijo decrease 1e-4 t ||grad F||^2, doubled after an
    acceptance.  Returns (Y, F, gradient norm)."""
    F, G = flow_eval(Ys, w, Y)
    t = 0.5
    for _ in range(max_iter):
        gn = 2.0 * np.linalg.norm(G)
        if gn <= tol:
            break
        Yh = sl.sqrtm(Y).real
        while t > 1e-14:
            Yn = Yh @ sl.expm(2.0 * t * G) @ Yh
            Yn = 0.5 * (Yn + Yn.T)
            if np.linalg.eigvalsh(Yn)[0] > 0:
                Fn, Gn = flow_eval(Ys, w, Yn)
                if np.isfinite(Fn) and Fn <= F - 1e-4 * t * gn * gn:
                    break
            t *= 0.5
        else:
            break
        Y, F, G, t = Yn, Fn, Gn, 2.0 * t
    return Y, F, 2.0 * np.linalg.norm(G)


def issue_case(seed):
    """Ill-conditioned training matrices (condition 600-1e4), ||alpha||_1 = 3 sum(alpha)."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(10, 3, 3)))[0]
    Ys = (Q * np.exp(2 * rng.normal(size=(10, 3)))[:, None, :]) @ Q.transpose(0, 2, 1)
    a = rng.uniform(0, 1, 10)
    a[0] = -0.5 * a[1:].sum()
    return Ys, a


def decode_checked(space, Ys, a):
    """Decode one row; returns (Y, warned) -- no exception allowed."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        Y = space.fit(Ys).decode(a[None])[0]
    warned = any(issubclass(r.category, ConvergenceWarning) for r in rec)
    return Y, warned


def assert_decode_ok(Ys, a, Y, warned, tol=TOL):
    """In the space; certified (recomputed) or warned; F <= F of the reference flow."""
    assert np.all(np.isfinite(Y))
    check_spd(Y, "decode")  # condition number below 1e12
    assert np.linalg.eigvalsh(Y)[0] > 0
    w = a / a.sum()
    gn = ref_grad_norm(Ys, w, Y)
    # the reference's own rounding: eps * condition numbers of Y^-1/2 Y_i Y^-1/2
    Yih = sl.fractional_matrix_power(Y, -0.5).real
    cond = max(np.linalg.cond(Yih @ Yi @ Yih) for Yi in Ys)
    floor = 10 * np.abs(w).sum() * np.finfo(float).eps * cond
    assert gn <= tol + floor or warned
    F = ref_eval(Ys, w, Y)[0]
    _, Ff, _ = ref_flow(Ys, w, ref_le_mean(Ys, w))
    assert F <= Ff + 1e-9 * max(1.0, abs(Ff))  # the flow's F only decreases: no slack
    return F, Ff


# ---------------------------------------------------------------------------------------
# the policy
# ---------------------------------------------------------------------------------------
def test_signed_policy_accepts_any_l1_norm_when_sum_positive():
    a = np.array([[3.0, -2.9, 0.0], [1.0, -1.0, 0.0], [0.5, -0.7, 0.1]])
    w, signed = policy_weights(a)
    assert signed.tolist() == [True, False, False]
    np.testing.assert_allclose(w[0], a[0] / 0.1)  # ||w||_1 = 59
    np.testing.assert_allclose(w[1], [1.0, 0.0, 0.0])  # sum = 0: positive part
    np.testing.assert_allclose(w[2], [5 / 6, 0.0, 1 / 6])
    # the older bound on request, and validated
    assert not policy_weights(a, l1_bound=SIGNED_L1_BOUND)[1][0]
    with pytest.raises(ValueError, match="l1_bound"):
        policy_weights(a, l1_bound=0.5)


@pytest.mark.parametrize("space", [SPDSpace, LogEuclideanSPDSpace])
def test_no_minimizer_fallback_is_stated(space, rng):
    Ys = issue_case(29)[0]
    a = np.array([[1.0] * 10, [-1.0] + [0.1] * 9, [-1.0] * 10])  # sums 10, -0.1, -10
    sp = space().fit(Ys)
    with pytest.warns(NoMinimizerWarning, match="2 test point.*weights='positive'"):
        P = sp.decode(a)
    assert sp.signed_.tolist() == [True, False, False]
    ref = space(weights="positive").fit(Ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoMinimizerWarning)  # an explicit choice: silent
        Pp = ref.decode(np.maximum(a[1:2], 0))
        Pu = ref.decode(np.ones((1, 10)))
    np.testing.assert_allclose(P[1], Pp[0], rtol=1e-8, atol=1e-10 * np.abs(Pp).max())
    np.testing.assert_allclose(P[2], Pu[0], rtol=1e-8, atol=1e-10 * np.abs(Pu).max())
    assert not ref.signed_.any()


# ---------------------------------------------------------------------------------------
# log-Euclidean: closed form for any signs
# ---------------------------------------------------------------------------------------
def test_log_euclidean_signed_closed_form(rng):
    Ys, a = issue_case(167)
    a = a.copy()
    a[0] = -0.65 * a[1:].sum()  # ||a||_1 = 4.7 sum(a): beyond the old bound
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = LogEuclideanSPDSpace().fit(Ys).decode(a[None])[0]
    np.testing.assert_allclose(P, ref_le_mean(Ys, a / a.sum()), rtol=1e-9)


def test_log_euclidean_unrepresentable_minimizer_is_capped():
    """Weights extrapolating to a log-spread above log(1e12): the decode is the minimizer of
    F over condition numbers <= 1e12 (checked against a grid of windows), warned."""
    Ys, a = issue_case(189)
    a = a.copy()
    a[0] = -0.9 * a[1:].sum()  # ||a||_1 = 19 sum(a): log-spread ~ 35 decades
    w = a / a.sum()
    sp = LogEuclideanSPDSpace().fit(Ys)
    with pytest.warns(ConvergenceWarning, match="condition number above 1e12"):
        P = sp.decode(a[None])[0]
    check_spd(P, "P")
    L = sum(wi * sl.logm(Yi).real for wi, Yi in zip(w, Ys, strict=True))
    mu, V = np.linalg.eigh(0.5 * (L + L.T))
    width = np.log(1e12)
    assert mu[-1] - mu[0] > width
    lp = np.linalg.eigvalsh(sl.logm(P).real)
    assert lp[-1] - lp[0] <= width + 1e-6
    got = np.sum((np.sort(lp) - mu) ** 2)
    grid = np.linspace(mu[0], mu[-1] - width, 20001)
    best = min(np.sum((mu - np.clip(mu, c, c + width)) ** 2) for c in grid)
    # within the grid's resolution, a margin of 1e-3 on the width (rounding of the
    # decode's smallest eigenvalue) and the logm of a matrix of condition number 1e12
    assert got <= best + 2 * np.sqrt(best) * 2e-3


# ---------------------------------------------------------------------------------------
# affine-invariant SPD
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [167, 189, 29])
def test_spd_signed_ill_conditioned_issue_cases(seed):
    """LinAlgError inside the tracked-eigenvector refinement, or a non-SPD decode with only
    a warning, before: now SPD, certified or warned, and not above the gradient flow."""
    Ys, a = issue_case(seed)
    Y, warned = decode_checked(SPDSpace(), Ys, a)
    assert_decode_ok(Ys, a, Y, warned)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(2, 4), st.integers(4, 9),
       st.floats(1.0, 2.0), st.floats(1.0, 4.0))
def test_spd_signed_weights_property(seed, d, n, scale, ratio):
    """Random ill-conditioned training matrices (log-eigenvalues ~ N(0, scale^2), condition
    numbers up to ~1e4) and signed weights with sum > 0, ||alpha||_1 = ratio * sum."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(n, d, d)))[0]
    Ys = (Q * np.exp(scale * rng.normal(size=(n, d)))[:, None, :]) @ Q.transpose(0, 2, 1)
    a = rng.uniform(0.1, 1.0, n)
    k = max(1, n // 4)
    neg = a[k:].sum() * (ratio - 1) / (ratio + 1)
    a[:k] *= -neg / a[:k].sum()
    Y, warned = decode_checked(SPDSpace(), Ys, a)
    assert_decode_ok(Ys, a, Y, warned)


def test_spd_robust_path_after_lapack_failure(monkeypatch):
    """A LAPACK failure inside the fast path (simulated) sends its points to the robust
    path: same certified decode, no exception."""
    from psdsos.structured.spaces import _spd_newton

    Ys, a = issue_case(167)
    W = np.stack([a, np.abs(a)])
    good = SPDSpace().fit(Ys).decode(W)

    def boom(self, W, tol, max_iter, L0=None):
        raise np.linalg.LinAlgError("Eigenvalues did not converge")

    monkeypatch.setattr(_spd_newton._SPDNewton, "solve", boom)
    sp = SPDSpace().fit(Ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        P = sp.decode(W)
    assert np.all(sp.grad_norm_ <= TOL)
    for k in range(2):
        assert ref_grad_norm(Ys, W[k] / W[k].sum(), P[k]) <= 2 * TOL
    np.testing.assert_allclose(P, good, rtol=1e-6, atol=1e-8 * np.abs(good).max())


def test_spd_robust_path_replaces_a_decode_outside_the_space(monkeypatch):
    """A fast-path decode that is not SPD (simulated: a negative eigenvalue reported as
    converged) is never returned."""
    from psdsos.structured.spaces import _spd_newton

    Ys, a = issue_case(29)
    orig = _spd_newton._SPDNewton.solve

    def bad(self, W, tol, max_iter, L0=None):
        res = orig(self, W, tol, max_iter, L0)
        res.Y = res.Y.copy()
        res.Y[:, 0, 0] = -abs(res.Y[:, 0, 0]) - 1.0
        return res

    monkeypatch.setattr(_spd_newton._SPDNewton, "solve", bad)
    sp = SPDSpace().fit(Ys)
    Y = sp.decode(a[None])[0]
    assert np.linalg.eigvalsh(Y)[0] > 0
    assert ref_grad_norm(Ys, a / a.sum(), Y) <= 2 * TOL


def test_spd_far_extrapolation_stays_in_space_and_warns():
    """||alpha||_1 = 19 sum(alpha): the minimizer lies beyond condition number 1e12; the
    decode stays in the space (check_spd) and the warning says why."""
    Ys, a = issue_case(189)
    a = a.copy()
    a[0] = -0.9 * a[1:].sum()
    sp = SPDSpace().fit(Ys)
    with pytest.warns(ConvergenceWarning, match="largest condition number the space holds"):
        Y = sp.decode(a[None])[0]
    check_spd(Y, "decode")
    assert np.linalg.eigvalsh(Y)[0] > 0
    # (F itself is known only to ~10% there: the matrices Y^-1/2 Y_i Y^-1/2 have condition
    # numbers near 1e16, so no objective comparison is made at the edge)


# ---------------------------------------------------------------------------------------
# acceptance: held-out points of the Table 2 problem (section 4.2), small n
# ---------------------------------------------------------------------------------------
def _pd_inverse_data(rng, n, m):
    Q, R = np.linalg.qr(rng.standard_normal((n, m, m)))
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
    s = np.maximum(rng.uniform(0.0, 10.0, size=(n, m)), 1e-6)
    X = (Q * s[:, None, :]) @ np.swapaxes(Q, 1, 2)
    Y = (Q * (1.0 / s)[:, None, :]) @ np.swapaxes(Q, 1, 2)
    return X.reshape(n, -1), 0.5 * (Y + np.swapaxes(Y, 1, 2))


@pytest.mark.parametrize("n_test", [3, pytest.param(6, marks=pytest.mark.slow)])
def test_signed_decodes_not_above_gradient_flow_on_pd_inverse_data(n_test):
    """X -> X^-1 (Table 2 data), m = 5, n = 100, sigma = 8, lam = 1e-4: at every held-out
    point the signed SELF weights are decoded (sum > 0; most beyond the old ||alpha||_1 <= 4
    sum bound), the decode is certified by the recomputed gradient, and its F is not above a
    plain gradient flow's on the same weights."""
    rng = np.random.default_rng(5)
    Xtr, Ytr = _pd_inverse_data(rng, 100, 5)
    Xte = _pd_inverse_data(rng, 6, 5)[0][:n_test]
    est = SELFEstimator(sigma=8.0, lam=1e-4, output="spd").fit(Xtr, Ytr)
    A = est.scores(Xte)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("error", NoMinimizerWarning)
        P = est.predict(Xte)
    assert est.output_space_.signed_.all()
    assert np.sum(np.abs(A).sum(axis=1) > SIGNED_L1_BOUND * A.sum(axis=1)) >= 2 * n_test / 3
    for k in range(len(Xte)):
        assert_decode_ok(Ytr, A[k], P[k], warned=False)
