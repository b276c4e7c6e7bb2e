"""Tests for psdsos.sos: the SoS evaluation map, the CVXPY primitive, PSDModel, objectives.

Every map is compared with an explicit Kronecker-product reference
(Psi_j = phi_j kron I_d, PSD paper eq. 8) built here with ``np.kron``; the CVXPY primitive
is checked on small problems whose answer is known in closed form.
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import psdsos
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.problems import PSDLeastSquares
from psdsos.solvers import solve_cvxpy
from psdsos.sos import (
    PSDModel,
    SoSBlock,
    load_npz,
    project_psd,
    save_npz,
    sos_adjoint,
    sos_constraints,
    sos_evaluate,
    sos_operator_norm_sq,
)

EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------
def psi_ref(phi, d):
    """Psi = phi kron I_d, shape (r d, d) (row index a * d + p)."""
    return np.kron(np.asarray(phi, dtype=float)[:, None], np.eye(d))


def evaluate_ref(Phi, B, d):
    return np.stack([psi_ref(p, d).T @ B @ psi_ref(p, d) for p in Phi])


def adjoint_ref(Phi, G):
    d = G.shape[1]
    return sum(psi_ref(p, d) @ g @ psi_ref(p, d).T for p, g in zip(Phi, G, strict=True))


def explicit_map(Phi, d):
    """Matrix of B -> (Psi_j^T B Psi_j)_j acting on vec(B) (all (rd)^2 entries)."""
    return np.vstack([np.kron(psi_ref(p, d).T, psi_ref(p, d).T) for p in Phi])


def sym(A):
    return 0.5 * (A + np.swapaxes(A, -1, -2))


def rand_sym(rng, *shape):
    return sym(rng.standard_normal(shape))


def rand_psd(rng, N, rank=None, scale=1.0):
    A = rng.standard_normal((N, N if rank is None else rank))
    return scale * (A @ A.T)


def proj_psd_ref(A):
    w, U = np.linalg.eigh(sym(A))
    return (U * np.maximum(w, 0.0)) @ U.T


def features_on_grid(m=8, sigma=0.3):
    z = np.linspace(-1.0, 1.0, m)[:, None]
    return z, ExactFeatures("gaussian", sigma).fit(z).transform(z)


SHAPES = [(5, 3, 2), (12, 3, 1), (4, 3, 3), (10, 2, 2), (1, 1, 1), (7, 4, 2)]


# ---------------------------------------------------------------------------------------
# evaluation map, adjoint, operator norm
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, r, d", SHAPES)
def test_sos_evaluate_matches_kron_formula(rng, m, r, d):
    Phi = rng.standard_normal((m, r))
    B = rand_sym(rng, r * d, r * d)
    F = sos_evaluate(Phi, B, d)
    assert F.shape == (m, d, d)
    np.testing.assert_allclose(
        F,
        evaluate_ref(Phi, B, d),
        atol=1e-12 * np.abs(B).max() * r * r * max(1.0, np.abs(Phi).max()) ** 2,
    )
    np.testing.assert_array_equal(F, np.swapaxes(F, 1, 2))
    # a non-symmetric B acts through its symmetric part
    C = rng.standard_normal((r * d, r * d))
    np.testing.assert_allclose(sos_evaluate(Phi, C, d), sym(evaluate_ref(Phi, C, d)), atol=1e-11)


@pytest.mark.parametrize("m, r, d", SHAPES)
def test_sos_adjoint_matches_kron_formula(rng, m, r, d):
    Phi = rng.standard_normal((m, r))
    G = rand_sym(rng, m, d, d)
    S = sos_adjoint(Phi, G)
    assert S.shape == (r * d, r * d)
    np.testing.assert_allclose(S, adjoint_ref(Phi, G), atol=1e-11)
    np.testing.assert_array_equal(S, S.T)


@given(
    dims=st.tuples(st.integers(1, 8), st.integers(1, 5), st.integers(1, 3)),
    Phi_seed=st.integers(0, 2**32 - 1),
    scale=st.floats(1e-3, 1e3),
    data=st.data(),
)
def test_sos_adjointness_property(dims, Phi_seed, scale, data):
    """<A(B), G> = <B, A*(G)> for symmetric B and G (Frobenius products)."""
    m, r, d = dims
    Phi = data.draw(arrays(np.float64, (m, r), elements=st.floats(-3, 3, width=64)))
    rng = np.random.default_rng(Phi_seed)
    B = scale * rand_sym(rng, r * d, r * d)
    G = rand_sym(rng, m, d, d)
    lhs = float(np.sum(sos_evaluate(Phi, B, d) * G))
    rhs = float(np.sum(B * sos_adjoint(Phi, G)))
    bound = np.linalg.norm(B) * np.linalg.norm(G) * (1.0 + np.sum(Phi**2)) ** 2
    assert abs(lhs - rhs) <= 1e-12 * bound


@pytest.mark.parametrize(
    "m, r, d", [(4, 3, 1), (9, 3, 2), (5, 2, 2), (12, 3, 1), (20, 2, 3), (3, 4, 2), (1, 1, 1)]
)
def test_sos_operator_norm_sq_equals_explicit_map(rng, m, r, d):
    """Both branches (m <= r^2: K o K; m > r^2: Z^T Z) against the explicit linear map."""
    Phi = rng.standard_normal((m, r))
    A = explicit_map(Phi, d)
    ref = float(np.linalg.eigvalsh(A @ A.T)[-1])
    val = sos_operator_norm_sq(Phi)
    assert val == pytest.approx(ref, rel=1e-10)
    Kphi = Phi @ Phi.T
    assert val == pytest.approx(np.linalg.eigvalsh(Kphi * Kphi)[-1], rel=1e-10)
    # it bounds the map: ||A(B)||^2 <= ||A||^2 ||B||^2
    B = rand_sym(rng, r * d, r * d)
    assert np.sum(sos_evaluate(Phi, B, d) ** 2) <= val * np.sum(B**2) * (1 + 1e-10)


# ---------------------------------------------------------------------------------------
# the CVXPY primitive
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, r, d", [(5, 3, 2), (6, 2, 1), (3, 2, 3)])
def test_sosblock_linear_map_matches_reference(rng, m, r, d):
    Phi = rng.standard_normal((m, r))
    block = SoSBlock(Phi, d)
    N = r * d
    assert block.B.shape == (N, N) and block.N == N and block.d == d and block.m == m
    assert block.A.shape == (m * d * (d + 1) // 2, N * N)
    B = rand_psd(rng, N)
    iu, ju = np.triu_indices(d)
    packed = (block.A @ B.ravel(order="F")).reshape(m, -1)
    ref = evaluate_ref(Phi, B, d)
    np.testing.assert_allclose(packed, ref[:, iu, ju], atol=1e-11)
    block.B.value = B
    np.testing.assert_allclose(block.packed.value, ref[:, iu, ju], atol=1e-11)
    for j in range(m):
        np.testing.assert_allclose(block.value(j).value, ref[j], atol=1e-11)
    reg = block.regularizer(0.3, 0.7).value
    assert reg == pytest.approx(0.3 * np.trace(B) + 0.35 * np.sum(B * B), rel=1e-12)


def test_sosblock_explicit_psi_general(rng):
    """(m, N, d) input: any Psi_j, not only phi_j kron I_d."""
    m, N, d = 4, 5, 2
    Psi = rng.standard_normal((m, N, d))
    block = SoSBlock(Psi)
    B = rand_psd(rng, N)
    ref = np.einsum("jup,uv,jvq->jpq", Psi, B, Psi)
    iu, ju = np.triu_indices(d)
    np.testing.assert_allclose(
        (block.A @ B.ravel(order="F")).reshape(m, -1), ref[:, iu, ju], atol=1e-11
    )


@pytest.mark.parametrize("d", [1, 2, 3])
def test_sosblock_explicit_psi_equals_kron_input(rng, d):
    """(c) the explicit (m, N, d) Psi = phi kron I_d gives the same map as the (m, r) input."""
    m, r = 6, 3
    Phi = rng.standard_normal((m, r))
    Psi = np.stack([psi_ref(p, d) for p in Phi])
    a, b = SoSBlock(Phi, d), SoSBlock(Psi)
    assert a.A.shape == b.A.shape
    assert abs(a.A - b.A).max() < 1e-14
    # and the same optimal value on a small problem
    G0 = rand_sym(rng, m, d, d)
    vals = []
    for blk in (a, SoSBlock(Psi)):
        Gs = [cp.Variable((d, d), symmetric=True) for _ in range(m)]
        obj = sum(cp.sum_squares(Gs[j] - G0[j]) for j in range(m)) + 0.1 * cp.trace(blk.B)
        prob = cp.Problem(cp.Minimize(obj), blk.constraints(Gs))
        vals.append(solve_cvxpy(prob, solver="CLARABEL", tol=1e-9))
    assert vals[0] == pytest.approx(vals[1], rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("solver, tol", [("CLARABEL", 1e-9), ("SCS", 1e-8)])
@pytest.mark.parametrize("as_list", [False, True])
def test_sos_constraints_scalar_projection_known_answer(rng, solver, tol, as_list):
    """(a) d = 1: with exact features on distinct points the representable g are exactly the
    non-negative vectors (Phi is invertible: B = Phi^{-1} diag(g) Phi^{-T}), so
    argmin ||g - g0||^2 over representable g is max(g0, 0)."""
    m = 8
    _, Phi = features_on_grid(m)
    g0 = rng.standard_normal(m)
    g0[0], g0[1] = -1.0, 0.5  # at least one negative and one positive entry
    g = cp.Variable(m)
    G = [g[j] for j in range(m)] if as_list else g
    B, cons = sos_constraints(G, Phi)
    assert B.shape == (m, m)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(g - g0)), cons)
    fstar = solve_cvxpy(prob, solver=solver, tol=tol, max_iter=200_000 if solver == "SCS" else None)
    expected = np.maximum(g0, 0.0)
    assert fstar == pytest.approx(np.sum(np.minimum(g0, 0.0) ** 2), rel=1e-5, abs=1e-7)
    # objective tol-accurate and 2-strongly convex in g: ||g - g*||^2 <= (f - f*) <~ tol
    atol = 10 * np.sqrt(tol * max(1.0, fstar))
    np.testing.assert_allclose(g.value, expected, atol=atol)
    Bv = sym(B.value)
    assert np.linalg.eigvalsh(Bv)[0] >= -atol
    np.testing.assert_allclose(np.einsum("ja,ab,jb->j", Phi, Bv, Phi), g.value, atol=atol)


@pytest.mark.parametrize("symmetric", [True, False])
def test_sos_constraints_matrix_projection_known_answer(rng, symmetric):
    """(b) d = 2: with invertible Phi, B = (Phi^{-1} kron I) blockdiag(G) (Phi^{-T} kron I) is
    PSD iff every G_j is, so the projection of (G0_j) is ([G0_j]_+)_j."""
    m, d = 7, 2
    _, Phi = features_on_grid(m)
    G0 = rand_sym(rng, m, d, d) * 2.0
    G0[0] = np.diag([-1.0, 2.0])  # certainly indefinite
    if symmetric:
        Gs = [cp.Variable((d, d), symmetric=True) for _ in range(m)]
    else:  # non-symmetric variables get G_j == G_j^T from the primitive
        Gs = [cp.Variable((d, d)) for _ in range(m)]
    B, cons = sos_constraints(Gs, Phi)  # d inferred from G[0]
    assert B.shape == (m * d, m * d)
    prob = cp.Problem(cp.Minimize(sum(cp.sum_squares(Gs[j] - G0[j]) for j in range(m))), cons)
    tol = 1e-9
    fstar = solve_cvxpy(prob, solver="CLARABEL", tol=tol)
    expected = np.stack([proj_psd_ref(g) for g in G0])
    assert fstar == pytest.approx(np.sum((expected - G0) ** 2), rel=1e-6)
    atol = 10 * np.sqrt(tol * max(1.0, fstar))
    for j in range(m):
        np.testing.assert_allclose(Gs[j].value, expected[j], atol=atol)
    F = evaluate_ref(Phi, sym(B.value), d)
    np.testing.assert_allclose(F, np.stack([g.value for g in Gs]), atol=atol)


def test_sos_constraints_fits_user_parameters(rng):
    """A user problem: polynomial coefficients c under c0 + c1 z + c2 z^2 >= 0 on samples."""
    z, Phi = features_on_grid(12, 0.4)
    zz = z[:, 0]
    c = cp.Variable(3)
    g = c[0] + c[1] * zz + c[2] * zz**2
    B, cons = sos_constraints(g, Phi)
    target = np.array([-0.5, 0.0, 1.0])  # z^2 - 0.5 is negative near 0
    prob = cp.Problem(cp.Minimize(cp.sum_squares(c - target)), cons)
    solve_cvxpy(prob, solver="CLARABEL", tol=1e-9)
    vals = c.value[0] + c.value[1] * zz + c.value[2] * zz**2
    assert vals.min() >= -1e-5
    assert np.linalg.norm(c.value - target) > 0.1  # the constraint was active


def test_sos_constraints_errors(rng):
    Phi = rng.standard_normal((4, 3))
    with pytest.raises(ValueError, match="d must be given"):
        SoSBlock(Phi)
    with pytest.raises(ValueError, match="d must be >= 1"):
        SoSBlock(Phi, 0)
    with pytest.raises(ValueError, match="does not match Psi"):
        SoSBlock(rng.standard_normal((4, 6, 2)), d=3)
    bad = Phi.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SoSBlock(bad, 1)
    with pytest.raises(ValueError, match="Psi must have shape"):
        SoSBlock(np.ones(3), 1)
    block = SoSBlock(Phi, 2)
    with pytest.raises(ValueError, match="one expression per point"):
        block.constraints([cp.Variable((2, 2))] * 3)
    with pytest.raises(ValueError, match=r"G\[1\] must have shape \(2, 2\)"):
        block.constraints([cp.Variable((2, 2)), cp.Variable((3, 3))] + [cp.Variable((2, 2))] * 2)
    with pytest.raises(ValueError, match="only accepted for d = 1"):
        block.constraints(cp.Variable(4))
    with pytest.raises(ValueError, match="4 entries"):
        SoSBlock(Phi, 1).constraints(cp.Variable(5))


# ---------------------------------------------------------------------------------------
# PSDLeastSquares: numpy objective and the DPP CVXPY form
# ---------------------------------------------------------------------------------------
def _ls_problem(rng, n=8, d=2, lam1=1e-3, lam2=1e-2):
    _, Phi = features_on_grid(n, 0.4)
    M = rand_sym(rng, n, d, d) + 2 * np.eye(d)
    return Phi, M, PSDLeastSquares(Phi, M, lam1, lam2)


def test_psd_least_squares_objective_matches_formula(rng):
    Phi, M, pb = _ls_problem(rng, lam1=0.2, lam2=0.3)
    B = rand_psd(rng, Phi.shape[1] * 2)
    F = evaluate_ref(Phi, B, 2)
    ref = 0.5 / len(M) * np.sum((F - M) ** 2) + 0.2 * np.trace(B) + 0.15 * np.sum(B * B)
    assert pb.objective(B) == pytest.approx(ref, rel=1e-12)
    # the CVXPY objective is the same function (off-diagonal weights sqrt(2) in the packing)
    prob, Bvar, _ = pb.cvxpy_problem()
    Bvar.value = B
    assert prob.objective.value == pytest.approx(ref, rel=1e-10)


def test_cvxpy_problem_is_dpp_and_resolves_like_a_fresh_problem(rng):
    """(d) built once with Parameters; new lam values give the fresh problem's answer."""
    Phi, M, pb = _ls_problem(rng)
    prob, Bvar, params = pb.cvxpy_problem()
    assert prob.is_dcp(dpp=True)
    assert set(params) == {"lam1", "lam2", "M"}
    assert pb.cvxpy_problem()[0] is prob  # cached
    tol = 1e-9
    solve_cvxpy(prob, solver="CLARABEL", tol=tol)
    first = pb.objective(sym(Bvar.value))
    for lam1, lam2 in [(0.0, 1e-3), (5e-2, 5e-2)]:
        params["lam1"].value, params["lam2"].value = lam1, lam2
        solve_cvxpy(prob, solver="CLARABEL", tol=tol)
        B_re = sym(Bvar.value)
        fresh = PSDLeastSquares(Phi, M, lam1, lam2)
        fprob, fB, _ = fresh.cvxpy_problem()
        assert fprob is not prob
        solve_cvxpy(fprob, solver="CLARABEL", tol=tol)
        B_fr = sym(fB.value)
        J_re, J_fr = fresh.objective(B_re), fresh.objective(B_fr)
        assert J_re == pytest.approx(J_fr, rel=1e-7)
        assert J_re != pytest.approx(first, rel=1e-3)  # the parameters really changed
        # J is lam2-strongly convex: ||B - B*||^2 <= 2 (J - J*) / lam2
        np.testing.assert_allclose(B_re, B_fr, atol=10 * np.sqrt(2 * tol * J_fr / lam2))
    # new targets through the M parameter
    M2 = M + 0.5 * np.eye(2)
    iu, ju = np.triu_indices(2)
    params["M"].value = M2[:, iu, ju]
    solve_cvxpy(prob, solver="CLARABEL", tol=tol)
    fresh = PSDLeastSquares(Phi, M2, 5e-2, 5e-2)
    fprob, fB, _ = fresh.cvxpy_problem()
    solve_cvxpy(fprob, solver="CLARABEL", tol=tol)
    assert fresh.objective(sym(Bvar.value)) == pytest.approx(
        fresh.objective(sym(fB.value)), rel=1e-7
    )


