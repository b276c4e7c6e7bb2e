r"""Localized structured prediction by parts (Ciliberto, Bach, Rudi, NeurIPS 2019).

The loss of a structured output decomposes over parts :math:`p \in P` (eq. 5),

.. math::

    \Delta(z, y \mid x) = \sum_{p \in P} \pi(p \mid x)\, L_p(z_p, y_p \mid x_p),

and the estimator of eq. 6 learns from an auxiliary dataset of (input, part, output-part)
triples :math:`(\chi_j, p_j, \eta_j)_{j=1}^m` (Algorithm 1):

.. math::

    \hat f(x) = \operatorname*{argmin}_{z} \sum_{p \in P} \sum_{j=1}^m \alpha_j(x, p)\,
        \pi(p \mid x)\, L_p(z_p, \eta_j), \qquad
    \alpha(x, p) = (\mathbf K + m\lambda I)^{-1} \nu(x, p)  \quad \text{(eq. 9)},

with a kernel on :math:`X \times P`: the restriction kernel
:math:`K((x, p), (x', q)) = \bar K(x_p, x'_q)` (eq. 20), the universal kernel
:math:`K_0(x, x')\,\delta_{pq}` (eq. 13), or their sum (Remark 3).

When the part loss is linear in an embedding of the output elements,
:math:`L_p(\zeta, \eta) = \frac{1}{|p|}\sum_{u \in p} \big(c(\zeta_u) - \langle
\psi(\zeta_u), \varphi(\eta_u)\rangle\big)` (squared loss, Hamming/multiclass, orientations),
eq. 6 is minimized element by element from the weighted sums

.. math::

    c_u(x) = \sum_{p \ni u} \pi(p \mid x)\, g_p(x)_{[u]}, \qquad
    g_p(x) = \sum_{j=1}^m \alpha_j(x, p)\, \varphi(\eta_j) = \nu(x, p)^\top
        (\mathbf K + m\lambda I)^{-1} \Phi_\eta,

so the coefficient map times the embedded auxiliary outputs, :math:`(\mathbf K +
m\lambda I)^{-1}\Phi_\eta`, is computed once at fit and alpha is never formed at predict
time (only the per-part scores :math:`g_p(x)`, of the size of the outputs).
"""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from psdsos._params import Interval, Options, RandomState, validate_params
from psdsos._persistence import register_loadable, save_estimator
from psdsos._validation import PathLike, RandomStateLike, check_random_state, validate_data
from psdsos.estimators._base import SELF_KERNEL_OPTIONS, Bandwidth, resolve_kernel
from psdsos.features import cholesky_with_jitter
from psdsos.kernels import Kernel, LinearKernel, get_kernel
from psdsos.structured._base import OutputSpace
from psdsos.structured._common import as_finite
from psdsos.structured._estimator import _OutputOption, _params_from_meta, _space_from_meta
from psdsos.structured._registry import get_output_space, output_spaces
from psdsos.structured.parts import Blocks, Parts, Patches2D, Windows1D
from psdsos.structured.spaces import EuclideanSpace, MulticlassSpace, OrientationSpace, SphereSpace
from psdsos.structured.spaces.orientation import wrap_orientation

__all__ = ["LocalizedSELF", "intra_locality"]

#: Float64 entries of one block of kernel values at predict time (~256 MB).
_BLOCK_ENTRIES = 1 << 25


# ----------------------------------------------------------------------------- options
class _PartsOption:
    def check(self, name, value, owner):
        if value is None or isinstance(value, Parts):
            return
        raise ValueError(f"{name} of {owner} must be None (one part: the whole input and "
                         f"output) or a psdsos.structured.parts object (Blocks, Windows1D, "
                         f"Patches2D), got {value!r}")


class _PartWeightsOption:
    def check(self, name, value, owner):
        if value is None or callable(value):
            return
        w = np.asarray(value)
        if (w.ndim == 1 and w.size > 0 and w.dtype.kind in "fiu" and np.all(np.isfinite(w))
                and np.all(w >= 0) and np.sum(w) > 0):
            return
        raise ValueError(f"{name} of {owner} must be None (uniform pi(p|x) = 1/|P|), a "
                         "non-negative finite vector of length n_parts with a positive sum, "
                         f"or a callable X -> (n_samples, n_parts) weights, got {value!r}")


# ----------------------------------------------------------------------------- parts I/O
def _parts_config(parts):
    """JSON description of a built-in parts object (None for the default single part)."""
    if parts is None:
        return None
    if type(parts) is Blocks:
        return {"class": "Blocks", "args": [parts.n_blocks, parts.input_size,
                                           parts.output_size]}
    if type(parts) is Windows1D:
        return {"class": "Windows1D", "args": [parts.length, parts.width, parts.stride,
                                              parts.circular]}
    if type(parts) is Patches2D:
        return {"class": "Patches2D", "args": [list(parts.shape), parts.size, parts.stride,
                                              parts.circular]}
    raise ValueError(f"cannot save LocalizedSELF with parts {parts!r}: only Blocks, Windows1D "
                     "and Patches2D are saved")


def _parts_from_config(cfg):
    if cfg is None:
        return None
    classes = {"Blocks": Blocks, "Windows1D": Windows1D, "Patches2D": Patches2D}
    if not isinstance(cfg, dict) or cfg.get("class") not in classes:
        raise ValueError(f"metadata entry 'parts' must name Blocks, Windows1D or Patches2D, "
                         f"got {cfg!r}")
    args = list(cfg.get("args", []))
    if cfg["class"] == "Patches2D" and args:
        args[0] = tuple(args[0])
    return classes[cfg["class"]](*args)


def _sample_aux(m, pi, n, P, rng):
    """Algorithm 1's sampling: i_j uniform on 0..n-1, p_j ~ pi(. | x_{i_j}) (uniform when
    ``pi`` is None), with replacement; memory O(m + n P) (never an (m, P) array)."""
    ii = rng.integers(n, size=m)
    if pi is None:
        return ii, rng.integers(P, size=m)
    pp = np.empty(m, dtype=np.int64)
    for i in np.unique(ii):
        sel = np.flatnonzero(ii == i)
        pp[sel] = rng.choice(P, size=len(sel), p=pi[i])
    return ii, pp


