r"""Convex (or concave) regression with subsampled SoS Hessian constraints (PSD paper, sec. 5-6)."""

from __future__ import annotations

import numbers

import numpy as np
from scipy.stats import qmc
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from psdsos._validation import check_array_2d, check_random_state
from psdsos.estimators._base import (
    KERNEL_OPTIONS,
    Bool,
    Interval,
    Options,
    RandomState,
    Verbose,
    register_loadable,
    save_estimator,
    validate_params,
)
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.features._features import _greedy_pivots
from psdsos.kernels import get_kernel
from psdsos.solvers import PRIMAL_SOLVERS, solve_dual, solve_primal
from psdsos.sos import (
    ConvexRegressionExactProblem,
    ConvexRegressionProblem,
    exact_gradient,
    exact_hessian,
    exact_value,
    project_psd,
)

__all__ = ["ConvexRegressor"]


class _ConstraintPoints:
    def check(self, name, value, owner):
        if value is None:
            return
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
            return
        if isinstance(value, str) and value == "train":
            return
        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            return
        raise ValueError(
            f"{name} of {owner} must be None or 'train' (the training points), a positive int "
            f"(Sobol points in the data's bounding box) or an array (m, n_features), got {value!r}"
        )


#: Largest number of constraint points the default (``constraint_points=None``) uses with
#: exact features; with Nystrom features of rank r it uses 2 r (see ConvexRegressor).
AUTO_CONSTRAINT_POINTS = 100
#: The default stops choosing constraint points once every other training point's residual
#: kernel variance is below this fraction of k(x, x) (greedy pivoted Cholesky).
AUTO_PIVOT_RTOL = 1e-6
#: The default also offers the 2^d corners of the data's bounding box to the pivoting when
#: n >= m_auto and 2^d <= this fraction of its m_auto points (d <= 5 with exact features):
#: a fit constrained at training points only was non-convex near the box's faces and
#: corners, where training points are sparse (relative deficit ~0.5 in d = 3-5, 0 with the
#: corners; measured in benchmarks/convex_regression.py).
AUTO_CORNER_FRACTION = 0.5


def sobol_points(lo, hi, n_points, random_state):
    """Scrambled Sobol points in the box [lo, hi] (seeded)."""
    rng = check_random_state(random_state)
    sampler = qmc.Sobol(d=len(lo), scramble=True, seed=rng)
    m = int(n_points)
    U = sampler.random_base2(int(np.ceil(np.log2(max(m, 2)))))[:m]
    return qmc.scale(U, lo, hi) if np.all(hi > lo) else lo + U * (hi - lo)


