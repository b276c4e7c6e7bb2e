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
* (optional) ``loss_gradient(Z, Y)``: the ambient (sub)gradient in Z of the loss between
  Z and Y, entry by entry over leading dimensions.
* (optional, :class:`psdsos.structured.LocalizedSELF`) per-element operations: every entry
  of a structured output is an *element* of the space; ``supports(capability)`` says which
  of them a space offers ("element_closed_form": ``element_embed``, ``element_embed_dim``,
  ``element_decode``, ``element_restore``; "element_sgd": ``element_loss``,
  ``loss_gradient``, ``element_project``), see :meth:`OutputSpace.supports`.

Spaces whose decoding is a convex program build it once in CVXPY with ``cp.Parameter``
(DPP) and re-solve it per test point; such caches are named in ``_cache_attrs``, set to
None when the space is pickled or deep-copied, and rebuilt on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos.structured._common import as_finite

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

    # ---- optional: gradients and per-element operations (LocalizedSELF) ---------------
    def supports(self, capability: str) -> bool:
        r"""Whether the space offers an optional operation of the contract.

        * ``"project"``: :meth:`project` (the KRLS baseline).
        * ``"loss_gradient"``: :meth:`loss_gradient`.
        * ``"element_closed_form"``: LocalizedSELF's closed-form decoding, element by
          element: the elements are scalars whose loss is linear in an embedding
          :math:`\varphi` (:meth:`element_embed`, :meth:`element_embed_dim`), minimized in
          closed form by :meth:`element_decode` (:meth:`element_restore` after loading).
        * ``"element_sgd"``: LocalizedSELF's Algorithm 3 (stochastic subgradient):
          :meth:`element_loss`, :meth:`loss_gradient` and :meth:`element_project`.

        Here (the default of a subclass that does not override it): "project" and
        "loss_gradient" when the subclass defines those methods, "element_sgd" when it
        defines both (the element operations then reshape to the space's own format),
        "element_closed_form" never.
        """
        cls = type(self)
        if capability == "project":
            return cls.project is not OutputSpace.project
        if capability == "loss_gradient":
            return cls.loss_gradient is not OutputSpace.loss_gradient
        if capability == "element_sgd":
            return self.supports("project") and self.supports("loss_gradient")
        return False

    def loss_gradient(self, Z: ArrayLike, Y: ArrayLike) -> np.ndarray:
        """Ambient (sub)gradient in Z of the loss between Z and Y (optional).

        Z and Y hold elements of the space, of shape ``(..., *element_shape)`` each, broadcast
        against each other; the result has the shape of Z.
        """
        raise NotImplementedError(f"output space {self.name!r} offers no loss gradient")

    def element_array(self, Y: ArrayLike, name: str = "y") -> np.ndarray:
        """Outputs made of elements of the space, as an array (finite floats here; label
        spaces keep their labels), before :meth:`element_check`."""
        return as_finite(Y, name)

    def element_check(self, elements: np.ndarray, name: str = "y") -> np.ndarray:
        """Validate elements given one per row, ``(N, *element_shape)``; ValueError naming
        ``name``.  Here: :meth:`check_Y` (elements in the space's own format)."""
        return self.check_Y(elements, name)

    def element_fit(self, elements: np.ndarray) -> np.ndarray:
        """Fit on the training elements ``(N, *element_shape)``; returns their encoded values
        (floats; class positions for label spaces), of the same shape."""
        self.fit(elements)
        return np.asarray(self.Y_train_, dtype=np.float64).reshape(elements.shape)

    def element_embed_dim(self) -> int:
        r"""Dimension e of the embedding :math:`\varphi` ("element_closed_form")."""
        raise NotImplementedError(f"output space {self.name!r} has no element embedding")

    def element_embed(self, V: np.ndarray) -> np.ndarray:
        r""":math:`\varphi` of encoded values V (...,) -> (..., e) ("element_closed_form")."""
        raise NotImplementedError(f"output space {self.name!r} has no element embedding")

    def element_decode(self, c: np.ndarray, wsum: np.ndarray) -> np.ndarray:
        r"""Per-element minimizers of :math:`\sum_p \pi_p \sum_j \alpha_j L(z_u, \eta_{ju})`
        from the weighted embedded sums c (n, d, e) and the part weights wsum (n, d)
        ("element_closed_form"); elements (n, d)."""
        raise NotImplementedError(f"output space {self.name!r} has no closed-form element "
                                  "decoding")

    def element_restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Make a space rebuilt from its saved parameters ready for :meth:`element_decode`
        without :meth:`element_fit` (a loaded model), from the estimator's saved arrays
        (e.g. ``classes``).  Here: nothing to restore."""

    def element_loss(self, Z: np.ndarray, E: np.ndarray) -> np.ndarray:
        """Element losses L(z, eta), broadcasting Z ``(..., *element_shape)`` against E
        ("element_sgd").  Here: :meth:`loss` on the elements reshaped to rows."""
        Z, E = np.broadcast_arrays(Z, E)
        el = self.Y_train_.shape[1:]
        shape = Z.shape[:Z.ndim - len(el)]
        return self.loss(E.reshape(-1, *el), Z.reshape(-1, *el)).reshape(shape)

    def element_project(self, Z: np.ndarray) -> np.ndarray:
        """Elements Z ``(..., *element_shape)`` mapped into the space ("element_sgd").  Here:
        :meth:`project` on the elements reshaped to rows."""
        el = self.Y_train_.shape[1:]
        return np.asarray(self.project(Z.reshape(-1, *el)), dtype=np.float64).reshape(Z.shape)

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
