"""Signed-weight decoding on the compact output spaces: the sphere and the Fisher simplex
(manifold paper, eq. 2, eq. 17, section 4.4).

Independent references: brute-force grids (the positive orthant of S^2 in angles, its faces
and the simplex itself for k = 3; the whole of S^2), SLSQP from several starts, a
Riemannian gradient flow with the exponential map, non-negative least squares for the
first-order measure, finite differences for the gradient norm near a cut locus.  All the
objectives below are written out here (arccos^2 through the accurate arctan2 form).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize, nnls
from sklearn.exceptions import ConvergenceWarning

from psdsos.structured import FisherSimplexSpace, SELFEstimator, SphereSpace
from psdsos.structured.spaces.fisher import cone_projection_norm, project_orthant_cap


# ---------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------
def unit(A):
    A = np.asarray(A, dtype=float)
    return A / np.linalg.norm(A, axis=-1, keepdims=True)


def geo(Y, Z):
    """Geodesic distances between the rows of Y (m, k) and Z (n, k), shape (m, n)."""
    D = Y[:, None, :] - Z[None, :, :]
    S = Y[:, None, :] + Z[None, :, :]
    return 2.0 * np.arctan2(np.linalg.norm(D, axis=2), np.linalg.norm(S, axis=2))


def F_ref(Y, Z, w):
    return geo(np.atleast_2d(Y), Z) ** 2 @ w


def F_grid(Y, Z, w):
    """F on many grid points (arccos of the inner products: errors far below the grid's)."""
    return np.arccos(np.clip(Y @ Z.T, -1.0, 1.0)) ** 2 @ w


def grad_ref(y, Z, w):
    """Riemannian gradient -2 sum_i w_i Log_y(z_i), away from the cut loci."""
    th = geo(y[None], Z)[0]
    V = Z - (Z @ y)[:, None] * y
    nv = np.linalg.norm(V, axis=1)
    coef = np.where(nv > 0, th / np.where(nv > 0, nv, 1.0), 0.0)
    return -2.0 * (w * coef) @ V


def gradient_flow(Z, w, y, h=2e-3, steps=4000):
    """Explicit Euler on dy/dt = -grad F(y) with the exponential map."""
    for _ in range(steps):
        v = -h * grad_ref(y, Z, w)
        nv = np.linalg.norm(v)
        if nv < 1e-300:
            break
        y = unit(np.cos(nv) * y + np.sin(nv) * v / nv)
    return y


def orthant_grid(c, h):
    """Points of {z in S^2 : z >= c}: an angular grid of step h plus its three faces
    (z_j = c) at step h / 4 and the three vertices."""
    a = np.arange(0.0, np.pi / 2 + h / 2, h)
    A, B = np.meshgrid(a, a, indexing="ij")
    P = np.stack([np.cos(A), np.sin(A) * np.cos(B), np.sin(A) * np.sin(B)], -1).reshape(-1, 3)
    pts = [P[np.all(P >= c, axis=1)]]
    r = np.sqrt(1.0 - c * c)
    t = np.arange(0.0, np.pi / 2 + h / 8, h / 4)
    for j in range(3):
        o = [i for i in range(3) if i != j]
        Q = np.full((len(t), 3), c)
        Q[:, o[0]], Q[:, o[1]] = r * np.cos(t), r * np.sin(t)
        pts.append(Q[np.all(Q >= c, axis=1)])
    V = np.full((3, 3), c)
    V[np.arange(3), np.arange(3)] = np.sqrt(1.0 - 2.0 * c * c)
    pts.append(V)
    return np.concatenate(pts)


def simplex_grid(delta, step):
    """Histograms delta + (1 - 3 delta) g, g on the grid of step ``step`` of the 2-simplex."""
    m = int(round(1.0 / step))
    i, j = np.meshgrid(np.arange(m + 1), np.arange(m + 1), indexing="ij")
    keep = i + j <= m
    G = np.stack([i[keep], j[keep], m - i[keep] - j[keep]], axis=1) / m
    return delta + (1.0 - 3.0 * delta) * G


def fisher_case(seed, k=3, n=None, signed=True):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7)) if n is None else n
    H = rng.dirichlet(np.full(k, 0.5), size=n)
    a = rng.normal(size=n) if signed else rng.uniform(0, 1, n)
    return H, a


def in_fisher_space(P, sp):
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert P.min() >= sp.delta_ * (1.0 - 1e-12)


