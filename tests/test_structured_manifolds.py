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
        [0.5, 0.3, -0.1],      # signed: sum > 0, ||a||_1 <= 4 sum
        [0.2, 0.2, -0.35],     # sum = 0.05 > 0 but ||a||_1 = 0.75 > 4 * 0.05: positive part
        [0.1, -0.3, 0.05],     # sum < 0: positive part
        [-0.1, -0.2, 0.0],     # no positive weight: uniform
    ])
    w, signed = policy_weights(a)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert signed.tolist() == [True, False, False, False]
    np.testing.assert_allclose(w[0], a[0] / a[0].sum())
    np.testing.assert_allclose(w[1], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(w[2], [2 / 3, 0.0, 1 / 3])
    np.testing.assert_allclose(w[3], [1 / 3] * 3)
    wp, sp = policy_weights(a, "positive")
    assert not sp.any()
    np.testing.assert_allclose(wp[0], [0.625, 0.375, 0.0])
    assert SIGNED_L1_BOUND == 4.0


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
    Y = rng.normal(size=(7, 3))
    A = rng.normal(size=(4, 7))  # signed, unnormalized weights used as they are
    sp = EuclideanSpace().fit(Y)
    np.testing.assert_allclose(sp.decode(A), A @ Y, rtol=1e-13)
    assert sp.decode_methods == ("closed_form",)
    sp1 = EuclideanSpace().fit(Y[:, 0])
    out = sp1.decode(A)
    assert out.shape == (4,)
    np.testing.assert_allclose(out, A @ Y[:, 0])
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
    must agree with the one recomputed from scratch (``riemannian_gradient``, eigh)."""
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
        assert ref <= 1e-9 and abs(ref - g) <= 1e-11
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
        SPDSpace(max_iter=1, tol=1e-14).fit(Y).decode(rng.uniform(0, 1, (2, 4)))
    with pytest.raises(ValueError, match="weights"):
        SPDSpace(weights="all").fit(Y)


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
    from psdsos.structured import _discrete

    class Dummy(OutputSpace):
        name = "dummy_discrete"

    monkeypatch.setitem(_discrete.DISCRETE_SPACES, "dummy_discrete", Dummy)
    assert isinstance(get_output_space("dummy_discrete"), Dummy)


def test_cvxpy_available_solvers():
    assert "CLARABEL" in cp.installed_solvers()
