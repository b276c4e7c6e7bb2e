"""Tests for psdsos.geometry: axioms, closed forms, rank-deficient cases, batching, errors."""

import ast
import doctest
import importlib
import pathlib

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

from psdsos.geometry import (
    affine_invariant_distance,
    bures_wasserstein_distance,
    bures_wasserstein_distance_squared,
    bures_wasserstein_geodesic,
    check_psd,
    check_spd,
    expm_sym,
    invsqrtm_spd,
    log_euclidean_distance,
    logm_spd,
    powm_spd,
    spd_exp,
    spd_log,
    sphere_distance,
    sphere_exp,
    sphere_log,
    sqrtm_psd,
    sym,
)

SEEDS = st.integers(0, 2**32 - 1)
PROPERTY = settings(max_examples=40, deadline=None)


def random_spd(rng, d, batch=()):
    G = rng.standard_normal(batch + (d, d))
    return G @ np.swapaxes(G, -1, -2) / d + 0.1 * np.eye(d)


def random_psd(rng, d, rank, batch=()):
    G = rng.standard_normal(batch + (d, rank))
    return G @ np.swapaxes(G, -1, -2)


def random_sym(rng, d, batch=()):
    G = rng.standard_normal(batch + (d, d))
    return 0.5 * (G + np.swapaxes(G, -1, -2))


def random_sphere(rng, k, batch=()):
    x = rng.standard_normal(batch + (k,))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def bw2_trace_formula(A, B):
    """Reference: Tr A + Tr B - 2 Tr (A^1/2 B A^1/2)^1/2 with scipy's sqrtm (PD inputs)."""
    rA = np.real(sla.sqrtm(A))
    return np.trace(A) + np.trace(B) - 2 * np.trace(np.real(sla.sqrtm(rA @ B @ rA)))


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


# ------------------------------------------------------------------------------------
# matrix functions
# ------------------------------------------------------------------------------------


class TestMatrixFunctions:
    def test_sym(self, rng):
        A = rng.standard_normal((4, 3, 3))
        S = sym(A)
        assert np.array_equal(S, np.swapaxes(S, -1, -2))
        assert np.allclose(S, 0.5 * (A + np.swapaxes(A, -1, -2)))

    def test_sqrtm_psd_full_and_rank_deficient(self, rng):
        for rank in [4, 2, 1, 0]:
            A = random_psd(rng, 4, rank)
            R = sqrtm_psd(A)
            assert np.allclose(R @ R, A, atol=1e-12)
            assert np.allclose(R, R.T)
            assert np.linalg.eigvalsh(R).min() >= -1e-12
            assert np.linalg.matrix_rank(R, tol=1e-8) == rank

    def test_sqrtm_matches_scipy(self, rng):
        A = random_spd(rng, 5)
        assert np.allclose(sqrtm_psd(A), np.real(sla.sqrtm(A)), atol=1e-12)

    def test_sqrtm_clips_rounding_negative_eigenvalues(self):
        A = np.diag([1.0, -1e-14])
        assert np.array_equal(sqrtm_psd(A), np.diag([1.0, 0.0]))

    def test_powers_logs_exps(self, rng):
        A = random_spd(rng, 4)
        assert np.allclose(powm_spd(A, 0.5), sqrtm_psd(A))
        assert np.allclose(powm_spd(A, -1.0), np.linalg.inv(A))
        assert np.allclose(powm_spd(A, 0.3) @ powm_spd(A, 0.7), A)
        assert np.allclose(invsqrtm_spd(A) @ A @ invsqrtm_spd(A), np.eye(4), atol=1e-12)
        assert np.allclose(expm_sym(logm_spd(A)), A)
        S = random_sym(rng, 4)
        assert np.allclose(logm_spd(expm_sym(S)), S)
        assert np.allclose(expm_sym(S), sla.expm(S))
        assert np.allclose(logm_spd(A), np.real(sla.logm(A)))

    def test_batched_equals_loop(self, rng):
        A = random_spd(rng, 3, (2, 5))
        S = random_sym(rng, 3, (2, 5))
        for f, X in [
            (sqrtm_psd, A),
            (logm_spd, A),
            (invsqrtm_spd, A),
            (expm_sym, S),
            (lambda M: powm_spd(M, 1.7), A),
        ]:
            batched = f(X)
            assert batched.shape == (2, 5, 3, 3)
            for i in range(2):
                for j in range(5):
                    assert np.allclose(batched[i, j], f(X[i, j]), rtol=1e-13, atol=1e-13)

    def test_one_by_one(self):
        assert np.allclose(sqrtm_psd([[4.0]]), [[2.0]])
        assert np.allclose(logm_spd([[np.e]]), [[1.0]])
        assert np.allclose(powm_spd([[8.0]], 1 / 3), [[2.0]])

    def test_errors(self):
        with pytest.raises(ValueError, match="A must be positive semi-definite"):
            sqrtm_psd(np.diag([1.0, -0.1]))
        with pytest.raises(ValueError, match="A must be symmetric positive definite"):
            logm_spd(np.diag([1.0, 0.0]))
        with pytest.raises(ValueError, match="p must be"):
            powm_spd(np.eye(2), np.nan)
        with pytest.raises(ValueError, match="S must be symmetric"):
            expm_sym([[0.0, 1.0], [0.0, 0.0]])
        with pytest.raises(ValueError, match="overflows"):
            expm_sym(np.diag([1e3, 0.0]))
        with pytest.raises(ValueError, match="overflows"):
            powm_spd(np.diag([1e-200, 1e-200]), -2.0)