# ---------------------------------------------------------------------------------------
# Fisher simplex
# ---------------------------------------------------------------------------------------
def test_fisher_mixed_signs_decode_the_vertex():
    """decode([1.5, -0.5]) on e1, e2 of the 2-simplex: the minimizer over the simplex is
    (the floored) e1, objective -1.23 for these weights (-0.61 for w = alpha / ||alpha||_1);
    decoding on the whole sphere and folding back with z * z gave [0.51, 0.49, 0], at +0.59
    (+0.30)."""
    H = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    sp = FisherSimplexSpace().fit(H)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode([1.5, -0.5])
    in_fisher_space(P, sp)
    Zf = sp.sphere_.Y_train_
    assert F_ref(np.sqrt(P), Zf, np.array([1.5, -0.5]))[0] < -1.22
    vertex = np.array([[1.0 - 2.0 * sp.delta_, sp.delta_, sp.delta_]])
    assert sp.objective(P, [0.75, -0.25])[0] <= sp.objective(vertex, [0.75, -0.25])[0] + 1e-15
    np.testing.assert_allclose(P, vertex, rtol=0, atol=1e-12)
    assert sp.grad_norm_[0] <= sp.tol
    grid = orthant_grid(np.sqrt(sp.delta_), 2e-3)
    assert sp.objective(P, [0.75, -0.25])[0] <= F_grid(grid, Zf, np.array([0.75, -0.25])).min()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fisher_k3_signed_matches_fine_grids(seed):
    """k = 3, random signed weights: the decode's objective is at most the minimum over a
    fine angular grid of the orthant (with its faces and vertices) and over the simplex
    grid of step 1e-3, and within the grid's resolution of it."""
    H, a = fisher_case(seed)
    sp = FisherSimplexSpace().fit(H)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(a)
    in_fisher_space(P, sp)
    w = a / np.abs(a).sum()
    Zf = sp.sphere_.Y_train_
    F = F_ref(np.sqrt(P), Zf, w)[0]
    h = 1e-3
    g_orth = F_grid(orthant_grid(np.sqrt(sp.delta_), h), Zf, w).min()
    g_simp = F_grid(np.sqrt(simplex_grid(sp.delta_, 1e-3)), Zf, w).min()
    assert F <= min(g_orth, g_simp) + 1e-12
    # |dF| <= 2 sum_i |w_i| theta_i <= pi per unit of geodesic distance; the grid's covering
    # radius is below h
    assert F >= g_orth - np.pi * h


@given(st.integers(0, 2**31 - 1))
def test_fisher_k3_property_against_grid(seed_):
    H, a = fisher_case(seed_)
    sp = FisherSimplexSpace().fit(H)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", ConvergenceWarning)
        P = sp.decode(a)
    in_fisher_space(P, sp)
    assert bool(rec) == bool(np.any(sp.grad_norm_ > sp.tol))
    w = a / np.abs(a).sum()
    Zf = sp.sphere_.Y_train_
    h = 4e-3
    g = F_grid(orthant_grid(np.sqrt(sp.delta_), h), Zf, w).min()
    F = F_ref(np.sqrt(P), Zf, w)[0]
    assert F <= g + 1e-12 and F >= g - np.pi * h


@given(st.integers(0, 2**31 - 1), st.integers(2, 6), st.integers(1, 8),
       st.sampled_from(["normal", "negative_sum", "zero", "nonnegative"]))
def test_fisher_property_in_space_and_below_candidates(seed_, k, n, kind):
    """Any k, any signs: the decode is a histogram of Delta_delta, its objective is at most
    that of every (floored) training output and every vertex of Delta_delta, and the
    convergence warning is issued exactly when some first-order measure exceeds tol."""
    rng = np.random.default_rng(seed_)
    H = rng.dirichlet(np.full(k, 0.4), size=n)
    a = {"normal": rng.normal(size=(3, n)),
         "negative_sum": -np.abs(rng.normal(size=(3, n))) + 0.2,
         "zero": np.zeros((3, n)),
         "nonnegative": rng.uniform(0, 1, (3, n))}[kind]
    sp = FisherSimplexSpace().fit(H)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", ConvergenceWarning)
        P = sp.decode(a)
    in_fisher_space(P, sp)
    assert bool(rec) == bool(np.any(sp.grad_norm_ > sp.tol))
    l1 = np.abs(a).sum(axis=1, keepdims=True)
    W = np.where(l1 > 0, a / np.where(l1 > 0, l1, 1.0), 1.0 / n)
    Zf = sp.sphere_.Y_train_
    c = np.sqrt(sp.delta_)
    V = np.full((k, k), c)
    V[np.arange(k), np.arange(k)] = np.sqrt(1.0 - (k - 1) * c * c)
    for t in range(3):
        F = F_ref(np.sqrt(P[t]), Zf, W[t])[0]
        assert F <= F_ref(Zf, Zf, W[t]).min() + 1e-12
        assert F <= F_ref(V, Zf, W[t]).min() + 1e-12


