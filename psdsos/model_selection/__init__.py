"""Model selection: cross-validated grid search with warm starts along the regularization path.

- :func:`grid_search_cv`: leave-one-out / k-fold grid search returning a
  :class:`SearchResult`, parallel through joblib (loky, threading, Dask, Ray backends),
  one job per (split, kernel parameters) sweeping the regularization weights from large to
  small with warm starts.
- :func:`paper_grid_psd`, :func:`paper_grid_convex`: the grids of the PSD paper, Appendix D.1
  and D.2 (absolute, or relative to the data's scale), and :func:`relative_sigmas`.
- :func:`neg_mse_scorer`: negated mean squared Frobenius error, a scorer for 3-D targets
  (also usable with scikit-learn's ``GridSearchCV``).
- :func:`neg_bures_wasserstein_scorer`, :func:`neg_affine_invariant_scorer`,
  :func:`neg_log_euclidean_scorer` (``scoring="neg_bures_wasserstein"``, ...): negated mean
  squared distances of PSD matrices in the geometry they are judged by, and the metrics
  :func:`mean_squared_bures_wasserstein`, :func:`mean_squared_affine_invariant`,
  :func:`mean_squared_log_euclidean` (for ``sklearn.metrics.make_scorer``); the last two
  floor the eigenvalues at ``EIG_FLOOR`` times the targets' largest one.

Imports psdsos.certify, psdsos.geometry and lower layers only: the CV estimators of
:mod:`psdsos.estimators` read their ``cv`` and ``scoring`` here.
"""

from psdsos.model_selection._grids import paper_grid_convex, paper_grid_psd, relative_sigmas
from psdsos.model_selection._path import PATH_PARAMS
from psdsos.model_selection._result import SearchResult
from psdsos.model_selection._scoring import (
    EIG_FLOOR,
    mean_squared_affine_invariant,
    mean_squared_bures_wasserstein,
    mean_squared_log_euclidean,
    neg_affine_invariant_scorer,
    neg_bures_wasserstein_scorer,
    neg_log_euclidean_scorer,
    neg_mse_scorer,
)
from psdsos.model_selection._search import grid_search_cv

__all__ = ["EIG_FLOOR", "PATH_PARAMS", "SearchResult", "grid_search_cv",
           "mean_squared_affine_invariant", "mean_squared_bures_wasserstein",
           "mean_squared_log_euclidean", "neg_affine_invariant_scorer",
           "neg_bures_wasserstein_scorer", "neg_log_euclidean_scorer", "neg_mse_scorer",
           "paper_grid_convex", "paper_grid_psd", "relative_sigmas"]
