r"""Certified lower bounds of a kernel model's constraint functions over a box.

A fitted function in the RKHS :math:`\mathcal{H}` of a translation-invariant kernel
:math:`k(x, y) = \kappa(x - y)`, plus an affine part,

.. math::

    f(x) = \beta_0 + \sum_p \beta_p x_p + f_k(x), \qquad
    f_k = \sum_l a_l k(\cdot, c_l), \qquad \|f_k\|_{\mathcal{H}} = \sqrt{a^T K_{CC} a},

is constrained through a function :math:`g` that must be non-negative on a box
:math:`[lo, hi]`: ``"value"`` :math:`g = s (f - b)`, ``"derivative"``
:math:`g = s\, \partial_p f`, ``"hessian"`` :math:`g = \lambda_{\min}(s \nabla^2_S f)` (the
Hessian block of the features :math:`S`), :math:`s = \pm 1`.  For a bounded linear
functional :math:`L` (a point evaluation, :math:`\partial_p`, or :math:`\partial_{uu}` for a
unit :math:`u` supported on :math:`S`) the reproducing property and Cauchy-Schwarz give
(Aubin-Frankowski & Szabo 2020, "Hard shape-constrained kernel machines", NeurIPS: the
tightening of a shape constraint over a covering of the domain by balls)

.. math::

    |L_x f_k - L_c f_k| \le \|f_k\|_{\mathcal{H}}\, \|L_x k - L_c k\|_{\mathcal{H}},

and for the Hessian block (Weyl's inequality)
:math:`|\lambda_{\min}(H(x)) - \lambda_{\min}(H(c))| \le \|H(x) - H(c)\|_2 = \sup_u
|u^T (H(x) - H(c)) u| \le \|f_k\| \sup_u \|\partial_{uu} k_x - \partial_{uu} k_c\|`.
:func:`representer_radius` bounds :math:`\sup \|L_x k - L_c k\|` over a cell
:math:`\{c + \delta : |\delta_p| \le h_p\}` in closed form; :func:`certify_box` refines cells
(branch and bound) until every cell's lower bound :math:`g(c) - r(h)` is proved to be above
a goal; :func:`kernel_constraint_certificate` wires both for a kernel expansion.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from psdsos._validation import check_array_2d, check_choice, check_scalar
from psdsos.kernels import GaussianKernel, Kernel
from psdsos.sos._representer import (
    _ORDER,
    _check_index,
    _check_kind,
    _double_factorial,
    _radius_table,
    representer_radius,
)

__all__ = ["BoxCertificate", "certify_box", "kernel_constraint_certificate"]

#: Entries (rows x centres x features) of one evaluation block (16 MB of float64).
_BLOCK_ENTRIES = 1 << 21


def _pairwise_sum(t):
    """Sum of ``t`` over axis 1 by pairwise (cascade) summation, in an order fixed here: the
    rounding error of each sum is at most ceil(log2 m) u (1 + O(u)) times the sum of the
    terms' magnitudes (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    section 4.2), whatever BLAS or numpy's own summation do."""
    while t.shape[1] > 1:
        if t.shape[1] % 2:
            t = np.concatenate([t, np.zeros_like(t[:, :1])], axis=1)  # + 0 is exact
        t = t[:, 0::2] + t[:, 1::2]
    return t[:, 0]


def _gaussian_hessian_slopes(kernel, X, centers, coef):
    r"""Hessian and its derivatives of :math:`f = \sum_l a_l k(\cdot, c_l)`, Gaussian kernel.

    With :math:`d = x - c_l` and :math:`w_l = a_l k(x, c_l)`:
    :math:`\partial_{pq} f = \sum_l w_l (d_p d_q / \sigma^4 - \delta_{pq} / \sigma^2)` and
    :math:`\partial_{pqr} f = \sum_l w_l \big((\delta_{pr} d_q + \delta_{qr} d_p
    + \delta_{pq} d_r) / \sigma^4 - d_p d_q d_r / \sigma^6\big)`.
    Returns the Hessians (n, p, p) and the slopes (n, p, p, p), ``[:, r]`` = d/dx_r.
    """
    s2 = kernel.sigma**2
    W = kernel(X, centers) * coef
    d = X[:, None, :] - centers[None, :, :]
    n, p = X.shape
    eye = np.eye(p)
    m1 = np.einsum("nm,nmp->np", W, d)
    dd = (d[:, :, :, None] * d[:, :, None, :]).reshape(n, -1, p * p)
    m3 = np.matmul((W[:, :, None] * d).transpose(0, 2, 1), dd).reshape(n, p, p, p)
    # the Hessians summed pairwise over the centres (rounding error ceil(log2 m) u, not
    # m u, times the sum of the terms' magnitudes: the certificate's allowance)
    terms = W[:, :, None] * (dd / s2**2 - eye.reshape(1, 1, p * p) / s2)
    hess = _pairwise_sum(terms).reshape(n, p, p)
    sym = (np.einsum("pr,nq->nrpq", eye, m1) + np.einsum("qr,np->nrpq", eye, m1)
           + np.einsum("pq,nr->nrpq", eye, m1))
    return hess, sym / s2**2 - m3 / s2**3


def _gaussian_hessian_curvatures(kernel, X, centers, coef):
    r"""Fourth derivatives of :math:`f = \sum_l a_l k(\cdot, c_l)`, Gaussian kernel.

    With :math:`d = x - c_l`, :math:`w_l = a_l k(x, c_l)` and the moments
    :math:`m_0 = \sum_l w_l`, :math:`M_{pq} = \sum_l w_l d_p d_q`,
    :math:`M_{pqrs} = \sum_l w_l d_p d_q d_r d_s`:
    :math:`\partial_{pqrs} f = M_{pqrs} / \sigma^8 - (\delta_{pq} M_{rs} + \delta_{pr} M_{qs}
    + \delta_{ps} M_{qr} + \delta_{qr} M_{ps} + \delta_{qs} M_{pr} + \delta_{rs} M_{pq})
    / \sigma^6 + m_0 (\delta_{pq}\delta_{rs} + \delta_{pr}\delta_{qs} + \delta_{ps}
    \delta_{qr}) / \sigma^4` (the Hermite polynomial :math:`He_4` in one dimension).
    Returns the (n, p, p, p, p) array, symmetric in its last four indices: the contraction
    with ``a`` of :meth:`~psdsos.kernels.Kernel.hessian_hessian` (two derivatives in each
    argument: four in x for a translation-invariant kernel), from the moments instead of the
    (n, m, p, p, p, p) array, about 35 times faster for 200 x 200 points in three features.
    """
    s2 = kernel.sigma**2
    W = kernel(X, centers) * coef
    d = X[:, None, :] - centers[None, :, :]
    n, p = X.shape
    eye = np.eye(p)
    m0 = W.sum(1)
    dd = (d[:, :, :, None] * d[:, :, None, :]).reshape(n, -1, p * p)
    m2 = np.matmul(W[:, None, :], dd).reshape(n, p, p)
    m4 = np.matmul((W[:, :, None] * dd).transpose(0, 2, 1), dd).reshape(n, p, p, p, p)
    two = (np.einsum("pq,nrs->npqrs", eye, m2) + np.einsum("pr,nqs->npqrs", eye, m2)
           + np.einsum("ps,nqr->npqrs", eye, m2) + np.einsum("qr,nps->npqrs", eye, m2)
           + np.einsum("qs,npr->npqrs", eye, m2) + np.einsum("rs,npq->npqrs", eye, m2))
    pairs = (np.einsum("pq,rs->pqrs", eye, eye) + np.einsum("pr,qs->pqrs", eye, eye)
             + np.einsum("ps,qr->pqrs", eye, eye))
    return m4 / s2**4 - two / s2**3 + m0[:, None, None, None, None] * pairs / s2**2


@dataclass(frozen=True, eq=False)
class BoxCertificate:
    r"""A proved lower bound of a constraint function :math:`g` over a box.

    What is proved: for every :math:`x \in [lo, hi]`, :math:`g(x) \ge` ``bound``, provided the
    ``radius`` given to :func:`certify_box` bounds :math:`|g(x) - g(c)|` on every cell (or the
    cell bounds ``evaluate`` returns are lower bounds of :math:`g` over the cells): true for
    :func:`kernel_constraint_certificate` by :func:`representer_radius` and Taylor's theorem.

    Attributes
    ----------
    bound : float
        The proved lower bound: the minimum over the final cells (they cover the box) of
        their lower bounds :math:`g(c) - r(h)`.  A valid proof whatever ``status`` says.
    sampled_min : float
        The smallest value of :math:`g` at the centres evaluated (an upper bound of
        :math:`\min g`); ``bound <= sampled_min``.
    argmin : ndarray of shape (p,)
        The centre where ``sampled_min`` was found.
    status : {"certified", "sampled"}
        "certified" when every final cell's lower bound reached ``goal`` (so
        ``bound >= goal``); "sampled" when the budget ran out first.
    n_cells : int
        Number of cells evaluated (calls of ``evaluate`` on one centre each).
    goal : float
        The goal the cells were settled against (after the ``tol`` update of
        :func:`certify_box`).
    """

    bound: float
    sampled_min: float
    argmin: np.ndarray
    status: str
    n_cells: int
    goal: float

    @property
    def certified(self) -> bool:
        """True when ``status == "certified"``."""
        return self.status == "certified"


def _check_goal(goal):
    if isinstance(goal, bool) or not isinstance(goal, numbers.Real) or np.isnan(goal):
        raise ValueError(f"goal must be a real number (+inf allowed), got {goal!r}")
    return float(goal)


def _check_box(lo, hi):
    lo = np.atleast_1d(np.asarray(lo, dtype=np.float64))
    hi = np.atleast_1d(np.asarray(hi, dtype=np.float64))
    if lo.ndim != 1 or hi.shape != lo.shape:
        raise ValueError(
            f"lo and hi must be vectors of the same length, got shapes {lo.shape}, {hi.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("lo and hi must be finite")
    if np.any(lo > hi):
        raise ValueError(f"lo must be <= hi in every feature, got lo={lo}, hi={hi}")
    return lo, hi


def _initial_grid(lo, hi, initial):
    """Centres and half-widths of a regular grid of cells covering [lo, hi]."""
    p = lo.size
    width = hi - lo
    if initial is None or np.ndim(initial) == 0:
        k = 4 if initial is None else check_scalar(initial, "initial", lower=1, integer=True)
        wmax = width.max()
        counts = np.where(width > 0, np.ceil(k * width / wmax) if wmax > 0 else 1, 1)
    else:
        counts = np.asarray(initial)
        if counts.shape != (p,) or not np.issubdtype(counts.dtype, np.integer) or counts.min() < 1:
            raise ValueError(f"initial must be None, an int >= 1 or {p} ints >= 1, got {initial!r}")
    counts = counts.astype(int)
    axes = [lo[q] + width[q] * (np.arange(counts[q]) + 0.5) / counts[q] for q in range(p)]
    C = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    H = np.broadcast_to(width / (2 * counts), C.shape).copy()
    return C, H


def _split(C, H, split):
    """Children of the cells (C, H): halves along the longest side, or along every side."""
    if split == "longest":
        q = np.argmax(H, axis=1)
        rows = np.arange(len(C))
        Hc = H.copy()
        Hc[rows, q] *= 0.5
        step = np.zeros_like(H)
        step[rows, q] = Hc[rows, q]
        return np.concatenate([C - step, C + step]), np.concatenate([Hc, Hc])
    for q in range(C.shape[1]):
        live = H[:, q] > 0
        half = np.where(live, 0.5 * H[:, q], 0.0)
        moved = C[live].copy()
        moved[:, q] += half[live]
        C = C.copy()
        C[:, q] -= half
        H = H.copy()
        H[:, q] = np.where(live, half, H[:, q])
        C, H = np.concatenate([C, moved]), np.concatenate([H, H[live]])
    return C, H


def _n_children(H, split):
    if split == "longest":
        return np.full(len(H), 2)
    return 2 ** np.count_nonzero(H > 0, axis=1)


def certify_box(evaluate: Callable[..., ArrayLike | tuple[ArrayLike, ArrayLike]],
                radius: Callable[[np.ndarray], ArrayLike] | None, lo: ArrayLike, hi: ArrayLike, *,
                goal: float = 0.0, tol: float | None = None, max_cells: int = 200_000,
                initial: int | Sequence[int] | None = None, split: str = "longest",
                batch: int = 8192) -> BoxCertificate:
    r"""Prove a lower bound of :math:`g` over the box :math:`[lo, hi]` by branch and bound.

    .. math::

        \min_{x \in [lo, hi]} g(x) \;\ge\; \min_{\text{cells } (c, h)}
        \big(g(c) - r(h)\big), \qquad r(h) \ge \sup_{|\delta_p| \le h_p} |g(c + \delta) - g(c)|.

    The box starts as a regular grid of cells.  A cell whose lower bound
    :math:`g(c) - r(h)` is at least the goal :math:`\gamma` is settled (its lower bound is
    kept); the others are split in two along their longest side (``split="longest"``) or in
    :math:`2^p` along every side (``"all"``), the lowest lower bounds first, until none is
    left (status "certified") or the next split would exceed ``max_cells`` evaluations
    (status "sampled", the unsplit cells' lower bounds still count).  With ``tol`` the goal
    follows the samples, :math:`\gamma = \min(\text{goal}, \min_{\text{sampled}} g - \text{tol})`:
    a certified bound then lies in :math:`[\min(\text{goal}, \min g - \text{tol}), \min g]`.
    Splitting the longest side (the default) needed about as many or fewer evaluations than
    splitting every side on the test functions; the work concentrates near the minimizers
    of :math:`g`.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(C)`` returns :math:`g` at the rows of ``C`` (n, p) as an (n,) array.  With
        ``radius=None``, ``evaluate(C, H)`` returns the pair (:math:`g` at the centres, a
        proved lower bound of :math:`g` over each cell), e.g. the larger of
        :math:`g(c) - r(h)` and a second-order Taylor bound.
    radius : callable or None
        ``radius(H)`` returns, for half-widths ``H`` (n, p), an (n,) upper bound of
        :math:`|g(x) - g(c)|` over each cell (rounding included).
    lo, hi : array-like of shape (p,)
        The box, ``lo <= hi`` (a feature with ``lo == hi`` is never split).
    goal : float, default=0.0
        Cells whose lower bound reaches it are settled (``inf``: settle only through ``tol``).
    tol : float, default=None
        If given (>= 0), the goal is lowered to the smallest sampled value minus ``tol``.
    max_cells : int, default=200_000
        Budget of evaluations (the initial grid included).
    initial : int or sequence of int, default=None
        Cells per feature of the initial grid: an int for the longest side (others in
        proportion), or one count per feature; None means 4.
    split : {"longest", "all"}, default="longest"
        How cells are refined.
    batch : int, default=8192
        Centres per call of ``evaluate``.

    Returns
    -------
    BoxCertificate
        ``bound`` (proved), ``sampled_min``, ``argmin``, ``status``, ``n_cells``, ``goal``.

    Examples
    --------
    >>> import numpy as np
    >>> cert = certify_box(lambda C: C[:, 0] ** 2, lambda H: 2 * H[:, 0] + H[:, 0] ** 2,
    ...                    [-1.0], [1.0], goal=-1e-3)
    >>> cert.status, cert.bound <= 0.0
    ('certified', True)
    """
    lo, hi = _check_box(lo, hi)
    goal = _check_goal(goal)
    tol = check_scalar(tol, "tol", lower=0.0, allow_none=True)
    max_cells = check_scalar(max_cells, "max_cells", lower=1, integer=True)
    batch = check_scalar(batch, "batch", lower=1, integer=True)
    split = check_choice(split, "split", ("longest", "all"))
    C, H = _initial_grid(lo, hi, initial)
    if len(C) > max_cells:
        raise ValueError(f"max_cells={max_cells} is smaller than the initial grid ({len(C)} cells)")
    best = [np.inf, C[0]]

    def lower(C, H):
        out = np.empty(len(C))
        for s in range(0, len(C), batch):
            sl = slice(s, s + batch)
            if radius is None:
                g, lb = (np.asarray(v, dtype=np.float64).reshape(-1)
                         for v in evaluate(C[sl], H[sl]))
            else:
                g = np.asarray(evaluate(C[sl]), dtype=np.float64).reshape(-1)
                r = np.asarray(radius(H[sl]), dtype=np.float64).reshape(-1)
                if r.shape == g.shape and (np.any(np.isnan(r)) or np.any(r < 0)):
                    raise ValueError("radius returned negative or NaN values")
                lb = g - r
            if g.shape != (len(C[sl]),) or lb.shape != g.shape:
                raise ValueError("evaluate and radius must return one value per cell")
            if not np.all(np.isfinite(g)) or np.any(np.isnan(lb)) or np.any(lb > g):
                raise ValueError("evaluate returned non-finite values or a cell bound above g(c)")
            i = int(np.argmin(g))
            if g[i] < best[0]:
                best[0], best[1] = float(g[i]), C[sl][i].copy()
            out[sl] = lb
        return out

    LB = lower(C, H)
    n_cells, settled = len(C), np.inf
    while True:
        gamma = goal if tol is None else min(goal, best[0] - tol)
        keep = LB < gamma
        if not np.all(keep):
            settled = min(settled, float(LB[~keep].min()))
        C, H, LB = C[keep], H[keep], LB[keep]
        if len(C) == 0:
            break
        # cells of zero width (a point: their bound is g(c) itself) are never split
        order = np.lexsort((LB, H.max(axis=1) == 0))
        C, H, LB = C[order], H[order], LB[order]
        n_split = int(np.searchsorted(np.cumsum(_n_children(H, split)), max_cells - n_cells,
                                      side="right"))
        n_split = min(n_split, int(np.count_nonzero(H.max(axis=1) > 0)))
        if n_split == 0:
            break
        Cc, Hc = _split(C[:n_split], H[:n_split], split)
        n_cells += len(Cc)
        C, H = np.concatenate([C[n_split:], Cc]), np.concatenate([H[n_split:], Hc])
        LB = np.concatenate([LB[n_split:], lower(Cc, Hc)])
    bound = min(settled, float(LB.min())) if len(LB) else settled
    return BoxCertificate(bound=bound, sampled_min=best[0], argmin=best[1],
                          status="certified" if len(LB) == 0 else "sampled",
                          n_cells=n_cells, goal=gamma)


def kernel_constraint_certificate(
        kernel: Kernel, centers: ArrayLike, coef: ArrayLike, affine: ArrayLike, kind: str,
        lo: ArrayLike, hi: ArrayLike, *, sign: float = 1.0, feature: int | None = None,
        subset: Sequence[int] | None = None, offset: float = 0.0, goal: float = 0.0,
        tol: float = 1e-3, max_cells: int = 200_000, initial: int | Sequence[int] | None = None,
        split: str = "longest", atol: float | None = None) -> BoxCertificate:
    r"""Certified lower bound over a box of a constraint function of a kernel expansion.

    .. math::

        f(x) = \beta_0 + \beta^T x + \sum_l a_l k(x, c_l), \qquad
        g(x) = \begin{cases} s (f(x) - b) & \text{"value"} \\ s\, \partial_p f(x) &
        \text{"derivative"} \\ \lambda_{\min}(s \nabla^2_S f(x)) & \text{"hessian"}
        \end{cases}

    :func:`certify_box` with, for each cell :math:`(c, h)`, the larger of two proved lower
    bounds of :math:`g` (both minus an allowance :math:`\epsilon` for the rounding of
    :math:`g(c)`: :math:`32 (m + p + 1) u` times :math:`|s|(\|a\|_1 \|L_c k\| |S| + |\beta_0|
    + \sum_p |\beta_p| \max(|lo_p|, |hi_p|) + |b|)`, :math:`u` the unit roundoff; for the
    Hessian block with the Gaussian kernel, whose values at the centres are summed pairwise
    over the expansion, :math:`32 (\lceil \log_2 m \rceil + p + 9) u` times the same):

    1. first order, any supported kernel: :math:`g(c) - |s| (\|f_k\|_{\mathcal{H}}\, r_L(h)
       + [\text{value}] \sum_p |\beta_p| h_p)`, :math:`r_L` from :func:`representer_radius`
       and :math:`\|f_k\|^2 = a^T K_{CC} a` plus its rounding error
       :math:`4 m u \|a\|_1^2`;
    2. second order, Gaussian kernel: the minimum over the cell of the linear model of
       :math:`g` at :math:`c` (:math:`g(c) - \sum_q |\partial_q g(c)| h_q`; for the Hessian
       block :math:`\min_{\text{vertices } v} \lambda_{\min}(s \nabla^2_S f(c) + \sum_q v_q h_q
       s \partial_q \nabla^2_S f(c))`, exact since :math:`\lambda_{\min}` is concave) minus
       the Taylor remainder :math:`\tfrac12 |s| \|f_k\| \|h\|^2 \sup_{u, v}
       \|\partial_{vv} L k\|_{\mathcal{H}}`.  For the Gaussian kernel
       :math:`\langle \partial_{w_1 \cdots w_j} k_x, \partial_{z_1 \cdots z_j} k_x \rangle
       = \sigma^{-2j} \operatorname{haf}(\text{Gram}(w, z))` (Isserlis), at most
       :math:`(2j - 1)!! / \sigma^{2j}` for unit vectors, with :math:`j = \text{order} + 2`
       (3, 15, 105 for value, derivative, Hessian), equality in one dimension;
    3. third order, Gaussian kernel, Hessian block: the vertex minimum of 2. minus the
       quadratic term :math:`\tfrac12 \sum_{q, r} h_q h_r \|\partial_{qr} \nabla^2_S f(c)\|_2`
       (computed at the centre) and the cubic remainder :math:`\tfrac16 |s| \|f_k\|
       \|h\|^3 \sqrt{945} / \sigma^5` (:math:`j = 5`).  The global factor
       :math:`\|f_k\|_{\mathcal{H}}` is often far larger than the derivatives of
       :math:`f` themselves (the coefficients of a fit cancel): moving it one order up lets
       cells stay wider where the curvature is nearly flat.

    The goal follows the samples: cells are settled once their lower bound is at least
    :math:`\min(\text{goal}, \min_{\text{sampled}} g - \text{tol} \cdot \text{scale})` with
    :math:`\text{scale} = |s| (\|f_k\| \|L_c k\| + [\text{derivative}] |\beta_p|
    + [\text{value}] (|\beta_0 + \beta^T m - b| + \sum_p |\beta_p| (hi_p - lo_p)/2))`,
    :math:`m` the box's centre (the size of :math:`g`).  A "certified" bound is therefore at
    least :math:`\min(\text{goal}, \min g - \text{tol} \cdot \text{scale})`.

    Parameters
    ----------
    kernel : Kernel
        Gaussian, Matern 3/2 or Matern 5/2 (see :func:`representer_radius`).
    centers : array-like of shape (m, p)
        Expansion points :math:`c_l`.
    coef : array-like of shape (m,)
        Coefficients :math:`a`.
    affine : array-like of shape (p + 1,)
        :math:`(\beta_0, \beta_1, \dots, \beta_p)`.
    kind : {"value", "derivative", "hessian"}
        The constraint function.
    lo, hi : array-like of shape (p,)
        The box.
    sign : float, default=1.0
        :math:`s` (nonzero).
    feature : int, default=None
        :math:`p` of ``"derivative"``.
    subset : sequence of int, default=None
        :math:`S` of ``"hessian"``.
    offset : float, default=0.0
        :math:`b` of ``"value"``.
    goal : float, default=0.0
        Goal of :func:`certify_box` (0: prove :math:`g \ge 0`).
    tol : float, default=1e-3
        Slack relative to the scale of :math:`g` (above).
    max_cells, initial, split
        As in :func:`certify_box`.
    atol : float, default=None
        If given (>= 0), the slack in the units of :math:`g` instead of ``tol`` times the
        scale: cells are settled once their lower bound reaches
        :math:`\min(\text{goal}, \min_{\text{sampled}} g - \text{atol})`.

    Returns
    -------
    BoxCertificate

    Raises
    ------
    NotImplementedError
        If no representer radius is known for ``kernel`` and ``kind``.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.kernels import GaussianKernel
    >>> cert = kernel_constraint_certificate(GaussianKernel(1.0), [[0.0]], [1.0], [0.0, 0.0],
    ...                                      "value", [-1.0], [1.0])
    >>> cert.status, bool(cert.bound <= np.exp(-0.5))
    ('certified', True)
    """
    kind = _check_kind(kind)
    Cn = check_array_2d(centers, "centers")
    m, p = Cn.shape
    a = np.asarray(coef, dtype=np.float64)
    beta = np.asarray(affine, dtype=np.float64)
    if a.shape != (m,) or not np.all(np.isfinite(a)):
        raise ValueError(f"coef must be a finite vector of length {m}, got shape {a.shape}")
    if beta.shape != (p + 1,) or not np.all(np.isfinite(beta)):
        raise ValueError(f"affine must be a finite vector of length {p + 1}, got {beta.shape}")
    box_lo, box_hi = _check_box(lo, hi)
    if box_lo.size != p:
        raise ValueError(f"lo and hi must have {p} entries (one per feature), got {box_lo.size}")
    goal = _check_goal(goal)
    sign = check_scalar(sign, "sign")
    if sign == 0:
        raise ValueError("sign must be nonzero")
    offset = check_scalar(offset, "offset")
    tol = check_scalar(tol, "tol", lower=0.0)
    atol = check_scalar(atol, "atol", lower=0.0, allow_none=True)
    idx = _check_index(kind, p, feature, subset)
    _, norm0_sq = _radius_table(kernel, kind)
    order = _ORDER[kind]
    norm0 = np.sqrt(norm0_sq) / kernel.sigma**order
    eps = np.finfo(np.float64).eps
    a1 = float(np.abs(a).sum())
    step = max(1, _BLOCK_ENTRIES // m)
    quad = sum(float(a[s:s + step] @ (kernel(Cn[s:s + step], Cn) @ a)) for s in range(0, m, step))
    norm_f = np.sqrt(max(quad, 0.0) + 4.0 * m * eps * a1**2)
    reach = float(np.maximum(np.abs(box_lo), np.abs(box_hi)).max())
    affine_size = abs(beta[0]) + float(np.abs(beta[1:]).sum()) * reach + abs(offset)
    kernel_size = a1 * norm0 * (len(idx) if kind == "hessian" else 1)
    second = type(kernel) is GaussianKernel  # smooth enough for the Taylor bound
    # the Gaussian Hessian block's centre values are summed pairwise (_pairwise_sum): depth
    # ceil(log2 m) instead of m; a fit with m = 2000 centres and |a|_1 = 4e7 (rho = 1e-8)
    # had an allowance of about 0.9% of its curvature scale, which no refinement could beat
    depth = (int(np.ceil(np.log2(m))) + 8 if second and kind == "hessian" else m)
    roundoff = 32.0 * (depth + p + 1) * eps * abs(sign) * (kernel_size + affine_size)
    mid, half = (box_lo + box_hi) / 2, (box_hi - box_lo) / 2
    scale = abs(sign) * norm_f * norm0 + abs(sign) * {
        "value": abs(beta[0] + beta[1:] @ mid - offset) + float(np.abs(beta[1:]) @ half),
        "derivative": abs(beta[1 + idx[0]]), "hessian": 0.0}[kind]
    rows = max(1, _BLOCK_ENTRIES // max(m * p ** (3 if second and kind == "hessian" else 2), 1))
    taylor = 0.5 * abs(sign) * norm_f * np.sqrt(_double_factorial(2 * order + 3))
    taylor /= kernel.sigma ** (order + 2)
    grad_size = a1 * np.sqrt(_double_factorial(2 * order + 1)) / kernel.sigma ** (order + 1)
    grad_round = 32.0 * (m + p + 1) * eps * abs(sign) * (grad_size * len(idx) + affine_size)
    # third order (Gaussian, Hessian block): the cubic remainder and the rounding of the
    # fourth derivatives at the centre (|d^4 k| <= sqrt(7!!) / sigma^4 pointwise)
    third = second and kind == "hessian"
    cubic = abs(sign) * norm_f * np.sqrt(_double_factorial(9)) / (6.0 * kernel.sigma**5)
    curv_round = (32.0 * (m + p + 1) * eps * abs(sign) * a1 * np.sqrt(_double_factorial(7))
                  / kernel.sigma**4 * len(idx))
    if third:
        rows = max(1, _BLOCK_ENTRIES // max(m * p**4, 1))
    vertices = np.array(np.meshgrid(*([[-1.0, 1.0]] * p), indexing="ij")).reshape(p, -1).T

    def block(X, Hw):
        """g at the centres X and (Gaussian kernel) the Taylor lower bound over the cells."""
        if kind == "value":
            g = sign * (beta[0] + X @ beta[1:] + kernel(X, Cn) @ a - offset)
            if not second:
                return g, None
            slope = sign * (beta[1:] + np.einsum("nmp,m->np", kernel.gradient(X, Cn), a))
        elif kind == "derivative":
            g = sign * (beta[1 + idx[0]] + kernel.gradient(X, Cn)[:, :, idx[0]] @ a)
            if not second:
                return g, None
            slope = sign * kernel.hessian_sum(X, Cn, a)[:, idx[0], :]
        elif not second:
            Hs = sign * kernel.hessian_sum(X, Cn, a)[:, idx][:, :, idx]
            return np.linalg.eigvalsh(Hs)[:, 0], None
        else:
            hess, T = _gaussian_hessian_slopes(kernel, X, Cn, a)
            Hs, T = sign * hess[:, idx][:, :, idx], sign * T[:, :, idx][:, :, :, idx]
            g = np.linalg.eigvalsh(Hs)[:, 0]
            # lambda_min is concave: its minimum over the cell's linear model is at a vertex
            M = Hs[:, None] + np.einsum("nvr,nrpq->nvpq", vertices[None] * Hw[:, None, :], T)
            lin = np.linalg.eigvalsh(M)[..., 0].min(axis=1)
        if kind != "hessian":
            lin = g - np.einsum("np,np->n", np.abs(slope), Hw)
        h2 = np.einsum("np,np->n", Hw, Hw)
        lb = lin - taylor * h2 - grad_round * Hw.sum(1)
        if third:
            Q = _gaussian_hessian_curvatures(kernel, X, Cn, a)[..., idx, :][..., idx]
            # spectral norms of the |S| x |S| blocks d_q d_r Hess_S f(c), all q, r
            qn = np.abs(np.linalg.eigvalsh(Q)).max(axis=-1)
            quad = 0.5 * abs(sign) * np.einsum("nq,nqr,nr->n", Hw, qn, Hw)
            lb3 = (lin - quad - cubic * h2 ** 1.5 - grad_round * Hw.sum(1)
                   - 0.5 * curv_round * Hw.sum(1) ** 2)
            lb = np.maximum(lb, lb3)
        return g, lb

    def evaluate(X, Hw):
        g, lb = np.empty(len(X)), np.empty(len(X))
        for s in range(0, len(X), rows):
            gb, lb2 = block(X[s:s + rows], Hw[s:s + rows])
            r = norm_f * representer_radius(kernel, kind, Hw[s:s + rows], feature=feature,
                                            subset=subset)
            if kind == "value":
                r = r + Hw[s:s + rows] @ np.abs(beta[1:])
            first = gb - abs(sign) * r - roundoff
            g[s:s + rows] = gb
            lb[s:s + rows] = first if lb2 is None else np.minimum(np.maximum(first, lb2 - roundoff),
                                                                  gb)
        return g, lb

    return certify_box(evaluate, None, box_lo, box_hi, goal=goal,
                       tol=tol * scale if atol is None else atol,
                       max_cells=max_cells, initial=initial, split=split)

