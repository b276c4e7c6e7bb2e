"""scikit-learn estimators built from the kernel SoS layers."""

from psdsos._persistence import load
from psdsos.estimators._cnls import PiecewiseLinearConvexRegressor
from psdsos.estimators._convex import (
    RELATIVE_DEFICIT_TOL,
    ConvexRegressor,
    NonConvexFitWarning,
)
from psdsos.estimators._convex_cv import ConvexRegressorCV
from psdsos.estimators._krr import KernelRidgeRegressor
from psdsos.estimators._psd import NegativeTargetWarning, PSDRegressor
from psdsos.estimators._psd_cv import PSDRegressorCV
from psdsos.estimators._shape import (
    ShapeCertificate,
    ShapeConstrainedRegressor,
    UncertifiedShapeWarning,
)
from psdsos.estimators._shape_cv import ShapeConstrainedRegressorCV

__all__ = [
    "PSDRegressor",
    "PSDRegressorCV",
    "ConvexRegressor",
    "ConvexRegressorCV",
    "ShapeConstrainedRegressor",
    "ShapeConstrainedRegressorCV",
    "ShapeCertificate",
    "UncertifiedShapeWarning",
    "PiecewiseLinearConvexRegressor",
    "KernelRidgeRegressor",
    "NonConvexFitWarning",
    "NegativeTargetWarning",
    "RELATIVE_DEFICIT_TOL",
    "load",
]
