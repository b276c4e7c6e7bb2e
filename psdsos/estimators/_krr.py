r"""Kernel ridge regression in the PSD paper's parametrization (the unconstrained baseline).

A thin wrapper around :class:`sklearn.kernel_ridge.KernelRidge` (which does the solving):
it only translates the paper's weights into scikit-learn's and, optionally, adds the same
unpenalized affine part as :class:`psdsos.ConvexRegressor`, so that the two estimators
differ in the convexity constraint only.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.validation import check_is_fitted

from psdsos._params import (
    KERNEL_OPTIONS,
    Bandwidth,
    Bool,
    Interval,
    resolve_kernel,
    validate_params,
    warn_feature_scales,
)
from psdsos._validation import FloatArray, validate_data
from psdsos.estimators._weights import check_sample_weight
from psdsos.kernels import Kernel

__all__ = ["KernelRidgeRegressor"]


class KernelRidgeRegressor(RegressorMixin, BaseEstimator):
    r"""Kernel ridge regression with the weights of the PSD paper (section 6.1, Figure 3).

    .. math::

        \min_{\alpha\in\mathbb R^n,\ c,\ w}\ \frac1n\sum_{i=1}^n (y_i - f(x_i))^2
            + \rho\,\alpha^T\mathbf K\alpha,
        \qquad f(x) = c + w^T x + \sum_{i=1}^n \alpha_i k(x, x_i),

    i.e. the objective of :class:`psdsos.ConvexRegressor` (eq. 28) without the Hessian
    constraint and without :math:`\mathbf B`.  The solving is left to scikit-learn's
    :class:`~sklearn.kernel_ridge.KernelRidge`; the mapping of the parameters is

    .. math::

        \texttt{KernelRidge}(\texttt{alpha} = n\rho,\ \texttt{kernel="rbf"},\
            \texttt{gamma} = 1 / (2\sigma^2))

    for the Gaussian kernel :math:`k(x, y) = \exp(-\|x - y\|^2 / (2\sigma^2))` (other
    kernels: ``kernel="precomputed"`` on psdsos Gram matrices), since the stationarity
    condition of the objective above is :math:`\alpha = (\mathbf K + n\rho\mathbf I)^{-1}
    (y - E\beta)` with :math:`E = [\mathbf 1, X]` and :math:`\beta = (c, w)`.

    With ``fit_intercept=False`` there is no affine part and the estimator *is*
    ``KernelRidge(alpha=n * rho, ...)`` (same coefficients, same predictions).  With
    ``fit_intercept=True`` (default) the unpenalized affine part is solved exactly: one
    multi-output ``KernelRidge`` fit of :math:`[y, E]` gives :math:`W y` and :math:`W E`,
    :math:`W = (\mathbf K + n\rho\mathbf I)^{-1}`, then
    :math:`\beta = (E^T W E)^{-1} E^T W y` and :math:`\alpha = W y - W E \beta`.

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52"} or Kernel, default="gaussian"
        ``"rbf"`` (scikit-learn's name) is accepted for ``"gaussian"``.
    sigma : "scale" or float, default="scale"
        Bandwidth :math:`\sigma > 0` (ignored for a Kernel object, which carries its own);
        "scale": :func:`psdsos.kernels.scale_bandwidth` of the training inputs,
        sqrt(n_features * X.var() / 2).  The value used is ``kernel_.sigma``.
    rho : float, default=1e-4
        Ridge weight :math:`\rho \ge 0` on :math:`\|f\|_{\mathcal H}^2 = \alpha^T\mathbf K
        \alpha` (the same ``rho`` as :class:`psdsos.ConvexRegressor`).
    fit_intercept : bool, default=True
        Add the unpenalized affine part :math:`c + w^T x` (as ``ConvexRegressor``).

    Attributes
    ----------
    estimator_ : sklearn.kernel_ridge.KernelRidge
        The fitted scikit-learn estimator (multi-output on :math:`[y, E]` when
        ``fit_intercept=True``).
    alpha_ : ndarray of shape (n_samples,)
        Kernel coefficients :math:`\alpha`.
    intercept_ : float
    coef_ : ndarray of shape (n_features,)
        :math:`c` and :math:`w` (0 and zeros with ``fit_intercept=False``).
    kernel_ : Kernel
    X_fit_ : ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.kernel_ridge import KernelRidge
    >>> from psdsos.estimators import KernelRidgeRegressor
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.uniform(-1, 1, (30, 2)), rng.standard_normal(30)
    >>> ours = KernelRidgeRegressor(sigma=0.5, rho=1e-2, fit_intercept=False).fit(X, y)
    >>> ref = KernelRidge(alpha=30 * 1e-2, kernel="rbf", gamma=1 / (2 * 0.5**2)).fit(X, y)
    >>> bool(np.allclose(ours.predict(X), ref.predict(X)))
    True
    """

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "rho": Interval(numbers.Real, 0.0, None),
        "fit_intercept": Bool(),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 rho: float = 1e-4, fit_intercept: bool = True) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.rho = rho
        self.fit_intercept = fit_intercept

    def _gram(self, X):
        """Input of ``estimator_``: X itself (Gaussian, sklearn's "rbf") or k(X, X_fit_)."""
        return X if self.estimator_.kernel == "rbf" else self.kernel_(X, self.X_fit_)

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> KernelRidgeRegressor:
        """Fit f to (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights: the objective becomes
            sum_i w_i (y_i - f(x_i))^2 / sum_i w_i + rho alpha^T K alpha, i.e.
            ``KernelRidge(alpha = rho * sum(w))`` fitted with
            ``sample_weight=w`` (integer weights = duplicated rows; rows of weight 0 are
            dropped; scaling all the weights changes nothing; ``sigma="scale"`` uses the
            weighted variance).
        """
        validate_params(self)
        X, y = validate_data(self, X, y, reset=True, dtype=np.float64, y_numeric=True)
        X, y, w = check_sample_weight(sample_weight, X, y)
        n, p = X.shape
        kernel = resolve_kernel(self.kernel, self.sigma, X, w)
        warn_feature_scales(self, kernel, X)
        self.kernel_, self.X_fit_ = kernel, X
        # the data term's weights sum to n (unweighted) or sum(w); KernelRidge's to sum(w)
        reg = n * self.rho if w is None else float(np.sum(w)) * self.rho
        if not isinstance(self.kernel, Kernel) and kernel.name == "gaussian":  # or "rbf"
            krr, Xin = KernelRidge(alpha=reg, kernel="rbf",
                                   gamma=1.0 / (2.0 * kernel.sigma**2)), X
        else:
            krr, Xin = KernelRidge(alpha=reg, kernel="precomputed"), kernel(X, X)
        if not self.fit_intercept:
            self.estimator_ = krr.fit(Xin, y, sample_weight=w)
            self.alpha_ = np.asarray(krr.dual_coef_, dtype=np.float64).ravel()
            self.intercept_, self.coef_ = 0.0, np.zeros(p)
            self._beta = None
            return self
        E = np.hstack([np.ones((n, 1)), X])
        # with weights W = (K + reg diag(w)^-1)^-1 (scikit-learn's weighted solve); the
        # reduced objective in beta is still (y - E beta)^T W (y - E beta)
        self.estimator_ = krr.fit(Xin, np.column_stack([y, E]), sample_weight=w)
        A = np.asarray(krr.dual_coef_, dtype=np.float64)  # [W y, W E]
        Wy, WE = A[:, 0], A[:, 1:]
        beta = np.linalg.lstsq(E.T @ WE, E.T @ Wy, rcond=None)[0]
        self._beta = beta
        self.alpha_ = Wy - WE @ beta
        self.intercept_, self.coef_ = float(beta[0]), np.asarray(beta[1:], dtype=np.float64)
        return self

    def predict(self, X: ArrayLike) -> FloatArray:
        """f(x) = c + w^T x + sum_i alpha_i k(x, x_i), through ``estimator_.predict``."""
        check_is_fitted(self, "alpha_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        P = self.estimator_.predict(self._gram(X))
        if self._beta is None:
            return np.asarray(P, dtype=np.float64).ravel()
        E = np.hstack([np.ones((X.shape[0], 1)), X])
        return P[:, 0] + (E - P[:, 1:]) @ self._beta
