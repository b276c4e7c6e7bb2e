"""Type aliases shared by the annotations of the public API (imports nothing from psdsos)."""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["ArrayLike", "FloatArray", "IntArray", "BoolArray", "PathLike", "RandomStateLike"]

#: A float64 array returned by psdsos.
FloatArray = NDArray[np.float64]
#: An integer array (indices, labels, permutations).
IntArray = NDArray[np.intp]
#: A boolean array (masks, multilabel decodes).
BoolArray = NDArray[np.bool_]
#: A file path accepted by save and load.
PathLike = str | os.PathLike
#: Seeds: None (fresh unseeded generator), an int seed or a numpy Generator.
RandomStateLike = int | np.random.Generator | None
