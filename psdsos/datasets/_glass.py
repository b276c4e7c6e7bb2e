"""The forensic glass data (bundled: 214 samples, 9 features, 6 classes)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

#: Class names of :func:`load_glass`, in the order of their integer codes.
GLASS_CLASSES = (
    "building windows, float processed",
    "building windows, non-float processed",
    "vehicle windows, float processed",
    "containers",
    "tableware",
    "headlamps",
)
GLASS_FEATURES = ("RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe")


def load_glass(return_X_y: bool = False) -> dict[str, Any] | tuple[np.ndarray, np.ndarray]:
    r"""The glass identification data (214 fragments, 9 features, 6 types of glass).

    The label-ranking data set "glass" of Cheng and Hullermeier, used in Tables 1-2 of
    Blondel, "Structured Prediction with Projection Oracles" (NeurIPS 2019), is built from
    these classification data.  Bundled with the package (no download): B. German, *Glass
    Identification*, UCI Machine Learning Repository, 1987,
    `doi:10.24432/C5WW2P <https://doi.org/10.24432/C5WW2P>`_ (CC BY 4.0), as distributed in
    R as ``MASS::fgl``: the refractive index is given as :math:`1000\,(n - 1.518)`, the
    other features are weight percents of oxides.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a dict.

    Returns
    -------
    dict with keys ``"data"`` (214, 9), ``"target"`` (214,) integer codes 0..5,
    ``"target_names"`` (:data:`GLASS_CLASSES`) and ``"feature_names"``
    (:data:`GLASS_FEATURES`); or the tuple ``(X, y)``.

    Examples
    --------
    >>> from psdsos.datasets import load_glass
    >>> X, y = load_glass(return_X_y=True)
    >>> X.shape, int(y.max()) + 1
    ((214, 9), 6)
    """
    with resources.files("psdsos.datasets").joinpath("data/glass.csv").open("r") as fh:
        table = np.loadtxt(fh, delimiter=",", comments="#", skiprows=4)
    X, y = table[:, :-1], table[:, -1].astype(np.intp)
    if return_X_y:
        return X, y
    return {"data": X, "target": y, "target_names": GLASS_CLASSES,
            "feature_names": GLASS_FEATURES}
