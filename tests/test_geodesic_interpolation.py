"""PiecewiseGeodesicInterpolator: exact at the data, on the geodesics (closed forms, constant
speed), PSD outputs (property tests), constant extrapolation, input validation."""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from psdsos.geometry import (
    GEODESIC_METRICS,
    PiecewiseGeodesicInterpolator,
    affine_invariant_distance,
    bures_wasserstein_distance,
    log_euclidean_distance,
)

SEEDS = st.integers(0, 2**32 - 1)
PROPERTY = settings(max_examples=30, deadline=None)
SPD_METRICS = ("log_euclidean", "affine_invariant")


def random_spd(rng, d, batch=(), cond=1.0):
    G = rng.standard_normal(batch + (d, d))
    return G @ np.swapaxes(G, -1, -2) + cond * np.eye(d)


def random_psd(rng, d, rank, batch=()):
    G = rng.standard_normal(batch + (d, rank))
    return G @ np.swapaxes(G, -1, -2)


def commuting_pair(rng, d):
    U = np.linalg.qr(rng.standard_normal((d, d)))[0]
    a, b = rng.uniform(0.1, 5.0, d), rng.uniform(0.1, 5.0, d)
    return U, a, b


def closed_form(metric, a, b, s):
    """Eigenvalues at s of the geodesic between commuting matrices with eigenvalues a, b."""
    if metric == "euclidean":
        return (1 - s) * a + s * b
    if metric == "bures_wasserstein":
        return ((1 - s) * np.sqrt(a) + s * np.sqrt(b)) ** 2
    return a ** (1 - s) * b**s  # log-Euclidean and affine-invariant agree


# ---------------------------------------------------------------------------------------------
# interpolation and extrapolation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", GEODESIC_METRICS)
def test_exact_at_training_inputs_any_order(metric, rng):
    t = rng.permutation(np.linspace(0.0, 3.0, 7))[:, None]
    M = random_spd(rng, 3, (7,))
    model = PiecewiseGeodesicInterpolator(metric).fit(t, M)
    np.testing.assert_array_equal(model.predict(t), M)  # the training matrices themselves
    np.testing.assert_array_equal(model.times_, np.sort(t[:, 0]))
    np.testing.assert_array_equal(model.predict(t[:, 0]), M)  # (n,) inputs too


@pytest.mark.parametrize("metric", GEODESIC_METRICS)
def test_constant_extrapolation(metric, rng):
    t = np.array([[1.0], [2.0], [4.0]])
    M = random_spd(rng, 2, (3,))
    P = PiecewiseGeodesicInterpolator(metric).fit(t, M).predict([[-10.0], [0.999], [4.5], [1e9]])
    np.testing.assert_array_equal(P, M[[0, 0, 2, 2]])


@pytest.mark.parametrize("metric", GEODESIC_METRICS)
def test_commuting_matrices_closed_forms(metric, rng):
    U, a, b = commuting_pair(rng, 3)
    A, B = U @ np.diag(a) @ U.T, U @ np.diag(b) @ U.T
    t0, t1 = 2.0, 5.0
    model = PiecewiseGeodesicInterpolator(metric).fit([[t0], [t1]], np.stack([A, B]))
    s = np.array([0.1, 0.25, 0.5, 0.8, 0.97])
    P = model.predict(t0 + s * (t1 - t0))
    for k, sk in enumerate(s):
        expected = U @ np.diag(closed_form(metric, a, b, sk)) @ U.T
        np.testing.assert_allclose(P[k], expected, rtol=1e-10, atol=1e-10)


def test_log_euclidean_and_affine_invariant_agree_when_commuting(rng):
    U, a, b = commuting_pair(rng, 4)
    M = np.stack([U @ np.diag(a) @ U.T, U @ np.diag(b) @ U.T])
    t, q = [[0.0], [1.0]], np.linspace(0, 1, 11)
    P_le = PiecewiseGeodesicInterpolator("log_euclidean").fit(t, M).predict(q)
    P_ai = PiecewiseGeodesicInterpolator("affine_invariant").fit(t, M).predict(q)
    np.testing.assert_allclose(P_le, P_ai, rtol=1e-10, atol=1e-10)


