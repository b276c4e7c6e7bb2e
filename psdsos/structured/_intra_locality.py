r"""The empirical intra-locality matrix of Ciliberto, Bach and Rudi (NeurIPS 2019, eq. 21)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from psdsos._params import resolve_kernel
from psdsos.kernels import Kernel, LinearKernel, get_kernel
from psdsos.structured._common import as_finite
from psdsos.structured.parts import Parts

__all__ = ["intra_locality"]


def intra_locality(X: ArrayLike, parts: Parts, kernel: str | Kernel | LinearKernel = "linear",
                   sigma: float | str = "scale", *, rows: ArrayLike | None = None,
                   normalize: bool = False) -> NDArray[np.float64]:
    r"""Empirical intra-locality matrix :math:`C_{pq}` of eq. 21 (Lemma 6; Figures 3 and 7).

    .. math::

        C_{pq} = \mathbb E_{x, x'}\big[\bar K(x_p, x_q)^2 - \bar K(x_p, x'_q)^2\big],

    estimated without bias by the U-statistic

    .. math::

        \hat C_{pq} = \frac1n \sum_i \bar K(x_{i,p}, x_{i,q})^2
            - \frac{1}{n(n-1)} \sum_{i \ne i'} \bar K(x_{i,p}, x_{i',q})^2 .

    For the linear kernel the second sum is computed from the second-moment matrices of the
    parts, :math:`\sum_{i,i'} \langle x_{i,p}, x_{i',q}\rangle^2 = \langle S_p, S_q
    \rangle_F`, :math:`S_p = \sum_i x_{i,p} x_{i,p}^\top`
    (:math:`O(|P| n d^2 + |P|^2 d^2)`); other kernels take :math:`O(|P|^2 n^2 d)`.

    Parameters
    ----------
    X : array-like of shape (n_samples, input_dim), n_samples >= 2
    parts : Parts
    kernel : str, Kernel or LinearKernel, default="linear"
        :math:`\bar K`.
    sigma : "scale" or float, default="scale"
        Bandwidth of a radial kernel given by name ("scale": of the input parts).
    rows : None or array-like of int, default=None
        Compute only the rows :math:`C_{p\cdot}` of these parts p (Figure 7: the central
        patch against all others); None: all rows.
    normalize : bool, default=False
        Return :math:`C_{pq} / \sqrt{C_{pp} C_{qq}}` (for the data of section 6.1, eq. 23,
        and the linear kernel this is :math:`e^{-2\gamma|p-q|/|P|}` in expectation).

    Returns
    -------
    C : ndarray of shape (n_rows, n_parts)
        n_rows = n_parts, or len(rows).

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import intra_locality
    >>> from psdsos.structured.parts import Blocks
    >>> X = np.random.default_rng(0).normal(size=(50, 6))
    >>> intra_locality(X, Blocks(3, 2), "linear", normalize=True).shape
    (3, 3)
    """
    if not isinstance(parts, Parts):
        raise ValueError(f"parts must be a psdsos.structured.parts object, got {parts!r}")
    X = as_finite(X, "X")
    if X.ndim > 2:
        X = X.reshape(X.shape[0], -1)
    if X.ndim != 2 or X.shape[1] != parts.input_dim or X.shape[0] < 2:
        raise ValueError(f"X must have shape (n_samples >= 2, {parts.input_dim}), got "
                         f"{X.shape}")
    Xp = parts.extract_inputs(X)  # (n, P, d)
    n, P, d = Xp.shape
    if isinstance(kernel, str) and kernel.lower() == "linear":
        kernel = LinearKernel()
    if not isinstance(kernel, (Kernel, LinearKernel)):
        if isinstance(sigma, str) and sigma == "scale":
            kern = resolve_kernel(kernel, sigma, Xp.reshape(n * P, d))
        else:  # a string other than "scale" is refused by get_kernel (ValueError naming sigma)
            kern = get_kernel(kernel, sigma)  # type: ignore[arg-type]
    else:
        kern = kernel
    rows = np.arange(P) if rows is None else np.asarray(rows, dtype=np.int64).ravel()
    if rows.size == 0 or rows.min() < 0 or rows.max() >= P:
        raise ValueError(f"rows must be part indices in 0..{P - 1}, got {rows!r}")
    C = np.empty((len(rows), P))
    diag = np.empty(P)
    if isinstance(kern, LinearKernel):
        S = np.einsum("ipd,ipe->pde", Xp, Xp)  # (P, d, d)
        for a, p in enumerate(rows):
            same = np.sum(np.einsum("id,iqd->iq", Xp[:, p], Xp) ** 2, axis=0)  # (P,)
            total = np.einsum("de,qde->q", S[p], S)
            C[a] = same / n - (total - same) / (n * (n - 1))
        if normalize:
            same = np.sum(np.einsum("ipd,ipd->ip", Xp, Xp) ** 2, axis=0)
            total = np.einsum("pde,pde->p", S, S)
            diag = same / n - (total - same) / (n * (n - 1))
    else:
        flat = Xp.transpose(1, 0, 2).reshape(P * n, d)
        for a, p in enumerate(rows):
            K2 = (kern(Xp[:, p], flat) ** 2).reshape(n, P, n)  # [i, q, i']
            tr = np.einsum("iqi->q", K2)
            C[a] = tr / n - (K2.sum(axis=(0, 2)) - tr) / (n * (n - 1))
        if normalize:
            for q in range(P):
                K2 = kern(Xp[:, q], Xp[:, q]) ** 2
                tr = np.trace(K2)
                diag[q] = tr / n - (K2.sum() - tr) / (n * (n - 1))
    if normalize:
        dg = np.sqrt(np.clip(diag, 1e-300, None))
        C = C / dg[rows][:, None] / dg[None, :]
    return C
