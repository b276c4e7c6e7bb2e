r"""The Euclidean output space (squared loss), optionally restricted to a convex set.

For the squared loss :math:`\Delta(y, y') = \|y - y'\|^2` the SELF decoding (manifold
paper, eq. 2) needs a decision about the weights, because

.. math::

    \sum_i \alpha_i \|y - y_i\|^2
      = \Big(\sum_i \alpha_i\Big) \|y\|^2 - 2 \Big\langle y, \sum_i \alpha_i y_i \Big\rangle
        + \text{const}

is minimized by the weighted mean :math:`\sum_i \alpha_i y_i / \sum_i \alpha_i` only when
:math:`\sum_i \alpha_i > 0` (and is unbounded below otherwise).  The loss is SELF (eq. 4) with
:math:`\psi(y) = (y, \|y\|^2, 1)`: SELF estimates the conditional mean of each component of
:math:`\psi` by kernel ridge regression (eq. 9), and the component that multiplies
:math:`\|y\|^2` is the conditional mean of the constant 1, which is known exactly.  Using that
exact value gives

.. math::

    \hat f(x) = \operatorname*{argmin}_{y \in \mathcal C} \|y\|^2 - 2\Big\langle y,
        \sum_i \alpha_i(x) y_i\Big\rangle
      = \Pi_{\mathcal C}\Big(\sum_i \alpha_i(x)\, y_i\Big),

i.e. kernel ridge regression (the literature's SELF estimator for the squared loss) followed
by the Euclidean projection onto the constraint set :math:`\mathcal C`.  This is what
:class:`EuclideanSpace` decodes: it is linear in alpha, defined for every sign pattern of the
weights (no negative-weight policy needed) and a convex problem for every convex
:math:`\mathcal C`.

Centred targets (``center=True``; the default, ``False``, is the papers' estimator and
scikit-learn's ``KernelRidge``).  Kernel ridge without an intercept shrinks
its predictions towards 0 (far from the data, or with a large lam, it predicts 0 whatever
the targets), which is not what users of a regressor expect; the conditional mean of
:math:`\psi(y)` is estimated instead on the centred targets :math:`y_i - \bar y`,
:math:`\bar y = \frac1n \sum_i y_i`:

.. math::

    \hat f(x) = \Pi_{\mathcal C}\Big(\bar y + \sum_i \alpha_i(x)\,(y_i - \bar y)\Big)
    = \Pi_{\mathcal C}\Big(\sum_i \alpha_i(x)\, y_i
      + \big(1 - \textstyle\sum_i \alpha_i(x)\big)\,\bar y\Big),

kernel ridge regression on centred targets plus the mean (sklearn's ``KernelRidge`` fitted on
:math:`y_i - \bar y`, plus :math:`\bar y`), which shrinks towards :math:`\bar y` instead.
It is the SELF estimator with the estimate :math:`\sum_i \alpha_i(x)(y_i - \bar y) + \bar y`
of the conditional mean of y; :math:`\bar y \in \mathcal C` for a convex
:math:`\mathcal C` (the training outputs lie in it).  ``center=False``: the uncentred
:math:`\Pi_{\mathcal C}(\sum_i \alpha_i(x) y_i)` of the papers.  Only this space is
centred: the other output spaces decode an argmin over the space, whose weighted objective
has no such offset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos.sos import project_psd
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite, check_float, solve_parametric
from psdsos.structured._plugins import register_output_space
from psdsos.structured.polytopes import project_box, project_simplex

if TYPE_CHECKING:
    import cvxpy as cp

__all__ = ["EuclideanSpace", "project_psd_cone"]


# --------------------------------------------------------------------------------------
# closed-form projection onto the PSD cone (project_box and project_simplex:
# psdsos.structured.polytopes)
# --------------------------------------------------------------------------------------
def project_psd_cone(S: ArrayLike, floor: float = 0.0) -> NDArray[np.float64]:
    r"""Projection of symmetric matrices onto :math:`\{Y \succeq \text{floor}\cdot I\}`.

    .. math::

        \Pi(S) = V \operatorname{diag}(\max(\lambda, \text{floor})) V^\top,
        \qquad \operatorname{sym}(S) = V \operatorname{diag}(\lambda) V^\top,

    the Frobenius projection (eigenvalue clipping) of the symmetric part of ``S``.

    Parameters
    ----------
    S : array-like of shape (..., d, d)
    floor : float, default=0.0
        Smallest eigenvalue kept (the manifold paper's KRLS baseline uses 1e-12).

    Returns
    -------
    ndarray of shape (..., d, d), symmetric.
    """
    S = as_finite(S, "S")
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"S must have shape (..., d, d), got {S.shape}")
    return project_psd(S, floor)


# --------------------------------------------------------------------------------------
@register_output_space("euclidean")
class EuclideanSpace(OutputSpace):
    r"""Vectors with the squared loss, optionally constrained to a convex set.

    .. math::

        \Delta(y, y') = \|y - y'\|_2^2, \qquad
        \hat f(x) = \Pi_{\mathcal C}\Big(\sum_{i=1}^n \alpha_i(x)\, y_i\Big)
        = \operatorname*{argmin}_{y \in \mathcal C}\ \Big\|y - \sum_i \alpha_i(x) y_i\Big\|^2,

    the SELF estimator of the squared loss (see the module docstring: the coefficient of
    :math:`\|y\|^2` in eq. 2 is the conditional mean of 1, taken exactly), i.e. kernel ridge
    regression projected onto :math:`\mathcal C`; with ``center=True`` on centred targets,
    :math:`\Pi_{\mathcal C}(\bar y + \sum_i \alpha_i(x)(y_i - \bar y))` with
    :math:`\bar y` the mean of the training outputs.

    Negative-weight policy: none needed.  The decoding is affine in alpha before the
    projection, so signed weights and weights that do not sum to one are used as they are
    (the same prediction as kernel ridge regression, eq. 9; on centred targets with
    ``center=True``).

    Parameters
    ----------
    constraint : {None, "box", "simplex", "psd"}, default=None
        ``None``: :math:`\mathcal C = \mathbb R^k` (decoding = kernel ridge, closed form).
        ``"box"``: :math:`[lo, hi]^k`.  ``"simplex"``: the probability simplex.
        ``"psd"``: the PSD cone; outputs are symmetric d x d matrices given either as
        (n, d, d) or row-vectorized as (n, d*d) -- predictions come back in the same format.
    lo, hi : float, default=0.0, 1.0
        Bounds of the box (used only with ``constraint="box"``).
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        CVXPY solver of the "cvxpy" decoding.
    tol : float, default=1e-9
        Solver tolerance of the "cvxpy" decoding.
    center : bool, default=False
        False: the papers' uncentred :math:`\Pi_{\mathcal C}(\sum_i \alpha_i y_i)`:
        ``SELFEstimator(output="euclidean")`` equals scikit-learn's ``KernelRidge`` on ``y``
        (models saved before this option load with False).  True: kernel ridge on the
        centred targets plus their mean (module docstring), ``KernelRidge`` fitted on
        ``y - y.mean(axis=0)`` plus ``y.mean(axis=0)``, which shrinks towards the mean
        instead of 0: what a regressor without an intercept usually needs (pass
        ``output=EuclideanSpace(center=True)``).  The per-element decoding of
        :class:`~psdsos.structured.LocalizedSELF` is not centred.

    Attributes
    ----------
    mean_ : ndarray of the output shape
        The mean of the training outputs (zeros with ``center=False``).

    Notes
    -----
    Decode methods: unconstrained ``("closed_form",)``; constrained ``("cvxpy",
    "closed_form")``.  "cvxpy" builds ONE problem per space,
    ``minimize sum_squares(y - m)`` over :math:`\mathcal C` with ``m`` a ``cp.Parameter`` (DPP),
    and re-solves it per test point; "closed_form" applies the matching projection
    (:func:`~psdsos.structured.polytopes.project_box`,
    :func:`~psdsos.structured.polytopes.project_simplex`, :func:`project_psd_cone`).

    Y formats: (n, k) rows (a 1-D ``Y`` of shape (n,) is read as k = 1 and predictions are then
    1-D, as scikit-learn regressors do).  ``check_Y`` requires the rows to lie in
    :math:`\mathcal C` (to 1e-8).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import EuclideanSpace
    >>> space = EuclideanSpace("simplex").fit(np.eye(3))
    >>> space.decode(np.array([[0.9, 0.6, -0.2]]), method="closed_form").round(3)
    array([[0.65, 0.35, 0.  ]])
    >>> centred = EuclideanSpace(center=True).fit(np.array([[1.0], [3.0]]))
    >>> centred.decode(np.array([[0.0, 0.0], [0.5, 0.5]]))  # alpha = 0: the mean
    array([[2.],
           [2.]])
    """

    name = "euclidean"
    symmetric_loss = True

    def __init__(self, constraint: str | None = None, *, lo: float = 0.0, hi: float = 1.0,
                 solver: str = "CLARABEL", tol: float = 1e-9, center: bool = False) -> None:
        self.constraint = constraint
        self.lo = lo
        self.hi = hi
        self.solver = solver
        self.tol = tol
        self.center = center

    # OutputSpace declares decode_methods as a class attribute; computed here from constraint
    @property
    def decode_methods(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("closed_form",) if self.constraint is None else ("cvxpy", "closed_form")

    def _check_params(self):
        if self.constraint not in (None, "box", "simplex", "psd"):
            raise ValueError(
                "constraint of EuclideanSpace must be None, 'box', 'simplex' or 'psd', "
                f"got {self.constraint!r}"
            )
        if self.constraint == "box":
            lo, hi = check_float(self.lo, "lo"), check_float(self.hi, "hi")
            if not lo <= hi:
                raise ValueError(f"lo must be <= hi, got lo={lo}, hi={hi}")
        if not isinstance(self.center, bool | np.bool_):
            raise ValueError(f"center of EuclideanSpace must be a bool, got {self.center!r}")

    # ---- Y ---------------------------------------------------------------------------
    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        """Validate Y: finite, (n, k) (or (n,) / (n, d, d), see the class docstring), in C."""
        self._check_params()
        A = as_finite(Y, name)
        if self.constraint == "psd":
            if A.ndim == 2:
                d = int(round(np.sqrt(A.shape[1])))
                if d * d != A.shape[1] or d < 1:
                    raise ValueError(
                        f"{name} with constraint='psd' must have shape (n, d, d) or (n, d*d), "
                        f"got {A.shape}"
                    )
                M = A.reshape(-1, d, d)
            elif A.ndim == 3 and A.shape[1] == A.shape[2] and A.shape[1] >= 1:
                M = A
            else:
                raise ValueError(
                    f"{name} with constraint='psd' must have shape (n, d, d) or (n, d*d), "
                    f"got {A.shape}"
                )
            scale = max(1.0, float(np.abs(M).max()) if M.size else 1.0)
            if np.abs(M - np.swapaxes(M, 1, 2)).max(initial=0.0) > 1e-8 * scale:
                raise ValueError(f"{name} must hold symmetric matrices")
            M = 0.5 * (M + np.swapaxes(M, 1, 2))
            if len(M) and np.linalg.eigvalsh(M)[:, 0].min() < -1e-8 * scale:
                raise ValueError(f"{name} must hold PSD matrices (constraint='psd')")
            return M.reshape(A.shape)
        if A.ndim == 1:
            A = A[:, None]
        if A.ndim != 2 or A.shape[1] < 1:
            raise ValueError(
                f"{name} must have shape (n_samples, k) or (n_samples,), got {A.shape}"
            )
        if self.constraint == "box":
            lo, hi = float(self.lo), float(self.hi)
            tol = 1e-8 * max(1.0, abs(lo), abs(hi))
            if A.size and (A.min() < lo - tol or A.max() > hi + tol):
                raise ValueError(f"{name} must lie in the box [{lo}, {hi}] (constraint='box')")
        elif self.constraint == "simplex":
            if A.size and (A.min() < -1e-8 or np.abs(A.sum(axis=1) - 1.0).max() > 1e-8):
                raise ValueError(
                    f"{name} rows must be histograms: non-negative, summing to 1 "
                    "(constraint='simplex')"
                )
        return A

    def fit(self, Y_train: ArrayLike) -> EuclideanSpace:
        Y = np.asarray(Y_train)
        self._1d = self.constraint != "psd" and Y.ndim == 1
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self._shape = self.Y_train_.shape[1:]
        self.mean_ = (self.Y_train_.mean(axis=0) if self.center
                      else np.zeros(self.Y_train_.shape[1:]))
        self._problem: Any = None
        return self

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        r"""Squared Euclidean (Frobenius) distance per sample, shape (n,)."""
        T = as_finite(Y_true, "Y_true")
        P = as_finite(Y_pred, "Y_pred")
        T = T.reshape(len(T), -1)
        P = P.reshape(len(P), -1)
        if T.shape != P.shape:
            raise ValueError(f"Y_true and Y_pred shapes differ: {T.shape} and {P.shape}")
        return np.sum((T - P) ** 2, axis=1)

    # ---- decoding --------------------------------------------------------------------
    def project(self, Z: ArrayLike) -> np.ndarray:
        """Closed-form projection onto C of ambient predictions ``(n, *output_shape)``."""
        self._check_params()
        Z = as_finite(Z, "Z")
        if self.constraint is None:
            return Z
        if self.constraint == "box":
            return project_box(Z, float(self.lo), float(self.hi))
        if self.constraint == "simplex":
            return project_simplex(Z.reshape(len(Z), -1)).reshape(Z.shape)
        d = int(round(np.sqrt(np.prod(Z.shape[1:]))))
        return project_psd_cone(Z.reshape(-1, d, d)).reshape(Z.shape)

    def cvxpy_problem(self) -> tuple[cp.Problem, cp.Variable, cp.Parameter]:
        """The decoding program, built once: ``(problem, y variable, m parameter)``.

        ``minimize ||y - m||^2 s.t. y in C`` with ``m`` a ``cp.Parameter`` of the output
        shape (DPP: re-solves skip the compilation).
        """
        import cvxpy as cp

        self._check_params()
        if self._problem is None:
            if self.constraint == "psd":
                d = int(round(np.sqrt(np.prod(self._shape))))
                y = cp.Variable((d, d), symmetric=True)
                m = cp.Parameter((d, d), symmetric=True)
                cons = [y >> 0]
            else:
                k = int(np.prod(self._shape))
                y = cp.Variable(k)
                m = cp.Parameter(k)
                if self.constraint == "box":
                    cons = [y >= float(self.lo), y <= float(self.hi)]
                else:
                    cons = [y >= 0, cp.sum(y) == 1]
            prob = cp.Problem(cp.Minimize(cp.sum_squares(y - m)), cons)
            self._problem = (prob, y, m)
        return self._problem

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """Predictions ``Pi_C(mean_ + alpha @ (Y_train - mean_))``, shape
        ``(n_test, *output_shape)`` (``mean_`` = 0 with ``center=False``)."""
        method = resolve_method(self, method)
        A = check_alpha(alpha, len(self.Y_train_))
        mean = getattr(self, "mean_", None)
        if mean is None:  # a space fitted before ``center`` existed (unpickled): uncentred
            mean = np.zeros(self.Y_train_.shape[1:])
        Z = mean + np.tensordot(A, self.Y_train_ - mean, axes=(1, 0))
        if method == "closed_form":
            P = self.project(Z)
        else:
            prob, y, m = self.cvxpy_problem()
            P = np.empty_like(Z)
            for t in range(len(Z)):
                if self.constraint == "psd":
                    zt = Z[t].reshape(y.shape)
                    m.value = 0.5 * (zt + zt.T)
                else:
                    m.value = Z[t].ravel()
                solve_parametric(prob, self.solver, self.tol)
                P[t] = np.asarray(y.value).reshape(Z.shape[1:])
        return P[:, 0] if getattr(self, "_1d", False) else P

    # ---- per-element operations (LocalizedSELF): elements are real entries -------------
    def supports(self, capability: str) -> bool:
        """The element operations need a constraint imposed entry by entry: None or "box"."""
        if capability in ("element_closed_form", "element_sgd"):
            return self.constraint in (None, "box")
        return super().supports(capability)

    def loss_gradient(self, Z: ArrayLike, Y: ArrayLike) -> np.ndarray:
        """Gradient in Z of the squared loss, :math:`2 (Z - Y)`, entry by entry."""
        return 2.0 * (np.asarray(Z, dtype=np.float64) - np.asarray(Y, dtype=np.float64))

    def element_embed_dim(self) -> int:
        return 1

    def element_embed(self, V: np.ndarray) -> np.ndarray:
        """phi(y) = y."""
        return V[..., None]

    def element_decode(self, c: np.ndarray, wsum: np.ndarray) -> np.ndarray:
        """z_u = c_u / sum_{p ni u} pi_p (kernel ridge), then the box."""
        z = c[..., 0] / wsum
        return self.project(z) if self.constraint is not None else z

    def element_restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._check_params()

    def element_loss(self, Z: np.ndarray, E: np.ndarray) -> np.ndarray:
        return (Z - E) ** 2

    def element_project(self, Z: np.ndarray) -> np.ndarray:
        return self.project(Z) if self.constraint is not None else Z

    def to_config(self) -> dict[str, Any]:
        return {"constraint": self.constraint, "lo": float(self.lo), "hi": float(self.hi),
                "solver": self.solver, "tol": float(self.tol), "center": bool(self.center)}

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> EuclideanSpace:
        """The space of a saved config; a config saved before ``center`` existed (no such
        key) gives ``center=False``, so that the model predicts as it did."""
        return cls(**{"center": False, **cfg})
