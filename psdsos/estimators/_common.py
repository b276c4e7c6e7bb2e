"""Checks shared by the estimators of this subpackage (parameters, fitted inputs)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from psdsos._params import Bool, Interval, RandomState, Verbose
from psdsos._validation import validate_data

__all__: list[str] = []

#: The parameter constraints of an iterative solver's settings (``tol``, ``max_iter``,
#: ``warm_start``, ``random_state``, ``verbose``), as in PSDRegressor and ConvexRegressor.
ITERATIVE_OPTIONS: dict[str, Any] = {
    "tol": Interval(numbers.Real, 0.0, None, closed="neither"),
    "max_iter": Interval(numbers.Integral, 1, None),
    "warm_start": Bool(),
    "random_state": RandomState(),
    "verbose": Verbose(),
}


def cv_seed(random_state: Any) -> Any:
    """The seed of the shuffled ``KFold`` a CV estimator builds from ``cv=int``: 0 when
    ``random_state`` is None (reproducible folds by default), an int drawn from a Generator,
    else ``random_state`` itself."""
    seed = 0 if random_state is None else random_state
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2**31 - 1))
    return seed


def fitted_input(est: Any, X: ArrayLike, attribute: str) -> np.ndarray:
    """X validated against the fit of ``est`` (same number of features), after checking that
    ``est`` is fitted (has ``attribute``)."""
    check_is_fitted(est, attribute)
    return validate_data(est, X, reset=False, dtype=np.float64)


def check_regularization(est: Any, ill_posed: str, dual_lam2: str = "",
                         primal_lam2: str = "") -> None:
    """Refuse lam1 = lam2 = 0 (the infimum need not be attained: Theorem 2 needs lam1 > 0 or
    lam2 > 0; ``ill_posed`` says what fails) and lam2 = 0 with the dual solver (its
    negative-part term divides by lam2; ``dual_lam2`` and ``primal_lam2`` complete the
    message)."""
    if est.lam1 == 0 and est.lam2 == 0:
        raise ValueError(
            f"lam1 = lam2 = 0 is ill-posed: {ill_posed} (Theorem 2 needs lam1 > 0 or lam2 > 0); "
            "set lam1 > 0 (trace) or lam2 > 0 (Frobenius)"
        )
    if est.solver == "dual" and est.lam2 == 0:
        raise ValueError(f"lam2 = 0 is not supported by solver='dual'{dual_lam2}; use "
                         f"solver='primal'{primal_lam2}")


def standardized_loss(est: Any, owner: str) -> Any:
    """The loss of ``est`` (its ``loss``, ``delta``, ``quantile``) in standardized units,
    None for "squared": built from the parameters it declares (one it does not declare must
    be None), rescaled to residuals divided by ``est.y_scale_`` (``Loss.rescaled``: delta /
    y_scale_ for Huber).  ``owner`` names the estimator in the error of a loss that does not
    say how it rescales."""
    from psdsos.losses import SquaredLoss, get_loss

    loss = get_loss(est.loss, delta=est.delta, quantile=est.quantile, strict=True)
    if type(loss) is SquaredLoss:
        return None
    if est.y_scale_ != 1.0:
        scaled = loss.rescaled(est.y_scale_)
        if scaled is None:
            raise ValueError(f"loss={est.loss!r} does not say how it rescales "
                             f"(Loss.rescaled returns None): {owner} fits in units of the "
                             "targets' scale")
        loss = scaled[0]
    return loss


def irls_weights(loss: Any, r: np.ndarray, eps: float) -> np.ndarray:
    """The weights omega of iteratively reweighted least squares at residuals r: l'(r) / r
    for a smooth loss (its limit l'(h) / h at r ~ 0), |l'(r)| / max(|r|, eps) otherwise."""
    g = loss.grad(r)
    if loss.is_smooth:
        h = 1e-8
        small = np.abs(r) < h
        return np.where(small, loss.grad(np.full_like(r, h)) / h, g / np.where(small, 1.0, r))
    return np.abs(g) / np.maximum(np.abs(r), eps)