# ----------------------------------------------------------------------------- elements
class _Elements:
    """How the output elements are embedded and decoded (see the module docstring).

    ``kind``: "euclidean" (phi(y) = y, z_u = c_u / sum_{p ni u} pi_p, then the box),
    "orientation" (phi(y) = (cos 2y, sin 2y), z_u = atan2 / 2), "multiclass" (one-hot,
    z_u = argmax) or "generic" (Algorithm 3 only).
    """

    def __init__(self, space):
        self.space = space
        if type(space) is EuclideanSpace and space.constraint in (None, "box"):
            self.kind, self.e = "euclidean", 1
        elif type(space) is OrientationSpace:
            self.kind, self.e = "orientation", 2
        elif type(space) is MulticlassSpace:
            self.kind, self.e = "multiclass", None
        else:
            self.kind, self.e = "generic", None

    @property
    def closed_form(self):
        return self.kind != "generic"

    def check(self, Y, output_dim, name="y"):
        """Validated elements (n, output_dim, *element_shape) and the original target shape."""
        if self.kind == "multiclass":
            A = np.asarray(Y)
        else:
            A = as_finite(Y, name)
        if A.ndim == 0 or A.shape[0] < 1:
            raise ValueError(f"{name} must have one row per sample, got shape {A.shape}")
        shape = A.shape[1:]
        n = A.shape[0]
        if self.kind != "generic" or (A.ndim >= 2 and A.shape[1] != output_dim):
            if int(np.prod(shape, dtype=np.int64)) != output_dim:
                raise ValueError(f"{name} must have shape (n_samples, {output_dim}) (or "
                                 f"(n_samples, ...) with {output_dim} entries per sample: the "
                                 f"output dimension of the parts), got {A.shape}")
            A = A.reshape(n, output_dim)
        elif A.ndim < 2:
            raise ValueError(f"{name} must have shape (n_samples, {output_dim}, ...), got "
                             f"{A.shape}")
        flat = A.reshape(n * output_dim, *A.shape[2:])
        if self.kind == "multiclass":
            self.space.check_Y(flat, name)
        elif self.kind == "euclidean":
            self.space.check_Y(flat[:, None], name)
        else:
            self.space.check_Y(flat, name)
        return A, shape

    def fit(self, Y):
        """Fit on the training elements (n, output_dim, ...); returns the encoded values."""
        n, d = Y.shape[:2]
        flat = Y.reshape(n * d, *Y.shape[2:])
        if self.kind == "multiclass":
            self.space.fit(flat)
            self.classes_ = self.space.classes_
            self.e = len(self.classes_)
            return self.space.encode(flat).reshape(n, d)
        if self.kind == "euclidean":
            self.space.fit(flat[:, None])
            return np.asarray(Y, dtype=np.float64)
        self.space.fit(flat)
        return np.asarray(self.space.Y_train_, dtype=np.float64).reshape(Y.shape)

    def embed(self, V):
        """phi of encoded values V (...,) -> (..., e)."""
        if self.kind == "euclidean":
            return V[..., None]
        if self.kind == "orientation":
            return np.stack([np.cos(2 * V), np.sin(2 * V)], axis=-1)
        out = np.zeros((*V.shape, self.e))
        np.put_along_axis(out, V[..., None].astype(np.int64), 1.0, axis=-1)
        return out

    def decode(self, c, wsum):
        """Per-element minimizers from c (n, d, e) and the part weights wsum (n, d)."""
        if self.kind == "euclidean":
            z = c[..., 0] / wsum
            return self.space.project(z) if self.space.constraint is not None else z
        if self.kind == "orientation":
            return wrap_orientation(0.5 * np.arctan2(c[..., 1], c[..., 0]))
        return self.classes_[np.argmax(c, axis=-1)]

    # ---- Algorithm 3 (stochastic subgradient) ------------------------------------------
    def sgd_supported(self):
        if self.kind in ("euclidean", "orientation") or isinstance(self.space, SphereSpace):
            return True
        return (self.kind == "generic" and callable(getattr(self.space, "loss_gradient", None))
                and type(self.space).project is not OutputSpace.project)

    def loss(self, Z, E):
        """Element losses L(z, eta), broadcasting Z (..., *el) against E (..., *el)."""
        if self.kind == "euclidean":
            return (Z - E) ** 2
        if self.kind == "orientation":
            return np.sin(Z - E) ** 2
        if isinstance(self.space, SphereSpace):
            return np.arccos(np.clip(np.sum(Z * E, axis=-1), -1.0, 1.0)) ** 2
        Z, E = np.broadcast_arrays(Z, E)
        el = self.space.Y_train_.shape[1:]
        shape = Z.shape[:Z.ndim - len(el)]
        return self.space.loss(E.reshape(-1, *el), Z.reshape(-1, *el)).reshape(shape)

    def grad(self, Z, E):
        """Ambient (sub)gradient in z of L(z, eta), shape of Z."""
        if self.kind == "euclidean":
            return 2.0 * (Z - E)
        if self.kind == "orientation":
            return np.sin(2.0 * (Z - E))
        if isinstance(self.space, SphereSpace):
            cos = np.clip(np.sum(Z * E, axis=-1), -1.0, 1.0)
            th = np.arccos(cos)
            s = np.sin(th)
            ratio = np.where(s > 1e-12, th / np.maximum(s, 1e-12), 1.0)
            return -2.0 * ratio[..., None] * E
        return np.asarray(self.space.loss_gradient(Z, E), dtype=np.float64)

    def project(self, Z):
        if self.kind == "euclidean":
            return self.space.project(Z) if self.space.constraint is not None else Z
        if self.kind == "orientation":
            return wrap_orientation(Z)
        if isinstance(self.space, SphereSpace):
            nrm = np.linalg.norm(Z, axis=-1, keepdims=True)
            return np.where(nrm > 0, Z / np.maximum(nrm, 1e-300), 1.0 / np.sqrt(Z.shape[-1]))
        el = self.space.Y_train_.shape[1:]
        return np.asarray(self.space.project(Z.reshape(-1, *el)),
                          dtype=np.float64).reshape(Z.shape)


