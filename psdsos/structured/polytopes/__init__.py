r"""Marginal polytopes of discrete output spaces: MAP oracles, CVXPY constraints, projections.

Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), section 4: every
discrete output space :math:`\mathcal Y` is encoded by a 0/1 embedding
:math:`\varphi(y) \in \{0, 1\}^p` and its *marginal polytope* (eq. 8)

.. math::

    \mathcal M = \operatorname{conv}\,\varphi(\mathcal Y),

whose vertices are exactly the encoded structures.  Each polytope below offers

* ``map_oracle(scores)``: the MAP / linear-maximization oracle (eq. 2)
  :math:`\operatorname{argmax}_{v \in \operatorname{vert}\mathcal M} \langle \theta, v\rangle`,
  batched over the leading axis, with deterministic tie-breaking (documented per class);
* ``cvxpy_constraints(mu)``: the polytope as CVXPY constraints on a variable of shape
  ``shape`` (so the same maximization can be solved as a linear program, see
  :class:`PolytopeLP`);
* ``round(mu)``: the vertex nearest (Euclidean) to a point ``mu`` of the polytope.  For 0/1
  vertices :math:`\|v - \mu\|^2 = \langle v, \mathbf 1 - 2\mu\rangle + \|\mu\|^2`, so the
  nearest vertex is ``map_oracle(mu - 1/2)``;
* ``project_euclidean(theta)`` and ``project_kl(theta)``: the Euclidean and KL projections
  (eq. 5) the projection-based Fenchel-Young losses of the same paper need, on every
  polytope here: closed forms (simplex, unit cube, row simplex), sorting with pool adjacent
  violators (permutahedron, order simplex, knapsack KL), a one-dimensional search
  (knapsack Euclidean) and Newton's method on the dual (Birkhoff polytope).

All functions take arrays of shape ``(m, *shape)`` (a batch of score vectors) or ``shape``
(a single one) and return the same leading shape.

The module also holds the plain, batched projections :func:`project_simplex` (rows onto the
probability simplex; :meth:`Simplex.project_euclidean` uses it) and :func:`project_box`.
"""

from __future__ import annotations

from psdsos.structured.polytopes._base import Polytope, project_box, project_simplex
from psdsos.structured.polytopes._cube import Knapsack, UnitCube
from psdsos.structured.polytopes._lp import LP_SOLVERS, PolytopeLP
from psdsos.structured.polytopes._order import OrderSimplex
from psdsos.structured.polytopes._permutations import Birkhoff, Permutahedron
from psdsos.structured.polytopes._simplex import RowSimplex, Simplex

__all__ = [
    "project_box",
    "project_simplex",
    "Polytope",
    "Simplex",
    "UnitCube",
    "Knapsack",
    "Birkhoff",
    "OrderSimplex",
    "RowSimplex",
    "Permutahedron",
    "PolytopeLP",
    "LP_SOLVERS",
]
