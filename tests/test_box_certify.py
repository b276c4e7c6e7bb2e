"""Certified lower bounds over a box: representer radii and branch and bound.

References: the exact RKHS norms ||L_x k - L_c k||^2 from the kernels' derivative identities
(Kernel.__call__, .hessian, .hessian_hessian), the minimum of g on dense grids and by
multistart L-BFGS-B, and closed-form minima of the constraint functions of Gaussian bumps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.polynomial import hermite_e
from scipy.optimize import minimize

from psdsos.kernels import ExponentialKernel, GaussianKernel, Matern32Kernel, Matern52Kernel
from psdsos.sos import (
    BoxCertificate,
    certify_box,
    kernel_constraint_certificate,
    representer_radius,
)
from psdsos.sos._box_certify import (
    _gaussian_hessian_curvatures,
    _gaussian_hessian_slopes,
    _pairwise_sum,
)

SUPPORTED = [
    (GaussianKernel, "value"), (GaussianKernel, "derivative"), (GaussianKernel, "hessian"),
    (Matern32Kernel, "value"), (Matern32Kernel, "derivative"),
    (Matern52Kernel, "value"), (Matern52Kernel, "derivative"), (Matern52Kernel, "hessian"),
]


def exact_sq_norm(kernel, kind, delta, *, feature=0, u=None):
    """||L_{c+delta} k - L_c k||_H^2 = L L k(0) + L L k(0) - 2 L_x L_c k(delta)."""
    zero = np.zeros((1, delta.shape[1]))
    if kind == "value":
        return 2.0 * (1.0 - kernel(delta, zero)[:, 0])
    if kind == "derivative":  # <d_p k_x, d_p k_c> = -Hess k(x - c)[p, p]
        h0 = kernel.hessian(zero, zero)[0, 0, feature, feature]
        return 2.0 * (kernel.hessian(delta, zero)[:, 0, feature, feature] - h0)
    D0 = np.einsum("pqrs,p,q,r,s->", kernel.hessian_hessian(zero, zero)[0, 0], u, u, u, u)
    D = np.einsum("npqrs,p,q,r,s->n", kernel.hessian_hessian(delta, zero)[:, 0], u, u, u, u)
    return 2.0 * (D0 - D)


@pytest.mark.parametrize(("cls", "kind"), SUPPORTED)
@pytest.mark.parametrize("p", [1, 2, 3])
def test_radius_bounds_the_exact_norm(cls, kind, p, rng):
    kernel = cls(sigma=0.7)
    subset = list(range(p))[: max(1, p - 1)]
    for scale in (0.01, 0.3, 2.0):
        h = scale * rng.uniform(0.2, 1.0, size=(1, p))
        r = representer_radius(kernel, kind, h, feature=p - 1, subset=subset)[0]
        corners = np.array(list(itertools.product([-1.0, 1.0], repeat=p))) * h
        inner = rng.uniform(-1.0, 1.0, size=(200, p)) * h
        delta = np.concatenate([corners, inner, 0.5 * corners])
        if kind == "hessian":
            worst = 0.0
            for _ in range(20):
                u = np.zeros(p)
                u[subset] = rng.normal(size=len(subset))
                u /= np.linalg.norm(u)
                worst = max(worst, exact_sq_norm(kernel, kind, delta, u=u).max())
        else:
            worst = exact_sq_norm(kernel, kind, delta, feature=p - 1).max()
        assert r >= np.sqrt(max(worst, 0.0)) * (1.0 - 1e-10)
        # not wildly loose: within a factor 4 of the sampled supremum (the corner is exact
        # for the value of the decreasing profiles)
        assert r <= 4.0 * np.sqrt(worst) + 1e-12
    small = representer_radius(kernel, kind, np.full((3, p), 1e-8) * [[1], [1e-2], [1e-4]],
                               feature=0, subset=subset)
    assert np.all(np.diff(small) < 0) and small[-1] < 1e-4


def test_radius_value_is_exact_at_the_corner():
    kernel = GaussianKernel(sigma=1.0)
    r = representer_radius(kernel, "value", [[0.3, 0.4]])[0]
    np.testing.assert_allclose(r, np.sqrt(2.0 * (1.0 - np.exp(-0.125))), rtol=1e-14)


@pytest.mark.parametrize("j", [2, 3, 4])
def test_gaussian_taylor_constant_is_attained_in_one_dimension(j):
    # ||d^j k_0||^2 = (-1)^j kappa^(2j)(0) sigma^(-2j), kappa^(n)(x) = (-1)^n He_n(x) e^{-x^2/2}
    he = hermite_e.hermeval(0.0, [0] * (2 * j) + [1])
    double_factorial = float(np.prod(np.arange(2 * j - 1, 0, -2)))
    assert (-1) ** j * he == pytest.approx(double_factorial)


def test_gaussian_hessian_slopes_match_the_kernel(rng):
    kernel = GaussianKernel(sigma=0.8)
    X, C, a = rng.normal(size=(5, 3)), rng.normal(size=(7, 3)), rng.normal(size=7)
    hess, T = _gaussian_hessian_slopes(kernel, X, C, a)
    np.testing.assert_allclose(hess, kernel.hessian_sum(X, C, a), atol=1e-13)
    # hessian_gradient differentiates the centre once: d/dx = -d/dy
    ref = -np.einsum("nmpqr,m->nrpq", kernel.hessian_gradient(X, C), a)
    np.testing.assert_allclose(T, ref, atol=1e-13)


@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.floats(0.0, 12.0))
def test_pairwise_sum_error_is_within_its_bound(m, seed, spread):
    """The cascade sum's error is at most ceil(log2 m) u times the sum of the magnitudes
    (the allowance the Gaussian Hessian block's certificate uses), against math.fsum, with
    cancelling terms of very different sizes."""
    import math

    r = np.random.default_rng(seed)
    t = r.standard_normal((3, m, 2)) * 10.0 ** r.uniform(-spread, spread, (3, m, 2))
    t[0] -= t[0].mean(axis=0)  # heavy cancellation
    got = _pairwise_sum(t)
    assert got.shape == (3, 2)
    u = np.finfo(np.float64).eps / 2
    depth = math.ceil(math.log2(m)) if m > 1 else 0
    for i, j in itertools.product(range(3), range(2)):
        exact = math.fsum(t[i, :, j].tolist())
        bound = depth * u * float(np.abs(t[i, :, j]).sum()) * (1 + 1e-12)
        assert abs(got[i, j] - exact) <= bound


def test_hessian_allowance_does_not_grow_with_the_number_of_centres():
    """A near-interpolant of a concave quadratic on 900 centres with cancelling coefficients
    (|a|_1 about 1e8): lambda_min(-Hess f) is about 1 on the box's interior.  The rounding
    allowance of the Gaussian Hessian block grows with log2(m), not with m: 32 (m + p + 1) u
    |a|_1 ||L k|| |S| would be 2.6e-3 here, more than the slack asked, the pairwise one 6e-5.
    The certified bound is below the grid's minimum and within 2e-3 of it."""
    kernel = GaussianKernel(sigma=1.0)
    g1 = np.linspace(-2.0, 2.0, 30)
    C = np.array(list(itertools.product(g1, g1)))
    K = kernel(C, C)
    a = np.linalg.solve(K + 1e-12 * np.eye(len(C)), -0.5 * (C**2).sum(axis=1))
    assert np.abs(a).sum() > 5e7
    lo, hi = -np.full(2, 0.5), np.full(2, 0.5)
    cert = kernel_constraint_certificate(kernel, C, a, np.zeros(3), "hessian", lo, hi,
                                         sign=-1.0, subset=[0, 1], goal=np.inf, atol=1e-3,
                                         max_cells=20_000)
    G = np.array(list(itertools.product(*[np.linspace(-0.5, 0.5, 41)] * 2)))
    lam = np.linalg.eigvalsh(-kernel.hessian_sum(G, C, a))[:, 0]
    assert cert.status == "certified"
    assert cert.bound <= lam.min()
    assert cert.bound >= lam.min() - 2e-3


def test_gaussian_hessian_curvatures_match_finite_differences(rng):
    # d/dx_r of the slopes T[:, s] (= d_s Hess f) by central differences
    kernel = GaussianKernel(sigma=0.7)
    X, C, a = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=6)
    Q = _gaussian_hessian_curvatures(kernel, X, C, a)
    step = 1e-5
    for r in range(3):
        e = np.zeros(3)
        e[r] = step
        Tp = _gaussian_hessian_slopes(kernel, X + e, C, a)[1]
        Tm = _gaussian_hessian_slopes(kernel, X - e, C, a)[1]
        # T[n, s, p, q] = d_s d_p d_q f; Q[n, p, q, r, s] = d_p d_q d_r d_s f
        np.testing.assert_allclose(np.moveaxis((Tp - Tm) / (2 * step), 1, -1),
                                   Q[:, :, :, r, :], atol=1e-7)
    # the kernel's own fourth derivatives, contracted with a
    np.testing.assert_allclose(Q, np.einsum("nmpqrs,m->npqrs", kernel.hessian_hessian(X, C), a),
                               atol=1e-12)
    # symmetric in its four indices
    np.testing.assert_allclose(Q, np.transpose(Q, (0, 2, 1, 3, 4)), atol=1e-13)
    np.testing.assert_allclose(Q, np.transpose(Q, (0, 3, 2, 1, 4)), atol=1e-13)
    np.testing.assert_allclose(Q, np.transpose(Q, (0, 1, 2, 4, 3)), atol=1e-13)


