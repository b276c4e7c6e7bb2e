r"""Localized structured prediction by parts (Ciliberto, Bach, Rudi, NeurIPS 2019).

The loss of a structured output decomposes over parts :math:`p \in P` (eq. 5),

.. math::

    \Delta(z, y \mid x) = \sum_{p \in P} \pi(p \mid x)\, L_p(z_p, y_p \mid x_p),

and :class:`LocalizedSELF` learns eq. 6 from an auxiliary dataset of (input, part,
output-part) triples (Algorithm 1).  The kernel on :math:`X \times P`, the coefficient map
of eq. 9 and the closed-form decoding element by element:
:mod:`psdsos.structured._localized_kernel`; Algorithm 3:
:mod:`psdsos.structured._localized_sgd`; what each output space offers:
:meth:`psdsos.structured.OutputSpace.supports`.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from psdsos._params import (
    SELF_KERNEL_OPTIONS,
    Bandwidth,
    Interval,
    Options,
    RandomState,
    validate_params,
)
from psdsos._persistence import SavedArray, SavedEstimator, SavedScalar, register_loadable
from psdsos._validation import PathLike, RandomStateLike, check_random_state, validate_data
from psdsos.kernels import Kernel, get_kernel
from psdsos.structured._base import OutputSpace
from psdsos.structured._estimator import _OutputOption, _params_from_meta, _space_from_meta
from psdsos.structured._intra_locality import intra_locality
from psdsos.structured._localized_checks import _check_elements, _PartsOption, _PartWeightsOption
from psdsos.structured._localized_checks import _sample_aux as _sample_aux  # re-exported
from psdsos.structured._localized_kernel import _PartsKernel
from psdsos.structured._localized_sgd import predict_sgd
from psdsos.structured._registry import get_output_space, output_spaces
from psdsos.structured.parts import Blocks, Parts

__all__ = ["LocalizedSELF", "intra_locality"]


def _landmarks(meta):
    """Whether a saved LocalizedSELF has a Nystrom fit (its landmark arrays)."""
    return meta["params"].get("n_landmarks") is not None


def _one_part(input_dim, y_shape):
    """The default parts: one part holding the whole input and output."""
    return Blocks(1, input_dim, int(np.prod(y_shape, dtype=np.int64)))


@register_loadable
class LocalizedSELF(_PartsKernel, SavedEstimator, BaseEstimator):
    r"""Structured prediction by parts: Algorithm 1 and eq. 6 of Ciliberto, Bach and Rudi.

    .. math::

        \hat f(x) = \operatorname*{argmin}_{z} \sum_{p \in P} \sum_{j=1}^m
            \alpha_j(x, p)\, \pi(p \mid x)\, L_p(z_p, \eta_j),
        \qquad \alpha(x, p) = (\mathbf K + m\lambda I)^{-1} \nu(x, p)

    (eq. 6 and 9), learned from the auxiliary dataset :math:`(\chi_j, p_j, \eta_j)_{j=1}^m`
    of Algorithm 1: :math:`\chi_j = x_{i_j}` a training input, :math:`p_j` a part and
    :math:`\eta_j = [y_{i_j}]_{p_j}` the corresponding part of its output.
    :math:`\mathbf K_{jh} = k((\chi_j, p_j), (\chi_h, p_h))` and
    :math:`\nu(x, p)_j = k((\chi_j, p_j), (x, p))` use the kernel on :math:`X \times P` chosen
    by ``locality``:

    * ``"restriction"`` (eq. 20): :math:`k((x, p), (x', q)) = \bar K(x_p, x'_q)`, the kernel
      ``kernel`` on the input parts (a patch of x is compared with every patch of the
      training inputs, wherever it is);
    * ``"universal"`` (eq. 13): :math:`k((x, p), (x', q)) = K_0(x, x')\,\delta_{pq}`, the
      kernel ``kernel`` on whole inputs (with all pairs, :math:`|P|` separate SELF estimators);
    * ``"both"`` (Remark 3): their sum, universal and local at once.

    Part losses: the output elements (the entries of y) are compared by the loss of
    ``output``, averaged over the elements of a part, :math:`L_p(\zeta, \eta) =
    \frac{1}{|p|}\sum_{u} \ell(\zeta_u, \eta_u)`.  For "euclidean" (:math:`\ell` the squared
    loss), "orientation" (:math:`\sin^2(z - y)`, angles modulo pi) and "multiclass"
    (Hamming: the 0-1 loss per element) :math:`\ell` is linear in an embedding
    :math:`\varphi` of the element, and eq. 6 is solved exactly, element by element
    (``decode_method="closed_form"``), for weights of any sign:

    * euclidean: :math:`z_u = c_u / \sum_{p \ni u} \pi(p\mid x)` (the coefficient of
      :math:`z_u^2` is taken exactly, as in :class:`~psdsos.structured.EuclideanSpace`:
      kernel ridge on the parts, overlap-added), then the box of the space if it has one;
    * orientation: :math:`z_u = \tfrac12 \operatorname{atan2}(\operatorname{Im} c_u,
      \operatorname{Re} c_u)`, :math:`c_u = \sum_{p \ni u} \pi(p\mid x) \sum_j
      \alpha_j(x, p)\, e^{2 i \eta_{j,u}}`;
    * multiclass: :math:`z_u = \operatorname{argmax}_k c_{u,k}` (ties: first class);

    with :math:`c_u` computed from the per-part scores
    :math:`g_p(x) = \nu(x, p)^\top (\mathbf K + m\lambda I)^{-1}\Phi_\eta` (``part_scores``),
    whose coefficient map is precomputed at fit: alpha is never formed at predict time.

    Other output spaces (per element: "sphere" with unit-vector elements, or an
    :class:`~psdsos.structured.OutputSpace` object offering ``project`` and a
    ``loss_gradient(Z, Y)`` method: the capability "element_sgd" of
    :meth:`~psdsos.structured.OutputSpace.supports`) are decoded by Algorithm 3 of the
    paper (Appendix J, ``decode_method="sgd"``), a stochastic projected subgradient method: sample
    :math:`p \sim \pi(\cdot\mid x)`, then j with probability :math:`|\alpha_j(x,p)| / A(x,p)`,
    :math:`A = \sum_j |\alpha_j(x,p)|`, and step on :math:`z_p` along
    :math:`-\operatorname{sign}(\alpha_j) A\, \partial L_p(z_p, \eta_j)`.  It forms alpha
    explicitly (O(m :math:`|P|`) per test point: for small problems) and is a **heuristic**: with
    negative weights the objective is not convex and the method has no guarantee; it
    starts from the projected kernel-ridge average and returns the better (in the eq. 6
    objective, evaluated exactly) of that start and its last iterate.  Step sizes:
    :math:`\gamma = 1 / (2 A(x, p)\, t_p)` at the :math:`t_p`-th visit of part p (for the
    squared loss and positive weights the iterate is then the running mean of the sampled
    :math:`\eta_j`).  Note that for "euclidean" Algorithm 3 minimizes eq. 6 as written,
    whose coefficient of :math:`z_u^2` is :math:`\sum_{p \ni u} \pi(p\mid x)\sum_j
    \alpha_j(x, p)`, while the closed form takes that coefficient exactly (kernel ridge):
    the two differ unless the weights sum to one.

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52", "linear"} or Kernel
        Default "gaussian".  :math:`\bar K` (on input parts) and :math:`K_0` (on whole
        inputs).  ``"linear"`` (:math:`\langle u, u'\rangle`, no bandwidth) gives the
        *Local-LS* estimator of section 6.1.  ``"rbf"`` (scikit-learn's name): the Gaussian.
    sigma : "scale" or float, default="scale"
        Bandwidth of the kernels; "scale": :func:`psdsos.kernels.scale_bandwidth` of the
        auxiliary input parts (for :math:`\bar K`) and of the training inputs (for
        :math:`K_0`), each computed on its own inputs.  Ignored for "linear" and Kernel
        objects.
    lam : float, default=1e-3
        Ridge parameter lambda > 0 of eq. 9 (the system is :math:`\mathbf K + m\lambda I`).
    parts : Blocks, Windows1D, Patches2D or None, default=None
        The parts (:mod:`psdsos.structured.parts`); None: one part holding the whole input
        and output (then the estimator equals :class:`~psdsos.structured.SELFEstimator`).
    output : str or OutputSpace, default="euclidean"
        Space of the output *elements*: "euclidean" (real entries; an EuclideanSpace with
        ``constraint="box"`` is clipped to its box), "orientation" (angles), "multiclass"
        (labels), or, with ``decode_method="sgd"``, "sphere" (elements are unit vectors:
        y of shape (n, output_dim, k)) or an OutputSpace object as described above.
    locality : {"restriction", "universal", "both"}, default="restriction"
        Kernel on :math:`X \times P` (eq. 20, eq. 13, Remark 3).
    part_weights : None, array of shape (n_parts,) or callable, default=None
        :math:`\pi(p \mid x)`: None is uniform; a vector is normalized to sum to one; a
        callable maps X (n, input_dim) to non-negative weights (n, n_parts) (rows are
        normalized).  It weighs the parts in eq. 6 and samples :math:`p_j` in Algorithm 1.
    n_aux : int or None, default=None
        m.  None: every pair (training input, part) once, m = n :math:`|P|` (the part-based
        dataset of section 4).  An int: Algorithm 1's sampling, :math:`i_j` uniform and
        :math:`p_j \sim \pi(\cdot \mid x_{i_j})`, with replacement, seeded by
        ``random_state``.
    n_landmarks : int or None, default=None
        Nystrom rank r <= m (landmarks: auxiliary pairs drawn uniformly without
        replacement): :math:`\alpha(x, p) \approx \Phi(\Phi^\top\Phi + m\lambda
        I)^{-1}\phi(x, p)`, O(m r^2) training and O(r) per part at predict time, instead
        of O(m^3) and O(m).  None: exact (the m x m system; memory 8 m^2 bytes).
    landmarks : {"uniform"}, default="uniform"
    decode_method : {"auto", "closed_form", "sgd"}, default="auto"
        "auto": "closed_form" where it exists (euclidean, orientation, multiclass), else
        "sgd" (Algorithm 3).
    max_iter : int or None, default=None
        Algorithm 3: iterations per test point (None: 50 :math:`|P|`).
    tol : float or None, default=None
        Algorithm 3: stop once a sweep of :math:`|P|` iterations moves no entry of z by more than
        ``tol``; a :class:`~sklearn.exceptions.ConvergenceWarning` names ``max_iter`` when
        some test points do not get there (None: run ``max_iter`` iterations, no warning).
    random_state : None, int or Generator
        Seeds Algorithm 1's sampling, the Nystrom landmarks and Algorithm 3.

    Attributes
    ----------
    parts_ : Parts
        The parts used (``parts``, or the single part of the default).
    n_aux_ : int
        m, the size of the auxiliary dataset.
    aux_sample_ : ndarray (m,)
        :math:`i_j` of the auxiliary dataset.
    aux_part_ : ndarray (m,)
        :math:`p_j` of the auxiliary dataset.
    kernel_ : Kernel or LinearKernel
        :math:`\bar K` ("restriction", "both").
    kernel0_ : Kernel or LinearKernel
        :math:`K_0` ("universal", "both").
    coef_ : ndarray (m, D) or (r, D)
        Exact fit: :math:`(\mathbf K + m\lambda I)^{-1}\Phi_\eta`, D = output part size times
        the embedding dimension; Nystrom fit:
        :math:`(\Phi^\top\Phi + m\lambda I)^{-1}\Phi^\top\Phi_\eta`.
    landmark_index_ : ndarray (r,)
        Nystrom fit: the landmark pairs.
    R_ : ndarray (r, r)
        Nystrom fit: the upper Cholesky factor of the landmarks' kernel matrix (plus jitter).
    output_space_ : OutputSpace
        The fitted space of the output elements (a copy of ``output``); the estimator asks
        it for its per-element operations (:meth:`~psdsos.structured.OutputSpace.supports`:
        "element_closed_form", "element_sgd").
    classes_ : ndarray
        "multiclass": the labels.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import LocalizedSELF
    >>> from psdsos.structured.parts import Windows1D
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 12))
    >>> Y = X / 3                        # every window of y is the same linear map of x's
    >>> model = LocalizedSELF("linear", lam=1e-6, parts=Windows1D(12, 3)).fit(X, Y)
    >>> bool(np.allclose(model.predict(X[:2]), Y[:2], atol=1e-4))
    True
    """

    _parameter_constraints = {
        "kernel": SELF_KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "lam": Interval(numbers.Real, 0.0, None, closed="neither"),
        "parts": _PartsOption(),
        "output": _OutputOption(),
        "locality": Options(["restriction", "universal", "both"]),
        "part_weights": _PartWeightsOption(),
        "n_aux": Interval(numbers.Integral, 1, None, allow_none=True),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "landmarks": Options(["uniform"]),
        "decode_method": Options(["auto", "closed_form", "sgd"]),
        "max_iter": Interval(numbers.Integral, 1, None, allow_none=True),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
        "random_state": RandomState(),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 lam: float = 1e-3, parts: Parts | None = None,
                 output: str | OutputSpace = "euclidean", locality: str = "restriction",
                 part_weights: ArrayLike | Callable | None = None, n_aux: int | None = None,
                 n_landmarks: int | None = None, landmarks: str = "uniform",
                 decode_method: str = "auto", max_iter: int | None = None, tol: float | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.parts = parts
        self.output = output
        self.locality = locality
        self.part_weights = part_weights
        self.n_aux = n_aux
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.decode_method = decode_method
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        return tags

    def _flat_X(self, X: ArrayLike, reset: bool) -> np.ndarray:
        """X validated as (n, input_dim); arrays of images (n, ...) are flattened row-major."""
        if isinstance(X, np.ndarray) and X.ndim > 2:
            X = X.reshape(X.shape[0], -1)
        return validate_data(self, X, reset=reset, dtype=np.float64,
                             ensure_min_samples=2 if reset else 1)

    # ---- fit ------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> LocalizedSELF:
        r"""Algorithm 1: the auxiliary dataset, then the coefficient map of eq. 9.

        Parameters
        ----------
        X : array-like of shape (n_samples, input_dim) (or (n_samples, ...) images,
            flattened row-major), n_samples >= 2
        y : array-like of shape (n_samples, output_dim) (or (n_samples, ...) with
            output_dim entries; predictions come back in that shape), or
            ``(n_samples, output_dim, *element_shape)`` for vector elements ("sphere").
            Labels of any hashable type for "multiclass".

        Returns
        -------
        self
        """
        validate_params(self)
        if y is None:
            raise ValueError("LocalizedSELF requires y to be passed, but the target y is None "
                             "(pass the outputs y)")
        X = self._flat_X(X, reset=True)
        n, input_dim = X.shape
        Y0 = np.asarray(y) if not isinstance(y, np.ndarray) else y
        self._y_1d = Y0.ndim == 1
        Y0 = Y0[:, None] if self._y_1d else Y0
        parts = self.parts if self.parts is not None else _one_part(input_dim, Y0.shape[1:])
        if parts.input_dim != input_dim:
            raise ValueError(f"X has {input_dim} features per sample but the parts {parts!r} "
                             f"expect input_dim = {parts.input_dim}")
        self.parts_ = parts
        space = copy.deepcopy(get_output_space(self.output))
        if self.decode_method == "closed_form" and not space.supports("element_closed_form"):
            raise ValueError(f"decode_method='closed_form' needs an output whose element loss "
                             f"is linear in an embedding ('euclidean' without constraint or "
                             f"with a box, 'orientation', 'multiclass'), got {space!r}; use "
                             "decode_method='sgd' (Algorithm 3)")
        sgd = self._decode_kind(space) == "sgd"
        if sgd and not space.supports("element_sgd"):
            raise ValueError(f"output {space!r} cannot be decoded by LocalizedSELF: "
                             "decode_method='sgd' (Algorithm 3) needs 'euclidean', "
                             "'orientation', 'sphere' or an OutputSpace with project() and "
                             "loss_gradient(Z, Y)")
        Y, y_shape = _check_elements(space, Y0, parts.output_dim)
        if len(Y) != n:
            raise ValueError(f"X and y have different numbers of samples: {n} and {len(Y)}")
        # encoded values (n, output_dim, ...)
        V = space.element_fit(Y.reshape(n * parts.output_dim, *Y.shape[2:])).reshape(Y.shape)
        self.output_space_ = space
        self.y_shape_ = y_shape
        self.__dict__.pop("classes_", None)
        if hasattr(space, "classes_"):
            self.classes_ = space.classes_

        # Algorithm 1: the auxiliary dataset, and the kernels on it
        rng = check_random_state(self.random_state)
        ii, pp = self._auxiliary_dataset(X, rng)
        self.X_fit_ = X
        # embedded auxiliary outputs Phi_eta (m, D)
        eta = V[ii[:, None], parts.output_index[pp]]  # (m, d_out, ...)
        # the raw auxiliary outputs are kept only for Algorithm 3
        self._eta = eta if sgd else None
        E = (space.element_embed(eta).reshape(self.n_aux_, -1)
             if space.supports("element_closed_form") else None)
        self._fit_coefficients(X, E, rng, keep_alpha=sgd)
        self._build_assembly()
        return self

    def _decode_kind(self, space=None):
        space = space if space is not None else self.output_space_
        if self.decode_method == "auto":
            return "closed_form" if space.supports("element_closed_form") else "sgd"
        return self.decode_method

    # ---- predict ---------------------------------------------------------------------
    def part_scores(self, X: ArrayLike) -> NDArray[np.float64]:
        r"""Per-part scores :math:`g_p(x) = \sum_j \alpha_j(x, p)\, \varphi(\eta_j)`.

        Computed as :math:`\nu(x, p)^\top` times the coefficient map of the fit (or
        :math:`\phi(x, p)^\top` times the Nystrom one), never forming alpha.

        Parameters
        ----------
        X : array-like of shape (n_test, input_dim)

        Returns
        -------
        G : ndarray of shape (n_test, n_parts, output_part_size, e)
            e = 1 ("euclidean"), 2 ("orientation": cos and sin of 2 eta), k ("multiclass":
            one-hot over ``classes_``).
        """
        check_is_fitted(self, "coef_")
        if self.coef_ is None:
            raise ValueError(f"part_scores needs an output whose loss is linear in an "
                             f"embedding; {self.output_space_!r} is decoded by Algorithm 3")
        X = self._flat_X(X, reset=False)
        P, d_out = self.parts_.output_index.shape
        G = np.empty((X.shape[0], P, d_out, self.output_space_.element_embed_dim()))
        for sl in self._blocks(X.shape[0]):
            G[sl] = self._part_scores_block(X, sl)
        return G

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Decode eq. 6 at each test point (see the class docstring).

        Parameters
        ----------
        X : array-like of shape (n_test, input_dim)

        Returns
        -------
        ndarray of shape ``(n_test, *y_shape)`` (the shape of the training targets per sample;
        1-D if y was 1-D).
        """
        check_is_fitted(self, "coef_")
        X = self._flat_X(X, reset=False)
        kind = self._decode_kind()
        fitted_for = "sgd" if getattr(self, "_eta", None) is not None else "closed_form"
        if kind != fitted_for or (kind == "closed_form" and self.coef_ is None):
            raise ValueError(f"the model was fitted for decode_method={fitted_for!r}; refit it "
                             f"after changing decode_method (now {self.decode_method!r})")
        Z = predict_sgd(self, X) if kind == "sgd" else self._predict_closed_form(X)
        return Z[:, 0] if self._y_1d else Z.reshape(len(Z), *self.y_shape_)

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Minus the mean loss of eq. 5 with uniform weights (the mean element loss);
        the fraction of correct elements for "multiclass"."""
        P = self.predict(X)
        space = self.output_space_
        Yc, _ = _check_elements(space, np.asarray(y) if not self._y_1d
                                else np.asarray(y)[:, None], self.parts_.output_dim)
        Pz = P.reshape(Yc.shape) if not self._y_1d else P[:, None]
        if len(Pz) != len(Yc):
            raise ValueError(f"X and y have different numbers of samples: {len(Pz)} and {len(Yc)}")
        if hasattr(space, "classes_"):  # labels: the accuracy
            return float(np.mean(Pz == Yc))
        return -float(np.mean(space.element_loss(np.asarray(Pz, dtype=np.float64),
                                                 np.asarray(Yc, dtype=np.float64))))

    # ---- persistence (psdsos.load); p features, m auxiliary pairs, r landmarks, k classes
    _saved_fitted_attr = "coef_"
    _fitted_arrays = {
        "X_fit": SavedArray(("n", "p"), dtype=np.float64),
        "aux_sample": SavedArray(("m",), dtype=np.int64),
        "aux_part": SavedArray(("m",), dtype=np.int64),
        "coef": SavedArray(lambda meta: ("r", "D") if _landmarks(meta) else ("m", "D"),
                           dtype=np.float64),
        "landmark_index": SavedArray(("r",), dtype=np.int64, when=_landmarks),
        "R": SavedArray(("r", "r"), dtype=np.float64, when=_landmarks),
        "classes": SavedArray(("k",), attr="classes_", labels=True,
                              when=lambda meta: meta["output_space"]["name"] == "multiclass"),
    }
    _fitted_scalars = {"n_features_in_": "posint", "n_aux_": "posint",
                       "y_1d": SavedScalar("bool", "_y_1d"), "y_shape": SavedScalar("list", ""),
                       "jitter_": SavedScalar("real", "")}
    _saved_meta = {"output": ("str", "dict"), "output_space": {"name": "str", "config": "any"},
                   "parts": ("dict", None), "kernels": "dict"}
    _saved_dims = {"p": "fitted.n_features_in_", "m": "fitted.n_aux_"}

    def save(self, path: PathLike) -> None:
        """Save the fitted estimator (.npz + JSON metadata, loaded without pickle by
        :func:`psdsos.load`).  Callable ``part_weights``, custom kernels, custom parts and
        unregistered output spaces cannot be saved (ValueError)."""
        self._save(path)

    def _saved_param_values(self):
        if callable(self.part_weights):
            raise ValueError("cannot save LocalizedSELF with a callable part_weights (saved "
                             "models never run code); pass a vector of weights")
        space = self.output_space_
        if output_spaces().get(space.name) is not type(space):
            raise ValueError(f"cannot save LocalizedSELF with output {space!r}: only registered "
                             f"output spaces are saved")
        if self.coef_ is None:
            raise ValueError("cannot save LocalizedSELF decoded by Algorithm 3 (its explicit "
                             "weights are not part of the saved format)")
        return {"parts": None, "output": space.name}

    def _saved_extra(self):
        space, out = self.output_space_, self.output
        arrays = {}
        if hasattr(space, "classes_"):
            classes = np.asarray(self.classes_)
            arrays["classes"] = classes.astype(str) if classes.dtype == object else classes
        # the fitted kernels (a custom kernel object is refused with the parameters)
        local, universal = self._locality()
        kernels = {key: {"name": getattr(self, key).name,
                         "sigma": float(getattr(self, key).sigma)}
                   for key, on in (("kernel_", local), ("kernel0_", universal)) if on}
        return arrays, {
            "output": (out.lower() if isinstance(out, str)
                       else {"name": out.name, "config": out.to_config()}),
            "output_space": {"name": space.name, "config": space.to_config()},
            "parts": None if self.parts is None else self.parts.to_config(),
            "kernels": kernels,
            "fitted": {"y_shape": [int(s) for s in self.y_shape_],
                       "jitter_": float(getattr(self, "jitter_", 0.0))}}

    @classmethod
    def _saved_constructor_params(cls, meta):
        return _params_from_meta(meta)

    def _restore_saved(self, arrays, meta, source):
        try:
            self.parts = None if meta["parts"] is None else Parts.from_config(meta["parts"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata entry 'parts' of {source} is invalid: {exc}") from None
        space = _space_from_meta(meta["output_space"])
        if not space.supports("element_closed_form"):
            raise ValueError(f"metadata entry 'output_space' of {source} names a space "
                             "decoded by Algorithm 3, which is not saved")
        n, p = self.X_fit_.shape
        self.y_shape_ = tuple(meta["fitted"]["y_shape"])
        self.parts_ = self.parts if self.parts is not None else _one_part(p, self.y_shape_)
        if self.parts_.input_dim != p:
            raise ValueError(f"the saved parts of {source} do not match the saved inputs X_fit")
        space.element_restore(arrays)
        self.output_space_ = space
        ii, pp = self.aux_sample_, self.aux_part_
        if ii.min() < 0 or ii.max() >= n or pp.min() < 0 or pp.max() >= self.parts_.n_parts:
            raise ValueError(f"arrays 'aux_sample' / 'aux_part' of {source} index outside "
                             "the saved inputs or parts")
        for key, k in meta["kernels"].items():
            if key in ("kernel_", "kernel0_"):
                setattr(self, key, get_kernel(k["name"], k["sigma"]))
        D = self.parts_.output_index.shape[1] * space.element_embed_dim()
        if self.coef_.shape[1] != D:
            raise ValueError(f"array 'coef' of {source} must have {D} columns, got "
                             f"{self.coef_.shape[1]}")
        if "landmark_index" in arrays:
            self.jitter_ = meta["fitted"]["jitter_"]
            lm = self.landmark_index_
            if lm.min() < 0 or lm.max() >= len(ii):
                raise ValueError(f"array 'landmark_index' of {source} indexes outside the "
                                 "auxiliary pairs")
        self._build_assembly()
