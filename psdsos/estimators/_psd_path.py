"""The fits behind :class:`~psdsos.estimators.PSDRegressorCV`: one split's ``lam2`` path
with warm starts (:func:`_fit_path`), and the folds started from the fits on all the data
(:func:`_fit_folds`: the full-data solution moved to each fold, and its Hessian as the
fold's first metric).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from psdsos._params import (
    resolve_kernel,
)
from psdsos.estimators._psd import PSDRegressor
from psdsos.kernels import Kernel
from psdsos.problems import PSDLeastSquares
from psdsos.solvers import dual_hessian

__all__: list[str] = []


def _closed_form_init(kernel: Kernel, X: np.ndarray, M: np.ndarray,
                      lam2: float) -> np.ndarray | None:
    r"""The dual solution when the PSD constraint is inactive, else None.

    Without the constraint (and lam1 = 0) eq. (11) with exact features is kernel ridge with
    the kernel :math:`k^2` and ridge :math:`m\lambda_2`: :math:`F = \mathbf K_2 C`,
    :math:`C = (\mathbf K_2 + m\lambda_2 I)^{-1}\mathbf M`, :math:`\mathbf B = \sum_i
    \phi_i\phi_i^T\otimes C_i`; with the features invertible, B is PSD iff every C_i is.
    Then it is the constrained optimum too, and :math:`\Gamma_i = (F_i - \mathbf M_i) / m`.
    """
    m, d = M.shape[0], M.shape[1]
    K = np.asarray(kernel(X, X), dtype=np.float64)
    A = K * K + m * lam2 * np.eye(m)
    try:
        C = np.linalg.solve(A, M.reshape(m, d * d)).reshape(M.shape)
    except np.linalg.LinAlgError:
        return None
    C = (C + np.swapaxes(C, 1, 2)) / 2
    if np.linalg.eigvalsh(C).min() < 0:
        return None
    F = np.einsum("ij,jab->iab", K * K, C)
    return (F - M) / m


def _fit_converged(est: PSDRegressor, X: np.ndarray, M: np.ndarray,
                   w: np.ndarray | None = None) -> bool:
    """Fit; True unless the solver stopped at max_iter (its ConvergenceWarning is counted,
    not shown; other warnings pass through)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X, M, sample_weight=w)
    for c in caught:
        if not issubclass(c.category, ConvergenceWarning):
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
    return not any(issubclass(c.category, ConvergenceWarning) for c in caught)


def _fit_path(base: PSDRegressor, kernel: Any, sigma: float, lam2s: Sequence[float],
              X: np.ndarray, M: np.ndarray, w: np.ndarray | None, train: np.ndarray,
              test: np.ndarray, scorer: Callable[..., float],
              closed_form: bool, M_fit: np.ndarray | None = None
              ) -> list[tuple[float, float, float, int, bool, bool]]:
    """One split, one (kernel, sigma): the lam2 path from large to small on one estimator
    with ``warm_start=True``.  Per lam2 (in the order given): (score, fit time, score time,
    iterations, converged, closed form applied).  ``M_fit``: the targets the model fits
    (the roots with ``target="sqrt"``; default M), for the closed-form start."""
    M_fit = M if M_fit is None else M_fit
    est = clone(base).set_params(kernel=kernel, sigma=sigma, warm_start=True)
    order = sorted(range(len(lam2s)), key=lambda i: -lam2s[i])
    Xtr, Mtr = X[train], M[train]
    wtr = None if w is None else w[train]
    fitted_kernel = resolve_kernel(kernel, sigma, Xtr)
    out: list[Any] = [None] * len(lam2s)
    for i in order:
        lam2 = float(lam2s[i])
        est.set_params(lam2=lam2)
        used = False
        t0 = time.perf_counter()
        if closed_form and Mtr.ndim == 3:
            G = _closed_form_init(fitted_kernel, Xtr, M_fit[train], lam2)
            if G is not None:
                est.dual_coef_ = G
                used = True
        converged = _fit_converged(est, Xtr, Mtr, wtr)
        t1 = time.perf_counter()
        score = float(scorer(est, X[test], M[test]))
        out[i] = (score, t1 - t0, time.perf_counter() - t1, int(est.n_iter_), converged, used,
                  getattr(est, "_n_hessian", 0))
    return out


#: The full-data fits that start the folds (:func:`_fit_folds`) run at this fraction of
#: ``cv_tol``: a start closer to the fold's optimum than the folds' own tolerance.
_FULL_TOL_FACTOR = 1e-2