def random_model(rng, p, m=12):
    centers = rng.uniform(-1.0, 1.0, size=(m, p))
    coef = rng.normal(size=m)
    affine = rng.normal(size=p + 1)
    return centers, coef, affine


def constraint(kernel, centers, coef, affine, kind, X, *, sign=1.0, feature=0, subset=None,
               offset=0.0):
    """g at the rows of X from the full kernel arrays (no hessian_sum, no chunks)."""
    if kind == "value":
        return sign * (affine[0] + X @ affine[1:] + kernel(X, centers) @ coef - offset)
    if kind == "derivative":
        return sign * (affine[1 + feature] + kernel.gradient(X, centers)[:, :, feature] @ coef)
    H = np.einsum("nmpq,m->npq", kernel.hessian(X, centers), coef)[:, subset][:, :, subset]
    return np.linalg.eigvalsh(sign * H)[:, 0]


def grid_min(fun, lo, hi, n):
    axes = [np.linspace(lo[q], hi[q], n) for q in range(len(lo))]
    X = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    return fun(X).min()


def multistart_min(fun, lo, hi, rng, starts=8):
    best = np.inf
    for x0 in rng.uniform(lo, hi, size=(starts, len(lo))):
        res = minimize(lambda x: fun(x[None])[0], x0, method="L-BFGS-B",
                       bounds=list(zip(lo, hi, strict=True)))
        best = min(best, res.fun)
    return best


