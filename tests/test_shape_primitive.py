"""kernel_shape_constraint: the estimator's multi-block problem, finite differences, the
certificate against dense grids, validation, the docstring example."""

import doctest

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg as sla

import psdsos.sos._shape_primitive as shape_primitive
from psdsos.features import cholesky_with_jitter
from psdsos.kernels import GaussianKernel, Matern52Kernel
from psdsos.problems._shape import ShapeRegressionProblem, constraint_map
from psdsos.sos import ShapeConstraintBlock, kernel_shape_constraint
from psdsos.sos._constraint import ShapeConstraint

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "max_iter": 500}


def _data(n=25, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    y = np.tanh(2 * X[:, 0]) - X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


# (kind, sign, feature, subset, offset) in the primitive; the same as a ShapeConstraint
CASES = {
    "increasing+concave": [("derivative", 1.0, 0, None, 0.0), ("hessian", -1.0, None, [0, 1], 0.0)],
    "decreasing[1]+lower": [("derivative", -1.0, 1, None, 0.0), ("value", 1.0, None, None, -0.6)],
    "convex[1]+upper": [("hessian", 1.0, None, [1], 0.0), ("value", -1.0, None, None, 0.8)],
}


def _as_shape_constraint(kind, sign, feature, subset, offset):
    feats = () if kind == "value" else ((feature,) if kind == "derivative" else tuple(subset))
    return ShapeConstraint(kind, feats, sign, offset)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_optimum_as_the_estimators_problem(name):
    """(a) The user's problem built from kernel_shape_constraint reaches the optimum of the
    estimator's multi-block problem (ShapeRegressionProblem, its own constraint maps and
    coordinates v = R alpha) on the same points."""
    X, y = _data()
    n, p = X.shape
    kernel = GaussianKernel(0.7)
    rho, lam1, lam2 = 1e-3, 1e-4, 1e-3
    Z = shape_primitive.box_points(X.min(0), X.max(0), 16, 3, 0.3)
    R, _ = cholesky_with_jitter(kernel(X, X))
    K = kernel(X, X)
    # the estimator's problem
    blocks = []
    for case in CASES[name]:
        con = _as_shape_constraint(*case)
        L, c = constraint_map(con, kernel, X, R, Z, True)
        blocks.append((con, L, c, shape_primitive.sos_features(kernel, Z, con.d)))
    E = np.hstack([np.ones((n, 1)), X])
    M = np.hstack([E, sla.solve_triangular(R, K.T, trans="T", lower=False).T])
    ref = ShapeRegressionProblem(M, y, n, p + 1, rho, lam1, lam2, blocks)
    prob_ref, w_ref, _ = ref.cvxpy_problem()
    prob_ref.solve(solver="CLARABEL", **TIGHT)
    # the user's problem
    a, b = cp.Variable(n), cp.Variable(p + 1)
    cons, reg = [], 0
    for kind, sign, feature, subset, offset in CASES[name]:
        blk = kernel_shape_constraint(kernel, X, a, kind, X.min(0), X.max(0), affine=b,
                                      sign=sign, feature=feature, subset=subset, offset=offset,
                                      points=Z, lam1=lam1, lam2=lam2)
        cons += blk.constraints
        reg = reg + blk.regularizer
    obj = cp.sum_squares(y - E @ b - K @ a) / n + rho * cp.sum_squares(R @ a) + reg
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL", **TIGHT)
    assert prob.status == "optimal" and prob_ref.status == "optimal"
    assert prob.value == pytest.approx(prob_ref.value, rel=1e-6, abs=1e-9)
    fit = E @ b.value + K @ a.value
    fit_ref = M @ w_ref.value
    assert np.max(np.abs(fit - fit_ref)) < 1e-4 * (1 + np.max(np.abs(fit_ref)))


def _finite_difference_g(blk, U, a, beta, h=1e-4):
    """The constraint function by central differences of f (independent of the kernel's
    gradient and Hessian)."""
    def f(V):
        return blk.kernel(V, blk.centers) @ a + beta[0] + V @ beta[1:]

    s = blk.sign
    if blk.kind == "value":
        return s * (f(U) - blk.offset)
    if blk.kind == "derivative":
        e = np.zeros(U.shape[1])
        e[blk.features[0]] = h
        return s * (f(U + e) - f(U - e)) / (2 * h)
    S = blk.features
    H = np.empty((U.shape[0], len(S), len(S)))
    for i, pi in enumerate(S):
        for j, pj in enumerate(S):
            ei, ej = np.zeros(U.shape[1]), np.zeros(U.shape[1])
            ei[pi], ej[pj] = h, h
            H[:, i, j] = (f(U + ei + ej) - f(U + ei - ej) - f(U - ei + ej)
                          + f(U - ei - ej)) / (4 * h * h)
    return np.linalg.eigvalsh(s * H)[:, 0]


@pytest.mark.parametrize("case", [c for cs in CASES.values() for c in cs],
                         ids=lambda c: f"{c[0]}{c[1]:+.0f}")
def test_feasible_at_the_points_and_values_match_finite_differences(case):
    """(b) After the solve g(z_j) equals the SoS values Psi_j^T B Psi_j (so g >= -tol at the
    points, lambda_min for a Hessian block); evaluate() agrees with finite differences."""
    kind, sign, feature, subset, offset = case
    X, _ = _data(seed=1)
    n, p = X.shape
    y = 1.2 * (np.sin(3 * X[:, 0]) + np.sin(3 * X[:, 1]))  # none of the shapes
    kernel = GaussianKernel(0.7)
    a, b = cp.Variable(n), cp.Variable(p + 1)
    blk = kernel_shape_constraint(kernel, X, a, kind, X.min(0), X.max(0), affine=b, sign=sign,
                                  feature=feature, subset=subset, offset=offset, n_points=24)
    R, _ = cholesky_with_jitter(kernel(X, X))
    fit = b[0] + X @ b[1:] + kernel(X, X) @ a
    data = cp.sum_squares(y - fit) / n + 1e-3 * cp.sum_squares(R @ a)
    cp.Problem(cp.Minimize(data)).solve(solver="CLARABEL")
    # the unconstrained fit violates the constraint at the points: not a vacuous test
    assert blk.evaluate(blk.points).min() < -1e-2
    prob = cp.Problem(cp.Minimize(data + blk.regularizer), blk.constraints)
    prob.solve(solver="CLARABEL", **TIGHT)
    assert prob.status == "optimal"
    G = blk.expression.value
    assert np.max(np.abs(G - blk.block.packed.value)) < 1e-6 * (1 + np.max(np.abs(G)))
    g = blk.evaluate(blk.points)
    assert g.min() >= -1e-6
    U = shape_primitive.box_points(X.min(0), X.max(0), 40, 5)
    fd = _finite_difference_g(blk, U, a.value, b.value)
    assert np.max(np.abs(blk.evaluate(U) - fd)) < 1e-5 * (1 + np.max(np.abs(fd)))


def _grid(lo, hi, k):
    axes = [np.linspace(a, b_, k) for a, b_ in zip(lo, hi, strict=True)]
    return np.array(np.meshgrid(*axes, indexing="ij")).reshape(len(lo), -1).T


@pytest.mark.parametrize("kind,sign,p", [("derivative", 1.0, 1), ("value", -1.0, 1),
                                         ("hessian", -1.0, 2), ("derivative", -1.0, 2)])
def test_certificate_below_the_dense_grid_minimum(kind, sign, p):
    """(c) The certified bound is below the minimum of g over a dense grid, and within
    tol * scale of the smallest value found."""
    rng = np.random.default_rng(2)
    n = 20 if p == 1 else 30
    X = rng.uniform(0, 1, (n, p))
    y = np.sin(4 * X[:, 0]) - (X[:, 1] - 0.5) ** 2 if p == 2 else np.sin(5 * X[:, 0])
    if kind == "derivative" and sign < 0:
        y = -y
    kernel = GaussianKernel(0.4)
    lo, hi = np.zeros(p), np.ones(p)
    a, b = cp.Variable(n), cp.Variable(p + 1)
    blk = kernel_shape_constraint(kernel, X, a, kind, lo, hi, affine=b, sign=sign,
                                  feature=p - 1 if kind == "derivative" else None,
                                  offset=0.8 if kind == "value" else 0.0,
                                  n_points=12 if p == 2 else None)
    R, _ = cholesky_with_jitter(kernel(X, X))
    fit = b[0] + X @ b[1:] + kernel(X, X) @ a
    obj = cp.sum_squares(y - fit) / n + 1e-4 * cp.sum_squares(R @ a) + blk.regularizer
    cp.Problem(cp.Minimize(obj), blk.constraints).solve(solver="CLARABEL")
    cert = blk.certify(tol=1e-2)
    assert cert.status == "certified"
    grid_min = blk.evaluate(_grid(lo, hi, 2001 if p == 1 else 121)).min()
    assert cert.bound <= grid_min
    assert cert.sampled_min <= grid_min + 1e-6
    g = blk.evaluate(_grid(lo, hi, 2001 if p == 1 else 121))
    assert cert.bound >= cert.sampled_min - 0.05 * max(np.mean(np.abs(g)), 1e-2)


def test_certify_given_values_and_matern():
    """certify() on given arrays (no solve): f = k(., 0) on [0, 1] is decreasing, so
    -d f >= 0 there and d f >= 0 fails by the slope's size; a Matern 5/2 kernel."""
    kernel = Matern52Kernel(1.0)
    C = np.zeros((1, 1))
    blk = kernel_shape_constraint(kernel, C, cp.Variable(1), "derivative", [0.0], [1.0],
                                  sign=-1.0, n_points=4)
    cert = blk.certify(np.array([1.0]))
    slope = -kernel.gradient(_grid([0.0], [1.0], 2001), C)[:, 0, 0]
    assert cert.status == "certified"
    assert cert.bound <= slope.min() + 1e-12
    up = kernel_shape_constraint(kernel, C, cp.Variable(1), "derivative", [0.0], [1.0],
                                 n_points=4).certify([1.0])
    assert up.bound <= -slope.max() < 0


def test_unsolved_and_shapes_after_the_solve():
    blk = kernel_shape_constraint(GaussianKernel(1.0), [[0.0]], cp.Variable(1), "value",
                                  [-1.0], [1.0], affine=cp.Variable(2), n_points=3)
    assert isinstance(blk, ShapeConstraintBlock)
    with pytest.raises(ValueError, match="coef has no value"):
        blk.certify()
    with pytest.raises(ValueError, match="affine has no value"):
        blk.certify([1.0])
    with pytest.raises(ValueError, match="coef_value must be"):
        blk.certify([1.0, 2.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="affine_value must be"):
        blk.certify([1.0], [0.0])
    assert blk.certify([1.0], [0.0, 0.0]).bound <= np.exp(-0.5)


def _call(**kw):
    args = {"kernel": GaussianKernel(1.0), "centers": np.zeros((3, 2)), "coef": cp.Variable(3),
            "kind": "derivative", "lo": [0.0, 0.0], "hi": [1.0, 1.0], "feature": 0}
    args.update(kw)
    return kernel_shape_constraint(**args)


@pytest.mark.parametrize("kw,match", [
    ({"kernel": "gaussian"}, "kernel must be"),
    ({"kind": "monotone"}, "kind must be one of"),
    ({"centers": np.zeros(3)}, "centers"),
    ({"coef": cp.Variable(4)}, r"coef must have shape \(3,\)"),
    ({"affine": cp.Variable(2)}, r"affine must have shape \(3,\)"),
    ({"lo": [0.0], "hi": [1.0]}, "lo and hi must be vectors of length 2"),
    ({"lo": [0.0, 2.0]}, "lo must be <= hi"),
    ({"hi": [1.0, np.inf]}, "lo and hi must be finite"),
    ({"sign": 2.0}, "sign must be"),
    ({"feature": 2}, "feature"),
    ({"feature": None}, "feature"),
    ({"kind": "hessian", "feature": None, "subset": [0, 2]}, "subset"),
    ({"kind": "hessian", "feature": None, "subset": [1, 1]}, "subset"),
    ({"kind": "hessian", "feature": 0}, "feature applies"),
    ({"subset": [0]}, "subset applies"),
    ({"kind": "value", "feature": None, "subset": [0]}, "feature and subset"),
    ({"offset": 1.0}, "offset applies"),
    ({"n_points": 0}, "n_points"),
    ({"points": [[0.5, 0.5]], "n_points": 4}, "points or n_points"),
    ({"points": [[0.5, 1.5]]}, "points must lie in the box"),
    ({"points": [[0.5]]}, "points must have 2 columns"),
    ({"lam1": 0.0, "lam2": 0.0}, "lam1 and lam2"),
    ({"lam2": -1.0}, "lam2"),
    ({"coef": np.array([1.0, np.nan, 0.0])}, "coef contains NaN"),
    ({"points": [[0.5, 0.5], [0.5, 0.5 + 1e-9]]}, "rank deficient"),
])
def test_bad_input_names_the_argument(kw, match):
    """(d) Bad input gets a ValueError naming the argument."""
    with pytest.raises(ValueError, match=match):
        _call(**kw)


def test_default_points_are_spread_and_well_conditioned():
    """The default points: the corners, then Sobol points at least a quarter bandwidth apart
    (sup norm), thinned further until the features pass the conditioning check."""
    blk = _call(kernel=GaussianKernel(0.2))
    Z = blk.points
    assert {tuple(c) for c in [(0, 0), (0, 1), (1, 0), (1, 1)]} <= {tuple(z) for z in Z}
    D = np.max(np.abs(Z[:, None] - Z[None]), axis=2) + np.eye(len(Z))
    assert D.min() > 0.25 * 0.2
    wide = kernel_shape_constraint(GaussianKernel(0.1), [[0.0]], cp.Variable(1), "value",
                                   [0.0], [10.0], n_points=200)
    s = np.linalg.svd(shape_primitive.sos_features(GaussianKernel(0.1), wide.points, 1),
                      compute_uv=False)
    assert s[0] / s[-1] <= shape_primitive.MAX_FEATURE_CONDITION


def test_docstring_example_runs():
    """(e) The docstring example (a few lines from variables to a certified constraint)."""
    result = doctest.testmod(shape_primitive, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0


def test_points_are_seeded():
    """The same random_state gives the same points; a Generator is accepted; evaluate checks
    the columns of X."""
    first, again = _call(random_state=4), _call(random_state=4)
    np.testing.assert_array_equal(first.points, again.points)
    other = _call(random_state=np.random.default_rng(5))
    assert other.points.shape[1] == 2 and not np.array_equal(other.points, first.points)
    with pytest.raises(ValueError, match="X must have 2 columns"):
        first.evaluate(np.zeros((3, 1)), np.zeros(3))
