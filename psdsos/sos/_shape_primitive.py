r"""Shape constraints of a kernel expansion on a box, in a user's own CVXPY program.

The function is

.. math::

    f(x) = \beta_0 + \beta^T x + \sum_{l=1}^q a_l\, k(x, c_l),

affine in the user's variables :math:`a` (``coef``) and :math:`\beta` (``affine``), and one
constraint function :math:`g` must be non-negative (PSD for a Hessian block) on the box
:math:`[lo, hi]`:

* ``"value"``: :math:`g = s\,(f - b)` (:math:`f \ge b` with s = 1, :math:`f \le b` with
  s = -1), d = 1;
* ``"derivative"``: :math:`g = s\,\partial_p f` (increasing in :math:`x_p`: s = 1,
  decreasing: s = -1), d = 1;
* ``"hessian"``: :math:`g = s\,\nabla^2_S f`, the :math:`|S|\times|S|` block of the features
  S (convex: s = 1, concave: s = -1), d = |S|.

As in section 4 of the PSD paper (eq. 13-14; for d = 1 the non-negative model of
Marteau-Ferey, Bach and Rudi, 2020, "Non-parametric models for non-negative functions"),
:func:`kernel_shape_constraint` imposes the constraint at points :math:`z_j` of the box as

.. math::

    g(z_j) = \Psi_j^T \mathbf B \Psi_j, \qquad j \in [m], \qquad \mathbf B \succeq 0,

with a fresh :class:`~psdsos.sos.SoSBlock` (exact kernel features of the points,
:math:`\Psi_j = \phi(z_j)\otimes I_d`; for d = 1 a constant feature is appended, so a margin
constant over the points costs :math:`\lambda_2 s^2 / 2` whatever their number) and returns the
regularizer :math:`\lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf
B\|_F^2` (eq. 6) to add to the objective.  After the solve,
:meth:`ShapeConstraintBlock.certify` proves a lower bound of :math:`g` (of
:math:`\lambda_{\min}` of the Hessian block) over the whole box by branch and bound
(:func:`~psdsos.sos.kernel_constraint_certificate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.stats import qmc

from psdsos._validation import RandomStateLike, check_array_2d, check_random_state, check_scalar
from psdsos.features import ExactFeatures
from psdsos.kernels import Kernel
from psdsos.sos._box_certify import BoxCertificate, _check_box, kernel_constraint_certificate
from psdsos.sos._constraint import (
    KernelExpansion,
    ShapeConstraint,
    constraint_function,
    constraint_rows,
)
from psdsos.sos._primitive import MAX_FEATURE_CONDITION, SoSBlock, _check_conditioning

__all__ = ["ShapeConstraintBlock", "kernel_shape_constraint"]

KINDS = ("value", "derivative", "hessian")
_ORDER = {"value": 0, "derivative": 1, "hessian": 2}

#: Generated points closer than this many bandwidths (sup norm) to an earlier one are dropped:
#: close points make the exact features ill-conditioned (see :class:`SoSBlock`).  Where the
#: features are still beyond ``max_condition`` the spacing grows by SPACING_GROWTH.
MIN_SPACING = 0.25
SPACING_GROWTH = 1.5

#: Scrambled Sobol points per feature where ``certify`` looks for the smallest value of g
#: (with the constraint points, then a local search from the best three).
DESIGN_POINTS = 256

#: Generated points per feature by default (before the thinning of MIN_SPACING).
POINTS_PER_FEATURE = 32

#: Entries (rows x centres x features) of one evaluation block (16 MB of float64).
_BLOCK_ENTRIES = 1 << 21

#: The yardstick of ``certify``'s tolerance is at least this fraction of
#: ``||f_k||_H / sigma**order`` (the size of the kernel part of g).
SCALE_FLOOR = 1e-2


def _as_expression(value: Any, name: str) -> cp.Expression:
    """A CVXPY expression (Variables, affine expressions, or numbers as constants)."""
    if isinstance(value, cp.Expression):
        return value
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a CVXPY expression or a real array, "
                         f"got {type(value).__name__}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return cp.Constant(arr)


def _box(lo: ArrayLike, hi: ArrayLike, p: int) -> tuple[np.ndarray, np.ndarray]:
    lo_a, hi_a = _check_box(lo, hi)
    if lo_a.shape != (p,):
        raise ValueError(f"lo and hi must be vectors of length {p} (one entry per feature of "
                         f"centers), got shapes {np.shape(lo)} and {np.shape(hi)}")
    return lo_a, hi_a


def _features(kind: str, p: int, feature: Any, subset: Any) -> list[int]:
    """[p] for "derivative", S for "hessian", [] for "value" (checked against p)."""
    if kind == "value":
        if feature is not None or subset is not None:
            raise ValueError("feature and subset apply to kind 'derivative' and 'hessian' only")
        return []
    if kind == "derivative":
        if subset is not None:
            raise ValueError("subset applies to kind 'hessian' only (use feature)")
        if feature is None and p == 1:
            return [0]
        if feature is None:
            raise ValueError(f"feature (the index of x_p in d_p f) is required with {p} features")
        return [check_scalar(feature, "feature", lower=0, upper=p - 1, integer=True)]
    if feature is not None:
        raise ValueError("feature applies to kind 'derivative' only (use subset)")
    if subset is None:
        return list(range(p))
    if isinstance(subset, (str, bytes)) or np.ndim(subset) != 1:
        raise ValueError(f"subset must be a list of feature indices, got {subset!r}")
    S = [check_scalar(q, "subset", lower=0, upper=p - 1, integer=True) for q in subset]
    if not S or len(set(S)) != len(S):
        raise ValueError(f"subset must be a non-empty list of distinct indices, got {subset!r}")
    return S


def box_points(lo: np.ndarray, hi: np.ndarray, n_points: int, random_state: RandomStateLike,
               spacing: float = 0.0) -> np.ndarray:
    """The corners of the box (p <= 6), then ``n_points`` scrambled Sobol points of the box
    (seeded), each kept when it is farther than ``spacing`` (sup norm) from those kept."""
    p = lo.shape[0]
    sampler = qmc.Sobol(d=p, scramble=True, seed=check_random_state(random_state))
    U = sampler.random_base2(int(np.ceil(np.log2(max(n_points, 2)))))[:n_points]
    Z = lo + U * (hi - lo)
    if p <= 6:
        corners = np.array(np.meshgrid(*[[a, b] for a, b in zip(lo, hi, strict=True)],
                                       indexing="ij")).reshape(p, -1).T
        Z = np.vstack([corners, Z])
    keep: list[np.ndarray] = []
    for z in Z:
        if not keep or np.min(np.max(np.abs(np.asarray(keep) - z), axis=1)) > spacing:
            keep.append(z)
    return np.asarray(keep)


def sos_features(kernel: Kernel, Z: np.ndarray, d: int) -> np.ndarray:
    """Exact kernel features of the points (rows), plus a constant feature when d = 1."""
    Phi = ExactFeatures(kernel).fit(Z).transform(Z)
    return np.hstack([Phi, np.ones((Z.shape[0], 1))]) if d == 1 else Phi


def _read(given: ArrayLike | None, expr: cp.Expression | None, name: str,
          size: int) -> np.ndarray:
    """The given values, else the expression's value after the solve (zeros without one)."""
    if given is None:
        if expr is None:
            return np.zeros(size)
        given = expr.value
        if given is None:
            raise ValueError(f"{name} has no value: solve the problem first or pass {name}_value")
    v = np.asarray(given, dtype=np.float64).reshape(-1)
    if v.shape != (size,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name}_value must be a finite vector of length {size}, "
                         f"got shape {np.shape(given)}")
    return v


