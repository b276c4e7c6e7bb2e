"""Tests for psdsos.solvers: the accelerated dual solver, negative parts, CVXPY primal solves.

Every solver is checked against an independent reference: dual against both primal
solvers (SCS and Clarabel) on a grid of small seeded problems, all three against a closed
form, the negative part against a full ``eigh``, and a generic DualProblem against a CVXPY
model written here from scratch.
"""

from __future__ import annotations

import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import ConvergenceWarning

from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.problems import PSDLeastSquares
from psdsos.solvers import (
    PRIMAL_SOLVERS,
    DualProblem,
    DualResult,
    InaccurateSolutionWarning,
    NegativePart,
    PrimalResult,
    SolverStatusError,
    solve_cvxpy,
    solve_dual,
    solve_primal,
)
from psdsos.sos import sos_adjoint, sos_evaluate, sos_operator_norm_sq


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def make_data(rng, n, d, p=2):
    """Noisy PSD targets: symmetric, sometimes indefinite (legitimate for eq. 11)."""
    X = rng.uniform(-1.0, 1.0, size=(n, p))
    A = rng.standard_normal((n, d, d))
    M = A @ np.swapaxes(A, 1, 2) / d + 0.3 * rng.standard_normal((n, d, d))
    return X, 0.5 * (M + np.swapaxes(M, 1, 2))