# ---------------------------------------------------------------------------------------
# PSDModel
# ---------------------------------------------------------------------------------------
def _fitted_features(kind, X, seed=0):
    if kind == "exact":
        return ExactFeatures("gaussian", 0.4).fit(X)
    return NystromFeatures(
        "matern52", 0.5, n_landmarks=max(1, len(X) // 2), landmarks="greedy", random_state=seed
    ).fit(X)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 10),
    d=st.integers(1, 3),
    rank_frac=st.floats(0.0, 1.0),
    log_scale=st.floats(-6, 6),
    kind=st.sampled_from(["exact", "nystrom"]),
)
def test_psd_model_outputs_symmetric_psd_property(seed, n, d, rank_frac, log_scale, kind):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    f = _fitted_features(kind, X, seed % 1000)
    N = f.n_components * d
    rank = int(round(rank_frac * N))
    B = rand_psd(rng, N, rank=rank, scale=10.0**log_scale)
    model = PSDModel(f, B, d)
    Xt = np.vstack([X, rng.uniform(-3, 3, size=(50, 2))])
    F = model(Xt)
    assert F.shape == (len(Xt), d, d)
    np.testing.assert_array_equal(F, np.swapaxes(F, 1, 2))
    scale = max(np.abs(F).max(), np.finfo(float).tiny)
    assert np.linalg.eigvalsh(F)[:, 0].min() >= -1e-12 * scale
    # the two evaluation routes agree (Gram factor vs. the SoS map on B)
    Phi = f.transform(Xt)
    np.testing.assert_allclose(
        model.evaluate_at_features(Phi),
        F,
        atol=1e-10 * np.abs(B).max() * max(1.0, np.abs(Phi).max()) ** 2 * N,
    )


