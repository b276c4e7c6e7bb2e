"""Convex regression with the exact Hessian representation (PSD paper, eq. 21, 37,
Proposition 17): psdsos.problems.ConvexRegressionExactProblem and
ConvexRegressor(representation="exact").

Independent references (never the library's own pieces):

* the Gram matrix of {k_{x_i}} U {d^2 k_{z_j}} for the 1-D Gaussian kernel written out with
  Hermite polynomials (d^2_x k = (u^2 - 1) k / s^2, d^2_x d^2_y k = (u^4 - 6 u^2 + 3) k / s^4);
* the third-order kernel derivatives, the gradient and the Hessian of fitted functions
  against central finite differences;
* the optimal value reported by CVXPY against the objective recomputed in numpy, and the
  primal (CLARABEL) against the dual solver (Proposition 17);
* kernel ridge regression from its normal equations when no constraint is active.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import psdsos
from psdsos.estimators import ConvexRegressor, NonConvexFitWarning
from psdsos.features import ExactFeatures
from psdsos.kernels import (
    ExponentialKernel,
    GaussianKernel,
    Matern32Kernel,
    Matern52Kernel,
)
from psdsos.problems import ConvexRegressionExactProblem, exact_hessian, exact_value
from psdsos.solvers import solve_dual, solve_primal

#: Clarabel tolerance of the primal fits, and the relative Hessian-constraint residual
#: allowed (measured <= 3e-9 on seeds 0-2 for the problems below).
TOL = 1e-9
RES_TOL = 1e-6
SIGMA = {1: 0.3, 2: 0.5}


def make_data(seed, n, p, noise=0.1):
    """Non-convex target (convex bowl plus a wiggle) so the Hessian constraint binds.

    For p = 1, a jittered grid (random 1-D points come close and make the Gram matrix of
    the exact representation numerically singular).
    """
    rng = np.random.default_rng(seed)
    if p == 1:
        g = np.linspace(-1.0, 1.0, n)
        X = (g + rng.uniform(-0.3, 0.3, n) * (g[1] - g[0]))[:, None]
    else:
        X = rng.uniform(-1.0, 1.0, size=(n, p))
    y = np.sum(X**2, axis=1) + 0.5 * np.sin(3 * X[:, 0])
    return X, y + noise * rng.standard_normal(n)


def make_problem(seed, n, p, kernel=None, fit_intercept=True, rho=1e-3, lam1=1e-4,
                 lam2=1e-3):
    X, y = make_data(seed, n, p)
    k = kernel if kernel is not None else GaussianKernel(SIGMA[p])
    Phi = ExactFeatures(k).fit(X).transform(X)
    E = np.hstack([np.ones((n, 1)), X]) if fit_intercept else None
    return ConvexRegressionExactProblem(k, X, X, Phi, y, E, rho, lam1, lam2), X, y


def quiet(fn, *args, **kwargs):
    """Call fn with every warning an error, except NonConvexFitWarning (the few constraint
    points of these small problems leave a deficit; tested in test_convex_regressor.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", NonConvexFitWarning)
        return fn(*args, **kwargs)


# ---------------------------------------------------------------------------------------
# the kernel's third-order derivatives (added for the gradient of exact fits)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [GaussianKernel(0.7), Matern52Kernel(0.9)], ids=str)
@pytest.mark.parametrize("p", [1, 2, 3])
def test_hessian_gradient_finite_differences(rng, kernel, p):
    X, Y = rng.normal(size=(4, p)), rng.normal(size=(3, p))
    T = kernel.hessian_gradient(X, Y)
    assert T.shape == (4, 3, p, p, p)
    h = 1e-5
    fd = np.zeros_like(T)
    for r in range(p):
        e = np.zeros(p)
        e[r] = h
        fd[..., r] = (kernel.hessian(X, Y + e) - kernel.hessian(X, Y - e)) / (2 * h)
    np.testing.assert_allclose(T, fd, atol=1e-8 * np.abs(T).max())
    # symmetric in its three derivative axes, odd in x - y, 0 at coincident points
    np.testing.assert_allclose(T, T.transpose(0, 1, 3, 4, 2), rtol=0, atol=1e-15)
    np.testing.assert_allclose(T, T.transpose(0, 1, 2, 4, 3), rtol=0, atol=1e-15)
    np.testing.assert_allclose(kernel.hessian_gradient(Y, X).transpose(1, 0, 2, 3, 4), -T,
                               rtol=1e-13, atol=1e-15)
    Tc = kernel.hessian_gradient(X)
    assert np.all(Tc[np.arange(4), np.arange(4)] == 0)


@pytest.mark.parametrize("kernel", [ExponentialKernel(1.0), Matern32Kernel(1.0)], ids=str)
def test_hessian_gradient_needs_smooth_kernel(kernel):
    with pytest.raises(ValueError, match="hessian_gradient"):
        kernel.hessian_gradient(np.zeros((2, 1)))


# ---------------------------------------------------------------------------------------
# the problem object
# ---------------------------------------------------------------------------------------
def gauss_gram_1d(X, Z, s):
    """Gram of {k_{x_i}} U {d^2 k_{z_j}} for k = exp(-(x - y)^2 / (2 s^2)), from Hermite."""
    def parts(A, B):
        u = (A[:, None, 0] - B[None, :, 0]) / s
        e = np.exp(-0.5 * u**2)
        return e, (u**2 - 1) * e / s**2, (u**4 - 6 * u**2 + 3) * e / s**4

    K, _, _ = parts(X, X)
    _, C, _ = parts(Z, X)  # d^2_z k(z_j, x_i)
    _, _, D = parts(Z, Z)
    return np.block([[K, C.T], [C, D]])


def test_gram_matrix_against_closed_form(seed):
    prob, X, _ = make_problem(seed, 9, 1)
    np.testing.assert_allclose(prob.G, gauss_gram_1d(X, X, SIGMA[1]), rtol=1e-12, atol=1e-12)
    assert np.linalg.eigvalsh(prob.G)[0] >= -1e-10 * np.abs(prob.G).max()
    # R^T R = G + jitter I
    np.testing.assert_allclose(prob.R.T @ prob.R, prob.G + prob.jitter_ * np.eye(len(prob.G)),
                               atol=1e-12 * np.abs(prob.G).max())


@pytest.mark.parametrize("p", [1, 2])
def test_split_join_and_evaluations_agree(seed, p):
    """theta <-> (alpha, gamma), and G-based values/Hessians match the exact_* evaluators."""
    prob, X, _ = make_problem(seed, 8, p)
    rng = np.random.default_rng(seed + 1)
    alpha = rng.normal(size=8)
    gamma = rng.normal(size=(8, p, p))
    gamma = gamma + gamma.transpose(0, 2, 1)
    a2, g2 = prob.split(prob.join(alpha, gamma))
    np.testing.assert_allclose(a2, alpha, rtol=1e-15)
    np.testing.assert_allclose(g2, gamma, rtol=1e-15, atol=1e-15)
    k = prob.kernel
    np.testing.assert_allclose(prob.values(alpha, gamma), exact_value(k, X, X, alpha, gamma, X),
                               rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(prob.hessians(alpha, gamma),
                               exact_hessian(k, X, X, alpha, gamma, X), rtol=1e-11, atol=1e-10)
    # ||f||^2 = theta^T G theta: f = sum of basis functions, so check bilinearity via the
    # values: <f, k_x> = f(x) for x a training point (first block of G theta)
    theta = prob.join(alpha, gamma)
    assert prob.rkhs_norm_sq(alpha, gamma) == pytest.approx(
        float(theta @ prob.G @ theta) + prob.jitter_ * float(theta @ theta), rel=1e-10)


def test_bad_problem_inputs_raise_value_error():
    k = GaussianKernel(0.5)
    X = np.linspace(-1, 1, 5)[:, None]
    Phi = ExactFeatures(k).fit(X).transform(X)
    y = X[:, 0] ** 2
    with pytest.raises(ValueError, match="y must have shape"):
        ConvexRegressionExactProblem(k, X, X, Phi, y[:4], None, 1e-3, 0, 1e-3)
    with pytest.raises(ValueError, match="Phi must have shape"):
        ConvexRegressionExactProblem(k, X, X, Phi[:3], y, None, 1e-3, 0, 1e-3)
    with pytest.raises(ValueError, match="same number of columns"):
        ConvexRegressionExactProblem(k, X, np.zeros((5, 2)), Phi, y, None, 1e-3, 0, 1e-3)
    with pytest.raises(ValueError, match="E must have 5 rows"):
        ConvexRegressionExactProblem(k, X, X, Phi, y, np.ones((4, 1)), 1e-3, 0, 1e-3)
    with pytest.raises(ValueError, match="four times differentiable"):
        ConvexRegressionExactProblem(Matern32Kernel(0.5), X, X, Phi, y, None, 1e-3, 0, 1e-3)
    prob = ConvexRegressionExactProblem(k, X, X, Phi, y, None, 0.0, 0, 1e-3)
    with pytest.raises(ValueError, match="rho must be > 0"):
        prob.smooth(np.zeros((5, 1, 1)))


@pytest.mark.parametrize("p, fit_intercept", [(1, True), (1, False), (2, True), (2, False)])
def test_primal_feasible_psd_and_objective_matches_cvxpy(seed, p, fit_intercept):
    n = 12 if p == 1 else 14
    prob, X, y = make_problem(seed, n, p, fit_intercept=fit_intercept)
    cvx, _, params = prob.cvxpy_problem()
    assert cvx.is_dcp(dpp=True)
    res = quiet(solve_primal, prob, solver="CLARABEL", tol=TOL)
    alpha, gamma, beta = (res.extras[k] for k in ("alpha", "gamma", "beta"))
    # objective in numpy == CVXPY's optimal value (same R, same jitter)
    assert res.objective == pytest.approx(cvx.value, rel=1e-8)
    # independent recomputation of the data term from the evaluators
    f = exact_value(prob.kernel, X, X, alpha, gamma, X)
    if fit_intercept:
        f = f + beta[0] + X @ beta[1:]
    reg = prob.lam1 * np.trace(res.B) + 0.5 * prob.lam2 * np.sum(res.B**2)
    ref = np.mean((y - f) ** 2) + prob.rho * prob.rkhs_norm_sq(alpha, gamma) + reg
    assert res.objective == pytest.approx(ref, rel=1e-9)
    # Hessian constraints to solver tolerance, hence PSD Hessians at the constraint points:
    # H = F + (H - F) with F PSD gives lambda_min(H) >= -||H - F||_F
    resid = prob.constraint_residual(alpha, gamma, res.B)
    assert resid <= RES_TOL
    H = exact_hessian(prob.kernel, X, X, alpha, gamma, X)
    Bp = psdsos.sos.project_psd(res.B)
    F = psdsos.sos.sos_evaluate(prob.Phi, Bp, p)
    assert np.linalg.norm(H - F) <= 2 * RES_TOL * np.linalg.norm(H)
    assert np.linalg.eigvalsh(H)[:, 0].min() >= -2 * RES_TOL * np.linalg.norm(H)
    # premise: the constraint binds, i.e. the unconstrained ridge fit (normal equations
    # [[K + n rho I, E], [E^T, 0]]) is not convex at some constraint point
    E = prob.E if fit_intercept else np.zeros((n, 0))
    A = np.block([[prob.K + n * prob.rho * np.eye(n), E], [E.T, np.zeros((E.shape[1],) * 2)]])
    a_ridge = np.linalg.solve(A, np.concatenate([y, np.zeros(E.shape[1])]))[:n]
    H_ridge = np.einsum("jipq,i->jpq", prob.kernel.hessian(X, X), a_ridge)
    assert np.linalg.eigvalsh(H_ridge)[:, 0].min() < 0


def test_parameters_resolve_like_a_fresh_problem(seed):
    """Re-solving the built problem with a new rho equals building it anew (DPP path)."""
    prob, X, y = make_problem(seed, 10, 2, rho=1e-3)
    quiet(solve_primal, prob, solver="CLARABEL", tol=TOL)
    prob.rho = 1e-2
    r1 = quiet(solve_primal, prob, solver="CLARABEL", tol=TOL)
    fresh, _, _ = make_problem(seed, 10, 2, rho=1e-2)
    r2 = quiet(solve_primal, fresh, solver="CLARABEL", tol=TOL)
    assert r1.objective == pytest.approx(r2.objective, rel=1e-7)


DUAL_CASES = [(1, Matern52Kernel(0.3)), (2, Matern52Kernel(0.5)), (2, GaussianKernel(0.5))]


@pytest.mark.parametrize("p, kernel", DUAL_CASES, ids=["p1-matern52", "p2-matern52", "p2-gauss"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dual_matches_primal(p, kernel, fit_intercept):
    """Proposition 17 on the shared dual solver: same optimum as the primal SDP.

    Seed fixed: the Gaussian case needs 430-4900 iterations depending on the data (seeds
    0-2, measured); 1 s on 2 cores for seed 1.
    """
    prob, X, _ = make_problem(1, 12, p, kernel=kernel, fit_intercept=fit_intercept)
    # tol 1e-9: Clarabel cannot always certify 1e-10 on these (relative gap 1e-10 to 4e-10
    # at its best attempt, measured), and solve_primal then warns
    primal = quiet(solve_primal, prob, solver="CLARABEL", tol=1e-9)
    dual = quiet(solve_dual, prob, tol=1e-8, max_iter=20000)
    assert dual.converged
    assert dual.primal_objective == pytest.approx(primal.objective, rel=1e-5)
    assert dual.dual_objective == pytest.approx(primal.objective, rel=1e-5)  # -D(G)
    alpha, gamma, beta = prob.recover(dual.G)
    assert prob.objective(alpha, gamma, beta, dual.B) == pytest.approx(primal.objective,
                                                                       rel=1e-5)
    fp = exact_value(kernel, X, X, primal.extras["alpha"], primal.extras["gamma"], X)
    fd = exact_value(kernel, X, X, alpha, gamma, X)
    np.testing.assert_allclose(fd + (prob.E @ beta if fit_intercept else 0),
                               fp + (prob.E @ primal.extras["beta"] if fit_intercept else 0),
                               atol=1e-3 * np.abs(fp).max())
    # the gradient of q is the Hessians of f_G at the constraint points (Danskin)
    np.testing.assert_allclose(prob.smooth(dual.G)[1], prob.hessians(alpha, gamma),
                               rtol=1e-9, atol=1e-9 * np.abs(prob.hessians(alpha, gamma)).max())


def test_dual_smooth_part_gradient_and_lipschitz(seed):
    """grad q against finite differences; q is a quadratic with curvature <= L."""
    prob, _, _ = make_problem(seed, 8, 2, kernel=Matern52Kernel(0.5))
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(8, 2, 2))
    G = G + G.transpose(0, 2, 1)
    V = rng.normal(size=(8, 2, 2))
    V = V + V.transpose(0, 2, 1)
    q, g = prob.smooth(G)
    assert q == pytest.approx(prob.smooth_value(G), rel=1e-12)
    h = 1e-4
    fd = (prob.smooth_value(G + h * V) - prob.smooth_value(G - h * V)) / (2 * h)
    assert fd == pytest.approx(float(np.sum(g * V)), rel=1e-6)
    curv = (prob.smooth_value(G + V) + prob.smooth_value(G - V) - 2 * q) / float(np.sum(V * V))
    L = prob.smooth_lipschitz()
    assert 0 <= curv <= L * (1 + 1e-8)


# ---------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------
def exact_estimator(p, **kw):
    params = dict(sigma=SIGMA[p], rho=1e-3, lam1=1e-4, lam2=1e-3, solver="primal",
                  primal_solver="CLARABEL", tol=TOL, representation="exact")
    params.update(kw)
    return ConvexRegressor(**params)


@pytest.fixture(scope="module", params=[1, 2], ids=["p1", "p2"])
def fitted(request):
    p = request.param
    X, y = make_data(0, 12, p)
    return quiet(exact_estimator(p).fit, X, y), X, y


def test_estimator_attributes_and_psd_hessians(fitted):
    est, X, y = fitted
    n, p = X.shape
    assert est.gamma_.shape == (n, p, p)
    np.testing.assert_array_equal(est.gamma_, est.gamma_.transpose(0, 2, 1))
    assert est.constraint_residual_ <= RES_TOL
    H = est.hessian(est.constraint_points_)
    assert np.linalg.eigvalsh(H)[:, 0].min() >= -2 * RES_TOL * np.linalg.norm(H)
    # objective_ recomputed from predict and the fitted coefficients
    prob = ConvexRegressionExactProblem(est.kernel_, X, X, np.zeros((n, 1)), y, None,
                                        est.rho, est.lam1, est.lam2)
    # eq. 37 in ConvexRegressor's standardized units (t = (y - mean) / std(y), u = (x -
    # mean) / sigma): in the user's units, divided by std(y)^2 with lam1 sigma^2 std(y) and
    # lam2 sigma^4 in place of lam1, lam2 (Hessians in u are sigma^2 / std(y) times those in x)
    sy, sx = float(np.std(y)), SIGMA[p]
    reg = (est.lam1 * sx**2 / sy * np.trace(est.B_)
           + 0.5 * est.lam2 * sx**4 / sy**2 * np.sum(est.B_**2))
    ref = (np.mean((y - est.predict(X)) ** 2)
           + est.rho * prob.rkhs_norm_sq(est.alpha_, est.gamma_)) / sy**2 + reg
    assert est.objective_ == pytest.approx(ref, rel=1e-8)


def test_gradient_and_hessian_match_finite_differences(fitted):
    est, X, _ = fitted
    p = X.shape[1]
    Xt = np.random.default_rng(3).uniform(-1.2, 1.2, size=(15, p))
    h = 1e-4
    g = est.gradient(Xt)
    H = est.hessian(Xt)
    for r in range(p):
        e = np.zeros(p)
        e[r] = h
        fd_g = (est.predict(Xt + e) - est.predict(Xt - e)) / (2 * h)
        np.testing.assert_allclose(g[:, r], fd_g, atol=1e-6 * max(1, np.abs(g).max()))
        fd_H = (est.gradient(Xt + e) - est.gradient(Xt - e)) / (2 * h)
        np.testing.assert_allclose(H[:, :, r], fd_H, atol=1e-6 * max(1, np.abs(H).max()))


def test_save_load_round_trip(tmp_path, fitted):
    est, X, y = fitted
    est.save(tmp_path / "exact.npz")
    loaded = psdsos.load(tmp_path / "exact.npz")
    assert loaded.representation == "exact"
    np.testing.assert_array_equal(loaded.gamma_, est.gamma_)
    Xt = np.random.default_rng(0).uniform(-1.5, 1.5, size=(30, X.shape[1]))
    for method in ("predict", "gradient", "hessian"):
        np.testing.assert_array_equal(getattr(loaded, method)(Xt), getattr(est, method)(Xt))
    assert loaded.convexity_deficit() == est.convexity_deficit()
    for attr in ("objective_", "constraint_residual_", "intercept_", "n_iter_"):
        assert getattr(loaded, attr) == getattr(est, attr)


def min_norm_sos(Phi, H):
    """argmin ||B||_F s.t. (phi_j kron I)^T B (phi_j kron I) = H_j, B PSD (CVXPY directly)."""
    m, r = Phi.shape
    p = H.shape[1]
    B = cp.Variable((r * p, r * p), PSD=True)
    cons = [np.kron(Phi[j:j + 1], np.eye(p)) @ B @ np.kron(Phi[j:j + 1], np.eye(p)).T == H[j]
            for j in range(m)]
    cp.Problem(cp.Minimize(cp.sum_squares(B)), cons).solve(solver="CLARABEL")
    return B.value


@pytest.mark.parametrize("p, sigma", [(1, 0.5), (2, 1.0)])
def test_inactive_constraint_gives_kernel_ridge(seed, p, sigma):
    """Convex data a kernel expansion reaches, lam1 = 0, lam2 = 1e-8: exact = approx = KRR.

    Without intercept, J(f) = (1/n)||y - f(X)||^2 + rho ||f||_H^2 is minimized over all of H
    by the KRR fit f* = sum_i a_i k_{x_i}, a = (K + n rho I)^{-1} y, and is quadratic, so
    J(f) - J(f*) = (1/n)||(f - f*)(X)||^2 + rho ||f - f*||^2 >= rho ||f - f*||^2.  If the
    Hessians of f* at the constraint points are PSD, (f*, B*) is feasible for eq. (37) with
    B* the min-norm SoS representation of them, hence for the optimum (f, B)
        0 <= J(f) - J(f*) <= lam2/2 ||B*||^2 + eps =: delta,
    and |f(x) - f*(x)| <= ||f - f*||_H sqrt(k(x, x)) <= sqrt(delta / rho).  Both the exact
    and the approximate representation obey it (eps = 1e-6 J* covers the solver and the
    ~1e-14 jitter ridge).  Measured (seeds 0-3): J(f) - J* <= 4e-10, delta ~ 2e-8..1e-7,
    predictions within 1e-5 of KRR for a bound of ~5e-3..1e-2.
    """
    rng = np.random.default_rng(seed)
    n, rho, lam2 = 12, 1e-3, 1e-8
    X, _ = make_data(seed, n, p)
    y = -2.0 * np.exp(-np.sum(X**2, axis=1) / 4.5)  # convex on [-1, 1]^p
    k = GaussianKernel(sigma)
    K = k(X, X)
    a = np.linalg.solve(K + n * rho * np.eye(n), y)
    H_star = np.einsum("jipq,i->jpq", k.hessian(X, X), a)
    assert np.linalg.eigvalsh(H_star)[:, 0].min() > 0.1  # premise (measured >= 0.17)

    def J(fX, norm2):
        return float(np.mean((y - fX) ** 2)) + rho * norm2

    J_star = J(K @ a, float(a @ K @ a))
    common = dict(sigma=sigma, rho=rho, lam1=0.0, lam2=lam2, fit_intercept=False,
                  constraint_points="train")  # the reference below constrains at X
    exact = quiet(exact_estimator(p, **common).fit, X, y)
    approx = quiet(exact_estimator(p, **{**common, "representation": "approx"}).fit, X, y)
    assert not hasattr(approx, "gamma_")
    B_star = min_norm_sos(exact.features_.transform(X), H_star)
    delta = 0.5 * lam2 * float(np.sum(B_star**2)) + 1e-6 * J_star
    prob = ConvexRegressionExactProblem(k, X, X, np.zeros((n, 1)), y, None, rho, 0.0, lam2)
    theta = prob.join(exact.alpha_, exact.gamma_)
    J_exact = J(exact.predict(X), float(theta @ prob.G @ theta))
    J_approx = J(approx.predict(X), float(approx.alpha_ @ K @ approx.alpha_))
    for Jf in (J_exact, J_approx):
        assert -1e-9 * J_star <= Jf - J_star <= delta
    Xt = np.vstack([X, rng.uniform(-1, 1, size=(50, p))])
    f_star = k(Xt, X) @ a
    bound = np.sqrt(delta / rho)
    assert bound < 0.05 * np.ptp(y)  # informative
    assert np.abs(exact.predict(Xt) - f_star).max() <= bound
    assert np.abs(approx.predict(Xt) - f_star).max() <= bound


def test_concave_is_negated_convex_fit_on_minus_y(seed):
    X, y = make_data(seed, 10, 2)
    cvx = quiet(exact_estimator(2).fit, X, y)
    ccv = quiet(exact_estimator(2, concave=True).fit, X, -y)
    Xt = np.random.default_rng(seed).uniform(-1, 1, size=(20, 2))
    np.testing.assert_allclose(ccv.predict(Xt), -cvx.predict(Xt), rtol=1e-6,
                               atol=1e-6 * np.abs(cvx.predict(Xt)).max())
    np.testing.assert_allclose(ccv.hessian(Xt), -cvx.hessian(Xt), rtol=1e-5,
                               atol=1e-5 * np.abs(cvx.hessian(Xt)).max())


def test_estimator_dual_matches_primal():
    X, y = make_data(1, 12, 2)
    common = dict(kernel="matern52", sigma=0.5, lam1=0.0)
    primal = quiet(exact_estimator(2, **common).fit, X, y)
    dual = quiet(exact_estimator(2, solver="dual", tol=1e-8, max_iter=20000, **common).fit,
                 X, y)
    assert dual.objective_ == pytest.approx(primal.objective_, rel=1e-5)
    assert dual.dual_coef_.shape == (12, 2, 2)
    np.testing.assert_allclose(dual.predict(X), primal.predict(X),
                               atol=1e-3 * np.abs(primal.predict(X)).max())


def test_refit_with_approx_drops_gamma():
    X, y = make_data(0, 10, 1)
    est = quiet(exact_estimator(1).fit, X, y)
    assert hasattr(est, "gamma_")
    est.set_params(representation="approx")
    quiet(est.fit, X, y)
    assert not hasattr(est, "gamma_")
    np.testing.assert_allclose(
        est.predict(X), est.intercept_ + X @ est.coef_ + est.kernel_(X, X) @ est.alpha_)


@pytest.mark.parametrize("kernel", ["matern32", "exponential"])
def test_exact_needs_four_times_differentiable_kernel(kernel):
    X, y = make_data(0, 8, 1)
    with pytest.raises(ValueError, match="differentiable"):
        exact_estimator(1, kernel=kernel).fit(X, y)


def test_bad_representation_names_the_argument():
    X, y = make_data(0, 8, 1)
    with pytest.raises(ValueError, match="representation"):
        exact_estimator(1, representation="exakt").fit(X, y)


def test_sobol_constraint_points_and_nystrom_features(seed):
    """Constraint points apart from the data (m != n) and rank-r SoS features."""
    X, y = make_data(seed, 12, 2)
    est = quiet(exact_estimator(2, constraint_points=8, n_landmarks=5, random_state=seed).fit,
                X, y)
    Z = est.constraint_points_
    assert Z.shape == (8, 2) and est.gamma_.shape == (8, 2, 2)
    assert est.B_.shape == (10, 10)
    assert est.constraint_residual_ <= RES_TOL
    H = est.hessian(Z)
    assert np.linalg.eigvalsh(H)[:, 0].min() >= -2 * RES_TOL * np.linalg.norm(H)
