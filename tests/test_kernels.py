"""Tests for psdsos.kernels: values, derivatives, symmetries, PSD-ness, references, errors."""

from __future__ import annotations

import ast
import itertools
import math
import os
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.gaussian_process.kernels import RBF, Matern

import psdsos.kernels as kernels_pkg
from psdsos.kernels import (
    KERNELS,
    ExponentialKernel,
    GaussianKernel,
    Kernel,
    Matern32Kernel,
    Matern52Kernel,
    get_kernel,
    scale_bandwidth,
)

EPS = np.finfo(np.float64).eps
ALL = sorted(KERNELS)
SMOOTH2 = [name for name in ALL if KERNELS[name].differentiability >= 2]
SMOOTH4 = [name for name in ALL if KERNELS[name].differentiability >= 4]


@pytest.fixture
def rng():
    """Seeded generator; set PSDSOS_SEED to sweep seeds in CI."""
    return np.random.default_rng(int(os.environ.get("PSDSOS_SEED", "0")))


def _points(rng, n=5, m=4, p=3, min_rho=0.3, sigma=1.0):
    """X (n, p), Y (m, p) in [-1, 1]^p and the mask of pairs with ||x - y|| > min_rho sigma."""
    X = rng.uniform(-1.0, 1.0, size=(n, p))
    Y = rng.uniform(-1.0, 1.0, size=(m, p))
    r = np.linalg.norm(X[:, None, :] - Y[None, :, :], axis=-1)
    mask = r > min_rho * sigma
    assert mask.sum() >= (n * m) // 2
    return X, Y, mask


def _s2(p):
    eye = np.eye(p)
    return (
        np.einsum("pq,rs->pqrs", eye, eye)
        + np.einsum("pr,qs->pqrs", eye, eye)
        + np.einsum("ps,qr->pqrs", eye, eye)
    )


# --------------------------------------------------------------------------- API basics


def test_registry_and_attributes():
    assert KERNELS == {
        "gaussian": GaussianKernel,
        "exponential": ExponentialKernel,
        "matern32": Matern32Kernel,
        "matern52": Matern52Kernel,
    }
    for name, cls in KERNELS.items():
        assert cls.name == name
        assert issubclass(cls, Kernel)
        assert isinstance(cls.differentiability, int)
    assert GaussianKernel.differentiability >= 4
    assert ExponentialKernel.differentiability == 0
    assert Matern32Kernel.differentiability == 2
    assert Matern52Kernel.differentiability == 4
    assert set(kernels_pkg.__all__) == {
        "Kernel",
        "GaussianKernel",
        "ExponentialKernel",
        "Matern32Kernel",
        "Matern52Kernel",
        "LinearKernel",
        "KERNELS",
        "get_kernel",
        "scale_bandwidth",
        "register_kernel",
        "kernel_names",
        "kernel_aliases",
        "check_feature_scales",
        "FeatureScaleWarning",
    }


@pytest.mark.parametrize("name", ALL)
def test_get_kernel_names_params_repr_eq(name):
    k = get_kernel(name.upper(), sigma=2)
    assert type(k) is KERNELS[name]
    assert k.sigma == 2.0 and isinstance(k.sigma, float)
    assert k.get_params() == {"sigma": 2.0}
    assert repr(k) == f"{type(k).__name__}(sigma=2.0)"
    assert k == KERNELS[name](sigma=2.0)
    assert hash(k) == hash(KERNELS[name](sigma=2.0))
    assert k != KERNELS[name](sigma=2.5)
    other = next(cls for n, cls in KERNELS.items() if n != name)
    assert k != other(sigma=2.0)
    assert k != "gaussian"
    # an instance is returned unchanged; sigma is then ignored (documented)
    assert get_kernel(k) is k
    assert get_kernel(k, sigma=7.0) is k


def test_base_class_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Kernel(1.0)


# ------------------------------------------------------------------------ the formulas