def test_psd_model_min_eigenvalue_on_1e4_inputs(rng):
    """Acceptance: min eigenvalue >= -1e-10 * scale on 10^4 random inputs."""
    X = rng.uniform(-1, 1, size=(15, 2))
    d = 3
    f = ExactFeatures("gaussian", 0.3).fit(X)
    N = 15 * d
    B = rand_psd(rng, N, rank=2)  # rank 2 < d: every output is singular, min eig 0 exactly
    model = PSDModel(f, B, d)
    Xt = rng.uniform(-1.5, 1.5, size=(10_000, 2))
    F = model(Xt)
    scale = np.abs(F).max()
    mins = model.min_eigenvalue(Xt)
    assert mins.shape == (10_000,)
    assert mins.min() >= -1e-10 * scale
    np.testing.assert_allclose(mins, np.linalg.eigvalsh(F)[:, 0])
    # F(x) has rank <= 2 < d = 3, so the check sits right at the boundary of the cone
    assert np.abs(mins).max() <= 1e-10 * scale


def test_psd_model_linear_in_B(rng):
    """Proposition 1: F_{aB + bC} = a F_B + b F_C."""
    X = rng.uniform(-1, 1, size=(6, 1))
    f = ExactFeatures("exponential", 0.5).fit(X)
    B, C = rand_psd(rng, 12), rand_psd(rng, 12)
    Xt = rng.uniform(-1, 1, size=(30, 1))
    lhs = PSDModel(f, 2.0 * B + 0.5 * C, 2)(Xt)
    rhs = 2.0 * PSDModel(f, B, 2)(Xt) + 0.5 * PSDModel(f, C, 2)(Xt)
    np.testing.assert_allclose(lhs, rhs, atol=1e-10 * np.abs(rhs).max())
    # against the kron reference
    np.testing.assert_allclose(
        PSDModel(f, B, 2)(Xt), evaluate_ref(f.transform(Xt), B, 2), atol=1e-10 * np.abs(B).max()
    )


