r"""Orientations: angles modulo pi with the loss :math:`\sin^2(z - y)`.

Ciliberto, Bach and Rudi, "Localized Structured Prediction" (NeurIPS 2019, section 6.2):
the direction of a fingerprint ridge (or of an image gradient) is an angle defined modulo
:math:`\pi`, compared by

.. math::

    \Delta(z, y) = \sin^2(z - y) = \tfrac12 - \tfrac12\,\big\langle (\cos 2z, \sin 2z),
    (\cos 2y, \sin 2y) \big\rangle,

a loss that is linear in the embedding :math:`\psi(y) = e^{2iy}`.  The SELF decoding (Rudi et
al., eq. 2) is therefore exact and closed form for weights of any sign:

.. math::

    \sum_i \alpha_i \sin^2(z - y_i) = \tfrac12 \sum_i \alpha_i
    - \tfrac12 \operatorname{Re}\big(e^{-2iz} c\big), \qquad c = \sum_i \alpha_i e^{2 i y_i},

minimized by :math:`z = \tfrac12 \arg c` (when :math:`c = 0` every z is a minimizer: 0 is
returned).  Angles are returned in :math:`(-\pi/2, \pi/2]`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import as_finite
from psdsos.structured._plugins import register_output_space

__all__ = ["OrientationSpace", "wrap_orientation"]


def wrap_orientation(y: ArrayLike) -> np.ndarray:
    """Angles modulo pi, in (-pi/2, pi/2]."""
    y = np.asarray(y, dtype=np.float64)
    z = np.mod(y + np.pi / 2, np.pi) - np.pi / 2  # in [-pi/2, pi/2)
    return np.where(z == -np.pi / 2, np.pi / 2, z)


@register_output_space("orientation")
class OrientationSpace(OutputSpace):
    r"""Orientations (angles modulo pi), loss :math:`\sin^2(z - y)`, exact closed-form decoding.

    Y format: (n,) angles in radians (any real value; taken modulo pi).  Negative-weight
    policy: none needed, the decoding is exact for every sign pattern (module docstring).
    """

    name = "orientation"
    symmetric_loss = True
    decode_methods = ("closed_form",)

    def check_Y(self, Y: ArrayLike, name: str = "Y") -> np.ndarray:
        A = as_finite(Y, name)
        if A.ndim != 1 or A.shape[0] < 1:
            raise ValueError(f"{name} must be angles of shape (n_samples,), got shape {A.shape}")
        return A

    def fit(self, Y_train: ArrayLike) -> OrientationSpace:
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self._psi = np.exp(2j * self.Y_train_)
        return self

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """:math:`\\tfrac12 \\arg \\sum_i \\alpha_i e^{2 i y_i}` per test point, shape (n_test,)."""
        resolve_method(self, method)
        a = check_alpha(alpha, len(self.Y_train_))
        c = a @ self._psi
        return wrap_orientation(0.5 * np.angle(c))

    def objective(self, alpha: ArrayLike, Z: ArrayLike) -> np.ndarray:
        """:math:`\\sum_i \\alpha_i \\sin^2(z - y_i)` for one weight vector and candidates Z."""
        a = check_alpha(alpha, len(self.Y_train_))[0]
        Z = np.asarray(Z, dtype=np.float64)
        return np.sin(Z[:, None] - self.Y_train_[None, :]) ** 2 @ a

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """:math:`\\sin^2(z - y)` per sample."""
        T, P = self._pair(Y_true, Y_pred)
        return np.sin(P - T) ** 2

    # ---- per-element operations (LocalizedSELF): elements are angles -----------------
    def supports(self, capability: str) -> bool:
        if capability in ("element_closed_form", "element_sgd"):
            return True
        return super().supports(capability)

    def loss_gradient(self, Z: ArrayLike, Y: ArrayLike) -> np.ndarray:
        r"""Gradient in Z of :math:`\sin^2(Z - Y)`, :math:`\sin(2 (Z - Y))`."""
        return np.sin(2.0 * (np.asarray(Z, dtype=np.float64) - np.asarray(Y, dtype=np.float64)))

    def element_embed_dim(self) -> int:
        return 2

    def element_embed(self, V: np.ndarray) -> np.ndarray:
        """phi(y) = (cos 2y, sin 2y)."""
        return np.stack([np.cos(2 * V), np.sin(2 * V)], axis=-1)

    def element_decode(self, c: np.ndarray, wsum: np.ndarray) -> np.ndarray:
        """z_u = atan2(c_u) / 2 (the part weights do not matter)."""
        return wrap_orientation(0.5 * np.arctan2(c[..., 1], c[..., 0]))

    def element_loss(self, Z: np.ndarray, E: np.ndarray) -> np.ndarray:
        return np.sin(Z - E) ** 2

    def element_project(self, Z: np.ndarray) -> np.ndarray:
        return wrap_orientation(Z)
