"""Parts of inputs and outputs (psdsos.structured.parts): index sets against brute force,
coverage (16 for the localized paper's 20 x 20 patches at stride 5), extraction and
overlap-add assembly."""

from __future__ import annotations

import numpy as np
import pytest

from psdsos.structured.parts import Blocks, Patches2D, Windows1D


def test_blocks_are_disjoint_and_round_trip():
    P = Blocks(4, 3, 2)
    assert P.n_parts == 4 and P.input_dim == 12 and P.output_dim == 8
    np.testing.assert_array_equal(P.coverage(), np.ones(8))
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(5, 12)), rng.normal(size=(5, 8))
    Xp = P.extract_inputs(X)
    np.testing.assert_array_equal(Xp[:, 2], X[:, 6:9])
    np.testing.assert_array_equal(P.assemble(P.extract_outputs(Y)), Y)


@pytest.mark.parametrize(("length", "width", "stride", "circular"),
                         [(10, 3, 1, False), (10, 4, 2, True), (12, 4, 4, False), (7, 7, 1, True)])
def test_windows_against_brute_force(length, width, stride, circular):
    P = Windows1D(length, width, stride, circular)
    expected = []
    for s in range(0, length if circular else length - width + 1, stride):
        expected.append([(s + j) % length for j in range(width)])
    np.testing.assert_array_equal(P.output_index, expected)
    cov = np.zeros(length, dtype=int)
    for part in expected:
        for u in part:
            cov[u] += 1
    np.testing.assert_array_equal(P.coverage(), cov)
    Y = np.random.default_rng(1).normal(size=(3, length))
    np.testing.assert_allclose(P.assemble(P.extract_outputs(Y)), Y)


def test_paper_patches_cover_every_pixel_16_times():
    # section 6.2: 20 x 20 patches at stride 5, circular: each pixel lies in (20 / 5)^2 = 16
    # patches (so the factor 16 / |P| printed in eq. 25 is 16 times too large: the
    # normalization per pixel is 1 / 16)
    P = Patches2D((40, 60), 20, stride=5)
    np.testing.assert_array_equal(P.coverage(), np.full(40 * 60, 16))
    assert P.n_parts == (40 // 5) * (60 // 5)
    # a patch against brute force: rows 35..54 mod 40, columns 55..74 mod 60
    p = 7 * 12 + 11
    rows, cols = np.arange(35, 55) % 40, np.arange(55, 75) % 60
    np.testing.assert_array_equal(P.input_index[p], (rows[:, None] * 60 + cols[None, :]).ravel())
    img = np.random.default_rng(2).normal(size=(2, 40, 60))
    np.testing.assert_allclose(P.assemble(P.extract_outputs(img)), img.reshape(2, -1))
    assert P.extract_inputs(img).shape == (2, P.n_parts, 400)


def test_assemble_averages_overlaps():
    P = Windows1D(4, 2, 1, circular=True)  # each entry in 2 windows
    V = np.zeros((1, 4, 2))
    V[0, 0] = [1.0, 3.0]  # window (0, 1)
    out = P.assemble(V)
    np.testing.assert_allclose(out, [[0.5, 1.5, 0.0, 0.0]])


def test_inputs_validated():
    with pytest.raises(ValueError, match="width must be <= length"):
        Windows1D(3, 4)
    with pytest.raises(ValueError, match="do not cover every output entry"):
        Windows1D(10, 3, stride=4)  # windows at 0, 4: entries 3, 7, 8, 9 uncovered
    with pytest.raises(ValueError, match="size must be <= min"):
        Patches2D((10, 8), 9)
    with pytest.raises(ValueError, match="n_blocks must be an integer >= 1"):
        Blocks(0, 2)
    with pytest.raises(ValueError, match="shape must be"):
        Patches2D(10, 3)
    P = Blocks(2, 3)
    with pytest.raises(ValueError, match=r"X must have shape \(n, 6\)"):
        P.extract_inputs(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="values must have shape"):
        P.assemble(np.zeros((1, 3, 1)))