def test_psd_model_clips_tiny_negative_eigenvalues(rng):
    X = rng.uniform(-1, 1, size=(5, 2))
    f = ExactFeatures("gaussian", 0.5).fit(X)
    N = 10
    U, _ = np.linalg.qr(rng.standard_normal((N, N)))
    w = np.concatenate([[-1e-13, -5e-14], rng.uniform(0.1, 1.0, N - 2)])
    B = (U * w) @ U.T
    model = PSDModel(f, B, 2)
    assert np.linalg.eigvalsh(model.B)[0] >= -1e-15
    np.testing.assert_allclose(model.B, proj_psd_ref(B), atol=1e-14)
    np.testing.assert_allclose(model.B, B, atol=1e-12)
    assert model.trace == pytest.approx(np.trace(model.B))
    Xt = rng.uniform(-2, 2, size=(500, 2))
    assert model.min_eigenvalue(Xt).min() >= -1e-14


def test_project_psd_is_nearest_psd(rng):
    A = rng.standard_normal((6, 6))
    P = project_psd(A)
    np.testing.assert_allclose(P, proj_psd_ref(A), atol=1e-12)
    assert np.linalg.eigvalsh(P)[0] >= -1e-12
    # no PSD matrix is closer (check against random PSD candidates)
    dist = np.linalg.norm(P - sym(A))
    for _ in range(20):
        Q = rand_psd(rng, 6, rank=3, scale=0.3)
        assert np.linalg.norm(Q - sym(A)) >= dist - 1e-12


