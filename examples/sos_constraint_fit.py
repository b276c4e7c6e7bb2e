r"""Fit a PSD-valued covariance curve under "Sigma(t) PSD for all t" with the SoS primitive.
========================================================================================

The user's problem, written directly in CVXPY: noisy 2 x 2 covariance measurements
:math:`Y_i \approx \Sigma(t_i)` along a curve :math:`t \in [0, 1]`, and the model

.. math::

    \Sigma_\theta(t) = \sum_{k=0}^{K} P_k(2t - 1)\, C_k, \qquad C_k \in \mathrm{Sym}(\mathbb R^2),

(Legendre polynomials :math:`P_k`, coefficients :math:`\theta = (C_k)` affine in the
variables).  A covariance must be PSD at every t, an infinite family of constraints
(PSD paper, eq. 13).  Section 4 of the paper replaces it by

.. math::

    \Sigma_\theta(z_j) = \Psi_j^T \mathbf B \Psi_j, \quad j = 1..m, \qquad \mathbf B \succeq 0,

on m sampled points z_j (eq. 14), plus :math:`\lambda_1 \operatorname{Tr}\mathbf B` in the
objective; ``psdsos.sos.sos_constraints`` builds exactly these constraints from the user's
d x d expressions and the features of the z_j.  Theorem 5 bounds the violation between the
samples by :math:`C h^s` (h the fill distance, s the smoothness).

The true curve is singular (rank one) on t in [0.3, 0.7]: the ordinary least-squares fit
of the noisy data dips below the PSD cone there, the SoS-constrained fit does not (up to
a small violation between the samples, measured on a dense grid and asserted below).

Run: ``python examples/sos_constraint_fit.py [--out curve.png]`` (about 2 s;
``PSDSOS_EXAMPLE_FAST=1`` uses fewer sample points, about 1 s).  The figure shows the smallest
eigenvalue of both fits along t and the entries of the SoS-constrained fit.
"""

from __future__ import annotations

import argparse
import os
import time

import cvxpy as cp
import numpy as np
from numpy.polynomial import legendre

from psdsos.features import ExactFeatures
from psdsos.solvers import solve_cvxpy
from psdsos.sos import sos_constraints

FAST = os.environ.get("PSDSOS_EXAMPLE_FAST", "0") not in ("", "0")

SEED = 1
D = 2  # matrix size
DEGREE = 8  # Legendre degree of the model
N_DATA = 60  # noisy measurements
NOISE = 0.05
N_SAMPLES = 16 if FAST else 20  # constraint points z_j
SIGMA = 0.1  # Gaussian kernel bandwidth of the SoS features
LAM1 = 1e-4  # trace weight on B (eq. 6)
RIDGE = 1e-5  # small ridge on the coefficients, same for both fits

#: Measured worst violations on the dense grid over data seeds 1..7 (relative to the largest
#: eigenvalue of the true curve, ~1.5): m = 20 samples: 1.2e-4, m = 16: 7e-4 (this seed:
#: 2.6e-6 and 6.8e-5); the unconstrained fit dips to -4e-3 ... -3e-2 (this seed: -2.9e-2).
#: The asserts keep a margin on both sides.
TOL_CONSTRAINED = 2e-3 if FAST else 5e-4
MIN_UNCONSTRAINED_VIOLATION = 1e-2


def true_covariance(t):
    """Sigma(t) = R(pi t / 2) diag(l1(t), l2(t)) R^T, with l2 = 0 on [0.3, 0.7]."""
    t = np.asarray(t, dtype=float)
    c, s = np.cos(np.pi * t / 2), np.sin(np.pi * t / 2)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
    lam = np.stack(
        [1 + 0.5 * np.sin(2 * np.pi * t), 4.0 * np.maximum(np.abs(t - 0.5) - 0.2, 0.0) ** 2], -1
    )
    return np.einsum("tij,tj,tkj->tik", R, lam, R)


def basis(t):
    """Legendre basis on [0, 1], shape (len(t), DEGREE + 1)."""
    return legendre.legvander(2 * np.asarray(t, dtype=float) - 1, DEGREE)


def evaluate(coefs, t):
    """Sigma(t) for coefficients of shape (DEGREE + 1, D, D)."""
    return np.einsum("tk,kij->tij", basis(t), coefs)


def make_data(rng):
    t = np.sort(rng.uniform(0.0, 1.0, N_DATA))
    E = NOISE * rng.standard_normal((N_DATA, D, D))
    return t, true_covariance(t) + 0.5 * (E + np.swapaxes(E, 1, 2))


def fit(t, Y, *, psd_constraint):
    """Least-squares fit of the coefficients, optionally under the SoS PSD constraint."""
    n = len(t)
    C = cp.Variable((DEGREE + 1, D * D))  # row k = C_k flattened (row-major)
    constraints = [C[:, 1] == C[:, 2]]  # C_k symmetric
    objective = cp.sum_squares(basis(t) @ C - Y.reshape(n, -1)) / n + RIDGE * cp.sum_squares(C)
    info = {}
    if psd_constraint:
        z = np.linspace(0.0, 1.0, N_SAMPLES)
        Phi = ExactFeatures("gaussian", SIGMA).fit(z[:, None]).transform(z[:, None])
        Sz = basis(z) @ C  # (m, D*D), affine in C
        G = [cp.reshape(Sz[j], (D, D), order="C") for j in range(N_SAMPLES)]
        B, sos = sos_constraints(G, Phi)  # G_j == Psi_j^T B Psi_j, B PSD
        constraints += sos
        objective = objective + LAM1 * cp.trace(B)
        info.update(z=z, B=B, Phi=Phi)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    solve_cvxpy(problem, solver="CLARABEL", tol=1e-9)
    coefs = C.value.reshape(DEGREE + 1, D, D)
    return 0.5 * (coefs + np.swapaxes(coefs, 1, 2)), info


