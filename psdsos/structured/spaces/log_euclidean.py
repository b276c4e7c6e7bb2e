r"""SPD matrices with the log-Euclidean distance: closed-form decoding.
"""

from __future__ import annotations

import numpy as np

from psdsos.geometry import check_spd, expm_sym, log_euclidean_distance, logm_spd
from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import check_policy, policy_weights
from psdsos.structured.spaces._manifold import _check_spd_stack
from psdsos.structured.spaces.spd import SPDSpace

__all__ = ["LogEuclideanSPDSpace"]


class LogEuclideanSPDSpace(OutputSpace):
    r"""SPD matrices with the squared log-Euclidean distance; closed-form decoding.

    .. math::

        \Delta(Y, Z) = \|\log Y - \log Z\|_F^2, \qquad
        \hat f(x) = \exp\Big(\frac{\sum_i \alpha_i \log Y_i}{\sum_i \alpha_i}\Big)
                  = \exp\Big(\sum_i w_i \log Y_i\Big),

    the minimizer of eq. 2 (a weighted mean in the flat chart :math:`\log`).

    Negative-weight policy: the policy of :func:`policy_weights` (``weights="signed"``:
    signed weights normalized when :math:`\sum\alpha > 0` and :math:`\|\alpha\|_1 \le
    4\sum\alpha` -- the objective is then a strictly convex quadratic of :math:`\log Y` and the
    formula above is its exact minimizer -- else the positive part, else uniform).

    Parameters
    ----------
    weights : {"signed", "positive"}, default="signed"
    """

    name = "spd_logeuclidean"
    decode_methods = ("closed_form",)

    def __init__(self, *, weights="signed"):
        self.weights = weights

    def check_Y(self, Y, name="Y"):
        """(n, d, d) symmetric positive definite matrices; ValueError naming ``name``."""
        A = _check_spd_stack(Y, name)
        return check_spd(A, name) if len(A) else A

    def fit(self, Y_train):
        check_policy(self.weights)
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.logs_ = logm_spd(self.Y_train_)
        return self

    def loss(self, Y_true, Y_pred):
        """Squared log-Euclidean distances, shape (n,)."""
        return np.atleast_1d(log_euclidean_distance(Y_true, Y_pred)) ** 2

    def project(self, Z, floor=1e-12):
        """KRLS projection: eigenvalue clipping as :meth:`SPDSpace.project`."""
        return SPDSpace.project(self, Z, floor)

    def decode(self, alpha, method="auto"):
        """exp(sum_i w_i log Y_i), shape (n_test, d, d)."""
        resolve_method(self, method)
        check_policy(self.weights)
        A = check_alpha(alpha, len(self.Y_train_))
        W, _ = policy_weights(A, self.weights)
        return expm_sym(np.einsum("tn,nij->tij", W, self.logs_))

    def to_config(self):
        return {"weights": self.weights}