KINDS = [("value", 1.0), ("value", -1.0), ("derivative", 1.0), ("derivative", -1.0),
         ("hessian", 1.0), ("hessian", -1.0)]


@pytest.mark.parametrize(("kind", "sign"), KINDS)
@pytest.mark.parametrize(("p", "n_grid"), [(1, 4001), (2, 121), (3, 25)])
@pytest.mark.parametrize("cls", [GaussianKernel, Matern52Kernel])
def test_certified_bound_is_below_the_grid_and_multistart_minimum(cls, kind, sign, p, n_grid,
                                                                  rng):
    kernel = cls(sigma=0.6)
    centers, coef, affine = random_model(rng, p)
    lo, hi = -np.ones(p), np.array([1.0, 0.5, 0.8][:p])
    subset = [0] if p == 1 else [0, p - 1]
    kw = dict(sign=sign, feature=p - 1, subset=subset, offset=0.3)
    tol = 1e-3 if cls is GaussianKernel else 3e-2
    cert = kernel_constraint_certificate(kernel, centers, coef, affine, kind, lo, hi,
                                         goal=np.inf, tol=tol, max_cells=60_000, **kw)

    def fun(X):
        return constraint(kernel, centers, coef, affine, kind, X, **kw)

    true_min = min(grid_min(fun, lo, hi, n_grid), multistart_min(fun, lo, hi, rng))
    assert isinstance(cert, BoxCertificate)
    assert cert.bound <= true_min + 1e-12
    assert cert.sampled_min >= true_min - 1e-9 or cert.sampled_min >= cert.bound
    assert fun(cert.argmin[None])[0] == pytest.approx(cert.sampled_min, abs=1e-10)
    if cls is GaussianKernel:  # tight: the bound is near the minimum
        assert cert.status == "certified"
        assert cert.bound >= true_min - 0.05 * max(1.0, abs(true_min))


