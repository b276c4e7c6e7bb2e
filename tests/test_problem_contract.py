"""The contract of every problem class of psdsos.problems, checked the same way for each.

What the solvers rely on (see docs/extending.md, "A problem"):

- the smooth part's gradient (``smooth(G)``; for the problems with a loss, the coupling
  term ``coupling(u, G)``) matches central finite differences of its value;
- weak duality: the dual value at any dual point, early iterates included, is below the
  primal optimum (the CVXPY primal with Clarabel at tight tolerance, an independent
  reference), and for problems that are not coupled the primal objective at the point
  recovered from the dual is above it;
- the certificate: a converged dual solve reports a relative gap below its tol, and its
  primal objective is the reference optimum to that accuracy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from psdsos.features import ExactFeatures, NystromFeatures, cholesky_with_jitter
from psdsos.kernels import GaussianKernel
from psdsos.losses import get_loss
from psdsos.problems import (
    ConvexRegressionExactProblem,
    ConvexRegressionNystromProblem,
    ConvexRegressionProblem,
    PSDLeastSquares,
    PSDLossProblem,
    ShapeConstraint,
    ShapeRegressionLossProblem,
    ShapeRegressionProblem,
    constraint_map,
)
from psdsos.problems._convex_loss import ConvexRegressionLossProblem
from psdsos.solvers import solve_dual
from psdsos.solvers._dual_convex import solve_dual_loss

#: The dual solves' tolerance (relative gap, and residual for the coupled problems).
TOL = 1e-8


def _psd_data(rng, n=8, d=2):
    X = np.linspace(-1.0, 1.0, n)[:, None]
    Phi = ExactFeatures(GaussianKernel(0.5)).fit(X).transform(X)
    A = rng.standard_normal((n, d, d))
    M = A @ A.transpose(0, 2, 1) / d + 0.2 * np.eye(d)
    return Phi, M


def _convex_data(rng, n=14, p=2):
    X = rng.uniform(-1.0, 1.0, (n, p))
    y = np.sum(X**2, axis=1) + 0.3 * np.sin(3.0 * X[:, 0]) + 0.05 * rng.standard_normal(n)
    return X, (y - y.mean()) / y.std()


def _shape_blocks(rng, X, k, intercept):
    n, p = X.shape
    R, _ = cholesky_with_jitter(k(X, X))
    E = np.hstack([np.ones((n, 1)), X]) if intercept else np.zeros((n, 0))
    blocks = []
    for con in (ShapeConstraint("derivative", (0,), 1.0, name="increasing[0]"),
                ShapeConstraint("hessian", (0, 1), -1.0, name="concave[0,1]")):
        Z = rng.uniform(-1.0, 1.0, (6, p))
        L, c = constraint_map(con, k, X, R, Z, intercept)
        blocks.append((con, L, c, ExactFeatures(k).fit(Z).transform(Z)))
    return np.hstack([E, R.T]), E.shape[1], blocks


def psd_least_squares(rng):
    Phi, M = _psd_data(rng)
    return PSDLeastSquares(Phi, M, 1e-3, 1e-2)


def psd_huber(rng):
    Phi, M = _psd_data(rng)
    return PSDLossProblem(Phi, M, 1e-3, 1e-2, get_loss("huber", delta=0.3))


def _convex_args(rng):
    """(K, Hessians at the constraint points, SoS features, y, E) of convex regression."""
    X, y = _convex_data(rng)
    k = GaussianKernel(1.0)
    Z = X[:6]
    Phi = ExactFeatures(k).fit(Z).transform(Z)
    E = np.hstack([np.ones((X.shape[0], 1)), X])
    return k(X, X), k.hessian(Z, X), Phi, y, E


def convex(rng):
    return ConvexRegressionProblem(*_convex_args(rng), 1e-2, 1e-3, 1e-2)


def convex_nystrom(rng):
    X, y = _convex_data(rng, n=30)
    k = GaussianKernel(1.0)
    Z, C = X[:6], X[::3]
    Phi = NystromFeatures(k, n_landmarks=4, random_state=0).fit(Z).transform(Z)
    return ConvexRegressionNystromProblem(k, X, C, k.hessian(Z, C), Phi, y, True, 1e-2,
                                          1e-3, 1e-2)


def convex_exact(rng):
    X, y = _convex_data(rng, n=8)
    k = GaussianKernel(1.0)
    Phi = ExactFeatures(k).fit(X).transform(X)
    E = np.hstack([np.ones((X.shape[0], 1)), X])
    return ConvexRegressionExactProblem(k, X, X, Phi, y, E, 1e-2, 1e-3, 1e-2)


def convex_huber(rng):
    return ConvexRegressionLossProblem(*_convex_args(rng), 1e-2, 0.0, 1e-2,
                                       get_loss("huber", delta=0.3))


def shape(rng):
    X, y = _convex_data(rng, n=16)
    M, e, blocks = _shape_blocks(rng, X, GaussianKernel(0.8), True)
    return ShapeRegressionProblem(M, -y, X.shape[0], e, 1e-3, 1e-3, 1e-2, blocks)


def shape_huber(rng):
    X, y = _convex_data(rng, n=16)
    M, e, blocks = _shape_blocks(rng, X, GaussianKernel(0.8), True)
    return ShapeRegressionLossProblem(M, -y, e, 1e-3, 1e-3, 1e-2, blocks,
                                      get_loss("huber", delta=0.3))


PROBLEMS = [psd_least_squares, psd_huber, convex, convex_nystrom, convex_exact, convex_huber,
            shape, shape_huber]
IDS = [f.__name__ for f in PROBLEMS]


def _with_loss(problem):
    """The problems solved by the proximal solver of the loss duals (solve_dual_loss)."""
    return callable(getattr(problem, "coupling", None))


def _solve(problem, max_iter, tol=TOL):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # early iterates do not converge, by design
        if _with_loss(problem):
            return solve_dual_loss(problem, tol=tol, max_iter=max_iter)
        return solve_dual(problem, tol=tol, max_iter=max_iter)


def _reference(problem):
    """The primal optimum by CVXPY and Clarabel at tight tolerance."""
    prob = problem.cvxpy_problem()[0]
    prob.solve(solver="CLARABEL", tol_gap_rel=1e-10, tol_gap_abs=1e-12, tol_feas=1e-10)
    assert prob.status == "optimal"
    return float(prob.value)


def _dual_shapes(problem):
    """The shapes of the dual matrices Gamma (one array, or one per block)."""
    if hasattr(problem, "blocks"):
        return [(b.Phi.shape[0], b.d, b.d) for b in problem.blocks]
    return [(problem.Phi.shape[0], problem.d, problem.d)]


def _random_dual(rng, problem, scale):
    G = []
    for m, d, _ in _dual_shapes(problem):
        A = rng.standard_normal((m, d, d))
        G.append(scale * (A + A.transpose(0, 2, 1)) / 2)
    return G if hasattr(problem, "blocks") else G[0]


def _as_list(G):
    return list(G) if isinstance(G, (list, tuple)) else [G]


def _pack(G, problem):
    return G if hasattr(problem, "blocks") else G[0]


@pytest.mark.parametrize("make", PROBLEMS, ids=IDS)
def test_gradient_matches_finite_differences(make):
    rng = np.random.default_rng(3)
    problem = make(rng)
    G = _random_dual(rng, problem, 0.1)
    D = _as_list(_random_dual(rng, problem, 1.0))
    h = 1e-6
    if _with_loss(problem):
        # the loss problems take Gamma flat with several blocks (``join``), else (m, d, d)
        flat = hasattr(problem, "join")
        shapes = _dual_shapes(problem)

        def pack(x):
            return x if flat else x.reshape(shapes[0])

        g0 = np.concatenate([a.ravel() for a in _as_list(G)])
        dg = np.concatenate([a.ravel() for a in D])
        u = 0.1 * rng.standard_normal(problem.n)
        du = rng.standard_normal(problem.n)
        value, gu, gG = problem.coupling(u, pack(g0))[:3]
        assert value == pytest.approx(problem.coupling_value(u, pack(g0)), rel=1e-12,
                                      abs=1e-14)

        def f(t):
            return problem.coupling_value(u + t * du, pack(g0 + t * dg))

        slope = float(gu @ du) + float(np.ravel(gG) @ dg)
    else:
        value, grad = problem.smooth(G)

        def f(t):
            return problem.smooth(_pack([a + t * b for a, b in zip(_as_list(G), D,
                                                                    strict=True)],
                                        problem))[0]

        slope = sum(float(np.sum(a * b)) for a, b in zip(_as_list(grad), D, strict=True))
    fd = (f(h) - f(-h)) / (2 * h)
    # central differences: error O(h^2 f''') plus rounding |f| eps / h
    assert fd == pytest.approx(slope, rel=1e-5, abs=1e-7 * max(1.0, abs(value)))


@pytest.mark.parametrize("make", PROBLEMS, ids=IDS)
def test_dual_values_are_below_the_primal_optimum(make):
    problem = make(np.random.default_rng(4))
    ref = _reference(problem)
    slack = 1e-8 * max(1.0, abs(ref))  # the reference's own accuracy, with margin
    for max_iter in (1, 5, 50):
        res = _solve(problem, max_iter)
        assert res.dual_objective <= ref + slack, (max_iter, res.dual_objective, ref)
        if not getattr(problem, "coupled", False) and not _with_loss(problem):
            # a feasible primal point recovered from the dual: above the optimum
            assert res.primal_objective >= ref - slack, (max_iter, res.primal_objective, ref)


@pytest.mark.parametrize("make", PROBLEMS, ids=IDS)
def test_certificate_gap(make):
    problem = make(np.random.default_rng(5))
    ref = _reference(problem)
    res = _solve(problem, 100_000)
    assert res.converged, res.message
    assert res.dual_gap <= TOL
    # P - (-D) <= tol max(|P|, |D|, floors): the reported objective is the optimum to that
    # accuracy (the floors are data scales, at most max(1, |ref|) here)
    assert abs(res.primal_objective - ref) <= 10 * TOL * max(1.0, abs(ref))
    assert res.dual_objective <= ref + 1e-8 * max(1.0, abs(ref))
