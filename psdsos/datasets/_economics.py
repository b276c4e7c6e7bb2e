"""Bundled economic data with a known shape: the Engel curve and US state production."""

from __future__ import annotations

import csv
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["ENGEL_FEATURES", "PRODUCTION_FEATURES", "load_engel", "load_production"]

#: Feature name of :func:`load_engel` (its target is ``"foodexp"``).
ENGEL_FEATURES = ("income",)
#: Feature names of :func:`load_production`, in column order (its target is ``"gsp"``).
PRODUCTION_FEATURES = ("pc", "pcap", "emp")


def _read_table(name: str) -> tuple[tuple[str, ...], list[list[str]]]:
    """Header and rows of a bundled CSV (``#`` lines are the provenance notes)."""
    with resources.files("psdsos.datasets").joinpath(f"data/{name}").open("r") as fh:
        rows = [row for row in csv.reader(fh) if row and not row[0].startswith("#")]
    return tuple(rows[0]), rows[1:]


def load_engel(return_X_y: bool = False) -> dict[str, Any] | tuple[np.ndarray, np.ndarray]:
    r"""Engel's food expenditure data (235 Belgian working-class households).

    Annual household income (feature) and annual household food expenditure (target), both
    in Belgian francs, from Ernst Engel's 1857 study of Belgian working-class budgets, in the
    form used by Koenker and Bassett, "Robust tests for heteroscedasticity based on regression
    quantiles", *Econometrica* 50 (1982), 43-61.  Bundled with the package (no download):
    the data set ``engel`` of the R package quantreg (R. Koenker), copied from the Rdatasets
    collection (``csv/quantreg/engel.csv``), identical to ``statsmodels.datasets.engel``,
    whose documentation marks the data as public domain.

    Known shape: food expenditure is **increasing and concave in income** (Engel's law: the
    share of the budget spent on food falls as income rises).  A few very high incomes (up to
    4958 francs, against a median of 884) make the right end sparse: a shape-constrained fit
    (increasing and concave) is what keeps it sensible there.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return the pair ``(X, y)``; if False, a dict (below).

    Returns
    -------
    dict with keys ``"data"`` (235, 1) income, ``"target"`` (235,) food expenditure,
    ``"feature_names"`` (:data:`ENGEL_FEATURES`) and ``"target_name"`` (``"foodexp"``); or
    the tuple ``(X, y)``.  Each call returns new arrays.

    Examples
    --------
    >>> from psdsos.datasets import load_engel
    >>> X, y = load_engel(return_X_y=True)
    >>> X.shape, y.shape
    ((235, 1), (235,))
    >>> round(float(X[0, 0]), 4), round(float(y[0]), 4)
    (420.1577, 255.8394)
    """
    _, rows = _read_table("engel.csv")
    table = np.array(rows, dtype=np.float64)
    X, y = table[:, :1], table[:, 1].copy()
    if return_X_y:
        return X, y
    return {"data": X, "target": y, "feature_names": ENGEL_FEATURES, "target_name": "foodexp"}


def load_production(return_X_y: bool = False, *,
                    log: bool = False) -> dict[str, Any] | tuple[np.ndarray, np.ndarray]:
    r"""US state production data (48 states, 1970-1986: 816 rows, Munnell 1990).

    Gross state product (target ``gsp``) against private capital (``pc``), public capital
    (``pcap``, the sum of highways and streets ``hwy``, water and sewer facilities ``water``
    and other public buildings and structures ``util``) and labour input (``emp``, employment
    on non-agricultural payrolls), a panel of the 48 contiguous states over 17 years.
    Original reference: A. Munnell, "Why has productivity growth declined? Productivity and
    public investment", *New England Economic Review* (1990), 3-22; used by Baltagi and
    Pinnoi, *Empirical Economics* 20 (1995), 351-359, and published in the online data archive
    of B. H. Baltagi's textbook *Econometric Analysis of Panel Data* (Wiley).  Bundled with
    the package (no download): the data set ``Produc`` of the R package plm (GPL >= 2), which
    gives Baltagi's archive as its source, copied from the Rdatasets collection
    (``csv/plm/Produc.csv``), whose maintainer states that no definitive licence for the data
    values could be found and that the data are understood to be free to redistribute.  The
    figures are regional statistics compiled by Munnell (1990); the plm documentation gives
    no units (see Munnell, 1990).

    Known shape: output is **increasing** in each input.  The production-function axiom of
    diminishing marginal products makes it also **concave**; on these data it is close to the
    limit: a pooled Cobb-Douglas fit of :math:`\log` gsp on the log-inputs gives output
    elasticities 0.31 (pc), 0.15 (pcap) and 0.60 (emp), summing to about 1.05, i.e. roughly
    constant returns to scale, where a Cobb-Douglas is concave along each input but not
    jointly.  Recommended: ``log=True`` with increasing and concave in all three log-inputs
    (a Cobb-Douglas is linear there, the boundary case; concavity then says that the output
    elasticities do not increase with the inputs), or in levels increasing and concave as the
    standard production-function assumption.  The inputs span two orders of magnitude
    between states, so fits in levels are dominated by the largest states; the panel's state
    effects are not modelled by a pooled fit.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return the pair ``(X, y)``; if False, a dict (below).
    log : bool, default=False
        Return the natural logarithms of the inputs and of the output (all positive).

    Returns
    -------
    dict with keys ``"data"`` (816, 3) the inputs ``pc, pcap, emp``, ``"target"`` (816,)
    ``gsp``, ``"feature_names"`` (:data:`PRODUCTION_FEATURES`), ``"target_name"``
    (``"gsp"``), and the other columns of the table, unchanged by ``log``: ``"state"``
    (816,) names as spelled in the source, ``"year"`` (816,) int, ``"region"`` (816,) int
    (1-9), ``"hwy"``, ``"water"``, ``"util"`` (816,) the public-capital components and
    ``"unemp"`` (816,) the unemployment rate; or the tuple ``(X, y)``.  Rows are sorted by
    state, then year.  Each call returns new arrays.

    Examples
    --------
    >>> from psdsos.datasets import load_production
    >>> X, y = load_production(return_X_y=True, log=True)
    >>> X.shape, y.shape
    ((816, 3), (816,))
    """
    if not isinstance(log, (bool, np.bool_)):
        raise ValueError(f"log must be True or False, got {log!r}")
    header, rows = _read_table("production.csv")
    col = {name: k for k, name in enumerate(header)}
    num = np.array([row[3:] for row in rows], dtype=np.float64)
    num_col = {name: k - 3 for name, k in col.items() if k >= 3}
    X = num[:, [num_col[name] for name in PRODUCTION_FEATURES]]
    y = num[:, num_col["gsp"]].copy()
    if log:
        X, y = np.log(X), np.log(y)
    if return_X_y:
        return X, y
    out: dict[str, Any] = {"data": X, "target": y, "feature_names": PRODUCTION_FEATURES,
                           "target_name": "gsp",
                           "state": np.array([row[col["state"]] for row in rows]),
                           "year": np.array([row[col["year"]] for row in rows], dtype=np.int64),
                           "region": np.array([row[col["region"]] for row in rows], dtype=np.int64)}
    for name in ("hwy", "water", "util", "unemp"):
        out[name] = num[:, num_col[name]].copy()
    return out
