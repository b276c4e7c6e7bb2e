"""The orientation output space (angles modulo pi, loss sin^2): exact decoding against a
fine grid for weights of any sign, the loss, and SELF with it (the Global-Delta baseline of
the localized paper, section 6.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psdsos.structured import OrientationSpace, SELFEstimator
from psdsos.structured.spaces.orientation import wrap_orientation


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 12), signs=st.sampled_from(["pos", "mixed",
                                                                                "neg"]))
def test_decoding_matches_a_fine_grid_for_any_signs(seed, n, signs):
    rng = np.random.default_rng(seed)
    Y = rng.uniform(-3.0, 3.0, size=n)
    a = rng.normal(size=(1, n))
    if signs == "pos":
        a = np.abs(a)
    elif signs == "neg":
        a = -np.abs(a)
    space = OrientationSpace().fit(Y)
    z = space.decode(a)
    assert z.shape == (1,) and -np.pi / 2 < z[0] <= np.pi / 2
    grid = np.linspace(-np.pi / 2, np.pi / 2, 200001)
    F = space.objective(a, grid)
    Fz = space.objective(a, z)[0]
    # no grid point (step 1.6e-5) does better than the closed form, up to rounding
    assert Fz <= F.min() + 1e-12 * (1 + np.abs(a).sum())


def test_loss_and_wrap():
    space = OrientationSpace()
    np.testing.assert_allclose(space.loss([0.0, 0.0, 1.0], [np.pi, np.pi / 2, 1.0]),
                               [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(wrap_orientation([np.pi / 2, -np.pi / 2, 3 * np.pi / 4]),
                               [np.pi / 2, np.pi / 2, -np.pi / 4])
    with pytest.raises(ValueError, match="Y must be angles of shape"):
        space.check_Y(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="Y"):
        space.check_Y([0.0, np.nan])


def test_cancelling_weights_give_zero():
    space = OrientationSpace().fit([0.3, 0.3])
    np.testing.assert_array_equal(space.decode(np.array([[1.0, -1.0]])), [0.0])


def test_self_with_orientations_recovers_a_smooth_field(tmp_path):
    import psdsos

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    theta = wrap_orientation(1.2 * X[:, 0] + 0.8 * X[:, 1] + 0.05 * rng.normal(size=200))
    est = SELFEstimator(output="orientation", sigma=0.3, lam=1e-4).fit(X[:150], theta[:150])
    pred = est.predict(X[150:])
    err = np.mean(np.sin(pred - theta[150:]) ** 2)
    assert err < 0.01
    assert est.score(X[150:], theta[150:]) == pytest.approx(-err)
    est.save(tmp_path / "o.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "o.npz").predict(X[150:]), pred)
