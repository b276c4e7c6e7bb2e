"""Several SoS blocks in one negative-part dual (BlockDualProblem through solve_dual).

The primal: min over B_k PSD of l(a) + sum_k lam1_k Tr B_k + lam2_k / 2 ||B_k||_F^2 with
a_k = A_k(B_k) and l(a) = 1/2 (a - t)^T W (a - t), W positive definite and coupling the
blocks (a runs over the upper triangles of every block's matrices, off-diagonal entries
weighted by sqrt 2 so that the Frobenius inner product is the Euclidean one).  Its dual
has q(G) = l^*(G) = <g, t> + 1/2 g^T W^{-1} g; the test solves the dual and an independent
CVXPY primal (Clarabel).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from psdsos.problems import PSDLeastSquares
from psdsos.solvers import (
    BlockDualProblem,
    DualBlock,
    DualProblemProtocol,
    dual_capabilities,
    solve_dual,
)
from psdsos.sos import sos_evaluate


def _sym_basis(d):
    """(idx_i, idx_j, weight) of the upper triangle, weight sqrt 2 off the diagonal."""
    iu, ju = np.triu_indices(d)
    return iu, ju, np.where(iu == ju, 1.0, np.sqrt(2.0))


def _vec(blocks, Gs):
    """Isometric vectorization of the blocks' symmetric matrices, concatenated."""
    out = []
    for b, G in zip(blocks, Gs, strict=True):
        iu, ju, w = _sym_basis(b.d)
        out.append((G[:, iu, ju] * w).reshape(-1))
    return np.concatenate(out)


def _unvec(blocks, g):
    """Inverse of _vec (symmetric blocks)."""
    Gs, o = [], 0
    for b in blocks:
        iu, ju, w = _sym_basis(b.d)
        t = len(iu)
        v = g[o:o + b.m * t].reshape(b.m, t) / w
        o += b.m * t
        G = np.zeros(b.shape)
        G[:, iu, ju] = v
        G[:, ju, iu] = v
        Gs.append(G)
    return Gs


def _problem(blocks, rng):
    n = sum(b.m * b.d * (b.d + 1) // 2 for b in blocks)
    Q = rng.standard_normal((n, n))
    W = Q @ Q.T / n + 0.5 * np.eye(n)  # positive definite, couples every entry
    Winv = np.linalg.inv(W)
    t = rng.standard_normal(n)

    def smooth(Gs):
        g = _vec(blocks, Gs)
        Wg = Winv @ g
        # _vec is an isometry: the Frobenius gradient is the inverse image of t + W^-1 g
        return float(g @ t + 0.5 * g @ Wg), _unvec(blocks, t + Wg)

    def data_term(FBs):
        r = _vec(blocks, FBs) - t
        return 0.5 * float(r @ W @ r)

    ev = np.linalg.eigvalsh(Winv)
    pb = BlockDualProblem(blocks, smooth, data_term=data_term, lipschitz=float(ev[-1]),
                          strong_convexity=float(ev[0]))
    return pb, W, t


def _blocks(rng):
    X1 = rng.uniform(-1, 1, (6, 1))
    X2 = rng.uniform(-1, 1, (5, 2))
    Phi1 = np.exp(-((X1 - X1.T) ** 2))
    K2 = np.exp(-np.sum((X2[:, None] - X2[None]) ** 2, axis=-1))
    Phi2 = np.linalg.cholesky(K2 + 1e-9 * np.eye(5))
    return [DualBlock(Phi1, 1, 1e-2, 0.3), DualBlock(Phi2, 2, 0.05, 0.1)]


def _cvxpy_primal(blocks, W, t):
    Bs = [cp.Variable((b.N, b.N), PSD=True) for b in blocks]
    parts, reg = [], 0
    for b, B in zip(blocks, Bs, strict=True):
        iu, ju, w = _sym_basis(b.d)
        for j in range(b.m):
            Psi = np.kron(b.Phi[j][:, None], np.eye(b.d))
            F = Psi.T @ B @ Psi
            parts += [w[k] * F[iu[k], ju[k]] for k in range(len(iu))]
        reg = reg + b.lam1 * cp.trace(B) + 0.5 * b.lam2 * cp.sum_squares(B)
    a = cp.hstack(parts)
    L = np.linalg.cholesky(W)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ (a - t)) + reg))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, [B.value for B in Bs]


