"""Certificates of the shape constraints, between the solvers and the estimators.

- :mod:`~psdsos.certify._placement`: where the constraints are imposed (constraint points,
  Sobol designs of the box).
- :mod:`~psdsos.certify._exchange`: the exchange method (the most violated points, the
  points added, the warm start).
- :mod:`~psdsos.certify._records`: the certificate of one constraint over the box
  (:class:`ShapeCertificate`), proved by the branch and bound of
  :func:`psdsos.sos.kernel_constraint_certificate` where it finishes.
- :mod:`~psdsos.certify._correction`: the certified-shape predictor's correction.
- :mod:`~psdsos.certify._convexity`: the convexity certificate and deficit of convex
  regression.
"""

from psdsos.certify._convexity import RELATIVE_DEFICIT_TOL, NonConvexFitWarning
from psdsos.certify._records import ShapeCertificate

__all__ = ["NonConvexFitWarning", "RELATIVE_DEFICIT_TOL", "ShapeCertificate"]
