"""Finite-dimensional features phi(x) for kernel SoS models (exact Cholesky and Nystrom)."""

from psdsos.features._features import ExactFeatures, NystromFeatures, cholesky_with_jitter

__all__ = ["ExactFeatures", "NystromFeatures", "cholesky_with_jitter"]
