"""Convex losses for the kernel SoS estimators: value, conjugate, prox of the conjugate,
constants and a CVXPY expression for the primal reference (PSD paper, Theorem 3, eq. 10).

Each loss is one module whose class registers itself by name (:func:`register_loss`) and
declares its parameters (:class:`LossParameter`); :data:`LOSSES`, :func:`loss_names` and
:func:`get_loss` read that registry, so a loss defined outside psdsos and registered the
same way is accepted by name by the estimators."""

from psdsos.losses._base import Loss, LossParameter
from psdsos.losses._empirical import EmpiricalLoss
from psdsos.losses._registry import LOSSES, get_loss, loss_names, register_loss

# isort: off
# the loss modules register their classes when imported: this order is that of LOSSES
from psdsos.losses._squared import SquaredLoss
from psdsos.losses._huber import EntrywiseHuberLoss, HuberLoss
from psdsos.losses._absolute import AbsoluteLoss
from psdsos.losses._level import ExpectileLoss, QuantileLoss
# isort: on

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
    "LossParameter",
    "register_loss",
    "loss_names",
]