def test_fisher_nonnegative_weights_unchanged_and_positive_option(rng):
    """Non-negative weights: the minimizer is inside, where the projection is the
    normalization retraction: the sphere decode of the square roots, mapped back.
    weights="positive" decodes alpha_+."""
    H = rng.dirichlet(np.ones(4), size=12)
    A = rng.uniform(0, 1, (5, 12))
    sp = FisherSimplexSpace(tol=1e-10).fit(H)
    z = SphereSpace(tol=1e-10).fit(np.sqrt(sp.floor(H))).decode(A)
    np.testing.assert_allclose(sp.decode(A), z * z, rtol=0, atol=1e-12)
    As = A - 0.3
    pos = FisherSimplexSpace(tol=1e-10, weights="positive").fit(H)
    np.testing.assert_allclose(pos.decode(As), sp.decode(np.maximum(As, 0)), rtol=0,
                               atol=1e-14)


def test_fisher_section_4_4_setting_against_slsqp():
    """SELF weights of the section 4.4 protocol (make_multilabel_classification, histograms
    of the label sets, a narrow kernel and small lam: every test point has mixed signs):
    every decode is in Delta_delta, certified (KKT measure <= tol, checked again by NNLS)
    and at least as good as SLSQP started from the decode, a random histogram and each
    vertex."""
    from sklearn.datasets import make_multilabel_classification

    X, L = make_multilabel_classification(n_samples=100, n_features=8, n_classes=4,
                                          n_labels=2, allow_unlabeled=False, random_state=0)
    Hh = L / L.sum(axis=1, keepdims=True)
    est = SELFEstimator(sigma=2.0, lam=1e-6, output="fisher_simplex").fit(X[:80], Hh[:80])
    A = est.scores(X[80:92])
    assert np.all(np.any(A < 0, axis=1))
    sp = est.output_space_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(A)
    in_fisher_space(P, sp)
    assert np.all(sp.grad_norm_ <= sp.tol)
    Zf, c, k = sp.sphere_.Y_train_, np.sqrt(sp.delta_), 4
    rng = np.random.default_rng(0)
    cons = {"type": "eq", "fun": lambda z: z @ z - 1.0, "jac": lambda z: 2.0 * z}
    W = A / np.abs(A).sum(axis=1, keepdims=True)
    on_boundary = 0
    for t in range(len(A)):
        w = W[t]
        F = F_ref(np.sqrt(P[t]), Zf, w)[0]
        z = np.sqrt(P[t])
        on_boundary += bool(np.any(P[t] <= sp.delta_ * (1 + 1e-9)))
        assert kkt_nnls(z, w, Zf, c) <= 1e-7
        V = np.full((k, k), c)
        V[np.arange(k), np.arange(k)] = np.sqrt(1 - (k - 1) * c * c)
        starts = [z, np.sqrt(rng.dirichlet(np.ones(k))), *V]
        for z0 in starts:
            r = minimize(lambda v, w=w: (F_ref(v, Zf, w)[0], grad_ref(unit(v), Zf, w)), z0,
                         jac=True, method="SLSQP", bounds=[(c, 1.0)] * k, constraints=[cons],
                         options={"ftol": 1e-15, "maxiter": 300})
            zr = unit(np.maximum(r.x, c))
            assert F <= F_ref(zr, Zf, w)[0] + 1e-9
    assert on_boundary >= 1  # the constrained case is exercised


def kkt_nnls(z, w, Zf, c):
    """min_{nu >= 0} ||grad F - P_T sum_{j active} nu_j e_j|| by scipy's NNLS."""
    g = grad_ref(z, Zf, w)
    act = np.flatnonzero(z <= c * (1 + 1e-9))
    if not act.size:
        return float(np.linalg.norm(g))
    E = np.eye(len(z))[:, act]
    PE = E - np.outer(z, z @ E)
    return float(nnls(PE, g)[1])


