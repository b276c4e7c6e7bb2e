"""Model selection: cross-validated grid search with warm starts along the regularization path.

- :func:`grid_search_cv`: leave-one-out / k-fold grid search returning a
  :class:`SearchResult`, parallel through joblib (loky, threading, Dask, Ray backends),
  one job per (split, kernel parameters) sweeping the regularization weights from large to
  small with warm starts.
- :func:`paper_grid_psd`, :func:`paper_grid_convex`: the grids of the PSD paper, Appendix D.1
  and D.2 (absolute, or relative to the data's scale), and :func:`relative_sigmas`.
- :func:`neg_mse_scorer`: negated mean squared Frobenius error, a scorer for 3-D targets
  (also usable with scikit-learn's ``GridSearchCV``).

Imports psdsos.estimators and lower layers only.
"""

from psdsos.model_selection._grids import paper_grid_convex, paper_grid_psd, relative_sigmas
from psdsos.model_selection._path import PATH_PARAMS
from psdsos.model_selection._result import SearchResult
from psdsos.model_selection._scoring import neg_mse_scorer
from psdsos.model_selection._search import grid_search_cv

__all__ = ["PATH_PARAMS", "SearchResult", "grid_search_cv", "neg_mse_scorer", "paper_grid_convex",
           "paper_grid_psd", "relative_sigmas"]
