"""The loss registry: loss classes by name, :func:`register_loss`, :func:`get_loss`.

A loss is one module: its class, decorated with ``@register_loss("name")`` where it is
defined, declaring its parameters (:class:`~psdsos.losses.LossParameter`).  The estimators
read the registry when they check their ``loss=`` argument and build the loss from the
parameters it declares, so a loss registered by user code (a plug-in) is accepted by name
like the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from psdsos._validation import class_registrar
from psdsos.losses._base import Loss

_L = TypeVar("_L", bound=type[Loss])

#: Every registered loss class by (lower-case) name, in registration order.
_REGISTRY: dict[str, type[Loss]] = {}


def register_loss(name: str) -> Callable[[_L], _L]:
    """Class decorator: register a :class:`Loss` subclass under ``name`` (a plug-in loss).

    The class is then accepted by name (case-insensitive) by :func:`get_loss` and by the
    ``loss=`` argument of the estimators whose arguments cover its required parameters
    (``PSDRegressor`` passes ``delta``; ``ConvexRegressor`` passes ``delta`` and ``quantile``
    and also needs ``convex_regression = True``).  The decorator sets the class attribute
    ``name``.

    Parameters
    ----------
    name : str
        The loss's name, a non-empty string; stored in lower case.

    Returns
    -------
    decorator : callable
        Registers the class and returns it unchanged (but for ``name``).

    Raises
    ------
    ValueError
        If ``name`` is not a non-empty string, or another loss is already registered under
        it (the message names it and the registered class).  Registering a class of the same
        module and name again (a reloaded module) replaces it.
    TypeError
        If the decorated class is not a :class:`Loss` subclass.

    Examples
    --------
    A squared loss of weight 2, :math:`\\ell(R) = \\|R\\|_F^2`:

    .. code-block:: python

        from psdsos.losses import Loss, register_loss

        @register_loss("double_squared")
        class DoubleSquaredLoss(Loss):
            def value(self, R): ...
            def grad(self, R): ...
            def conjugate(self, S): ...
            def prox_conjugate(self, V, step): ...
            def cvxpy_expr(self, residual, multiplicity=None): ...

        PSDRegressor(loss="double_squared")
    """
    return class_registrar(_REGISTRY, "loss", name, base=Loss)


def loss_names(*, parameters: Iterable[str] | None = None,
               convex_regression: bool = False) -> tuple[str, ...]:
    """Names of the registered losses, in registration order.

    Parameters
    ----------
    parameters : iterable of str, optional
        Only the losses whose required parameters (:attr:`Loss.parameters` without a
        default) are all among these names: the losses an estimator can build by name from
        its own arguments (``("delta",)`` for ``PSDRegressor``).
    convex_regression : bool, default=False
        Only the losses offered by ``ConvexRegressor`` (``Loss.convex_regression``).

    Returns
    -------
    names : tuple of str

    Examples
    --------
    >>> from psdsos.losses import loss_names
    >>> loss_names(parameters=("delta",))
    ('squared', 'huber', 'huber_entrywise', 'absolute')
    """
    given = None if parameters is None else set(parameters)
    return tuple(
        n for n, cls in _REGISTRY.items()
        if (given is None or {p.name for p in cls.parameters if p.default is None} <= given)
        and (cls.convex_regression or not convex_regression))


#: Loss classes by name (the strings accepted by :func:`get_loss`): a read-only view of the
#: registry, which plug-ins registered with :func:`register_loss` join.
LOSSES: Mapping[str, type[Loss]] = MappingProxyType(_REGISTRY)


def get_loss(loss: str | Loss, delta: float | None = None, quantile: float | None = None,
             *, strict: bool = False, **params: Any) -> Loss:
    """Resolve a loss name (or a :class:`Loss` object) to a Loss object.

    The loss class named ``loss`` is built from the parameters it declares
    (:attr:`Loss.parameters`), each taken from the keyword of its name.

    Parameters
    ----------
    loss : str or Loss
        One of ``LOSSES`` ("squared", "huber", "huber_entrywise", "absolute", "quantile",
        "expectile", and the registered plug-ins), or a Loss object (returned unchanged;
        ``delta``, ``quantile`` and ``params`` must then be None).
    delta : float > 0, optional
        Required for "huber" and "huber_entrywise".
    quantile : float in (0, 1), optional
        Required for "quantile" and "expectile".
    strict : bool, default=False
        Refuse (ValueError) a parameter given (not None) that the loss does not declare;
        by default it is ignored.
    **params
        The parameters of plug-in losses, by name.

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown name, or a missing or invalid ``delta`` / ``quantile``, naming the argument.

    Examples
    --------
    >>> from psdsos.losses import get_loss
    >>> get_loss("huber", delta=0.5)
    HuberLoss(delta=0.5)
    """
    given = {"delta": delta, "quantile": quantile, **params}
    if isinstance(loss, Loss):
        for name, val in given.items():
            if val is not None:
                raise ValueError(f"{name} must be None when loss is a Loss object (set it on "
                                 f"the object), got {name}={val!r} with loss={loss!r}")
        return loss
    if not isinstance(loss, str) or loss.lower() not in _REGISTRY:
        raise ValueError(f"loss must be one of {sorted(_REGISTRY)} or a Loss object, "
                         f"got {loss!r}")
    name = loss.lower()
    cls = _REGISTRY[name]
    declared = [p.name for p in cls.parameters]
    if strict:
        for key, val in given.items():
            if val is not None and key not in declared:
                takes = f"its parameters are {declared}" if declared else "it has no parameters"
                raise ValueError(f"{key} must be None for loss={name!r} ({takes}), got "
                                 f"{key}={val!r}")
    return cls(**{p.name: p.check(given.get(p.name), name) for p in cls.parameters})