def test_cone_projection_norm_matches_nnls(rng):
    k, c = 6, 0.05
    for trial in range(40):
        n_act = trial % 4
        z = np.full(k, c)
        while z[n_act:].min() <= c:  # free coordinates strictly inside
            z[n_act:] = np.sqrt(1 - n_act * c * c) * unit(np.abs(rng.normal(size=k - n_act)))
        u = rng.normal(size=k)
        u -= (u @ z) * z
        E = np.eye(k)[:, :n_act]
        PE = E - np.outer(z, z @ E)
        ref = nnls(PE, -u)[1] if n_act else np.linalg.norm(u)
        got = cone_projection_norm(z[None], u[None], c)[0]
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-12)


def cap_brute_force(v, c):
    """Nearest point of {x in S^{k-1} : x >= c} to v by enumerating the faces: on the face
    with active set A (x_A = c) the best free part is r v_F / ||v_F||, r^2 = 1 - |A| c^2; the
    maximizer of <x, v> lies in the relative interior of some face."""
    k = len(v)
    best, arg = -np.inf, None
    for mask in range(2**k - 1):  # at least one free coordinate
        A = np.array([(mask >> j) & 1 for j in range(k)], dtype=bool)
        r = np.sqrt(1.0 - A.sum() * c * c)
        nv = np.linalg.norm(v[~A])
        if nv == 0:
            continue
        x = np.full(k, c)
        x[~A] = r * v[~A] / nv
        if np.all(x[~A] >= c) and x @ v > best:
            best, arg = x @ v, x
    return arg


def test_project_orthant_cap_is_the_nearest_point(rng):
    k, c = 5, 0.1
    V = rng.normal(size=(30, k))
    V[:10] = np.abs(V[:10])
    V[np.arange(30), rng.integers(0, k, 30)] = rng.uniform(0.01, 1.0, 30)  # some v_j > 0
    X = project_orthant_cap(V, c)
    assert np.all(X >= c * (1 - 1e-15))
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=0, atol=1e-15)
    for v, x in zip(V, X, strict=True):
        np.testing.assert_allclose(x, cap_brute_force(v, c), rtol=0, atol=1e-14)
    np.testing.assert_allclose(project_orthant_cap(X, c), X, rtol=0, atol=1e-15)  # idempotent
    inside = unit(np.abs(rng.normal(size=(5, k))) + 1.0)
    np.testing.assert_allclose(project_orthant_cap(3.0 * inside, c), inside, atol=1e-15)
    assert np.all(np.isnan(project_orthant_cap(-np.ones((1, k)), c)))


def test_fisher_stationarity_api(rng):
    H, a = fisher_case(5, k=4, n=6)
    sp = FisherSimplexSpace().fit(H)
    P = sp.decode(a)
    w = a / np.abs(a).sum()
    np.testing.assert_allclose(sp.stationarity(P, w), sp.grad_norm_, rtol=1e-6, atol=1e-12)
    assert kkt_nnls(np.sqrt(P[0]), w, sp.sphere_.Y_train_, np.sqrt(sp.delta_)) <= 1e-7
    with pytest.raises(ValueError, match="y must be histograms"):
        sp.objective([[0.5, 0.5]], w)


# ---------------------------------------------------------------------------------------
# sphere
# ---------------------------------------------------------------------------------------
def rand_sphere(rng, n, k):
    return unit(rng.normal(size=(n, k)))


@pytest.mark.parametrize("rho", [5e-8, 1e-10])
def test_sphere_reports_the_true_gradient_norm_near_an_antipode(rho, rng):
    """Within 1e-7 of the antipode of a negative-weight output the measure used to drop
    that term and report max(0, ||grad smooth|| - 2 pi |w_i|) (0 here) at a point where F
    still decreases; it is the true Riemannian gradient norm (finite differences)."""
    Z = rand_sphere(rng, 5, 3)
    w = np.array([-0.3, 0.2, 0.2, 0.15, 0.15])
    sp = SphereSpace().fit(Z)
    t = unit(np.cross(Z[0], rng.normal(size=3)))
    y = unit(np.cos(rho) * -Z[0] + np.sin(rho) * t)  # at distance rho from -z_0
    h = rho * 1e-2
    B = np.linalg.svd(np.eye(3) - np.outer(y, y))[0][:, :2]
    fd = np.array([(F_ref(unit(np.cos(h) * y + np.sin(h) * b), Z, w)[0]
                    - F_ref(unit(np.cos(h) * y - np.sin(h) * b), Z, w)[0]) / (2 * h)
                   for b in B.T])
    true = np.linalg.norm(fd)
    # the former measure max(0, ||grad smooth|| - 2 pi |w_0|) was 0 here
    assert np.linalg.norm(grad_ref(y, Z[1:], w[1:])) < 2 * np.pi * 0.3
    assert true > 0.1
    assert sp.stationarity(y, w)[0] == pytest.approx(true, rel=1e-3)
    np.testing.assert_allclose(np.linalg.norm(sp.riemannian_gradient(y, w)[0]), true,
                               rtol=1e-3)


