"""SELF structured prediction (Ciliberto et al.; Rudi et al., "Manifold Structured Prediction").

``SELFEstimator`` computes the kernel-ridge weights alpha(x) (eq. 3) and an output space
decodes eq. 2; ``KRLSEstimator`` is the projected kernel ridge baseline (Appendix G).
Output spaces by name: see :func:`get_output_space`.

Layout:

* :mod:`psdsos.structured.spaces` -- one module per output space: ``euclidean``
  (:class:`EuclideanSpace`, :func:`project_psd_cone`), ``spd`` (:class:`SPDSpace`, its
  Riemannian Newton decoder in ``_spd_newton``), ``log_euclidean``
  (:class:`LogEuclideanSPDSpace`), ``bures`` (:class:`BuresSpace`), ``sphere``
  (:class:`SphereSpace`), ``fisher`` (:class:`FisherSimplexSpace`), ``multiclass``
  (:class:`MulticlassSpace`), ``multilabel`` (:class:`MultilabelSpace`), ``ranking``
  (:class:`RankingSpace`) and ``ordinal`` (:class:`OrdinalSpace`), re-exported by
  ``discrete``;
* :mod:`psdsos.structured.polytopes` -- the marginal polytopes of the discrete spaces
  (``Simplex``, ``UnitCube``, ``Knapsack``, ``Birkhoff``, ``OrderSimplex``) and the
  projection sets ``RowSimplex`` and ``Permutahedron``: MAP oracles, CVXPY constraints, the
  decoding LP, batched Euclidean and KL projections, and the plain projections
  :func:`project_box` and :func:`project_simplex`;
* :mod:`psdsos.structured.parts` -- parts of inputs and outputs (blocks, windows, patches)
  for localized structured prediction (Ciliberto, Bach and Rudi), with overlap-add assembly,
  and :class:`LocalizedSELF` (prediction by parts, eq. 6) with :func:`intra_locality` (eq. 21);
* :func:`fenchel_young_loss` -- the projection-based Fenchel-Young losses (Blondel, eq. 6),
  and :class:`FenchelYoungEstimator`, trained on them with calibrated decoding (eq. 11);
* the interface every space follows, :class:`OutputSpace`, is documented in
  :mod:`psdsos.structured._base`; a space is registered by name with
  :func:`register_output_space` where its class is defined (a plug-in is one module); the
  negative-weight policy of the manifold spaces in :mod:`psdsos.structured._common`.

Everything listed in ``__all__`` is importable from ``psdsos.structured`` directly.
"""

from psdsos.structured._base import OutputSpace, check_alpha, resolve_method
from psdsos.structured._common import SIGNED_L1_BOUND, NoMinimizerWarning, policy_weights
from psdsos.structured._estimator import KRLSEstimator, SELFEstimator
from psdsos.structured._fenchel_young import fenchel_young_loss
from psdsos.structured._fy_estimator import FenchelYoungEstimator
from psdsos.structured._localized import LocalizedSELF, intra_locality
from psdsos.structured._plugins import register_output_space
from psdsos.structured._registry import CONTINUOUS_SPACES, get_output_space, output_spaces
from psdsos.structured.polytopes import project_box, project_simplex
from psdsos.structured.spaces import (
    BuresSpace,
    EuclideanSpace,
    FisherSimplexSpace,
    LogEuclideanSPDSpace,
    MulticlassSpace,
    MultilabelSpace,
    OrdinalSpace,
    OrientationSpace,
    RankingSpace,
    SPDSpace,
    SphereSpace,
    project_psd_cone,
)

__all__ = [
    "fenchel_young_loss",
    "FenchelYoungEstimator",
    "SELFEstimator",
    "KRLSEstimator",
    "LocalizedSELF",
    "intra_locality",
    "OutputSpace",
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
    "CONTINUOUS_SPACES",
    "SIGNED_L1_BOUND",
    "NoMinimizerWarning",
    "check_alpha",
    "get_output_space",
    "output_spaces",
    "register_output_space",
    "policy_weights",
    "project_box",
    "project_psd_cone",
    "project_simplex",
    "resolve_method",
]
