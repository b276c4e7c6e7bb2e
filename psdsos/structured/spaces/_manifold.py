r"""Helpers shared by the manifold output spaces: the options of the iterative decoders,
batching under a memory budget, input checks and the convergence warning.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdsos.geometry._matfun import spectral
from psdsos.structured._common import as_finite, check_float, check_int, check_policy

_TINY = np.finfo(np.float64).tiny
#: Largest number of (test point, training point) d x d blocks held at once by the batched
#: decoders (a memory bound: about 2 MB per array, cache-friendly).
_BLOCK_BUDGET = 2**18
#: Backtracking stops (and the point is reported as not converged) below this step size.
_MIN_STEP = 1e-12


def _chunks(idx, per_point, budget=_BLOCK_BUDGET):
    size = max(1, budget // max(per_point, 1))
    for s in range(0, len(idx), size):
        yield idx[s : s + size]


def _check_spd_stack(Y, name, check=None):
    """Finite (n, d, d) matrices, then ``check(A, name)`` (``check_spd`` / ``check_psd``)
    when given and n > 0; ValueError naming ``name`` otherwise."""
    A = as_finite(Y, name)
    if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples, d, d), got {A.shape}")
    return check(A, name) if check is not None and len(A) else A


def _check_rows(Y, name):
    """Finite (n, k) vectors, k >= 1; ValueError naming ``name`` otherwise."""
    A = as_finite(Y, name)
    if A.ndim != 2 or A.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_samples, k), got {A.shape}")
    return A


def _congruence_eigh(Y, Y_train, inverse):
    r"""Y^{1/2} and Y^{-1/2} of a batch Y (m, d, d) (eigenvalues floored at the tiny float),
    and the eigendecompositions (values (m, n, d), vectors (m, n, d, d)) of the symmetrized
    :math:`R Y_i R` for every training matrix, R = Y^{-1/2} if ``inverse`` else Y^{1/2}."""
    s, U = np.linalg.eigh(Y)
    s = np.maximum(s, _TINY)
    Yh = spectral(np.sqrt(s), U)
    Yih = spectral(1.0 / np.sqrt(s), U)
    R = Yih if inverse else Yh
    M = R[:, None] @ Y_train[None] @ R[:, None]
    mw, mV = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
    return Yh, Yih, mw, mV


def _warn_not_converged(space, gnorm, tol, max_iter, advice="increase max_iter or tol",
                        measure="Riemannian gradient norm"):
    """ConvergenceWarning when some entry of ``gnorm`` (the space's ``grad_norm_``, the
    figure the message reports) is above ``tol``."""
    bad = ~(gnorm <= tol)
    if bad.any():
        warnings.warn(
            f"{type(space).__name__} decoding did not reach tol={tol:g} ({measure}) for "
            f"{int(bad.sum())} test point(s) in max_iter={max_iter} iterations (largest "
            f"{float(np.max(gnorm[bad])):.3g}); {advice}",
            ConvergenceWarning,
            stacklevel=3,
        )


class _RGDOptions:
    """Common constructor arguments of the iterative manifold decoders."""

    def _check_options(self):
        check_policy(self.weights)
        check_int(self.max_iter, "max_iter")
        check_float(self.tol, "tol", positive=True)
