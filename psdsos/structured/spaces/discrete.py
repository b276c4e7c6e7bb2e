r"""Discrete SELF output spaces through their marginal polytopes.

Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), sections 4-5 and
appendix A.  Every space here has a 0/1 embedding :math:`\varphi : \mathcal Y \to \{0,1\}^p`
and its loss satisfies the affine decomposition (eq. 9)

.. math::

    L(\hat y, y) = \langle \varphi(\hat y), V \varphi(y) + b \rangle + c(y).

The SELF decoding (Rudi et al., "Manifold Structured Prediction", eq. 2-3) with weights
:math:`\alpha = \alpha(x) \in \mathbb R^n` is then linear in :math:`\varphi(\hat y)`:

.. math::

    \sum_i \alpha_i L(\hat y, y_i)
    = \langle \varphi(\hat y), V g + s\, b \rangle + \sum_i \alpha_i c(y_i),
    \qquad g = \sum_i \alpha_i \varphi(y_i), \quad s = \sum_i \alpha_i,

so :math:`\hat y = \mathrm{MAP}(\theta)` with :math:`\theta = -(V g + s\, b)` (eq. 2).  This is
the calibrated decoding of eq. 11, :math:`\mathrm{MAP}(-V u - b)`, written for the
unnormalized SELF weights: for :math:`s > 0` it equals eq. 11 at :math:`u = g / s` (scaling
:math:`\theta` by :math:`s > 0` does not move the argmax); the form above also holds for
:math:`s \le 0`.  Note the factor :math:`s` on :math:`b`: SELF weights need not sum to one.

Decoding methods: ``"oracle"`` (the polytope's combinatorial MAP oracle, batched; the
default) and ``"cvxpy"`` (the linear program :math:`\max_{\mu \in \mathcal M}
\langle\theta,\mu\rangle` over the marginal polytope, built once with a ``cp.Parameter``
and re-solved per test point, then rounded to the vertex; see
:class:`psdsos.structured.polytopes.PolytopeLP`).

Negative-weight policy (all spaces here): any real weights are accepted.  The objective is
linear in :math:`\varphi(\hat y)` whatever the signs, and a linear function attains its
minimum over a finite set / a polytope at a vertex, so the decoding is always well posed and
exact (it is the exact argmin of the SELF objective over :math:`\mathcal Y`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from sklearn.exceptions import NotFittedError

from psdsos._validation import check_choice, check_scalar
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite
from psdsos.structured.polytopes import (
    LP_SOLVERS,
    Birkhoff,
    Knapsack,
    OrderSimplex,
    PolytopeLP,
    Simplex,
    UnitCube,
)

__all__ = [
    "AffineDecomposition",
    "MulticlassSpace",
    "MultilabelSpace",
    "RankingSpace",
    "OrdinalSpace",
    "DISCRETE_SPACES",
]

AffineDecomposition = namedtuple("AffineDecomposition", ["V", "b", "c"])
AffineDecomposition.__doc__ = r"""(V, b, c) of eq. 9.

``L(yhat, y) = <phi(yhat), V phi(y) + b> + c(y)``.

