r"""The PSD-valued kernel SoS model F_B(x) = Psi(x)^T B Psi(x) (PSD paper, eq. 3 and 8)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from psdsos._npz import load_npz, save_npz
from psdsos._persistence import register_loader
from psdsos._validation import PathLike, check_array_2d, check_saved_arrays, check_saved_meta
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.sos._maps import sos_evaluate

__all__ = ["PSDModel", "project_psd"]

_FEATURE_CLASSES: dict[str, type[ExactFeatures] | type[NystromFeatures]] = {
    "ExactFeatures": ExactFeatures, "NystromFeatures": NystromFeatures}
#: Relative size of the asymmetry / negative eigenvalues of B treated as round-off.
_ROUNDOFF = 1e-8


def project_psd(B: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Nearest matrix with eigenvalues >= ``floor`` (0: the PSD cone) in Frobenius norm:
    eigenvalue clipping of the symmetric part; batched over leading axes, symmetrized."""
    B = 0.5 * (B + np.swapaxes(B, -1, -2))
    w, U = np.linalg.eigh(B)
    P = (U * np.maximum(w, floor)[..., None, :]) @ np.swapaxes(U, -1, -2)
    return 0.5 * (P + np.swapaxes(P, -1, -2))


class PSDModel:
    r"""A PSD-valued function :math:`F_{\mathbf B}(x) = \Psi(x)^T \mathbf B \Psi(x)`.

    .. math::

        \Psi(x) = \phi(x) \otimes I_d \in \mathbb R^{rd\times d},\qquad
        \mathbf B \in \mathbb S_+(\mathbb R^{rd}),

    so that :math:`F_{\mathbf B}(x) \succeq 0` for every x (Proposition 1).

    Parameters
    ----------
    features : ExactFeatures or NystromFeatures
        A fitted feature map (phi).
    B : ndarray (r d, r d)
        Symmetric PSD matrix.  Round-off-level asymmetry and negative eigenvalues from a
        solver (below 1e-8 times the largest entry, times the size for eigenvalues) are
        removed once here so that every output is PSD by construction; anything larger
        raises ValueError.
    d : int
    """

    def __init__(self, features: ExactFeatures | NystromFeatures, B: np.ndarray, d: int, *,
                 _from_file: bool = False) -> None:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        r = features.n_components
        B = np.asarray(B, dtype=np.float64)
        if B.shape != (r * d, r * d):
            raise ValueError(f"B must have shape ({r * d}, {r * d}), got {B.shape}")
        if not np.all(np.isfinite(B)):
            raise ValueError("B contains NaN or infinite values")
        scale = max(float(np.abs(B).max()), np.finfo(float).tiny)
        if float(np.abs(B - B.T).max()) > _ROUNDOFF * scale:
            raise ValueError("B must be symmetric (up to round-off)")
        w_min = float(np.linalg.eigvalsh(0.5 * (B + B.T))[0])
        if w_min < -_ROUNDOFF * scale * B.shape[0]:
            raise ValueError(
                f"B must be positive semi-definite: smallest eigenvalue {w_min:.3g} "
                f"(only round-off-level negative eigenvalues are clipped)"
            )
        self.features = features
        self.d = int(d)
        # a saved B was projected before saving: keep it bit for bit so that a loaded model
        # predicts exactly what the saved one did
        self.B = 0.5 * (B + B.T) if _from_file else project_psd(B)
        # factor B = C C^T once: F(x) = (C^T Psi)^T (C^T Psi) is a Gram matrix, PSD in
        # floating point
        w, U = np.linalg.eigh(self.B)
        keep = w > 0
        self._C = U[:, keep] * np.sqrt(w[keep])

    def __call__(self, X: ArrayLike) -> np.ndarray:
        """Evaluate F_B at each row of X: ndarray (m, d, d), symmetric PSD."""
        X = check_array_2d(X, "X", allow_1d=False)
        Phi = self.features.transform(X)
        d = self.d
        m, r = Phi.shape
        k = self._C.shape[1]
        # V_j = C^T Psi_j  (k x d): C reshaped (r, d, k) contracted with phi_j
        C3 = self._C.reshape(r, d, k)
        V = np.einsum("ja,apk->jkp", Phi, C3)  # (m, k, d)
        F = np.einsum("jkp,jkq->jpq", V, V)
        return 0.5 * (F + F.transpose(0, 2, 1))

    def evaluate_at_features(self, Phi: ArrayLike) -> np.ndarray:
        """F_B at precomputed features (rows of Phi), via the SoS evaluation map."""
        return sos_evaluate(np.asarray(Phi, dtype=np.float64), self.B, self.d)

    def min_eigenvalue(self, X: ArrayLike) -> np.ndarray:
        """Smallest eigenvalue of F_B(x) for each row of X (>= 0 up to round-off)."""
        return np.linalg.eigvalsh(self(X))[:, 0]

    @property
    def trace(self) -> float:
        """Tr B (= Tr A of the operator, section 3.1.2)."""
        return float(np.trace(self.B))

    # ---- persistence: .npz + JSON metadata, never pickle ---------------------------------
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, fmeta = self.features.to_arrays()
        arrays = {f"features_{k}": v for k, v in arrays.items()}
        arrays["B"] = self.B
        meta = {"d": self.d, "n_features_in": int(self.features.anchors_.shape[1]),
                "features": fmeta}
        return arrays, meta

    #: JSON metadata of a saved model (see :func:`psdsos._validation.check_saved_meta`).
    SAVED_META = {"d": "posint", "n_features_in?": "posint",
                  "features": {"class": "str", "kernel": "str", "sigma": "real",
                               "jitter_": "real"}}

    @classmethod
    def check_saved(cls, arrays: Mapping[str, Any], meta: dict[str, Any], *,
                    source: str = "the model file",
                    symbols: dict[str, Any] | None = None) -> dict[str, int]:
        """Check a saved model's metadata and arrays (shapes against each other, finite).

        Arrays: ``features_anchors`` (r, p), ``features_R`` (r, r), ``B`` (r d, r d).
        Returns the dimensions {"r", "p", "d"}.  Raises ValueError naming the entry.
        """
        check_saved_meta(meta, {"features": {"class": "str"}}, source=source)
        cls.saved_array_spec(meta, source=source)  # the feature class first
        check_saved_meta(meta, cls.SAVED_META, source=source)
        spec, known = cls.saved_array_spec(meta, source=source)
        for k, v in (symbols or {}).items():
            if k == "_from":
                known["_from"].update(v)
            else:
                known[k] = v
        return check_saved_arrays(arrays, spec, symbols=known, source=source)

    @classmethod
    def saved_array_spec(cls, meta: dict[str, Any], *,
                         source: str = "the model file") -> tuple[dict[str, Any], dict[str, Any]]:
        """(array schema, known dimensions) of a saved model whose metadata is ``meta``."""
        fclass = meta["features"]["class"]
        if fclass not in _FEATURE_CLASSES:
            raise ValueError(f"unknown feature class in {source}: metadata entry "
                             f"'features.class' must be one of {sorted(_FEATURE_CLASSES)}, "
                             f"got {fclass!r}")
        saved = _FEATURE_CLASSES[fclass].SAVED_ARRAYS
        spec = {f"features_{k}": shape for k, shape in saved.items()}
        spec["B"] = ("r*d", "r*d")
        known = {"d": meta["d"], "_from": {"d": "metadata entry 'd'"}}
        if "n_features_in" in meta:
            known["p"] = meta["n_features_in"]
            known["_from"]["p"] = "metadata entry 'n_features_in'"
        return spec, known

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], meta: dict[str, Any], *,
                    source: str = "the model file") -> PSDModel:
        """Inverse of :meth:`to_arrays`, after :meth:`check_saved` (ValueError on bad input)."""
        cls.check_saved(arrays, meta, source=source)
        fmeta = meta["features"]
        fcls = _FEATURE_CLASSES[fmeta["class"]]
        farr = {k[len("features_"):]: v for k, v in arrays.items() if k.startswith("features_")}
        features = fcls.from_arrays(farr, fmeta)
        return cls(features, arrays["B"], meta["d"], _from_file=True)

    def save(self, path: PathLike) -> None:
        """Save to ``path`` (.npz with a JSON metadata entry); loadable without pickle."""
        arrays, meta = self.to_arrays()
        save_npz(path, arrays, {"type": "PSDModel", **meta})

    @classmethod
    def load(cls, path: PathLike) -> PSDModel:
        arrays, meta = load_npz(path)
        if meta.get("type") != "PSDModel":
            raise ValueError(f"{path} does not hold a PSDModel (type {meta.get('type')!r})")
        return cls.from_arrays(arrays, meta, source=repr(os.fspath(path)))


register_loader("PSDModel",
                lambda arrays, meta, source: PSDModel.from_arrays(arrays, meta, source=source))
