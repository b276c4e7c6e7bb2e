r"""Structured prediction with projection oracles (Blondel, NeurIPS 2019).

A model :math:`\theta = g(x)` (linear, :math:`W^T x + c`, or kernel,
:math:`\sum_j \beta_j k(x, x_j) + c`) is trained by minimizing the projection-based
Fenchel-Young loss of eq. 6 plus a ridge penalty,

.. math::

    \frac1n \sum_{i=1}^n S^\Psi_{\mathcal C}(g(x_i), y_i) + \frac\lambda2 \|g\|^2

(:math:`\|W\|_F^2`, or the RKHS norm :math:`\operatorname{tr}(\beta^T K \beta)`; the
intercept is not penalized), with L-BFGS and the exact gradient
:math:`\nabla_\theta S = P^\Psi_{\mathcal C}(\theta) - \varphi(y)`.  Prediction is the
calibrated decoding of eq. 11: :math:`\hat y = \mathrm{MAP}(-(V\mu + b))` with
:math:`\mu = P^\Psi_{\mathcal C}(g(x))` and (V, b) the affine decomposition (eq. 9) of the
output space's loss.
"""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Iterator, Mapping

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from psdsos._params import (
    KERNEL_OPTIONS,
    Bandwidth,
    Bool,
    Interval,
    Options,
    resolve_kernel,
    validate_params,
    warn_feature_scales,
)
from psdsos._persistence import SavedArray, SavedEstimator, SavedScalar, register_loadable
from psdsos._validation import PathLike, RandomStateLike, validate_data
from psdsos.kernels import Kernel, get_kernel
from psdsos.structured._base import OutputSpace
from psdsos.structured._estimator import _LabelOutputTags
from psdsos.structured._fenchel_young import fenchel_young_loss
from psdsos.structured._projections import project_birkhoff
from psdsos.structured._registry import output_spaces
from psdsos.structured.polytopes import Birkhoff
from psdsos.structured.spaces.discrete import DISCRETE_SPACES

__all__ = ["FenchelYoungEstimator", "PROJECTION_SETS"]


class _ProjectionSets(Mapping):
    """Projection sets by name and the registered outputs they apply to, read from the
    spaces' own ``projection_sets`` ("marginal": the output space's marginal polytope;
    "knapsack" is multilabel's marginal polytope with its count bounds).  Read-only."""

    def _table(self):
        table: dict[str, tuple[str, ...]] = {}
        for name, cls in output_spaces().items():
            for s in cls.projection_sets:
                table[s] = (*table.get(s, ()), name)
        return table

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return repr(self._table())


#: ``{set name: (output names, ...)}``, a read-only view of the registered spaces.
PROJECTION_SETS: Mapping[str, tuple[str, ...]] = _ProjectionSets()


class _ProjectionSetOption:
    """``projection_set``: a set some registered output space declares (checked at fit)."""

    def check(self, name, value, owner):
        Options(sorted(PROJECTION_SETS)).check(name, value, owner)


class _Flat:
    """A projection set on flattened scores (m, p), whatever the shape of the set."""

    def __init__(self, polytope):
        self.polytope = polytope
        self.set_shape = tuple(polytope.shape)
        self.shape = (int(np.prod(self.set_shape)),)

    def _apply(self, f, t):
        t = np.asarray(t, dtype=np.float64)
        return np.asarray(f(t.reshape((-1,) + self.set_shape))).reshape(-1, self.shape[0])

    def project_euclidean(self, t):
        return self._apply(self.polytope.project_euclidean, t)

    def project_kl(self, t):
        return self._apply(self.polytope.project_kl, t)


class _WarmBirkhoff(_Flat):
    """Birkhoff projections of flattened scores, warm-started from the dual variables of
    the previous call with the same batch size (the training scores of successive L-BFGS
    evaluations are close)."""

    def __init__(self, poly):
        super().__init__(poly)
        self._poly = poly
        self._last = {}

    def _project(self, t, kl):
        k = self._poly.k
        T = np.asarray(t, dtype=np.float64).reshape(-1, k, k)
        init = self._last.get((kl, T.shape[0]))
        res = project_birkhoff(T, kl=kl, tol=self._poly.tol, max_iter=self._poly.max_iter,
                               init=init)
        if not np.all(res.converged) and init is not None:
            res = project_birkhoff(T, kl=kl, tol=self._poly.tol,
                                   max_iter=self._poly.max_iter)
        self._last[(kl, T.shape[0])] = (res.alpha, res.beta)
        return res.P.reshape(-1, k * k)

    def project_euclidean(self, t):
        return self._project(t, False)

    def project_kl(self, t):
        return self._project(t, True)

    def __getstate__(self):  # the warm-start cache is not part of the model
        return {**self.__dict__, "_last": {}}


