"""Convex losses for the kernel SoS estimators: value, conjugate, prox of the conjugate,
constants and a CVXPY expression for the primal reference (PSD paper, Theorem 3, eq. 10)."""

from psdsos.losses._absolute import AbsoluteLoss
from psdsos.losses._base import Loss
from psdsos.losses._empirical import EmpiricalLoss
from psdsos.losses._huber import EntrywiseHuberLoss, HuberLoss
from psdsos.losses._level import ExpectileLoss, QuantileLoss
from psdsos.losses._registry import LOSSES, get_loss
from psdsos.losses._squared import SquaredLoss

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