@pytest.mark.parametrize(("kind", "j"), [("value", 2), ("derivative", 3), ("hessian", 4)])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_gaussian_taylor_remainder_is_sharp(kind, j, sign):
    # f = j-th central difference of k(., c) in c at 0 ~ the representer of d^j at 0, for which
    # Cauchy-Schwarz |d^2 L f(0)| <= ||f|| sqrt((2j - 1)!!) / sigma^j is an equality: on the
    # cell [-h, h] the Taylor lower bound g(0) - C h^2 / 2 is within O(h^4) of min g
    eps, h = 0.05, 0.05
    kernel = GaussianKernel(sigma=1.0)
    centers = ((j / 2 - np.arange(j + 1)) * eps)[:, None]
    coef = np.array([(-1) ** i * np.prod(np.arange(j - i + 1, j + 1)) / np.prod(np.arange(1, i + 1))
                     for i in range(j + 1)]) / eps**j
    kw = dict(sign=sign, feature=0, subset=[0])
    cert = kernel_constraint_certificate(kernel, centers, coef, np.zeros(2), kind, [-h], [h],
                                         initial=1, max_cells=1, **kw)
    X = np.linspace(-h, h, 2001)[:, None]
    g = constraint(kernel, centers, coef, np.zeros(2), kind, X, **kw)
    remainder = 0.5 * np.sqrt(coef @ kernel(centers) @ coef) * np.sqrt(
        float(np.prod(np.arange(2 * j - 1, 0, -2)))) * h**2
    assert cert.bound <= g.min()
    if g.min() < g[1000]:  # concave at 0: the remainder is attained at the cell's edges
        assert g.min() - cert.bound <= 0.05 * remainder


@pytest.mark.parametrize(("cls", "kind"), SUPPORTED)
@pytest.mark.parametrize("p", [1, 2])
def test_one_cell_bound_is_below_the_cell_minimum(cls, kind, p, rng):
    # max_cells=1 stops at the initial single cell: the bound is that cell's lower bound
    kernel = cls(sigma=0.5)
    centers, coef, affine = random_model(rng, p, m=8)
    kw = dict(sign=-1.0, feature=0, subset=list(range(p)), offset=0.1)

    def fun(X):
        return constraint(kernel, centers, coef, affine, kind, X, **kw)

    for half in (1e-3, 1e-2, 1e-1, 0.5):
        for _ in range(4):
            mid = rng.uniform(-1.0, 1.0, size=p)
            lo, hi = mid - half, mid + half * rng.uniform(0.2, 1.0, size=p)
            cert = kernel_constraint_certificate(kernel, centers, coef, affine, kind, lo, hi,
                                                 initial=1, max_cells=1, **kw)
            assert cert.n_cells == 1
            assert cert.bound <= grid_min(fun, lo, hi, 401 if p == 1 else 41) + 1e-12


@pytest.mark.parametrize("kind", ["value", "derivative", "hessian"])
@pytest.mark.parametrize("p", [1, 2])
def test_first_order_radius_alone_is_sound(kind, p, rng):
    # certify_box with representer_radius only (no Taylor bound), Gaussian kernel
    kernel = GaussianKernel(sigma=0.5)
    centers, coef, affine = random_model(rng, p, m=6)
    affine[1:] = 0.0
    lo, hi = -np.ones(p), np.ones(p)
    norm = np.sqrt(coef @ kernel(centers) @ coef)

    def fun(X):
        return constraint(kernel, centers, coef, affine, kind, X, subset=list(range(p)))

    def radius(H):
        return norm * representer_radius(kernel, kind, H, feature=0, subset=list(range(p)))

    tol = 1e-2 * norm * {"value": 1.0, "derivative": 2.0, "hessian": 4.0 * np.sqrt(3.0)}[kind]
    cert = certify_box(fun, radius, lo, hi, goal=np.inf, tol=tol, max_cells=100_000)
    assert cert.bound <= grid_min(fun, lo, hi, 2001 if p == 1 else 201) + 1e-12
    assert cert.status == "certified"
    assert cert.bound >= cert.sampled_min - tol - 1e-12


