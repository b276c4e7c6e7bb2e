"""Output spaces by name (ARCHITECTURE.md): look-ups in the registry of
:mod:`psdsos.structured._plugins`, which every space fills with ``@register_output_space``
where it is defined (importing :mod:`psdsos.structured.spaces` registers the built-in ones)."""

from __future__ import annotations

import psdsos.structured.spaces  # noqa: F401  (registers the built-in spaces)
from psdsos.structured._base import OutputSpace
from psdsos.structured._plugins import _OUTPUT_SPACES, _is_discrete, _SpaceTable

__all__ = ["CONTINUOUS_SPACES", "output_spaces", "get_output_space"]

#: The registered spaces that declare no projection sets (``{name: class}``, a live view of
#: the registry; the others are ``psdsos.structured.spaces.discrete.DISCRETE_SPACES``).
CONTINUOUS_SPACES = _SpaceTable(lambda cls: not _is_discrete(cls), "continuous")


def output_spaces() -> dict[str, type[OutputSpace]]:
    """Every registered output space class by name: ``{name: class}`` (a copy).

    The built-in spaces and those registered with
    :func:`~psdsos.structured.register_output_space`, in registration order.
    """
    return dict(_OUTPUT_SPACES)


def get_output_space(output: str | OutputSpace) -> OutputSpace:
    """An output space from its name or an :class:`OutputSpace` instance (returned as is).

    Parameters
    ----------
    output : str or OutputSpace
        A registered name (:func:`output_spaces`: ``"euclidean"``, ``"spd"``,
        ``"spd_logeuclidean"``, ``"bures"``, ``"sphere"``, ``"fisher_simplex"``,
        ``"orientation"``, the discrete names ``"multiclass"``, ... and plug-ins),
        case-insensitive; a name builds the space with its default parameters.

    Raises
    ------
    ValueError
        Naming ``output`` and the known names, for anything else.
    """
    if isinstance(output, OutputSpace):
        return output
    spaces = output_spaces()
    if isinstance(output, str) and output.lower() in spaces:
        return spaces[output.lower()]()
    raise ValueError(
        f"output must be one of {sorted(spaces)} or an OutputSpace instance, got {output!r}"
    )
