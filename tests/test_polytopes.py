"""Sizes of the polytopes are validated: integers >= 1 (Knapsack bounds >= 0)."""

import numpy as np
import pytest

from psdsos.structured.polytopes import (
    Birkhoff,
    Knapsack,
    OrderSimplex,
    Permutahedron,
    RowSimplex,
    Simplex,
    UnitCube,
)


@pytest.mark.parametrize("make, match", [
    (lambda: Simplex(2.7), "k of Simplex must be an integer >= 1, got 2.7"),
    (lambda: Simplex(0), "k of Simplex must be an integer >= 1, got 0"),
    (lambda: Simplex(True), "k of Simplex must be an integer"),
    (lambda: Birkhoff(0), "k of Birkhoff must be an integer >= 1"),
    (lambda: Birkhoff(3, max_iter=0), "max_iter of Birkhoff must be an integer >= 1"),
    (lambda: UnitCube(-1), "k of UnitCube"),
    (lambda: Knapsack(4, 1.5, 2), "lower of Knapsack must be an integer >= 0"),
    (lambda: OrderSimplex("3"), "k of OrderSimplex"),
    (lambda: RowSimplex(0), "k of RowSimplex"),
    (lambda: Permutahedron(k=0), "k of Permutahedron"),
])
def test_sizes_are_validated(make, match):
    """No silent truncation (Simplex(2.7) was Simplex(2)), no size 0 failing inside numpy."""
    with pytest.raises(ValueError, match=match):
        make()


def test_numpy_integer_sizes_accepted():
    assert Simplex(np.int64(3)).k == 3 and Birkhoff(np.int32(2)).shape == (2, 2)