def min_eig(S):
    return np.linalg.eigvalsh(S)[:, 0]


def figure(t, Y, grid, truth, S_free, S_sos, z, path=None):
    """(a) the smallest eigenvalue along t of both fits and of the truth; (b) the entries
    of the measurements, the truth and the SoS-constrained fit."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is optional (the "plot" extra)
        print("matplotlib is not installed: no figure")
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 3.8))
    ax1.axhline(0.0, color="0.6", lw=0.8)
    ax1.plot(grid, min_eig(truth), color="k", ls="--", lw=1, label="truth")
    ax1.plot(grid, min_eig(S_free), color="tab:blue", label="least squares, unconstrained")
    ax1.plot(grid, min_eig(S_sos), color="tab:red", label="SoS-constrained")
    ax1.plot(z, np.zeros_like(z), "|", color="tab:red", ms=6, label="constraint points")
    ax1.set_xlabel("t")
    ax1.set_title("smallest eigenvalue of Sigma(t)", fontsize=10)
    ax1.legend(fontsize=7)
    for (a, b), c in zip(((0, 0), (0, 1), (1, 1)), ("C0", "C1", "C2"), strict=True):
        ax2.plot(t, Y[:, a, b], ".", color=c, ms=3, alpha=0.5)
        ax2.plot(grid, truth[:, a, b], color=c, ls="--", lw=1)
        ax2.plot(grid, S_sos[:, a, b], color=c, label=f"Sigma_{a + 1}{b + 1}")
    ax2.set_xlabel("t")
    ax2.set_title("entries: data (dots), truth (dashed), SoS fit", fontsize=10)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        print("figure:", path)
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", metavar="PATH", default=None, help="write the figure there")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    t, Y = make_data(rng)
    grid = np.linspace(0.0, 1.0, 4001)
    truth = true_covariance(grid)

    free, _ = fit(t, Y, psd_constraint=False)
    sos, info = fit(t, Y, psd_constraint=True)

    m_free, m_sos = min_eig(evaluate(free, grid)), min_eig(evaluate(sos, grid))
    m_samples = min_eig(evaluate(sos, info["z"]))
    rmse = {
        name: float(np.sqrt(np.mean(np.sum((evaluate(c, grid) - truth) ** 2, axis=(1, 2)))))
        for name, c in (("unconstrained", free), ("sos", sos))
    }
    B = info["B"].value
    elapsed = time.perf_counter() - t0

    print(
        f"covariance curve fit, {N_DATA} noisy 2x2 measurements, degree {DEGREE}, "
        f"{N_SAMPLES} SoS constraint points"
    )
    print(f"  min eigenvalue on a grid of {len(grid)} points:")
    print(
        f"    unconstrained least squares : {m_free.min():+.3e} at t = "
        f"{grid[np.argmin(m_free)]:.3f} (negative on {np.mean(m_free < 0):.0%} of [0, 1])"
    )
    print(
        f"    SoS-constrained             : {m_sos.min():+.3e} "
        f"(at the constraint points: {m_samples.min():+.3e})"
    )
    print(
        f"  RMSE to the true curve: unconstrained {rmse['unconstrained']:.4f}, "
        f"SoS {rmse['sos']:.4f}"
    )
    print(
        f"  Tr B = {np.trace(B):.3f}, min eig B = {np.linalg.eigvalsh(B)[0]:+.1e}; {elapsed:.1f} s"
    )

    figure(t, Y, grid, truth, evaluate(free, grid), evaluate(sos, grid),
           np.ravel(info["z"]), args.out)

    # --- checks -------------------------------------------------------------------------
    scale = float(np.linalg.eigvalsh(truth)[:, -1].max())
    # the certificate: B is PSD and reproduces Sigma at the constraint points
    assert np.linalg.eigvalsh(B)[0] >= -1e-6 * scale
    Phi, z = info["Phi"], info["z"]
    Psi = np.stack([np.kron(phi[:, None], np.eye(D)) for phi in Phi])  # phi_j kron I_D
    F = np.einsum("jup,uv,jvq->jpq", Psi, B, Psi)
    np.testing.assert_allclose(F, evaluate(sos, z), atol=1e-6 * scale)
    assert m_samples.min() >= -1e-6 * scale
    # PSD everywhere up to the measured between-sample violation (Theorem 5)
    assert m_sos.min() >= -TOL_CONSTRAINED * scale, m_sos.min()
    # the unconstrained fit is not PSD somewhere
    assert m_free.min() <= -MIN_UNCONSTRAINED_VIOLATION * scale, m_free.min()
    # and the constraint does not cost accuracy here: it removes the dip
    assert rmse["sos"] <= rmse["unconstrained"]
    return {
        "min_eig_sos": float(m_sos.min()),
        "min_eig_free": float(m_free.min()),
        "rmse": rmse,
        "time": elapsed,
    }


if __name__ == "__main__":
    main()