def make_features(kind, X, seed):
    if kind == "exact":
        return ExactFeatures("gaussian", 0.7).fit(X)
    return NystromFeatures("gaussian", 0.7, n_landmarks=len(X) // 2, random_state=seed).fit(X)


def negpart_ref(S):
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    return (U * np.maximum(-w, 0.0)) @ U.T


def proj_psd_ref(A):
    w, U = np.linalg.eigh(0.5 * (A + A.T))
    return (U * np.maximum(w, 0.0)) @ U.T


def quiet_primal(problem, solver, tol, max_iter=None):
    """solve_primal, tolerating a Clarabel/SCS 'optimal_inaccurate' (the answer is checked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        return solve_primal(problem, solver=solver, tol=tol, max_iter=max_iter)


def lipschitz(problem):
    return problem.smooth_lipschitz() + sos_operator_norm_sq(problem.Phi) / problem.lam2


# ---------------------------------------------------------------------------------------
# dual vs. both primal solvers (acceptance criterion: same J to 1e-5 relative)
# ---------------------------------------------------------------------------------------
GRID = list(itertools.product([6, 12], [1, 2, 3], ["exact", "nystrom"], [0.0, 1e-3], [1e-3, 1e-2]))


@pytest.mark.parametrize("n, d, kind, lam1, lam2", GRID)
def test_dual_and_primal_solvers_agree(seed, n, d, kind, lam1, lam2):
    rng = np.random.default_rng([seed, n, d])
    X, M = make_data(rng, n, d)
    Phi = make_features(kind, X, seed).transform(X)
    pb = PSDLeastSquares(Phi, M, lam1, lam2)

    rd = solve_dual(pb, tol=1e-9, max_iter=100_000)
    assert isinstance(rd, DualResult) and rd.converged
    J_dual = pb.objective(rd.B)
    assert rd.primal_objective == pytest.approx(J_dual, rel=1e-12)
    lower = rd.dual_objective  # -D(Gamma): a certified lower bound on min J (weak duality)

    rc = quiet_primal(pb, "CLARABEL", 1e-9)
    rs = quiet_primal(pb, "SCS", 1e-7, max_iter=200_000)
    for res in (rc, rs):
        assert isinstance(res, PrimalResult)
        assert res.objective == pytest.approx(pb.objective(res.B), rel=1e-12)
        assert res.objective == pytest.approx(J_dual, rel=1e-5)
        # the primal points are (nearly) PSD, so their J is above the dual bound
        assert np.linalg.eigvalsh(res.B)[0] >= -1e-6 * max(1.0, np.abs(res.B).max())
        assert res.objective >= lower - 1e-6 * abs(lower)
    assert J_dual >= lower - 1e-12 * abs(lower)
    assert np.linalg.eigvalsh(rd.B)[0] >= -1e-12 * max(1.0, np.abs(rd.B).max())


# ---------------------------------------------------------------------------------------
# closed form with r = 1
# ---------------------------------------------------------------------------------------
def closed_form_r1(phi, M, lam1, lam2):
    r"""With one feature, Psi_i = phi_i I_d and F_B(x_i) = phi_i^2 B, so

    J(B) = a/2 ||B||^2 - <B, c> + const,  a = sum phi_i^4 / n + lam2,
                                         c = sum phi_i^2 M_i / n - lam1 I,

    i.e. J(B) = a/2 ||B - c/a||^2 + const, minimized over PSD B by Proj_PSD(c / a)."""
    n, d = M.shape[0], M.shape[1]
    a = np.sum(phi**4) / n + lam2
    c = np.einsum("i,ipq->pq", phi**2, M) / n - lam1 * np.eye(d)
    return proj_psd_ref(c / a), a


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("lam1, lam2", [(0.0, 1e-3), (0.3, 1e-2), (50.0, 1e-2), (0.1, 0.0)])
def test_closed_form_one_feature(rng, d, lam1, lam2):
    n = 10
    phi = rng.uniform(0.2, 1.5, size=n)
    M = rng.standard_normal((n, d, d))
    M = M + np.swapaxes(M, 1, 2)
    M[0] -= 3.0 * np.eye(d)  # make c indefinite: the projection is active
    B_star, a = closed_form_r1(phi, M, lam1, lam2)
    pb = PSDLeastSquares(phi[:, None], M, lam1, lam2)
    J_star = pb.objective(B_star)
    # B* is optimal: J grows along random PSD perturbations (a sanity check of the formula)
    for _ in range(5):
        E = rng.standard_normal((d, d))
        assert pb.objective(proj_psd_ref(B_star + 1e-3 * (E + E.T))) >= J_star - 1e-14

    results = []
    if lam2 > 0:
        rd = solve_dual(pb, tol=1e-10, max_iter=100_000)
        results.append((rd.B, rd.dual_gap * max(abs(rd.primal_objective), 1.0)))
    for solver, tol in (("CLARABEL", 1e-9), ("SCS", 1e-8)):
        rp = quiet_primal(pb, solver, tol, max_iter=200_000 if solver == "SCS" else None)
        results.append((rp.B, max(rp.objective - J_star, 0.0) + tol * max(1.0, abs(J_star))))
    for B, gap in results:
        J = pb.objective(B)
        assert J == pytest.approx(J_star, rel=1e-6, abs=1e-9)
        # J is a-strongly convex: ||B - B*||^2 <= 2 (J - J*) / a
        bound = np.sqrt(2 * max(J - J_star, gap) / a) * 10 + 1e-8
        np.testing.assert_allclose(B, B_star, atol=bound)
    if lam1 == 50.0:
        np.testing.assert_array_equal(B_star, 0.0)  # a large trace weight kills B


# ---------------------------------------------------------------------------------------
# optimality of the dual solution
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("d, kind", [(1, "exact"), (2, "nystrom"), (3, "exact")])
def test_dual_kkt_conditions(rng, seed, d, kind):
    n, lam1, lam2 = 10, 1e-3, 1e-3
    X, M = make_data(rng, n, d)
    Phi = make_features(kind, X, seed).transform(X)
    pb = PSDLeastSquares(Phi, M, lam1, lam2)
    tol = 1e-10
    res = solve_dual(pb, tol=tol, max_iter=100_000)
    assert res.converged
    G, B = res.G, res.B
    # symmetric iterates
    np.testing.assert_allclose(G, np.swapaxes(G, 1, 2), atol=1e-14)
    # primal recovery B = [A*(G) + lam1 I]_- / lam2 (Theorem 3)
    N = Phi.shape[1] * d
    S = sos_adjoint(Phi, G) + lam1 * np.eye(N)
    np.testing.assert_allclose(B, negpart_ref(S) / lam2, atol=1e-9 * max(1, np.abs(B).max()))
    # stationarity Gamma_i = (F_B(x_i) - M_i) / n, to the accuracy the gap certifies:
    # D is L-smooth so ||grad D||^2 <= 2 L (D - D*) <= 2 L * gap * scale
    scale = max(abs(res.primal_objective), abs(res.dual_objective))
    bound = np.sqrt(2 * lipschitz(pb) * res.dual_gap * scale) / n
    FB = sos_evaluate(Phi, B, d)
    resid = np.linalg.norm(G - (FB - M) / n)
    assert resid <= 1.01 * bound + 1e-12
    # and the recovered pair closes the gap: P(B) = -D(G) to tol
    assert res.primal_objective - res.dual_objective <= tol * scale * (1 + 1e-9)


@pytest.mark.parametrize("tol", [1e-4, 1e-7, 1e-10])
def test_dual_gap_reported_is_consistent(rng, seed, tol):
    X, M = make_data(rng, 12, 2)
    pb = PSDLeastSquares(make_features("exact", X, seed).transform(X), M, 1e-3, 1e-2)
    res = solve_dual(pb, tol=tol, history=True)
    assert res.converged
    assert 0.0 <= res.dual_gap <= tol
    P, D = res.primal_objective, res.dual_objective
    assert res.dual_gap == pytest.approx((P - D) / max(abs(P), abs(D)), rel=1e-9, abs=1e-15)
    assert "gap" in res.message
    assert len(res.history["gap"]) == res.n_iter == len(res.history["dual"])
    assert res.history["gap"][-1] <= tol
    assert min(res.history["gap"]) >= -1e-12
    assert res.time >= 0 and res.step_size > 0
    # the dual values along the run are all lower bounds on J at the end
    assert max(res.history["dual"]) <= P + 1e-12 * abs(P)


def test_dual_tighter_tol_more_accurate(rng, seed):
    X, M = make_data(rng, 10, 2)
    pb = PSDLeastSquares(make_features("exact", X, seed).transform(X), M, 0.0, 1e-3)
    ref = quiet_primal(pb, "CLARABEL", 1e-10).objective
    loose = solve_dual(pb, tol=1e-3)
    tight = solve_dual(pb, tol=1e-10)
    assert tight.n_iter >= loose.n_iter
    assert abs(loose.primal_objective - ref) <= 1e-3 * abs(ref) * 1.01 + 1e-9
    assert abs(tight.primal_objective - ref) <= 1e-7 * abs(ref)


def test_dual_is_scale_invariant():
    """(c M, c lam1) has solution c B* and objective c^2 J*: the iterations should not care."""
    for s in range(1, 5):
        rng = np.random.default_rng(s)
        X, M = make_data(rng, 8, 2)
        Phi = make_features("exact", X, 0).transform(X)
        ref = solve_dual(PSDLeastSquares(Phi, M, 1e-3, 1e-3), tol=1e-9)
        c = 1e-3
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            small = solve_dual(
                PSDLeastSquares(Phi, c * M, c * 1e-3, 1e-3), tol=1e-9, max_iter=10 * ref.n_iter
            )
        np.testing.assert_allclose(small.B, c * ref.B, atol=1e-6 * c * np.abs(ref.B).max())


def test_dual_convergence_warning(rng, seed):
    X, M = make_data(rng, 8, 2)
    pb = PSDLeastSquares(make_features("exact", X, seed).transform(X), M, 0.0, 1e-3)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = solve_dual(pb, tol=1e-12, max_iter=1)
    assert not res.converged
    assert res.n_iter == 1
    assert "maximum number of iterations" in res.message
    assert res.dual_gap > 1e-12
    assert np.linalg.eigvalsh(res.B)[0] >= -1e-12  # still a PSD (suboptimal) point


def test_dual_rejects_lam2_zero(rng):
    X, M = make_data(rng, 6, 2)
    pb = PSDLeastSquares(ExactFeatures("gaussian", 0.7).fit(X).transform(X), M, 1e-3, 0.0)
    with pytest.raises(ValueError, match="primal"):
        solve_dual(pb)
    # the primal handles lam2 = 0 (lam1 > 0)
    res = quiet_primal(pb, "CLARABEL", 1e-9)
    assert res.status in ("optimal", "optimal_inaccurate")


def test_dual_argument_errors(rng):
    X, M = make_data(rng, 6, 1)
    pb = PSDLeastSquares(ExactFeatures("gaussian", 0.7).fit(X).transform(X), M, 0.0, 1e-3)
    with pytest.raises(ValueError, match="tol"):
        solve_dual(pb, tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        solve_dual(pb, max_iter=0)


def test_dual_warm_start(rng, seed):
    X, M = make_data(rng, 12, 2)
    Phi = make_features("exact", X, seed).transform(X)
    pb = PSDLeastSquares(Phi, M, 1e-3, 1e-3)
    cold = solve_dual(pb, tol=1e-9)
    assert cold.n_iter > 5
    # from the solution itself: converged at once
    again = solve_dual(pb, tol=1e-9, init=cold.G, step_size=cold.step_size)
    assert again.converged and again.n_iter <= 2
    assert again.primal_objective == pytest.approx(cold.primal_objective, rel=1e-9)
    # from the solution of a nearby problem: fewer iterations than a cold start
    pb2 = PSDLeastSquares(Phi, M, 1e-3, 1.1e-3)
    cold2 = solve_dual(pb2, tol=1e-9)
    warm2 = solve_dual(pb2, tol=1e-9, init=cold.G)
    assert warm2.converged
    assert warm2.n_iter < cold2.n_iter
    assert warm2.primal_objective == pytest.approx(cold2.primal_objective, rel=1e-8)


def test_dual_verbose_prints_progress(rng, seed, capsys):
    X, M = make_data(rng, 6, 1)
    pb = PSDLeastSquares(make_features("exact", X, seed).transform(X), M, 0.0, 1e-3)
    res = solve_dual(pb, tol=1e-8, verbose=1)
    captured = capsys.readouterr()
    assert captured.out == ""  # progress goes to stderr
    err = captured.err
    assert err.count("[psdsos dual] iter") == res.n_iter
    assert f"iter {res.n_iter:6d}" in err
    res = solve_dual(pb, tol=1e-8, verbose=False)
    assert capsys.readouterr() == ("", "")


class WeightedLeastSquares(DualProblem):
    r"""A different smooth part through the generic interface.

    Primal: sum_i w_i / 2 ||F_B(x_i) - M_i||^2 + lam1 Tr B + lam2 / 2 ||B||^2, so
    L*(G) = sum_i <G_i, M_i> + ||G_i||^2 / (2 w_i)."""

    def __init__(self, Phi, M, w, lam1, lam2):
        self.Phi, self.M, self.w = Phi, M, w
        self.d = M.shape[1]
        self.lam1, self.lam2 = lam1, lam2

    def smooth(self, G):
        iw = (1.0 / self.w)[:, None, None]
        return float(np.sum(G * self.M) + 0.5 * np.sum(iw * G * G)), self.M + iw * G

    def smooth_lipschitz(self):
        return float(np.max(1.0 / self.w))

    def strong_convexity(self):
        return float(np.min(1.0 / self.w))

    def primal_objective(self, G, B, FB):
        fit = 0.5 * float(np.sum(self.w[:, None, None] * (FB - self.M) ** 2))
        return fit + self.lam1 * float(np.trace(B)) + 0.5 * self.lam2 * float(np.sum(B * B))


def test_dual_solver_on_a_generic_problem(rng):
    n, d, lam1, lam2 = 7, 2, 1e-2, 1e-2
    X, M = make_data(rng, n, d)
    Phi = ExactFeatures("exponential", 0.5).fit(X).transform(X)
    w = rng.uniform(0.1, 2.0, size=n)
    prob = WeightedLeastSquares(Phi, M, w, lam1, lam2)
    res = solve_dual(prob, tol=1e-10)
    assert res.converged
    # reference: the same primal written directly in CVXPY with explicit kron features
    r = Phi.shape[1]
    B = cp.Variable((r * d, r * d), PSD=True)
    terms = []
    for i in range(n):
        Psi = np.kron(Phi[i][:, None], np.eye(d))
        terms.append(w[i] / 2 * cp.sum_squares(Psi.T @ B @ Psi - M[i]))
    obj = sum(terms) + lam1 * cp.trace(B) + lam2 / 2 * cp.sum_squares(B)
    ref_prob = cp.Problem(cp.Minimize(obj))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        ref = solve_cvxpy(ref_prob, solver="CLARABEL", tol=1e-10)
    assert res.primal_objective == pytest.approx(ref, rel=1e-6)
    # KKT for this loss: Gamma_i = w_i (F_B(x_i) - M_i)
    FB = sos_evaluate(Phi, res.B, d)
    np.testing.assert_allclose(res.G, w[:, None, None] * (FB - M), atol=1e-4)


# ---------------------------------------------------------------------------------------
# negative part
# ---------------------------------------------------------------------------------------
def _forced(size, strategy):
    neg = NegativePart(size)
    neg.n_neg = neg._prev = {"neg": 0, "pos": size, "full": size // 2}[strategy]
    neg.min_partial_size = 0  # exercise the partial strategies on small matrices too
    return neg


@given(
    eigs=arrays(
        np.float64,
        st.integers(1, 14),
        unique=True,
        elements=st.one_of(st.just(0.0), st.floats(-1e3, 1e3, width=64)),
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_negative_part_strategies_match_eigh(eigs, seed):
    """Spectra with distinct eigenvalues (zero included); a tight cluster filling the
    computed side is a known failure, see test_negative_part_clustered_spectrum."""
    size = len(eigs)
    gaps = np.diff(np.sort(eigs))
    assume(size == 1 or gaps.min() > 1e-6 * max(1.0, np.abs(eigs).max()))
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((size, size)))
    S = (U * eigs) @ U.T
    S = 0.5 * (S + S.T)
    ref = negpart_ref(S)
    w = np.linalg.eigvalsh(S)
    ref_sq = float(np.sum(np.minimum(w, 0.0) ** 2))
    big = max(float(np.abs(eigs).max()), 1.0)
    strategies = ["neg", "pos"] + (["full"] if size >= 3 else [])
    for strategy in strategies:
        neg = _forced(size, strategy)
        assert neg._strategy() == strategy
        N, sq = neg(S)
        np.testing.assert_allclose(N, ref, atol=1e-10 * big * size)
        np.testing.assert_array_equal(N, N.T)
        assert sq == pytest.approx(ref_sq, abs=1e-10 * big**2 * size)
        # squared norm from eigenvalues only
        assert _forced(size, strategy).sq_norm(S) == pytest.approx(
            ref_sq, abs=1e-10 * big**2 * size
        )
        assert np.sum(N * N) == pytest.approx(ref_sq, abs=1e-9 * big**2 * size)
        # the count of negative eigenvalues is remembered for the next call
        if np.min(np.abs(w)) > 1e-8 * big:
            assert neg.n_neg == int(np.sum(w < 0))


def _clustered(size=4, value=0.03125, seed=1):
    """value * U U^T for a random orthogonal U: value I up to rounding-level off-diagonals."""
    U, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((size, size)))
    S = value * (U @ U.T)
    return 0.5 * (S + S.T)


@pytest.mark.parametrize("strategy, sign", [("pos", 1.0), ("neg", -1.0)])
def test_negative_part_clustered_spectrum(strategy, sign):
    for seed in range(40):  # ~10% of such matrices trigger the LAPACK failure
        S = sign * _clustered(size=6, seed=seed)
        N, sq = _forced(6, strategy)(S)
        np.testing.assert_allclose(N, negpart_ref(S), atol=1e-14)
        assert sq == pytest.approx(np.sum(np.minimum(np.linalg.eigvalsh(S), 0) ** 2))


def test_dual_orthonormal_features_isotropic_targets():
    for seed in range(10):
        rng = np.random.default_rng(seed)
        Q, _ = np.linalg.qr(rng.standard_normal((10, 10)))
        M = np.stack([np.eye(2)] * 10)
        pb = PSDLeastSquares(Q, M, 0.0, 1e-3)
        res = solve_dual(pb, tol=1e-9)
        ref = quiet_primal(pb, "CLARABEL", 1e-9)
        assert res.primal_objective == pytest.approx(ref.objective, rel=1e-6)


def test_negative_part_edge_cases(rng):
    for strategy in ("neg", "pos", "full"):
        # PSD input: zero negative part; negative definite input: N = -S
        A = rng.standard_normal((6, 6))
        P = A @ A.T + np.eye(6)
        N, sq = _forced(6, strategy)(P)
        np.testing.assert_allclose(N, 0.0, atol=1e-12)
        assert sq == pytest.approx(0.0, abs=1e-10)
        N, sq = _forced(6, strategy)(-P)
        np.testing.assert_allclose(N, P, atol=1e-12)
        assert sq == pytest.approx(np.sum(P * P), rel=1e-12)
    # small matrices always take the full decomposition (scipy's overhead eats the saving)
    small = NegativePart(20)
    small(np.eye(20))
    small(np.eye(20))
    assert small.n_neg == 0 and small._strategy() == "full"
    # the strategy follows the last two counts: partial only when both are on one side
    neg = NegativePart(100)
    assert neg._strategy() == "full"
    neg(np.eye(100))
    assert neg.n_neg == 0 and neg._strategy() == "full"  # one count is not enough
    neg(np.eye(100))
    assert neg.n_neg == 0 and neg._strategy() == "neg"
    neg(-np.eye(100))
    assert neg.n_neg == 100 and neg._strategy() == "full"  # the count jumped
    neg(-np.eye(100))
    assert neg.n_neg == 100 and neg._strategy() == "pos"


# ---------------------------------------------------------------------------------------
# CVXPY solves: status checking
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", PRIMAL_SOLVERS)
def test_solve_cvxpy_infeasible_and_unbounded_raise(solver):
    x = cp.Variable(2)
    infeasible = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 0])
    with pytest.raises(SolverStatusError, match=rf"'infeasible'.*{solver}"):
        solve_cvxpy(infeasible, solver=solver)
    unbounded = cp.Problem(cp.Minimize(x[0]), [x[1] >= 1])
    with pytest.raises(SolverStatusError, match=rf"'unbounded'.*{solver}"):
        solve_cvxpy(unbounded, solver=solver)


def _small_sdp(rng):
    X = cp.Variable((6, 6), PSD=True)
    C = rng.standard_normal((6, 6))
    return cp.Problem(cp.Minimize(cp.sum_squares(X - (C + C.T)) + cp.trace(X)))


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
def test_solve_cvxpy_inaccurate_warns():
    """SCS stopped after one iteration reports optimal_inaccurate: a warning, not silence.

    (Fixed data: on other data one SCS iteration may end 'infeasible_inaccurate', which
    raises; that branch is covered by the status tests.)"""
    prob = _small_sdp(np.random.default_rng(0))
    with pytest.warns(InaccurateSolutionWarning, match="SCS.*optimal_inaccurate"):
        value = solve_cvxpy(prob, solver="SCS", tol=1e-9, max_iter=1)
    assert prob.status == cp.OPTIMAL_INACCURATE
    assert np.isfinite(value)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
def test_solve_cvxpy_iteration_limit_raises(rng):
    """Clarabel at its iteration limit reports 'user_limit': an error naming it."""
    prob = _small_sdp(rng)
    with pytest.raises(SolverStatusError, match="user_limit.*CLARABEL"):
        solve_cvxpy(prob, solver="CLARABEL", tol=1e-9, max_iter=1)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
def test_solve_cvxpy_success_and_arguments(rng):
    prob = _small_sdp(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v1 = solve_cvxpy(prob, solver="CLARABEL", tol=1e-9)
        v2 = solve_cvxpy(prob, solver="scs", tol=1e-8, max_iter=100_000)
    assert prob.status == cp.OPTIMAL
    assert v1 == pytest.approx(v2, rel=1e-5)
    with pytest.raises(ValueError, match="primal_solver"):
        solve_cvxpy(prob, solver="MOSEK")
    with pytest.raises(ValueError, match="tol"):
        solve_cvxpy(prob, solver="SCS", tol=0.0)
    # extra options reach the solver and override the mapped ones (SCS's own max_iters);
    # a fresh problem, since CVXPY warm-starts SCS from the previous solution
    fresh = _small_sdp(np.random.default_rng(0))
    with pytest.warns(InaccurateSolutionWarning):
        solve_cvxpy(fresh, solver="SCS", tol=1e-9, max_iter=100_000, max_iters=1)


def test_solve_primal_result_and_errors(rng, seed):
    X, M = make_data(rng, 6, 2)
    pb = PSDLeastSquares(ExactFeatures("gaussian", 0.7).fit(X).transform(X), M, 1e-3, 1e-2)
    res = solve_primal(pb, solver="CLARABEL", tol=1e-9)
    assert res.status == "optimal" and res.solver == "CLARABEL" and res.n_iter > 0
    np.testing.assert_array_equal(res.B, res.B.T)
    assert res.objective == pytest.approx(pb.objective(res.B), rel=1e-14)
    assert res.time >= 0
    with pytest.raises(TypeError, match="cvxpy_problem"):
        solve_primal(object())
