"""Continuous SELF output spaces (manifold paper, eq. 2, Table 1, section 4.4).

Independent references: closed-form projections checked by their variational inequality at
the vertices, weighted geometric / BW means of commuting matrices, two-point barycenters on
geodesics (affine-invariant geodesic written out here, BW geodesic from psdsos.geometry's
Procrustes form), Taylor-slope checks of the Riemannian gradients, first-order optimality of
the decoded points, equivariance (congruence, rotations, permutations) as property tests.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from psdsos.geometry import bures_wasserstein_geodesic, spd_exp, sphere_exp
from psdsos.structured import (
    SIGNED_L1_BOUND,
    BuresSpace,
    EuclideanSpace,
    FisherSimplexSpace,
    LogEuclideanSPDSpace,
    OutputSpace,
    SPDSpace,
    SphereSpace,
    get_output_space,
    output_spaces,
    policy_weights,
    project_box,
    project_psd_cone,
    project_simplex,
)


# ---------------------------------------------------------------------------------------
# data helpers
# ---------------------------------------------------------------------------------------
def rand_spd(rng, n, d, cond=10.0):
    Q, _ = np.linalg.qr(rng.standard_normal((n, d, d)))
    ev = np.exp(rng.uniform(0, np.log(cond), (n, d)))
    return (Q * ev[:, None, :]) @ np.swapaxes(Q, 1, 2)


def rand_sphere(rng, n, k):
    Z = rng.standard_normal((n, k))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def fun(S, f):
    w, V = np.linalg.eigh(S)
    return (V * f(w)) @ V.T


def ai_geodesic(A, B, t):
    """A^{1/2} (A^{-1/2} B A^{-1/2})^t A^{1/2}, written independently of psdsos."""
    Ah = fun(A, np.sqrt)
    Aih = fun(A, lambda w: 1 / np.sqrt(w))
    return Ah @ fun(Aih @ B @ Aih, lambda w: w**t) @ Ah


# ---------------------------------------------------------------------------------------
# negative-weight policy
# ---------------------------------------------------------------------------------------
def test_policy_weights_cases():
    a = np.array([
        [0.5, 0.3, -0.1],      # signed: sum > 0
        [0.2, 0.2, -0.35],     # sum = 0.05 > 0, ||a||_1 = 15 sum: signed (eq. 2 has a minimizer)
        [0.1, -0.3, 0.05],     # sum < 0: positive part
        [-0.1, -0.2, 0.0],     # no positive weight: uniform
    ])
    w, signed = policy_weights(a)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert signed.tolist() == [True, True, False, False]
    np.testing.assert_allclose(w[0], a[0] / a[0].sum())
    np.testing.assert_allclose(w[1], a[1] / 0.05)
    np.testing.assert_allclose(w[2], [2 / 3, 0.0, 1 / 3])
    np.testing.assert_allclose(w[3], [1 / 3] * 3)
    wp, sp = policy_weights(a, "positive")
    assert not sp.any()
    np.testing.assert_allclose(wp[0], [0.625, 0.375, 0.0])
    # the older rule, ||a||_1 <= 4 sum(a), on request
    assert SIGNED_L1_BOUND == 4.0
    wb, sb = policy_weights(a, l1_bound=SIGNED_L1_BOUND)
    assert sb.tolist() == [True, False, False, False]
    np.testing.assert_allclose(wb[1], [0.5, 0.5, 0.0])


# ---------------------------------------------------------------------------------------
# projections
# ---------------------------------------------------------------------------------------
def _assert_simplex_projection(z, p, atol=1e-10):
    assert p.min() >= 0 and abs(p.sum() - 1) < atol
    # variational inequality <z - p, q - p> <= 0 at every vertex q = e_j (enough on a polytope)
    g = z - p
    assert np.all(g - g @ p <= atol * max(1.0, np.abs(z).max()))


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=8), st.sampled_from([1.0, 1e9]))
def test_project_simplex_properties(values, scale):
    z = np.array(values) * (scale if scale == 1.0 else 1.0)
    p = project_simplex(z)
    _assert_simplex_projection(z, p, atol=1e-9)
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-12)
    big = project_simplex(np.array(values) * 1e9)
    assert np.all(np.isfinite(big)) and abs(big.sum() - 1) < 1e-9


def test_project_simplex_batched(rng):
    Z = rng.normal(size=(50, 5)) * 3
    P = project_simplex(Z)
    for z, p in zip(Z, P, strict=True):
        _assert_simplex_projection(z, p)
        np.testing.assert_allclose(project_simplex(z), p)


def test_project_box_and_psd(rng):
    Z = rng.normal(size=(10, 3)) * 2
    np.testing.assert_array_equal(project_box(Z, -1, 0.5), np.clip(Z, -1, 0.5))
    with pytest.raises(ValueError, match="lo"):
        project_box(Z, 1.0, 0.0)
    S = rng.normal(size=(4, 3, 3))
    S = S + np.swapaxes(S, 1, 2)
    P = project_psd_cone(S)
    assert np.linalg.eigvalsh(P).min() > -1e-12
    # P minimizes ||S - P|| over PSD: S - P is negative semidefinite and orthogonal to P
    R = S - P
    assert np.linalg.eigvalsh(R).max() < 1e-12
    np.testing.assert_allclose(np.einsum("aij,aij->a", R, P), 0, atol=1e-10)


# ---------------------------------------------------------------------------------------
# Euclidean space
# ---------------------------------------------------------------------------------------
def test_euclidean_decode_is_kernel_ridge(rng):
    """Centred: mean + A (Y - mean) = A Y + (1 - sum A) mean; center=False (default): A Y."""
    Y = rng.normal(size=(7, 3)) + 3.0
    A = rng.normal(size=(4, 7))  # signed, unnormalized weights used as they are
    sp = EuclideanSpace(center=True).fit(Y)
    m = Y.mean(axis=0)
    np.testing.assert_allclose(sp.decode(A), A @ Y + (1 - A.sum(axis=1))[:, None] * m,
                               rtol=1e-13)
    np.testing.assert_allclose(sp.decode(np.zeros((1, 7))), m[None], rtol=1e-15)
    np.testing.assert_allclose(EuclideanSpace().fit(Y).decode(A), A @ Y,
                               rtol=1e-13)
    assert sp.decode_methods == ("closed_form",)
    sp1 = EuclideanSpace(center=True).fit(Y[:, 0])
    out = sp1.decode(A)
    assert out.shape == (4,)
    np.testing.assert_allclose(out, A @ Y[:, 0] + (1 - A.sum(axis=1)) * m[0])
    np.testing.assert_allclose(sp.loss(Y[:2], Y[2:4]), np.sum((Y[:2] - Y[2:4]) ** 2, axis=1))


@pytest.mark.parametrize("constraint", ["box", "simplex", "psd"])
def test_euclidean_cvxpy_matches_closed_form_projection(rng, constraint):
    if constraint == "box":
        Y = rng.uniform(-0.5, 2.0, size=(6, 4))
        sp = EuclideanSpace("box", lo=-0.5, hi=2.0)
        ref = lambda Z: np.clip(Z, -0.5, 2.0)  # noqa: E731
    elif constraint == "simplex":
        Y = rng.dirichlet(np.ones(4), size=6)
        sp = EuclideanSpace("simplex")
        ref = project_simplex
    else:
        Y = rand_spd(rng, 6, 3)
        Y[0] = np.outer([1.0, 2, 0], [1.0, 2, 0])  # PSD, rank one
        sp = EuclideanSpace("psd")
        ref = lambda Z: np.array([fun(z, lambda w: np.maximum(w, 0)) for z in Z])  # noqa: E731
    sp.fit(Y)
    A = rng.normal(size=(5, 6)) * 0.8
    prob, _, _ = sp.cvxpy_problem()
    assert prob.is_dcp(dpp=True)
    assert sp.cvxpy_problem()[0] is prob  # built once
    P = sp.decode(A)
    assert sp.cvxpy_problem()[0] is prob
    Z = np.tensordot(A, Y, axes=(1, 0))
    np.testing.assert_allclose(P, ref(Z), atol=1e-6)
    np.testing.assert_allclose(sp.decode(A, method="closed_form"), ref(Z), atol=1e-12)
    # the PSD constraint also accepts row-vectorized matrices, returned in that format
    if constraint == "psd":
        spv = EuclideanSpace("psd").fit(Y.reshape(6, 9))
        Pv = spv.decode(A, method="closed_form")
        assert Pv.shape == (5, 9)
        np.testing.assert_allclose(Pv.reshape(5, 3, 3), ref(Z), atol=1e-12)


@pytest.mark.parametrize(
    "space, Y, match",
    [
        (EuclideanSpace(), [[1.0, np.nan]], "Y"),
        (EuclideanSpace(), np.ones((2, 2, 2)), "Y must have shape"),
        (EuclideanSpace("box", lo=0, hi=1), [[0.5, 1.5]], "Y must lie in the box"),
        (EuclideanSpace("simplex"), [[0.5, 0.6]], "Y rows must be histograms"),
        (EuclideanSpace("simplex"), [[1.5, -0.5]], "Y rows must be histograms"),
        (EuclideanSpace("psd"), [[[1.0, 0], [0, -1]]], "Y must hold PSD"),
        (EuclideanSpace("psd"), [[[1.0, 1], [0, 1]]], "Y must hold symmetric"),
        (EuclideanSpace("psd"), np.ones((2, 3)), "Y with constraint='psd'"),
        (EuclideanSpace("ball"), [[1.0]], "constraint"),
        (EuclideanSpace("box", lo=1, hi=0), [[1.0]], "lo must be"),
        (EuclideanSpace(center="yes"), [[1.0]], "center of EuclideanSpace must be a bool"),
    ],
)
def test_euclidean_check_Y_errors(space, Y, match):
    with pytest.raises(ValueError, match=match):
        space.check_Y(Y)


def test_decode_rejects_bad_alpha_and_method(rng):
    sp = EuclideanSpace("simplex").fit(rng.dirichlet(np.ones(3), 4))
    with pytest.raises(ValueError, match="alpha"):
        sp.decode(np.ones((2, 5)))
    with pytest.raises(ValueError, match="alpha"):
        sp.decode(np.array([[np.nan, 0, 0, 1]]))
    with pytest.raises(ValueError, match="decode_method"):
        sp.decode(np.ones((1, 4)), method="rgd")


# ---------------------------------------------------------------------------------------
# SPD, affine-invariant
# ---------------------------------------------------------------------------------------
def test_spd_commuting_matrices_weighted_geometric_mean(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    ev = rng.uniform(0.1, 10, size=(6, 4))
    Y = (Q * ev[:, None, :]) @ Q.T
    w = rng.uniform(0.1, 1, size=(3, 6))
    sp = SPDSpace().fit(Y)
    P = sp.decode(w)
    wn = w / w.sum(axis=1, keepdims=True)
    ref = (Q * np.exp(wn @ np.log(ev))[:, None, :]) @ Q.T
    np.testing.assert_allclose(P, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("t", [0.3, 0.5, 0.8])
def test_spd_two_points_geodesic(rng, t):
    """Weights (1 - t, t) on two non-commuting matrices: the point at t on the geodesic."""
    Y = rand_spd(rng, 2, 3, cond=50)
    sp = SPDSpace(tol=1e-11).fit(Y)
    P = sp.decode(np.array([[1 - t, t]]) * 0.7)  # scaling alpha changes nothing
    np.testing.assert_allclose(P[0], ai_geodesic(Y[0], Y[1], t), rtol=1e-8, atol=1e-9)


def test_spd_first_order_optimality_and_taylor_slope(rng):
    Y = rand_spd(rng, 12, 3, cond=30)
    sp = SPDSpace(tol=1e-10).fit(Y)
    A = rng.uniform(0, 1, size=(4, 12))
    P = sp.decode(A)
    w = A / A.sum(axis=1, keepdims=True)
    for p, wi in zip(P, w, strict=True):
        G = sp.riemannian_gradient(p, wi)[0]
        Pih = fun(p, lambda v: 1 / np.sqrt(v))
        assert np.linalg.norm(Pih @ G @ Pih) <= 1e-9  # Riemannian norm
    assert np.all(sp.grad_norm_ <= 1e-10)
    # Taylor slope of F(Exp_X(tV)) at a generic point
    X = rand_spd(rng, 1, 3)[0]
    V = rng.normal(size=(3, 3))
    V = V + V.T
    F0 = sp.objective(X, w[0])[0]
    G = sp.riemannian_gradient(X, w[0])[0]
    Xi = np.linalg.inv(X)
    slope = np.trace(Xi @ G @ Xi @ V)  # <grad F, V>_X
    ts = np.array([1e-2, 1e-3])
    errs = [abs(sp.objective(spd_exp(X, t * V), w[0])[0] - F0 - t * slope) for t in ts]
    order = np.log(errs[0] / errs[1]) / np.log(ts[0] / ts[1])
    assert order > 1.9  # second order remainder: the gradient is right


def test_spd_signed_weights(rng):
    Y = rand_spd(rng, 8, 3)
    sp = SPDSpace(tol=1e-10).fit(Y)
    a = rng.uniform(0.1, 1, size=8)
    a[[1, 4]] = -0.15  # mixed sign, sum > 0 and ||a||_1 <= 4 sum: used as signed weights
    P = sp.decode(a)
    assert np.all(np.isfinite(P)) and np.linalg.eigvalsh(P).min() > 0
    G = sp.riemannian_gradient(P[0], a / a.sum())[0]
    Pih = fun(P[0], lambda v: 1 / np.sqrt(v))
    assert np.linalg.norm(Pih @ G @ Pih) < 1e-8  # stationary for the SIGNED objective
    # differs from the positive-part decoding, which the "positive" policy returns
    Pp = SPDSpace(weights="positive", tol=1e-10).fit(Y).decode(a)
    assert np.abs(P - Pp).max() > 1e-3
    # sum(alpha) <= 0: the positive part; no positive weight: uniform weights
    b = a.copy()
    b[[1, 4]] = -3.0
    np.testing.assert_allclose(sp.decode(b), SPDSpace(weights="positive", tol=1e-10).fit(Y)
                               .decode(np.maximum(b, 0)), rtol=1e-9)
    np.testing.assert_allclose(sp.decode(-np.abs(a)), sp.decode(np.ones(8)), rtol=1e-9)


@pytest.mark.parametrize("signed", [False, True])
def test_spd_newton_tracked_eigenvectors_match_lapack_gradient(rng, signed):
    """Most logarithms come from refined eigenvectors, not LAPACK: the reported gradient norm
    (a bound: the computed norm plus twice its error bound, itself <= tol / 20 at
    certification) must bound and agree with the one recomputed from scratch
    (``riemannian_gradient``, eigh)."""
    Y = rand_spd(rng, 60, 5, cond=40)
    a = rng.uniform(0.05, 1, size=(3, 60)) ** 3
    if signed:
        a[:, :6] = -0.02
    sp = SPDSpace(tol=1e-9, weights="signed" if signed else "positive").fit(Y)
    P = sp.decode(a)
    w, _ = policy_weights(a, "signed" if signed else "positive")
    for p, wi, g in zip(P, w, sp.grad_norm_, strict=True):
        G = sp.riemannian_gradient(p, wi)[0]
        Pih = fun(p, lambda v: 1 / np.sqrt(v))
        ref = np.linalg.norm(Pih @ G @ Pih)
        assert ref <= g + 1e-13 and g <= 1e-9 and g - ref <= 1e-10
    assert sp.n_eigh_ < 60 * 3 * (sp.n_iter_.max() + 1)  # the tracking did take over


@given(st.integers(0, 2**31 - 1))
def test_spd_decoding_congruence_equivariant(seed_):
    rng = np.random.default_rng(seed_)
    Y = rand_spd(rng, 5, 3)
    G = rng.normal(size=(3, 3)) + 2 * np.eye(3)
    a = rng.uniform(0, 1, size=(2, 5))
    P = SPDSpace(tol=1e-10).fit(Y).decode(a)
    PG = SPDSpace(tol=1e-10).fit(G @ Y @ G.T).decode(a)
    assert np.linalg.eigvalsh(P).min() > 0
    np.testing.assert_allclose(PG, G @ P @ G.T, rtol=1e-6, atol=1e-6 * np.abs(PG).max())


def test_spd_loss_check_Y_and_warning(rng):
    Y = rand_spd(rng, 4, 2)
    sp = SPDSpace().fit(Y)
    L = sp.loss(Y[:2], Y[2:])
    ref = [np.sum(np.log(np.linalg.eigvals(np.linalg.solve(Y[i], Y[i + 2])).real) ** 2)
           for i in range(2)]
    np.testing.assert_allclose(L, ref, rtol=1e-10)
    np.testing.assert_allclose(sp.loss(Y[2:], Y[:2]), L, rtol=1e-10)  # symmetric
    for bad, match in [(np.array([[[1.0, 0], [0, -1]]]), "Y must be symmetric positive"),
                       (np.array([[[1.0, 2], [0, 1]]]), "Y must be symmetric"),
                       (np.full((1, 2, 2), np.nan), "Y contains NaN"),
                       (np.ones((3, 2)), "Y must have shape")]:
        with pytest.raises(ValueError, match=match):
            sp.check_Y(bad)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        # ill-conditioned 4 x 4 data: one Newton step from the (BCH-corrected) start cannot
        # reach 1e-14 (on 4 well-conditioned 2 x 2 matrices it does)
        SPDSpace(max_iter=1, tol=1e-14).fit(rand_spd(rng, 8, 4, cond=1e3)).decode(
            rng.uniform(0, 1, (2, 8)))
    with pytest.raises(ValueError, match="weights"):
        SPDSpace(weights="all").fit(Y)


def exact_grad_norm(Y, P, w):
    """||grad F(P)||_P = 2 ||sum_i w_i log(P^-1/2 Y_i P^-1/2)||_F, from eigh only."""
    Pih = fun(P, lambda v: 1 / np.sqrt(v))
    G = sum(wi * fun(Pih @ Yi @ Pih, np.log) for wi, Yi in zip(w, Y, strict=True))
    return 2 * np.linalg.norm(G)


def spd_solver(Y):
    from psdsos.structured.spaces._spd_newton import _SPDNewton

    return _SPDNewton(Y, np.array([fun(y, np.log) for y in Y]))


def tracked_eval(sv, S, V, slot=0):
    """An evaluation of the solver (one test point) on given congruences S with given
    eigenvector guesses."""
    from psdsos.structured.spaces._spd_newton import _SPDEval

    B, lam, r = sv._pass(S, V)
    ev = _SPDEval(S, V.copy(), B, lam, r, slot, 1)
    ev.od = sv.orth_defect(V) + sv.od_round
    return ev


def rotations(rng, m, d, scale):
    """Orthogonal matrices near I: Cayley transforms (I - K)^-1 (I + K), K skew of size
    ~scale."""
    K = rng.normal(size=(m, d, d)) * scale
    K = K - np.swapaxes(K, 1, 2)
    eye = np.eye(d)
    return np.linalg.solve(eye - K, eye + K)


def test_spd_bch_start_exact_for_commuting_and_better_than_log_euclidean(rng):
    # commuting: the BCH corrections vanish, the start is the solution, no Newton step
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    ev = rng.uniform(0.1, 10, size=(7, 4))
    Y = (Q * ev[:, None, :]) @ Q.T
    w = rng.uniform(0.1, 1, size=(3, 7))
    wn = w / w.sum(axis=1, keepdims=True)
    sv = spd_solver(Y)
    ref = (Q * (wn @ np.log(ev))[:, None, :]) @ Q.T
    np.testing.assert_allclose(sv.start(np.arange(7), wn), ref, atol=1e-12)
    sp = SPDSpace(tol=1e-10).fit(Y)
    sp.decode(w)
    assert np.all(sp.n_iter_ == 0) and sp.n_eigh_ == 3 * 7  # one LAPACK pass per point
    # non-commuting: a much smaller gradient than at the log-Euclidean mean
    Y = rand_spd(rng, 40, 4, cond=20)
    sv = spd_solver(Y)
    W = rng.uniform(0, 1, size=(3, 40)) ** 2
    W /= W.sum(axis=1, keepdims=True)
    for wi, L in zip(W, sv.start(np.arange(40), W), strict=True):
        g_le = exact_grad_norm(Y, fun(np.einsum("n,nij->ij", wi, sv.logs), np.exp), wi)
        assert exact_grad_norm(Y, fun(L, np.exp), wi) < 0.3 * g_le


def test_spd_bch_start_falls_back_when_not_contracting():
    """Far-apart, strongly non-commuting matrices: the cubic BCH correction is larger than
    the spread, so start() keeps the log-Euclidean mean; the Newton iteration (with its line
    search) still converges to a stationary point."""
    u = np.ones(3) / np.sqrt(3)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    Q = np.eye(3) + np.sin(1.0) * K + (1 - np.cos(1.0)) * K @ K  # rotation by 1 rad
    L0 = np.diag([5.0, -5.0, 0.0])
    Y = np.stack([fun(L, np.exp) for L in (L0, Q @ L0 @ Q.T, Q.T @ L0 @ Q)])
    w = np.array([0.5, 0.3, 0.2])
    sv = spd_solver(Y)
    np.testing.assert_allclose(sv.start(np.arange(3), w[None])[0],
                               np.einsum("n,nij->ij", w, sv.logs), rtol=0, atol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converges, no ConvergenceWarning
        P = SPDSpace(tol=1e-8).fit(Y).decode(w)
    assert exact_grad_norm(Y, P[0], w) <= 1e-8


@pytest.mark.parametrize("r_target", [1e-4, 1e-2, 0.3, 0.7])
def test_spd_first_order_log_error_bound(rng, r_target):
    """The tracked logarithm V (Phi o B) V^T of B = diag(l) + E is within rho(r) of log B,
    including exact and near ties of the eigenvalues."""
    m, d = 30, 5
    lam = np.exp(rng.uniform(-2, 2, size=(m, d)))
    lam[:10, 1] = lam[:10, 0]  # exact ties
    lam[10:20, 1] = lam[10:20, 0] * (1 + 1e-9)  # near ties
    E = rng.normal(size=(m, d, d))
    E = E + np.swapaxes(E, 1, 2)
    E[:, np.arange(d), np.arange(d)] = 0.0
    E *= (r_target * lam.min(axis=1) / np.linalg.norm(E, axis=(1, 2)))[:, None, None]
    B = E + lam[:, :, None] * np.eye(d)
    sv = spd_solver(rand_spd(rng, m, d))
    one = np.ones((1, 1))
    for i in range(m):
        ev = sv.assemble(tracked_eval(sv, B[i : i + 1], np.eye(d)[None]), one, one)
        exact = fun(B[i], np.log)
        assert np.linalg.norm(ev.G[0] - exact) <= ev.err[0] * (1 + 1e-6) + 1e-13
        assert abs(ev.F[0] - np.sum(exact**2)) <= ev.errF[0] * (1 + 1e-6) + 1e-12
        # expansion bound rho(r) plus the rounding bound q / (1 - r - q) (q = eps cond)
        q = np.finfo(float).eps * lam[i].max() / lam[i].min()
        r_i = np.linalg.norm(E[i]) / lam[i].min()
        assert ev.err[0] <= (r_target**2 / (2 * (1 - r_target) ** 2) + q / (1 - r_i - q)) * (
            1 + 1e-6)


def test_spd_budgeted_row_selection(rng):
    """_to_refine, per test point (row of the weights): nothing when the bound holds, else
    the rows of largest contribution such that the rest sums to at most half the budget
    (brute-force check)."""
    sv = spd_solver(rand_spd(rng, 3, 2))
    r = np.concatenate([rng.uniform(0, 0.2, (3, 50)), np.full((3, 2), [np.inf, 2.0])], axis=1)
    aw = rng.uniform(0, 1, (3, 52))
    c = sv.rho(r) * aw
    assert sv._to_refine(r[:, :50].ravel(), aw[:, :50], np.full(3, 1e300)).size == 0
    np.testing.assert_array_equal(sv._to_refine(r.ravel(), aw, np.full(3, 1e300)),
                                  [50, 51, 102, 103, 154, 155])  # r >= 1: always
    budgets = np.array([1e-6, 1e-3, 1e-2])
    sel = sv._to_refine(r.ravel(), aw, budgets)
    for t, budget in enumerate(budgets):
        st = sel[(sel >= 52 * t) & (sel < 52 * (t + 1))] - 52 * t
        rest = np.setdiff1d(np.arange(52), st)
        assert c[t, rest].sum() <= 0.5 * budget and {50, 51} <= set(st)
        if rest.size:  # the smallest possible selection: the largest ones
            assert c[t, rest].max() <= c[t, st].min()
            assert c[t, rest].sum() + c[t, st].min() > 0.5 * budget
    # a test point whose bound holds gets nothing
    sel = sv._to_refine(r[:, :50].ravel(), aw[:, :50], np.array([1e-9, 1e300, 1e-9]))
    assert sel.size and not np.any((sel >= 50) & (sel < 100))


def test_spd_refine_jacobi_without_lapack(rng):
    """Eigenvectors off by small rotations are refined by Jacobi steps alone (no LAPACK);
    the refined logarithms match eigh's within the budget and the tracked orthogonality
    bound dominates the actual defect."""
    m, d = 40, 5
    Y = rand_spd(rng, m, d, cond=50)
    sv = spd_solver(Y)
    R = fun(rand_spd(rng, 1, d)[0], lambda v: v**-0.5)
    S = R @ Y @ R.T
    _, V0 = np.linalg.eigh(S)
    w = rng.uniform(0.1, 1, (1, m))
    w /= w.sum()
    ev = tracked_eval(sv, S, V0 @ rotations(rng, m, d, 1e-3))
    assert ev.r.max() > 1e-3  # genuinely off
    budget = 1e-12
    sv.refine(ev, w, np.array([budget]))
    assert sv.n_eigh == 0
    sv.assemble(ev, w, w)
    exact = sum(wi * fun(s, np.log) for wi, s in zip(w[0], S, strict=True))
    assert ev.err[0] <= budget
    assert np.linalg.norm(ev.G[0] - exact) <= budget + 1e-13
    defect = np.linalg.norm(np.swapaxes(ev.V, 1, 2) @ ev.V - np.eye(d), ord=2, axis=(1, 2))
    assert np.all(defect <= ev.od) and ev.od.max() < 1e-10  # a valid, tight-enough bound


@pytest.mark.parametrize("rounds", [0, 8])
def test_spd_refine_lapack_fallback_on_bad_warm_start(rng, rounds):
    """A forced bad warm start (random orthogonal 'eigenvectors'): the rows whose Jacobi
    step is large, or not refined within ``rounds``, go to LAPACK; the result is right."""
    m, d = 25, 4
    Y = rand_spd(rng, m, d, cond=30)
    sv = spd_solver(Y)
    R = fun(rand_spd(rng, 1, d)[0], lambda v: v**-0.5)
    S = R @ Y @ R.T
    Vbad, _ = np.linalg.qr(rng.normal(size=(m, d, d)))
    w = rng.uniform(0.1, 1, (1, m))
    w /= w.sum()
    ev = tracked_eval(sv, S, Vbad)
    sv.refine(ev, w, np.array([1e-12]), rounds=rounds)
    assert sv.n_eigh > 0 and (rounds > 0 or sv.n_eigh == m)
    sv.assemble(ev, w, w)
    exact = sum(wi * fun(s, np.log) for wi, s in zip(w[0], S, strict=True))
    assert ev.err[0] <= 1e-12
    np.testing.assert_allclose(ev.G[0], exact, atol=1e-11)
    np.testing.assert_allclose(np.swapaxes(ev.V, 1, 2) @ S @ ev.V, ev.B,
                               atol=1e-12 * np.abs(S).max())  # the tracked data agree


def test_spd_hvp_is_derivative_of_frame_gradient(rng):
    """hvp(P) = -d/dt G(exp(-tP/2) R) at t = 0 (central differences of eigh logarithms)."""
    m, d = 20, 4
    Y = rand_spd(rng, m, d, cond=20)
    sv = spd_solver(Y)
    w = rng.uniform(0.1, 1, m)
    w /= w.sum()
    R = fun(rand_spd(rng, 1, d)[0], lambda v: v**-0.5)
    ev = sv.assemble(sv.evaluate(Y, R[None], None, 0), w[None], w[None])
    P = rng.normal(size=(d, d))
    P = P + P.T

    def G(t):
        Rt = fun(P, lambda v: np.exp(-t * v / 2)) @ R
        return sum(wi * fun(Rt @ y @ Rt.T, np.log) for wi, y in zip(w, Y, strict=True))

    h = 1e-5
    fd = -(G(h) - G(-h)) / (2 * h)
    np.testing.assert_allclose(sv.hvp(ev, w[None], P[None])[0], fd,
                               atol=1e-8 * np.abs(fd).max())


@pytest.mark.parametrize("signed", [False, True])
def test_spd_zero_weights_dropped_exactly(rng, signed):
    """Training points of zero weight are left out: same answer as fitting without them,
    certified on ALL points, and no eigendecomposition of the dropped matrices."""
    n, d = 30, 4
    Y = rand_spd(rng, n, d, cond=20)
    a = rng.uniform(0.1, 1, size=(3, n))
    a[:, ::2] = 0.0
    if signed:
        a[:, 1::6] = -0.05
    pol = "signed" if signed else "positive"
    sp = SPDSpace(weights=pol, tol=1e-10).fit(Y)
    P = sp.decode(a)
    nz = np.flatnonzero(a[0])
    Pr = SPDSpace(weights=pol, tol=1e-10).fit(Y[nz]).decode(a[:, nz])
    np.testing.assert_allclose(P, Pr, rtol=1e-9, atol=1e-9)
    w, _ = policy_weights(a, pol)
    for p, wi in zip(P, w, strict=True):
        assert exact_grad_norm(Y, p, wi) <= 1e-10
    assert sp.n_eigh_ <= len(nz) * (3 + sp.n_iter_.sum())  # only the non-zero rows


@pytest.mark.parametrize("tol", [1e-5, 1e-8, 1e-11])
def test_spd_certified_gradient_norm(rng, tol, monkeypatch):
    """Whatever path certified a point (the tracked logarithms as they are, or refined),
    the exact gradient norm (eigh) is <= tol.  With tol = 1e-5 on well-conditioned data the
    point after the Newton step is certified from the unrefined tracked eigenvectors."""
    from psdsos.structured.spaces._spd_newton import _SPDNewton

    calls = {"refine": 0}
    orig = _SPDNewton.refine

    def counting(self, *args, **kw):
        calls["refine"] += 1
        return orig(self, *args, **kw)

    monkeypatch.setattr(_SPDNewton, "refine", counting)
    Y = rand_spd(rng, 50, 4, cond=3 if tol == 1e-5 else 30)
    a = rng.uniform(0, 1, size=(6, 50)) ** 3
    sp = SPDSpace(weights="positive", tol=tol).fit(Y)
    P = sp.decode(a)
    w, _ = policy_weights(a, "positive")
    for p, wi, g in zip(P, w, sp.grad_norm_, strict=True):
        assert exact_grad_norm(Y, p, wi) <= tol and g <= tol
    if tol == 1e-5:  # no refinement at all
        assert calls["refine"] == 0 and sp.n_iter_.sum() > 0


@pytest.mark.parametrize("signed", [False, True])
def test_spd_batched_and_single_point_solves_agree(rng, signed, monkeypatch):
    """Test points solved together (common training rows, zero weights of some points kept)
    or one at a time (each with its own non-zero rows): same certified answers."""
    from psdsos.structured.spaces import spd

    Y = rand_spd(rng, 40, 4, cond=30)
    a = rng.uniform(0, 1, size=(7, 40)) ** 2
    a[1, :20] = 0.0  # different supports
    a[3, ::3] = 0.0
    if signed:
        a[:, 5] = -0.02
    pol = "signed" if signed else "positive"
    out = {}
    for batch in (1, 2**30):  # one test point per solve / all of them together
        monkeypatch.setattr(spd, "_SPD_BATCH", batch)
        sp = SPDSpace(weights=pol, tol=1e-10).fit(Y)
        out[batch] = sp.decode(a)
        w, _ = policy_weights(a, pol)
        for p, wi in zip(out[batch], w, strict=True):
            assert exact_grad_norm(Y, p, wi) <= 1e-10
    np.testing.assert_allclose(out[1], out[2**30], rtol=1e-8, atol=1e-8)


def test_spd_batch_merges_when_only_some_steps_are_accepted(rng, monkeypatch):
    """A rejected step for one test point of a batch (forced: its F is reported as
    increased once) keeps that point's evaluation while the others move on; all end
    certified."""
    from psdsos.structured.spaces._spd_newton import _SPDNewton

    orig = _SPDNewton.assemble
    state = {"evals": [], "merged": 0}

    def assemble(self, ev, W, AW):
        ev = orig(self, ev, W, AW)
        if not any(e is ev for e in state["evals"]):
            state["evals"].append(ev)
        if ev is state["evals"][1] if len(state["evals"]) > 1 else False:
            ev.F[1] += 1.0  # the first evaluation after a Newton step: F "increased"
            ev.gn[1] = np.inf  # nor is the gradient norm halved
        return ev

    orig_merge = _SPDNewton._merge

    def merge(self, *args):
        state["merged"] += 1
        return orig_merge(self, *args)

    monkeypatch.setattr(_SPDNewton, "assemble", assemble)
    monkeypatch.setattr(_SPDNewton, "_merge", merge)
    Y = rand_spd(rng, 30, 3, cond=20)
    a = rng.uniform(0, 1, size=(4, 30))
    sp = SPDSpace(weights="positive", tol=1e-10).fit(Y)
    P = sp.decode(a)
    assert state["merged"] >= 1 and sp.n_iter_[1] > sp.n_iter_[0]
    w, _ = policy_weights(a, "positive")
    for p, wi in zip(P, w, strict=True):
        assert exact_grad_norm(Y, p, wi) <= 1e-10


def test_spd_one_by_one_matrices(rng):
    """d = 1: the weighted geometric mean of positive numbers."""
    y = rng.uniform(0.1, 10, size=8)
    a = rng.uniform(0, 1, size=(3, 8))
    P = SPDSpace(tol=1e-12).fit(y[:, None, None]).decode(a)
    ref = np.exp((a / a.sum(axis=1, keepdims=True)) @ np.log(y))
    np.testing.assert_allclose(P[:, 0, 0], ref, rtol=1e-12)


def test_log_euclidean_closed_form(rng):
    Y = rand_spd(rng, 5, 3)
    sp = LogEuclideanSPDSpace().fit(Y)
    a = rng.uniform(0, 1, size=(3, 5))
    P = sp.decode(a)
    w = a / a.sum(axis=1, keepdims=True)
    logs = np.array([fun(y, np.log) for y in Y])
    for p, wi in zip(P, w, strict=True):
        np.testing.assert_allclose(p, fun(np.tensordot(wi, logs, 1), np.exp), rtol=1e-10)
    # it is the argmin: a perturbation in the log chart increases the objective
    F = lambda M, wi: sum(wi[i] * np.sum((fun(M, np.log) - logs[i]) ** 2)  # noqa: E731
                          for i in range(5))
    E = rng.normal(size=(3, 3)) * 1e-3
    assert F(P[0], w[0]) < F(fun(fun(P[0], np.log) + E + E.T, np.exp), w[0])
    # commuting matrices: the same as the affine-invariant mean
    D = np.array([np.diag(rng.uniform(0.5, 3, 3)) for _ in range(5)])
    np.testing.assert_allclose(LogEuclideanSPDSpace().fit(D).decode(a),
                               SPDSpace().fit(D).decode(a), rtol=1e-10)
    # loss and policy
    np.testing.assert_allclose(sp.loss(Y[:1], Y[1:2]), [np.sum((logs[0] - logs[1]) ** 2)])
    neg = -np.ones(5)
    np.testing.assert_allclose(sp.decode(neg), sp.decode(np.ones(5)), rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Bures-Wasserstein
# ---------------------------------------------------------------------------------------
#: SDP solver tolerance of these tests
STOL = 1e-8


def assert_sdp_close(sp, P_sdp, P_ref, w):
    """An interior-point solution: objective to ~STOL, the matrix to ~sqrt(STOL) (the
    barycenter objective grows quadratically around its minimizer)."""
    for p, r, wi in zip(P_sdp, P_ref, w, strict=True):
        f_sdp, f_ref = sp.objective(p, wi)[0], sp.objective(r, wi)[0]
        assert abs(f_sdp - f_ref) <= 10 * STOL * max(1.0, abs(f_ref))
        np.testing.assert_allclose(p, r, atol=10 * np.sqrt(STOL) * np.abs(r).max())


def test_bures_sdp_is_dpp_and_matches_fixed_point_and_commuting_closed_form(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    ev = rng.uniform(0.2, 4, size=(4, 3))
    C = (Q * ev[:, None, :]) @ Q.T
    a = rng.uniform(0.1, 1, size=(2, 4))
    w = a / a.sum(axis=1, keepdims=True)
    ref = (Q * ((w @ np.sqrt(ev)) ** 2)[:, None, :]) @ Q.T  # (sum w C^{1/2})^2
    sp = BuresSpace(tol=1e-10, solver_tol=STOL).fit(C)
    prob, _, _ = sp.cvxpy_problem()
    assert prob.is_dcp(dpp=True)
    P_sdp = sp.decode(a, method="cvxpy")
    P_fp = sp.decode(a, method="rgd")
    np.testing.assert_allclose(P_fp, ref, rtol=1e-9, atol=1e-10)
    assert_sdp_close(sp, P_sdp, ref, w)
    assert sp.cvxpy_problem()[0] is prob


def test_bures_noncommuting_sdp_vs_fixed_point_vs_geodesic(rng):
    C = rand_spd(rng, 2, 3, cond=20)
    sp = BuresSpace(tol=1e-10, solver_tol=STOL).fit(C)
    t = 0.35
    ref = bures_wasserstein_geodesic(C[0], C[1], t)  # the two-point barycenter
    P_fp = sp.decode(np.array([1 - t, t]), method="rgd")
    P_sdp = sp.decode(np.array([1 - t, t]), method="cvxpy")
    np.testing.assert_allclose(P_fp[0], ref, rtol=1e-8, atol=1e-9)
    assert_sdp_close(sp, P_sdp, ref[None], np.array([[1 - t, t]]))
    # many points: first-order optimality of the fixed point, and the SDP agrees
    C = rand_spd(rng, 6, 2, cond=10)
    C[0] = np.outer([1.0, 0.5], [1.0, 0.5])  # a rank-deficient training output is allowed
    sp = BuresSpace(tol=1e-10, solver_tol=STOL).fit(C)
    a = rng.uniform(0, 1, size=(3, 6))
    P_fp = sp.decode(a, method="rgd")
    P_sdp = sp.decode(a)  # "auto" = the SDP
    w = a / a.sum(axis=1, keepdims=True)
    for p, wi in zip(P_fp, w, strict=True):
        G = sp.riemannian_gradient(p, wi)[0]
        assert np.sqrt(np.trace(G @ p @ G)) < 1e-9  # ||grad F||_p
    assert_sdp_close(sp, P_sdp, P_fp, w)
    for i in range(3):
        assert sp.objective(P_fp[i], w[i])[0] <= sp.objective(P_sdp[i], w[i])[0] + 1e-9


def test_bures_gradient_taylor_slope(rng):
    C = rand_spd(rng, 5, 3)
    sp = BuresSpace().fit(C)
    w = rng.uniform(0, 1, 5)
    w /= w.sum()
    S = rand_spd(rng, 1, 3)[0]
    V = rng.normal(size=(3, 3))
    V = V + V.T
    G = sp.riemannian_gradient(S, w)[0]
    slope = np.trace(G @ S @ V)  # <grad, V>_S = Tr(grad S V); Exp_S(V) = (I+V) S (I+V)
    F0 = sp.objective(S, w)[0]
    ts = np.array([1e-2, 1e-3])
    I3 = np.eye(3)
    errs = [abs(sp.objective((I3 + t * V) @ S @ (I3 + t * V), w)[0] - F0 - t * slope)
            for t in ts]
    assert np.log(errs[0] / errs[1]) / np.log(ts[0] / ts[1]) > 1.9


def test_bures_negative_weights_use_positive_part(rng):
    C = rand_spd(rng, 5, 2)
    sp = BuresSpace(tol=1e-10).fit(C)
    a = np.array([0.5, -0.3, 0.4, -0.1, 0.2])
    for method in ("rgd", "cvxpy"):
        P = sp.decode(a, method=method)
        Pp = sp.decode(np.maximum(a, 0), method=method)
        np.testing.assert_allclose(P, Pp, atol=1e-6)
        assert np.linalg.eigvalsh(P).min() > -1e-8
    np.testing.assert_allclose(sp.decode(-np.ones(5), method="rgd"),
                               sp.decode(np.ones(5), method="rgd"), rtol=1e-10)
    with pytest.raises(ValueError, match="Y must be positive semi-definite"):
        sp.check_Y(np.array([[[1.0, 0], [0, -1]]]))


# ---------------------------------------------------------------------------------------
# sphere
# ---------------------------------------------------------------------------------------
def test_sphere_two_point_midpoint(rng):
    Z = rand_sphere(rng, 2, 4)
    sp = SphereSpace().fit(Z)
    P = sp.decode(np.array([[0.5, 0.5], [2.0, 2.0]]))
    mid = (Z[0] + Z[1]) / np.linalg.norm(Z[0] + Z[1])
    np.testing.assert_allclose(P, [mid, mid], atol=1e-12)
    # unequal weights: the point at t on the great circle
    t = 0.3
    theta = np.arccos(Z[0] @ Z[1])
    ref = (np.sin((1 - t) * theta) * Z[0] + np.sin(t * theta) * Z[1]) / np.sin(theta)
    np.testing.assert_allclose(SphereSpace(tol=1e-12).fit(Z).decode([1 - t, t])[0], ref,
                               atol=1e-10)


def test_sphere_first_order_optimality_and_taylor(rng):
    Z = rand_sphere(rng, 20, 3)
    Z[:, 2] = np.abs(Z[:, 2]) + 1.0  # a cluster: the mean is well defined
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    sp = SphereSpace(tol=1e-10).fit(Z)
    A = rng.uniform(0, 1, (5, 20))
    P = sp.decode(A)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-14)
    w = A / A.sum(axis=1, keepdims=True)
    for p, wi in zip(P, w, strict=True):
        g = sp.riemannian_gradient(p, wi)[0]
        assert np.linalg.norm(g) < 1e-9 and abs(g @ p) < 1e-12
    y = rand_sphere(rng, 1, 3)[0]
    v = rng.normal(size=3)
    v -= (v @ y) * y
    g = sp.riemannian_gradient(y, w[0])[0]
    F0 = sp.objective(y, w[0])[0]
    ts = np.array([1e-2, 1e-3])
    errs = [abs(sp.objective(sphere_exp(y, t * v), w[0])[0] - F0 - t * (g @ v)) for t in ts]
    assert np.log(errs[0] / errs[1]) / np.log(ts[0] / ts[1]) > 1.9


def test_sphere_negative_weight_kink():
    """F = 1.3 theta^2 - 0.3 (pi - theta)^2 on S^1 with z2 = -z1: minimum at the kink z1."""
    Z = np.array([[1.0, 0.0], [-1.0, 0.0]])
    sp = SphereSpace().fit(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        P = sp.decode(np.array([[1.3, -0.3]]))
    np.testing.assert_allclose(P, [[1.0, 0.0]], atol=1e-7)
    assert sp.grad_norm_[0] == 0.0
    assert sp.stationarity(P, [1.3, -0.3])[0] == 0.0


@given(st.integers(0, 2**31 - 1), st.booleans())
def test_sphere_property_unit_norm_rotation_permutation(seed_, signed):
    rng = np.random.default_rng(seed_)
    Z = rand_sphere(rng, 6, 3)
    a = rng.uniform(0, 1, (2, 6))
    if signed:
        a[:, :2] *= -0.3
    sp = SphereSpace(tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        P = sp.fit(Z).decode(a)
        R, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        PR = SphereSpace(tol=1e-10).fit(Z @ R.T).decode(a)
        perm = rng.permutation(6)
        PP = SphereSpace(tol=1e-10).fit(Z[perm]).decode(a[:, perm])
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-12)
    w, _ = policy_weights(a)
    F = sp.objective(P, w[0])[0], sp.objective(P, w[1])[1]
    # rotation-equivariant and permutation-invariant in value (the minimizer may be non-unique);
    # with negative weights a minimizer may sit at a kink, located to within 1e-7 (_KINK_TOL)
    tol = 1e-6 if signed else 1e-9
    for i in range(2):
        assert sp.objective(PR[i] @ R, w[i])[0] == pytest.approx(F[i], abs=tol)
        assert sp.objective(PP[i], w[i])[0] == pytest.approx(F[i], abs=tol)


def test_sphere_check_Y_and_loss(rng):
    sp = SphereSpace()
    with pytest.raises(ValueError, match="Y rows must be unit vectors"):
        sp.check_Y([[1.0, 1.0]])
    with pytest.raises(ValueError, match="Y contains NaN"):
        sp.check_Y([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="Y must have shape"):
        sp.check_Y([1.0, 0.0])
    Z = rand_sphere(rng, 4, 3)
    np.testing.assert_allclose(sp.loss(Z[:2], Z[2:]),
                               np.arccos(np.sum(Z[:2] * Z[2:], axis=1)) ** 2, rtol=1e-10)
    np.testing.assert_allclose(sp.project(np.array([[3.0, 4.0], [0.0, 0.0]])),
                               [[0.6, 0.8], [1.0, 0.0]])


# ---------------------------------------------------------------------------------------
# Fisher simplex
# ---------------------------------------------------------------------------------------
def test_fisher_simplex_decoding(rng):
    H = rng.dirichlet(np.ones(4) * 0.5, size=10)
    H[0] = [1.0, 0, 0, 0]  # boundary histograms are floored at eps = 1e-5
    sp = FisherSimplexSpace(tol=1e-10).fit(H)
    A = rng.uniform(0, 1, (4, 10))
    P = sp.decode(A)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-14)
    assert P.min() >= 1e-5 * (1 - 1e-6)  # non-negative weights: inside Delta_eps
    # it is the sphere decoding of the square roots, mapped back
    Hf = np.maximum(H, 1e-5)
    Hf /= Hf.sum(axis=1, keepdims=True)
    z = SphereSpace(tol=1e-10).fit(np.sqrt(Hf)).decode(A)
    np.testing.assert_allclose(P, z**2, atol=1e-12)
    # loss: the paper's arccos(sum sqrt(y y'))^2
    np.testing.assert_allclose(sp.loss(H[1:3], H[3:5]),
                               np.arccos(np.sum(np.sqrt(H[1:3] * H[3:5]), axis=1)) ** 2,
                               rtol=1e-9)
    # signed weights: still a histogram
    a = rng.uniform(0, 1, 10)
    a[:3] = -0.1
    Ps = sp.decode(a)
    assert np.all(np.isfinite(Ps)) and Ps.min() >= 0 and abs(Ps.sum() - 1) < 1e-12
    np.testing.assert_allclose(sp.project(np.array([[0.7, 0.6, -0.1, 0.0]])).sum(), 1.0)


@pytest.mark.parametrize("Y, match", [
    ([[0.5, 0.6]], "Y rows must be histograms"),
    ([[1.2, -0.2]], "Y rows must be histograms"),
    ([[np.nan, 1.0]], "Y contains NaN"),
])
def test_fisher_check_Y(Y, match):
    with pytest.raises(ValueError, match=match):
        FisherSimplexSpace().check_Y(Y)
    with pytest.raises(ValueError, match="eps"):
        FisherSimplexSpace(eps=0.6).fit([[0.5, 0.5]])


# ---------------------------------------------------------------------------------------
# registry and configs
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["euclidean", "spd", "spd_logeuclidean", "bures", "sphere",
                                  "fisher_simplex"])
def test_registry_and_config_round_trip(name):
    sp = get_output_space(name.upper())
    assert sp.name == name and type(sp) is output_spaces()[name]
    assert type(sp).from_config(sp.to_config()).to_config() == sp.to_config()
    assert name in repr(sp) or type(sp).__name__ in repr(sp)
    assert get_output_space(sp) is sp


def test_registry_unknown_and_discrete(monkeypatch):
    with pytest.raises(ValueError, match="output must be one of"):
        get_output_space("hyperbolic")
    with pytest.raises(ValueError, match="output"):
        get_output_space(3)
    from psdsos.structured.spaces import discrete as _discrete

    class Dummy(OutputSpace):
        name = "dummy_discrete"

    monkeypatch.setitem(_discrete.DISCRETE_SPACES, "dummy_discrete", Dummy)
    assert isinstance(get_output_space("dummy_discrete"), Dummy)


def test_cvxpy_available_solvers():
    assert "CLARABEL" in cp.installed_solvers()


def test_spd_error_bound_ignores_zero_weight_rows():
    """A row of zero weight whose bound is infinite (r >= 1) contributes 0, not NaN."""
    from psdsos.structured.spaces._spd_newton import _SPDNewton

    r = np.array([0.1, 1.5, 0.2, 2.0])
    AW = np.array([[0.5, 0.0], [0.25, 0.0]])
    rho = _SPDNewton.rho(r)
    assert np.isinf(rho[1]) and np.isinf(rho[3])
    with np.errstate(all="raise"):
        err, _ = _SPDNewton.err_bounds(_SPDNewton.__new__(_SPDNewton), r, AW)
    np.testing.assert_allclose(err, [0.5 * rho[0], 0.25 * rho[2]])
    assert np.all(np.isfinite(err))


def _fuzz_spd_case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    d = int(rng.integers(1, 7))
    A = rng.normal(size=(n, d, d)) * rng.uniform(0.2, 2.0)
    Y = np.array([a @ a.T + 1e-2 * np.eye(d) for a in A])
    W = rng.normal(size=(int(rng.integers(1, 6)), n))
    W[rng.uniform(size=W.shape) < 0.4] = 0
    # the rows as the signed policy decoded them before it accepted every sum(alpha) > 0
    # (||alpha||_1 <= 4 sum(alpha), else the positive part): these cases exercise the fast
    # path on ill-conditioned data; far-extrapolating rows are tested in test_signed_weights
    return Y, policy_weights(W, l1_bound=SIGNED_L1_BOUND)[0]


# 17 (Haswell, Zen) and 445 (Prescott): a huge Newton step on a nonconvex F (signed
# weights) reached a frame whose small eigenvalues were lost to rounding, F looked lower
# there and the step was accepted (ConvergenceWarning, a decode outside the SPD cone);
# 219 (every kernel) and 206 (Haswell, Prescott): the same or a crawl to max_iter.
@pytest.mark.parametrize("seed", [17, 140, 206, 219, 445, 486])
def test_spd_decoding_extreme_eigenvalue_ratios_no_float_warnings(seed):
    """Ill-conditioned data and signed weights with zeros (found by fuzzing): frames with
    eigenvalue ratios beyond the float range are handled without overflow/NaN warnings,
    and the decoder still certifies tol (no ConvergenceWarning)."""
    Y, W = _fuzz_spd_case(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = SPDSpace().fit(Y).decode(W)
    assert np.all(np.isfinite(P))
    assert np.all(np.linalg.eigvalsh(P)[:, 0] > 0)


def _spd_objective_ref(Y, P, w):
    """F(P) = sum_i w_i ||log eig(P^-1/2 Y_i P^-1/2)||^2 from eigh only."""
    Pih = fun(P, lambda v: 1 / np.sqrt(v))
    return sum(wi * np.sum(np.log(np.linalg.eigvalsh(Pih @ Yi @ Pih)) ** 2)
               for wi, Yi in zip(w, Y, strict=True))


@pytest.mark.parametrize("seed", [17, 206, 219])
def test_spd_signed_weights_decode_is_a_local_minimizer(seed):
    """The fuzzing cases of non-convex F: the decode is SPD, certified, and no point of a
    small geodesic sphere around it (random directions) has a lower F, beyond rounding."""
    Y, W = _fuzz_spd_case(seed)
    sp = SPDSpace().fit(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(W)
    Wn = policy_weights(W, "signed")[0]
    rng = np.random.default_rng(seed)
    for k in range(len(W)):
        assert np.linalg.eigvalsh(P[k])[0] > 0
        assert exact_grad_norm(Y, P[k], Wn[k]) <= 1e-6  # rounding of the reference itself
        F0 = _spd_objective_ref(Y, P[k], Wn[k])
        for _ in range(5):
            X = rng.normal(size=P.shape[1:])
            X = 1e-3 * (X + X.T) / np.linalg.norm(X + X.T)
            Ph = fun(P[k], np.sqrt)
            Q = Ph @ fun(X, np.exp) @ Ph
            assert _spd_objective_ref(Y, Q, Wn[k]) >= F0 - 1e-9 * max(1.0, abs(F0))


def test_spd_robust_method_alone_matches_fast_path(rng, monkeypatch):
    """With no fast-path iterations every point goes to the robust method (saddle-free
    Newton, LAPACK evaluations): it certifies tol and agrees with the fast path."""
    from psdsos.structured.spaces import _spd_newton

    Y = rand_spd(rng, 12, 3, cond=50.0)
    W = rng.uniform(-0.2, 1.0, size=(4, 12))
    fast = SPDSpace().fit(Y)
    P_fast = fast.decode(W)
    monkeypatch.setattr(_spd_newton, "_FAST_ITER", 0)
    sp = SPDSpace().fit(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(W)
    assert np.all(sp.grad_norm_ <= 1e-8) and np.all(sp.n_iter_ >= 1)
    # two certified stationary points of the same F within ~tol / (Hessian scale) of each
    # other (the same basin: both start from the same BCH point)
    np.testing.assert_allclose(P, P_fast, rtol=0, atol=1e-7 * np.abs(P_fast).max())


def test_spd_rounding_floor_warns_and_names_tol():
    """A minimizer where S_i = P^-1/2 Y_i P^-1/2 has condition number ~1e8: the computed
    gradient norm is only known to ~1e-7 in float64; the decoder stops there, returns an SPD
    point, and warns naming the rounding and tol (it certified 1e-8 before, wrongly); with
    tol above that floor it certifies silently."""
    Y, W = _fuzz_spd_case(69)
    with pytest.warns(ConvergenceWarning, match="rounding of float64.*increase tol"):
        P = SPDSpace().fit(Y).decode(W)
    assert np.all(np.linalg.eigvalsh(P)[:, 0] > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P2 = SPDSpace(tol=1e-7).fit(Y).decode(W)
    Wn = policy_weights(W, "signed")[0]
    for k in range(len(W)):
        assert exact_grad_norm(Y, P2[k], Wn[k]) <= 1e-7


def test_spd_slow_nonconvex_case_warns_and_stays_spd():
    """Signed weights (2.15, -1.45, 0.30) extrapolate to a minimizer of condition number
    ~1e6 along a flat valley of F: 100 Newton steps do not suffice; the robust path (L-BFGS
    preconditioned RGD) continues to the rounding floor of float64 there, the decoder says
    so (naming tol) and returns the last accepted point, SPD and below the start's F
    (before, such points could end at frames whose eigenvalues were lost to rounding);
    with max_iter=5 it stops earlier and names max_iter."""
    Y, W = _fuzz_spd_case(57)
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        SPDSpace(max_iter=5).fit(Y).decode(W)
    sp = SPDSpace().fit(Y)
    with pytest.warns(ConvergenceWarning, match="rounding of float64.*increase tol"):
        P = sp.decode(W)
    assert np.all(np.isfinite(P)) and np.all(np.linalg.eigvalsh(P)[:, 0] > 0)
    Wn = policy_weights(W, "signed")[0]
    start = fun(np.einsum("n,nij->ij", Wn[0], sp.logs_), np.exp)
    assert _spd_objective_ref(Y, P[0], Wn[0]) < _spd_objective_ref(Y, start, Wn[0]) - 1.0
