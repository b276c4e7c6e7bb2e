"""The contract every registered kernel satisfies (in the manner of pymanopt's
``_manifold_tests.py``): Gram matrices symmetric positive semi-definite on random points,
``diag`` the diagonal of the Gram matrix (constant for the radial kernels), and the
derivatives the kernel offers equal to finite differences of the lower-order ones.

``check_kernel_contract`` is also run on the plug-in kernel of
tests/test_plugin_kernels_losses.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from psdsos.kernels import Kernel, get_kernel, kernel_names

#: Every registered kernel (radial and Gram-only) when this module is collected.
NAMES = kernel_names(radial_only=False)


def _kernel(name, sigma=0.8):
    return get_kernel(name, sigma)


def _points(rng, n=7, p=3, sigma=1.0):
    """Random points at distances of order sigma (none equal: the exponential kernel's
    derivatives are one-sided at x = y)."""
    return sigma * rng.standard_normal((n, p))


def _fd(f, x, eps):
    """Central differences of f (array-valued) along each coordinate of the point x (p,):
    an array of shape f(x).shape + (p,)."""
    cols = []
    for q in range(x.shape[0]):
        e = np.zeros_like(x)
        e[q] = eps
        cols.append((f(x + e) - f(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


def _close(a, b, rtol=1e-6):
    scale = max(np.abs(b).max(), 1e-300)
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def check_gram(kernel, X):
    """Gram matrix symmetric PSD, ``diag`` its diagonal (constant for radial kernels)."""
    K = kernel(X)
    assert K.shape == (len(X), len(X))
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14 * max(np.abs(K).max(), 1.0))
    w = np.linalg.eigvalsh(0.5 * (K + K.T))
    assert w.min() >= -1e-10 * max(w.max(), 1.0) * len(X)
    d = kernel.diag(X)
    np.testing.assert_allclose(d, np.diag(K), rtol=1e-12, atol=1e-300)
    if isinstance(kernel, Kernel):
        np.testing.assert_allclose(d, np.full(len(X), d[0]), rtol=1e-12)


def check_derivatives(kernel, X, Y):
    """gradient, hessian, hessian_sum, hessian_gradient and hessian_hessian (as far as the
    kernel's differentiability goes) against central differences of the lower orders."""
    sigma = kernel.sigma
    eps = 1e-5 * sigma
    x = X[0]
    G = kernel.gradient(X[:1], Y)[0]  # (m, p)
    _close(G, _fd(lambda z: kernel(z[None, :], Y)[0], x, eps))
    if kernel.differentiability < 2:
        return
    H = kernel.hessian(X[:1], Y)[0]  # (m, p, p)
    np.testing.assert_allclose(H, H.transpose(0, 2, 1), rtol=0, atol=1e-14 * np.abs(H).max())
    _close(H, _fd(lambda z: kernel.gradient(z[None, :], Y)[0], x, eps))
    w = np.linspace(-1.0, 2.0, len(Y))
    S = kernel.hessian_sum(X, Y, w)
    _close(S, np.einsum("ijpq,j->ipq", kernel.hessian(X, Y), w), rtol=1e-12)
    if kernel.differentiability < 4:
        return
    # T[j, p, q, r] = d/dy_r of H(x, y_j)[p, q]: differences in the second argument
    y = Y[0]
    T = kernel.hessian_gradient(X[:1], Y[:1])[0, 0]
    _close(T, _fd(lambda z: kernel.hessian(X[:1], z[None, :])[0, 0], y, eps))
    D = kernel.hessian_hessian(X[:1], Y[:1])[0, 0]
    _close(D, _fd(lambda z: kernel.hessian_gradient(X[:1], z[None, :])[0, 0], y, eps))


def check_kernel_contract(kernel, seed=0):
    """Every check of this module on one kernel object."""
    rng = np.random.default_rng(seed)
    sigma = getattr(kernel, "sigma", 1.0)
    X = _points(rng, sigma=sigma)
    check_gram(kernel, X)
    if isinstance(kernel, Kernel):
        check_derivatives(kernel, X, _points(rng, n=5, sigma=sigma))


@pytest.mark.parametrize("name", NAMES)
def test_contract(name):
    check_kernel_contract(_kernel(name))


@pytest.mark.parametrize("name", NAMES)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 3)),
                elements=st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False)))
def test_gram_is_symmetric_psd_on_any_points(name, X):
    check_gram(_kernel(name), X)


@pytest.mark.parametrize("name", [n for n in NAMES if n in kernel_names()])
def test_radial_value_at_zero_distance_is_one(name):
    k = _kernel(name)
    X = _points(np.random.default_rng(1))
    np.testing.assert_allclose(k.diag(X), 1.0)
    np.testing.assert_allclose(np.diag(k(X)), 1.0, rtol=1e-15)