def test_sphere_minimizer_at_a_cone_point_is_reached_exactly(rng):
    """Outputs clustered around -z_0 with positive weights and z_0 with a negative one:
    the minimizer is the cone point -z_0 (||grad smooth|| < 2 pi |w_0|).  RGD approaches
    it; the decode is -z_0 exactly (F not above F(-z_0): stopping 1e-7 away left F about
    1e-6 higher with a reported measure of 0), the measure 0 is the subgradient condition,
    and no nearby point is lower."""
    z0 = unit(rng.normal(size=3))
    Z = np.vstack([z0, unit(-z0 + 0.3 * rng.normal(size=(4, 3)))])
    alpha = np.array([-0.5, 0.4, 0.3, 0.2, 0.1])
    sp = SphereSpace().fit(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(alpha)
    w = alpha / np.abs(alpha).sum()
    np.testing.assert_array_equal(P[0], -sp.Y_train_[0])
    assert sp.grad_norm_[0] == 0.0
    g_smooth = grad_ref(P[0], Z[1:], w[1:])
    assert np.linalg.norm(g_smooth) < 2 * np.pi * abs(w[0])  # 0 in the subdifferential
    F0 = F_ref(P[0], Z, w)[0]
    for r in (1e-9, 1e-6, 1e-3):
        T = rng.normal(size=(50, 3))
        T -= (T @ P[0])[:, None] * P[0]
        Q = np.cos(r) * P[0] + np.sin(r) * unit(T)
        assert F_ref(Q, Z, w).min() >= F0


@given(st.integers(0, 2**31 - 1), st.integers(2, 5), st.integers(1, 8),
       st.sampled_from(["normal", "negative_sum", "zero", "nonnegative"]))
def test_sphere_property_in_space_and_below_candidates(seed_, k, n, kind):
    """Unit rows; the objective at most that of every training output and every antipode
    (candidate starts); the warning exactly when a measure exceeds tol."""
    rng = np.random.default_rng(seed_)
    Z = rand_sphere(rng, n, k)
    a = {"normal": rng.normal(size=(3, n)),
         "negative_sum": -np.abs(rng.normal(size=(3, n))) + 0.2,
         "zero": np.zeros((3, n)),
         "nonnegative": rng.uniform(0, 1, (3, n))}[kind]
    sp = SphereSpace().fit(Z)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", ConvergenceWarning)
        P = sp.decode(a)
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, rtol=0, atol=1e-14)
    assert bool(rec) == bool(np.any(sp.grad_norm_ > sp.tol))
    l1 = np.abs(a).sum(axis=1, keepdims=True)
    W = np.where(l1 > 0, a / np.where(l1 > 0, l1, 1.0), 1.0 / n)
    for t in range(3):
        F = F_ref(P[t], Z, W[t])[0]
        cand = F_ref(Z, Z, W[t]).min()
        if np.any(W[t] < 0):
            cand = min(cand, F_ref(-Z, Z, W[t]).min())
        assert F <= cand + 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sphere_signed_global_minimum_on_s2_grid(seed):
    """S^2, random signed weights: the decode is at most the minimum over a grid of step
    3e-3 rad (a global reference for this non-convex F) and within its resolution."""
    rng = np.random.default_rng(seed)
    Z = rand_sphere(rng, 6, 3)
    a = rng.normal(size=6)
    sp = SphereSpace().fit(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode(a)
    w = a / np.abs(a).sum()
    h = 3e-3
    t = np.arange(0.0, np.pi + h / 2, h)
    p = np.arange(0.0, 2 * np.pi, h)
    A, B = np.meshgrid(t, p, indexing="ij")
    G = np.stack([np.cos(A), np.sin(A) * np.cos(B), np.sin(A) * np.sin(B)], -1).reshape(-1, 3)
    g = (np.arccos(np.clip(G @ Z.T, -1, 1)) ** 2 @ w).min()
    F = F_ref(P[0], Z, w)[0]
    assert F <= g + 1e-12 and F >= g - 2 * np.pi * h


def test_sphere_self_weights_beat_a_gradient_flow(rng):
    """Held-out SELF weights (narrow kernel, small lam: mixed signs, and ||alpha||_1 >
    4 sum(alpha), where the positive part used to replace them): the decode's signed
    objective is at most that of a Riemannian gradient flow on the same weights, started
    from the signed and the positive-part extrinsic means."""
    X = rng.uniform(-1, 1, size=(60, 2))
    th = np.c_[2.0 * X[:, 0] + X[:, 1], X[:, 1] - X[:, 0]]
    Y = unit(np.c_[np.cos(th[:, 0]) * np.cos(th[:, 1]), np.sin(th[:, 0]) * np.cos(th[:, 1]),
                   np.sin(th[:, 1])])
    Xt = rng.uniform(-1.2, 1.2, size=(12, 2))
    est = SELFEstimator(sigma=0.15, lam=1e-6, output="sphere").fit(X, Y)
    A = est.scores(Xt)
    assert np.sum(np.abs(A).sum(axis=1) > 4 * A.sum(axis=1)) >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = est.predict(Xt)
    W = A / np.abs(A).sum(axis=1, keepdims=True)
    for t in range(len(A)):
        F = F_ref(P[t], Y, W[t])[0]
        for m in (W[t] @ Y, np.maximum(W[t], 0) @ Y):
            yf = gradient_flow(Y, W[t], unit(m), h=0.02, steps=1500)
            assert F <= F_ref(yf, Y, W[t])[0] + 1e-10


def test_sphere_weights_options(rng):
    Z = rand_sphere(rng, 6, 3)
    a = rng.normal(size=(2, 6))
    pos = SphereSpace(weights="positive").fit(Z)
    np.testing.assert_allclose(pos.decode(a), SphereSpace().fit(Z).decode(np.maximum(a, 0)),
                               rtol=0, atol=1e-12)
    # scaling alpha by a positive number does not change the decode (the weights differ by
    # rounding: the same point up to tol / curvature)
    sp = SphereSpace().fit(Z)
    np.testing.assert_allclose(sp.decode(1e-7 * a), sp.decode(a), rtol=0, atol=1e-7)
    # alpha = 0: every point is a minimizer; the Frechet mean of the outputs is returned
    np.testing.assert_allclose(sp.decode(np.zeros(6)), sp.decode(np.ones(6)), atol=1e-15)


def test_zero_dimensional_sphere_and_two_bin_histograms():
    """S^0 = {-1, 1} has no tangent space: the decode is the better of the two points; the
    two-bin simplex is a quarter circle, decoded like any other."""
    sp = SphereSpace().fit([[1.0], [-1.0], [1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = sp.decode([[1.0, 0.5, 0.0], [0.2, 1.0, -0.5], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(P, [[1.0], [-1.0], [1.0]])
    assert np.all(sp.grad_norm_ == 0)
    fs = FisherSimplexSpace().fit([[1.0, 0.0], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = fs.decode([[1.0, -3.0], [0.0, 0.0]])
    in_fisher_space(P, fs)
    np.testing.assert_allclose(P, [[1 - fs.delta_, fs.delta_], [0.5, 0.5]], rtol=0, atol=1e-12)


def test_circle_decode_finds_the_global_minimum_between_near_tied_basins():
    """Signed weights on the circle with two local minima 0.7% apart (measured): the decode
    is the global minimum of eq. 2 (brute force on 200,000 angles), not the other basin."""
    from psdsos import SELFEstimator

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 1.0, 30))
    th = 2 * np.pi * x + 0.5 * rng.standard_normal(30)
    Y = np.c_[np.cos(th), np.sin(th)]
    m = SELFEstimator(sigma=0.15, lam=1e-4, output="sphere").fit(x[:, None], Y)
    x0 = np.r_[67 / 200, np.linspace(0.3, 0.4, 11)][:, None]
    A = m.scores(x0)
    P = m.predict(x0)
    phi = np.linspace(0, 2 * np.pi, 200_000, endpoint=False)
    G = np.c_[np.cos(phi), np.sin(phi)]
    D = np.arccos(np.clip(G @ Y.T, -1, 1)) ** 2  # (grid, n)
    for a, y in zip(A, P, strict=True):
        f = float(np.arccos(np.clip(Y @ y, -1, 1)) ** 2 @ a)
        fmin = float((D @ a).min())
        # the grid's own resolution: |F'| <= 2 pi sum|a| per radian, step 3e-5
        assert f <= fmin + 1e-4 * np.abs(a).sum() * 3.2e-5 * 2 * np.pi + 1e-12
