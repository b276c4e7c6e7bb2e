r"""Where a :class:`~psdsos.estimators.ConvexRegressor` imposes convexity and how it checks it.

The constraint points (the default: greedy pivots of the kernel among the training points
and the corners of the data's bounding box; Sobol points; given points) and the fit's
certificate of convexity between them: the smallest Hessian eigenvalue over Sobol points of
the data's bounding box (Corollary 7), relative to the curvature scale.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.stats import qmc
from sklearn.utils.validation import check_is_fitted

from psdsos._params import resolve_kernel
from psdsos._validation import caller_stacklevel, check_array_2d, check_random_state
from psdsos.estimators._weights import first_unique_rows
from psdsos.features._features import _greedy_pivots

__all__ = ["NonConvexFitWarning", "RELATIVE_DEFICIT_TOL"]

#: Largest number of constraint points the default (``constraint_points=None``) uses with
#: exact features; with Nystrom features of rank r it uses 2 r (see ConvexRegressor).
AUTO_CONSTRAINT_POINTS = 100
#: The default stops choosing constraint points once every other training point's residual
#: kernel variance is below this fraction of k(x, x) (greedy pivoted Cholesky).
AUTO_PIVOT_RTOL = 1e-6
#: The default also offers the 2^d corners of the data's bounding box to the pivoting when
#: n >= m_auto and 2^d <= this fraction of its m_auto points (d <= 5 with exact features):
#: a fit constrained at training points only was non-convex near the box's faces and
#: corners, where training points are sparse (see benchmarks/convex_regression.py).
AUTO_CORNER_FRACTION = 0.5
#: In d = 5 the default allows up to this many points when n >= 5 per point: 100 points
#: left the fit non-convex on the data of eq. (30), 200 did not; with fewer training points
#: per constraint point, or in d >= 6, more points cost time without certifying convexity
#: (see docs/benchmarks.md).
AUTO_CONSTRAINT_POINTS_D5 = 200
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


def auto_constraint_budget(n_samples, n_features, n_landmarks=None):
    """Largest number of constraint points the default (``constraint_points=None``) uses.

    ``2 * n_landmarks`` with Nystrom features; with exact features
    :data:`AUTO_CONSTRAINT_POINTS` (100), and in d = 5 up to
    :data:`AUTO_CONSTRAINT_POINTS_D5` (200) while n >= 5 points per constraint point.
    """
    if n_landmarks is not None:
        return 2 * int(n_landmarks)
    if n_features == 5:
        return max(AUTO_CONSTRAINT_POINTS,
                   min(AUTO_CONSTRAINT_POINTS_D5, int(n_samples) // 5))
    return AUTO_CONSTRAINT_POINTS


def sobol_points(lo, hi, n_points, random_state):
    """Scrambled Sobol points in the box [lo, hi] (seeded)."""
    rng = check_random_state(random_state)
    sampler = qmc.Sobol(d=len(lo), scramble=True, seed=rng)
    m = int(n_points)
    U = sampler.random_base2(int(np.ceil(np.log2(max(m, 2)))))[:m]
    return qmc.scale(U, lo, hi) if np.all(hi > lo) else lo + U * (hi - lo)


class ConstraintPointsOption:
    """The parameter check of ``constraint_points``."""

    def check(self, name, value, owner):
        if value is None:
            return
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
            return
        if isinstance(value, str) and value == "train":
            return
        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            return
        raise ValueError(
            f"{name} of {owner} must be None or 'train' (the training points), a positive int "
            f"(Sobol points in the data's bounding box) or an array (m, n_features), got {value!r}"
        )


def constraint_points(est, X, kernel=None, box=None, corner_fraction=AUTO_CORNER_FRACTION):
    """The constraint points of ``est`` (see its parameter); ``box = (lo, hi)``: the data's
    bounding box when X is only a sample of the rows (out-of-core fits)."""
    cp_ = est.constraint_points
    if cp_ is None:
        # chosen among the distinct rows (first occurrences, in order): duplicated rows
        # (integer sample weights) do not change the choice
        if kernel is None:
            kernel = resolve_kernel(est.kernel, est.sigma, X)
        X = first_unique_rows(X)
        m_auto = auto_constraint_budget(X.shape[0], X.shape[1], est.n_landmarks)
        cand = X
        p = X.shape[1]
        if X.shape[0] >= m_auto and 2**p <= corner_fraction * m_auto:
            lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
            bits = (np.arange(2**p)[:, None] >> np.arange(p)) & 1
            corners = np.unique(np.where(bits == 1, hi, lo), axis=0)
            new = ~(corners[:, None, :] == X[None, :, :]).all(axis=2).any(axis=1)
            cand = np.vstack([X, corners[new]])
        idx = _greedy_pivots(kernel, cand, min(cand.shape[0], m_auto),
                             check_random_state(est.random_state), rtol=AUTO_PIVOT_RTOL)
        return X if len(idx) == cand.shape[0] == X.shape[0] else cand[idx]
    if isinstance(cp_, str) and cp_ == "train":
        return X
    if isinstance(cp_, numbers.Integral):
        lo, hi = (X.min(axis=0), X.max(axis=0)) if box is None else box
        return sobol_points(lo, hi, cp_, est.random_state)
    Z = check_array_2d(cp_, "constraint_points")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"constraint_points must have {X.shape[1]} columns (n_features), got {Z.shape[1]}"
        )
    return Z


# ---- the certificate --------------------------------------------------------------------------
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
    :func:`psdsos.estimators._shape_certify.certify_constraint`; the Gaussian kernel and
    representation="approx"; "sampled" otherwise or beyond CERTIFICATE_CELLS)."""
    from psdsos.estimators._convex_fit import unit_kernel
    from psdsos.estimators._shape_certify import ShapeCertificate, certify_constraint
    from psdsos.estimators._shape_fit import Fit
    from psdsos.problems._shape import ShapeConstraint

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
        fit = Fit(unit_kernel(est.kernel_), (est.X_fit_ - est.x_offset_) / est.x_scale_,
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