def test_psd_model_rejects_indefinite_B(rng):
    """Only round-off-level negative eigenvalues are clipped; a real one is bad input."""
    f = ExactFeatures("gaussian", 0.5).fit(rng.uniform(-1, 1, size=(4, 1)))
    B = rand_psd(rng, 8)
    w, U = np.linalg.eigh(B)
    w[0] = -1e-3 * w[-1]  # small but far above round-off
    with pytest.raises(ValueError, match="B must be positive semi-definite"):
        PSDModel(f, (U * w) @ U.T, 2)
    with pytest.raises(ValueError, match="B must be positive semi-definite"):
        PSDModel(f, B - 30.0 * np.eye(8), 2)


def test_psd_model_rejects_non_symmetric_B(rng):
    f = ExactFeatures("gaussian", 0.5).fit(rng.uniform(-1, 1, size=(4, 1)))
    B = rand_psd(rng, 4)
    Bn = B.copy()
    Bn[0, 1] += 1e-3 * np.abs(B).max()
    with pytest.raises(ValueError, match="symmetric"):
        PSDModel(f, Bn, 1)
    # round-off asymmetry is accepted and removed
    Bn = B.copy()
    Bn[0, 1] += 1e-14 * np.abs(B).max()
    model = PSDModel(f, Bn, 1)
    np.testing.assert_allclose(model.B, B, atol=1e-13 * np.abs(B).max())
    np.testing.assert_allclose(model.B, model.B.T, atol=1e-15 * np.abs(B).max())


