"""Output spaces of SELF."""

from psdsos.structured.spaces._spd_newton import (
    BuresSpace,
    FisherSimplexSpace,
    LogEuclideanSPDSpace,
    SPDSpace,
    SphereSpace,
)
from psdsos.structured.spaces.euclidean import EuclideanSpace, project_psd_cone

__all__ = [
    "EuclideanSpace",
    "SPDSpace",
    "LogEuclideanSPDSpace",
    "BuresSpace",
    "SphereSpace",
    "FisherSimplexSpace",
    "project_psd_cone",
]
