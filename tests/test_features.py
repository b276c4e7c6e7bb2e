"""Tests for psdsos.features: exact (Cholesky) and Nystrom feature maps.

References are independent of the code under test: the kernel matrix is built with the
kernel object (tested in test_kernels.py), Gram matrices of features are compared with it,
and Nystrom errors are compared with each other through Loewner order.
"""

from __future__ import annotations

import numpy as np
import pytest

from psdsos.features import ExactFeatures, NystromFeatures, cholesky_with_jitter
from psdsos.kernels import KERNELS, GaussianKernel, get_kernel

EPS = np.finfo(np.float64).eps
KERNEL_NAMES = sorted(KERNELS)


def _base_jitter(n, mean_diag=1.0):
    """The documented first jitter: 10 * machine eps * n * mean(diag K)."""
    return 10.0 * EPS * n * mean_diag


def _points(rng, n=15, p=2):
    return rng.uniform(-1.0, 1.0, size=(n, p))


def _min_eig(A):
    return float(np.linalg.eigvalsh(0.5 * (A + A.T))[0])


class Float32Gaussian(GaussianKernel):
    """Gaussian kernel computed in single precision: its Gram matrix is slightly indefinite.

    This stands for any kernel evaluated with rounding errors far above float64's; it is
    the situation the adaptive jitter exists for.
    """

    def __call__(self, X, Y=None):
        return super().__call__(X, Y).astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------------------------------
# exact features
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_exact_gram_equals_kernel_matrix(rng, kernel):
    X = _points(rng, 15, 2)
    f = ExactFeatures(kernel, 0.7).fit(X)
    Phi = f.transform(X)
    K = get_kernel(kernel, 0.7)(X, X)
    assert Phi.shape == (15, 15)
    assert f.n_components == 15
    # Phi Phi^T = K + jitter I up to rounding
    tol = f.jitter_ + 100 * EPS * 15
    np.testing.assert_allclose(Phi @ Phi.T, K, rtol=0, atol=tol)
    # at the training points phi(x_l) is the l-th column of R (section 3.1.2)
    np.testing.assert_allclose(Phi, f.R_.T, rtol=0, atol=1e-10)
    assert np.allclose(np.tril(f.R_, -1), 0.0)
    assert f.jitter_ == pytest.approx(_base_jitter(15), rel=1e-12)


def test_exact_features_at_new_points_are_a_contraction(rng):
    """||phi(x)||^2 = v(x)^T K^{-1} v(x) <= k(x, x) = 1 (kernel interpolation is a projection)."""
    X = _points(rng, 12, 2)
    f = ExactFeatures("gaussian", 0.5).fit(X)
    Xt = rng.uniform(-2, 2, size=(500, 2))
    Pt = f.transform(Xt)
    assert Pt.shape == (500, 12)
    assert np.all(np.isfinite(Pt))
    assert np.max(np.sum(Pt**2, axis=1)) <= 1.0 + 1e-8
    # Cross Gram with a training point is exact: phi(x)^T phi(x_i) = k(x, x_i)
    Kx = get_kernel("gaussian", 0.5)(Xt, X)
    np.testing.assert_allclose(Pt @ f.transform(X).T, Kx, atol=1e-8)


@pytest.mark.parametrize(
    "case",
    ["duplicates", "huge_bandwidth", "near_duplicates"],
)
def test_exact_features_degenerate_kernel_matrix(rng, case):
    """Numerically singular K: no error, finite bounded features, Gram = K to jitter level."""
    X = _points(rng, 10, 2)
    sigma = 0.5
    if case == "duplicates":
        X = np.vstack([X, X[:4], X[:2]])
    elif case == "huge_bandwidth":
        sigma = 1e6
    else:
        X = np.vstack([X, X[:4] + 1e-9])
    n = X.shape[0]
    f = ExactFeatures("gaussian", sigma).fit(X)
    Phi = f.transform(X)
    K = get_kernel("gaussian", sigma)(X, X)
    assert f.jitter_ >= _base_jitter(n) * (1 - 1e-12)
    assert f.jitter_ <= 1e-2
    assert np.all(np.isfinite(Phi))
    np.testing.assert_allclose(Phi @ Phi.T, K, rtol=0, atol=f.jitter_ + 1e3 * EPS * n)
    # every pivot is at least the base jitter, so R^{-1} is bounded
    assert np.min(np.diag(f.R_) ** 2) >= _base_jitter(n) * (1 - 1e-9)
    Xt = rng.uniform(-1.5, 1.5, size=(300, 2))
    Pt = f.transform(Xt)
    assert np.all(np.isfinite(Pt))
    assert np.max(np.sum(Pt**2, axis=1)) <= 1.0 + 1e-6


