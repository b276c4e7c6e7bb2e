"""Negative part of a symmetric matrix through a partial eigendecomposition.

[S]_- = sum over eigenvalues w < 0 of (-w) u u^T  (a PSD matrix), so that
S = [S]_+ - [S]_-.  Only the eigenpairs on the smaller side of 0 are computed: when few
eigenvalues are negative, LAPACK's MRRR driver (``syevr``) restricted to (-inf, 0]
skips most of the back-transformation; when few are positive, [S]_- = [S]_+ - S.
When both sides are large, a full divide-and-conquer ``eigh`` is cheaper.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

__all__ = ["NegativePart"]

#: A partial decomposition pays while it computes fewer than this fraction of the pairs
#: (beyond it a full divide-and-conquer decomposition is cheaper).
_PARTIAL_FRACTION = 0.12
#: Below this size scipy's wrapper overhead (argument checks, workspace query) eats the
#: saving.
_PARTIAL_MIN_SIZE = 64


class NegativePart:
    """Stateful helper that remembers how many eigenvalues were negative last time.

    The count of negative eigenvalues changes slowly along an iterative solver once it has
    settled, so the last two counts decide which of the three strategies to use next: a
    partial decomposition only when both were on the same small side (the first iterates
    jump, e.g. from S = lam1 I with no negative eigenvalue to 60% negative, and a partial
    MRRR decomposition asked for most of the pairs costs more than a full one).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.n_neg = size // 2  # unknown at first: full decomposition
        self._prev = size // 2
        self.min_partial_size = _PARTIAL_MIN_SIZE

    def _set_count(self, k):
        self._prev, self.n_neg = self.n_neg, int(k)

    def _strategy(self):
        if self.size < self.min_partial_size:
            return "full"
        lim = _PARTIAL_FRACTION * self.size
        hi, lo = max(self.n_neg, self._prev), min(self.n_neg, self._prev)
        if hi <= lim:
            return "neg"
        if self.size - lo <= lim:
            return "pos"
        return "full"

    def __call__(self, S: np.ndarray) -> tuple[np.ndarray, float]:
        """Return (N, sq): N = [S]_- and ||[S]_-||_F^2."""
        return self._robust(self._call, S)

    def _robust(self, fn, S):
        try:
            return fn(S, self._strategy())
        except np.linalg.LinAlgError:
            # LAPACK's syevr can fail on a tight cluster; divide and conquer does not
            return fn(S, "full")

    def _call(self, S, strategy):
        if strategy == "full":
            w, U = np.linalg.eigh(S)
            neg = w < 0
            Un, wn = U[:, neg], w[neg]
            N = (Un * (-wn)) @ Un.T
        elif strategy == "neg":
            wn, Un = sla.eigh(S, subset_by_value=(-np.inf, 0.0), driver="evr",
                              check_finite=False)
            N = (Un * (-wn)) @ Un.T
        else:
            wp, Up = sla.eigh(S, subset_by_value=(0.0, np.inf), driver="evr",
                              check_finite=False)
            N = (Up * wp) @ Up.T - S
            wn = None
        N = 0.5 * (N + N.T)
        if wn is None:
            self._set_count(self.size - len(wp))
            # eigenvalues of S below 0: only their squared sum is needed downstream
            sq = float(np.sum(S * S) - np.sum(wp**2))
            return N, max(sq, 0.0)
        self._set_count(len(wn))
        return N, float(np.sum(wn**2))

    def sq_norm(self, S: np.ndarray) -> float:
        """||[S]_-||_F^2 from eigenvalues only (no eigenvectors)."""
        return self._robust(self._sq_norm, S)

    def _sq_norm(self, S, strategy):
        if strategy == "full":
            w = np.linalg.eigvalsh(S)
            return float(np.sum(np.minimum(w, 0.0) ** 2))
        if strategy == "neg":
            wn = sla.eigh(S, subset_by_value=(-np.inf, 0.0), driver="evr", eigvals_only=True,
                          check_finite=False)
            return float(np.sum(wn**2))
        wp = sla.eigh(S, subset_by_value=(0.0, np.inf), driver="evr", eigvals_only=True,
                      check_finite=False)
        return max(float(np.sum(S * S) - np.sum(wp**2)), 0.0)