@register_loadable
class ConvexRegressor(RegressorMixin, BaseEstimator):
    r"""Smooth convex regression with a kernel SoS Hessian constraint (eq. 28).

    .. math::

        \min_{\alpha, c, w, \mathbf B\succeq 0}\ \frac1n\sum_i (y_i - f(x_i))^2
          + \rho\,\alpha^T\mathbf K\alpha + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad \nabla^2 f(z_j) = \Psi_j^T\mathbf B\Psi_j,\ j\in[m],

    with :math:`f(x) = c + w^T x + \sum_i \alpha_i k(x, x_i)` (the affine part is
    unpenalized and leaves the Hessian unchanged; ``fit_intercept=False`` removes it and the
    objective is exactly eq. 28).  The Hessian is PSD at the constraint points z_j by
    construction; between them, Corollary 7 bounds the convexity deficit, estimated by
    :meth:`convexity_deficit`.

    Parameters
    ----------
    kernel : {"gaussian", "matern32", "matern52"} or Kernel, default="gaussian"
        Must be twice differentiable (the exponential kernel is refused).
    sigma : float, default=1.0
    rho : float, default=1e-4
        Ridge weight on ||f||_H^2 = alpha^T K alpha (> 0 for the dual solver).
    lam1, lam2 : float, default=0.0, 1e-3
    solver : {"dual", "primal"}, default="dual"
    primal_solver : {"SCS", "CLARABEL"}, default="SCS"
    representation : {"approx", "exact"}, default="approx"
        "approx": f = sum_i alpha_i k(., x_i), Hessians from the kernel's second
        derivatives (eq. 23, 28).  "exact": f also expands on the second-derivative
        representers, f = sum_i alpha_i k(., x_i) + sum_j sum_pq gamma_j[p, q]
        d_pq k(., z_j) (eq. 21, 37, Proposition 17); needs a four times differentiable
        kernel ("gaussian", "matern52"), fourth-order kernel derivatives and m d (d + 1) / 2
        extra coefficients (see :class:`psdsos.sos.ConvexRegressionExactProblem`).
    constraint_points : None, "train", int or array of shape (m, n_features)
        Where the Hessian constraint is imposed: ``"train"``: the training points (eq. 19,
        28); an int: that many scrambled Sobol points in the data's bounding box (seeded);
        or given points.  ``None`` (default): points chosen by greedy pivoted Cholesky of
        the kernel (spread out, kernel matrix well conditioned) among the training points
        and, when n >= m_auto and 2^d <= m_auto / 2 (d <= 5 with exact features), the 2^d
        corners of the data's bounding box (where the Hessian is otherwise least
        controlled), at most m_auto of them (100 with exact features, 2 * n_landmarks with
        Nystrom features), stopping once every other candidate's residual kernel variance
        is below 1e-6 k(x, x); all the training points when none is that redundant and no
        corner is offered.  With more, or nearly dependent, points the constrained problem
        is close to having no strictly feasible point and the dual crawls or diverges
        (measured: docs/convex-regression.md, "Constraint points"); ``"train"`` keeps the
        paper's choice whatever n.
    n_landmarks : int or None
        Nystrom rank of the SoS features Psi (the paper uses 25 when n > 25); the
        landmarks are drawn among the constraint points.  With the default constraint
        points, a rank >= their number means exact features on them.
    fit_intercept : bool, default=True
    concave : bool, default=False
        Fit a concave function (the negation of the convex fit to -y).
    tol, max_iter, warm_start, random_state, verbose
        As in :class:`PSDRegressor`; the dual stops when both the relative duality gap and
        the relative Hessian-constraint residual are <= tol.

    Attributes
    ----------
    alpha_ : ndarray (n,)
    gamma_ : ndarray (m, n_features, n_features)
        Only with representation="exact": the symmetric coefficients of the
        second-derivative representers at ``constraint_points_``.
    intercept_ : float
    coef_ : ndarray (n_features,)
    X_fit_ : ndarray (n, n_features)
    B_ : ndarray (r d, r d)
    constraint_points_ : ndarray (m, n_features)
    objective_, n_iter_, dual_gap_, constraint_residual_ : float / int
    """

    _parameter_constraints = {
        "kernel": KERNEL_OPTIONS,
        "sigma": Interval(numbers.Real, 0.0, None, closed="neither"),
        "rho": Interval(numbers.Real, 0.0, None),
        "lam1": Interval(numbers.Real, 0.0, None),
        "lam2": Interval(numbers.Real, 0.0, None),
        "solver": Options(["dual", "primal"]),
        "primal_solver": Options(PRIMAL_SOLVERS),
        "representation": Options(["approx", "exact"]),
        "constraint_points": _ConstraintPoints(),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "fit_intercept": Bool(),
        "concave": Bool(),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither"),
        "max_iter": Interval(numbers.Integral, 1, None),
        "warm_start": Bool(),
        "random_state": RandomState(),
        "verbose": Verbose(),
    }

    def __init__(self, kernel="gaussian", sigma=1.0, *, rho=1e-4, lam1=0.0, lam2=1e-3,
                 solver="dual", primal_solver="SCS", representation="approx",
                 constraint_points=None, n_landmarks=None, fit_intercept=True, concave=False,
                 tol=1e-6, max_iter=20000, warm_start=False, random_state=None, verbose=False):
        self.kernel = kernel
        self.sigma = sigma
        self.rho = rho
        self.lam1 = lam1
        self.lam2 = lam2
        self.solver = solver
        self.primal_solver = primal_solver
        self.representation = representation
        self.constraint_points = constraint_points
        self.n_landmarks = n_landmarks
        self.fit_intercept = fit_intercept
        self.concave = concave
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def _sign(self):
        return -1.0 if self.concave else 1.0

    def _constraint_points(self, X, kernel=None):
        cp_ = self.constraint_points
        if cp_ is None:
            m_auto = AUTO_CONSTRAINT_POINTS if self.n_landmarks is None else 2 * self.n_landmarks
            if kernel is None:
                kernel = get_kernel(self.kernel, self.sigma)
            cand = X
            p = X.shape[1]
            if X.shape[0] >= m_auto and 2**p <= AUTO_CORNER_FRACTION * m_auto:
                lo, hi = X.min(axis=0), X.max(axis=0)
                bits = (np.arange(2**p)[:, None] >> np.arange(p)) & 1
                corners = np.unique(np.where(bits == 1, hi, lo), axis=0)
                new = ~(corners[:, None, :] == X[None, :, :]).all(axis=2).any(axis=1)
                cand = np.vstack([X, corners[new]])
            idx = _greedy_pivots(kernel, cand, min(cand.shape[0], m_auto),
                                 check_random_state(self.random_state), rtol=AUTO_PIVOT_RTOL)
            return X if len(idx) == cand.shape[0] == X.shape[0] else cand[idx]
        if isinstance(cp_, str) and cp_ == "train":
            return X
        if isinstance(cp_, numbers.Integral):
            return sobol_points(X.min(axis=0), X.max(axis=0), cp_, self.random_state)
        Z = check_array_2d(cp_, "constraint_points")
        if Z.shape[1] != X.shape[1]:
            raise ValueError(
                f"constraint_points must have {X.shape[1]} columns (n_features), got {Z.shape[1]}"
            )
        return Z

    def fit(self, X, y):
        """Fit f to (X, y) under the sampled Hessian constraint.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples >= 2
        y : array-like of shape (n_samples,)
        """
        validate_params(self)
        y_kind = getattr(np.asarray(y) if y is not None else None, "dtype", None)
        if y_kind is not None and y_kind.kind in "USVM":
            raise ValueError(f"y must be numeric (real targets), got dtype {y_kind}")
        X, y = validate_data(self, X, y, reset=True, dtype=np.float64, ensure_min_samples=2,
                             y_numeric=True)
        kernel = get_kernel(self.kernel, self.sigma)
        if kernel.differentiability < 2:
            raise ValueError(
                f"kernel {kernel.name!r} is not twice differentiable; convex regression needs "
                "Hessians: use 'gaussian', 'matern32' or 'matern52'"
            )
        if self.solver == "dual" and self.lam2 == 0:
            raise ValueError("lam2 = 0 is not supported by solver='dual'; use solver='primal'")
        if self.solver == "dual" and self.rho == 0:
            raise ValueError("rho = 0 is not supported by solver='dual'; use solver='primal'")
        n = X.shape[0]
        Z = self._constraint_points(X, kernel)
        rank = self.n_landmarks
        if self.constraint_points is None and rank is not None and rank >= Z.shape[0]:
            rank = None  # the default chose fewer points than the rank: exact on them
        if rank is None:
            features = ExactFeatures(kernel).fit(Z)
        else:
            if rank > Z.shape[0]:
                raise ValueError(
                    f"n_landmarks must be <= the number of constraint points {Z.shape[0]}, "
                    f"got {rank}"
                )
            features = NystromFeatures(kernel, n_landmarks=rank,
                                       random_state=self.random_state).fit(Z)
        Phi = features.transform(Z)
        if self.representation == "exact":
            return self._fit_exact(kernel, features, X, y, Z, Phi)
        K = kernel(X, X)
        Hk = kernel.hessian(Z, X)
        E = np.hstack([np.ones((n, 1)), X]) if self.fit_intercept else None
        s = self._sign()
        problem = ConvexRegressionProblem(K, Hk, Phi, s * y, E, self.rho, self.lam1, self.lam2)
        alpha, beta, B = self._solve(problem, Z, ("alpha", "beta"))
        self.__dict__.pop("gamma_", None)  # no stale exact-representation coefficients
        self._set_fitted(kernel, features, X, Z, alpha, beta, B)
        self.objective_ = float(problem.objective(alpha, beta, B))
        self.constraint_residual_ = float(problem.constraint_residual(alpha, B))
        return self

    def _solve(self, problem, Z, keys):
        """Run the dual or the primal on ``problem``; return (*coefficients, B) with the
        coefficients named by ``keys`` (as ``problem.recover`` orders them); sets
        dual_coef_, dual_gap_ and n_iter_."""
        p = Z.shape[1]
        if self.solver == "dual":
            init = None
            if (self.warm_start and getattr(self, "dual_coef_", None) is not None
                    and self.dual_coef_.shape == (Z.shape[0], p, p)):
                init = self.dual_coef_
            res = solve_dual(problem, tol=self.tol, max_iter=self.max_iter, init=init,
                             verbose=self.verbose)
            coefs = problem.recover(res.G)
            B = res.B
            self.dual_coef_ = res.G
            self.dual_gap_ = float(res.dual_gap)
        else:
            res = solve_primal(problem, solver=self.primal_solver.upper(), tol=self.tol,
                               max_iter=self.max_iter, verbose=bool(self.verbose))
            coefs = tuple(res.extras[k] for k in keys)
            B = project_psd(res.B)
            self.__dict__.pop("dual_coef_", None)  # no stale dual variable from a dual fit
            self.dual_gap_ = float("nan")
        self.n_iter_ = int(res.n_iter)
        return (*coefs, B)

    def _set_fitted(self, kernel, features, X, Z, alpha, beta, B):
        self.kernel_ = kernel
        self.features_ = features
        self.X_fit_ = X
        self.constraint_points_ = Z
        self.alpha_ = alpha
        self.B_ = B
        if self.fit_intercept:
            self.intercept_ = float(beta[0])
            self.coef_ = np.asarray(beta[1:], dtype=np.float64)
        else:
            self.intercept_ = 0.0
            self.coef_ = np.zeros(X.shape[1])

    def _fit_exact(self, kernel, features, X, y, Z, Phi):
        """representation="exact": eq. (37) in the primal or its dual (Proposition 17)."""
        if kernel.differentiability < 4:
            raise ValueError(
                f"kernel {kernel.name!r} is not four times differentiable; "
                "representation='exact' needs fourth-order kernel derivatives (eq. 37): use "
                "'gaussian' or 'matern52', or representation='approx'"
            )
        n = X.shape[0]
        E = np.hstack([np.ones((n, 1)), X]) if self.fit_intercept else None
        problem = ConvexRegressionExactProblem(kernel, X, Z, Phi, self._sign() * y, E,
                                               self.rho, self.lam1, self.lam2)
        alpha, gamma, beta, B = self._solve(problem, Z, ("alpha", "gamma", "beta"))
        self._set_fitted(kernel, features, X, Z, alpha, beta, B)
        self.gamma_ = gamma
        self.objective_ = float(problem.objective(alpha, gamma, beta, B))
        self.constraint_residual_ = float(problem.constraint_residual(alpha, gamma, B))
        return self

    # ---- the fitted function ----------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self, "alpha_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _exact_args(self, X):
        """Arguments of psdsos.sos.exact_* when fitted with representation="exact", else None."""
        if getattr(self, "gamma_", None) is None:
            return None
        return self.kernel_, self.X_fit_, self.constraint_points_, self.alpha_, self.gamma_, X

    def predict(self, X):
        """f(x) = c + w^T x + sum_i alpha_i k(x, x_i) (negated when concave).

        With representation="exact", plus sum_j sum_pq gamma_j[p, q] d_pq k(z_j, x) (eq. 21).
        """
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            return self._sign() * (self.intercept_ + X @ self.coef_ + exact_value(*args))
        f = self.intercept_ + X @ self.coef_ + self.kernel_(X, self.X_fit_) @ self.alpha_
        return self._sign() * f

    def gradient(self, X):
        """Gradient of f, shape (m, n_features)."""
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            return self._sign() * (self.coef_ + exact_gradient(*args))
        g = self.coef_ + np.einsum("mip,i->mp", self.kernel_.gradient(X, self.X_fit_),
                                   self.alpha_)
        return self._sign() * g

    def hessian(self, X):
        """Hessian of f, shape (m, n_features, n_features)."""
        X = self._check_X(X)
        args = self._exact_args(X)
        if args is not None:
            return self._sign() * exact_hessian(*args)
        H = np.einsum("mipq,i->mpq", self.kernel_.hessian(X, self.X_fit_), self.alpha_)
        return self._sign() * 0.5 * (H + H.transpose(0, 2, 1))

    def convexity_deficit(self, X=None, *, n_points=4096, random_state=0):
        r"""Estimate :math:`\eta = \max(0, -\min_x \lambda_{\min}(\nabla^2 f(x)))` (Corollary 7).

        Over the rows of ``X`` or, by default, ``n_points`` scrambled Sobol points in the
        bounding box of the training data (seeded).  For ``concave=True`` the deficit of
        concavity (of -f) is returned.  f + eta/2 ||x||^2 is then convex on those points
        (:meth:`predict_convexified`).
        """
        check_is_fitted(self, "alpha_")
        if X is None:
            X = sobol_points(self.X_fit_.min(axis=0), self.X_fit_.max(axis=0), n_points,
                             random_state)
        H = self._sign() * self.hessian(X)
        lmin = float(np.linalg.eigvalsh(H)[:, 0].min())
        return max(0.0, -lmin)

    def predict_convexified(self, X, eta=None):
        """f(x) + eta/2 ||x||^2 (f - eta/2 ||x||^2 when concave); eta from convexity_deficit."""
        if eta is None:
            eta = self.convexity_deficit()
        X = self._check_X(X)
        return self.predict(X) + self._sign() * 0.5 * eta * np.sum(X * X, axis=1)

    # ---- persistence ------------------------------------------------------------------------
    def save(self, path, *, metadata=None):
        """Save to ``path`` (.npz + JSON metadata; never pickle).

        ``metadata``: optional JSON-able dict stored alongside (e.g. column names); its keys
        must not be the file's own ("type", "params", "fitted", ...).
        """
        check_is_fitted(self, "alpha_")
        arrays = {"alpha": self.alpha_, "coef": self.coef_, "X_fit": self.X_fit_,
                  "B": self.B_, "constraint_points": self.constraint_points_}
        if getattr(self, "gamma_", None) is not None:
            arrays["gamma"] = self.gamma_
        cp_ = self.constraint_points
        extra = {"fitted": {"intercept_": self.intercept_, "objective_": self.objective_,
                            "n_iter_": self.n_iter_, "dual_gap_": self.dual_gap_,
                            "constraint_residual_": self.constraint_residual_,
                            "kernel": self.kernel_.name, "sigma": float(self.kernel_.sigma)}}
        if metadata:
            reserved = {"type", "params", "fitted", "format_version", "library"}
            clash = reserved.intersection(metadata)
            if clash:
                raise ValueError(f"metadata must not use the reserved keys {sorted(clash)}")
            extra.update(metadata)
        est = self
        if cp_ is not None and not isinstance(cp_, (numbers.Integral, str)):
            est = self.__class__(**{**self.get_params(deep=False), "constraint_points": None})
        save_estimator(est, path, arrays, extra)

    @classmethod
    def _from_saved(cls, arrays, meta):
        est = cls(**meta["params"])
        f = meta["fitted"]
        est.kernel_ = get_kernel(f["kernel"], f["sigma"])
        est.alpha_ = arrays["alpha"]
        est.coef_ = arrays["coef"]
        est.X_fit_ = arrays["X_fit"]
        est.B_ = arrays["B"]
        est.constraint_points_ = arrays["constraint_points"]
        if "gamma" in arrays:
            est.gamma_ = arrays["gamma"]
        est.intercept_ = f["intercept_"]
        est.objective_ = f["objective_"]
        est.n_iter_ = f["n_iter_"]
        est.dual_gap_ = f["dual_gap_"]
        est.constraint_residual_ = f["constraint_residual_"]
        est.n_features_in_ = est.X_fit_.shape[1]
        return est
