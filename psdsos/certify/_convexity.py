"""The convexity certificate and deficit of a :class:`~psdsos.estimators.ConvexRegressor`.

The smallest Hessian eigenvalue over Sobol points of the data's bounding box (Corollary 7),
relative to the curvature scale (the sampled deficit), and its proved lower bound over the
whole box by the branch and bound (the certificate).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from psdsos._validation import caller_stacklevel
from psdsos.certify._placement import sobol_points
from psdsos.sos._constraint import KernelExpansion, ShapeConstraint

__all__ = ["NonConvexFitWarning", "fitted_box", "hessian_eigenvalues", "deficit",
           "certificate_tol", "convexity_certificate", "certify_convexity"]

#: A fit whose sampled convexity deficit (:meth:`ConvexRegressor.convexity_deficit` with
#: ``relative=True``) exceeds this fraction of its curvature scale warns
#: (:class:`NonConvexFitWarning`): beyond 1% the most negative curvature is a visible dent
#: next to the typical curvature, while below it the dent is under the resolution of a noisy
#: fit and predict_convexified removes it by moving f by eta/2 ||x||^2, a 1% change in
#: curvature.
RELATIVE_DEFICIT_TOL = 1e-2


#: Floor of the curvature scale in convexity_deficit(relative=True), as a fraction of
#: y_scale_ / x_scale_^2 (the data's own curvature unit): Hessians below it are rounding
#: errors of an (affine to solver precision) fit (the dual's default tol is 1e-6).
CURVATURE_FLOOR = 1e-6


#: Sobol points of the training data's bounding box where convexity_deficit (and the fit's
#: own certificate, convexity_deficit_) look for negative curvature.
DEFICIT_POINTS = 4096


class NonConvexFitWarning(UserWarning):
    """A ConvexRegressor fit whose convexity deficit at 4096 Sobol points of its box
    exceeds :data:`RELATIVE_DEFICIT_TOL` of its curvature scale: the Hessian constraint
    holds at the constraint points but the fitted function is not convex between them.
    The message gives ``convexity_deficit_`` and says whether it is proved (certificate
    "certified") or sampled."""


def fitted_box(est):
    """The training data's bounding box (x_box_; the expansion points' in model files
    saved before it existed, where they were the training points)."""
    box = getattr(est, "x_box_", None)
    if box is None:
        return est.X_fit_.min(axis=0), est.X_fit_.max(axis=0)
    return box[0], box[1]


def hessian_eigenvalues(est, X, n_points, random_state, sign=1.0):
    """Eigenvalues (ascending, per point) of ``sign`` times the fitted Hessians at the rows
    of X (validated), or at n_points scrambled Sobol points in the training bounding box
    (seeded)."""
    check_is_fitted(est, "alpha_")
    if X is None:
        if (isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral)
                or n_points < 1):
            raise ValueError(f"n_points must be an integer >= 1, got {n_points!r}")
        lo, hi = fitted_box(est)
        # our own points: no feature names to check them against (a DataFrame fit)
        return np.linalg.eigvalsh(sign * est._hessian(sobol_points(lo, hi, int(n_points),
                                                                   random_state)))
    return np.linalg.eigvalsh(sign * est.hessian(X))


def deficit(eig, relative, curvature_floor):
    """max(0, -min eig), relative to max(mean spectral norm, curvature_floor) (0.0 when
    that is 0)."""
    eta = max(0.0, -float(eig[:, 0].min()))
    if not relative:
        return eta
    kappa = max(float(np.mean(np.abs(eig).max(axis=1))), curvature_floor)
    return eta / kappa if kappa > 0 else 0.0


#: Cells of the branch and bound behind ConvexRegressor's certificate_ (beyond: "sampled").
CERTIFICATE_CELLS = 20000


#: The certificate aims at a bound within this fraction of the curvature scale below
#: the smallest eigenvalue found (see :func:`certificate_tol` for clean fits).
CERTIFICATE_TOL = 1e-2


def certificate_tol(relative_min: float) -> float:
    """The covering's tolerance for a fit whose smallest sampled eigenvalue is
    ``relative_min`` times the curvature scale: CERTIFICATE_TOL, except for a fit sampled
    convex within half of RELATIVE_DEFICIT_TOL, whose goal is raised to (just above)
    -RELATIVE_DEFICIT_TOL.  With CERTIFICATE_TOL alone, a clean fit with a dent of 4e-4 at
    its samples could only be proved convex within 1.04%, over the 1% that
    :func:`~psdsos.estimators._convex_cv.is_certified_convex` accepts; the tolerance then
    stays above about RELATIVE_DEFICIT_TOL / 2 (at most about twice as fine a covering)."""
    if -RELATIVE_DEFICIT_TOL / 2 <= relative_min < CERTIFICATE_TOL - RELATIVE_DEFICIT_TOL:
        return relative_min + 0.999 * RELATIVE_DEFICIT_TOL
    return CERTIFICATE_TOL


def convexity_certificate(est):
    """certificate_: {"convex[0,...]" or "concave[0,...]": ShapeCertificate}, a proved lower
    bound of lambda_min of the Hessian of the convex part (of -f when concave) over the box
    of the data, in the user's units (the certificate of ShapeConstrainedRegressor,
    :func:`psdsos.certify._records.certify_constraint`; the Gaussian kernel and
    representation="approx"; "sampled" otherwise or beyond CERTIFICATE_CELLS)."""
    from psdsos.certify._records import ShapeCertificate, certify_constraint
    from psdsos.sos._constraint import unit_kernel

    p = est.coef_.shape[0]
    name = f"{'concave' if est.concave else 'convex'}[{','.join(map(str, range(p)))}]"
    eig = hessian_eigenvalues(est, None, DEFICIT_POINTS, 0, sign=est._sign())
    scale = max(float(np.mean(np.abs(eig).max(axis=1))),
                CURVATURE_FLOOR * est.y_scale_ / est.x_scale_**2)
    bound = smin = float(eig.min())
    status, n_cells = "sampled", 0
    if est.representation == "approx":
        # in the standardized units (kernel of bandwidth 1; Hessians y_scale_ / x_scale_^2
        # times smaller; the affine part has none): any magnitude of x and y
        unit = est.y_scale_ / est.x_scale_**2
        fit = KernelExpansion(unit_kernel(est.kernel_), (est.X_fit_ - est.x_offset_) / est.x_scale_,
                  est.alpha_ / est.y_scale_, np.zeros(0))
        box = tuple((b - est.x_offset_) / est.x_scale_ for b in fitted_box(est))
        bound, status, smin, n_cells, _ = certify_constraint(
            fit, ShapeConstraint("hessian", tuple(range(p))), box, smin / unit, scale / unit,
            certificate_tol(smin / scale), CERTIFICATE_CELLS, margin_goal=False)
        bound, smin = bound * unit, smin * unit
    est.certificate_ = {name: ShapeCertificate(
        bound=float(bound), status=status, relative=float(bound / scale),
        sampled_min=float(smin), correction=0.0, n_cells=n_cells)}


def certify_convexity(est):
    """Set certificate_ (:func:`convexity_certificate`) and convexity_deficit_, and warn
    when the deficit found at the Sobol points exceeds RELATIVE_DEFICIT_TOL.

    convexity_deficit_ is relative to the curvature scale: where the certificate's status is
    "certified", the proved figure ``max(0, -relative)`` (no Hessian eigenvalue of the fit
    over the whole box is below ``-convexity_deficit_`` times the scale); otherwise
    ("sampled") the estimate ``convexity_deficit(relative=True)`` at DEFICIT_POINTS Sobol
    points of the box.  Both use the same curvature scale (the 4096 points' mean spectral
    norm, floored); the proved figure is never below the sampled one and exceeds the true
    deficit by at most about CERTIFICATE_TOL (the branch and bound stops there; for a fit
    sampled within RELATIVE_DEFICIT_TOL / 2 it aims just below RELATIVE_DEFICIT_TOL,
    :func:`certificate_tol`).

    The warning's criterion is the sampled estimate (a dent seen at the points, as it was
    before the proved figure was reported): a proved figure above the tolerance with a
    sampled one below it is the certificate's own slack (CERTIFICATE_TOL equals
    RELATIVE_DEFICIT_TOL), not a dent.  Its message gives convexity_deficit_ and says
    whether it is proved or sampled.
    """
    convexity_certificate(est)
    record = next(iter(est.certificate_.values()))
    proved = record.status == "certified"
    sampled = float(est.convexity_deficit(relative=True))
    est.convexity_deficit_ = max(0.0, -float(record.relative)) if proved else sampled
    if sampled > RELATIVE_DEFICIT_TOL:
        kind = "concave" if est.concave else "convex"
        noun = "concavity" if est.concave else "convexity"
        where = f"at {DEFICIT_POINTS} Sobol points of the data's bounding box"
        if proved:
            what = (f"its {noun} deficit is {sampled:.3g} times the curvature scale {where}, "
                    f"and at most {est.convexity_deficit_:.3g} over the whole box (proved: "
                    "the certificate's status is 'certified'; convexity_deficit_)")
        else:
            what = (f"its {noun} deficit is {sampled:.3g} times the curvature scale {where} "
                    "(sampled, not proved: the certificate's status is 'sampled'; "
                    "convexity_deficit_)")
        warnings.warn(
            f"the fitted function is not {kind}: {what}; tolerance "
            f"{RELATIVE_DEFICIT_TOL:g}.  The Hessian constraint holds at the "
            f"{est.constraint_points_.shape[0]} constraint points only: use a larger sigma "
            f"(now {est.kernel_.sigma:.4g}; the fit is smoother), more constraint_points (an "
            "int: Sobol points of the box), or predict_convexified()",
            NonConvexFitWarning, stacklevel=caller_stacklevel(),
        )
