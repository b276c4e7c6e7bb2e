"""Checks of LocalizedSELF's inputs: the ``parts`` and ``part_weights`` parameters, the
outputs as elements of the output space, and Algorithm 1's sampling of the auxiliary
pairs."""

from __future__ import annotations

import numpy as np

from psdsos.structured._base import OutputSpace
from psdsos.structured.parts import Parts

__all__: list[str] = []


class _PartsOption:
    def check(self, name, value, owner):
        if value is None or isinstance(value, Parts):
            return
        raise ValueError(f"{name} of {owner} must be None (one part: the whole input and "
                         f"output) or a psdsos.structured.parts object (Blocks, Windows1D, "
                         f"Patches2D), got {value!r}")


class _PartWeightsOption:
    def check(self, name, value, owner):
        if value is None or callable(value):
            return
        w = np.asarray(value)
        if (w.ndim == 1 and w.size > 0 and w.dtype.kind in "fiu" and np.all(np.isfinite(w))
                and np.all(w >= 0) and np.sum(w) > 0):
            return
        raise ValueError(f"{name} of {owner} must be None (uniform pi(p|x) = 1/|P|), a "
                         "non-negative finite vector of length n_parts with a positive sum, "
                         f"or a callable X -> (n_samples, n_parts) weights, got {value!r}")


def _sample_aux(m, pi, n, P, rng):
    """Algorithm 1's sampling: i_j uniform on 0..n-1, p_j ~ pi(. | x_{i_j}) (uniform when
    ``pi`` is None), with replacement; memory O(m + n P) (never an (m, P) array)."""
    ii = rng.integers(n, size=m)
    if pi is None:
        return ii, rng.integers(P, size=m)
    pp = np.empty(m, dtype=np.int64)
    for i in np.unique(ii):
        sel = np.flatnonzero(ii == i)
        pp[sel] = rng.choice(P, size=len(sel), p=pi[i])
    return ii, pp


def _check_elements(space: OutputSpace, Y, output_dim: int, name: str = "y"):
    """Outputs validated as elements of ``space``: (n, output_dim, *element_shape), and the
    original target shape per sample.  Spaces with the "element_closed_form" capability have
    scalar elements (y is (n, output_dim) or any (n, ...) with output_dim entries)."""
    A = space.element_array(Y, name)
    if A.ndim == 0 or A.shape[0] < 1:
        raise ValueError(f"{name} must have one row per sample, got shape {A.shape}")
    shape = A.shape[1:]
    n = A.shape[0]
    if space.supports("element_closed_form") or (A.ndim >= 2 and A.shape[1] != output_dim):
        if int(np.prod(shape, dtype=np.int64)) != output_dim:
            raise ValueError(f"{name} must have shape (n_samples, {output_dim}) (or "
                             f"(n_samples, ...) with {output_dim} entries per sample: the "
                             f"output dimension of the parts), got {A.shape}")
        A = A.reshape(n, output_dim)
    elif A.ndim < 2:
        raise ValueError(f"{name} must have shape (n_samples, {output_dim}, ...), got "
                         f"{A.shape}")
    space.element_check(A.reshape(n * output_dim, *A.shape[2:]), name)
    return A, shape