@given(seed=st.integers(0, 2**31 - 1), p=st.integers(1, 2),
       kind=st.sampled_from(["value", "derivative", "hessian"]),
       sigma=st.floats(0.2, 2.0))
def test_soundness_property(seed, p, kind, sigma):
    rng = np.random.default_rng(seed)
    kernel = GaussianKernel(sigma=sigma)
    centers, coef, affine = random_model(rng, p, m=5)
    lo = rng.uniform(-1.0, 0.0, size=p)
    hi = lo + rng.uniform(0.0, 1.5, size=p)
    cert = kernel_constraint_certificate(kernel, centers, coef, affine, kind, lo, hi,
                                         goal=np.inf, tol=1e-3, max_cells=20_000,
                                         feature=0, subset=list(range(p)))

    def fun(X):
        return constraint(kernel, centers, coef, affine, kind, X, subset=list(range(p)))

    assert cert.bound <= grid_min(fun, lo, hi, 1001 if p == 1 else 61) + 1e-12


BUMP_MINIMA = [  # f = exp(-|x|^2 / (2 sigma^2)) on [-1, 1]^p, sigma = 1/2
    ("value", 1.0, lambda s, p: np.exp(-p / (2 * s**2)), 1.0),
    ("derivative", 1.0, lambda s, p: -np.exp(-0.5) / s, 1.0),
    ("hessian", 1.0, lambda s, p: -1.0 / s**2, np.sqrt(3.0)),
    ("hessian", -1.0, lambda s, p: -2.0 * np.exp(-1.5) / s**2, np.sqrt(3.0)),
]


@pytest.mark.parametrize(("kind", "sign", "minimum", "norm0"), BUMP_MINIMA)
@pytest.mark.parametrize("p", [1, 2])
def test_bound_converges_to_the_closed_form_minimum(kind, sign, minimum, norm0, p):
    sigma = 0.5
    kernel = GaussianKernel(sigma=sigma)
    true_min = minimum(sigma, p)
    scale = norm0 / sigma ** {"value": 0, "derivative": 1, "hessian": 2}[kind]
    errors = []
    for tol in (1e-2, 1e-3, 1e-4):
        cert = kernel_constraint_certificate(kernel, np.zeros((1, p)), [1.0], np.zeros(p + 1),
                                             kind, -np.ones(p), np.ones(p), sign=sign,
                                             feature=0, subset=list(range(p)), goal=np.inf,
                                             tol=tol)
        assert cert.status == "certified"
        assert cert.bound <= true_min + 1e-12
        assert true_min - cert.bound <= tol * scale * (1 + 1e-9) + 1e-12
        errors.append(true_min - cert.bound)
    assert errors[-1] < errors[0]


@pytest.mark.parametrize(("kind", "sign", "minimum", "norm0"), BUMP_MINIMA)
def test_atol_lets_the_goal_follow_a_deeper_minimum(kind, sign, minimum, norm0):
    # a goal above the true minimum (a search that missed it): with tol=0 no cell around
    # the minimiser can ever settle ("sampled"); with atol the goal follows the branch and
    # bound's own samples and the bound is proved within atol of the minimum
    sigma, p = 0.5, 2
    kernel = GaussianKernel(sigma=sigma)
    true_min = minimum(sigma, p)
    args = (kernel, np.zeros((1, p)), [1.0], np.zeros(p + 1), kind, -np.ones(p), np.ones(p))
    kw = dict(sign=sign, feature=0, subset=[0, 1], goal=true_min + 0.1, max_cells=20_000)
    stuck = kernel_constraint_certificate(*args, tol=0.0, **kw)
    assert stuck.status == "sampled" and stuck.bound <= true_min + 1e-12
    atol = 1e-3 * norm0 / sigma ** {"value": 0, "derivative": 1, "hessian": 2}[kind]
    cert = kernel_constraint_certificate(*args, atol=atol, **kw)
    assert cert.status == "certified"
    assert true_min - atol * (1 + 1e-9) - 1e-12 <= cert.bound <= true_min + 1e-12
    with pytest.raises(ValueError, match="atol"):
        kernel_constraint_certificate(*args, atol=-1.0, **kw)


