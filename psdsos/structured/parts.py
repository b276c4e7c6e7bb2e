r"""Parts of inputs and outputs for localized structured prediction.

Ciliberto, Bach and Rudi, "Localized Structured Prediction" (NeurIPS 2019): the loss of a
structured output decomposes over *parts* p in P (eq. 5),
:math:`\Delta(z, y \mid x) = \sum_p \pi(p\mid x)\, L_p([z]_p, [y]_p \mid [x]_p)`, where
:math:`[x]_p` and :math:`[y]_p` are the restrictions of the input and the output to the part
(a block, a window of a sequence, a patch of an image).  A parts object gives, for every part,
the indices of its input and output entries (in the flattened input and output), extracts the
parts of a batch, and assembles full outputs from values given per part (overlap-add, divided
by the number of parts covering each output entry).

* :class:`Blocks` -- disjoint blocks (section 6.1);
* :class:`Windows1D` -- windows of a sequence, optionally circular;
* :class:`Patches2D` -- square patches of an image, circular by default (section 6.2).

Inputs and outputs are flattened: ``X`` of shape (n, input_dim) and ``Y`` of shape
(n, output_dim) (images of shape (n, H, W) are accepted and flattened row-major).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Parts", "Blocks", "Windows1D", "Patches2D"]


def _posint(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


class Parts:
    """Base class: index sets ``input_index`` (n_parts, input_part_size) and
    ``output_index`` (n_parts, output_part_size) into the flattened input and output."""

    input_index: np.ndarray
    output_index: np.ndarray
    input_dim: int
    output_dim: int

    def _config_args(self) -> list[Any]:
        """The constructor arguments, JSON-able (saved parts classes only)."""
        raise NotImplementedError

    def to_config(self) -> dict[str, Any]:
        """JSON description ``{"class": ..., "args": [...]}`` (the format LocalizedSELF saves);
        ValueError for parts other than Blocks, Windows1D and Patches2D."""
        cls = type(self)
        if _SAVED_CLASSES.get(cls.__name__) is not cls:
            raise ValueError(f"cannot save LocalizedSELF with parts {self!r}: only Blocks, "
                             "Windows1D and Patches2D are saved")
        return {"class": cls.__name__, "args": self._config_args()}

    @staticmethod
    def from_config(cfg: dict[str, Any]) -> Parts:
        """The parts object of a :meth:`to_config` description (ValueError if invalid)."""
        if not isinstance(cfg, dict) or cfg.get("class") not in _SAVED_CLASSES:
            raise ValueError(f"metadata entry 'parts' must name Blocks, Windows1D or "
                             f"Patches2D, got {cfg!r}")
        args = list(cfg.get("args", []))
        if cfg["class"] == "Patches2D" and args:
            args[0] = tuple(args[0])
        return _SAVED_CLASSES[cfg["class"]](*args)

    @property
    def n_parts(self) -> int:
        """Number of parts :math:`|P|`."""
        return self.output_index.shape[0]

    def coverage(self) -> np.ndarray:
        """Number of parts containing each output entry, shape (output_dim,)."""
        return np.bincount(self.output_index.ravel(), minlength=self.output_dim)

    def _check_cover(self):
        if np.any(self.coverage() == 0):
            raise ValueError(
                f"the parts of {self!r} do not cover every output entry (uncovered: "
                f"{int(np.sum(self.coverage() == 0))}); choose sizes and strides that do"
            )

    def _flat(self, A, dim, name):
        A = np.asarray(A)
        if A.ndim >= 2 and A.ndim != 2:
            A = A.reshape(A.shape[0], -1)
        if A.ndim != 2 or A.shape[1] != dim:
            raise ValueError(f"{name} must have shape (n, {dim}) (or (n, ...) with {dim} "
                             f"entries per sample), got {np.shape(A)}")
        return A

    def extract_inputs(self, X: ArrayLike) -> np.ndarray:
        """Input parts, shape (n, n_parts, input_part_size)."""
        return self._flat(X, self.input_dim, "X")[:, self.input_index]

    def extract_outputs(self, Y: ArrayLike) -> np.ndarray:
        """Output parts, shape (n, n_parts, output_part_size)."""
        return self._flat(Y, self.output_dim, "Y")[:, self.output_index]

    def assemble(self, values: ArrayLike) -> np.ndarray:
        """Full outputs (n, output_dim) from per-part values (n, n_parts, output_part_size):
        the values of every part covering an entry, averaged (overlap-add / coverage)."""
        V = np.asarray(values, dtype=np.float64)
        if V.ndim != 3 or V.shape[1:] != self.output_index.shape:
            raise ValueError(f"values must have shape (n, {self.n_parts}, "
                             f"{self.output_index.shape[1]}), got {V.shape}")
        out = np.zeros((V.shape[0], self.output_dim))
        # numpy's stub of ufunc.at refuses the (slice, array) index that numpy accepts
        np.add.at(out, (slice(None), self.output_index), V)  # type: ignore[arg-type]
        return out / self.coverage()


class Blocks(Parts):
    """``n_blocks`` disjoint blocks: part p is the p-th block of ``input_size`` inputs and the
    p-th block of ``output_size`` outputs (section 6.1: x = (x_1, ..., x_|P|),
    y = (y_1, ..., y_|P|))."""

    def __init__(self, n_blocks: int, input_size: int, output_size: int = 1) -> None:
        self.n_blocks = _posint(n_blocks, "n_blocks")
        self.input_size = _posint(input_size, "input_size")
        self.output_size = _posint(output_size, "output_size")
        self.input_dim = self.n_blocks * self.input_size
        self.output_dim = self.n_blocks * self.output_size
        self.input_index = np.arange(self.input_dim).reshape(self.n_blocks, self.input_size)
        self.output_index = np.arange(self.output_dim).reshape(self.n_blocks, self.output_size)

    def _config_args(self) -> list[Any]:
        return [self.n_blocks, self.input_size, self.output_size]

    def __repr__(self):
        return f"Blocks({self.n_blocks}, {self.input_size}, {self.output_size})"


class Windows1D(Parts):
    """Windows of ``width`` consecutive entries of a sequence of ``length`` (inputs and outputs
    aligned), starting every ``stride`` entries; ``circular`` wraps them around the end."""

    def __init__(self, length: int, width: int, stride: int = 1, circular: bool = False) -> None:
        self.length = _posint(length, "length")
        self.width = _posint(width, "width")
        self.stride = _posint(stride, "stride")
        self.circular = bool(circular)
        if self.width > self.length:
            raise ValueError(f"width must be <= length {self.length}, got {self.width}")
        last = self.length if self.circular else self.length - self.width + 1
        starts = np.arange(0, last, self.stride)
        idx = (starts[:, None] + np.arange(self.width)[None, :]) % self.length
        self.input_dim = self.output_dim = self.length
        self.input_index = self.output_index = idx
        self._check_cover()

    def _config_args(self) -> list[Any]:
        return [self.length, self.width, self.stride, self.circular]

    def __repr__(self):
        return (f"Windows1D({self.length}, {self.width}, stride={self.stride}, "
                f"circular={self.circular})")


class Patches2D(Parts):
    """Square ``size`` x ``size`` patches of an image of ``shape`` (H, W), every ``stride``
    pixels in both directions, wrapping around the borders when ``circular`` (section 6.2:
    20 x 20 patches at stride 5, every pixel in 16 patches).  Pixels are indexed row-major."""

    def __init__(self, shape: tuple[int, int], size: int, stride: int = 1,
                 circular: bool = True) -> None:
        if (not isinstance(shape, (tuple, list)) or len(shape) != 2):
            raise ValueError(f"shape must be (height, width), got {shape!r}")
        self.shape = (_posint(shape[0], "shape[0]"), _posint(shape[1], "shape[1]"))
        self.size = _posint(size, "size")
        self.stride = _posint(stride, "stride")
        self.circular = bool(circular)
        H, W = self.shape
        if self.size > min(H, W):
            raise ValueError(f"size must be <= min(shape) = {min(H, W)}, got {self.size}")
        rows = np.arange(0, H if self.circular else H - self.size + 1, self.stride)
        cols = np.arange(0, W if self.circular else W - self.size + 1, self.stride)
        off = np.arange(self.size)
        r = (rows[:, None, None, None] + off[None, None, :, None]) % H
        c = (cols[None, :, None, None] + off[None, None, None, :]) % W
        idx = (r * W + c).reshape(len(rows) * len(cols), self.size * self.size)
        self.input_dim = self.output_dim = H * W
        self.input_index = self.output_index = idx
        self._check_cover()

    def _config_args(self) -> list[Any]:
        return [list(self.shape), self.size, self.stride, self.circular]

    def __repr__(self):
        return (f"Patches2D({self.shape}, {self.size}, stride={self.stride}, "
                f"circular={self.circular})")


#: The parts classes whose objects are saved (by name) with a fitted LocalizedSELF.
_SAVED_CLASSES: dict[str, type[Parts]] = {"Blocks": Blocks, "Windows1D": Windows1D,
                                          "Patches2D": Patches2D}
