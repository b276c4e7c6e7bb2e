r"""The output-space interface of SELF structured prediction.

SELF (Ciliberto et al.; Rudi et al., "Manifold Structured Prediction", eq. 2-3) predicts

.. math::

    \hat f(x) = \operatorname*{argmin}_{y \in \mathcal Y} \sum_{i=1}^n \alpha_i(x)\, \Delta(y, y_i),
    \qquad \alpha(x) = (\mathbf K + n\lambda I)^{-1} v(x),

so everything that depends on the output space -- validating Y, the loss Delta, and the
decoding (the argmin) -- lives in one :class:`OutputSpace` object.  The estimator
(:class:`psdsos.structured.SELFEstimator`) only computes the weights alpha(x) and hands them,
batched, to :meth:`OutputSpace.decode`.

Contract every output space follows
-----------------------------------
* ``name``: the string of ARCHITECTURE.md ("euclidean", "spd", ...).
* ``decode_methods``: tuple of the methods it offers, the first one is what "auto" means.
* ``is_classification``: True for spaces of class labels (``classes_``, ``encode(Y)`` the
  positions in ``classes_``): the estimators are then scikit-learn classifiers.
* ``projection_sets``: ``{name: build}`` of the convex sets
  :class:`psdsos.structured.FenchelYoungEstimator` may project onto, ``build(space)`` giving
  the set of the fitted space (``shape``, ``project_euclidean``, ``project_kl``); empty
  (the default) for spaces that are not vertices of a polytope.  Spaces that declare sets
  also offer ``embed(Y)``, ``polytope_`` (its ``map_oracle``), ``affine_decomposition()``
  (V, b, c of the loss) and ``from_vertices(M)`` (outputs from vertices).
* ``symmetric_loss``: True when ``loss(a, b) == loss(b, a)`` (checked by the contract test).
* Registered by name with ``@register_output_space("name")``
  (:func:`psdsos.structured.register_output_space`), which sets ``name``.
* ``check_Y(Y, name="Y")``: validate (finite, right shape, in the space) and return the
  canonical float/int array; ValueError naming ``name`` otherwise.
* ``loss(Y_true, Y_pred)``: per-sample loss, shape (n,).
* ``fit(Y_train)``: store what decoding needs (embeddings, logs, ...); returns self.
  Called once by the estimator's ``fit`` with already-checked Y.
* ``decode(alpha, method="auto")``: alpha of shape (n_test, n_train) -> predictions of shape
  (n_test, *output_shape), in the space.  Weights may be negative and need not sum to one
  (SELF weights do not); each space documents in its class docstring what it does then
  (the "negative-weight policy").
* ``to_config()`` / ``from_config(cfg)``: JSON-able parameters (for saving without pickle).
* (optional, added for the KRLS baseline of the manifold paper, Appendix G)
  ``project(Z)``: map ambient, entry-wise kernel-ridge predictions ``Z = alpha @ Y_train``
  (shape (n_test, *output_shape)) to points of the space (eigenvalue clipping, normalization,
  simplex projection, ...).  Spaces without it raise NotImplementedError and cannot be used
  with :class:`psdsos.structured.KRLSEstimator`.
* (optional) ``score(Y_true, Y_pred)``: the estimators' ``score``, higher is better (the
  accuracy for multiclass); without it they score minus the mean loss.
* (label spaces) ``classes_``: the label set; predictions are labels of it, and the
  estimators expose it as their own ``classes_`` and are tagged as classifiers.

Spaces whose decoding is a convex program build it once in CVXPY with ``cp.Parameter``
(DPP) and re-solve it per test point; such caches are named in ``_cache_attrs``, set to
None when the space is pickled or deep-copied, and rebuilt on first use.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["OutputSpace", "check_alpha", "resolve_method"]


_SpaceT = TypeVar("_SpaceT", bound="OutputSpace")


class OutputSpace:
    """Base class of SELF output spaces (see the module docstring for the contract)."""

    name = "abstract"
    decode_methods: tuple = ()
    is_classification: bool = False
    projection_sets: dict[str, Any] = {}  # never mutated: subclasses assign their own
    symmetric_loss: bool = False
    #: Attributes holding caches built on first use (CVXPY problems and the solver objects
    #: they keep): reset to None when the space is pickled or deep-copied, then rebuilt.
    _cache_attrs: tuple = ("_problem", "_lp")

    def __getstate__(self):
        state = self.__dict__.copy()
        for attr in self._cache_attrs:
            if attr in state:
                state[attr] = None
        return state

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        raise NotImplementedError

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        raise NotImplementedError

    def fit(self: _SpaceT, Y_train: ArrayLike) -> _SpaceT:
        self.Y_train_ = self.check_Y(Y_train, "Y")
        return self

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        raise NotImplementedError

    def _pair(self, Y_true, Y_pred):
        """``check_Y`` of both, which must have the same shape (for ``loss``)."""
        T = self.check_Y(Y_true, "Y_true")
        P = self.check_Y(Y_pred, "Y_pred")
        if T.shape != P.shape:
            raise ValueError(f"Y_true and Y_pred must have the same shape, got {T.shape} "
                             f"and {P.shape}")
        return T, P

    def project(self, Z: ArrayLike) -> np.ndarray:
        """Map ambient kernel-ridge predictions to the space (optional, see the contract)."""
        raise NotImplementedError(
            f"output space {self.name!r} offers no projection of ambient predictions"
        )

    def to_config(self) -> dict[str, Any]:
        """JSON-able constructor arguments."""
        return {}

    @classmethod
    def from_config(cls: type[_SpaceT], cfg: dict[str, Any]) -> _SpaceT:
        return cls(**cfg)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_config().items())
        return f"{type(self).__name__}({args})"


def resolve_method(space: OutputSpace, method: str | None) -> str:
    """The decode method to run: ``space.decode_methods[0]`` for "auto"; ValueError if unknown."""
    if method is None or method == "auto":
        return space.decode_methods[0]
    if method not in space.decode_methods:
        raise ValueError(
            f"decode_method must be 'auto' or one of {list(space.decode_methods)} for output "
            f"space {space.name!r}, got {method!r}"
        )
    return method


def check_alpha(alpha: ArrayLike, n_train: int, name: str = "alpha") -> NDArray[np.float64]:
    """Weights as a finite (n_test, n_train) float array (1-D input = one test point)."""
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != n_train:
        raise ValueError(f"{name} must have shape (n_test, {n_train}), got {np.shape(alpha)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return a
