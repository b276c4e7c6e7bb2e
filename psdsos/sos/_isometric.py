r"""The convex-regression primal in RKHS-isometric coordinates, built with CVXPY.

Shared by the approximate, landmark and exact representations of convex regression
(:func:`convex_regression_cvxpy`), with the helpers that map its solution back
(:func:`coefficients`, :func:`coupling_dual`) and choose its coordinates
(:func:`isometric_basis`, :func:`orthonormal_design`).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from psdsos.sos._primitive import SoSBlock

__all__ = ["convex_regression_cvxpy", "coefficients", "coupling_dual", "isometric_basis",
           "orthonormal_design", "quadratic_form"]


def quadratic_form(G, theta):
    r""":math:`\max(0, \theta^T\mathbf G\theta)` in extended precision (``np.longdouble``).

    The coefficients of an ill-conditioned kernel expansion are large (|alpha| ~ 1e5 for
    cond(K) ~ 1e10) and cancel: in float64 the form loses ~ n eps |alpha|^T|K||alpha|, an
    eigendecomposition more.  Extended precision (where the platform has it; float64
    otherwise) costs one non-BLAS matrix-vector product.
    """
    Gl = np.asarray(G, dtype=np.longdouble)
    t = np.asarray(theta, dtype=np.longdouble)
    return max(0.0, float(t @ (Gl @ t)))


def isometric_basis(V, w, rtol):
    r"""(V_k, sqrt(w_k)) for the eigenpairs of a Gram matrix with :math:`w_k > r w_{\max}`.

    Along a dropped direction a function of RKHS norm 1 has values of size at most
    :math:`\sqrt{w_k}`.  The approximate representation divides the Hessian rows by
    :math:`\sqrt{w_k}`, so it keeps only directions above the eigenvalues' rounding level
    (r = n eps: rounding in the rows is amplified at most by :math:`(n\epsilon)^{-1/2}`);
    the exact representation only multiplies by :math:`\sqrt{w_k}` and keeps every
    direction above :math:`\epsilon^2` (dropping more measurably raises the optimum).
    """
    w = np.asarray(w, dtype=np.float64)
    N = w.shape[0]
    wmax = float(np.max(w)) if N else 0.0
    keep = w > rtol * max(wmax, 1e-300)
    if not np.any(keep):
        keep = w >= wmax  # the zero kernel matrix: one (null) direction keeps shapes valid
    return V[:, keep], np.sqrt(np.maximum(w[keep], 1e-300))


def orthonormal_design(E):
    """(Q, Te): E beta = Q b with Q orthonormal columns, beta = Te b (min-norm on a
    rank-deficient E); (None, None) without E."""
    if E is None:
        return None, None
    U, S, Wt = np.linalg.svd(E, full_matrices=False)
    smax = float(S[0]) if S.size else 0.0
    keep = S > max(E.shape) * np.finfo(np.float64).eps * max(smax, 1e-300)
    return U[:, keep], Wt[keep].T / S[keep]


def coupling_dual(params, m, d):
    r"""The symmetric multipliers :math:`\Gamma_j` of the Hessian equality constraints of
    a CVXPY solve, in the convention of :func:`psdsos.solvers.solve_dual`.

    CVXPY's multiplier y of the packed constraint (one entry per p <= q) relates to the
    Frobenius pairing by :math:`\Gamma_{pq} = -y_k / w_k` (w = 1 on diagonals, 2 off).
    """
    y = params["coupling"].dual_value
    if y is None:
        return None
    y = np.asarray(y, dtype=np.float64).reshape(m, -1)
    iu, ju = np.triu_indices(d)
    c = -y / np.where(iu == ju, 1.0, 2.0)
    G = np.zeros((m, d, d))
    G[:, iu, ju] = c
    G[:, ju, iu] = c
    return G


def convex_regression_cvxpy(Phi, d, y, F, Hu, E, n=None):
    r"""The primal QP + SDP shared by both representations of convex regression.

    .. math::

        \min_{u,\,b,\,\mathbf B\succeq 0}\ \frac1n\|y - F u - Q b\|^2
          + \rho\|u\|^2 + \lambda_1\operatorname{Tr}\mathbf B
          + \frac{\lambda_2}{2}\|\mathbf B\|_F^2
        \quad\text{s.t.}\quad H_u u = \operatorname{vech}(\Psi_j^T\mathbf B\Psi_j)_j,

    in RKHS-isometric coordinates u (:math:`\|f\|_{\mathcal H} = \|u\|`): the fit matrix
    F (n x k) holds the values at the training points of an orthonormal family of
    functions, H_u (m t x k, t = d(d+1)/2) their packed Hessians at the constraint points,
    Q an orthonormal basis of the range of the unpenalized design E (``n``: the number of
    samples the data term averages over, F.shape[0] by default; the compressed rows of
    :class:`ConvexRegressionNystromProblem` stand for more samples).  Every block is then
    bounded by the kernel's values and derivatives whatever the conditioning of the kernel
    matrix, which an interior-point or splitting solver needs to reach its tolerance.
    Built once through the SoS primitive, DPP in the Parameters rho, lam1, lam2.  Returns
    (problem, B, params) with the variables ``"u"``, ``"b"`` (None without E), the
    equality constraint ``"coupling"`` and ``"Te"`` (beta = Te b).
    """
    k = F.shape[1]
    n = F.shape[0] if n is None else int(n)
    m, t = Phi.shape[0], d * (d + 1) // 2
    block = SoSBlock(Phi, d, max_condition=None)  # certified by solve_primal
    u = cp.Variable(k, name="u")
    rho = cp.Parameter(nonneg=True, name="rho")
    lam1 = cp.Parameter(nonneg=True, name="lam1")
    lam2 = cp.Parameter(nonneg=True, name="lam2")
    fit = F @ u
    Q, Te = orthonormal_design(E)
    b = None
    if Q is not None:
        b = cp.Variable(Q.shape[1], name="b")
        fit = fit + Q @ b
    obj = (cp.sum_squares(y - fit) / n + rho * cp.sum_squares(u)
           + block.regularizer(lam1, lam2))
    cons = block.constraints_packed(cp.reshape(Hu @ u, (m, t), order="C"))
    prob = cp.Problem(cp.Minimize(obj), cons)
    return prob, block.B, {"rho": rho, "lam1": lam1, "lam2": lam2, "u": u, "b": b,
                           "coupling": cons[0], "Te": Te, "F": F, "Hu": Hu, "Q": Q}


def _set_weights(cvx, rho, lam1, lam2):
    prob, B, params = cvx
    params["rho"].value = rho
    params["lam1"].value = lam1
    params["lam2"].value = lam2
    return prob, B, params


def coefficients(params):
    """(theta, beta) from a solved :func:`convex_regression_cvxpy` program."""
    theta = params["T"] @ np.asarray(params["u"].value, dtype=np.float64)
    if params["b"] is None:
        return theta, np.zeros(0)
    return theta, params["Te"] @ np.asarray(params["b"].value, dtype=np.float64)
