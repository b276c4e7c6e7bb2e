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
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError

from psdsos._validation import check_choice, check_scalar
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite
from psdsos.structured.polytopes import LP_SOLVERS, PolytopeLP
from psdsos.structured.spaces._projection_sets import COMMON_SETS

__all__ = ["AffineDecomposition"]

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


def _finite(Z: ArrayLike, name: str, tail: tuple) -> np.ndarray:
    """``Z`` as a finite float array of shape (n, *tail)."""
    A = as_finite(Z, name)
    if A.ndim != 1 + len(tail) or A.shape[1:] != tuple(tail):
        raise ValueError(f"{name} must have shape (n_test, *{tuple(tail)}), got {A.shape}")
    return A


#: Entries of one block of MAP scores (n_test_block * p): decoding runs block by block so
#: that its memory does not grow with the number of test points.
_BLOCK_ENTRIES = 1 << 20


_PolyT = TypeVar("_PolyT", bound="_PolytopeSpace")
_RowT = TypeVar("_RowT", bound="_RowSpace")


class _PolytopeSpace(OutputSpace):
    """Shared machinery: embedding, (V, b, c), scores, oracle and LP decoding.

    The MAP scores :math:`\\theta = -(Vg + sb)` are computed from the structure of each
    space (:meth:`_theta`: sums of weights per class, per label, per (label, rank) pair)
    without forming the dense embedding of the training set or the matrix V, and the
    decoding runs over blocks of test points; :meth:`affine_decomposition` still gives the
    explicit (V, b, c) of eq. 9 (a dense p x p V: meant for checks on small k).
    """

    decode_methods = ("oracle", "cvxpy")
    projection_sets = COMMON_SETS
    symmetric_loss = True
    # constructor parameters of the subclasses
    k: int | None
    lp_solver: str

    # --- to be provided by subclasses -------------------------------------------------
    def _make_polytope(self):
        raise NotImplementedError

    def embed(self, Y: ArrayLike) -> np.ndarray:
        """Embedding phi(Y), flattened: dense array of shape (n, p)."""
        raise NotImplementedError

    def from_vertices(self, M: np.ndarray) -> np.ndarray:
        """Outputs (Y format) from a batch of vertices of shape ``(m, *polytope.shape)``."""
        raise NotImplementedError

    def affine_decomposition(self) -> AffineDecomposition:
        """(V, b, c) of eq. 9 (see :class:`AffineDecomposition`); V is dense (p, p)."""
        raise NotImplementedError

    def _infer_k(self, Y):
        raise NotImplementedError

    def _train_structure(self, Y):
        """What :meth:`_theta` needs from the (checked) training outputs."""
        raise NotImplementedError

    def _theta(self, a):
        """Flattened MAP scores (m, p) of a block of weights (m, n_train)."""
        raise NotImplementedError

    def _c_train(self):
        """c(y_i) of eq. 9 for the training outputs, shape (n_train,)."""
        return self.affine_decomposition().c(self.Y_train_)

    # --- shared --------------------------------------------------------------------------
    def _k_known(self):
        k = getattr(self, "k_", None)
        return self.k if k is None else k

    def _check_params(self):
        self._lp_solver = check_choice(self.lp_solver, "lp_solver", LP_SOLVERS)
        self._check_k_param()

    def _check_k_param(self):
        """``k`` (None or an integer >= 1); ValueError naming k otherwise."""
        check_scalar(self.k, "k", lower=1, integer=True, allow_none=True)

    def fit(self: _PolyT, Y_train: ArrayLike) -> _PolyT:
        """Validate Y, fix k, build the polytope and store what decoding needs.

        Parameters
        ----------
        Y_train : array-like in the space's Y format

        Returns
        -------
        self
        """
        self._check_params()
        for attr in ("k_", "classes_"):
            self.__dict__.pop(attr, None)
        Y = self.check_Y(Y_train, "Y")
        self.k_ = int(self.k) if self.k is not None else self._infer_k(Y)
        self.Y_train_ = self.check_Y(Y, "Y")
        self.polytope_ = self._make_polytope()
        self._train = self._train_structure(self.Y_train_)
        self._lp: Any = None
        return self

    def _check_fitted(self):
        if not hasattr(self, "_train"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(Y_train) first")

    def _blocks(self, m):
        p = int(np.prod(self.polytope_.shape))
        size = max(1, _BLOCK_ENTRIES // max(p, 1))
        return [slice(i, min(i + size, m)) for i in range(0, m, size)] or [slice(0, 0)]

    def scores(self, alpha: ArrayLike) -> np.ndarray:
        r"""MAP scores :math:`\theta = -(V g + s\, b)` of the SELF objective (eq. 9, 11).

        Parameters
        ----------
        alpha : ndarray of shape (n_test, n_train)
            SELF weights (any signs).

        Returns
        -------
        ndarray of shape ``(n_test, *polytope.shape)``
        """
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        return self._theta(a).reshape((a.shape[0],) + self.polytope_.shape)

    def lp(self) -> PolytopeLP:
        """The decoding LP (:class:`PolytopeLP`), built once on first use and cached."""
        self._check_fitted()
        if self._lp is None:
            self._lp = PolytopeLP(self.polytope_, solver=self._lp_solver)
        return self._lp

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
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
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        out = []
        for blk in self._blocks(a.shape[0]):
            theta = self._theta(a[blk]).reshape((-1,) + self.polytope_.shape)
            if method == "oracle":
                M = self.polytope_.map_oracle(theta)
            else:
                M = self.lp().solve(theta)
            out.append(self.from_vertices(M))
        return np.concatenate(out, axis=0)

    def objective(self, alpha: ArrayLike, Y: ArrayLike) -> np.ndarray:
        r"""SELF objective :math:`\sum_i \alpha_i L(y, y_i)` for each candidate row of ``Y``.

        Computed through eq. 9; ``alpha`` of shape (n_train,) (one test point) and ``Y`` a
        batch of candidates; returns an array of shape (n_candidates,).
        """
        self._check_fitted()
        a = check_alpha(alpha, len(self.Y_train_))
        if a.shape[0] != 1:
            raise ValueError(f"alpha must be one test point, shape (n_train,), got {a.shape}")
        P = self.embed(self.check_Y(Y, "Y"))
        return -(P @ self._theta(a)[0]) + a[0] @ self._c_train()

    def score(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
        """Score of predictions, higher is better: minus the mean loss (see each space)."""
        return -float(np.mean(self.loss(Y_true, Y_pred)))


class _RowSpace(_PolytopeSpace):
    """Outputs that are rows of k integers (multilabel, ranking) with a ``normalize`` flag."""

    normalize: bool

    def _int_rows(self, Y, name, what):
        """``Y`` as an int64 array (n, k), k the known number of labels if any."""
        A = _int_array(Y, name, 2, what)
        k = self._k_known()
        if k is not None and A.shape[1] != k:
            raise ValueError(f"{name} must have k = {k} columns, got shape {A.shape}")
        if A.shape[1] < 1:
            raise ValueError(f"{name} must have at least one label column, got shape {A.shape}")
        return A

    def _infer_k(self, Y):
        return int(Y.shape[1])

    def fit(self: _RowT, Y_train: ArrayLike) -> _RowT:
        """Check ``normalize``, then :meth:`_PolytopeSpace.fit`."""
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be a bool, got {self.normalize!r}")
        return super().fit(Y_train)