# ----------------------------------------------------------------------------- estimator
@register_loadable
class LocalizedSELF(BaseEstimator):
    r"""Structured prediction by parts: Algorithm 1 and eq. 6 of Ciliberto, Bach and Rudi.

    .. math::

        \hat f(x) = \operatorname*{argmin}_{z} \sum_{p \in P} \sum_{j=1}^m
            \alpha_j(x, p)\, \pi(p \mid x)\, L_p(z_p, \eta_j),
        \qquad \alpha(x, p) = (\mathbf K + m\lambda I)^{-1} \nu(x, p)

    (eq. 6 and 9), learned from the auxiliary dataset :math:`(\chi_j, p_j, \eta_j)_{j=1}^m`
    of Algorithm 1: :math:`\chi_j = x_{i_j}` a training input, :math:`p_j` a part and
    :math:`\eta_j = [y_{i_j}]_{p_j}` the corresponding part of its output.
    :math:`\mathbf K_{jh} = k((\chi_j, p_j), (\chi_h, p_h))` and
    :math:`\nu(x, p)_j = k((\chi_j, p_j), (x, p))` use the kernel on :math:`X \times P` chosen
    by ``locality``:

    * ``"restriction"`` (eq. 20): :math:`k((x, p), (x', q)) = \bar K(x_p, x'_q)`, the kernel
      ``kernel`` on the input parts (a patch of x is compared with every patch of the
      training inputs, wherever it is);
    * ``"universal"`` (eq. 13): :math:`k((x, p), (x', q)) = K_0(x, x')\,\delta_{pq}`, the
      kernel ``kernel`` on whole inputs (with all pairs, :math:`|P|` separate SELF estimators);
    * ``"both"`` (Remark 3): their sum, universal and local at once.

    Part losses: the output elements (the entries of y) are compared by the loss of
    ``output``, averaged over the elements of a part, :math:`L_p(\zeta, \eta) =
    \frac{1}{|p|}\sum_{u} \ell(\zeta_u, \eta_u)`.  For "euclidean" (:math:`\ell` the squared
    loss), "orientation" (:math:`\sin^2(z - y)`, angles modulo pi) and "multiclass"
    (Hamming: the 0-1 loss per element) :math:`\ell` is linear in an embedding
    :math:`\varphi` of the element, and eq. 6 is solved exactly, element by element
    (``decode_method="closed_form"``), for weights of any sign:

    * euclidean: :math:`z_u = c_u / \sum_{p \ni u} \pi(p\mid x)` (the coefficient of
      :math:`z_u^2` is taken exactly, as in :class:`~psdsos.structured.EuclideanSpace`:
      kernel ridge on the parts, overlap-added), then the box of the space if it has one;
    * orientation: :math:`z_u = \tfrac12 \operatorname{atan2}(\operatorname{Im} c_u,
      \operatorname{Re} c_u)`, :math:`c_u = \sum_{p \ni u} \pi(p\mid x) \sum_j
      \alpha_j(x, p)\, e^{2 i \eta_{j,u}}`;
    * multiclass: :math:`z_u = \operatorname{argmax}_k c_{u,k}` (ties: first class);

    with :math:`c_u` computed from the per-part scores
    :math:`g_p(x) = \nu(x, p)^\top (\mathbf K + m\lambda I)^{-1}\Phi_\eta` (``part_scores``),
    whose coefficient map is precomputed at fit: alpha is never formed at predict time.

    Other output spaces (per element: "sphere" with unit-vector elements, or an
    :class:`~psdsos.structured.OutputSpace` object offering ``project`` and a
    ``loss_gradient(Z, Y)`` method) are decoded by Algorithm 3 of the paper (Appendix J,
    ``decode_method="sgd"``), a stochastic projected subgradient method: sample
    :math:`p \sim \pi(\cdot\mid x)`, then j with probability :math:`|\alpha_j(x,p)| / A(x,p)`,
    :math:`A = \sum_j |\alpha_j(x,p)|`, and step on :math:`z_p` along
    :math:`-\operatorname{sign}(\alpha_j) A\, \partial L_p(z_p, \eta_j)`.  It forms alpha
    explicitly (O(m :math:`|P|`) per test point: for small problems) and is a **heuristic**: with
    negative weights the objective is not convex and the method has no guarantee; it
    starts from the projected kernel-ridge average and returns the better (in the eq. 6
    objective, evaluated exactly) of that start and its last iterate.  Step sizes:
    :math:`\gamma = 1 / (2 A(x, p)\, t_p)` at the :math:`t_p`-th visit of part p (for the
    squared loss and positive weights the iterate is then the running mean of the sampled
    :math:`\eta_j`).  Note that for "euclidean" Algorithm 3 minimizes eq. 6 as written,
    whose coefficient of :math:`z_u^2` is :math:`\sum_{p \ni u} \pi(p\mid x)\sum_j
    \alpha_j(x, p)`, while the closed form takes that coefficient exactly (kernel ridge):
    the two differ unless the weights sum to one.

    Parameters
    ----------
    kernel : {"gaussian", "exponential", "matern32", "matern52", "linear"} or Kernel
        Default "gaussian".  :math:`\bar K` (on input parts) and :math:`K_0` (on whole
        inputs).  ``"linear"`` (:math:`\langle u, u'\rangle`, no bandwidth) gives the
        *Local-LS* estimator of section 6.1.
    sigma : "scale" or float, default="scale"
        Bandwidth of the kernels; "scale": :func:`psdsos.kernels.scale_bandwidth` of the
        auxiliary input parts (for :math:`\bar K`) and of the training inputs (for
        :math:`K_0`), each computed on its own inputs.  Ignored for "linear" and Kernel
        objects.
    lam : float, default=1e-3
        Ridge parameter lambda > 0 of eq. 9 (the system is :math:`\mathbf K + m\lambda I`).
    parts : Blocks, Windows1D, Patches2D or None, default=None
        The parts (:mod:`psdsos.structured.parts`); None: one part holding the whole input
        and output (then the estimator equals :class:`~psdsos.structured.SELFEstimator`).
    output : str or OutputSpace, default="euclidean"
        Space of the output *elements*: "euclidean" (real entries; an EuclideanSpace with
        ``constraint="box"`` is clipped to its box), "orientation" (angles), "multiclass"
        (labels), or, with ``decode_method="sgd"``, "sphere" (elements are unit vectors:
        y of shape (n, output_dim, k)) or an OutputSpace object as described above.
    locality : {"restriction", "universal", "both"}, default="restriction"
        Kernel on :math:`X \times P` (eq. 20, eq. 13, Remark 3).
    part_weights : None, array of shape (n_parts,) or callable, default=None
        :math:`\pi(p \mid x)`: None is uniform; a vector is normalized to sum to one; a
        callable maps X (n, input_dim) to non-negative weights (n, n_parts) (rows are
        normalized).  It weighs the parts in eq. 6 and samples :math:`p_j` in Algorithm 1.
    n_aux : int or None, default=None
        m.  None: every pair (training input, part) once, m = n :math:`|P|` (the part-based
        dataset of section 4).  An int: Algorithm 1's sampling, :math:`i_j` uniform and
        :math:`p_j \sim \pi(\cdot \mid x_{i_j})`, with replacement, seeded by
        ``random_state``.
    n_landmarks : int or None, default=None
        Nystrom rank r <= m (landmarks: auxiliary pairs drawn uniformly without
        replacement): :math:`\alpha(x, p) \approx \Phi(\Phi^\top\Phi + m\lambda
        I)^{-1}\phi(x, p)`, O(m r^2) training and O(r) per part at predict time, instead
        of O(m^3) and O(m).  None: exact (the m x m system; memory 8 m^2 bytes).
    landmarks : {"uniform"}, default="uniform"
    decode_method : {"auto", "closed_form", "sgd"}, default="auto"
        "auto": "closed_form" where it exists (euclidean, orientation, multiclass), else
        "sgd" (Algorithm 3).
    max_iter : int or None, default=None
        Algorithm 3: iterations per test point (None: 50 :math:`|P|`).
    tol : float or None, default=None
        Algorithm 3: stop once a sweep of :math:`|P|` iterations moves no entry of z by more than
        ``tol``; a :class:`~sklearn.exceptions.ConvergenceWarning` names ``max_iter`` when
        some test points do not get there (None: run ``max_iter`` iterations, no warning).
    random_state : None, int or Generator
        Seeds Algorithm 1's sampling, the Nystrom landmarks and Algorithm 3.

    Attributes
    ----------
    parts_ : Parts
        The parts used (``parts``, or the single part of the default).
    n_aux_ : int
        m, the size of the auxiliary dataset.
    aux_sample_ : ndarray (m,)
        :math:`i_j` of the auxiliary dataset.
    aux_part_ : ndarray (m,)
        :math:`p_j` of the auxiliary dataset.
    kernel_ : Kernel or LinearKernel
        :math:`\bar K` ("restriction", "both").
    kernel0_ : Kernel or LinearKernel
        :math:`K_0` ("universal", "both").
    coef_ : ndarray (m, D) or (r, D)
        Exact fit: :math:`(\mathbf K + m\lambda I)^{-1}\Phi_\eta`, D = output part size times
        the embedding dimension; Nystrom fit:
        :math:`(\Phi^\top\Phi + m\lambda I)^{-1}\Phi^\top\Phi_\eta`.
    landmark_index_ : ndarray (r,)
        Nystrom fit: the landmark pairs.
    R_ : ndarray (r, r)
        Nystrom fit: the upper Cholesky factor of the landmarks' kernel matrix (plus jitter).
    classes_ : ndarray
        "multiclass": the labels.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import LocalizedSELF
    >>> from psdsos.structured.parts import Windows1D
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 12))
    >>> Y = X / 3                        # every window of y is the same linear map of x's
    >>> model = LocalizedSELF("linear", lam=1e-6, parts=Windows1D(12, 3)).fit(X, Y)
    >>> bool(np.allclose(model.predict(X[:2]), Y[:2], atol=1e-4))
    True
    """

    _parameter_constraints = {
        "kernel": SELF_KERNEL_OPTIONS,
        "sigma": Bandwidth(),
        "lam": Interval(numbers.Real, 0.0, None, closed="neither"),
        "parts": _PartsOption(),
        "output": _OutputOption(),
        "locality": Options(["restriction", "universal", "both"]),
        "part_weights": _PartWeightsOption(),
        "n_aux": Interval(numbers.Integral, 1, None, allow_none=True),
        "n_landmarks": Interval(numbers.Integral, 1, None, allow_none=True),
        "landmarks": Options(["uniform"]),
        "decode_method": Options(["auto", "closed_form", "sgd"]),
        "max_iter": Interval(numbers.Integral, 1, None, allow_none=True),
        "tol": Interval(numbers.Real, 0.0, None, closed="neither", allow_none=True),
        "random_state": RandomState(),
    }

    def __init__(self, kernel: str | Kernel = "gaussian", sigma: float | str = "scale", *,
                 lam: float = 1e-3, parts: Parts | None = None,
                 output: str | OutputSpace = "euclidean", locality: str = "restriction",
                 part_weights: ArrayLike | Callable | None = None, n_aux: int | None = None,
                 n_landmarks: int | None = None, landmarks: str = "uniform",
                 decode_method: str = "auto", max_iter: int | None = None, tol: float | None = None,
                 random_state: RandomStateLike = None) -> None:
        self.kernel = kernel
        self.sigma = sigma
        self.lam = lam
        self.parts = parts
        self.output = output
        self.locality = locality
        self.part_weights = part_weights
        self.n_aux = n_aux
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.decode_method = decode_method
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        return tags

    # ---- helpers -------------------------------------------------------------------
    def _locality(self):
        loc = self.locality.lower()
        return loc in ("restriction", "both"), loc in ("universal", "both")

    def _flat_X(self, X: ArrayLike, reset: bool) -> np.ndarray:
        """X validated as (n, input_dim); arrays of images (n, ...) are flattened row-major."""
        if isinstance(X, np.ndarray) and X.ndim > 2:
            X = X.reshape(X.shape[0], -1)
        return validate_data(self, X, reset=reset, dtype=np.float64,
                             ensure_min_samples=2 if reset else 1)

    def _pi(self, X):
        """pi(p | x), shape (n, n_parts), rows summing to one."""
        P = self.parts_.n_parts
        w = self.part_weights
        if w is None:
            return np.full((X.shape[0], P), 1.0 / P)
        if callable(w):
            W = np.asarray(w(X), dtype=np.float64)
            if (W.shape != (X.shape[0], P) or not np.all(np.isfinite(W)) or np.any(W < 0)
                    or np.any(W.sum(axis=1) <= 0)):
                raise ValueError(f"part_weights(X) must return finite non-negative weights of "
                                 f"shape ({X.shape[0]}, {P}) with positive row sums, got "
                                 f"shape {W.shape}")
            return W / W.sum(axis=1, keepdims=True)
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (P,):
            raise ValueError(f"part_weights must have length n_parts = {P}, got {w.shape}")
        return np.broadcast_to(w / w.sum(), (X.shape[0], P))

    def _part_inputs(self, X, idx, part):
        """Input parts [x_idx]_part, shape (len(idx), input_part_size)."""
        return X[idx[:, None], self.parts_.input_index[part]]

    def _joint(self, Xa, ia, pa, Xb, ib, pb, K0ab=None):
        """k((x_a, p_a), (x_b, p_b)) for record lists (base inputs, sample index, part)."""
        local, universal = self._locality()
        K = 0.0
        if local:
            K = self.kernel_(self._part_inputs(Xa, ia, pa), self._part_inputs(Xb, ib, pb))
        if universal:
            if K0ab is None:
                K0ab = self.kernel0_(Xa, Xb)
            K = K + K0ab[ia[:, None], ib[None, :]] * (pa[:, None] == pb[None, :])
        return K

    # ---- fit ------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> LocalizedSELF:
        r"""Algorithm 1: the auxiliary dataset, then the coefficient map of eq. 9.

        Parameters
        ----------
        X : array-like of shape (n_samples, input_dim) (or (n_samples, ...) images,
            flattened row-major), n_samples >= 2
        y : array-like of shape (n_samples, output_dim) (or (n_samples, ...) with
            output_dim entries; predictions come back in that shape), or
            ``(n_samples, output_dim, *element_shape)`` for vector elements ("sphere").
            Labels of any hashable type for "multiclass".

        Returns
        -------
        self
        """
        validate_params(self)
        if y is None:
            raise ValueError("LocalizedSELF requires y to be passed, but the target y is None "
                             "(pass the outputs y)")
        X = self._flat_X(X, reset=True)
        n, input_dim = X.shape
        Y0 = np.asarray(y) if not isinstance(y, np.ndarray) else y
        if Y0.ndim == 1:
            Y0 = Y0[:, None]
            self._y_1d = True
        else:
            self._y_1d = False
        parts: Parts
        if self.parts is None:
            parts = Blocks(1, input_dim, int(np.prod(Y0.shape[1:], dtype=np.int64))
                           if Y0.ndim >= 2 else 1)
        else:
            parts = self.parts
        if parts.input_dim != input_dim:
            raise ValueError(f"X has {input_dim} features per sample but the parts {parts!r} "
                             f"expect input_dim = {parts.input_dim}")
        self.parts_ = parts
        space = copy.deepcopy(get_output_space(self.output))
        elements = _Elements(space)
        if self.decode_method == "closed_form" and not elements.closed_form:
            raise ValueError(f"decode_method='closed_form' needs an output whose element loss "
                             f"is linear in an embedding ('euclidean' without constraint or "
                             f"with a box, 'orientation', 'multiclass'), got {space!r}; use "
                             "decode_method='sgd' (Algorithm 3)")
        if self._decode_kind(elements) == "sgd" and not elements.sgd_supported():
            raise ValueError(f"output {space!r} cannot be decoded by LocalizedSELF: "
                             "decode_method='sgd' (Algorithm 3) needs 'euclidean', "
                             "'orientation', 'sphere' or an OutputSpace with project() and "
                             "loss_gradient(Z, Y)")
        Y, y_shape = elements.check(Y0, parts.output_dim)
        if len(Y) != n:
            raise ValueError(f"X and y have different numbers of samples: {n} and {len(Y)}")
        V = elements.fit(Y)  # encoded values (n, output_dim, ...)
        self.elements_ = elements
        self.y_shape_ = y_shape
        if hasattr(elements, "classes_"):
            self.classes_ = elements.classes_
        else:
            self.__dict__.pop("classes_", None)

        # Algorithm 1: the auxiliary dataset
        P = parts.n_parts
        rng = check_random_state(self.random_state)
        pi_train = self._pi(X)  # validates part_weights
        self._build_assembly()
        if np.any(np.asarray(self._Scount @ pi_train.T) <= 0):
            raise ValueError("part_weights give zero weight to every part that contains some "
                             "output entries: eq. 6 does not determine them; give every entry "
                             "a part of positive weight")
        if self.n_aux is None:
            ii = np.repeat(np.arange(n), P)
            pp = np.tile(np.arange(P), n)
        else:
            ii, pp = _sample_aux(int(self.n_aux), None if self.part_weights is None
                                 else pi_train, n, P, rng)
        m = len(ii)
        self.aux_sample_, self.aux_part_ = ii.astype(np.int64), pp.astype(np.int64)
        self.n_aux_ = m

        local, universal = self._locality()
        if local:
            self.kernel_ = resolve_kernel(self.kernel, self.sigma, self._part_inputs(X, ii, pp))
        if universal:
            self.kernel0_ = resolve_kernel(self.kernel, self.sigma, X)
        self.X_fit_ = X
        # embedded auxiliary outputs Phi_eta (m, D)
        eta = V[ii[:, None], parts.output_index[pp]]  # (m, d_out, ...)
        # the raw auxiliary outputs are kept only for Algorithm 3
        self._eta = eta if self._decode_kind(elements) == "sgd" else None
        if elements.closed_form:
            E = elements.embed(eta).reshape(m, -1)
        else:
            E = None
        K0 = self.kernel0_(X, X) if universal else None
        mlam = m * self.lam
        for attr in ("landmark_index_", "R_", "jitter_", "cholesky_", "coef_map_"):
            self.__dict__.pop(attr, None)
        if self.n_landmarks is None:
            K = self._joint(X, ii, pp, X, ii, pp, K0)
            K[np.diag_indices(m)] += mlam
            try:
                L, _ = sla.cho_factor(K, lower=True, check_finite=False)
            except sla.LinAlgError:
                raise ValueError("K + m lam I is not numerically positive definite; increase "
                                 "lam") from None
            del K
            cf = (L, True)
            self.coef_ = sla.cho_solve(cf, E, check_finite=False) if E is not None else None
            if self._decode_kind(elements) == "sgd":
                self.cholesky_ = np.tril(L)
        else:
            r = int(self.n_landmarks)
            if r > m:
                raise ValueError(f"n_landmarks must be <= n_aux_ = {m} (the auxiliary pairs), "
                                 f"got {r}")
            lm = np.sort(rng.choice(m, size=r, replace=False))
            KLL = self._joint(X, ii[lm], pp[lm], X, ii[lm], pp[lm], K0)
            R, jitter = cholesky_with_jitter(KLL, name="the kernel matrix of the landmarks")
            self.landmark_index_, self.R_, self.jitter_ = lm, R, jitter
            Phi = np.empty((m, r))
            step = max(1, _BLOCK_ENTRIES // max(r, 1))
            for s in range(0, m, step):
                sl = slice(s, min(s + step, m))
                Vb = self._joint(X, ii[sl], pp[sl], X, ii[lm], pp[lm], K0)  # (b, r)
                Phi[sl] = sla.solve_triangular(R, Vb.T, trans="T", lower=False,
                                               check_finite=False).T
            A = Phi.T @ Phi
            A[np.diag_indices(r)] += mlam
            try:
                cf = sla.cho_factor(A, lower=True, check_finite=False)
            except sla.LinAlgError:
                raise ValueError("Phi^T Phi + m lam I is not numerically positive definite; "
                                 "increase lam") from None
            self.coef_ = (sla.cho_solve(cf, Phi.T @ E, check_finite=False)
                          if E is not None else None)
            if self._decode_kind(elements) == "sgd":
                self.coef_map_ = sla.cho_solve(cf, Phi.T, check_finite=False)  # (r, m)
        self._build_assembly()
        return self

    def _build_assembly(self):
        parts = self.parts_
        P, d_out = parts.output_index.shape
        cols = np.arange(P * d_out)
        self._S = sp.csr_matrix((np.ones(P * d_out), (parts.output_index.ravel(), cols)),
                                shape=(parts.output_dim, P * d_out))
        counts = sp.csr_matrix((np.ones(P * d_out), (parts.output_index.ravel(),
                                                      np.repeat(np.arange(P), d_out))),
                               shape=(parts.output_dim, P))
        self._Scount = counts.tocsr()

    def _decode_kind(self, elements=None):
        elements = elements if elements is not None else self.elements_
        if self.decode_method == "auto":
            return "closed_form" if elements.closed_form else "sgd"
        return self.decode_method

    # ---- predict ---------------------------------------------------------------------
    def _weight_rows(self, X, sl):
        """Kernel values between the test records of X[sl] (all parts) and the pairs the
        coefficients live on (auxiliary pairs, or the landmarks), shape (b |P|, m or r)."""
        P = self.parts_.n_parts
        b = sl.stop - sl.start
        it = np.repeat(np.arange(sl.start, sl.stop), P)
        pt = np.tile(np.arange(P), b)
        ii, pp = self.aux_sample_, self.aux_part_
        if getattr(self, "landmark_index_", None) is not None:
            ii, pp = ii[self.landmark_index_], pp[self.landmark_index_]
        _, universal = self._locality()
        K0 = self.kernel0_(X[sl], self.X_fit_) if universal else None
        V = self._joint(X, it, pt, self.X_fit_, ii, pp, None if K0 is None else
                        _ShiftRows(K0, sl.start))
        if getattr(self, "landmark_index_", None) is not None:
            V = sla.solve_triangular(self.R_, V.T, trans="T", lower=False,
                                     check_finite=False).T
        return V

    def _blocks(self, n_test):
        P = self.parts_.n_parts
        cols = len(self.landmark_index_) if getattr(self, "landmark_index_", None) is not None \
            else self.n_aux_
        per = max(1, P * max(cols, self.coef_.shape[1] if self.coef_ is not None else 1))
        step = max(1, _BLOCK_ENTRIES // per)
        return [slice(s, min(s + step, n_test)) for s in range(0, n_test, step)]

    def part_scores(self, X: ArrayLike) -> NDArray[np.float64]:
        r"""Per-part scores :math:`g_p(x) = \sum_j \alpha_j(x, p)\, \varphi(\eta_j)`.

        Computed as :math:`\nu(x, p)^\top` times the coefficient map of the fit (or
        :math:`\phi(x, p)^\top` times the Nystrom one), never forming alpha.

        Parameters
        ----------
        X : array-like of shape (n_test, input_dim)

        Returns
        -------
        G : ndarray of shape (n_test, n_parts, output_part_size, e)
            e = 1 ("euclidean"), 2 ("orientation": cos and sin of 2 eta), k ("multiclass":
            one-hot over ``classes_``).
        """
        check_is_fitted(self, "coef_")
        if self.coef_ is None:
            raise ValueError(f"part_scores needs an output whose loss is linear in an "
                             f"embedding; {self.elements_.space!r} is decoded by Algorithm 3")
        X = self._flat_X(X, reset=False)
        P, d_out = self.parts_.output_index.shape
        G = np.empty((X.shape[0], P, d_out, self.elements_.e))
        for sl in self._blocks(X.shape[0]):
            G[sl] = self._part_scores_block(X, sl)
        return G

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Decode eq. 6 at each test point (see the class docstring).

        Parameters
        ----------
        X : array-like of shape (n_test, input_dim)

        Returns
        -------
        ndarray of shape ``(n_test, *y_shape)`` (the shape of the training targets per sample;
        1-D if y was 1-D).
        """
        check_is_fitted(self, "coef_")
        X = self._flat_X(X, reset=False)
        kind = self._decode_kind()
        fitted_for = "sgd" if getattr(self, "_eta", None) is not None else "closed_form"
        if kind != fitted_for or (kind == "closed_form" and self.coef_ is None):
            raise ValueError(f"the model was fitted for decode_method={fitted_for!r}; refit it "
                             f"after changing decode_method (now {self.decode_method!r})")
        if kind == "sgd":
            Z = self._predict_sgd(X)
        else:
            Z = self._predict_closed_form(X)
        if self._y_1d:
            return Z[:, 0]
        return Z.reshape(len(Z), *self.y_shape_)

    def _assemble(self, G, pi):
        """c (n, output_dim, e) and wsum (n, output_dim) from G (n, P, d_out, e), pi (n, P)."""
        n, P, d_out, e = G.shape
        Gw = G * pi[:, :, None, None]
        G2 = Gw.reshape(n, P * d_out, e).transpose(1, 0, 2).reshape(P * d_out, n * e)
        c = np.asarray(self._S @ G2).reshape(-1, n, e).transpose(1, 0, 2)
        wsum = np.asarray(self._Scount @ pi.T).T
        if np.any(wsum <= 0):
            raise ValueError("part_weights give zero weight to every part that contains some "
                             f"output entries ({int(np.sum(np.any(wsum <= 0, axis=0)))} "
                             "entries): eq. 6 does not determine them; give every entry a "
                             "part of positive weight")
        return c, wsum

    def _predict_closed_form(self, X):
        out = None
        pi_all = self._pi(X)
        for sl in self._blocks(X.shape[0]):
            G = self._part_scores_block(X, sl)
            c, wsum = self._assemble(G, pi_all[sl])
            Z = self.elements_.decode(c, wsum)
            if out is None:
                out = np.empty((X.shape[0], *Z.shape[1:]), dtype=Z.dtype)
            out[sl] = Z
        return out

    def _part_scores_block(self, X, sl):
        P, d_out = self.parts_.output_index.shape
        V = self._weight_rows(X, sl)
        return (V @ self.coef_).reshape(-1, P, d_out, self.elements_.e)

    # ---- explicit weights and Algorithm 3 --------------------------------------------
    def _alpha(self, X, sl):
        """Explicit alpha(x, p) (b, |P|, m) for the test points X[sl] (Algorithm 3 only)."""
        V = self._weight_rows(X, sl)
        if getattr(self, "landmark_index_", None) is not None:
            A = V @ self.coef_map_
        else:
            A = sla.cho_solve((self.cholesky_, True), V.T, check_finite=False).T
        return A.reshape(sl.stop - sl.start, self.parts_.n_parts, self.n_aux_)

    def _objective(self, z, alpha, pi):
        """Eq. 6 objective at z (output_dim, ...) for one test point."""
        idx = self.parts_.output_index
        F = 0.0
        for p in range(idx.shape[0]):
            L = self.elements_.loss(z[idx[p]][None], self._eta).reshape(self.n_aux_, -1)
            F += pi[p] * float(alpha[p] @ L.mean(axis=1))
        return F

    def _predict_sgd(self, X):
        el = self.elements_
        idx = self.parts_.output_index
        P, d_out = idx.shape
        T = self.max_iter if self.max_iter is not None else 50 * P
        rng = check_random_state(self.random_state)
        eta = self._eta
        out = np.empty((X.shape[0], self.parts_.output_dim, *eta.shape[2:]))
        pi_all = self._pi(X)
        not_converged = 0
        for t0 in range(X.shape[0]):
            alpha = self._alpha(X, slice(t0, t0 + 1))[0]  # (P, m)
            pi = pi_all[t0]
            # start: the projected kernel-ridge average of the parts (overlap-added)
            avg = np.tensordot(alpha, eta, axes=(1, 0))  # (P, d_out, ...)
            acc = np.zeros((self.parts_.output_dim, *eta.shape[2:]))
            wsum = np.zeros(self.parts_.output_dim)
            np.add.at(acc, idx, pi[:, None].reshape((P, 1) + (1,) * (eta.ndim - 2)) * avg)
            np.add.at(wsum, idx, np.broadcast_to(pi[:, None], idx.shape))
            z0 = el.project(acc / wsum.reshape((-1,) + (1,) * (eta.ndim - 2)))
            z = z0.copy()
            A = np.abs(alpha).sum(axis=1)
            cdf = np.cumsum(np.abs(alpha), axis=1)
            pcdf = np.cumsum(pi)
            prev = z.copy()
            visits = np.zeros(P)
            for t in range(1, T + 1):
                p = min(int(np.searchsorted(pcdf, rng.random() * pcdf[-1], side="right")),
                        P - 1)
                if A[p] == 0:
                    continue
                j = min(int(np.searchsorted(cdf[p], rng.random() * cdf[p, -1], side="right")),
                        self.n_aux_ - 1)
                visits[p] += 1
                u = np.sign(alpha[p, j]) * A[p] * el.grad(z[idx[p]], eta[j])
                step = 1.0 / (2.0 * A[p] * visits[p])
                z[idx[p]] = el.project(z[idx[p]] - step * u)
                if self.tol is not None and t % P == 0:
                    if np.max(np.abs(z - prev)) <= self.tol:
                        break
                    prev = z.copy()
            else:
                not_converged += self.tol is not None
            if self._objective(z0, alpha, pi) < self._objective(z, alpha, pi):
                z = z0
            out[t0] = z
        if not_converged:
            warnings.warn(f"Algorithm 3 (decode_method='sgd') did not reach tol={self.tol} "
                          f"within max_iter={T} iterations for {not_converged} of "
                          f"{X.shape[0]} test points; increase max_iter (or tol)",
                          ConvergenceWarning, stacklevel=3)
        if el.kind == "orientation":
            out = wrap_orientation(out)
        return out

    # ---- score ---------------------------------------------------------------------
    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Minus the mean loss of eq. 5 with uniform weights (the mean element loss);
        the fraction of correct elements for "multiclass"."""
        P = self.predict(X)
        el = self.elements_
        Yc, _ = el.check(np.asarray(y) if not self._y_1d else np.asarray(y)[:, None],
                         self.parts_.output_dim)
        Pz = P.reshape(Yc.shape) if not self._y_1d else P[:, None]
        if len(Pz) != len(Yc):
            raise ValueError(f"X and y have different numbers of samples: {len(Pz)} and "
                             f"{len(Yc)}")
        if el.kind == "multiclass":
            return float(np.mean(Pz == Yc))
        if el.kind == "euclidean":
            return -float(np.mean((Pz - Yc) ** 2))
        return -float(np.mean(el.loss(np.asarray(Pz, dtype=np.float64),
                                      np.asarray(Yc, dtype=np.float64))))

    # ---- persistence ---------------------------------------------------------------
    def save(self, path: PathLike) -> None:
        """Save the fitted estimator (.npz + JSON metadata, loaded without pickle by
        :func:`psdsos.load`).  Callable ``part_weights``, custom kernels, custom parts and
        unregistered output spaces cannot be saved (ValueError)."""
        check_is_fitted(self, "coef_")
        if callable(self.part_weights):
            raise ValueError("cannot save LocalizedSELF with a callable part_weights (saved "
                             "models never run code); pass a vector of weights")
        space = self.elements_.space
        registry = output_spaces()
        if registry.get(space.name) is not type(space):
            raise ValueError(f"cannot save LocalizedSELF with output {space!r}: only registered "
                             f"output spaces are saved")
        if self.coef_ is None:
            raise ValueError("cannot save LocalizedSELF decoded by Algorithm 3 (its explicit "
                             "weights are not part of the saved format)")
        arrays = {"X_fit": self.X_fit_, "aux_sample": self.aux_sample_,
                  "aux_part": self.aux_part_, "coef": self.coef_}
        if getattr(self, "landmark_index_", None) is not None:
            arrays.update({"landmark_index": self.landmark_index_, "R": self.R_})
        if self.elements_.kind == "multiclass":
            classes = np.asarray(self.classes_)
            if classes.dtype == object:
                classes = classes.astype(str)
            arrays["classes"] = classes
        shallow = copy.copy(self)
        shallow.parts = None
        out = self.output
        shallow.output = space.name
        local, universal = self._locality()
        kern = {}
        for key, on in (("kernel_", local), ("kernel0_", universal)):
            if on:
                k = getattr(self, key)
                if not isinstance(k, LinearKernel) and type(k) not in {
                        type(get_kernel(nm, 1.0)) for nm in ("gaussian", "exponential",
                                                              "matern32", "matern52")}:
                    raise ValueError(f"cannot save LocalizedSELF with a custom kernel {k!r}")
                kern[key] = {"name": k.name, "sigma": float(k.sigma)}
        extra = {
            "output": (out.lower() if isinstance(out, str)
                       else {"name": out.name, "config": out.to_config()}),
            "output_space": {"name": space.name, "config": space.to_config()},
            "parts": _parts_config(self.parts),
            "kernels": kern,
            "fitted": {"n_features_in_": int(self.n_features_in_), "n_aux_": int(self.n_aux_),
                       "y_1d": bool(self._y_1d), "y_shape": [int(s) for s in self.y_shape_],
                       "jitter_": float(getattr(self, "jitter_", 0.0))},
        }
        save_estimator(shallow, path, arrays, extra)

    _SAVED_META = {
        "output": ("str", "dict"),
        "output_space": {"name": "str", "config": "any"},
        "parts": ("dict", None),
        "kernels": "dict",
        "fitted": {"n_features_in_": "posint", "n_aux_": "posint", "y_1d": "bool",
                   "y_shape": "list", "jitter_": "real"},
    }
    _SAVED_ANY_DTYPE = ("classes",)

    @classmethod
    def _saved_arrays(cls, meta, *, source="the model file"):
        f = meta["fitted"]
        spec = {"X_fit": ("n", "p"), "aux_sample": ("m",), "aux_part": ("m",),
                "coef": (..., "D")}
        if meta["params"].get("n_landmarks") is not None:
            spec.update({"landmark_index": ("r",), "R": ("r", "r")})
            spec["coef"] = ("r", "D")
        else:
            spec["coef"] = ("m", "D")
        if meta["output_space"]["name"] == "multiclass":
            spec["classes"] = ("k",)
        return spec, {"p": f["n_features_in_"], "m": f["n_aux_"],
                      "_from": {"p": "metadata entry 'fitted.n_features_in_'",
                                "m": "metadata entry 'fitted.n_aux_'"}}

    @classmethod
    def _from_saved(cls, arrays, meta):
        params = _params_from_meta(meta)
        try:
            params["parts"] = _parts_from_config(meta["parts"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata entry 'parts' of the model file is invalid: {exc}"
                             ) from None
        est = cls(**params)
        space = _space_from_meta(meta["output_space"])
        el = _Elements(space)
        if not el.closed_form:
            raise ValueError("metadata entry 'output_space' names a space decoded by "
                             "Algorithm 3, which is not saved")
        X = np.asarray(arrays["X_fit"], dtype=np.float64)
        f = meta["fitted"]
        n, p = X.shape
        est.n_features_in_ = f["n_features_in_"]
        est.parts_ = params["parts"] if params["parts"] is not None else None
        ys = tuple(f["y_shape"])
        if est.parts_ is None:
            est.parts_ = Blocks(1, p, int(np.prod(ys, dtype=np.int64)) if ys else 1)
        if est.parts_.input_dim != p:
            raise ValueError("the saved parts do not match the saved inputs X_fit")
        if el.kind == "multiclass":
            space.classes_ = arrays["classes"]
            el.classes_ = arrays["classes"]
            el.e = len(arrays["classes"])
            est.classes_ = el.classes_
        elif el.kind == "euclidean":
            space._check_params()
        est.elements_ = el
        est.y_shape_ = ys
        est._y_1d = f["y_1d"]
        est.X_fit_ = X
        ii = np.asarray(arrays["aux_sample"]).astype(np.int64)
        pp = np.asarray(arrays["aux_part"]).astype(np.int64)
        if ii.min() < 0 or ii.max() >= n or pp.min() < 0 or pp.max() >= est.parts_.n_parts:
            raise ValueError("arrays 'aux_sample' / 'aux_part' of the model file index outside "
                             "the saved inputs or parts")
        est.aux_sample_, est.aux_part_, est.n_aux_ = ii, pp, len(ii)
        kern = meta["kernels"]
        for key in ("kernel_", "kernel0_"):
            if key in kern:
                setattr(est, key, get_kernel(kern[key]["name"], kern[key]["sigma"]))
        d_out = est.parts_.output_index.shape[1]
        coef = np.asarray(arrays["coef"], dtype=np.float64)
        if coef.shape[1] != d_out * el.e:
            raise ValueError(f"array 'coef' of the model file must have {d_out * el.e} "
                             f"columns, got {coef.shape[1]}")
        est.coef_ = coef
        if "landmark_index" in arrays:
            est.landmark_index_ = np.asarray(arrays["landmark_index"]).astype(np.int64)
            est.R_ = np.asarray(arrays["R"], dtype=np.float64)
            est.jitter_ = f["jitter_"]
            if est.landmark_index_.max() >= len(ii) or est.landmark_index_.min() < 0:
                raise ValueError("array 'landmark_index' of the model file indexes outside the "
                                 "auxiliary pairs")
        est._build_assembly()
        return est


class _ShiftRows:
    """K0 rows of a test block, indexed by absolute test indices (for ``_joint``)."""

    def __init__(self, K, start):
        self.K, self.start = K, start

    def __getitem__(self, key):
        rows, cols = key
        return self.K[rows - self.start, cols]


# ----------------------------------------------------------------------------- diagnostics
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