# ------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------


class TestChecks:
    @pytest.mark.parametrize(
        "bad, match",
        [
            (np.ones(3), "square matrix"),
            (np.ones((2, 3)), "square matrix"),
            (np.zeros((0, 0)), "square matrix"),
            (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN or infinite"),
            (np.array([[1.0, np.inf], [np.inf, 1.0]]), "NaN or infinite"),
            (np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
            (np.diag([1.0, -1e-3]), "positive semi-definite"),
            (np.eye(2) * 1j, "real"),
            ("abc", "numeric"),
        ],
    )
    def test_check_psd_rejects(self, bad, match):
        with pytest.raises(ValueError, match=match) as info:
            check_psd(bad, "Sigma")
        assert "Sigma" in str(info.value)

    def test_check_psd_accepts_and_symmetrizes(self):
        A = np.array([[1.0, 1.0 + 1e-12], [1.0, 1.0]])
        S = check_psd(A, "A")
        assert np.array_equal(S, S.T)
        assert check_psd(np.zeros((3, 3))).shape == (3, 3)
        assert check_psd(np.diag([1.0, -1e-12])).shape == (2, 2)  # rounding is tolerated
        with pytest.raises(ValueError, match="positive semi-definite"):
            check_psd(np.diag([1.0, -1e-12]), tol=0.0)

    def test_check_psd_batch_reports_offender(self, rng):
        A = random_spd(rng, 3, (4,))
        A[2] = np.diag([1.0, 2.0, -1.0])
        with pytest.raises(ValueError, match="-1"):
            check_psd(A, "M")

    def test_check_spd(self):
        assert check_spd(np.eye(2), "X").shape == (2, 2)
        for bad in [
            np.diag([1.0, 0.0]),
            np.zeros((2, 2)),
            np.diag([1.0, 1e-14]),
            np.diag([1.0, -1.0]),
        ]:
            with pytest.raises(ValueError, match="X must be symmetric positive definite"):
                check_spd(bad, "X")
        assert check_spd(np.diag([1.0, 1e-14]), "X", tol=1e-15).shape == (2, 2)
        with pytest.raises(ValueError, match="tol"):
            check_spd(np.eye(2), "X", tol=-1.0)


# ------------------------------------------------------------------------------------
# Bures-Wasserstein distance
# ------------------------------------------------------------------------------------


class TestBuresWassersteinDistance:
    def test_commuting_closed_form(self, rng):
        a, b = rng.uniform(0, 3, 4), rng.uniform(0, 3, 4)
        b[1] = 0.0  # rank-deficient
        expected = np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
        assert np.isclose(bures_wasserstein_distance_squared(np.diag(a), np.diag(b)), expected)
        assert np.isclose(bures_wasserstein_distance(np.diag(a), np.diag(b)), np.sqrt(expected))

    def test_one_by_one(self):
        assert np.isclose(bures_wasserstein_distance([[4.0]], [[9.0]]), 1.0)
        assert np.isclose(bures_wasserstein_distance([[0.0]], [[9.0]]), 3.0)

    def test_trace_formula(self, rng):
        for _ in range(5):
            A, B = random_spd(rng, 4), random_spd(rng, 4)
            assert np.isclose(bures_wasserstein_distance_squared(A, B), bw2_trace_formula(A, B))
            assert np.isclose(
                bures_wasserstein_distance(A, B) ** 2, bures_wasserstein_distance_squared(A, B)
            )

    def test_rank_one_closed_form(self, rng):
        u, v = rng.standard_normal(3), rng.standard_normal(3)
        expected = u @ u + v @ v - 2 * abs(u @ v)
        d2 = bures_wasserstein_distance_squared(np.outer(u, u), np.outer(v, v))
        assert np.isclose(d2, expected)

    def test_zero_on_diagonal(self, rng):
        for rank in [3, 2, 1, 0]:
            A = random_psd(rng, 3, rank)
            assert bures_wasserstein_distance(A, A) < 1e-12
        A = random_spd(rng, 3)
        assert bures_wasserstein_distance(A, A + 1e-10 * np.eye(3)) > 0

    def test_returns_python_float_and_batched_shapes(self, rng):
        A, B = random_spd(rng, 2), random_spd(rng, 2)
        assert isinstance(bures_wasserstein_distance(A, B), float)
        Ab, Bb = random_spd(rng, 2, (3, 4)), random_spd(rng, 2, (4,))
        D = bures_wasserstein_distance(Ab, Bb)
        assert D.shape == (3, 4)
        for i in range(3):
            for j in range(4):
                assert np.isclose(D[i, j], bures_wasserstein_distance(Ab[i, j], Bb[j]))
        assert bures_wasserstein_distance_squared(Ab, B).shape == (3, 4)

    def test_errors(self, rng):
        A = random_spd(rng, 2)
        with pytest.raises(ValueError, match="B must be positive semi-definite"):
            bures_wasserstein_distance(A, np.diag([1.0, -1.0]))
        with pytest.raises(ValueError, match="A must be symmetric"):
            bures_wasserstein_distance(A + np.triu(np.ones((2, 2)), 1), A)
        with pytest.raises(ValueError, match="same matrix size"):
            bures_wasserstein_distance(A, np.eye(3))
        with pytest.raises(ValueError, match="do not broadcast"):
            bures_wasserstein_distance(random_spd(rng, 2, (3,)), random_spd(rng, 2, (4,)))

    @PROPERTY
    @given(seed=SEEDS, d=st.integers(1, 4), ranks=st.tuples(*[st.integers(0, 4)] * 3))
    def test_metric_axioms(self, seed, d, ranks):
        rng = np.random.default_rng(seed)
        A, B, C = (random_psd(rng, d, min(r, d)) for r in ranks)
        dAB = bures_wasserstein_distance(A, B)
        assert dAB >= 0
        assert np.isclose(dAB, bures_wasserstein_distance(B, A), rtol=1e-9, atol=1e-12)
        tol = 1e-9 * (1 + dAB)
        assert bures_wasserstein_distance(A, C) <= dAB + bures_wasserstein_distance(B, C) + tol


# ------------------------------------------------------------------------------------
# Bures-Wasserstein geodesic
# ------------------------------------------------------------------------------------


def _constant_speed_error(A, B, ts):
    G = bures_wasserstein_geodesic(A, B, ts)
    D = bures_wasserstein_distance(A, B)
    pair = bures_wasserstein_distance(G[:, None], G[None, :])
    return np.abs(pair - np.abs(ts[:, None] - ts[None, :]) * D).max(), G


class TestBuresWassersteinGeodesic:
    @pytest.mark.parametrize("ranks", [(3, 3), (1, 1), (1, 3), (3, 2), (2, 1), (0, 3)])
    def test_endpoints_and_constant_speed(self, rng, ranks):
        A, B = random_psd(rng, 3, ranks[0]), random_psd(rng, 3, ranks[1])
        ts = np.linspace(0, 1, 9)
        err, G = _constant_speed_error(A, B, ts)
        assert err < 1e-9
        assert np.allclose(G[0], A, atol=1e-12) and np.allclose(G[-1], B, atol=1e-12)
        assert np.all(np.linalg.eigvalsh(G)[..., 0] >= -1e-12)
        assert np.array_equal(G, np.swapaxes(G, -1, -2))

    def test_rank_one_endpoints_give_rank_one_curve(self, rng):
        u, v = rng.standard_normal(2), rng.standard_normal(2)
        ts = np.linspace(0, 1, 12)
        G = bures_wasserstein_geodesic(np.outer(u, u), np.outer(v, v), ts)
        x = (1 - ts)[:, None] * u + ts[:, None] * np.sign(u @ v) * v
        assert np.allclose(G, x[:, :, None] * x[:, None, :], atol=1e-12)
        assert np.all(np.abs(np.linalg.eigvalsh(G)[:, 0]) < 1e-12)

    def test_transport_map_form_when_A_is_PD(self, rng):
        A, B = random_spd(rng, 4), random_psd(rng, 4, 2)
        rA, irA = sqrtm_psd(A), invsqrtm_spd(A)
        T = irA @ sqrtm_psd(rA @ B @ rA) @ irA
        for t in [0.0, 0.2, 0.5, 0.9, 1.0]:
            L = (1 - t) * np.eye(4) + t * T
            assert np.allclose(bures_wasserstein_geodesic(A, B, t), L @ A @ L, atol=1e-12)

    def test_commuting_closed_form(self, rng):
        a, b = rng.uniform(0, 2, 3), rng.uniform(0, 2, 3)
        G = bures_wasserstein_geodesic(np.diag(a), np.diag(b), 0.3)
        assert np.allclose(G, np.diag((0.7 * np.sqrt(a) + 0.3 * np.sqrt(b)) ** 2))

    def test_shapes_and_batching(self, rng):
        A, B = random_spd(rng, 2, (5,)), random_spd(rng, 2, (5,))
        assert bures_wasserstein_geodesic(A[0], B[0], 0.5).shape == (2, 2)
        assert bures_wasserstein_geodesic(A[0], B[0], [0.5]).shape == (1, 2, 2)
        ts = np.array([0.0, 0.25, 1.0])
        G = bures_wasserstein_geodesic(A, B, ts)
        assert G.shape == (3, 5, 2, 2)
        for k, t in enumerate(ts):
            for i in range(5):
                assert np.allclose(G[k, i], bures_wasserstein_geodesic(A[i], B[i], t))

    @pytest.mark.parametrize("t", [-0.1, 1.5, [0.5, np.nan], [[0.5]], "x"])
    def test_bad_times(self, rng, t):
        with pytest.raises(ValueError, match="t "):
            bures_wasserstein_geodesic(np.eye(2), 2 * np.eye(2), t)

    @PROPERTY
    @given(
        seed=SEEDS,
        d=st.integers(1, 4),
        rA=st.integers(0, 4),
        rB=st.integers(0, 4),
        s=st.floats(0, 1),
        t=st.floats(0, 1),
    )
    def test_constant_speed_property(self, seed, d, rA, rB, s, t):
        rng = np.random.default_rng(seed)
        A, B = random_psd(rng, d, min(rA, d)), random_psd(rng, d, min(rB, d))
        G = bures_wasserstein_geodesic(A, B, [s, t])
        D = bures_wasserstein_distance(A, B)
        assert abs(bures_wasserstein_distance(G[0], G[1]) - abs(t - s) * D) < 1e-8 * (1 + D)


# ------------------------------------------------------------------------------------
# affine-invariant and log-Euclidean geometries
# ------------------------------------------------------------------------------------


class TestAffineInvariant:
    def test_generalized_eigenvalue_formula(self, rng):
        A, B = random_spd(rng, 4), random_spd(rng, 4)
        lam = sla.eigh(B, A, eigvals_only=True)
        assert np.isclose(affine_invariant_distance(A, B), np.sqrt(np.sum(np.log(lam) ** 2)))

    def test_closed_forms(self, rng):
        a, b = rng.uniform(0.1, 3, 3), rng.uniform(0.1, 3, 3)
        expected = np.linalg.norm(np.log(a) - np.log(b))
        assert np.isclose(affine_invariant_distance(np.diag(a), np.diag(b)), expected)
        assert np.isclose(log_euclidean_distance(np.diag(a), np.diag(b)), expected)
        assert np.isclose(affine_invariant_distance([[2.0]], [[2.0 * np.e**3]]), 3.0)

    def test_affine_invariance(self, rng):
        A, B = random_spd(rng, 3), random_spd(rng, 3)
        G = rng.standard_normal((3, 3)) + 3 * np.eye(3)
        assert np.isclose(
            affine_invariant_distance(G @ A @ G.T, G @ B @ G.T), affine_invariant_distance(A, B)
        )
        assert np.isclose(
            affine_invariant_distance(np.linalg.inv(A), np.linalg.inv(B)),
            affine_invariant_distance(A, B),
        )

    def test_zero_and_batched(self, rng):
        A, B = random_spd(rng, 3, (4,)), random_spd(rng, 3, (4,))
        assert np.all(affine_invariant_distance(A, A) < 1e-12)
        assert np.all(log_euclidean_distance(A, A) < 1e-12)
        D, E = affine_invariant_distance(A, B), log_euclidean_distance(A, B)
        assert D.shape == E.shape == (4,)
        for i in range(4):
            assert np.isclose(D[i], affine_invariant_distance(A[i], B[i]))
            assert np.isclose(E[i], log_euclidean_distance(A[i], B[i]))

    def test_exp_log_inverse(self, rng):
        X, Y = random_spd(rng, 4, (3,)), random_spd(rng, 4, (3,))
        V = spd_log(X, Y)
        assert np.allclose(spd_exp(X, V), Y)
        assert np.allclose(spd_exp(X, np.zeros_like(X)), X)
        assert np.allclose(spd_log(X, X), 0, atol=1e-12)
        # Riemannian norm of Log_X(Y) is the distance; Exp along tV travels t * distance.
        iX = invsqrtm_spd(X)
        nrm = np.linalg.norm(iX @ V @ iX, axis=(-2, -1))
        assert np.allclose(nrm, affine_invariant_distance(X, Y))
        assert np.allclose(affine_invariant_distance(X, spd_exp(X, 0.3 * V)), 0.3 * nrm)
        W = random_sym(rng, 4, (3,))
        assert np.allclose(spd_log(X, spd_exp(X, W)), W)

    def test_extreme_scales(self, rng):
        assert np.isclose(
            affine_invariant_distance(1e-300 * np.eye(2), 1e300 * np.eye(2)),
            np.sqrt(2) * 600 * np.log(10),
        )
        X, Y = random_spd(rng, 3), random_spd(rng, 3)
        d = affine_invariant_distance(X, Y)
        for c in [1e-200, 1e200]:
            assert np.isclose(affine_invariant_distance(c * X, c * Y), d, rtol=1e-10)
            assert np.allclose(spd_exp(c * X, spd_log(c * X, Y)), Y, rtol=1e-9)
        with pytest.raises(ValueError, match="overflows"):
            spd_exp(1e-300 * np.eye(2), 1e10 * np.eye(2))

    def test_errors(self, rng):
        with pytest.raises(ValueError, match="B must be symmetric positive definite"):
            affine_invariant_distance(np.eye(2), np.diag([1.0, 0.0]))
        with pytest.raises(ValueError, match="A must be symmetric positive definite"):
            log_euclidean_distance(np.diag([1.0, -1.0]), np.eye(2))
        with pytest.raises(ValueError, match="X must be symmetric positive definite"):
            spd_exp(np.zeros((2, 2)), np.eye(2))
        with pytest.raises(ValueError, match="V must be symmetric"):
            spd_exp(np.eye(2), [[0.0, 1.0], [0.0, 0.0]])
        with pytest.raises(ValueError, match="Y contains NaN"):
            spd_log(np.eye(2), np.array([[1.0, np.nan], [np.nan, 1.0]]))

    @PROPERTY
    @given(seed=SEEDS, d=st.integers(1, 4))
    def test_metric_axioms(self, seed, d):
        rng = np.random.default_rng(seed)
        A, B, C = (random_spd(rng, d) for _ in range(3))
        for dist in (affine_invariant_distance, log_euclidean_distance):
            dAB = dist(A, B)
            assert np.isclose(dAB, dist(B, A), rtol=1e-9, atol=1e-12)
            assert dist(A, C) <= dAB + dist(B, C) + 1e-9 * (1 + dAB)


# ------------------------------------------------------------------------------------
# sphere
# ------------------------------------------------------------------------------------


class TestSphere:
    def test_closed_forms(self):
        assert np.isclose(sphere_distance([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]), np.pi / 2)
        assert np.isclose(sphere_distance([1.0, 0.0], [-1.0, 0.0]), np.pi)
        assert sphere_distance([0.6, 0.8], [0.6, 0.8]) == 0.0
        assert np.allclose(sphere_exp([1.0, 0.0], [0.0, np.pi]), [-1.0, 0.0])
        assert np.allclose(sphere_exp([1.0, 0.0], [0.0, 0.0]), [1.0, 0.0])

    def test_small_angles_are_accurate(self):
        eps = 1e-9
        y = np.array([np.cos(eps), np.sin(eps)])
        assert np.isclose(sphere_distance([1.0, 0.0], y), eps, rtol=1e-6)
        assert np.allclose(sphere_log([1.0, 0.0], y), [0.0, eps], rtol=1e-6, atol=0)

    def test_exp_log_inverse_batched(self, rng):
        x, y = random_sphere(rng, 4, (3, 5)), random_sphere(rng, 4, (3, 5))
        v = sphere_log(x, y)
        assert np.allclose(np.sum(x * v, axis=-1), 0, atol=1e-12)
        assert np.allclose(np.linalg.norm(v, axis=-1), sphere_distance(x, y))
        assert np.allclose(sphere_exp(x, v), y)
        D = sphere_distance(x, y)
        assert D.shape == (3, 5)
        assert np.isclose(D[1, 2], sphere_distance(x[1, 2], y[1, 2]))
        assert np.allclose(sphere_log(x, x), 0)
        assert sphere_log(x[0], y[0, 0]).shape == (5, 4)  # broadcasting

    def test_errors(self):
        with pytest.raises(ValueError, match="x must hold unit-norm"):
            sphere_distance([1.0, 1.0], [1.0, 0.0])
        with pytest.raises(ValueError, match="y must hold unit-norm"):
            sphere_log([1.0, 0.0], [2.0, 0.0])
        with pytest.raises(ValueError, match="v must be tangent"):
            sphere_exp([1.0, 0.0], [1.0, 1.0])
        with pytest.raises(ValueError, match="antipodal"):
            sphere_log([1.0, 0.0], [-1.0, 0.0])
        with pytest.raises(ValueError, match="same dimension"):
            sphere_distance([1.0, 0.0], [1.0, 0.0, 0.0])
        with pytest.raises(ValueError, match="NaN"):
            sphere_distance([np.nan, 0.0], [1.0, 0.0])

    @PROPERTY
    @given(seed=SEEDS, k=st.integers(1, 5))
    def test_metric_axioms(self, seed, k):
        rng = np.random.default_rng(seed)
        x, y, z = (random_sphere(rng, k) for _ in range(3))
        dxy = sphere_distance(x, y)
        assert 0 <= dxy <= np.pi
        assert dxy == sphere_distance(y, x)
        assert sphere_distance(x, z) <= dxy + sphere_distance(y, z) + 1e-12


# ------------------------------------------------------------------------------------
# layering
# ------------------------------------------------------------------------------------


def test_geometry_imports_only_validation():
    root = pathlib.Path(__file__).resolve().parents[1] / "psdsos" / "geometry"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0 or node.module is None or "geometry" in path.parts
                names = [node.module or ""]
            for name in names:
                if name.startswith("psdsos"):
                    assert name.startswith(("psdsos.geometry", "psdsos._validation")), (
                        f"{path.name} imports {name}"
                    )


@pytest.mark.parametrize("module", ["_checks", "_matfun", "_spd", "_sphere"])
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"psdsos.geometry.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