@pytest.mark.parametrize("d", [0, -1, 1.5, True, "2", None])
def test_psd_model_rejects_bad_d(rng, d):
    f = ExactFeatures("gaussian", 0.5).fit(rng.uniform(-1, 1, size=(4, 1)))
    with pytest.raises(ValueError, match="d must be a positive integer"):
        PSDModel(f, np.eye(4), d)


def test_psd_model_errors(rng):
    X = rng.uniform(-1, 1, size=(4, 2))
    f = ExactFeatures("gaussian", 0.5).fit(X)
    with pytest.raises(ValueError, match=r"B must have shape \(8, 8\)"):
        PSDModel(f, np.eye(4), 2)
    B = np.eye(8)
    B[1, 1] = np.nan
    with pytest.raises(ValueError, match="B contains NaN"):
        PSDModel(f, B, 2)
    with pytest.raises(ValueError, match="not fitted"):
        PSDModel(ExactFeatures("gaussian", 0.5), np.eye(4), 1)
    model = PSDModel(f, np.eye(8), 2)
    with pytest.raises(ValueError, match="X has 3 features"):
        model(np.ones((2, 3)))
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        model(np.ones(2))
    with pytest.raises(ValueError, match="X contains NaN"):
        model(np.full((2, 2), np.nan))


