"""SELF structured prediction (Ciliberto et al.; Rudi et al., "Manifold Structured Prediction").

``SELFEstimator`` computes the kernel-ridge weights alpha(x) (eq. 3) and an output space
decodes eq. 2; ``KRLSEstimator`` is the projected kernel ridge baseline (Appendix G).
Output spaces by name: see :func:`get_output_space`.  The interface every space follows is
documented in :mod:`psdsos.structured._base`; the negative-weight policy of the manifold
spaces in :mod:`psdsos.structured._common`.
"""

from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import SIGNED_L1_BOUND, policy_weights
from psdsos.structured._estimator import KRLSEstimator, SELFEstimator
from psdsos.structured._registry import CONTINUOUS_SPACES, get_output_space, output_spaces
from psdsos.structured.polytopes import project_box, project_simplex
from psdsos.structured.spaces import (
    BuresSpace,
    EuclideanSpace,
    FisherSimplexSpace,
    LogEuclideanSPDSpace,
    SPDSpace,
    SphereSpace,
    project_psd_cone,
)

__all__ = [
    "SELFEstimator",
    "KRLSEstimator",
    "OutputSpace",
    "EuclideanSpace",
    "SPDSpace",
    "LogEuclideanSPDSpace",
    "BuresSpace",
    "SphereSpace",
    "FisherSimplexSpace",
    "CONTINUOUS_SPACES",
    "SIGNED_L1_BOUND",
    "check_alpha",
    "get_output_space",
    "output_spaces",
    "policy_weights",
    "project_box",
    "project_psd_cone",
    "project_simplex",
    "resolve_method",
]