def _fold_transfer(K2: np.ndarray, train: np.ndarray, test: np.ndarray,
                   rcond: float = 1e-6) -> np.ndarray:
    r"""C (n_train, n_test) with :math:`\sum_{j} C_{jh}\,\phi_j\phi_j^T \approx \phi_h\phi_h^T`
    (least squares in the Frobenius norm, whose Gram matrix is
    :math:`\mathbf K\circ\mathbf K`; a pseudo-inverse cut at ``rcond`` times its largest
    eigenvalue).

    A dual point :math:`\Gamma` of all the data becomes :math:`\Gamma_j + \sum_h C_{jh}
    \Gamma_h` on a fold's training points j: the held-out blocks
    :math:`\Psi_h\Gamma_h\Psi_h^T` of :math:`\mathcal A^*(\Gamma)` are carried by the
    training points instead of dropped, so that the fold's :math:`S = \mathcal
    A^*(\Gamma)`, and with it its negative part (the primal B), stays nearly that of the
    full fit.  Dropping them moves S by :math:`\Psi_h\Gamma_h\Psi_h^T`, which at small
    :math:`\lambda_2` is far larger than the negative part itself (:math:`\lambda_2 B`): a
    start whose dual value is off by orders of magnitude.
    """
    A = K2[np.ix_(train, train)]
    w, V = np.linalg.eigh(A)
    keep = w > rcond * max(float(w[-1]), 0.0)
    Vk = V[:, keep]
    return Vk @ ((Vk.T @ K2[np.ix_(train, test)]) / w[keep, None])


def _fit_folds(base: PSDRegressor, kernel: Any, sigma: float, lam2s: Sequence[float],
               X: np.ndarray, M: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]],
               scorer: Callable[..., float], closed_form: bool,
               full_tol: float, M_fit: np.ndarray | None = None
               ) -> tuple[list[list[tuple[float, ...]]], float]:
    """One (kernel, sigma), every split, started from the fits on all the data.

    The lam2 path is fitted on all the data (large to small, warm starts, quasi-Newton
    steps), and at each lam2 the dual solution and its generalized Hessian
    (:func:`psdsos.solvers.dual_hessian`) are kept.  Each fold's fit then starts from that
    solution moved to the fold (:func:`_fold_transfer`), with that Hessian restricted to
    the fold's points (and the fold's curvature of q) as its first metric, and stops on
    its own relative duality gap ``cv_tol`` like any other fit.  Returns, per split, per
    lam2 (in the order given), the rows of :func:`_fit_path` (the time of the full-data
    fits shared among the splits), and the time of the full-data fits.
    """
    n = len(X)
    M_fit = M if M_fit is None else M_fit  # the targets the model fits (roots: "sqrt")
    order = sorted(range(len(lam2s)), key=lambda i: -lam2s[i])
    fitted_kernel = resolve_kernel(kernel, sigma, X)
    t0 = time.perf_counter()
    K = np.asarray(fitted_kernel(X, X), dtype=np.float64)
    K2 = K * K
    full = clone(base).set_params(kernel=kernel, sigma=sigma, tol=full_tol)
    starts: dict[int, tuple[np.ndarray, np.ndarray, float, bool]] = {}
    previous = None
    for i in order:
        lam2 = float(lam2s[i])
        full.set_params(lam2=lam2)
        if previous is not None:
            # from the previous lam2's solution, in its Hessian n I + N / lam2' rescaled
            # to n I + N / lam2 (the negative part's curvature N as it was there)
            G, H, lam2_prev = previous
            H = H * (lam2_prev / lam2)
            H[np.diag_indices_from(H)] += n * (1.0 - lam2_prev / lam2)
            full._dual_start = (G, H)
        with warnings.catch_warnings():
            # a start only: every fold's fit is certified on its own
            warnings.simplefilter("ignore", ConvergenceWarning)
            full.fit(X, M)
        G = full.dual_coef_
        problem = PSDLeastSquares(full.features_.transform(X), np.zeros(G.shape),
                                  float(base.lam1), lam2)
        H = dual_hessian(problem, G)  # scale-invariant: G and lam1 in the targets' units
        # the folds look for an inactive constraint only where all the data have one
        inactive = closed_form and M.ndim == 3 and (
            _closed_form_init(fitted_kernel, X, M_fit, lam2) is not None)
        starts[i] = (G, H, time.perf_counter() - t0, inactive)
        previous = (G, H, lam2)
        t0 = time.perf_counter()
    d = G.shape[1]
    p = d * (d + 1) // 2
    out = []
    for train, test in folds:
        C = _fold_transfer(K2, train, test)
        coords = (train[:, None] * p + np.arange(p)).ravel()
        est = clone(base).set_params(kernel=kernel, sigma=sigma)
        Xtr, Mtr = X[train], M[train]
        rows: list[Any] = [None] * len(lam2s)
        for i in order:
            G, H, t_full, inactive = starts[i]
            lam2 = float(lam2s[i])
            t1 = time.perf_counter()
            init = G[train] + np.einsum("rh,hab->rab", C, G[test])
            metric = H[np.ix_(coords, coords)]
            metric[np.diag_indices_from(metric)] -= n - len(train)  # q's curvature: m
            used = False
            if inactive:
                Gc = _closed_form_init(fitted_kernel, Xtr, M_fit[train], lam2)
                if Gc is not None:
                    init, used = Gc, True
            est.set_params(lam2=lam2)
            est._dual_start = (init, metric)
            converged = _fit_converged(est, Xtr, Mtr)
            t2 = time.perf_counter()
            score = float(scorer(est, X[test], M[test]))
            rows[i] = (score, t2 - t1 + t_full / len(folds), time.perf_counter() - t2,
                       int(est.n_iter_), converged, used, getattr(est, "_n_hessian", 0))
        out.append(rows)
    return out, sum(start[2] for start in starts.values())
