"""psdsos: kernel sums-of-squares models.

PSD-valued functions F_B(x) = Psi(x)^T B Psi(x) with B PSD (Muzellec, Bach, Rudi),
convex regression with SoS Hessian constraints, and SELF structured prediction.

Subpackages (lower never imports higher): kernels -> features -> sos -> problems ->
solvers -> estimators -> structured; geometry, datasets, model_selection, plotting and cli
around them.
"""

from psdsos._config import config_context, get_config, set_config
from psdsos.estimators import (
    ConvexRegressor,
    ConvexRegressorCV,
    KernelRidgeRegressor,
    PiecewiseLinearConvexRegressor,
    PSDRegressor,
    PSDRegressorCV,
    ShapeConstrainedRegressor,
    ShapeConstrainedRegressorCV,
    load,
)

# also registers them for load
from psdsos.structured import (
    FenchelYoungEstimator,
    KRLSEstimator,
    LocalizedSELF,
    SELFEstimator,
)

__version__ = "0.1.0"

__all__ = [
    "ConvexRegressor",
    "ConvexRegressorCV",
    "KernelRidgeRegressor",
    "PSDRegressor",
    "PSDRegressorCV",
    "ShapeConstrainedRegressor",
    "ShapeConstrainedRegressorCV",
    "PiecewiseLinearConvexRegressor",
    "SELFEstimator",
    "KRLSEstimator",
    "FenchelYoungEstimator",
    "LocalizedSELF",
    "load",
    "config_context",
    "get_config",
    "set_config",
    "__version__",
]
