"""Output-space plug-ins: the registry of output spaces by name and its class decorator.

An output space is one module: its class, a subclass of
:class:`~psdsos.structured.OutputSpace`, decorated with ``@register_output_space("name")``
where it is defined.  The estimators look names up here
(:func:`psdsos.structured.get_output_space`) and ask the space object what it offers
(``decode_methods``, ``is_classification``, ``projection_sets``, ...), so a space registered
by user code is used by name like the built-in ones, with no edit inside psdsos.

This module sits below the spaces (they import it to register themselves); the look-up
functions, which import every built-in space first, are in :mod:`psdsos.structured._registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import TypeVar

from psdsos._validation import class_registrar
from psdsos.structured._base import OutputSpace

__all__ = ["register_output_space"]

_SpaceClassT = TypeVar("_SpaceClassT", bound=type[OutputSpace])

#: Every registered output space class by (lower-case) name, in registration order.
_OUTPUT_SPACES: dict[str, type[OutputSpace]] = {}


def register_output_space(name: str) -> Callable[[_SpaceClassT], _SpaceClassT]:
    """Class decorator: register an output space class under ``name`` (a plug-in).

    The class is then accepted by name (case-insensitive) wherever psdsos takes an output
    space: :func:`~psdsos.structured.get_output_space`, the ``output=`` argument of
    :class:`~psdsos.structured.SELFEstimator` and :class:`~psdsos.structured.KRLSEstimator`
    (and of :class:`~psdsos.structured.FenchelYoungEstimator` when the class declares
    ``projection_sets``), and saved models (:func:`psdsos.load` rebuilds the space from its
    name and ``to_config()``).  The decorator sets the class attribute ``name``.

    Parameters
    ----------
    name : str
        The space's name: a non-empty lower-case string.

    Returns
    -------
    decorator : callable
        Registers the class and returns it unchanged (but for ``name``).

    Raises
    ------
    ValueError
        If ``name`` is not a non-empty lower-case string, if the class body sets another
        ``name``, or if another class is already registered under ``name`` (the message
        names it and the registered class; the same class again, from a reloaded module,
        replaces it).
    TypeError
        If the decorated object is not a subclass of :class:`~psdsos.structured.OutputSpace`.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.structured import OutputSpace, get_output_space, register_output_space
    >>> @register_output_space("doc_line")
    ... class LineSpace(OutputSpace):
    ...     decode_methods = ("mean",)
    ...     def check_Y(self, Y, name="Y"):
    ...         return np.asarray(Y, dtype=float)
    ...     def loss(self, Y_true, Y_pred):
    ...         return (np.asarray(Y_true) - np.asarray(Y_pred)) ** 2
    ...     def decode(self, alpha, method="auto"):
    ...         return np.asarray(alpha) @ self.Y_train_
    >>> get_output_space("doc_line").name
    'doc_line'
    """
    if not isinstance(name, str) or not name or name != name.lower():
        raise ValueError(f"name of an output space must be a non-empty lower-case string, "
                         f"got {name!r}")

    register = class_registrar(_OUTPUT_SPACES, "output space", name, base=OutputSpace)

    def decorator(cls: _SpaceClassT) -> _SpaceClassT:
        own = cls.__dict__.get("name", name) if isinstance(cls, type) else name
        if own != name:
            raise ValueError(f"{cls.__name__} sets name = {own!r} but is registered as "
                             f"{name!r}; drop the class attribute (the decorator sets it)")
        return register(cls)

    return decorator


class _SpaceTable(MutableMapping):
    """A live view of the registered spaces of one kind: ``{name: class}``.

    Reads follow the registry (spaces registered later appear); writing an entry registers
    a class under that name and deleting one unregisters it (kept for code that filled the
    former hard-coded tables, e.g. a test's ``monkeypatch.setitem``).
    """

    def __init__(self, keep: Callable[[type[OutputSpace]], bool], kind: str) -> None:
        self._keep = keep
        self._kind = kind

    def __getitem__(self, name: str) -> type[OutputSpace]:
        cls = _OUTPUT_SPACES.get(name)
        if cls is None or not self._keep(cls):
            raise KeyError(name)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, c in _OUTPUT_SPACES.items() if self._keep(c)])

    def __len__(self) -> int:
        return sum(1 for c in _OUTPUT_SPACES.values() if self._keep(c))

    def __setitem__(self, name: str, cls: type[OutputSpace]) -> None:
        _OUTPUT_SPACES[name] = cls

    def __delitem__(self, name: str) -> None:
        # the name leaves the registry (even when its class is not of this kind: an entry
        # written here is deleted here whatever the class declares)
        del _OUTPUT_SPACES[name]

    def __repr__(self) -> str:
        return f"<{self._kind} output spaces {dict(self)!r}>"


def _is_discrete(cls: type[OutputSpace]) -> bool:
    """A discrete space in the sense of the tables: it declares Fenchel-Young projection
    sets (its outputs are vertices of a polytope)."""
    return bool(cls.projection_sets)
