r"""The kernel on :math:`X \times P` of LocalizedSELF and what is built on it (Ciliberto, Bach
and Rudi, NeurIPS 2019): the restriction kernel (eq. 20), the universal kernel (eq. 13) or
their sum (Remark 3) between (input, part) records, the part weights :math:`\pi(p \mid x)`,
the coefficient map of eq. 9 (exact or Nystrom) and the per-part scores
:math:`g_p(x)` assembled over the parts into the weighted sums :math:`c_u(x)`.

When the part loss is linear in an embedding of the output elements,
:math:`L_p(\zeta, \eta) = \frac{1}{|p|}\sum_{u \in p} \big(c(\zeta_u) - \langle
\psi(\zeta_u), \varphi(\eta_u)\rangle\big)` (squared loss, Hamming/multiclass, orientations),
eq. 6 is minimized element by element from the weighted sums

.. math::

    c_u(x) = \sum_{p \ni u} \pi(p \mid x)\, g_p(x)_{[u]}, \qquad
    g_p(x) = \sum_{j=1}^m \alpha_j(x, p)\, \varphi(\eta_j) = \nu(x, p)^\top
        (\mathbf K + m\lambda I)^{-1} \Phi_\eta,

so the coefficient map times the embedded auxiliary outputs, :math:`(\mathbf K +
m\lambda I)^{-1}\Phi_\eta`, is computed once at fit and alpha is never formed at predict
time (only the per-part scores :math:`g_p(x)`, of the size of the outputs).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from psdsos._params import resolve_kernel
from psdsos.features import cholesky_with_jitter
from psdsos.structured._krr_weights import nystrom_ridge_factor, ridge_cholesky, ridge_solve
from psdsos.structured._localized_checks import _sample_aux

__all__: list[str] = []

#: Float64 entries of one block of kernel values at predict time (~256 MB).
_BLOCK_ENTRIES = 1 << 25


class _ShiftRows:
    """K0 rows of a test block, indexed by absolute test indices (for ``_joint``)."""

    def __init__(self, K, start):
        self.K, self.start = K, start

    def __getitem__(self, key):
        rows, cols = key
        return self.K[rows - self.start, cols]


class _PartsKernel:
    """Mixin of :class:`~psdsos.structured.LocalizedSELF`: the kernel on records
    (sample, part), the coefficient map of eq. 9 and the per-part scores."""

    def _locality(self):
        loc = self.locality.lower()
        return loc in ("restriction", "both"), loc in ("universal", "both")

    def _pi(self, X):
        """pi(p | x), shape (n, n_parts), rows summing to one."""
        P = self.parts_.n_parts
        w = self.part_weights
        if w is None:
            return np.full((X.shape[0], P), 1.0 / P)
        if callable(w):
            W = np.asarray(w(X), dtype=np.float64)
            if (W.shape != (X.shape[0], P) or not np.all(np.isfinite(W)) or np.any(W < 0)
                    or np.any(W.sum(axis=1) <= 0)):
                raise ValueError(f"part_weights(X) must return finite non-negative weights of "
                                 f"shape ({X.shape[0]}, {P}) with positive row sums, got "
                                 f"shape {W.shape}")
            return W / W.sum(axis=1, keepdims=True)
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (P,):
            raise ValueError(f"part_weights must have length n_parts = {P}, got {w.shape}")
        return np.broadcast_to(w / w.sum(), (X.shape[0], P))

    def _part_inputs(self, X, idx, part):
        """Input parts [x_idx]_part, shape (len(idx), input_part_size)."""
        return X[idx[:, None], self.parts_.input_index[part]]

    def _joint(self, Xa, ia, pa, Xb, ib, pb, K0ab=None):
        """k((x_a, p_a), (x_b, p_b)) for record lists (base inputs, sample index, part)."""
        local, universal = self._locality()
        K = 0.0
        if local:
            K = self.kernel_(self._part_inputs(Xa, ia, pa), self._part_inputs(Xb, ib, pb))
        if universal:
            if K0ab is None:
                K0ab = self.kernel0_(Xa, Xb)
            K = K + K0ab[ia[:, None], ib[None, :]] * (pa[:, None] == pb[None, :])
        return K

    def _auxiliary_dataset(self, X, rng):
        """Algorithm 1: the auxiliary pairs (i_j, p_j) (every pair once when ``n_aux`` is
        None, else sampled), and the kernels resolved on them; returns (i, p)."""
        n, P = X.shape[0], self.parts_.n_parts
        pi_train = self._pi(X)  # validates part_weights
        self._build_assembly()
        if np.any(np.asarray(self._Scount @ pi_train.T) <= 0):
            raise ValueError("part_weights give zero weight to every part that contains some "
                             "output entries: eq. 6 does not determine them; give every entry "
                             "a part of positive weight")
        if self.n_aux is None:
            ii = np.repeat(np.arange(n), P)
            pp = np.tile(np.arange(P), n)
        else:
            ii, pp = _sample_aux(int(self.n_aux), None if self.part_weights is None
                                 else pi_train, n, P, rng)
        self.aux_sample_, self.aux_part_ = ii.astype(np.int64), pp.astype(np.int64)
        self.n_aux_ = len(ii)

        local, universal = self._locality()
        if local:
            self.kernel_ = resolve_kernel(self.kernel, self.sigma, self._part_inputs(X, ii, pp))
        if universal:
            self.kernel0_ = resolve_kernel(self.kernel, self.sigma, X)
        return ii, pp

    def _fit_coefficients(self, X, E, rng, keep_alpha):
        r"""The coefficient map of eq. 9 on the auxiliary pairs (``coef_``: exact
        :math:`(\mathbf K + m\lambda I)^{-1}\Phi_\eta`, or its Nystrom counterpart), and,
        with ``keep_alpha`` (Algorithm 3), what the explicit weights alpha need."""
        ii, pp, m = self.aux_sample_, self.aux_part_, self.n_aux_
        _, universal = self._locality()
        K0 = self.kernel0_(X, X) if universal else None
        mlam = m * self.lam
        for attr in ("landmark_index_", "R_", "jitter_", "cholesky_", "coef_map_"):
            self.__dict__.pop(attr, None)
        if self.n_landmarks is None:
            L = ridge_cholesky(self._joint(X, ii, pp, X, ii, pp, K0), mlam, "K + m lam I")
            self.coef_ = ridge_solve(L, E) if E is not None else None
            if keep_alpha:
                self.cholesky_ = np.tril(L)
            return
        r = int(self.n_landmarks)
        if r > m:
            raise ValueError(f"n_landmarks must be <= n_aux_ = {m} (the auxiliary pairs), "
                             f"got {r}")
        lm = np.sort(rng.choice(m, size=r, replace=False))
        KLL = self._joint(X, ii[lm], pp[lm], X, ii[lm], pp[lm], K0)
        R, jitter = cholesky_with_jitter(KLL, name="the kernel matrix of the landmarks")
        self.landmark_index_, self.R_, self.jitter_ = lm, R, jitter
        Phi = np.empty((m, r))
        step = max(1, _BLOCK_ENTRIES // max(r, 1))
        for s in range(0, m, step):
            sl = slice(s, min(s + step, m))
            Vb = self._joint(X, ii[sl], pp[sl], X, ii[lm], pp[lm], K0)  # (b, r)
            Phi[sl] = sla.solve_triangular(R, Vb.T, trans="T", lower=False,
                                           check_finite=False).T
        L = nystrom_ridge_factor(Phi, mlam, "Phi^T Phi + m lam I")
        self.coef_ = ridge_solve(L, Phi.T @ E) if E is not None else None
        if keep_alpha:
            self.coef_map_ = ridge_solve(L, Phi.T)  # (r, m)

    def _build_assembly(self):
        parts = self.parts_
        P, d_out = parts.output_index.shape
        cols = np.arange(P * d_out)
        self._S = sp.csr_matrix((np.ones(P * d_out), (parts.output_index.ravel(), cols)),
                                shape=(parts.output_dim, P * d_out))
        counts = sp.csr_matrix((np.ones(P * d_out), (parts.output_index.ravel(),
                                                      np.repeat(np.arange(P), d_out))),
                               shape=(parts.output_dim, P))
        self._Scount = counts.tocsr()

    def _weight_rows(self, X, sl):
        """Kernel values between the test records of X[sl] (all parts) and the pairs the
        coefficients live on (auxiliary pairs, or the landmarks), shape (b |P|, m or r)."""
        P = self.parts_.n_parts
        b = sl.stop - sl.start
        it = np.repeat(np.arange(sl.start, sl.stop), P)
        pt = np.tile(np.arange(P), b)
        ii, pp = self.aux_sample_, self.aux_part_
        if getattr(self, "landmark_index_", None) is not None:
            ii, pp = ii[self.landmark_index_], pp[self.landmark_index_]
        _, universal = self._locality()
        K0 = self.kernel0_(X[sl], self.X_fit_) if universal else None
        V = self._joint(X, it, pt, self.X_fit_, ii, pp, None if K0 is None else
                        _ShiftRows(K0, sl.start))
        if getattr(self, "landmark_index_", None) is not None:
            V = sla.solve_triangular(self.R_, V.T, trans="T", lower=False,
                                     check_finite=False).T
        return V

    def _blocks(self, n_test):
        P = self.parts_.n_parts
        cols = len(self.landmark_index_) if getattr(self, "landmark_index_", None) is not None \
            else self.n_aux_
        per = max(1, P * max(cols, self.coef_.shape[1] if self.coef_ is not None else 1))
        step = max(1, _BLOCK_ENTRIES // per)
        return [slice(s, min(s + step, n_test)) for s in range(0, n_test, step)]

    def _part_scores_block(self, X, sl):
        P, d_out = self.parts_.output_index.shape
        V = self._weight_rows(X, sl)
        return (V @ self.coef_).reshape(-1, P, d_out, self.output_space_.element_embed_dim())

    def _assemble(self, G, pi):
        """c (n, output_dim, e) and wsum (n, output_dim) from G (n, P, d_out, e), pi (n, P)."""
        n, P, d_out, e = G.shape
        Gw = G * pi[:, :, None, None]
        G2 = Gw.reshape(n, P * d_out, e).transpose(1, 0, 2).reshape(P * d_out, n * e)
        c = np.asarray(self._S @ G2).reshape(-1, n, e).transpose(1, 0, 2)
        wsum = np.asarray(self._Scount @ pi.T).T
        if np.any(wsum <= 0):
            raise ValueError("part_weights give zero weight to every part that contains some "
                             f"output entries ({int(np.sum(np.any(wsum <= 0, axis=0)))} "
                             "entries): eq. 6 does not determine them; give every entry a "
                             "part of positive weight")
        return c, wsum

    def _predict_closed_form(self, X):
        out = None
        pi_all = self._pi(X)
        for sl in self._blocks(X.shape[0]):
            G = self._part_scores_block(X, sl)
            c, wsum = self._assemble(G, pi_all[sl])
            Z = self.output_space_.element_decode(c, wsum)
            if out is None:
                out = np.empty((X.shape[0], *Z.shape[1:]), dtype=Z.dtype)
            out[sl] = Z
        return out
