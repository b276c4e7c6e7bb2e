"""The four discrete SELF output spaces, re-exported from their modules.

One module per space: :mod:`~psdsos.structured.spaces.multiclass`,
:mod:`~psdsos.structured.spaces.multilabel`, :mod:`~psdsos.structured.spaces.ranking` and
:mod:`~psdsos.structured.spaces.ordinal`; their shared machinery (the affine decomposition of
eq. 9 of Blondel 2019, scores, oracle and LP decoding) is in
:mod:`~psdsos.structured.spaces._polytope_space` and the class-label handling in
:mod:`~psdsos.structured.spaces._label_space`.  This module keeps the names importable from
where they were (the docs name it) and the table ``DISCRETE_SPACES``: the registered spaces
that declare Fenchel-Young projection sets, a live view of the registry (plug-ins included).
"""

from __future__ import annotations

from psdsos.structured._plugins import _is_discrete, _SpaceTable
from psdsos.structured.spaces._polytope_space import AffineDecomposition
from psdsos.structured.spaces.multiclass import MulticlassSpace
from psdsos.structured.spaces.multilabel import MultilabelSpace
from psdsos.structured.spaces.ordinal import OrdinalSpace
from psdsos.structured.spaces.ranking import RankingSpace

__all__ = [
    "AffineDecomposition",
    "MulticlassSpace",
    "MultilabelSpace",
    "RankingSpace",
    "OrdinalSpace",
    "DISCRETE_SPACES",
]

#: ``{name: class}`` of the discrete spaces (``multiclass``, ``multilabel``, ``ranking``,
#: ``ordinal`` and registered plug-ins that declare ``projection_sets``).
DISCRETE_SPACES = _SpaceTable(_is_discrete, "discrete")