def test_two_blocks_match_cvxpy_primal(rng):
    blocks = _blocks(rng)
    pb, W, t = _problem(blocks, rng)
    res = solve_dual(pb, tol=1e-12, max_iter=20000)
    assert res.converged
    assert isinstance(res.G, tuple) and [G.shape for G in res.G] == [(6, 1, 1), (5, 2, 2)]
    assert [B.shape for B in res.B] == [(6, 6), (10, 10)]
    P, Bs = _cvxpy_primal(blocks, W, t)
    assert res.primal_objective == pytest.approx(P, rel=1e-6)
    assert -res.dual_objective == pytest.approx(-P, rel=1e-6)
    for B, Bc in zip(res.B, Bs, strict=True):
        np.testing.assert_allclose(B, Bc, atol=1e-5 * max(1.0, np.abs(Bc).max()))


def test_one_block_is_the_single_block_solve(rng):
    X = rng.uniform(-1, 1, (7, 1))
    Phi = np.linalg.cholesky(np.exp(-((X - X.T) ** 2)) + 1e-9 * np.eye(7))
    A = rng.standard_normal((7, 2, 2))
    M = A @ A.transpose(0, 2, 1)
    ls = PSDLeastSquares(Phi, M, 1e-3, 1e-2)

    class OneBlock(BlockDualProblem):
        def smooth(self, G):
            q, g = ls.smooth(G[0])
            return q, [g]

        def smooth_value(self, G):
            return ls.smooth_value(G[0])

        def primal_objective(self, G, B, FB):
            return ls.primal_objective(G[0], B[0], FB[0])

    one = OneBlock([DualBlock(Phi, 2, 1e-3, 1e-2)], lipschitz=ls.smooth_lipschitz(),
                   strong_convexity=ls.strong_convexity())
    for precondition in (True, False):
        ref = solve_dual(ls, tol=1e-9, precondition=precondition, history=True)
        res = solve_dual(one, tol=1e-9, precondition=precondition, history=True)
        assert res.n_iter == ref.n_iter
        assert res.history["gap"] == ref.history["gap"]
        np.testing.assert_array_equal(res.G[0], ref.G)
        np.testing.assert_array_equal(res.B[0], ref.B)
        assert res.primal_objective == ref.primal_objective
        assert res.dual_objective == ref.dual_objective


@given(seed=st.integers(0, 2**16), lam1=st.floats(0.0, 0.1), lam2=st.floats(1e-3, 1.0))
def test_recovered_blocks_are_psd(seed, lam1, lam2):
    rng = np.random.default_rng(seed)
    b1, b2 = _blocks(rng)
    blocks = [DualBlock(b1.Phi, 1, lam1, lam2), DualBlock(b2.Phi, 2, 0.5 * lam1, 2 * lam2)]
    pb, _, _ = _problem(blocks, rng)
    res = solve_dual(pb, tol=1e-6, max_iter=3000)
    for B in res.B:
        np.testing.assert_allclose(B, B.T)
        assert np.linalg.eigvalsh(B)[0] >= -1e-10 * max(1.0, np.abs(B).max())
    FB = sos_evaluate(blocks[1].Phi, res.B[1], 2)
    assert np.all(np.linalg.eigvalsh(FB) >= -1e-9 * max(1.0, np.abs(FB).max()))


def test_block_problem_checks_its_blocks(rng):
    b1, _ = _blocks(rng)
    with pytest.raises(ValueError, match="blocks"):
        BlockDualProblem([])
    with pytest.raises(ValueError, match="lam2"):
        BlockDualProblem([DualBlock(b1.Phi, 1, 0.0, 0.0)])
    with pytest.raises(ValueError, match="DualBlock"):
        BlockDualProblem([b1.Phi])


def test_problems_declare_the_protocol(rng):
    blocks = _blocks(rng)
    pb, _, _ = _problem(blocks, rng)
    assert isinstance(pb, DualProblemProtocol)
    caps = dual_capabilities(pb)
    assert caps.blocks and not caps.proximal and not caps.coupled

    class Incomplete:
        lam1, lam2, d = 0.0, 1.0, 1
        Phi = np.eye(2)

        def smooth(self, G):
            return 0.0, G

    with pytest.raises(TypeError, match="smooth_lipschitz.*primal_objective"):
        solve_dual(Incomplete())