@pytest.mark.parametrize(("cls", "kind"), [(Matern32Kernel, "derivative"),
                                           (Matern52Kernel, "hessian")])
def test_matern_bound_converges(cls, kind):
    # the first-order Matern radii shrink like sqrt(h): coarser tolerances
    kernel = cls(sigma=0.5)
    fun_kw = dict(feature=0, subset=[0])
    X = np.linspace(-1, 1, 20001)[:, None]
    true_min = constraint(kernel, np.zeros((1, 1)), np.ones(1), np.zeros(2), kind, X,
                          **fun_kw).min()
    gaps = []
    for tol in (1e-1, 3e-2):
        cert = kernel_constraint_certificate(kernel, np.zeros((1, 1)), [1.0], np.zeros(2), kind,
                                             [-1.0], [1.0], goal=np.inf, tol=tol, **fun_kw)
        assert cert.status == "certified" and cert.bound <= true_min + 1e-12
        gaps.append(true_min - cert.bound)
    assert gaps[1] < gaps[0]


def test_status_certified_with_margin_and_sampled_on_tiny_budget(rng):
    kernel = GaussianKernel(sigma=0.5)
    # f = 2 + bump >= 2 on the box: "value" with lower 1 is certified at once
    cert = kernel_constraint_certificate(kernel, np.zeros((1, 2)), [1.0], [2.0, 0.0, 0.0],
                                         "value", -np.ones(2), np.ones(2), offset=1.0)
    assert cert.status == "certified" and cert.certified and cert.bound > 0.0
    assert cert.goal == 0.0 and cert.n_cells <= 100
    centers, coef, affine = random_model(rng, 2, m=30)
    tiny = kernel_constraint_certificate(kernel, centers, coef, affine, "hessian", -np.ones(2),
                                         np.ones(2), subset=[0, 1], goal=np.inf, tol=1e-6,
                                         max_cells=40)
    assert tiny.status == "sampled" and not tiny.certified
    assert tiny.n_cells <= 40 and tiny.bound <= tiny.sampled_min
    full = kernel_constraint_certificate(kernel, centers, coef, affine, "hessian", -np.ones(2),
                                         np.ones(2), subset=[0, 1], goal=np.inf, tol=1e-3)
    assert tiny.bound <= full.sampled_min and full.bound >= tiny.bound


def test_certify_box_on_a_quadratic():
    # g = x^2 - 0.25 on [-1, 2]: min -0.25; |g(x) - g(c)| <= 2|c| h + h^2
    cert = certify_box(lambda C: C[:, 0] ** 2 - 0.25, lambda H: np.zeros(len(H)), [-1.0],
                       [2.0], goal=0.0, max_cells=1000)
    assert cert.status == "sampled" and cert.n_cells <= 1000  # a radius 0 never settles g < 0
    assert cert.bound == cert.sampled_min < 0.0
    exact = certify_box(
        lambda C, H: (C[:, 0] ** 2 - 0.25,
                      np.where(np.abs(C[:, 0]) <= H[:, 0], 0.0,
                               (np.abs(C[:, 0]) - H[:, 0]) ** 2) - 0.25),
        None, [-1.0], [2.0], goal=np.inf, tol=1e-6)
    assert exact.status == "certified"
    assert -0.25 - 1e-6 <= exact.bound <= -0.25


@pytest.mark.parametrize("split", ["longest", "all"])
def test_split_rules_agree(split):
    kernel = GaussianKernel(sigma=0.5)
    cert = kernel_constraint_certificate(kernel, np.zeros((1, 2)), [1.0], np.zeros(3),
                                         "derivative", -np.ones(2), np.ones(2), feature=0,
                                         goal=np.inf, tol=1e-3, split=split)
    assert cert.status == "certified"
    assert -np.exp(-0.5) / 0.5 - 2e-3 <= cert.bound <= -np.exp(-0.5) / 0.5


