"""Convex losses for the kernel SoS estimators: value, conjugate, prox of the conjugate,
constants and a CVXPY expression for the primal reference (PSD paper, Theorem 3, eq. 10)."""

from psdsos.losses._losses import (
    LOSSES,
    AbsoluteLoss,
    EmpiricalLoss,
    EntrywiseHuberLoss,
    ExpectileLoss,
    HuberLoss,
    Loss,
    QuantileLoss,
    SquaredLoss,
    get_loss,
)

__all__ = [
    "Loss",
    "SquaredLoss",
    "HuberLoss",
    "EntrywiseHuberLoss",
    "AbsoluteLoss",
    "QuantileLoss",
    "ExpectileLoss",
    "EmpiricalLoss",
    "LOSSES",
    "get_loss",
]
