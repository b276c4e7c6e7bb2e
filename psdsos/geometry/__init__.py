"""SPD, PSD and sphere geometry shared by the structured-prediction layer and the demos.

Matrix functions (via ``np.linalg.eigh``, batched over leading axes), the Bures-Wasserstein
distance and geodesic on PSD matrices (rank-deficient ones included), the affine-invariant
and log-Euclidean geometries on SPD matrices, exp/log maps and distance on the sphere, and
validators for PSD / SPD input, and :class:`PiecewiseGeodesicInterpolator` (piecewise
Euclidean, log-Euclidean, affine-invariant or Bures-Wasserstein geodesic interpolation along a
1-D input: the baselines of PSD-valued regression). Formulas and derivations:
``docs/geometry.md``.

This subpackage imports nothing from psdsos except ``psdsos._validation``.
"""

from psdsos.geometry._checks import check_psd, check_spd
from psdsos.geometry._interpolation import GEODESIC_METRICS, PiecewiseGeodesicInterpolator
from psdsos.geometry._matfun import expm_sym, invsqrtm_spd, logm_spd, powm_spd, sqrtm_psd, sym
from psdsos.geometry._spd import (
    affine_invariant_distance,
    bures_wasserstein_distance,
    bures_wasserstein_distance_squared,
    bures_wasserstein_geodesic,
    log_euclidean_distance,
    spd_exp,
    spd_log,
)
from psdsos.geometry._sphere import sphere_distance, sphere_exp, sphere_log

__all__ = [
    "GEODESIC_METRICS",
    "PiecewiseGeodesicInterpolator",
    "affine_invariant_distance",
    "bures_wasserstein_distance",
    "bures_wasserstein_distance_squared",
    "bures_wasserstein_geodesic",
    "check_psd",
    "check_spd",
    "expm_sym",
    "invsqrtm_spd",
    "log_euclidean_distance",
    "logm_spd",
    "powm_spd",
    "spd_exp",
    "spd_log",
    "sphere_distance",
    "sphere_exp",
    "sphere_log",
    "sqrtm_psd",
    "sym",
]
