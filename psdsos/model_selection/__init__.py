"""Model selection: cross-validated grid search with warm starts along the regularization path.

- :func:`grid_search_cv`: leave-one-out / k-fold grid search returning a
  :class:`SearchResult`, parallel through joblib (loky, threading, Dask, Ray backends),
  one job per (split, kernel parameters) sweeping the regularization weights from large to
  small with warm starts.
- :func:`paper_grid_psd`: the grid of the PSD paper, Appendix D.1.
- :func:`neg_mse_scorer`: negated mean squared Frobenius error, a scorer for 3-D targets
  (also usable with scikit-learn's ``GridSearchCV``).

Imports psdsos.estimators and lower layers only.
"""

from psdsos.model_selection._search import (
    PATH_PARAMS,
    SearchResult,
    grid_search_cv,
    neg_mse_scorer,
    paper_grid_psd,
)

__all__ = ["PATH_PARAMS", "SearchResult", "grid_search_cv", "neg_mse_scorer", "paper_grid_psd"]
