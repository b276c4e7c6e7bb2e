r"""The PSD-valued kernel SoS model F_B(x) = Psi(x)^T B Psi(x) (PSD paper, eq. 3 and 8)."""

from __future__ import annotations

import json
import os

import numpy as np

from psdsos._validation import check_array_2d
from psdsos.features import ExactFeatures, NystromFeatures
from psdsos.sos._maps import sos_evaluate

__all__ = ["PSDModel", "project_psd"]

_FEATURE_CLASSES = {"ExactFeatures": ExactFeatures, "NystromFeatures": NystromFeatures}
FORMAT_VERSION = 1
#: Relative size of the asymmetry / negative eigenvalues of B treated as round-off.
_ROUNDOFF = 1e-8


def project_psd(B, floor=0.0):
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

    def __init__(self, features, B, d, *, _from_file=False):
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

    def __call__(self, X):
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

    def evaluate_at_features(self, Phi):
        """F_B at precomputed features (rows of Phi), via the SoS evaluation map."""
        return sos_evaluate(np.asarray(Phi, dtype=np.float64), self.B, self.d)

    def min_eigenvalue(self, X):
        """Smallest eigenvalue of F_B(x) for each row of X (>= 0 up to round-off)."""
        return np.linalg.eigvalsh(self(X))[:, 0]

    @property
    def trace(self):
        """Tr B (= Tr A of the operator, section 3.1.2)."""
        return float(np.trace(self.B))

    # ---- persistence: .npz + JSON metadata, never pickle ---------------------------------
    def to_arrays(self):
        arrays, fmeta = self.features.to_arrays()
        arrays = {f"features_{k}": v for k, v in arrays.items()}
        arrays["B"] = self.B
        meta = {"d": self.d, "features": fmeta}
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays, meta):
        fmeta = meta["features"]
        fcls = _FEATURE_CLASSES.get(fmeta.get("class"))
        if fcls is None:
            raise ValueError(f"unknown feature class in model file: {fmeta.get('class')!r}")
        farr = {k[len("features_"):]: v for k, v in arrays.items() if k.startswith("features_")}
        features = fcls.from_arrays(farr, fmeta)
        return cls(features, arrays["B"], meta["d"], _from_file=True)

    def save(self, path):
        """Save to ``path`` (.npz with a JSON metadata entry); loadable without pickle."""
        arrays, meta = self.to_arrays()
        save_npz(path, arrays, {"type": "PSDModel", **meta})

    @classmethod
    def load(cls, path):
        arrays, meta = load_npz(path)
        if meta.get("type") != "PSDModel":
            raise ValueError(f"{path} does not hold a PSDModel (type {meta.get('type')!r})")
        return cls.from_arrays(arrays, meta)


def save_npz(path, arrays, meta):
    """Write arrays and JSON metadata to one .npz file (metadata as a uint8 array)."""
    meta = {"format_version": FORMAT_VERSION, "library": "psdsos", **meta}
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    path = os.fspath(path)
    np.savez(path, __meta__=payload, **{k: np.asarray(v) for k, v in arrays.items()})


def load_npz(path):
    """Read a file written by :func:`save_npz` with ``allow_pickle=False``."""
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read psdsos model file {path!r}: {exc}") from None
    if "__meta__" not in arrays:
        raise ValueError(f"{path!r} is not a psdsos model file (no metadata)")
    meta = json.loads(bytes(arrays.pop("__meta__")).decode("utf-8"))
    if meta.get("library") != "psdsos":
        raise ValueError(f"{path!r} is not a psdsos model file")
    return arrays, meta