def test_bures_wasserstein_midpoint_closed_form(rng):
    """Midpoint of the BW geodesic between SPD A, B: ((I + T)/2) A ((I + T)/2) with the
    optimal transport map T = A^{-1/2} (A^{1/2} B A^{1/2})^{1/2} A^{-1/2} (Bhatia, Jain and
    Lim 2019), computed here with scipy's sqrtm, independently of psdsos."""
    A, B = random_spd(rng, 3, cond=0.5), random_spd(rng, 3, cond=0.5)
    rA = np.real(sla.sqrtm(A))
    irA = np.linalg.inv(rA)
    T = irA @ np.real(sla.sqrtm(rA @ B @ rA)) @ irA
    H = 0.5 * (np.eye(3) + T)
    expected = H @ A @ H
    P = PiecewiseGeodesicInterpolator("bures_wasserstein").fit([[0.0], [2.0]],
                                                               np.stack([A, B])).predict([[1.0]])
    np.testing.assert_allclose(P[0], expected, rtol=1e-9, atol=1e-9)


def test_affine_invariant_midpoint_is_the_geometric_mean(rng):
    """A # B solves the Riccati equation X A^{-1} X = B."""
    A, B = random_spd(rng, 3), random_spd(rng, 3)
    X = PiecewiseGeodesicInterpolator("affine_invariant").fit([[0.0], [1.0]],
                                                              np.stack([A, B])).predict([0.5])[0]
    np.testing.assert_allclose(X @ np.linalg.solve(A, X), B, rtol=1e-9, atol=1e-9)


_DISTANCE = {"log_euclidean": log_euclidean_distance,
             "affine_invariant": affine_invariant_distance,
             "bures_wasserstein": bures_wasserstein_distance,
             "euclidean": lambda A, B: np.linalg.norm(A - B, axis=(-2, -1))}


@PROPERTY
@given(seed=SEEDS, metric=st.sampled_from(GEODESIC_METRICS), s=st.floats(0.0, 1.0))
def test_on_the_geodesic_constant_speed(seed, metric, s):
    """gamma(s) is at distance s d(A, B) from A and (1 - s) d(A, B) from B: a point of the
    minimizing geodesic, travelled at constant speed."""
    rng = np.random.default_rng(seed)
    A, B = random_spd(rng, 3, cond=0.3), random_spd(rng, 3, cond=0.3)
    G = PiecewiseGeodesicInterpolator(metric).fit([[1.0], [3.0]],
                                                  np.stack([A, B])).predict([1.0 + 2.0 * s])[0]
    dist = _DISTANCE[metric]
    D = dist(A, B)
    assert abs(dist(A, G) - s * D) <= 1e-7 * (1 + D)
    assert abs(dist(G, B) - (1 - s) * D) <= 1e-7 * (1 + D)


@PROPERTY
@given(seed=SEEDS, metric=st.sampled_from(GEODESIC_METRICS), d=st.integers(1, 4),
       n=st.integers(2, 6))
def test_outputs_are_psd(seed, metric, d, n):
    rng = np.random.default_rng(seed)
    t = rng.uniform(-5.0, 5.0, n)
    t[-1] = t[0] + 1.0 + abs(t[-1])  # distinct with probability 1; make sure of two of them
    t = np.unique(t)
    if metric in SPD_METRICS:
        M = random_spd(rng, d, (len(t),), cond=10.0 ** rng.uniform(-6, 0))
    else:  # rank-deficient targets allowed
        M = random_psd(rng, d, int(rng.integers(0, d + 1)), (len(t),))
    q = rng.uniform(t.min() - 1.0, t.max() + 1.0, 25)
    P = PiecewiseGeodesicInterpolator(metric).fit(t, M).predict(q)
    assert P.shape == (25, d, d)
    np.testing.assert_array_equal(P, np.swapaxes(P, 1, 2))
    scale = max(float(np.abs(M).max()), 1e-300)
    w = np.linalg.eigvalsh(P)
    assert w.min() >= -1e-10 * scale
    if metric in SPD_METRICS:
        assert np.all(w > 0)


