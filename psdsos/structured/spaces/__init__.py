r"""Output spaces of SELF, one module per space.

Each space decodes eq. 2 of Rudi et al., "Manifold Structured Prediction",

.. math::

    \hat f(x) = \operatorname*{argmin}_{y \in \mathcal Y} F(y), \qquad
    F(y) = \sum_{i=1}^n w_i\, \Delta(y, y_i),

batched over test points, with weights :math:`w` from the kernel-ridge weights
:math:`\alpha(x)` (the negative-weight policy of each space is documented in its class):

* :mod:`~psdsos.structured.spaces.euclidean` -- :class:`EuclideanSpace`, squared loss,
  optionally on a convex set (CVXPY or closed-form projection), and
  :func:`project_psd_cone`;
* :mod:`~psdsos.structured.spaces.spd` -- :class:`SPDSpace`, affine-invariant distance
  (eq. 16, Table 1), Riemannian Newton with the exponential map (eq. 15), eigenvectors
  tracked across iterations (the solver: :mod:`psdsos.structured.spaces._spd_newton`);
* :mod:`~psdsos.structured.spaces.log_euclidean` -- :class:`LogEuclideanSPDSpace`,
  log-Euclidean distance, closed form;
* :mod:`~psdsos.structured.spaces.bures` -- :class:`BuresSpace`, Bures-Wasserstein distance,
  an SDP in CVXPY (convex for :math:`w \ge 0`) or the fixed-point iteration of
  Alvarez-Esteban et al. (2016);
* :mod:`~psdsos.structured.spaces.sphere` -- :class:`SphereSpace`, squared geodesic distance
  :math:`\arccos^2` (eq. 17, Table 1), Riemannian gradient descent with the normalization
  retraction;
* :mod:`~psdsos.structured.spaces.fisher` -- :class:`FisherSimplexSpace`, histograms with the
  Fisher-Rao geometry through the square-root map onto the sphere (section 4.4);
* :mod:`~psdsos.structured.spaces.orientation` -- :class:`OrientationSpace`, angles modulo
  pi with the loss sin^2(z - y), exact closed-form decoding (localized paper, section 6.2);
* :mod:`~psdsos.structured.spaces.multiclass` -- :class:`MulticlassSpace`,
  :mod:`~psdsos.structured.spaces.multilabel` -- :class:`MultilabelSpace`,
  :mod:`~psdsos.structured.spaces.ranking` -- :class:`RankingSpace`,
  :mod:`~psdsos.structured.spaces.ordinal` -- :class:`OrdinalSpace`: discrete outputs
  decoded by the MAP oracle or the LP of their marginal polytope
  (:mod:`psdsos.structured.polytopes`; Blondel, "Structured Prediction with Projection
  Oracles", NeurIPS 2019), sharing :mod:`~psdsos.structured.spaces._polytope_space` (and
  ``_label_space`` for class labels); :mod:`~psdsos.structured.spaces.discrete` re-exports
  the four.

The interface every space follows is :class:`psdsos.structured.OutputSpace`.
"""

from psdsos.structured.spaces.bures import BuresSpace
from psdsos.structured.spaces.euclidean import EuclideanSpace, project_psd_cone
from psdsos.structured.spaces.fisher import FisherSimplexSpace
from psdsos.structured.spaces.log_euclidean import LogEuclideanSPDSpace
from psdsos.structured.spaces.multiclass import MulticlassSpace
from psdsos.structured.spaces.multilabel import MultilabelSpace
from psdsos.structured.spaces.ordinal import OrdinalSpace
from psdsos.structured.spaces.orientation import OrientationSpace
from psdsos.structured.spaces.ranking import RankingSpace
from psdsos.structured.spaces.spd import SPDSpace
from psdsos.structured.spaces.sphere import SphereSpace

__all__ = [
    "EuclideanSpace",
    "SPDSpace",
    "LogEuclideanSPDSpace",
    "BuresSpace",
    "SphereSpace",
    "FisherSimplexSpace",
    "OrientationSpace",
    "MulticlassSpace",
    "MultilabelSpace",
    "RankingSpace",
    "OrdinalSpace",
    "project_psd_cone",
]