def test_exact_features_jitter_adapts_to_indefinite_kernel_matrix(rng):
    """A Gram matrix with rounding far above float64's (here float32) needs a larger jitter."""
    X = rng.uniform(0.0, 1.0, size=(30, 1))
    kern = Float32Gaussian(sigma=0.5)
    K = kern(X, X)
    assert _min_eig(K) < -_base_jitter(30)  # the premise: K itself is indefinite
    f = ExactFeatures(kern).fit(X)
    assert f.jitter_ > _base_jitter(30)
    # the jitter grows by factors of 10 from the base
    ratio = f.jitter_ / _base_jitter(30)
    assert np.isclose(np.log10(ratio), np.round(np.log10(ratio)), atol=1e-9)
    assert f.jitter_ >= -_min_eig(K)
    Phi = f.transform(X)
    assert np.all(np.isfinite(Phi))
    np.testing.assert_allclose(f.R_.T @ f.R_, K + f.jitter_ * np.eye(30), atol=1e-12)


def test_cholesky_with_jitter_grows_until_positive_definite():
    K = np.array([[1.0, 1.0 + 1e-9], [1.0 + 1e-9, 1.0]])  # eigenvalue -1e-9
    R, eps = cholesky_with_jitter(K)
    assert eps > 1e-9
    assert eps < 1e-7  # the first power of ten that works, not a huge one
    np.testing.assert_allclose(R.T @ R, K + eps * np.eye(2), atol=1e-14)


def test_cholesky_with_jitter_gives_up_on_a_non_psd_matrix():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalue -1
    with pytest.raises(ValueError, match="not positive semi-definite"):
        cholesky_with_jitter(K)
    with pytest.raises(ValueError, match="positive diagonal"):
        cholesky_with_jitter(-np.eye(3))


def test_exact_features_fixed_jitter(rng):
    X = _points(rng, 10, 2)
    f = ExactFeatures("gaussian", 0.5, jitter=1e-6).fit(X)
    assert f.jitter_ == 1e-6
    K = get_kernel("gaussian", 0.5)(X, X)
    np.testing.assert_allclose(f.R_.T @ f.R_, K + 1e-6 * np.eye(10), atol=1e-13)
    np.testing.assert_allclose(f.transform(X) @ f.transform(X).T, K, atol=1.01e-6)
    # a fixed jitter is not adapted: singular K with jitter 0 is an error naming the fix
    Xd = np.vstack([X, X[:1]])
    with pytest.raises(ValueError, match="jitter='auto'"):
        ExactFeatures("gaussian", 0.5, jitter=0.0).fit(Xd)
    with pytest.raises(ValueError, match="jitter"):
        ExactFeatures("gaussian", 0.5, jitter=-1.0).fit(X)


def test_feature_map_save_arrays_round_trip(rng):
    X = _points(rng, 10, 3)
    for f in (
        ExactFeatures("matern52", 0.8).fit(X),
        NystromFeatures("exponential", 0.8, n_landmarks=4, random_state=0).fit(X),
    ):
        arrays, meta = f.to_arrays()
        g = type(f).from_arrays(arrays, meta)
        Xt = rng.standard_normal((20, 3))
        np.testing.assert_array_equal(g.transform(Xt), f.transform(Xt))
        assert g.jitter_ == f.jitter_


