"""The four discrete SELF output spaces, re-exported from their modules.

One module per space: :mod:`~psdsos.structured.spaces.multiclass`,
:mod:`~psdsos.structured.spaces.multilabel`, :mod:`~psdsos.structured.spaces.ranking` and
:mod:`~psdsos.structured.spaces.ordinal`; their shared machinery (the affine decomposition of
eq. 9 of Blondel 2019, scores, oracle and LP decoding) is in
:mod:`~psdsos.structured.spaces._polytope_space` and the class-label handling in
:mod:`~psdsos.structured.spaces._label_space`.  This module keeps the names importable from
where they were (the docs name it) and the table ``DISCRETE_SPACES``.
"""

from __future__ import annotations

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

DISCRETE_SPACES = {
    cls.name: cls for cls in (MulticlassSpace, MultilabelSpace, RankingSpace, OrdinalSpace)
}