@pytest.mark.parametrize("sigma", [0.5, 1.7])
def test_values_against_direct_formulas(rng, sigma):
    X = rng.normal(size=(6, 3))
    Y = rng.normal(size=(5, 3))
    r = np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    rho = r / sigma
    expected = {
        "gaussian": np.exp(-(r**2) / (2 * sigma**2)),
        "exponential": np.exp(-rho),
        "matern32": (1 + rho) * np.exp(-rho),
        "matern52": (1 + rho + rho**2 / 3) * np.exp(-rho),
    }
    for name in ALL:
        np.testing.assert_allclose(get_kernel(name, sigma)(X, Y), expected[name], rtol=1e-13)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_against_scikit_learn(rng, sigma):
    """Independent references: sklearn RBF and Matern (length_scale = sqrt(2 nu) sigma)."""
    X = rng.normal(size=(7, 2))
    Y = rng.normal(size=(4, 2))
    np.testing.assert_allclose(
        GaussianKernel(sigma)(X, Y), RBF(length_scale=sigma)(X, Y), rtol=1e-12, atol=1e-15
    )
    for cls, nu in [(ExponentialKernel, 0.5), (Matern32Kernel, 1.5), (Matern52Kernel, 2.5)]:
        ref = Matern(length_scale=math.sqrt(2 * nu) * sigma, nu=nu)
        np.testing.assert_allclose(cls(sigma)(X, Y), ref(X, Y), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(cls(sigma)(X), ref(X), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ALL)
def test_diag_symmetry_and_y_none(rng, name):
    k = get_kernel(name, 0.8)
    X = rng.normal(size=(6, 2))
    Y = rng.normal(size=(3, 2))
    K = k(X)
    assert K.shape == (6, 6)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(np.diag(K), 1.0)
    np.testing.assert_array_equal(k.diag(X), np.ones(6))
    np.testing.assert_array_equal(k(X, X), K)
    np.testing.assert_array_equal(k(X, Y), k(Y, X).T)
    np.testing.assert_array_equal(k.gradient(X), k.gradient(X, X))
    # list and integer input are converted to float64
    np.testing.assert_array_equal(k([[0, 1], [2, 3]]), k(np.array([[0.0, 1.0], [2.0, 3.0]])))
    assert k(X, Y).dtype == np.float64


# ------------------------------------------------------------- finite-difference checks

H1 = 1e-5  # step for first differences of exact quantities
TOL1 = 100 * (H1**2 + EPS / H1)  # truncation h^2 and round-off eps/h, with a safety factor


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("sigma", [0.7, 1.3])
def test_gradient_finite_differences(rng, name, sigma):
    k = get_kernel(name, sigma)
    X, Y, mask = _points(rng, sigma=sigma)
    G = k.gradient(X, Y)
    assert G.shape == (5, 4, 3)
    for j in range(3):
        e = np.zeros(3)
        e[j] = H1
        fd = (k(X + e, Y) - k(X - e, Y)) / (2 * H1)
        np.testing.assert_allclose(G[..., j][mask], fd[mask], rtol=0, atol=TOL1 / sigma**3)


@pytest.mark.parametrize("name", SMOOTH2)
@pytest.mark.parametrize("sigma", [0.7, 1.3])
def test_hessian_finite_differences(rng, name, sigma):
    k = get_kernel(name, sigma)
    X, Y, mask = _points(rng, sigma=sigma)
    H = k.hessian(X, Y)
    assert H.shape == (5, 4, 3, 3)
    for j in range(3):
        e = np.zeros(3)
        e[j] = H1
        fd = (k.gradient(X + e, Y) - k.gradient(X - e, Y)) / (2 * H1)
        np.testing.assert_allclose(H[..., :, j][mask], fd[mask], rtol=0, atol=TOL1 / sigma**4)


H2 = 1e-3  # step for nested second differences (round-off eps/h^2)
TOL2 = 100 * (H2**2 + EPS / H2**2)


def _fd_hessian_in_y(k, X, Y, h=H2):
    """Nested central second differences of hessian(X, .) in the second argument."""
    p = X.shape[1]
    out = np.empty(k.hessian(X, Y).shape + (p, p))
    for r, s in itertools.product(range(p), repeat=2):
        er = np.zeros(p)
        er[r] = h
        es = np.zeros(p)
        es[s] = h
        out[..., r, s] = (
            k.hessian(X, Y + er + es)
            - k.hessian(X, Y + er - es)
            - k.hessian(X, Y - er + es)
            + k.hessian(X, Y - er - es)
        ) / (4 * h * h)
    return out


@pytest.mark.parametrize("name", SMOOTH4)
@pytest.mark.parametrize("sigma", [0.8, 1.5])
def test_hessian_hessian_finite_differences(rng, name, sigma):
    k = get_kernel(name, sigma)
    X, Y, mask = _points(rng, sigma=sigma)
    D = k.hessian_hessian(X, Y)
    assert D.shape == (5, 4, 3, 3, 3, 3)
    fd = _fd_hessian_in_y(k, X, Y)
    np.testing.assert_allclose(D[mask], fd[mask], rtol=0, atol=TOL2 / sigma**6)


# ------------------------------------------------------------------------- at x = y


@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_derivatives_at_coincident_points(rng, sigma):
    p = 3
    X = rng.normal(size=(4, p))
    eye = np.eye(p)
    expected_hess = {"gaussian": -1.0, "matern32": -1.0, "matern52": -1.0 / 3.0}
    expected_fourth = {"gaussian": 1.0, "matern52": 1.0 / 3.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ALL:
            k = get_kernel(name, sigma)
            G = k.gradient(X)
            np.testing.assert_array_equal(G[np.arange(4), np.arange(4)], 0.0)
            if name in expected_hess:
                H = k.hessian(X)[np.arange(4), np.arange(4)]
                np.testing.assert_allclose(
                    H, np.broadcast_to(expected_hess[name] * eye / sigma**2, H.shape), rtol=1e-14
                )
            if name in expected_fourth:
                D = k.hessian_hessian(X)[np.arange(4), np.arange(4)]
                np.testing.assert_allclose(
                    D,
                    np.broadcast_to(expected_fourth[name] * _s2(p) / sigma**4, D.shape),
                    rtol=1e-14,
                )


@pytest.mark.parametrize("name", SMOOTH2)
def test_hessian_at_coincident_points_finite_differences(rng, name):
    """The smooth closed forms are also right at r = 0 (FD across the origin)."""
    sigma = 0.9
    x = rng.normal(size=(1, 2))
    k = get_kernel(name, sigma)
    H = k.hessian(x, x)[0, 0]
    h = 1e-6
    fd = np.stack(
        [(k.gradient(x + h * e, x) - k.gradient(x - h * e, x))[0, 0] / (2 * h) for e in np.eye(2)],
        axis=-1,
    )
    # matern32's Hessian is only Lipschitz at 0: O(h) error; the others O(h^2)
    np.testing.assert_allclose(fd, H, rtol=0, atol=10 * h / sigma**3)


@pytest.mark.parametrize("name", SMOOTH4)
def test_hessian_hessian_at_coincident_points_finite_differences(rng, name):
    sigma = 1.1
    x = rng.normal(size=(1, 2))
    k = get_kernel(name, sigma)
    D = k.hessian_hessian(x, x)
    fd = _fd_hessian_in_y(k, x, x)
    # matern52's 4th derivative is only Lipschitz at 0: O(h) error
    np.testing.assert_allclose(D, fd, rtol=0, atol=10 * H2 / sigma**5)


# ------------------------------------------------------------------------- symmetries


@pytest.mark.parametrize("name", ALL)
def test_derivative_symmetries(rng, name):
    k = get_kernel(name, 0.9)
    X = rng.normal(size=(5, 3))
    Y = rng.normal(size=(4, 3))
    np.testing.assert_allclose(
        k.gradient(X, Y), -k.gradient(Y, X).transpose(1, 0, 2), rtol=1e-14, atol=1e-300
    )
    if name in SMOOTH2:
        H = k.hessian(X, Y)
        np.testing.assert_array_equal(H, H.swapaxes(-1, -2))
        np.testing.assert_allclose(H, k.hessian(Y, X).transpose(1, 0, 2, 3), rtol=1e-14)
    if name in SMOOTH4:
        D = k.hessian_hessian(X, Y)
        for perm in itertools.permutations(range(2, 6)):
            np.testing.assert_allclose(D, D.transpose((0, 1) + perm), rtol=1e-13, atol=1e-16)
        np.testing.assert_allclose(
            D, k.hessian_hessian(Y, X).transpose(1, 0, 2, 3, 4, 5), rtol=1e-13, atol=1e-16
        )


def test_second_argument_derivatives_numerically(rng):
    """d/dy of k is -d/dx (checked by finite differences in y, not by the identity)."""
    k = Matern52Kernel(0.8)
    X, Y, mask = _points(rng, sigma=0.8)
    G = k.gradient(X, Y)
    for j in range(3):
        e = np.zeros(3)
        e[j] = H1
        fd_y = (k(X, Y + e) - k(X, Y - e)) / (2 * H1)
        np.testing.assert_allclose(-G[..., j][mask], fd_y[mask], rtol=0, atol=TOL1 / 0.8**3)


# ------------------------------------------------------------------- PSD (hypothesis)

points = st.integers(1, 10).flatmap(
    lambda n: st.integers(1, 3).flatmap(
        lambda p: arrays(np.float64, (n, p), elements=st.floats(-5, 5, allow_nan=False))
    )
)


@settings(max_examples=40, deadline=None)
@given(X=points, sigma=st.floats(0.05, 20.0), name=st.sampled_from(ALL))
def test_gram_matrix_is_psd(X, sigma, name):
    K = get_kernel(name, sigma)(X)
    n = X.shape[0]
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * n


@settings(max_examples=25, deadline=None)
@given(X=points, sigma=st.floats(0.3, 3.0), name=st.sampled_from(SMOOTH4))
def test_joint_derivative_gram_is_psd(X, sigma, name):
    """[<k_xa, k_xb>, <k_xa, d_rs k_xb>; <d_pq k_xa, d_rs k_xb>] is a Gram matrix in H.

    Entries: K, the Hessian (in the second argument = first, by evenness) and
    hessian_hessian; PSD-ness checks the fourth-order tensor as a whole.
    """
    k = get_kernel(name, sigma)
    n, p = X.shape
    K = k(X)
    Hf = k.hessian(X).reshape(n, n * p * p)  # rows a, columns (b, r, s)
    Df = k.hessian_hessian(X).transpose(0, 2, 3, 1, 4, 5).reshape(n * p * p, n * p * p)
    J = np.block([[K, Hf], [Hf.T, Df]])
    np.testing.assert_allclose(J, J.T, rtol=1e-12, atol=1e-14 / sigma**4)
    scale = np.abs(J).max()
    assert np.linalg.eigvalsh(0.5 * (J + J.T)).min() >= -1e-10 * J.shape[0] * scale


# -------------------------------------------------------------------------- errors


# "rbf" is accepted, an alias of "gaussian" (tests/test_conventions.py); "rbf2" is not
@pytest.mark.parametrize("bad", ["rbf2", "laplace", "Matern", "", None, 3, RBF()])
def test_unknown_kernel(bad):
    with pytest.raises(ValueError, match="kernel must be one of") as info:
        get_kernel(bad, sigma=1.0)
    for name in ALL:
        assert name in str(info.value)


@pytest.mark.parametrize("sigma", [None, 0, 0.0, -1.0, np.nan, np.inf, -np.inf, "1", True])
def test_bad_sigma_get_kernel(sigma):
    with pytest.raises(ValueError, match="sigma"):
        get_kernel("gaussian", sigma=sigma)


@pytest.mark.parametrize("cls", list(KERNELS.values()))
@pytest.mark.parametrize("sigma", [0, -0.5, np.nan, np.inf, None])
def test_bad_sigma_constructor(cls, sigma):
    with pytest.raises(ValueError, match="sigma"):
        cls(sigma)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("method", ["__call__", "gradient", "hessian", "hessian_hessian", "diag"])
def test_bad_inputs(name, method):
    k = get_kernel(name, 1.0)
    f = getattr(k, method)
    good = np.zeros((3, 2))
    nan = good.copy()
    nan[1, 1] = np.nan
    inf = good.copy()
    inf[0, 0] = np.inf
    # input errors are reported before the differentiability check would apply only if
    # the method exists for the kernel; both are ValueError naming the problem
    for X, pattern in [
        (nan, "X contains NaN"),
        (inf, "X contains NaN or infinite"),
        (np.zeros(3), "X must be a 2-D"),
        (np.zeros((2, 2, 2)), "X must be a 2-D"),
        ([["a"]], "X must be a numeric"),
        (np.zeros((0, 2)), "X must have at"),
    ]:
        if method in ("hessian", "hessian_hessian") and (
            k.differentiability < (2 if method == "hessian" else 4)
        ):
            pattern = "differentiable"
        with pytest.raises(ValueError, match=pattern):
            f(X)
    if method == "diag":
        return
    if method in ("hessian", "hessian_hessian") and (
        k.differentiability < (2 if method == "hessian" else 4)
    ):
        return
    with pytest.raises(ValueError, match="Y contains NaN"):
        f(good, nan)
    with pytest.raises(ValueError, match="Y must be a 2-D"):
        f(good, np.zeros(2))
    with pytest.raises(ValueError, match="X and Y have different numbers of features"):
        f(good, np.zeros((4, 3)))


def test_not_differentiable_enough():
    X = np.zeros((2, 2))
    with pytest.raises(ValueError, match="'exponential' kernel is not twice differentiable") as e:
        ExponentialKernel(1.0).hessian(X)
    msg = str(e.value)
    assert "kink at x=y" in msg
    assert "'gaussian', 'matern32' or 'matern52'" in msg
    with pytest.raises(ValueError, match="'exponential' kernel is not 4 times differentiable"):
        ExponentialKernel(1.0).hessian_hessian(X)
    with pytest.raises(ValueError, match="'matern32' kernel is not 4 times") as e:
        Matern32Kernel(1.0).hessian_hessian(X)
    assert "'gaussian' or 'matern52'" in str(e.value)


# -------------------------------------------------------------------- numerics, layering


@pytest.mark.parametrize("name", ALL)
def test_no_warnings_and_finite_at_extremes(name):
    """Duplicated points, tiny and huge distances: no RuntimeWarning, finite output."""
    k = get_kernel(name, 1e-3)
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1e-300, 0.0], [1e6, -1e6], [1e-9, 1e-9]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs = [k(X), k.gradient(X)]
        if k.differentiability >= 2:
            outs.append(k.hessian(X))
        if k.differentiability >= 4:
            outs.append(k.hessian_hessian(X))
    for out in outs:
        assert np.all(np.isfinite(out))
    assert outs[0][0, 1] == 1.0


def test_kernels_import_nothing_from_other_layers():
    root = pathlib.Path(kernels_pkg.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
                assert node.level == 0, f"{path.name}: use absolute imports"
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            for mod in mods:
                if mod == "psdsos" or mod.startswith("psdsos."):
                    assert mod == "psdsos._validation" or mod.startswith("psdsos.kernels"), (
                        f"{path.name} imports {mod}"
                    )


# ---------------------------------------------------------------------------------------
# scale_bandwidth: sigma="scale"
# ---------------------------------------------------------------------------------------
def test_scale_bandwidth_matches_sklearn_gamma_scale():
    """Our Gaussian kernel with sigma = scale_bandwidth(X) equals sklearn's SVC
    gamma="scale" kernel exp(-gamma ||x - y||^2), gamma = 1 / (n_features X.var())."""
    from sklearn.metrics.pairwise import rbf_kernel

    from psdsos.kernels import scale_bandwidth

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) * [1.0, 5.0, 0.1] + [0.0, 100.0, -3.0]
    sigma = scale_bandwidth(X)
    gamma = 1.0 / (X.shape[1] * X.var())
    assert sigma == pytest.approx(np.sqrt(1.0 / (2.0 * gamma)), rel=1e-13)
    np.testing.assert_allclose(GaussianKernel(sigma)(X, X), rbf_kernel(X, gamma=gamma),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("a", [1e-150, 1e-3, 7.0, 1e150, -2.0])
def test_scale_bandwidth_is_proportional_to_the_scale(a):
    from psdsos.kernels import scale_bandwidth

    X = np.random.default_rng(1).uniform(400.0, 5000.0, size=(20, 2))
    assert scale_bandwidth(a * X + 3.0 * a) == pytest.approx(abs(a) * scale_bandwidth(X),
                                                             rel=1e-12)


@pytest.mark.parametrize("X", [np.zeros((4, 2)), np.full((3, 1), -7.5)])
def test_scale_bandwidth_refuses_zero_spread(X):
    from psdsos.kernels import scale_bandwidth

    with pytest.raises(ValueError, match="zero spread.*sigma"):
        scale_bandwidth(X)


@pytest.mark.parametrize("X, match", [(np.array([1.0, 2.0]), "X"),
                                      (np.array([[1.0], [np.nan]]), "X")])
def test_scale_bandwidth_validates_x(X, match):
    from psdsos.kernels import scale_bandwidth

    with pytest.raises(ValueError, match=match):
        scale_bandwidth(X)


@pytest.mark.parametrize("name", SMOOTH2)
@pytest.mark.parametrize("p", [1, 3])
def test_hessian_sum_matches_contracted_hessian(rng, name, p, monkeypatch):
    # Small blocks so that several blocks (and a ragged last one) are exercised.
    monkeypatch.setattr("psdsos.kernels._base._SUM_BLOCK_ENTRIES", 7 * 5 * p)
    k = get_kernel(name, 1.3)
    X, Y = rng.normal(size=(23, p)), rng.normal(size=(5, p))
    Y[2] = X[4]  # a coincident pair (rho = 0)
    w = rng.normal(size=5)
    ref = np.einsum("nmpq,m->npq", k.hessian(X, Y), w)
    S = k.hessian_sum(X, Y, w)
    assert S.shape == (23, p, p)
    np.testing.assert_allclose(S, ref, rtol=1e-12, atol=1e-14 * np.abs(ref).max())
    np.testing.assert_array_equal(S, S.transpose(0, 2, 1))


def test_hessian_sum_validates(rng):
    k = get_kernel("gaussian", 1.0)
    X, Y = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    with pytest.raises(ValueError, match="weights must be a finite vector of length 3"):
        k.hessian_sum(X, Y, np.ones(2))
    with pytest.raises(ValueError, match="weights"):
        k.hessian_sum(X, Y, np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="hessian_sum"):
        get_kernel("exponential", 1.0).hessian_sum(X, Y, np.ones(3))


def test_scale_bandwidth_weights_are_repeated_rows():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 3)) * 1e150
    w = np.array([1, 2, 3, 1, 1, 4, 2])
    ref = scale_bandwidth(np.repeat(X, w, axis=0))
    np.testing.assert_allclose(scale_bandwidth(X, w), ref, rtol=1e-12)
    np.testing.assert_allclose(scale_bandwidth(X, 2.5 * w), ref, rtol=1e-12)
    np.testing.assert_allclose(scale_bandwidth(X, np.ones(7)), scale_bandwidth(X), rtol=1e-12)