# ---------------------------------------------------------------------------------------
# Nystrom features
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("landmarks", ["uniform", "greedy"])
def test_nystrom_rank_and_landmarks(rng, landmarks):
    X = _points(rng, 20, 2)
    f = NystromFeatures("gaussian", 0.5, n_landmarks=6, landmarks=landmarks, random_state=1).fit(X)
    Phi = f.transform(X)
    idx = f.landmark_indices_
    assert f.n_components == 6 and Phi.shape == (20, 6)
    assert len(np.unique(idx)) == 6 and np.all(np.diff(idx) > 0)
    assert idx.min() >= 0 and idx.max() < 20
    np.testing.assert_array_equal(f.anchors_, X[idx])
    K = get_kernel("gaussian", 0.5)(X, X)
    # Nystrom interpolates the kernel on the landmarks ...
    np.testing.assert_allclose(Phi[idx] @ Phi[idx].T, K[np.ix_(idx, idx)], atol=1e-12)
    # ... and under-approximates it elsewhere: K - K_Z is PSD
    assert _min_eig(K - Phi @ Phi.T) >= -1e-10


@pytest.mark.parametrize("landmarks", ["uniform", "greedy"])
def test_nystrom_seeded_reproducibility(rng, landmarks):
    X = _points(rng, 25, 2)
    kw = dict(n_landmarks=5, landmarks=landmarks)
    a = NystromFeatures("gaussian", 0.4, random_state=7, **kw).fit(X)
    b = NystromFeatures("gaussian", 0.4, random_state=7, **kw).fit(X)
    c = NystromFeatures("gaussian", 0.4, random_state=np.random.default_rng(7), **kw).fit(X)
    np.testing.assert_array_equal(a.landmark_indices_, b.landmark_indices_)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    np.testing.assert_array_equal(a.landmark_indices_, c.landmark_indices_)
    seen = {
        tuple(NystromFeatures("gaussian", 0.4, random_state=s, **kw).fit(X).landmark_indices_)
        for s in range(10)
    }
    assert len(seen) > 1  # the seed matters


def test_nystrom_greedy_picks_distinct_points(rng):
    """With every point repeated, greedy never picks the same location twice."""
    base = _points(rng, 8, 2)
    X = np.vstack([base, base, base])
    X = X[rng.permutation(len(X))]
    f = NystromFeatures("gaussian", 0.5, n_landmarks=8, landmarks="greedy", random_state=0).fit(X)
    chosen = X[f.landmark_indices_]
    assert len(np.unique(chosen, axis=0)) == 8
    assert np.all(np.isfinite(f.transform(X)))
    # the 8 distinct locations span the kernel: the approximation is exact on X
    K = get_kernel("gaussian", 0.5)(X, X)
    np.testing.assert_allclose(f.transform(X) @ f.transform(X).T, K, atol=1e-8)


@pytest.mark.parametrize("first", range(4))
def test_nystrom_greedy_covers_all_clusters(rng, first):
    centers = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0], [2.5, 9.0]])
    X = np.vstack([c + 0.05 * rng.standard_normal((8, 2)) for c in centers])
    labels = np.repeat(np.arange(5), 8)
    f = NystromFeatures("gaussian", 0.5, n_landmarks=5, landmarks="greedy", random_state=first).fit(
        X
    )
    assert sorted(labels[f.landmark_indices_]) == [0, 1, 2, 3, 4]


def test_nystrom_greedy_error_decreases_in_loewner_order(rng):
    """Greedy landmark sets are nested in r, so the residual K - K_Z decreases (Loewner)."""
    X = _points(rng, 14, 2)
    K = get_kernel("gaussian", 0.6)(X, X)
    prev_res, prev_tr, prev_idx = None, np.inf, None
    for r in range(1, 15):
        f = NystromFeatures("gaussian", 0.6, n_landmarks=r, landmarks="greedy", random_state=3).fit(
            X
        )
        P = f.transform(X)
        res = K - P @ P.T
        tr = float(np.trace(res))
        assert tr >= -1e-10
        if prev_res is not None:
            assert set(prev_idx) <= set(f.landmark_indices_)
            assert _min_eig(prev_res - res) >= -1e-9
            assert tr <= prev_tr + 1e-10
        prev_res, prev_tr, prev_idx = res, tr, f.landmark_indices_
    assert prev_tr < 1e-8  # r = n: exact


