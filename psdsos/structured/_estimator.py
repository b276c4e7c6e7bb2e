r"""The SELF estimator (manifold paper, eq. 2-3) and the KRLS baseline (Appendix G)."""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted

from psdsos._params import (
    SELF_KERNEL_OPTIONS,
    Bandwidth,
    Interval,
    Options,
    RandomState,
    resolve_kernel,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import (
    SavedArray,
    SavedEstimator,
    SavedScalar,
    label_array,
    register_loadable,
)
from psdsos._validation import PathLike, RandomStateLike, check_saved_meta, validate_data
from psdsos.features import NystromFeatures
from psdsos.kernels import Kernel, get_kernel
from psdsos.sos import PSDModel
from psdsos.structured._base import OutputSpace, resolve_method
from psdsos.structured._krr_weights import nystrom_ridge_factor, ridge_cholesky, ridge_solve
from psdsos.structured._registry import get_output_space, output_spaces

__all__ = ["SELFEstimator", "KRLSEstimator"]


class _OutputOption:
    """``output``: a registered name or an OutputSpace instance (ValueError naming output)."""

    def check(self, name, value, owner):
        if isinstance(value, OutputSpace):
            return
        if isinstance(value, str) and value.lower() in output_spaces():
            return
        raise ValueError(
            f"{name} of {owner} must be one of {sorted(output_spaces())} or an OutputSpace "
            f"instance, got {value!r}"
        )


_COMMON_CONSTRAINTS = {
    "kernel": SELF_KERNEL_OPTIONS,
    "sigma": Bandwidth(),
    "lam": Interval(numbers.Real, 0.0, None, closed="neither"),
    "output": _OutputOption(),
    "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
    "landmarks": Options(["uniform", "greedy"]),
    "random_state": RandomState(),
}


class _LabelOutputTags:
    """Estimators whose ``output`` may be class labels (multiclass, ordinal): scikit-learn
    classifiers for those outputs (stratified folds with cv=int, accuracy as the default
    scorer of "multiclass"), regressors of structured outputs otherwise."""

    def _label_output(self):
        """True when the output space is a space of class labels (multiclass, ordinal)."""
        out = self.output
        if isinstance(out, OutputSpace):
            return out.is_classification
        cls = output_spaces().get(out.lower()) if isinstance(out, str) else None
        return cls is not None and cls.is_classification

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        if self._label_output():
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags


class _KernelWeights(_LabelOutputTags, SavedEstimator, BaseEstimator):
    """Shared machinery: the ridge weights alpha(x) of eq. 3 (exact or Nystrom)."""

    def _fit_weights(self, X, y):
        validate_params(self)
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=2)
        n = X.shape[0]
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None "
                "(pass the outputs y)"
            )
        if self._label_output():
            yy = np.asarray(y)
            if yy.ndim == 2 and yy.shape[1] == 1:  # a column of labels, as sklearn classifiers
                warnings.warn("A column-vector y was passed when a 1d array was expected "
                              "(class labels of shape (n_samples,)); it is raveled",
                              DataConversionWarning, stacklevel=3)
                y = yy.ravel()
        space = copy.deepcopy(get_output_space(self.output))
        for opt in ("max_iter", "tol"):
            val = getattr(self, opt, None)
            if val is not None and hasattr(space, opt):
                setattr(space, opt, val)
        # tol also reaches the tolerance of a space's CVXPY solver (BuresSpace.solver_tol)
        if getattr(self, "tol", None) is not None and hasattr(space, "solver_tol"):
            space.solver_tol = self.tol
        Yc = space.check_Y(y, "y")
        if len(Yc) != n:
            raise ValueError(f"X and y have different numbers of samples: {n} and {len(Yc)}")
        kernel = resolve_kernel(self.kernel, self.sigma, X)
        warn_feature_scales(self, kernel, X)
        self.kernel_ = kernel
        if self.n_landmarks is None:
            L = ridge_cholesky(kernel(X, X), n * self.lam, "K + n lam I")
            self.X_fit_ = X
            self.cholesky_ = np.tril(L)
            self.__dict__.pop("features_", None)
            self.__dict__.pop("coef_map_", None)
        else:
            if self.n_landmarks > n:
                raise ValueError(f"n_landmarks must be <= n_samples = {n}, got {self.n_landmarks}")
            features = NystromFeatures(kernel, n_landmarks=self.n_landmarks,
                                       landmarks=self.landmarks,
                                       random_state=self.random_state).fit(X)
            Phi = features.transform(X)  # (n, r)
            L = nystrom_ridge_factor(Phi, n * self.lam, "Phi^T Phi + n lam I")
            self.features_ = features
            self.coef_map_ = ridge_solve(L, Phi.T)  # (r, n)
            self.__dict__.pop("X_fit_", None)
            self.__dict__.pop("cholesky_", None)
        space.fit(y)  # the raw y: a space may record its format (1-D, vectorized, ...)
        self.output_space_ = space
        self.n_train_ = n
        if hasattr(space, "classes_"):
            self.classes_ = space.classes_
        else:
            self.__dict__.pop("classes_", None)
        return self

    def scores(self, X: ArrayLike) -> np.ndarray:
        r"""The SELF weights of eq. 3 for each test point.

        .. math::

            \alpha(x) = (\mathbf K + n\lambda I)^{-1} v(x), \qquad v(x)_i = k(x, x_i),

        or, with ``n_landmarks = r``, the Nystrom approximation of kernel ridge,
        :math:`\alpha(x) = \Phi(\Phi^\top\Phi + n\lambda I)^{-1}\phi(x)` with
        :math:`\Phi \in \mathbb R^{n \times r}` the Nystrom features of the training inputs.

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)

        Returns
        -------
        alpha : ndarray of shape (n_test, n_train)
        """
        check_is_fitted(self, "output_space_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if getattr(self, "features_", None) is not None:
            return self.features_.transform(X) @ self.coef_map_
        V = self.kernel_(self.X_fit_, X)  # (n, m)
        return ridge_solve(self.cholesky_, V).T

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """The output space's score of the predictions (higher is better; for GridSearchCV).

        The accuracy for "multiclass" (as scikit-learn classifiers), minus the mean loss
        of the output space otherwise (minus the mean absolute loss in class positions for
        "ordinal", minus the mean Hamming loss for "multilabel" and "ranking", minus the
        mean squared distance of the space for the continuous ones).  Labels not seen in
        training are valid targets (never predicted: they count as errors).

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)
        y : outputs in the format of the output space

        Returns
        -------
        float
        """
        check_is_fitted(self, "output_space_")
        P = self.predict(X)
        space = self.output_space_
        Yc = space.check_Y(y, "y")
        if len(Yc) != len(P):
            raise ValueError(f"X and y have different numbers of samples: {len(P)} and {len(Yc)}")
        if hasattr(space, "score"):
            return float(space.score(Yc.reshape(P.shape), P))
        return -float(np.mean(space.loss(Yc.reshape(P.shape), P)))

    # ---- persistence: the saved file (psdsos.load); n = n_train_ outputs, p = n_features_in_,
    # the kernel ridge factor (n, n) or the Nystrom features (r, p) and coefficient map (r, n)
    _saved_fitted_attr = "output_space_"
    _fitted_arrays = {
        "Y_train": SavedArray(("n", ...), attr="", labels=True),
        "X_fit": SavedArray(("n", "p"), when=lambda meta: meta["features"] is None),
        "cholesky": SavedArray(("n", "n"), when=lambda meta: meta["features"] is None),
        "coef_map": SavedArray(("r", "n"), when=lambda meta: meta["features"] is not None),
    }
    _fitted_scalars = {"n_features_in_": "posint", "n_train_": "posint",
                       "y_1d": SavedScalar("bool", ""), "y_shape?": SavedScalar("list", "")}
    _saved_meta = {
        "output": ("str", "dict"),
        "output_space": {"name": "str", "config": "any"},
        "features": ("dict", None),
        "kernel_": {"name": "str", "sigma": "real"},
    }
    _saved_dims = {"n": "fitted.n_train_", "p": "fitted.n_features_in_"}

    def save(self, path: PathLike) -> None:
        """Save the fitted estimator (.npz + JSON metadata, loaded without pickle).

        The output space is stored by its registered name and ``to_config()``; a space that
        is not in the registry (:func:`psdsos.structured.get_output_space`) cannot be saved.
        """
        self._save(path)

    def _saved_param_values(self):
        space, out, registry = self.output_space_, self.output, output_spaces()
        if registry.get(space.name) is not type(space):
            raise ValueError(
                f"cannot save {type(self).__name__} with output {space!r}: only registered "
                f"output spaces ({sorted(registry)}) are saved"
            )
        if not isinstance(out, str) and registry.get(out.name) is not type(out):
            raise ValueError(f"cannot save {type(self).__name__} with an unregistered output "
                             f"space {out!r}")
        return {"output": space.name}

    def _saved_extra(self):
        space, out = self.output_space_, self.output
        Y = label_array(space.Y_train_, type(self).__name__)
        arrays = {"Y_train": Y}
        fmeta = None
        if getattr(self, "features_", None) is not None:
            farr, fmeta = self.features_.to_arrays()
            arrays.update({f"features_{k}": v for k, v in farr.items()})
        return arrays, {
            "output": (out.lower() if isinstance(out, str)
                       else {"name": out.name, "config": out.to_config()}),
            "output_space": {"name": space.name, "config": space.to_config()},
            "features": fmeta,
            # the fitted kernel itself (the saved sigma may be the default when a Kernel
            # object was passed)
            "kernel_": {"name": self.kernel_.name, "sigma": float(self.kernel_.sigma)},
            "fitted": {"y_1d": bool(getattr(space, "_1d", False)), "y_shape": list(Y.shape[1:])},
        }

    @classmethod
    def _saved_spec(cls, spec, symbols, meta, source):
        registry = output_spaces()
        for key in ("output_space", "output"):
            entry = meta[key]
            name = entry if isinstance(entry, str) else entry.get("name")
            if name not in registry:
                raise ValueError(f"metadata entry {key!r} of {source} must name a registered "
                                 f"output space ({sorted(registry)}), got {name!r}")
        y_shape = meta["fitted"].get("y_shape")
        if y_shape is not None and not all(isinstance(k, int) and not isinstance(k, bool)
                                           and k >= 0 for k in y_shape):
            raise ValueError(f"metadata entry 'fitted.y_shape' of {source} must be a list of "
                             f"sizes, got {y_shape!r}")
        if y_shape is not None:
            spec["Y_train"] = ("n", *y_shape)
        if meta["features"] is not None:
            check_saved_meta(meta["features"], PSDModel.SAVED_META["features"], source=source,
                             prefix="features.")
            if meta["features"]["class"] != "NystromFeatures":
                raise ValueError(f"metadata entry 'features.class' of {source} must be "
                                 f"'NystromFeatures', got {meta['features']['class']!r}")
            saved = NystromFeatures.SAVED_ARRAYS
            spec = {"Y_train": spec["Y_train"],
                    **{f"features_{k}": shape for k, shape in saved.items()},
                    "coef_map": spec["coef_map"]}
        return spec, symbols

    @classmethod
    def _saved_constructor_params(cls, meta):
        return _params_from_meta(meta)

    def _restore_saved(self, arrays, meta, source):
        sp = meta["output_space"]
        space = _space_from_meta(sp)
        Y = arrays["Y_train"]
        if meta["fitted"]["y_1d"]:
            Y = Y[:, 0]
        try:
            space.fit(Y)
        except ValueError as exc:
            raise ValueError(f"array 'Y_train' of {source} is not a valid training output of "
                             f"the space {sp['name']!r}: {exc}") from None
        self.output_space_ = space
        if hasattr(space, "classes_"):
            self.classes_ = space.classes_
        self.kernel_ = get_kernel(meta["kernel_"]["name"], meta["kernel_"]["sigma"])
        if meta["features"] is not None:
            farr = {k[len("features_"):]: v for k, v in arrays.items()
                    if k.startswith("features_")}
            self.features_ = NystromFeatures.from_arrays(farr, meta["features"])
            self.kernel_ = self.features_.kernel_


@register_loadable
class SELFEstimator(_KernelWeights):
    r"""SELF structured prediction (Ciliberto et al. 2016; Rudi et al. 2018, eq. 2-3).

    .. math::

        \hat f(x) = \operatorname*{argmin}_{y \in \mathcal Y}
            \sum_{i=1}^n \alpha_i(x)\, \Delta(y, y_i), \qquad
        \alpha(x) = (\mathbf K + n\lambda I)^{-1} v(x),\quad v(x)_i = k(x, x_i).

    Training factorizes :math:`\mathbf K + n\lambda I` once (Cholesky); prediction computes
    the weights (:meth:`scores`) and hands them, batched, to the output space's ``decode``
    (a closed form, a CVXPY problem built once and re-solved, or Riemannian gradient descent;
    see each space).  With ``n_landmarks = r`` the weights are those of Nystrom kernel ridge,
    :math:`\alpha(x) = \Phi(\Phi^\top\Phi + n\lambda I)^{-1}\phi(x)` (section 4: O(n r^2)
    training, no n x n inverse).

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52", "linear"} or Kernel
        Default "gaussian".  ``"linear"``: :math:`k(x, x') = x^\top x'`
        (:class:`psdsos.kernels.LinearKernel`; ``sigma`` is then ignored): the weights of
        ridge regression without intercept.  ``"rbf"`` (scikit-learn's name) is the Gaussian
        kernel, with :math:`\sigma = 1/\sqrt{2\gamma}` for scikit-learn's :math:`\gamma`.
    sigma : "scale" or float, default="scale"
        Bandwidth; "scale": :func:`psdsos.kernels.scale_bandwidth` of the training inputs,
        sqrt(n_features * X.var() / 2) (scikit-learn's ``gamma="scale"``); the value used is
        ``kernel_.sigma`` (saved with the model).  Ignored when ``kernel`` is a Kernel
        object.
    lam : float, default=1e-3
        Ridge parameter lambda > 0 of eq. 3.
    output : str or OutputSpace, default="euclidean"
        "euclidean", "spd", "spd_logeuclidean", "bures", "sphere", "fisher_simplex" or a
        discrete space name ("multiclass", ... once registered), or an OutputSpace object
        (copied at fit: the object passed is not modified).
    decode_method : str, default="auto"
        "auto" (the space's first method) or one of the space's ``decode_methods``.
    n_landmarks : int or None, default=None
        Nystrom rank r (None: exact kernel ridge weights).
    landmarks : {"uniform", "greedy"}, default="uniform"
    max_iter, tol : int, float or None, default=None
        When not None, override the output space's own ``max_iter`` / ``tol`` (iterative
        decoders: Riemannian gradient norm; CVXPY decoders: solver tolerance; for "bures"
        ``tol`` sets both the fixed point's ``tol`` and the SDP's ``solver_tol``).
    random_state : None, int or Generator
        Seeds the Nystrom landmarks.

    Attributes
    ----------
    output_space_ : OutputSpace
        The fitted copy of the output space (it holds the training outputs).
    kernel_ : Kernel
    X_fit_ : ndarray (n, p)
        Training inputs (exact weights).
    cholesky_ : ndarray (n, n)
        Lower Cholesky factor of ``K + n lam I`` (exact weights).
    features_ : NystromFeatures
        With Nystrom: the features phi.
    coef_map_ : ndarray (r, n)
        With Nystrom: ``alpha(x) = phi(x) @ coef_map_``.
    n_train_ : int
    n_features_in_ : int
    classes_ : ndarray of shape (k,)
        "multiclass" and "ordinal" only: the class labels (``output_space_.classes_``);
        predictions are labels of ``classes_``.  With these outputs the estimator is a
        classifier for scikit-learn (``is_classifier``; stratified folds for ``cv=int``).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import SELFEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (30, 1))
    >>> Y = np.c_[np.cos(2 * X[:, 0]), np.sin(2 * X[:, 0])]
    >>> model = SELFEstimator(sigma=0.3, lam=1e-4, output="sphere").fit(X, Y)
    >>> np.allclose(np.linalg.norm(model.predict(X[:3]), axis=1), 1.0)
    True
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "decode_method": Options(["auto", "oracle", "cvxpy", "rgd", "closed_form"]),
        "max_iter": Interval(numbers.Integral, 1, None, allow_none=True),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 lam: float = 1e-3, output: str | OutputSpace = "euclidean",
                 decode_method: str = "auto", n_landmarks: int | None = None,
                 landmarks: str = "uniform", max_iter: int | None = None, tol: float | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.output = output
        self.decode_method = decode_method
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> SELFEstimator:
        """Factorize K + n lam I and store the training outputs in the output space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
        y : outputs in the format of the output space (ARCHITECTURE.md); class labels of
            any hashable type for "multiclass" and "ordinal"

        Returns
        -------
        self
        """
        validate_params(self)
        space = get_output_space(self.output)
        resolve_method(space, self.decode_method)  # ValueError naming decode_method, early
        return self._fit_weights(X, y)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Decode eq. 2 at each test point: ``output_space_.decode(scores(X))``.

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)

        Returns
        -------
        ndarray of shape ``(n_test, *output_shape)``, in the output space.
        """
        check_is_fitted(self, "output_space_")
        return self.output_space_.decode(self.scores(X), method=self.decode_method)


@register_loadable
class KRLSEstimator(_KernelWeights):
    r"""Kernel regularized least squares + projection: the baseline of the manifold paper
    (Appendix G).

    .. math::

        \hat f(x) = \Pi_{\mathcal Y}\Big(\sum_{i=1}^n \alpha_i(x)\, y_i\Big), \qquad
        \alpha(x) = (\mathbf K + n\lambda I)^{-1} v(x),

    i.e. one kernel ridge regression per entry of the (vectorized) output, then the output
    space's ``project``: eigenvalue clipping at 1e-12 (relative floor 1e-10) for "spd" /
    "spd_logeuclidean" (the paper's choice), at 0 for "bures", normalization for "sphere",
    Euclidean projection onto the simplex for "fisher_simplex", the constraint projection for
    "euclidean".

    Parameters
    ----------
    kernel, sigma, lam, output, n_landmarks, landmarks, random_state :
        As :class:`SELFEstimator` (no decoding options: the prediction is a closed form).
    """

    _parameter_constraints = dict(_COMMON_CONSTRAINTS)

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 lam: float = 1e-3, output: str | OutputSpace = "euclidean",
                 n_landmarks: int | None = None, landmarks: str = "uniform",
                 random_state: RandomStateLike = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.output = output
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> KRLSEstimator:
        """Factorize K + n lam I (see :class:`SELFEstimator`); returns self."""
        validate_params(self)
        space = get_output_space(self.output)
        if type(space).project is OutputSpace.project:
            raise ValueError(
                f"output {space.name!r} offers no projection (OutputSpace.project); "
                "KRLSEstimator needs one"
            )
        return self._fit_weights(X, y)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Projected kernel ridge predictions, shape ``(n_test, *output_shape)``."""
        check_is_fitted(self, "output_space_")
        alpha = self.scores(X)
        space = self.output_space_
        # class labels ("ordinal"): ridge regression of the positions in classes_
        Ytr = space.encode(space.Y_train_) if space.is_classification else space.Y_train_
        Z = np.tensordot(alpha, np.asarray(Ytr, dtype=np.float64), axes=(1, 0))
        P = space.project(Z)
        if getattr(space, "_1d", False):
            P = P[:, 0]
        return P


def _params_from_meta(meta):
    """Constructor parameters of a saved SELF-type estimator, the ``output`` rebuilt from
    its registered name and config (saved models never run code)."""
    params = dict(meta["params"])
    out = meta["output"]
    params["output"] = out if isinstance(out, str) else _space_from_meta(out)
    return params


def _space_from_meta(entry):
    """An unfitted output space from its saved ``{"name", "config"}`` entry."""
    return output_spaces()[entry["name"]].from_config(entry["config"])
