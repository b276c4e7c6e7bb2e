"""The quasi-Newton dual solver (``solve_dual(method="lbfgs")``, psdsos.solvers._dual_newton):
its generalized Hessian against finite differences, its answers against an independent
reference (the CVXPY primal with Clarabel at tight tolerance) and against the accelerated
gradient method, its certificate, warnings, arguments and the automatic choice."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from psdsos import PSDRegressor
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.losses import get_loss
from psdsos.problems import PSDLeastSquares, PSDLossProblem
from psdsos.solvers import (
    BlockDualProblem,
    DualBlock,
    InaccurateSolutionWarning,
    dual_hessian,
    from_symmetric_coordinates,
    solve_dual,
    solve_primal,
    symmetric_basis,
    to_symmetric_coordinates,
)
from psdsos.solvers._dual_newton import AUTO_MAX_DIM, MAX_DIM
from psdsos.sos import sos_adjoint, sos_evaluate


def make_data(rng, n, d, p=1):
    """Noisy PSD targets (symmetric, often indefinite) on a smooth curve: the PSD
    constraint is active."""
    X = np.sort(rng.uniform(0.0, 1.0, size=(n, p)), axis=0)
    A = np.cos(3.0 * X[:, :1, None] + np.arange(d)[None, None, :] + np.arange(d)[None, :, None])
    M = A @ np.swapaxes(A, 1, 2) / d + 0.3 * rng.standard_normal((n, d, d))
    return X, 0.5 * (M + np.swapaxes(M, 1, 2))


def features(kind, X, seed=0):
    if kind == "exact":
        return ExactFeatures("gaussian", 0.3).fit(X).transform(X)
    return NystromFeatures("gaussian", 0.3, n_landmarks=len(X) // 2,
                           random_state=seed).fit(X).transform(X)


def gradient(pb, G):
    """grad D at G (m, d, d) from its definition: grad q - A(B), B = [S]_- / lam2."""
    S = sos_adjoint(pb.Phi, G) + pb.lam1 * np.eye(pb.Phi.shape[1] * pb.d)
    w, U = np.linalg.eigh(S)
    B = (U * np.maximum(-w, 0.0)) @ U.T / pb.lam2
    return pb.smooth(G)[1] - sos_evaluate(pb.Phi, B, pb.d)


def quiet_clarabel(pb, tol=1e-10):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        return solve_primal(pb, solver="CLARABEL", tol=tol)


def test_symmetric_coordinates_are_an_isometry(rng):
    for d in (1, 2, 3):
        E = symmetric_basis(d)
        assert E.shape == (d * (d + 1) // 2, d, d)
        np.testing.assert_allclose(np.einsum("tab,sab->ts", E, E), np.eye(len(E)), atol=1e-15)
        G = rng.standard_normal((5, d, d))
        G = G + np.swapaxes(G, 1, 2)
        x = to_symmetric_coordinates(G)
        assert x.shape == (5 * len(E),)
        np.testing.assert_allclose(from_symmetric_coordinates(x, d), G, atol=1e-14)
        assert np.dot(x, x) == pytest.approx(np.sum(G * G))


@pytest.mark.parametrize("d, r, lam1", [(1, 9, 0.0), (2, 9, 0.05), (3, 6, 0.0), (2, 4, 0.0)])
def test_hessian_is_the_derivative_of_the_gradient(rng, d, r, lam1):
    """H v = (grad D(G + h v) - grad D(G - h v)) / 2h where no eigenvalue of S is near 0
    (D is twice differentiable there), in the symmetric coordinates; well-conditioned
    random features (those of a Gaussian kernel give S eigenvalues at rounding level,
    whose signs finite differences cannot resolve)."""
    _, M = make_data(rng, 9, d)
    Phi = rng.standard_normal((9, r))
    pb = PSDLeastSquares(Phi, M, lam1, 1e-2)
    G = solve_dual(pb, tol=1e-6).G  # an active constraint: eigenvalues of both signs
    w = np.linalg.eigvalsh(sos_adjoint(Phi, G) + lam1 * np.eye(r * d))
    assert (w < 0).any() and (w > 0).any()
    H = dual_hessian(pb, G, prune=0.0)
    assert H.shape == (9 * d * (d + 1) // 2,) * 2
    np.testing.assert_allclose(H, H.T, atol=1e-12 * np.abs(H).max())
    assert np.linalg.eigvalsh(H).min() >= pb.n * (1 - 1e-9)  # >= the curvature of q
    gap = np.min(np.abs(w))
    for _ in range(3):
        v = rng.standard_normal(H.shape[0])
        V = from_symmetric_coordinates(v, d)
        # a step that moves no eigenvalue of S across 0
        h = 1e-2 * gap / np.linalg.norm(sos_adjoint(Phi, V), 2)
        fd = (to_symmetric_coordinates(gradient(pb, G + h * V))
              - to_symmetric_coordinates(gradient(pb, G - h * V))) / (2 * h)
        np.testing.assert_allclose(H @ v, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())


def test_pruned_hessian_is_close_and_below(rng):
    X, M = make_data(rng, 10, 3)
    pb = PSDLeastSquares(features("exact", X), M, 0.0, 1e-4)
    G = solve_dual(pb, tol=1e-6, method="lbfgs").G
    exact = dual_hessian(pb, G, prune=0.0)
    for prune in (1e-6, 1e-2):
        H = dual_hessian(pb, G, prune=prune)
        ev = np.linalg.eigvalsh(exact - H)
        assert ev.min() >= -1e-9 * pb.n  # only PSD terms left out
        assert ev.max() <= prune * pb.n * (1 + 1e-9)


# -------------------------------------------------------------------------------------
# against the CVXPY primal (Clarabel) and the accelerated gradient method
# -------------------------------------------------------------------------------------
GRID = list(itertools.product([8, 12], [1, 2, 3], ["exact", "nystrom"], [0.0, 1e-3],
                              [1e-2, 1e-4, 1e-6]))


@pytest.mark.parametrize("n, d, kind, lam1, lam2", GRID)
def test_lbfgs_agrees_with_clarabel(seed, n, d, kind, lam1, lam2):
    rng = np.random.default_rng([seed, n, d, int(-np.log10(lam2))])
    X, M = make_data(rng, n, d)
    pb = PSDLeastSquares(features(kind, X, seed), M, lam1, lam2)
    tol = 1e-9
    res = solve_dual(pb, tol=tol, max_iter=5000, method="lbfgs")
    assert res.converged and res.method == "lbfgs"
    assert res.dual_gap <= tol
    J = pb.objective(res.B)
    assert res.primal_objective == pytest.approx(J, rel=1e-12)
    lower = res.dual_objective  # -D(Gamma): a lower bound on min J (weak duality)
    assert J - lower <= tol * max(abs(J), abs(lower)) * (1 + 1e-9)
    assert np.linalg.eigvalsh(res.B)[0] >= -1e-12 * max(1.0, np.abs(res.B).max())
    ref = quiet_clarabel(pb)
    J_ref = pb.objective(ref.B)
    # the reference's objective (of a nearly PSD B) cannot be below the certified bound by
    # more than its own accuracy, and ours is within tol of the optimum
    assert J_ref >= lower - 1e-7 * abs(lower)
    assert J == pytest.approx(J_ref, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("lam2", [1e-3, 1e-6])
def test_lbfgs_agrees_with_apg(rng, lam2):
    X, M = make_data(rng, 12, 2)
    pb = PSDLeastSquares(features("exact", X), M, 0.0, lam2)
    a = solve_dual(pb, tol=1e-9, max_iter=100_000, method="apg")
    b = solve_dual(pb, tol=1e-9, method="lbfgs")
    assert a.method == "apg" and b.method == "lbfgs"
    assert a.converged and b.converged
    assert b.primal_objective == pytest.approx(a.primal_objective, rel=2e-9)
    assert b.n_iter < a.n_iter
    # J is lam2-strongly convex: ||B_a - B_b||^2 <= 2 (gap_a + gap_b) J / lam2
    bound = np.sqrt(2 * 2e-9 * abs(a.primal_objective) / lam2)
    assert np.linalg.norm(a.B - b.B) <= bound


def test_history_and_result_fields(rng):
    X, M = make_data(rng, 10, 2)
    pb = PSDLeastSquares(features("exact", X), M, 1e-3, 1e-5)
    res = solve_dual(pb, tol=1e-8, method="lbfgs", history=True)
    assert res.converged and "gap" in res.message
    assert len(res.history["gap"]) == res.n_iter == len(res.history["dual"])
    assert min(res.history["gap"]) == res.dual_gap <= 1e-8
    # every dual value along the run is a lower bound on J at the end
    assert max(res.history["dual"]) <= res.primal_objective * (1 + 1e-12)
    assert res.n_hessian >= 1 and res.time >= res.setup_time >= 0


def test_convergence_warning_and_budget(rng):
    X, M = make_data(rng, 8, 2)
    pb = PSDLeastSquares(features("exact", X), M, 0.0, 1e-6)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = solve_dual(pb, tol=1e-12, max_iter=1, method="lbfgs")
    assert not res.converged and res.n_iter == 1
    assert "maximum number of iterations" in res.message
    assert res.dual_gap > 1e-12
    assert np.linalg.eigvalsh(res.B)[0] >= -1e-12  # a PSD (suboptimal) point
    with pytest.warns(ConvergenceWarning):
        res = solve_dual(pb, tol=1e-12, max_iter=7, method="lbfgs")
    assert res.n_iter == 7


def test_metric_warm_start(rng):
    """The Hessian at the solution of a nearby problem as the first metric: the solve then
    needs far fewer evaluations, to the same certified answer."""
    X, M = make_data(rng, 12, 2)
    Phi = features("exact", X)
    near = solve_dual(PSDLeastSquares(Phi, M, 0.0, 1e-5), tol=1e-9, method="lbfgs")
    pb = PSDLeastSquares(Phi, M * (1 + 1e-3), 0.0, 1e-5)
    cold = solve_dual(pb, tol=1e-8, method="lbfgs")
    H = dual_hessian(pb, near.G)
    warm = solve_dual(pb, tol=1e-8, init=near.G, metric=H)  # implies method="lbfgs"
    assert warm.method == "lbfgs" and warm.converged
    assert warm.n_hessian < cold.n_hessian
    assert warm.primal_objective == pytest.approx(cold.primal_objective, rel=1e-7)


def test_argument_errors(rng):
    X, M = make_data(rng, 6, 2)
    pb = PSDLeastSquares(features("exact", X), M, 0.0, 1e-3)
    with pytest.raises(ValueError, match="method"):
        solve_dual(pb, method="newton")
    with pytest.raises(ValueError, match=r"metric must be a finite \(18, 18\)"):
        solve_dual(pb, metric=np.eye(5))
    with pytest.raises(ValueError, match="positive definite"):
        solve_dual(pb, metric=-np.eye(18))
    with pytest.raises(ValueError, match="metric is the first metric"):
        solve_dual(pb, method="apg", metric=np.eye(18))
    # a non-smooth q (Huber) and several blocks are the accelerated methods' only
    huber = PSDLossProblem(features("exact", X), M, 0.0, 1e-3, get_loss("huber", delta=0.1))
    with pytest.raises(ValueError, match="non-smooth"):
        solve_dual(huber, method="lbfgs")
    # a problem given as blocks (here one) takes the same steps
    blocks = _one_block_problem(pb)
    a = solve_dual(blocks, method="lbfgs", tol=1e-9)
    b = solve_dual(pb, method="lbfgs", tol=1e-9)
    assert a.converged and a.primal_objective == pytest.approx(b.primal_objective, rel=2e-9)
    assert MAX_DIM >= AUTO_MAX_DIM


def _one_block_problem(ls):
    class OneBlock(BlockDualProblem):
        def smooth(self, G):
            q, g = ls.smooth(G[0])
            return q, [g]

        def primal_objective(self, G, B, FB):
            return ls.primal_objective(G[0], B[0], FB[0])

    return OneBlock([DualBlock(ls.Phi, ls.d, ls.lam1, ls.lam2)],
                    lipschitz=ls.smooth_lipschitz(), strong_convexity=ls.strong_convexity())


def test_auto_choice(rng):
    X, M = make_data(rng, 10, 2)
    pb = PSDLeastSquares(features("exact", X), M, 0.0, 1e-5)
    assert solve_dual(pb, method="auto").method == "lbfgs"
    # well conditioned (lambda_max(K o K) / (n lam2) < AUTO_MIN_CONDITION): accelerated
    easy = PSDLeastSquares(pb.Phi, M, 0.0, 1e-1)
    assert solve_dual(easy, method="auto").method == "apg"
    # the accelerated method where asked for its own options, or beyond AUTO_MAX_DIM
    assert solve_dual(pb, method="auto", precondition=False).method == "apg"
    assert solve_dual(pb, method="auto", step_size=1e-3).method == "apg"
    assert solve_dual(_one_block_problem(pb), method="auto").method == "apg"
    n = AUTO_MAX_DIM + 1
    Xl = np.linspace(0, 1, n)[:, None]
    big = PSDLeastSquares(NystromFeatures("gaussian", 0.3, n_landmarks=4, random_state=0)
                          .fit(Xl).transform(Xl), np.ones(n)[:, None, None], 0.0, 1e-2)
    assert solve_dual(big, method="auto", tol=1e-6).method == "apg"
    # weighted least squares (per-sample curvatures): the accelerated method
    w = np.linspace(1.0, 2.0, 10)
    weighted = PSDLossProblem(features("exact", X), M, 0.0, 1e-3, get_loss("squared"), w)
    assert solve_dual(weighted, method="auto").method == "apg"
    # but "lbfgs" takes it (its metric then bounds the curvature of q)
    res = solve_dual(weighted, method="lbfgs", tol=1e-9)  # lam2 = 1e-3
    ref = solve_dual(weighted, method="apg", tol=1e-9, max_iter=100_000)
    assert res.converged and res.primal_objective == pytest.approx(ref.primal_objective,
                                                                     rel=2e-9)


def test_psd_regressor_small_lam2_matches_clarabel(rng):
    """PSDRegressor's default dual path (quasi-Newton steps for small problems) at a small
    lam2, against the primal SDP solved by Clarabel."""
    X, M = make_data(rng, 12, 2)
    kw = dict(sigma=0.3, lam2=1e-6)
    dual = PSDRegressor(tol=1e-9, **kw).fit(X, M)
    assert dual._n_hessian >= 1  # the quasi-Newton path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        primal = PSDRegressor(solver="primal", primal_solver="CLARABEL", tol=1e-10,
                              **kw).fit(X, M)
    assert dual.dual_gap_ <= 1e-9
    assert dual.objective_ == pytest.approx(primal.objective_, rel=1e-6)
    P, Q = dual.predict(X), primal.predict(X)
    assert np.abs(P - Q).max() <= 1e-3 * np.abs(M).max()


# ---- coupled duals (convex regression, eq. 29): regularized Newton steps ----------------
def convex_problem(seed, n=30, m=12, rho=1e-4, lam2=1e-5, concave_truth=False):
    """Convex regression in two features with Nystrom-like few centres: q's curvature has
    rank n + 3 < m d (d + 1) / 2, so D is flat in many directions."""
    from psdsos.kernels import get_kernel
    from psdsos.problems import ConvexRegressionProblem

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    f = np.log(np.exp(X @ [1.0, -0.5]) + np.exp(X @ [-0.7, 0.9]) + 1.0)
    y = (-f if concave_truth else f) + 0.1 * rng.standard_normal(n)
    Z = rng.uniform(-1.0, 1.0, size=(m, 2))
    k = get_kernel("gaussian", 0.5)
    Phi = ExactFeatures(k).fit(Z).transform(Z)
    E = np.column_stack([np.ones(n), X])
    return ConvexRegressionProblem(k(X, X), k.hessian(Z, X), Phi, y, E, rho, 0.0, lam2)


def relative_residual(pb, G, B):
    gq = pb.smooth(G)[1]
    FB = sos_evaluate(pb.Phi, B, pb.d)
    r = gq - FB
    return np.sqrt(float(np.vdot(r, r)) / max(float(np.vdot(gq, gq)), float(np.vdot(FB, FB))))


@pytest.mark.parametrize("seed, lam2", [(0, 1e-3), (1, 1e-5), (2, 1e-7)])
def test_coupled_newton_agrees_with_clarabel_and_apg(seed, lam2):
    pb = convex_problem(seed, lam2=lam2, concave_truth=seed == 1)
    tol = 1e-7
    res = solve_dual(pb, tol=tol, max_iter=20000, method="lbfgs")
    assert res.converged and res.method == "lbfgs"
    # the certificate of a coupled dual: the gap and the relative residual both <= tol
    assert abs(res.dual_gap) <= tol
    assert relative_residual(pb, res.G, res.B) <= tol * (1 + 1e-9)
    assert np.linalg.eigvalsh(res.B)[0] >= -1e-12 * max(1.0, np.abs(res.B).max())
    ref = quiet_clarabel(pb, tol=1e-10)
    assert ref.residual <= 1e-8
    assert res.primal_objective == pytest.approx(ref.objective, rel=10 * tol)
    apg = solve_dual(pb, tol=tol, max_iter=200_000, method="apg")
    assert apg.converged
    assert res.primal_objective == pytest.approx(apg.primal_objective, rel=10 * tol)


def test_auto_on_a_coupled_dual_is_the_hybrid():
    pb = convex_problem(3, lam2=1e-6)
    res = solve_dual(pb, tol=1e-7, max_iter=20000, method="auto")
    assert res.converged and res.method.startswith("auto (")
    assert abs(res.dual_gap) <= 1e-7 and relative_residual(pb, res.G, res.B) <= 1e-7 * 1.000001
    # the default method stays the accelerated one
    assert solve_dual(pb, tol=1e-3).method == "apg"


def test_hybrid_falls_back_to_the_accelerated_method(monkeypatch):
    """Where the Newton steps give up, the last stage restarts the accelerated method from
    the first stage's point and still reaches the certificate."""
    import psdsos.solvers._dual as dual_mod
    import psdsos.solvers._dual_newton as dn

    monkeypatch.setattr(dual_mod, "HYBRID_APG_ITER", 5)
    monkeypatch.setattr(dn, "_regularized_newton", lambda ev, x0, hessian: (ev(x0), True)[1])
    pb = convex_problem(4, lam2=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no warning from inner stages
        res = solve_dual(pb, tol=1e-6, max_iter=50000, method="auto")
    assert res.converged
    assert res.method.startswith("auto (5 apg + 1 lbfgs + ") and res.method.endswith(" apg)")
    ref = solve_dual(pb, tol=1e-6, max_iter=50000, method="apg")
    assert res.primal_objective == pytest.approx(ref.primal_objective, rel=1e-5)
    # out of budget: one ConvergenceWarning, the iterations of every stage counted
    with pytest.warns(ConvergenceWarning):
        short = solve_dual(pb, tol=1e-12, max_iter=9, method="auto")
    assert not short.converged and short.n_iter == 9