def test_degenerate_box_and_initial_grid():
    kernel = GaussianKernel(sigma=0.5)
    cert = kernel_constraint_certificate(kernel, np.zeros((1, 2)), [1.0], np.zeros(3), "value",
                                         [0.0, -1.0], [0.0, 1.0], goal=np.inf, tol=1e-4,
                                         initial=[1, 3])
    assert cert.status == "certified"
    assert cert.bound == pytest.approx(np.exp(-2.0), abs=1e-4) and cert.argmin[0] == 0.0


@pytest.mark.parametrize("split", ["longest", "all"])
def test_a_point_box_is_not_split(split):
    cert = certify_box(lambda C: C[:, 0] - 1.0, lambda H: np.zeros(len(H)), [0.5, 2.0],
                       [0.5, 2.0], goal=0.0, split=split)
    assert cert.status == "sampled" and cert.n_cells == 1 and cert.bound == -0.5
    cert = certify_box(lambda C: C[:, 0] - 1.0, lambda H: np.zeros(len(H)), [0.5, 2.0],
                       [0.5, 2.0], goal=0.0, tol=0.0, split=split)
    assert cert.status == "certified" and cert.bound == -0.5 and cert.goal == -0.5


def test_validation():
    k = GaussianKernel(sigma=1.0)
    C, a, b = np.zeros((2, 2)), np.ones(2), np.zeros(3)
    lo, hi = -np.ones(2), np.ones(2)
    call = kernel_constraint_certificate
    with pytest.raises(ValueError, match="lo must be <= hi"):
        call(k, C, a, b, "value", hi, lo)
    with pytest.raises(ValueError, match="kind"):
        call(k, C, a, b, "curvature", lo, hi)
    with pytest.raises(ValueError, match="coef"):
        call(k, C, np.ones(3), b, "value", lo, hi)
    with pytest.raises(ValueError, match="affine"):
        call(k, C, a, np.zeros(2), "value", lo, hi)
    with pytest.raises(ValueError, match="lo and hi must have 2"):
        call(k, C, a, b, "value", [0.0], [1.0])
    with pytest.raises(ValueError, match="centers"):
        call(k, np.zeros(2), a, b, "value", lo, hi)
    with pytest.raises(ValueError, match="feature"):
        call(k, C, a, b, "derivative", lo, hi)
    with pytest.raises(ValueError, match="feature"):
        call(k, C, a, b, "derivative", lo, hi, feature=2)
    with pytest.raises(ValueError, match="subset"):
        call(k, C, a, b, "hessian", lo, hi, subset=[])
    with pytest.raises(ValueError, match="subset"):
        call(k, C, a, b, "hessian", lo, hi, subset=[0, 0])
    with pytest.raises(ValueError, match="sign"):
        call(k, C, a, b, "value", lo, hi, sign=0.0)
    with pytest.raises(ValueError, match="goal"):
        call(k, C, a, b, "value", lo, hi, goal=float("nan"))
    with pytest.raises(ValueError, match="max_cells"):
        call(k, C, a, b, "value", lo, hi, max_cells=3)
    with pytest.raises(ValueError, match="initial"):
        call(k, C, a, b, "value", lo, hi, initial=[1, 2, 3])
    with pytest.raises(ValueError, match="split"):
        call(k, C, a, b, "value", lo, hi, split="middle")
    with pytest.raises(ValueError, match="h must be non-negative"):
        representer_radius(k, "value", [[-1.0, 0.0]])
    with pytest.raises(ValueError, match="one value per cell"):
        certify_box(lambda X: np.zeros(1), lambda H: np.zeros(len(H)), lo, hi)
    with pytest.raises(ValueError, match="non-finite"):
        certify_box(lambda X: np.full(len(X), np.nan), lambda H: np.zeros(len(H)), lo, hi)
    with pytest.raises(NotImplementedError, match="ExponentialKernel"):
        call(ExponentialKernel(1.0), C, a, b, "value", lo, hi)
    with pytest.raises(NotImplementedError, match="matern32"):
        representer_radius(Matern32Kernel(1.0), "hessian", [[0.1, 0.1]], subset=[0])