``V`` (p, p) and ``b`` (p,) act on flattened embeddings; ``c`` maps a batch of outputs Y
(in the space's Y format) to an array of shape (n,)."""


def _int_array(Y, name, ndim, what):
    """``Y`` as an int64 array with ``ndim`` dimensions, finite and integer-valued."""
    try:
        A = np.asarray(Y)
        if A.dtype == object or A.dtype.kind in "USVc":
            raise TypeError(f"dtype {A.dtype}")
        A = A.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of {what}, got {exc}") from None
    if A.ndim != ndim:
        shape = "(n_samples,)" if ndim == 1 else "(n_samples, k)"
        raise ValueError(f"{name} must be {what} of shape {shape}, got shape {A.shape}")
    if A.shape[0] < 1:
        raise ValueError(f"{name} must have at least one sample, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(A != np.round(A)):
        raise ValueError(f"{name} must hold integer values ({what}), got non-integer entries")
    return A.astype(np.int64)


def _finite(Z, name, tail):
    """``Z`` as a finite float array of shape (n, *tail)."""
    A = as_finite(Z, name)
    if A.ndim != 1 + len(tail) or A.shape[1:] != tuple(tail):
        raise ValueError(f"{name} must have shape (n_test, *{tuple(tail)}), got {A.shape}")
    return A


class _PolytopeSpace(OutputSpace):
    """Shared machinery: embedding, (V, b, c), scores, oracle and LP decoding."""

    decode_methods = ("oracle", "cvxpy")

    # --- to be provided by subclasses -------------------------------------------------
    def _make_polytope(self):
        raise NotImplementedError

    def embed(self, Y):
        """Embedding phi(Y), flattened: array of shape (n, p)."""
        raise NotImplementedError

    def _from_vertices(self, M):
        """Outputs (Y format) from a batch of vertices of shape (m, *polytope.shape)."""
        raise NotImplementedError

    def affine_decomposition(self):
        """(V, b, c) of eq. 9 (see :class:`AffineDecomposition`)."""
        raise NotImplementedError

    def _infer_k(self, Y):
        raise NotImplementedError

    # --- shared --------------------------------------------------------------------------
    def _k_known(self):
        k = getattr(self, "k_", None)
        return self.k if k is None else k

    def _check_params(self):
        self._lp_solver = check_choice(self.lp_solver, "lp_solver", LP_SOLVERS)
        check_scalar(self.k, "k", lower=1, integer=True, allow_none=True)

    def fit(self, Y_train):
        """Validate Y, fix k, build the polytope and store the embeddings phi(y_i).

        Parameters
        ----------
        Y_train : array-like in the space's Y format

        Returns
        -------
        self
        """
        self._check_params()
        self.__dict__.pop("k_", None)
        Y = self.check_Y(Y_train, "Y")
        self.k_ = int(self.k) if self.k is not None else self._infer_k(Y)
        self.Y_train_ = self.check_Y(Y, "Y")
        self.polytope_ = self._make_polytope()
        self.Phi_ = self.embed(self.Y_train_)
        self._lp = None
        return self

    def _check_fitted(self):
        if not hasattr(self, "Phi_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(Y_train) first")

    def scores(self, alpha):
        r"""MAP scores :math:`\theta = -(V g + s\, b)` of the SELF objective (eq. 9, 11).

        Parameters
        ----------
        alpha : ndarray of shape (n_test, n_train)
            SELF weights (any signs).

        Returns
        -------
        ndarray of shape (n_test, *polytope.shape)
        """
        self._check_fitted()
        a = check_alpha(alpha, self.Phi_.shape[0])
        V, b, _ = self.affine_decomposition()
        g = a @ self.Phi_
        s = a.sum(axis=1)
        theta = -(g @ V.T + s[:, None] * b[None, :])
        return theta.reshape((a.shape[0],) + self.polytope_.shape)

    def lp(self):
        """The decoding LP (:class:`PolytopeLP`), built once on first use and cached."""
        self._check_fitted()
        if self._lp is None:
            self._lp = PolytopeLP(self.polytope_, solver=self._lp_solver)
        return self._lp

    def decode(self, alpha, method="auto"):
        r"""SELF prediction :math:`\operatorname{argmin}_y \sum_i \alpha_i L(y, y_i)`.

        Parameters
        ----------
        alpha : ndarray of shape (n_test, n_train)
            SELF weights; negative and mixed signs are fine (linear objective).
        method : {"auto", "oracle", "cvxpy"}
            "oracle" (default for "auto"): combinatorial MAP on :math:`\theta = -(Vg + sb)`;
            "cvxpy": the LP over the marginal polytope, rounded to its optimal vertex (on
            exact ties it may return another optimal structure than the oracle: same
            objective value, deterministic for given alpha).

        Returns
        -------
        ndarray : predictions in the Y format, n_test of them.
        """
        method = resolve_method(self, method)
        theta = self.scores(alpha)
        if method == "oracle":
            M = self.polytope_.map_oracle(theta)
        else:
            M = self.lp().solve(theta)
        return self._from_vertices(M)

    def objective(self, alpha, Y):
        r"""SELF objective :math:`\sum_i \alpha_i L(y, y_i)` for each candidate row of ``Y``.

        Computed through eq. 9; ``alpha`` of shape (n_train,) (one test point) and ``Y`` a
        batch of candidates; returns an array of shape (n_candidates,).
        """
        self._check_fitted()
        a = check_alpha(alpha, self.Phi_.shape[0])
        if a.shape[0] != 1:
            raise ValueError(f"alpha must be one test point, shape (n_train,), got {a.shape}")
        V, b, c = self.affine_decomposition()
        P = self.embed(self.check_Y(Y, "Y"))
        w = V @ (a[0] @ self.Phi_) + a[0].sum() * b
        return P @ w + a[0] @ c(self.Y_train_)

    def _pair(self, Y_true, Y_pred):
        T = self.check_Y(Y_true, "Y_true")
        P = self.check_Y(Y_pred, "Y_pred")
        if T.shape != P.shape:
            raise ValueError(f"Y_true and Y_pred must have the same shape, got {T.shape} "
                             f"and {P.shape}")
        return T, P


class _LabelSpace(_PolytopeSpace):
    """Outputs that are integer labels 0..k-1 of shape (n,) (multiclass, ordinal)."""

    #: word used in error messages ("class", "ordinal")
    _label_word = "class"

    def __init__(self, k=None, *, lp_solver="HIGHS"):
        self.k = k
        self.lp_solver = lp_solver

    def to_config(self):
        return {"k": None if self.k is None else int(self.k), "lp_solver": self.lp_solver}

    def check_Y(self, Y, name="Y"):
        """Integer labels of shape (n,) in 0..k-1; ValueError naming ``name`` otherwise."""
        A = _int_array(Y, name, 1, f"integer {self._label_word} labels")
        k = self._k_known()
        if A.min() < 0 or (k is not None and A.max() >= k):
            rng = "0..k-1" if k is None else f"0..{k - 1}"
            raise ValueError(f"{name} must hold {self._label_word} labels in {rng}, got values "
                             f"in [{A.min()}, {A.max()}]")
        return A


class MulticlassSpace(_LabelSpace):
    r"""Multiclass classification: labels 0..k-1, 0-1 loss, probability simplex.

    Embedding :math:`\varphi(y) = e_y \in \{0,1\}^k` (one-hot); the 0-1 loss decomposes as
    eq. 9 (appendix A) with :math:`V = \mathbf 1\mathbf 1^\top - I`, :math:`b = 0`,
    :math:`c = 0`.  The marginal polytope is the simplex :math:`\triangle^k` (section 4);
    MAP = argmax, so the SELF decoding is :math:`\operatorname{argmax}_j (g_j - s)`, i.e.
    :math:`\operatorname{argmax}_j \sum_{i: y_i = j} \alpha_i` (ties: smallest label).

    Negative and mixed-sign weights are fine: the decoding minimizes a linear function over
    the k vertices, always well posed and exact.  With negative weights a class absent from
    the training labels can win, so pass ``k`` when the label set is known.

    Parameters
    ----------
    k : int, optional
        Number of classes; inferred at fit as ``max(Y) + 1`` if None.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
        CVXPY solver of the ``"cvxpy"`` decoding.
    """

    name = "multiclass"


    def _infer_k(self, Y):
        return int(Y.max()) + 1

    def _make_polytope(self):
        return Simplex(self.k_)

    def embed(self, Y):
        Y = self.check_Y(Y, "Y")
        return np.eye(self.k_)[Y]

    def _from_vertices(self, M):
        return np.argmax(M, axis=1).astype(np.int64)

    def affine_decomposition(self):
        k = self.k_
        return AffineDecomposition(np.ones((k, k)) - np.eye(k), np.zeros(k),
                                   lambda Y: np.zeros(len(Y)))

    def loss(self, Y_true, Y_pred):
        """0-1 loss per sample, shape (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).astype(np.float64)


class MultilabelSpace(_PolytopeSpace):
    r"""Multilabel classification: Y (n, k) in {0, 1}, Hamming loss, unit cube or knapsack.

    Embedding :math:`\varphi(y) = y \in \{0,1\}^k`.  The Hamming loss
    :math:`L(\hat y, y) = \frac1k \sum_j 1[\hat y_j \ne y_j]` (``normalize=True``; the count
    without the 1/k if False) decomposes as eq. 9 (appendix A, "Hamming loss for multilabel
    classification") with :math:`V = -\frac2k I`, :math:`b = \frac1k \mathbf 1`,
    :math:`c(y) = \frac1k \langle \varphi(y), \mathbf 1\rangle`.  SELF scores
    :math:`\theta = (2g - s\mathbf 1)/k`.

    Without label-count bounds the polytope is the unit cube and MAP thresholds
    :math:`\theta_j > 0`; with ``min_labels`` / ``max_labels`` it is the knapsack polytope
    :math:`\{\mu \in [0,1]^k: l \le \langle\mu,\mathbf 1\rangle \le u\}` and MAP sorts
    (section 4).  The bounds constrain the *predictions*; training rows outside them are
    accepted (the paper sets u from the training mean + std of the label count).

    Negative and mixed-sign weights are fine: linear objective over the polytope's vertices.

    Parameters
    ----------
    k : int, optional
        Number of labels (columns of Y); inferred at fit if None.
    min_labels : int, default 0
        Lower bound l on the number of predicted labels.
    max_labels : int, optional
        Upper bound u (None = k).
    normalize : bool, default True
        Hamming loss divided by k.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    name = "multilabel"

    def __init__(self, k=None, *, min_labels=0, max_labels=None, normalize=True,
                 lp_solver="HIGHS"):
        self.k = k
        self.min_labels = min_labels
        self.max_labels = max_labels
        self.normalize = normalize
        self.lp_solver = lp_solver

    def to_config(self):
        return {"k": None if self.k is None else int(self.k),
                "min_labels": int(self.min_labels),
                "max_labels": None if self.max_labels is None else int(self.max_labels),
                "normalize": bool(self.normalize), "lp_solver": self.lp_solver}

    def check_Y(self, Y, name="Y"):
        """0/1 array of shape (n, k); ValueError naming ``name`` otherwise."""
        A = _int_array(Y, name, 2, "0/1 label indicators")
        k = self._k_known()
        if k is not None and A.shape[1] != k:
            raise ValueError(f"{name} must have k = {k} columns, got shape {A.shape}")
        if A.shape[1] < 1:
            raise ValueError(f"{name} must have at least one label column, got shape {A.shape}")
        if np.any((A != 0) & (A != 1)):
            raise ValueError(f"{name} must hold 0/1 label indicators, got values "
                             f"{np.unique(A)[:5].tolist()}")
        return A

    def _infer_k(self, Y):
        return int(Y.shape[1])

    def _bounds(self):
        k = self.k_
        lo = check_scalar(self.min_labels, "min_labels", lower=0, upper=k, integer=True)
        hi = check_scalar(self.max_labels, "max_labels", lower=lo, upper=k, integer=True,
                          allow_none=True)
        return int(lo), (k if hi is None else int(hi))

    def fit(self, Y_train):
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be a bool, got {self.normalize!r}")
        return super().fit(Y_train)

    def _make_polytope(self):
        lo, hi = self._bounds()
        if lo == 0 and hi == self.k_:
            return UnitCube(self.k_)
        return Knapsack(self.k_, lo, hi)

    def embed(self, Y):
        return self.check_Y(Y, "Y").astype(np.float64)

    def _from_vertices(self, M):
        return np.rint(M).astype(np.int64)

    def project(self, Z):
        """Nearest label set (Euclidean) to per-label ridge predictions ``Z`` (n_test, k).

        The KRLS baseline: threshold at 1/2 on the unit cube, the nearest vertex of the
        knapsack polytope (``map_oracle(Z - 1/2)``) with count bounds.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        return self._from_vertices(self.polytope_.round(Z))

    def _scale(self):
        return 1.0 / self.k_ if self.normalize else 1.0

    def affine_decomposition(self):
        k, w = self.k_, self._scale()
        return AffineDecomposition(-2.0 * w * np.eye(k), w * np.ones(k),
                                   lambda Y: w * self.check_Y(Y, "Y").sum(axis=1))

    def loss(self, Y_true, Y_pred):
        """Hamming loss per sample (fraction of wrong labels if ``normalize``), shape (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1) * self._scale_for(T.shape[1])

    def _scale_for(self, k):
        return 1.0 / k if self.normalize else 1.0


class RankingSpace(_PolytopeSpace):
    r"""Label ranking: Y (n, k) permutations of 0..k-1, Hamming loss, Birkhoff polytope.

    Entry ``y[i]`` is the rank (position, 0 = top) of label i.  Embedding: the permutation
    matrix :math:`\varphi(y)_{i, y_i} = 1` (label i at position :math:`y_i`), flattened to
    :math:`p = k^2`.  The Hamming loss :math:`L(\hat y, y) = \frac1k \sum_i 1[\hat y_i \ne y_i]
    = 1 - \frac1k\langle\varphi(\hat y), \varphi(y)\rangle` (``normalize=True``; the count
    :math:`k - \langle\cdot,\cdot\rangle` if False) decomposes as eq. 9 (appendix A, "Hamming
    loss for ranking") with :math:`V = -\frac1k I_{k^2}`, :math:`b = 0`, :math:`c = 1`.  SELF
    scores :math:`\theta = G / k` with :math:`G = \sum_i \alpha_i \varphi(y_i)`; MAP is the
    linear assignment problem on the Birkhoff polytope (section 4), solved by
    :func:`scipy.optimize.linear_sum_assignment`.

    Negative and mixed-sign weights are fine: linear objective over the permutation matrices.

    Parameters
    ----------
    k : int, optional
        Number of labels; inferred at fit if None.
    normalize : bool, default True
        Hamming loss divided by k.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    name = "ranking"

    def __init__(self, k=None, *, normalize=True, lp_solver="HIGHS"):
        self.k = k
        self.normalize = normalize
        self.lp_solver = lp_solver

    def to_config(self):
        return {"k": None if self.k is None else int(self.k),
                "normalize": bool(self.normalize), "lp_solver": self.lp_solver}

    def check_Y(self, Y, name="Y"):
        """Rows that are permutations of 0..k-1 (shape (n, k)); ValueError naming ``name``."""
        A = _int_array(Y, name, 2, "rank vectors (permutations of 0..k-1)")
        k = self._k_known()
        if k is not None and A.shape[1] != k:
            raise ValueError(f"{name} must have k = {k} columns, got shape {A.shape}")
        if A.shape[1] < 1:
            raise ValueError(f"{name} must have at least one label column, got shape {A.shape}")
        ok = np.all(np.sort(A, axis=1) == np.arange(A.shape[1])[None, :], axis=1)
        if not np.all(ok):
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"{name} rows must be permutations of 0..{A.shape[1] - 1} (entry i "
                             f"= rank of label i); row {bad} is {A[bad].tolist()}")
        return A

    def fit(self, Y_train):
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be a bool, got {self.normalize!r}")
        return super().fit(Y_train)

    def _infer_k(self, Y):
        return int(Y.shape[1])

    def _make_polytope(self):
        return Birkhoff(self.k_)

    def permutation_matrices(self, Y):
        """Permutation matrices phi(Y) of shape (n, k, k): ``P[i, y_i] = 1``."""
        Y = self.check_Y(Y, "Y")
        n, k = Y.shape
        P = np.zeros((n, k, k))
        P[np.arange(n)[:, None], np.arange(k)[None, :], Y] = 1.0
        return P

    def embed(self, Y):
        P = self.permutation_matrices(Y)
        return P.reshape(P.shape[0], -1)

    def _from_vertices(self, M):
        return np.argmax(M, axis=2).astype(np.int64)

    def project(self, Z):
        r"""Nearest rank vector (Euclidean) to ridge predictions of the ranks ``Z`` (n_test, k).

        The KRLS baseline on the rank-vector encoding (the permutahedron's):
        :math:`\operatorname{argmin}_\pi \|\pi - z\|^2 = \operatorname{argmax}_\pi
        \langle \pi, z\rangle`, i.e. the ranks of z (smallest predicted rank first; ties keep
        label order).  For KRLS on the permutation-matrix embedding use
        ``polytope_.map_oracle(alpha @ Phi_)``, which equals the SELF decoding here.
        """
        self._check_fitted()
        Z = _finite(Z, "Z", (self.k_,))
        order = np.argsort(Z, axis=1, kind="stable")
        ranks = np.empty_like(order)
        ranks[np.arange(len(Z))[:, None], order] = np.arange(self.k_)[None, :]
        return ranks.astype(np.int64)

    def affine_decomposition(self):
        k = self.k_
        w = 1.0 / k if self.normalize else 1.0
        return AffineDecomposition(-w * np.eye(k * k), np.zeros(k * k),
                                   lambda Y: np.full(len(self.check_Y(Y, "Y")), w * k))

    def loss(self, Y_true, Y_pred):
        """Hamming loss per sample (fraction of misplaced labels if ``normalize``), (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1) * (1.0 / T.shape[1] if self.normalize else 1.0)


class OrdinalSpace(_LabelSpace):
    r"""Ordinal regression: labels 0..k-1 (ordered), absolute loss, order simplex.

    Cumulative embedding :math:`\varphi(y) = \sum_{j < y} e_j \in \{0,1\}^{k-1}` (``y``
    leading ones; section 4, Proposition 4).  The absolute loss
    :math:`|\hat y - y| = \langle\varphi(\hat y),\mathbf 1\rangle + \langle\varphi(y),
    \mathbf 1\rangle - 2\langle\varphi(\hat y),\varphi(y)\rangle` decomposes as eq. 9
    (appendix A) with :math:`V = -2I`, :math:`b = \mathbf 1`, :math:`c(y) = y`.  SELF scores
    :math:`\theta = 2g - s\mathbf 1`; MAP = argmax of the cumulative sums
    :math:`\sum_{j<y}\theta_j` over the k vertices, O(k) (ties: smallest label).  For
    non-negative weights this is a weighted median of the training labels.

    Negative and mixed-sign weights are fine: linear objective over the k vertices.

    Parameters
    ----------
    k : int, optional
        Number of ordered classes (>= 2); inferred at fit as ``max(Y) + 1`` if None.
    lp_solver : {"HIGHS", "CLARABEL", "SCIPY"}
    """

    name = "ordinal"
    _label_word = "ordinal"


    def _check_params(self):
        super()._check_params()
        check_scalar(self.k, "k", lower=2, integer=True, allow_none=True)

    def _infer_k(self, Y):
        k = int(Y.max()) + 1
        if k < 2:
            raise ValueError("Y holds a single ordinal label (0); pass k >= 2 to OrdinalSpace")
        return k

    def _make_polytope(self):
        return OrderSimplex(self.k_)

    def embed(self, Y):
        Y = self.check_Y(Y, "Y")
        return (np.arange(self.k_ - 1)[None, :] < Y[:, None]).astype(np.float64)

    def _from_vertices(self, M):
        return np.rint(M.sum(axis=1)).astype(np.int64)

    def project(self, Z):
        """Nearest label to ridge predictions of the label ``Z`` (n_test,): clip and round.

        The "ridge regression + rounding" baseline of ordinal regression (halves round up).
        """
        self._check_fitted()
        Z = _finite(Z, "Z", ())
        return np.clip(np.floor(Z + 0.5), 0, self.k_ - 1).astype(np.int64)

    def affine_decomposition(self):
        p = self.k_ - 1
        return AffineDecomposition(-2.0 * np.eye(p), np.ones(p),
                                   lambda Y: self.check_Y(Y, "Y").astype(np.float64))

    def loss(self, Y_true, Y_pred):
        """Absolute loss ``|y_true - y_pred|`` per sample, shape (n,)."""
        T, P = self._pair(Y_true, Y_pred)
        return np.abs(T - P).astype(np.float64)


DISCRETE_SPACES = {
    cls.name: cls for cls in (MulticlassSpace, MultilabelSpace, RankingSpace, OrdinalSpace)
}
