r"""SPD matrices with the log-Euclidean distance: closed-form decoding.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning

from psdsos.geometry import log_euclidean_distance
from psdsos.geometry._matfun import spectral
from psdsos.structured._base import check_alpha, resolve_method
from psdsos.structured._common import check_policy, policy_weights, warn_no_minimizer
from psdsos.structured._plugins import register_output_space
from psdsos.structured.spaces._spd_robust import LOG_COND as _LOG_COND
from psdsos.structured.spaces._spd_robust import clip_window as _clip_window
from psdsos.structured.spaces.spd import _SPDLogs

__all__ = ["LogEuclideanSPDSpace"]

@register_output_space("spd_logeuclidean")
class LogEuclideanSPDSpace(_SPDLogs):
    r"""SPD matrices with the squared log-Euclidean distance; closed-form decoding.

    .. math::

        \Delta(Y, Z) = \|\log Y - \log Z\|_F^2, \qquad
        \hat f(x) = \exp\Big(\frac{\sum_i \alpha_i \log Y_i}{\sum_i \alpha_i}\Big)
                  = \exp\Big(\sum_i w_i \log Y_i\Big),

    the minimizer of eq. 2 (a weighted mean in the flat chart :math:`\log`).  With
    :math:`\sum_i w_i = 1` and any signs,
    :math:`F(Y) = \sum_i w_i \|\log Y - \log Y_i\|_F^2 = \|\log Y - \bar L\|_F^2 + c`,
    :math:`\bar L = \sum_i w_i \log Y_i`: a strictly convex quadratic of :math:`\log Y`
    (which ranges over all symmetric matrices), minimized exactly by the formula above.

    Negative-weight policy (:func:`~psdsos.structured.policy_weights`):
    ``weights="signed"`` decodes the signed weights normalized to sum one whenever
    :math:`\sum\alpha > 0`, whatever :math:`\|\alpha\|_1`.  For :math:`\sum\alpha < 0`,
    F is a concave quadratic of :math:`\log Y` (no minimizer), and for
    :math:`\sum\alpha = 0` it is affine in :math:`\log Y` (unbounded below unless constant):
    those test points fall back to the positive part of their weights (uniform if none is
    positive), with a :class:`~psdsos.structured.NoMinimizerWarning`; ``signed_`` marks the
    test points decoded as eq. 2.  ``weights="positive"`` always uses the positive part.

    The decode is a point of the space when its condition number is below 1e12 (the
    inputs' limit, :func:`~psdsos.geometry.check_spd`).  When the minimizer is beyond it
    (strongly extrapolating weights: the eigenvalues :math:`\mu` of :math:`\bar L` spread
    by more than :math:`\log 10^{12}`), the decode is the minimizer of F over the matrices
    of condition number at most 1e12 -- the eigenvalues of :math:`\bar L` clipped to the
    window :math:`[c, c + \log 10^{12}]` that minimizes :math:`\sum_j (\mu_j -
    \operatorname{clip}(\mu_j))^2` -- with a ConvergenceWarning.

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"

    Attributes
    ----------
    signed_ : ndarray of bool, shape (n_test,)
        Set by ``decode``: True where the signed weights were decoded (eq. 2).
    """

    decode_methods = ("closed_form",)
    symmetric_loss = True

    def __init__(self, *, weights: str = "signed") -> None:
        self.weights = weights

    def _check_options(self):
        check_policy(self.weights)

    def loss(self, Y_true: ArrayLike, Y_pred: ArrayLike) -> np.ndarray:
        """Squared log-Euclidean distances, shape (n,)."""
        return np.atleast_1d(log_euclidean_distance(Y_true, Y_pred)) ** 2

    def decode(self, alpha: ArrayLike, method: str = "auto") -> np.ndarray:
        """exp(sum_i w_i log Y_i), shape (n_test, d, d)."""
        resolve_method(self, method)
        check_policy(self.weights)
        A = check_alpha(alpha, len(self.Y_train_))
        W, self.signed_ = policy_weights(A, self.weights)
        warn_no_minimizer(self, A, self.signed_)
        L = np.einsum("tn,nij->tij", W, self.logs_)
        mu, V = np.linalg.eigh(0.5 * (L + np.swapaxes(L, -1, -2)))
        wide = mu[:, -1] - mu[:, 0] > _LOG_COND
        if wide.any():
            mu[wide] = [_clip_window(m, _LOG_COND) for m in mu[wide]]
            warnings.warn(
                f"LogEuclideanSPDSpace: for {int(wide.sum())} test point(s) the minimizer of "
                f"eq. 2 has a condition number above 1e12 (the weights extrapolate far beyond "
                f"the training outputs); returned the minimizer over the matrices of condition "
                f"number <= 1e12.  weights='positive' keeps decodes within the training "
                f"outputs' range",
                ConvergenceWarning,
                stacklevel=2,
            )
        return spectral(np.exp(mu), V)

    def to_config(self) -> dict[str, Any]:
        return {"weights": self.weights}
