"""The scalar SoS block (d = 1, "g >= 0 at the points") on ill-conditioned exact features:
refused with a ValueError naming the remedies; on accepted features the answer satisfies
g(z_j) >= -tol."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

from psdsos.features import ExactFeatures
from psdsos.solvers import solve_cvxpy
from psdsos.sos import SoSBlock, sos_constraints
from psdsos.sos._primitive import MAX_FEATURE_CONDITION


def nonneg_fit(Phi, z, solver, tol=1e-8):
    """Degree-8 Legendre fit to sin(6 t) + noise under g(z_j) >= 0 through the SoS block;
    returns g at the points (values of the user's affine expression)."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 80)
    y = np.sin(6 * t) + 0.05 * rng.standard_normal(80)
    V = np.polynomial.legendre.legvander(2 * t - 1, 8)
    Vz = np.polynomial.legendre.legvander(2 * z[:, 0] - 1, 8)
    c = cp.Variable(9)
    B, cons = sos_constraints(Vz @ c, Phi, d=1)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(V @ c - y) / 80 + 1e-4 * cp.trace(B)), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        solve_cvxpy(prob, solver=solver, tol=tol)
    return Vz @ c.value, y


@pytest.mark.parametrize("sigma", [0.3, 1.0])
def test_ill_conditioned_exact_features_refused(sigma):
    """30 equispaced points, Gaussian bandwidth 0.3 or 1: condition numbers 9e10 and more
    (Clarabel failed, SCS returned g < 0 before the check)."""
    z = np.linspace(0, 1, 30)[:, None]
    Phi = ExactFeatures("gaussian", sigma).fit(z).transform(z)
    assert np.linalg.cond(Phi) > MAX_FEATURE_CONDITION  # premise
    with pytest.raises(ValueError, match=r"condition number.*sigma.*n_landmarks"):
        sos_constraints(cp.Variable(30), Phi, d=1)
    with pytest.raises(ValueError, match="rank deficient"):
        SoSBlock(Phi[:, None, :].transpose(0, 2, 1))  # the explicit (m, N, d) layout too


@pytest.mark.parametrize("m, sigma", [(30, 0.05), (20, 0.1)])
@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
def test_accepted_features_give_nonnegative_values(solver, m, sigma):
    """The remedy named by the error: a smaller bandwidth (condition numbers 1e2, 2e3)."""
    z = np.linspace(0, 1, m)[:, None]
    Phi = ExactFeatures("gaussian", sigma).fit(z).transform(z)
    assert np.linalg.cond(Phi) < MAX_FEATURE_CONDITION
    tol = 1e-7
    g, y = nonneg_fit(Phi, z, solver, tol=tol)
    assert g.min() >= -10 * tol * np.abs(y).max()
    assert g.min() < 1e-4  # premise: the constraint binds (the data dip to -1)


def test_check_can_be_skipped():
    z = np.linspace(0, 1, 30)[:, None]
    Phi = ExactFeatures("gaussian", 1.0).fit(z).transform(z)
    B, cons = sos_constraints(cp.Variable(30), Phi, d=1, max_condition=None)
    assert B.shape == (30, 30) and len(cons) == 1