class ShapeConstraintBlock:
    r"""A shape constraint imposed at points of a box through one SoS block (see
    :func:`kernel_shape_constraint`, which builds it).

    Attributes
    ----------
    constraints : list of cvxpy constraints
        :math:`g(z_j) = \Psi_j^T\mathbf B\Psi_j` (and B PSD through the variable).
    regularizer : cvxpy.Expression
        :math:`\lambda_1\operatorname{Tr}\mathbf B + \frac{\lambda_2}{2}\|\mathbf B\|_F^2`,
        to add to the objective.
    block : SoSBlock
        The SoS block; ``block.B`` is the PSD variable.
    points : ndarray of shape (m, p)
        The points :math:`z_j`.
    expression : cvxpy.Expression of shape (m, d (d + 1) / 2)
        :math:`g(z_j)`, row j the upper triangle (row-major) of the d x d matrix.
    kernel, centers, coef, affine, kind, sign, features, offset, lo, hi
        What the constraint was built from (``features``: [] for "value", [p] for
        "derivative", S for "hessian"; ``affine`` None without affine part).
    """

    def __init__(self, kernel: Kernel, centers: np.ndarray, coef: cp.Expression,
                 affine: cp.Expression | None, kind: str, sign: float, features: list[int],
                 offset: float, box: tuple[np.ndarray, np.ndarray], points: np.ndarray,
                 Phi: np.ndarray, lam1: float, lam2: float,
                 random_state: RandomStateLike) -> None:
        self.kernel, self.centers, self.coef, self.affine = kernel, centers, coef, affine
        self.kind, self.sign, self.features, self.offset = kind, sign, features, offset
        self.lo, self.hi = box
        self.points = points
        self.random_state = random_state
        m, p = points.shape
        self._con = ShapeConstraint(kind, tuple(features), float(sign), float(offset))
        d = self._con.d
        t = d * (d + 1) // 2
        Kz, A, c = constraint_rows(self._con, kernel, centers, points, packed=True)
        g = Kz @ coef + c  # (m t,)
        if affine is not None and kind != "hessian":
            g = g + A @ affine
        self.expression = cp.reshape(sign * g, (m, t), order="C")
        # the features' conditioning is checked by kernel_shape_constraint
        self.block = SoSBlock(Phi, d=d, name=f"B_{kind}", max_condition=None)
        self.constraints: list[cp.Constraint] = self.block.constraints_packed(self.expression)
        self.regularizer: cp.Expression = self.block.regularizer(lam1, lam2)

    # ---- numbers after the solve -------------------------------------------------------------
    def _values(self, coef_value: ArrayLike | None,
                affine_value: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
        q, p = self.centers.shape
        return (_read(coef_value, self.coef, "coef", q),
                _read(affine_value, self.affine, "affine", p + 1))

    def evaluate(self, X: ArrayLike, coef_value: ArrayLike | None = None,
                 affine_value: ArrayLike | None = None) -> np.ndarray:
        r"""The constraint function at the rows of X: :math:`s (f - b)`, :math:`s\,\partial_p
        f` or :math:`\lambda_{\min}(s\nabla^2_S f)`.

        Parameters
        ----------
        X : array-like of shape (n, p)
        coef_value, affine_value : array-like, optional
            The coefficients; default: the variables' values (after the solve).

        Returns
        -------
        ndarray of shape (n,)
        """
        X = check_array_2d(X, "X")
        if X.shape[1] != self.centers.shape[1]:
            raise ValueError(f"X must have {self.centers.shape[1]} columns, got {X.shape[1]}")
        a, beta = self._values(coef_value, affine_value)
        q, p = self.centers.shape
        rows = max(1, _BLOCK_ENTRIES // (q * p * (p if self.kind == "hessian" else 1)))
        return np.concatenate([self._g(X[i:i + rows], a, beta)
                               for i in range(0, X.shape[0], rows)] or [np.zeros(0)])

    def _g(self, X: np.ndarray, a: np.ndarray, beta: np.ndarray) -> np.ndarray:
        return constraint_function(KernelExpansion(self.kernel, self.centers, a, beta),
                                   self._con, X, chunk=X.shape[0] or 1)

    def certify(self, coef_value: ArrayLike | None = None,
                affine_value: ArrayLike | None = None, *, tol: float = 1e-2,
                max_cells: int = 200_000) -> BoxCertificate:
        r"""A proved lower bound of the constraint function over the box [lo, hi].

        The branch and bound of :func:`~psdsos.sos.kernel_constraint_certificate` settles
        every cell whose proved lower bound reaches ``goal = sampled_min - tol * scale``
        (lowered when the branch and bound finds smaller values than the search:
        ``bound`` ends within ``tol * scale`` of the smallest value found by either):
        ``sampled_min`` the smallest value of g found at the constraint points, at
        ``256 * p`` scrambled Sobol points of the box and by a local search (L-BFGS-B) from
        the best three; ``scale`` the mean of ``|g|`` over those points, at least
        ``1e-2 * ||f_k||_H / sigma**order`` (order 0, 1, 2 for value, derivative, Hessian;
        1 if both vanish).  "certified": every cell settled, so :math:`g \ge` ``bound``
        :math:`\ge` goal on the whole box (``bound`` within ``tol * scale`` below the
        smallest value found).  "sampled": the budget ran out; ``bound`` is still proved,
        but looser than the goal.

        Parameters
        ----------
        coef_value, affine_value : array-like, optional
            The coefficients; default: the values of ``coef`` and ``affine`` (after the solve).
        tol : float, default=1e-2
            Slack below the sampled minimum, relative to ``scale``.
        max_cells : int, default=200_000
            Budget of cells of the branch and bound.

        Returns
        -------
        BoxCertificate
            ``bound``, ``sampled_min``, ``argmin``, ``status``, ``n_cells``, ``goal``.

        Raises
        ------
        NotImplementedError
            For a kernel without closed-form representer radius (Gaussian, Matern 3/2 and
            5/2 have one; the Hessian needs Gaussian or Matern 5/2).
        """
        tol = check_scalar(tol, "tol", lower=0.0)
        max_cells = check_scalar(max_cells, "max_cells", lower=1, integer=True)
        a, beta = self._values(coef_value, affine_value)
        smin, argmin, mean_abs = self._search(a, beta)
        C, step = self.centers, max(1, _BLOCK_ENTRIES // self.centers.shape[0])
        quad = sum(float(a[i:i + step] @ (self.kernel(C[i:i + step], C) @ a))
                   for i in range(0, C.shape[0], step))
        norm_f = float(np.sqrt(max(quad, 0.0)))
        floor = SCALE_FLOOR * norm_f / self.kernel.sigma ** _ORDER[self.kind]
        scale = max(mean_abs, floor) or 1.0
        kw: dict[str, Any] = {"sign": self.sign, "offset": self.offset}
        if self.kind == "derivative":
            kw["feature"] = self.features[0]
        elif self.kind == "hessian":
            kw["subset"] = list(self.features)
        p = self.centers.shape[1]
        cert = kernel_constraint_certificate(
            self.kernel, self.centers, a, beta, self.kind, self.lo, self.hi,
            goal=smin - tol * scale, atol=tol * scale, max_cells=max_cells,
            # a budget below the default grid: start from one cell
            initial=1 if max_cells < 4**p else None, **kw)
        if cert.sampled_min <= smin:
            return cert
        return dataclasses.replace(cert, sampled_min=smin, argmin=argmin,
                                   bound=min(cert.bound, smin))

    def _search(self, a: np.ndarray, beta: np.ndarray) -> tuple[float, np.ndarray, float]:
        """(smallest g found, where, mean of ``|g|`` over the design): the constraint points, Sobol
        points of the box, then L-BFGS-B from the best three."""
        p = self.centers.shape[1]
        design = np.vstack([self.points, box_points(self.lo, self.hi, DESIGN_POINTS * p,
                                                    self.random_state)])
        g = self.evaluate(design, a, beta)
        best = int(np.argmin(g))
        smin, argmin = float(g[best]), design[best].copy()
        bounds = list(zip(self.lo, self.hi, strict=True))
        for i in np.argsort(g)[:3]:
            res = minimize(lambda u: float(self.evaluate(u[None, :], a, beta)[0]), design[i],
                           method="L-BFGS-B", bounds=bounds, options={"maxiter": 50})
            if res.fun < smin:
                smin, argmin = float(res.fun), np.asarray(res.x, dtype=np.float64)
        return smin, argmin, float(np.mean(np.abs(g)))


def kernel_shape_constraint(
        kernel: Kernel, centers: ArrayLike, coef: Any, kind: str, lo: ArrayLike,
        hi: ArrayLike, *, affine: Any = None, sign: float = 1.0, feature: int | None = None,
        subset: Sequence[int] | None = None, offset: float = 0.0,
        points: ArrayLike | None = None, n_points: int | None = None, lam1: float = 0.0,
        lam2: float = 1e-3, random_state: RandomStateLike = 0,
        max_condition: float | None = MAX_FEATURE_CONDITION) -> ShapeConstraintBlock:
    r"""Impose a shape constraint of a kernel expansion on a box, in your own CVXPY program.

    For :math:`f(x) = \beta_0 + \beta^T x + \sum_l a_l k(x, c_l)` with CVXPY variables
    :math:`a` (``coef``) and optionally :math:`\beta` (``affine``), imposes

    * ``kind="value"``: :math:`s (f(x) - b) \ge 0` (``sign=1``: :math:`f \ge b`;
      ``sign=-1``: :math:`f \le b`; :math:`b` = ``offset``),
    * ``kind="derivative"``: :math:`s\,\partial_p f(x) \ge 0` (increasing / decreasing in
      :math:`x_p`, :math:`p` = ``feature``),
    * ``kind="hessian"``: :math:`s\,\nabla^2_S f(x) \succeq 0` (convex / concave in the
      features S = ``subset``),

    at points :math:`z_j` of the box as :math:`g(z_j) = \Psi_j^T\mathbf B\Psi_j`,
    :math:`\mathbf B\succeq 0` (PSD paper, section 4, eq. 13-14; d = 1: Marteau-Ferey et al.,
    2020), with exact kernel features of the points (plus a constant feature for d = 1).
    Add ``.constraints`` to your problem and ``.regularizer`` to its objective; after the
    solve, ``.certify()`` proves a lower bound of g over the whole box.

    Parameters
    ----------
    kernel : Kernel
        A kernel object (e.g. ``GaussianKernel(0.5)``); "hessian" needs a twice
        differentiable one.
    centers : array-like of shape (q, p)
        The expansion points :math:`c_l`.
    coef : cvxpy.Expression of shape (q,)
        The coefficients :math:`a` (a Variable, or any affine expression; arrays are
        taken as constants).
    kind : {"value", "derivative", "hessian"}
    lo, hi : array-like of shape (p,)
        The box, ``lo <= hi``.
    affine : cvxpy.Expression of shape (p + 1,), optional
        :math:`(\beta_0, \beta_1, \dots, \beta_p)`; None: no affine part.
    sign : {1.0, -1.0}, default=1.0
    feature : int, optional
        :math:`p` of "derivative" (may be omitted when p = 1).
    subset : sequence of int, optional
        S of "hessian"; default: all features.
    offset : float, default=0.0
        :math:`b` of "value".
    points : array-like of shape (m, p), optional
        The points :math:`z_j` (inside the box).
    n_points : int, optional
        Otherwise: the corners of the box (p <= 6) and this many scrambled Sobol points of
        the box (seeded by ``random_state``; default ``32 * p``), a point dropped when it
        lies within half a bandwidth (sup norm) of one kept before (close points make the
        exact features ill-conditioned).
    lam1, lam2 : float, default=0.0, 1e-3
        Weights of :math:`\operatorname{Tr}\mathbf B` and :math:`\frac12\|\mathbf
        B\|_F^2` in ``.regularizer``; not both 0 (B would not be unique and the optimum
        need not be attained, Theorem 2).
    random_state : int, Generator or None, default=0
        Seed of the Sobol scrambling.
    max_condition : float or None
        Refuse (ValueError) points whose features are numerically rank deficient (points
        too close for the bandwidth); see :class:`SoSBlock`.

    Returns
    -------
    ShapeConstraintBlock
        ``.constraints``, ``.regularizer``, ``.block`` (``.block.B`` the PSD variable),
        ``.points``, ``.expression`` (g at the points), ``.evaluate(X)``, ``.certify()``.

    Examples
    --------
    An increasing kernel fit of data, certified increasing on [0, 1]:

    >>> import cvxpy as cp, numpy as np
    >>> from psdsos.kernels import GaussianKernel
    >>> from psdsos.sos import kernel_shape_constraint
    >>> x = np.linspace(0, 1, 12)[:, None]
    >>> y = np.sin(5 * x[:, 0])
    >>> k = GaussianKernel(0.3)
    >>> a, b = cp.Variable(12), cp.Variable(2)
    >>> inc = kernel_shape_constraint(k, x, a, "derivative", [0.0], [1.0], affine=b)
    >>> f = b[0] + b[1] * x[:, 0] + k(x, x) @ a
    >>> R = np.linalg.cholesky(k(x, x) + 1e-9 * np.eye(12)).T
    >>> loss = cp.sum_squares(y - f) / 12 + 1e-4 * cp.sum_squares(R @ a)
    >>> _ = cp.Problem(cp.Minimize(loss + inc.regularizer), inc.constraints).solve("CLARABEL")
    >>> cert = inc.certify()
    >>> cert.status, bool(cert.bound > -0.05)
    ('certified', True)
    """
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a psdsos.kernels.Kernel object (e.g. GaussianKernel"
                         f"(sigma)), got {kernel!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    C = check_array_2d(centers, "centers")
    q, p = C.shape
    coef_e = _as_expression(coef, "coef")
    if coef_e.shape != (q,):
        raise ValueError(f"coef must have shape ({q},) (one coefficient per row of centers), "
                         f"got {coef_e.shape}")
    affine_e = None if affine is None else _as_expression(affine, "affine")
    if affine_e is not None and affine_e.shape != (p + 1,):
        raise ValueError(f"affine must have shape ({p + 1},) (intercept, then one slope per "
                         f"feature), got {affine_e.shape}")
    box = _box(lo, hi, p)
    if isinstance(sign, (bool, np.bool_)) or sign not in (1.0, -1.0):
        raise ValueError(f"sign must be 1.0 or -1.0, got {sign!r}")
    offset = check_scalar(offset, "offset")
    if kind != "value" and offset != 0.0:
        raise ValueError("offset applies to kind 'value' only")
    S = _features(kind, p, feature, subset)
    lam1 = check_scalar(lam1, "lam1", lower=0.0)
    lam2 = check_scalar(lam2, "lam2", lower=0.0)
    if lam1 == 0.0 and lam2 == 0.0:
        raise ValueError("lam1 and lam2 must not both be 0: without a regularizer B is not "
                         "unique and the optimum need not be attained")
    if points is not None and n_points is not None:
        raise ValueError("give points or n_points, not both")
    d = len(S) if kind == "hessian" else 1
    if points is not None:
        Z = check_array_2d(points, "points")
        if Z.shape[1] != p:
            raise ValueError(f"points must have {p} columns (as centers), got {Z.shape[1]}")
        if np.any(Z < box[0]) or np.any(Z > box[1]):
            raise ValueError("points must lie in the box [lo, hi]")
        Phi = sos_features(kernel, Z, d)
    else:
        n = POINTS_PER_FEATURE * p if n_points is None else check_scalar(
            n_points, "n_points", lower=1, integer=True)
        spacing = MIN_SPACING * kernel.sigma
        for _ in range(10):  # thin the points until their features are well conditioned
            Z = box_points(box[0], box[1], n, random_state, spacing)
            Phi = sos_features(kernel, Z, d)
            sv = np.linalg.svd(Phi, compute_uv=False)
            if max_condition is None or sv[0] <= max_condition * sv[-1]:
                break
            spacing *= SPACING_GROWTH
    if max_condition is not None:
        _check_conditioning(Phi, max_condition)
    return ShapeConstraintBlock(kernel, C, coef_e, affine_e, kind, float(sign), S, offset, box,
                                Z, Phi, lam1, lam2, random_state)