def test_rank_one_bures_wasserstein_stays_rank_one():
    u, v = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    M = np.stack([np.outer(u, u), np.outer(v, v)])
    P = PiecewiseGeodesicInterpolator("bures_wasserstein").fit([0.0, 1.0], M).predict([0.5])
    np.testing.assert_allclose(P[0], np.outer((u + v) / 2, (u + v) / 2), atol=1e-12)


def test_sklearn_api(rng):
    est = PiecewiseGeodesicInterpolator("affine_invariant")
    assert est.get_params() == {"metric": "affine_invariant"}
    other = clone(est).set_params(metric="euclidean")
    assert other.metric == "euclidean" and est.metric == "affine_invariant"
    assert not any(k.endswith("_") for k in vars(est))  # nothing fitted before fit
    with pytest.raises(NotFittedError):
        est.predict([[0.0]])
    M = random_spd(rng, 2, (3,))
    assert est.fit([0.0, 1.0, 2.0], M) is est and est.n_features_in_ == 1
    assert est.predict(np.zeros((0, 1))).shape == (0, 2, 2)


# ---------------------------------------------------------------------------------------------
# input validation: ValueError naming the argument
# ---------------------------------------------------------------------------------------------
def test_input_validation(rng):
    M = random_spd(rng, 2, (3,))
    t = [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="metric must be one of"):
        PiecewiseGeodesicInterpolator("riemann").fit(t, M)
    with pytest.raises(ValueError, match="X must hold one feature"):
        PiecewiseGeodesicInterpolator().fit(np.zeros((3, 2)), M)
    with pytest.raises(ValueError, match="X contains NaN"):
        PiecewiseGeodesicInterpolator().fit([0.0, np.nan, 2.0], M)
    with pytest.raises(ValueError, match="X must have at least 2"):
        PiecewiseGeodesicInterpolator().fit([0.0], M[:1])
    with pytest.raises(ValueError, match="X must hold distinct values"):
        PiecewiseGeodesicInterpolator().fit([0.0, 1.0, 1.0], M)
    with pytest.raises(ValueError, match="X and y have different numbers of samples"):
        PiecewiseGeodesicInterpolator().fit([0.0, 1.0], M)
    with pytest.raises(ValueError, match="y must have shape"):
        PiecewiseGeodesicInterpolator().fit(t, M[:, 0])
    with pytest.raises(ValueError, match="y must hold symmetric"):
        PiecewiseGeodesicInterpolator().fit(t, M + np.triu(np.ones((2, 2)), 1))
    singular = M.copy()
    singular[1] = np.diag([1.0, 0.0])
    for metric in SPD_METRICS:
        with pytest.raises(ValueError, match="y must be symmetric positive definite.*"
                                             "bures_wasserstein"):
            PiecewiseGeodesicInterpolator(metric).fit(t, singular)
    for metric in ("euclidean", "bures_wasserstein"):  # singular is fine, indefinite is not
        PiecewiseGeodesicInterpolator(metric).fit(t, singular)
        with pytest.raises(ValueError, match="y must be positive semi-definite"):
            PiecewiseGeodesicInterpolator(metric).fit(t, singular - 0.5 * np.eye(2))
    model = PiecewiseGeodesicInterpolator().fit(t, M)
    with pytest.raises(ValueError, match="X must hold one feature"):
        model.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="X contains NaN"):
        model.predict([np.inf])


def test_docstring_examples_run():
    import doctest

    import psdsos.geometry._interpolation as mod

    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