# ---------------------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["exact", "nystrom"])
@pytest.mark.parametrize("suffix", ["", ".npz"])
def test_psd_model_save_load_round_trip(rng, tmp_path, kind, suffix):
    X = rng.uniform(-1, 1, size=(9, 2))
    f = _fitted_features(kind, X)
    d = 2
    model = PSDModel(f, rand_psd(rng, f.n_components * d), d)
    path = tmp_path / f"model{suffix}"
    model.save(path)
    assert (tmp_path / "model.npz").exists()
    # a plain npz: readable without pickle, every member a numeric array
    with np.load(tmp_path / "model.npz", allow_pickle=False) as data:
        assert all(data[k].dtype != object for k in data.files)
        np.testing.assert_array_equal(data["B"], model.B)
    with zipfile.ZipFile(tmp_path / "model.npz") as zf:
        assert all(name.endswith(".npy") for name in zf.namelist())
    Xt = rng.uniform(-2, 2, size=(200, 2))
    for loaded in (PSDModel.load(path), psdsos.load(path), psdsos.load(tmp_path / "model.npz")):
        assert isinstance(loaded, PSDModel)
        assert type(loaded.features) is type(f)
        assert loaded.d == d
        np.testing.assert_array_equal(loaded.features.anchors_, f.anchors_)
        np.testing.assert_allclose(loaded.B, model.B, rtol=0, atol=1e-13 * np.abs(model.B).max())
        np.testing.assert_allclose(
            loaded(Xt), model(Xt), rtol=0, atol=1e-12 * np.abs(model(Xt)).max()
        )


class _Evil:
    """Unpickling this object would create ``marker``: proves whether pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _meta_bytes(**meta):
    payload = {"library": "psdsos", "format_version": 1, **meta}
    return np.frombuffer(json.dumps(payload).encode("utf-8"), dtype=np.uint8)


def test_load_rejects_pickled_object_arrays(tmp_path):
    marker = tmp_path / "pwned"
    evil = np.empty(1, dtype=object)
    evil[0] = _Evil(marker)
    path = tmp_path / "evil.npz"
    np.savez(path, __meta__=_meta_bytes(type="PSDModel"), B=evil)  # object array: pickled
    for loader in (psdsos.load, PSDModel.load, load_npz):
        with pytest.raises(ValueError, match="cannot read psdsos model file"):
            loader(path)
    assert not marker.exists()
    # a raw pickle file is rejected too
    raw = tmp_path / "evil.pkl"
    with open(raw, "wb") as fh:
        pickle.dump(_Evil(marker), fh)
    with pytest.raises(ValueError, match="cannot read psdsos model file"):
        psdsos.load(raw)
    assert not marker.exists()


def test_load_rejects_foreign_files(rng, tmp_path):
    p = tmp_path / "plain.npz"
    np.savez(p, B=np.eye(2))
    with pytest.raises(ValueError, match="no metadata"):
        psdsos.load(p)
    p = tmp_path / "other.npz"
    np.savez(p, __meta__=np.frombuffer(b'{"library": "other"}', dtype=np.uint8))
    with pytest.raises(ValueError, match="not a psdsos model file"):
        psdsos.load(p)
    p = tmp_path / "unknown.npz"
    save_npz(p, {"B": np.eye(2)}, {"type": "Nonexistent"})
    with pytest.raises(ValueError, match="unknown model type"):
        psdsos.load(p)
    with pytest.raises(ValueError, match="does not hold a PSDModel"):
        PSDModel.load(p)
    p = tmp_path / "badfeat.npz"
    save_npz(p, {"B": np.eye(2)}, {"type": "PSDModel", "d": 1, "features": {"class": "os.system"}})
    with pytest.raises(ValueError, match="unknown feature class"):
        psdsos.load(p)
    with pytest.raises(FileNotFoundError, match="no psdsos model file"):
        psdsos.load(tmp_path / "missing.npz")
    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(ValueError, match="cannot read"):
        psdsos.load(text)
    assert os.path.exists(text)
