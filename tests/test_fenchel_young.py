"""Projection-based Fenchel-Young losses (psdsos.structured._fenchel_young): the special
cases of the paper (section 3) in closed form, non-negativity, zero loss exactly at the
target, convexity, and gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from psdsos.structured._fenchel_young import fenchel_young_loss
from psdsos.structured.polytopes import Simplex, UnitCube


class _Reals:
    """R^p: the squared loss (Euclidean) and the generalized KL to e^{theta-1} (KL)."""

    def __init__(self, k):
        self.shape = (k,)

    def project_euclidean(self, t):
        return np.asarray(t, dtype=float)

    def project_kl(self, t):
        return np.exp(np.asarray(t, dtype=float) - 1.0)


def _sparsemax_loss(theta, y):
    """Martins and Astudillo (2016), eq. 18: -theta_y + 1/2 sum_{j in S} (theta_j^2 - tau^2)
    + 1/2, with S the support of sparsemax(theta) and tau its threshold."""
    z = np.sort(theta)[::-1]
    css = np.cumsum(z)
    j = np.arange(1, len(z) + 1)
    rho = j[z - (css - 1) / j > 0][-1]
    tau = (css[rho - 1] - 1) / rho
    S = theta > tau
    return -theta[y] + 0.5 * np.sum(theta[S] ** 2 - tau**2) + 0.5


@pytest.mark.parametrize("seed", range(5))
def test_special_cases_closed_forms(seed):
    rng = np.random.default_rng(seed)
    k = 5
    theta = 3.0 * rng.normal(size=(7, k))
    labels = rng.integers(k, size=7)
    onehot = np.eye(k)[labels]
    # simplex + KL = logistic loss
    loss, grad = fenchel_young_loss(theta, onehot, Simplex(k), "kl")
    np.testing.assert_allclose(loss, logsumexp(theta, axis=1) - theta[np.arange(7), labels],
                               rtol=1e-12, atol=1e-12)
    # simplex + Euclidean = sparsemax loss
    loss, _ = fenchel_young_loss(theta, onehot, Simplex(k), "euclidean")
    ref = [_sparsemax_loss(t, y) for t, y in zip(theta, labels, strict=True)]
    np.testing.assert_allclose(loss, ref, rtol=1e-12, atol=1e-12)
    # R^p + Euclidean = squared loss
    loss, grad = fenchel_young_loss(theta, onehot, _Reals(k), "euclidean")
    np.testing.assert_allclose(loss, 0.5 * np.sum((onehot - theta) ** 2, axis=1), rtol=1e-12)
    np.testing.assert_allclose(grad, theta - onehot)
    # unit cube + KL = per label: e^{theta - 1} (theta <= 1) or theta (theta > 1), minus theta y
    ybits = (rng.uniform(size=(7, k)) < 0.5).astype(float)
    loss, _ = fenchel_young_loss(theta, ybits, UnitCube(k), "kl")
    per = np.where(theta <= 1.0, np.exp(theta - 1.0), theta) - theta * ybits
    np.testing.assert_allclose(loss, per.sum(axis=1), rtol=1e-12, atol=1e-12)


SETS = [(Simplex(4), "onehot"), (UnitCube(4), "bits")]


def _target(kind, rng):
    if kind == "onehot":
        return np.eye(4)[rng.integers(4)]
    return (rng.uniform(size=4) < 0.5).astype(float)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), which=st.integers(0, 1),
       projection=st.sampled_from(["euclidean", "kl"]), scale=st.sampled_from([0.1, 1.0, 10.0]))
def test_nonnegative_zero_at_target_convex_and_gradient(seed, which, projection, scale):
    rng = np.random.default_rng(seed)
    C, kind = SETS[which]
    y = _target(kind, rng)
    theta = scale * rng.normal(size=4)
    loss, grad = fenchel_young_loss(theta, y, C, projection)
    assert loss >= 0.0
    # (near) zero loss where the projection is (near) the target: scores pushing hard
    # towards y (softmax only tends to a vertex: its loss here is ~e^-100)
    push = 50.0 * (2 * y - 1) + (1.0 if projection == "kl" else 0.0)
    assert fenchel_young_loss(push, y, C, projection)[0] <= 1e-12
    # and exactly zero only there: a score whose projection differs from y has loss > 0
    if not np.allclose(C.project_euclidean(theta) if projection == "euclidean"
                       else C.project_kl(theta), y, atol=1e-6):
        assert loss > 0.0
    # convex along a random line, gradient by central differences
    d = rng.normal(size=4)
    f = [fenchel_young_loss(theta + s * d, y, C, projection)[0] for s in (-1.0, 0.0, 1.0)]
    assert f[1] <= 0.5 * (f[0] + f[2]) + 1e-10 * (1 + abs(f[1]))
    h = 1e-6 * max(1.0, scale)
    fd = (fenchel_young_loss(theta + h * d, y, C, projection)[0]
          - fenchel_young_loss(theta - h * d, y, C, projection)[0]) / (2 * h)
    assert abs(fd - grad @ d) <= 1e-5 * (1.0 + abs(fd))


def test_inputs_validated():
    C = Simplex(3)
    with pytest.raises(ValueError, match="projection must be one of"):
        fenchel_young_loss(np.zeros(3), np.eye(3)[0], C, "l2")
    with pytest.raises(ValueError, match="theta must have shape"):
        fenchel_young_loss(np.zeros(4), np.eye(3)[0], C)
    with pytest.raises(ValueError, match="y must have the shape of theta"):
        fenchel_young_loss(np.zeros((2, 3)), np.zeros((3, 3)), C)
    with pytest.raises(ValueError, match="theta must be finite"):
        fenchel_young_loss(np.array([0.0, np.nan, 1.0]), np.eye(3)[0], C)
    with pytest.raises(ValueError, match="y must be >= 0"):
        fenchel_young_loss(np.zeros(3), np.array([-1.0, 1.0, 1.0]), C, "kl")


def test_target_outside_the_set_is_refused():
    """The loss is +inf for y outside C: a ValueError, not a finite number."""
    C = Simplex(3)
    with pytest.raises(ValueError, match="y must lie in the set Simplex"):
        fenchel_young_loss(np.zeros(3), np.array([2.0, -1.0, 0.0]), C)
    with pytest.raises(ValueError, match="1 of 2 targets are not in it .first: index 1"):
        fenchel_young_loss(np.zeros((2, 3)), np.array([[1.0, 0, 0], [0.5, 0.6, 0]]), C, "kl")
    # points of the set, including soft ones, are accepted
    loss, _ = fenchel_young_loss(np.zeros(3), np.array([0.2, 0.3, 0.5]), C)
    assert loss >= 0.0
