r"""Bundled US macroeconomic data (statsmodels' ``macrodata``) and its rolling covariances."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import Bunch

from psdsos._validation import check_scalar
from psdsos.datasets._economics import _read_table

__all__ = ["MACRO_FEATURES", "load_macro_covariances", "load_macrodata"]

#: Column names of :func:`load_macrodata` ``"data"``, in order.
MACRO_FEATURES = ("realgdp", "realcons", "realinv")


def load_macrodata() -> Bunch:
    r"""US macroeconomic data, quarterly, 1959Q1 to 2009Q3 (203 quarters).

    Three quarterly series in billions of chained 2005 US dollars, seasonally adjusted
    annual rates: real gross domestic product (``realgdp``), real personal consumption
    expenditures (``realcons``) and real gross private domestic investment (``realinv``).
    Source: FRED, Federal Reserve Economic Data, Federal Reserve Bank of St. Louis
    (accessed December 15, 2009), compiled by Skipper Seabold for statsmodels.  Bundled with
    the package (no download): these three columns of statsmodels' data set ``macrodata``
    (``statsmodels/datasets/macrodata/macrodata.csv``, values unchanged), whose
    documentation states "This is public domain." (``COPYRIGHT`` of
    ``statsmodels/datasets/macrodata/data.py``; its other columns, not bundled here, include
    the unemployment rate from the Bureau of Labor Statistics).  Provenance in
    ``psdsos/datasets/data/README.md``.

    Returns
    -------
    sklearn.utils.Bunch (a dict) with keys
        ``"data"`` (203, 3) the levels ``realgdp, realcons, realinv`` (columns
        :data:`MACRO_FEATURES`); ``"feature_names"`` (:data:`MACRO_FEATURES`); ``"year"``
        and ``"quarter"`` (203,) int; ``"time"`` (203,) decimal years,
        ``year + (quarter - 1) / 4``.  Each call returns new arrays.

    Examples
    --------
    >>> from psdsos.datasets import load_macrodata
    >>> macro = load_macrodata()
    >>> macro.data.shape, macro.data[0].tolist()
    ((203, 3), [2710.349, 1707.4, 286.898])
    >>> int(macro.year[-1]), int(macro.quarter[-1])
    (2009, 3)
    """
    header, rows = _read_table("macrodata.csv")
    col = {name: k for k, name in enumerate(header)}
    table = np.array(rows, dtype=np.float64)
    year = table[:, col["year"]].astype(np.int64)
    quarter = table[:, col["quarter"]].astype(np.int64)
    data = table[:, [col[name] for name in MACRO_FEATURES]]
    return Bunch(data=data, feature_names=MACRO_FEATURES, year=year, quarter=quarter,
                 time=year + (quarter - 1) / 4.0)


def load_macro_covariances(*, window: int = 20, stride: int = 3, scale: float = 400.0,
                           return_X_y: bool = False) -> Any:
    r"""Rolling 3 x 3 covariance matrices of US real growth rates (GDP, consumption, investment).

    From the quarterly levels :math:`L_{q,j}` of :func:`load_macrodata` (quarter q, series
    j = ``realgdp, realcons, realinv``), the growth rates and their rolling sample
    covariances over windows of ``window`` quarters, every ``stride`` quarters:

    .. math::

        g_q = c\,\big(\log L_q - \log L_{q-1}\big) \in \mathbb R^3,
        \qquad
        \mathbf M_k = \frac{1}{w - 1}\sum_{q \in W_k} (g_q - \bar g_k)(g_q - \bar g_k)^\top,
        \qquad W_k = \{ks + 1, \dots, ks + w\},

    with :math:`c` = ``scale``, :math:`w` = ``window``, :math:`s` = ``stride`` and
    :math:`\bar g_k` the mean over the window.  ``scale=400`` (default) gives annualized
    growth rates in percent (the convention of statsmodels' ``infl`` column), ``100``
    quarterly rates in percent (covariances 16 times smaller).  Each matrix is dated at the
    middle of its window, :math:`t_k` = the mean of the decimal years of the quarters of
    :math:`W_k` (a growth rate is dated at the quarter it ends).  The defaults give 61
    matrices at times 1961.6, 1962.4, ..., 2006.6 (0.75 years apart), with eigenvalues from
    about 0.2 to 850: investment is far more volatile than consumption, and all three
    calm down after the mid-1980s ("Great Moderation").  Every matrix is symmetric positive
    definite.

    Parameters
    ----------
    window : int, default=20
        Quarters per window, 4 <= window <= 202 (a 3 x 3 sample covariance needs at least 4
        observations to be invertible in general).
    stride : int, default=3
        Quarters between the starts of consecutive windows, >= 1.
    scale : float, default=400.0
        The factor c > 0 of the log-differences.
    return_X_y : bool, default=False
        If True, return ``(t, M)``.

    Returns
    -------
    sklearn.utils.Bunch, or the tuple ``(t, M)``
        Keys ``"t"`` (n, 1) the times (decimal years; ``t`` is the ``X`` of an estimator),
        ``"M"`` (n, 3, 3) the covariances, ``"growth"`` (202, 3) the growth rates
        :math:`g_q`, ``"growth_time"`` (202,) their dates, ``"start"`` (n,) the index in
        ``growth`` of each window's first quarter, ``"feature_names"``
        (:data:`MACRO_FEATURES`), ``"window"``, ``"stride"``, ``"scale"``.  With
        n = (202 - window) // stride + 1 matrices.

    Raises
    ------
    ValueError
        If ``window``, ``stride`` or ``scale`` is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from psdsos.datasets import load_macro_covariances
    >>> t, M = load_macro_covariances(return_X_y=True)
    >>> t.shape, M.shape
    ((61, 1), (61, 3, 3))
    >>> bool(np.linalg.eigvalsh(M).min() > 0)
    True
    """
    macro = load_macrodata()
    n_growth = len(macro.data) - 1
    window = check_scalar(window, "window", lower=4, upper=n_growth, integer=True)
    stride = check_scalar(stride, "stride", lower=1, integer=True)
    scale = check_scalar(scale, "scale", lower=0.0, lower_inclusive=False)
    if not isinstance(return_X_y, (bool, np.bool_)):
        raise ValueError(f"return_X_y must be True or False, got {return_X_y!r}")
    growth = scale * np.diff(np.log(macro.data), axis=0)
    growth_time = macro.time[1:]
    start = np.arange(0, n_growth - window + 1, stride)
    idx = start[:, None] + np.arange(window)  # (n, window) rows of growth
    G = growth[idx]
    C = G - G.mean(axis=1, keepdims=True)
    M = np.einsum("nqi,nqj->nij", C, C) / (window - 1)
    M = 0.5 * (M + np.swapaxes(M, 1, 2))
    t = growth_time[idx].mean(axis=1)[:, None]
    if return_X_y:
        return t, M
    return Bunch(t=t, M=M, growth=growth, growth_time=growth_time, start=start,
                 feature_names=MACRO_FEATURES, window=window, stride=stride, scale=scale)
