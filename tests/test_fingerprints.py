"""Synthetic fingerprints (localized paper, section 6.2): seeded, ridges along the field, and
the 7 x 7 Sobel orientation exact on a plane grating."""

import numpy as np
import pytest

from psdsos.datasets import make_fingerprints, sobel_orientation


def test_seeded_shapes_and_ranges():
    X, Y, T = make_fingerprints(2, (40, 48), random_state=3)
    X2, Y2, _ = make_fingerprints(2, (40, 48), random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    assert X.shape == Y.shape == T.shape == (2, 40, 48)
    assert np.all(np.abs(X) < 1) and np.all(np.abs(Y) <= np.pi / 2)


def test_ridges_follow_the_orientation_field():
    X, Y, T = make_fingerprints(2, (64, 80), random_state=0)
    # sin^2 of the angle between the Sobel direction and the field the ridges were drawn
    # along: 0.5 for unrelated angles; the singular points and the 16-direction filter bank
    # leave a small error (0.02 here)
    assert np.mean(np.sin(Y - T) ** 2) < 0.1


@pytest.mark.parametrize("angle", [0.0, 0.3, -1.2, np.pi / 4, np.pi / 2])
def test_sobel_orientation_of_a_plane_grating(angle):
    """Exact (to rounding) where the separable filter is symmetric in the wave vector (axes,
    diagonals); elsewhere the binomial filters' anisotropy at period 8 turns the gradient
    by about 0.7 degrees (|sin| ~ 0.012): tolerance 0.02."""
    H = W = 64
    # a periodic grating whose ridges run along `angle`, wave vector with integer periods
    kx, ky = np.rint(8 * -np.sin(angle)), np.rint(8 * np.cos(angle))
    true = np.arctan2(-kx, ky)  # the ridge direction of the rounded wave vector
    u, v = np.meshgrid(np.arange(W), np.arange(H))
    img = np.cos(2 * np.pi * (kx * u / W + ky * v / H))[None]
    theta = sobel_orientation(img)
    exact = abs(abs(kx) - abs(ky)) < 0.5 or kx == 0 or ky == 0
    np.testing.assert_allclose(np.sin(theta - true), 0.0, atol=1e-10 if exact else 0.02)


def test_validation():
    with pytest.raises(ValueError, match="n_images"):
        make_fingerprints(0)
    with pytest.raises(ValueError, match="shape"):
        make_fingerprints(1, (10,))
    with pytest.raises(ValueError, match="images"):
        sobel_orientation(np.zeros((4, 4)))