def test_nystrom_uniform_error_decreases_with_rank(rng):
    X = _points(rng, 20, 2)
    K = get_kernel("gaussian", 0.4)(X, X)

    def err(r, s):
        P = NystromFeatures("gaussian", 0.4, n_landmarks=r, random_state=s).fit(X).transform(X)
        return np.linalg.norm(K - P @ P.T, "fro")

    ranks = [2, 5, 10, 15]
    mean_err = [np.mean([err(r, s) for s in range(5)]) for r in ranks]
    assert all(a > b for a, b in zip(mean_err, mean_err[1:], strict=False)), mean_err
    assert err(20, 0) < 1e-10


@pytest.mark.parametrize("landmarks", ["uniform", "greedy"])
def test_nystrom_full_rank_equals_exact(rng, landmarks):
    X = _points(rng, 12, 2)
    nys = NystromFeatures("matern32", 0.5, n_landmarks=12, landmarks=landmarks, random_state=0).fit(
        X
    )
    ex = ExactFeatures("matern32", 0.5).fit(X)
    np.testing.assert_array_equal(nys.landmark_indices_, np.arange(12))
    Xt = rng.uniform(-1, 1, size=(50, 2))
    # same anchors in the same order: the same factor, the same features
    np.testing.assert_allclose(nys.transform(Xt), ex.transform(Xt), atol=1e-10)
    P = nys.transform(X)
    np.testing.assert_allclose(P @ P.T, get_kernel("matern32", 0.5)(X, X), atol=nys.jitter_ + 1e-13)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
def test_nystrom_errors(rng):
    X = _points(rng, 6, 2)
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromFeatures("gaussian", 1.0, n_landmarks=7).fit(X)
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromFeatures("gaussian", 1.0, n_landmarks=0).fit(X)
    with pytest.raises(ValueError, match="n_landmarks"):
        NystromFeatures("gaussian", 1.0, n_landmarks=2.5).fit(X)
    with pytest.raises(ValueError, match="landmarks"):
        NystromFeatures("gaussian", 1.0, n_landmarks=3, landmarks="kmeans").fit(X)
    with pytest.raises(ValueError, match="random_state"):
        NystromFeatures("gaussian", 1.0, n_landmarks=3, random_state=-1).fit(X)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ExactFeatures("gaussian", 1.0),
        lambda: NystromFeatures("gaussian", 1.0, n_landmarks=3, random_state=0),
    ],
    ids=["exact", "nystrom"],
)
def test_feature_errors(rng, make):
    X = _points(rng, 6, 2)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[2, 1] = bad
        with pytest.raises(ValueError, match="X contains NaN or infinite"):
            make().fit(Xb)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        make().fit(X[:, 0])
    f = make()
    with pytest.raises(ValueError, match="not fitted"):
        f.transform(X)
    with pytest.raises(ValueError, match="not fitted"):
        _ = f.n_components
    f.fit(X)
    with pytest.raises(ValueError, match="X has 3 features but the feature map was fitted with 2"):
        f.transform(np.ones((4, 3)))
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        f.transform(Xb)


def test_feature_kernel_errors(rng):
    X = _points(rng, 5, 2)
    with pytest.raises(ValueError, match="kernel"):
        ExactFeatures("laplace", 1.0).fit(X)  # "rbf": the Gaussian, accepted
    with pytest.raises(ValueError, match="sigma"):
        ExactFeatures("gaussian", 0.0).fit(X)
    with pytest.raises(ValueError, match="sigma"):
        NystromFeatures("gaussian", -1.0, n_landmarks=2).fit(X)
