"""Losses by name: :data:`LOSSES` and :func:`get_loss`."""

from __future__ import annotations

import numbers

from psdsos.losses._absolute import AbsoluteLoss
from psdsos.losses._base import Loss
from psdsos.losses._huber import EntrywiseHuberLoss, HuberLoss
from psdsos.losses._level import ExpectileLoss, QuantileLoss
from psdsos.losses._squared import SquaredLoss

#: Loss classes by name (the strings accepted by :func:`get_loss`).
LOSSES = {
    "squared": SquaredLoss,
    "huber": HuberLoss,
    "huber_entrywise": EntrywiseHuberLoss,
    "absolute": AbsoluteLoss,
    "quantile": QuantileLoss,
    "expectile": ExpectileLoss,
}


def get_loss(loss: str | Loss, delta: float | None = None,
             quantile: float | None = None) -> Loss:
    """Resolve a loss name (or a :class:`Loss` object) to a Loss object.

    Parameters
    ----------
    loss : str or Loss
        One of ``LOSSES`` ("squared", "huber", "huber_entrywise", "absolute", "quantile",
        "expectile"), or a Loss object (returned unchanged; ``delta`` and ``quantile``
        must then be None).
    delta : float > 0, optional
        Required for "huber" and "huber_entrywise".
    quantile : float in (0, 1), optional
        Required for "quantile" and "expectile".

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown name, or a missing or invalid ``delta`` / ``quantile``, naming the argument.
    """
    if isinstance(loss, Loss):
        for name, val in (("delta", delta), ("quantile", quantile)):
            if val is not None:
                raise ValueError(f"{name} must be None when loss is a Loss object (set it on "
                                 f"the object), got {name}={val!r} with loss={loss!r}")
        return loss
    if not isinstance(loss, str) or loss.lower() not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)} or a Loss object, got {loss!r}")
    name = loss.lower()
    if name in ("huber", "huber_entrywise"):
        if delta is None or isinstance(delta, bool) or not isinstance(delta, numbers.Real):
            raise ValueError(f"delta must be a positive real number for loss={name!r} (the "
                             f"Huber threshold), got {delta!r}")
        return LOSSES[name](delta)
    if name in ("quantile", "expectile"):
        if quantile is None:
            raise ValueError(f"quantile must be a real number in (0, 1) for loss={name!r}, "
                             f"got {quantile!r}")
        return LOSSES[name](quantile)
    return LOSSES[name]()