@register_loadable
class FenchelYoungEstimator(_LabelOutputTags, SavedEstimator, BaseEstimator):
    r"""Projection-oracle structured prediction (Blondel 2019, eq. 6 and 11).

    Parameters
    ----------
    output : {"multiclass", "multilabel", "ranking", "ordinal"} or a discrete space object
        The output space (its 0/1 encoding, MAP oracle and loss; see
        :mod:`psdsos.structured.spaces.discrete`): any registered space, or space object,
        that declares ``projection_sets`` (plug-ins included).
    projection_set : {"marginal", "unit_cube", "row_simplex", "knapsack", "reals", "nonneg"}
        The convex set :math:`\mathcal C \supseteq \varphi(\mathcal Y)` of eq. 5:
        the space's marginal polytope, the unit cube, row-stochastic matrices (ranking),
        the knapsack polytope (multilabel: its marginal polytope), the whole space (the
        squared loss for Euclidean, :math:`e^{\theta-1}` for KL) or the non-negative orthant.
        One of the sets the output space declares (its ``projection_sets``).
    projection : {"euclidean", "kl"}
        :math:`\Psi = \tfrac12\|\cdot\|^2` or :math:`\langle u, \log u\rangle`.
    model : {"linear", "kernel"}
    kernel, sigma
        Kernel of the kernel model (``sigma="scale"``: derived from the data's spread).
    lam : float > 0
        Ridge weight.
    fit_intercept : bool
    max_iter, tol
        L-BFGS iterations and gradient tolerance; short of it: ConvergenceWarning.
    random_state
        Unused by the deterministic solver; kept for the scikit-learn conventions.

    Attributes
    ----------
    space_ : the fitted output space
    coef_ : ndarray (n_features, p) (linear) or (n_samples, p) (kernel, the beta_j)
    intercept_ : ndarray (p,)
    objective_ : float
        The training objective at the fit.
    n_iter_ : int
    """

    _parameter_constraints = {
        "projection_set": _ProjectionSetOption(),
        "projection": Options(["euclidean", "kl"]),
        "model": Options(["linear", "kernel"]),
        "kernel": KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "lam": Interval(numbers.Real, 0.0, None, closed="neither"),
        "fit_intercept": Bool(),
        "max_iter": Interval(numbers.Integral, 1, None),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither"),
    }

    def __init__(self, output: str | OutputSpace = "multiclass", *,
                 projection_set: str = "marginal", projection: str = "euclidean",
                 model: str = "linear", kernel: str | Kernel = "gaussian",
                 sigma: float | str = "scale", lam: float = 1e-3, fit_intercept: bool = True,
                 max_iter: int = 1000, tol: float = 1e-6,
                 random_state: RandomStateLike = None) -> None:
        self.output = output
        self.projection_set = projection_set
        self.projection = projection
        self.model = model
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # ---- set-up ---------------------------------------------------------------------------
    def _space(self):
        """A fresh space (fit must not change the parameter) that declares projection sets."""
        out = self.output
        cls = output_spaces().get(out.lower()) if isinstance(out, str) else type(out)
        if not (isinstance(cls, type) and issubclass(cls, OutputSpace) and cls.projection_sets):
            raise ValueError(f"output must be one of {sorted(DISCRETE_SPACES)} or a discrete "
                             f"output space object (one that declares projection_sets), got "
                             f"{out!r}")
        return cls() if isinstance(out, str) else copy.deepcopy(out)

    def _set(self, space):
        """The projection set of the fitted space, on flattened scores."""
        name = self.projection_set.lower()
        if name not in space.projection_sets:
            raise ValueError(f"projection_set={self.projection_set!r} does not apply to output "
                             f"{space.name!r}; use one of {list(space.projection_sets)}")
        C = space.projection_sets[name](space)
        # the Birkhoff projections warm-start from the previous call's dual variables
        return _WarmBirkhoff(C) if isinstance(C, Birkhoff) else _Flat(C)

    def _features(self, X):
        if self.model == "linear":
            return X
        return self.kernel_(X, self.X_fit_)

    # ---- fit / predict --------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> FenchelYoungEstimator:
        """Minimize the regularized Fenchel-Young loss (L-BFGS, exact gradients).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : outputs in the space's format (labels; 0/1 rows; rankings)
        """
        validate_params(self)
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=2)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target "
                             "y is None (pass the outputs y)")
        y = np.asarray(y)
        if self._label_output() and y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected (class "
                          "labels of shape (n_samples,)); it is raveled",
                          DataConversionWarning, stacklevel=2)
            y = y.ravel()
        space = self._space().fit(y)
        Phi = space.embed(space.Y_train_)
        if Phi.shape[0] != X.shape[0]:
            raise ValueError(f"X and y must have the same number of samples, got "
                             f"{X.shape[0]} and {Phi.shape[0]}")
        C = self._set(space)
        self.space_ = space
        if hasattr(space, "classes_"):
            self.classes_ = space.classes_
        if self.model == "kernel":
            self.X_fit_ = X
            self.kernel_ = resolve_kernel(self.kernel, self.sigma, X)
            warn_feature_scales(self, self.kernel_, X)
            # RKHS-isometric coordinates: K = U diag(s) U^T, theta = K beta = F W with
            # F = U diag(sqrt s) and W = diag(sqrt s) U^T beta, so tr(beta^T K beta) =
            # ||W||^2: the kernel model is a ridge-linear model on F (well conditioned for
            # L-BFGS), and beta = U diag(s^-1/2) W (directions with s below 1e-12 max s,
            # numerically null, are dropped)
            s_, U = np.linalg.eigh(self.kernel_(X, X))
            keep = s_ > 1e-12 * max(float(s_[-1]), np.finfo(float).tiny)
            root = np.sqrt(s_[keep])
            F = U[:, keep] * root
        else:
            F = X
        n, q = F.shape
        p = Phi.shape[1]
        lam, proj, icpt = float(self.lam), self.projection, self.fit_intercept

        def fun(z):
            W = z[: q * p].reshape(q, p)
            c = z[q * p:] if icpt else np.zeros(p)
            theta = F @ W + c
            loss, G = fenchel_young_loss(theta, Phi, C, proj)
            pen, gpen = 0.5 * lam * np.sum(W * W), lam * W
            gW = F.T @ G / n + gpen
            grad = np.concatenate([gW.ravel(), G.mean(axis=0)]) if icpt else gW.ravel()
            return float(loss.mean() + pen), grad

        z0 = np.zeros(q * p + (p if icpt else 0))
        res = minimize(fun, z0, jac=True, method="L-BFGS-B",
                       options={"maxiter": int(self.max_iter), "gtol": float(self.tol),
                                "ftol": 0.0, "maxcor": 20})
        # certified by the gradient itself (L-BFGS-B may also stop on a line search that
        # cannot decrease a function already at rounding level: no warning then)
        gnorm = float(np.abs(res.jac).max())
        if gnorm > self.tol:
            advice = ("increase max_iter" if res.nit >= self.max_iter else
                      "the objective no longer decreases in float64 here: use tol >= "
                      f"{gnorm:.1e}")
            warnings.warn(
                f"L-BFGS stopped with gradient norm {gnorm:.2e} > tol {self.tol:g} after "
                f"{res.nit} iterations ({res.message}): {advice}",
                ConvergenceWarning, stacklevel=2,
            )
        self.coef_ = res.x[: q * p].reshape(q, p)
        if self.model == "kernel":
            self.coef_ = U[:, keep] @ (self.coef_ / root[:, None])
        self.intercept_ = res.x[q * p:] if icpt else np.zeros(p)
        self.objective_ = float(res.fun)
        self.n_iter_ = int(res.nit)
        self._C = C
        V, b, _ = space.affine_decomposition()
        self._V, self._b = np.asarray(V, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return self

    def scores(self, X: ArrayLike) -> np.ndarray:
        """Scores theta = g(x), shape ``(m, *polytope.shape)``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        theta = self._features(X) @ self.coef_ + self.intercept_
        return theta.reshape((-1,) + tuple(self.space_.polytope_.shape))

    def project(self, X: ArrayLike) -> np.ndarray:
        """The soft structures mu = P_C(g(x)) (e.g. soft permutation matrices)."""
        theta = self.scores(X)
        theta = theta.reshape(theta.shape[0], -1)
        f = self._C.project_kl if self.projection == "kl" else self._C.project_euclidean
        return f(theta).reshape((-1,) + tuple(self.space_.polytope_.shape))

    def decode(self, mu: ArrayLike) -> np.ndarray:
        r"""Calibrated decoding (eq. 11): :math:`\mathrm{MAP}(-(V\mu + b))` for a batch of
        (soft) structures ``mu`` of shape ``(m, *polytope.shape)``."""
        check_is_fitted(self, "coef_")
        shape = tuple(self.space_.polytope_.shape)
        mu = np.asarray(mu, dtype=np.float64).reshape(-1, int(np.prod(shape)))
        theta = -(mu @ self._V.T + self._b)
        M = self.space_.polytope_.map_oracle(theta.reshape((-1,) + shape))
        return self.space_.from_vertices(M)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Calibrated decoding of the projected scores."""
        return self.decode(self.project(X))

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """The output space's score (accuracy for multiclass, minus the mean loss else)."""
        space, P = self.space_, self.predict(X)
        if hasattr(space, "score"):  # optional in the OutputSpace contract
            return space.score(np.asarray(y), P)
        return -float(np.mean(space.loss(np.asarray(y), P)))

    # ---- persistence: the saved file (psdsos.load); d = n_features_in_, p the encoding's
    # size, n training outputs ------------------------------------------------------------
    _saved_fitted_attr = "coef_"
    _fitted_arrays = {
        "coef": SavedArray(lambda meta: ("n", "p") if meta["params"].get("model") == "kernel"
                           else ("d", "p")),
        "intercept": SavedArray(("p",)),
        "Y_train": SavedArray(("n", ...), attr="", labels=True),
        "X_fit": SavedArray(("n", "d"), when=lambda meta: meta["params"].get("model") == "kernel"),
    }
    _fitted_scalars = {"n_features_in_": "posint", "objective_": "real*", "n_iter_": "int",
                       "kernel_": SavedScalar(("dict", None), "")}
    _saved_meta = {"output_space": {"name": "str", "config": "any"}}
    _saved_dims = {"d": "fitted.n_features_in_"}

    def save(self, path: PathLike) -> None:
        """Save the fitted estimator (.npz + JSON metadata, loaded without pickle)."""
        self._save(path)

    def _saved_param_values(self):
        return {"output": self.space_.name}

    def _saved_extra(self):
        space = self.space_
        return {"Y_train": space.Y_train_}, {
            "output_space": {"name": space.name, "config": space.to_config()},
            "fitted": {"kernel_": ({"name": self.kernel_.name, "sigma": float(self.kernel_.sigma)}
                                   if self.model == "kernel" else None)},
        }

    @classmethod
    def _saved_spec(cls, spec, symbols, meta, source):
        name = meta["output_space"]["name"]
        if name not in DISCRETE_SPACES:
            raise ValueError(f"metadata entry 'output_space' of {source} must name a discrete "
                             f"output space ({sorted(DISCRETE_SPACES)}), got {name!r}")
        return spec, symbols

    def _restore_saved(self, arrays, meta, source):
        sp = meta["output_space"]
        space = DISCRETE_SPACES[sp["name"]].from_config(sp["config"])
        try:
            space.fit(arrays["Y_train"])
        except ValueError as exc:
            raise ValueError(f"array 'Y_train' of {source} is not a valid training output of "
                             f"the space {sp['name']!r}: {exc}") from None
        p = int(np.prod(space.polytope_.shape))
        if self.coef_.shape[1] != p:
            raise ValueError(f"array 'coef' of {source} must have {p} columns (the "
                             f"{sp['name']} encoding), got {self.coef_.shape[1]}")
        self.space_ = space
        if hasattr(space, "classes_"):
            self.classes_ = space.classes_
        if self.model == "kernel":
            k = meta["fitted"]["kernel_"]
            if k is None:
                raise ValueError(f"metadata entry 'fitted.kernel_' of {source} is missing for "
                                 "model='kernel'")
            self.kernel_ = get_kernel(k["name"], k["sigma"])
        else:
            self.__dict__.pop("X_fit_", None)
        self._C = self._set(space)
        V, b, _ = space.affine_decomposition()
        self._V, self._b = np.asarray(V, dtype=np.float64), np.asarray(b, dtype=np.float64)
