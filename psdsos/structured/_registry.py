"""Output spaces by name (ARCHITECTURE.md): the continuous ones here, the discrete ones from
``psdsos.structured.spaces.discrete.DISCRETE_SPACES`` (looked up at call time)."""

from __future__ import annotations

from psdsos.structured._base import OutputSpace
from psdsos.structured.spaces import (
    BuresSpace,
    EuclideanSpace,
    FisherSimplexSpace,
    LogEuclideanSPDSpace,
    OrientationSpace,
    SPDSpace,
    SphereSpace,
)
from psdsos.structured.spaces.discrete import DISCRETE_SPACES

__all__ = ["CONTINUOUS_SPACES", "output_spaces", "get_output_space"]

CONTINUOUS_SPACES = {
    "euclidean": EuclideanSpace,
    "spd": SPDSpace,
    "spd_logeuclidean": LogEuclideanSPDSpace,
    "bures": BuresSpace,
    "sphere": SphereSpace,
    "fisher_simplex": FisherSimplexSpace,
    "orientation": OrientationSpace,
}


def output_spaces() -> dict[str, type[OutputSpace]]:
    """Every output space class by name: ``{name: class}`` (continuous and discrete)."""
    return {**CONTINUOUS_SPACES, **DISCRETE_SPACES}


def get_output_space(output: str | OutputSpace) -> OutputSpace:
    """An output space from its name or an :class:`OutputSpace` instance (returned as is).

    Parameters
    ----------
    output : str or OutputSpace
        One of ``"euclidean"``, ``"spd"``, ``"spd_logeuclidean"``, ``"bures"``, ``"sphere"``,
        ``"fisher_simplex"`` and the discrete names (``"multiclass"``, ...), case-insensitive;
        a name builds the space with its default parameters.

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
