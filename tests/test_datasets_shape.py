"""Data sets with a known shape: the bundled Engel and production data, and Black-Scholes quotes.

References: the source files' published values (first rows, row counts), Baltagi's pooled
Cobb-Douglas estimates on the Munnell data, Hull's textbook Black-Scholes example, put-call
parity, closed-form derivatives of the call price.
"""

import math
from importlib import resources

import numpy as np
import pytest

from psdsos.datasets import (
    ENGEL_FEATURES,
    PRODUCTION_FEATURES,
    black_scholes_call,
    load_engel,
    load_production,
    make_option_prices,
)

# ---------------------------------------------------------------------------------------------
# Engel


def test_engel_shapes_and_values():
    X, y = load_engel(return_X_y=True)
    assert X.shape == (235, 1) and y.shape == (235,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    # first, second and last rows of quantreg's engel (Koenker and Bassett 1982)
    np.testing.assert_allclose(X[[0, 1, 234], 0], [420.157650843928, 541.411706721205,
                                                   1057.67671146451], rtol=1e-14)
    np.testing.assert_allclose(y[[0, 1, 234]], [255.839424594576, 310.958667059145,
                                                750.320163419201], rtol=1e-14)
    # the largest income, household 138
    assert X.argmax() == 137 and X.max() == pytest.approx(4957.81302447901, rel=1e-14)
    d = load_engel()
    assert d["feature_names"] == ENGEL_FEATURES == ("income",) and d["target_name"] == "foodexp"
    np.testing.assert_array_equal(d["data"], X)
    np.testing.assert_array_equal(d["target"], y)


def test_engel_known_shape():
    # Engel's law: food is a necessity, the budget share falls with income: the least-squares
    # slope of log foodexp on log income (Engel elasticity) lies in (0, 1), the increasing and
    # concave power-law shape
    X, y = load_engel(return_X_y=True)
    A = np.column_stack([np.ones(235), np.log(X[:, 0])])
    slope = np.linalg.lstsq(A, np.log(y), rcond=None)[0][1]
    assert 0.5 < slope < 1.0
    assert np.all(y < X[:, 0])  # food spending is below income for every household


# ---------------------------------------------------------------------------------------------
# production


def test_production_shapes_and_values():
    d = load_production()
    X, y = d["data"], d["target"]
    assert X.shape == (816, 3) and y.shape == (816,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert d["feature_names"] == PRODUCTION_FEATURES == ("pc", "pcap", "emp")
    assert d["target_name"] == "gsp"
    # 48 states x 17 years, sorted by state then year
    assert len(set(d["state"])) == 48
    assert set(d["year"]) == set(range(1970, 1987))
    assert d["year"].dtype == np.int64 and d["region"].dtype == np.int64
    assert set(d["region"]) == set(range(1, 10))
    for state in set(d["state"]):
        np.testing.assert_array_equal(d["year"][d["state"] == state], np.arange(1970, 1987))
    # first row of plm's Produc: ALABAMA 1970, region 6
    assert (d["state"][0], d["year"][0], d["region"][0]) == ("ALABAMA", 1970, 6)
    np.testing.assert_allclose(X[0], [35793.8, 15032.67, 1010.5])
    assert y[0] == 28418.0
    np.testing.assert_allclose([d["hwy"][0], d["water"][0], d["util"][0], d["unemp"][0]],
                               [7325.8, 1655.68, 6051.2, 4.7])
    # CALIFORNIA 1986 (row 68 of the source)
    assert (d["state"][67], d["year"][67]) == ("CALIFORNIA", 1986)
    np.testing.assert_allclose(X[67], [363779.7, 139042.68, 11258.0])
    assert y[67] == 464550.0
    # public capital is the sum of its components (to the source's rounding)
    np.testing.assert_allclose(X[:, 1], d["hwy"] + d["water"] + d["util"], atol=0.0101)
    assert np.all(X > 0) and np.all(y > 0)


def test_production_reproduces_baltagi_pooled_ols():
    # Baltagi, Econometric Analysis of Panel Data, Munnell's data, pooled OLS of log gsp on
    # log pcap, log pc, log emp and unemp: 1.643, 0.155, 0.309, 0.594, -0.007 (published to
    # three decimals)
    d = load_production(log=True)
    A = np.column_stack([np.ones(816), d["data"], d["unemp"]])
    b = np.linalg.lstsq(A, d["target"], rcond=None)[0]
    np.testing.assert_allclose(b[[0, 2, 1, 3, 4]], [1.643, 0.155, 0.309, 0.594, -0.007],
                               atol=6e-4)
    # increasing in every input; returns to scale near 1 (the docstring's statement)
    assert np.all(b[1:4] > 0) and 1.0 < b[1:4].sum() < 1.1


def test_production_log_and_return_X_y():
    X, y = load_production(return_X_y=True)
    Xl, yl = load_production(return_X_y=True, log=True)
    np.testing.assert_allclose(Xl, np.log(X), rtol=1e-15)
    np.testing.assert_allclose(yl, np.log(y), rtol=1e-15)
    d = load_production(log=True)
    np.testing.assert_array_equal(d["data"], Xl)
    assert d["unemp"][0] == 4.7  # the other columns are not logged
    with pytest.raises(ValueError, match="log"):
        load_production(log="yes")


@pytest.mark.parametrize("loader", [load_engel, load_production])
def test_loaders_return_copies(loader):
    d = loader()
    X0, y0 = d["data"].copy(), d["target"].copy()
    d["data"][:] = -1.0
    d["target"][:] = -1.0
    X, y = loader(return_X_y=True)
    X[:] = -2.0
    d2 = loader()
    np.testing.assert_array_equal(d2["data"], X0)
    np.testing.assert_array_equal(d2["target"], y0)


def test_csv_files_have_a_header_and_are_package_data():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    root = resources.files("psdsos.datasets")
    for name, header in [("engel.csv", "income,foodexp"),
                         ("production.csv", "state,year,region,pcap,hwy,water,util,pc,gsp,emp,"
                                            "unemp")]:
        lines = root.joinpath("data", name).read_text().splitlines()
        body = [line for line in lines if not line.startswith("#")]
        assert body[0] == header
        assert lines[0].startswith("#")  # provenance first
    # the CSVs are installed with the package
    import pathlib

    pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
    cfg = tomllib.loads(pyproject.read_text())
    assert "data/*.csv" in cfg["tool"]["setuptools"]["package-data"]["psdsos.datasets"]


# ---------------------------------------------------------------------------------------------
# Black-Scholes quotes


def _phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _bs_reference(S, K, r, T, sigma):
    """Call and put by the textbook formulas, in plain floats (math.erfc, not scipy)."""
    d1 = (math.log(S / K) + (r + sigma**2 / 2) * T) / (sigma * math.sqrt(T))
    d2 = d1 - sigma * math.sqrt(T)
    call = S * _phi(d1) - K * math.exp(-r * T) * _phi(d2)
    put = K * math.exp(-r * T) * _phi(-d2) - S * _phi(-d1)
    return call, put


def test_black_scholes_textbook_value():
    # Hull, Options, Futures and Other Derivatives (Black-Scholes-Merton example):
    # S = 42, K = 40, r = 10%, sigma = 20%, T = 0.5: c = 4.76, p = 0.81
    c = black_scholes_call([40.0], spot=42.0, rate=0.1, maturity=0.5, volatility=0.2)[0]
    assert round(c, 2) == 4.76
    ref_c, ref_p = _bs_reference(42.0, 40.0, 0.1, 0.5, 0.2)
    assert round(ref_p, 2) == 0.81
    assert c == pytest.approx(ref_c, rel=1e-13)


@pytest.mark.parametrize("rate", [-0.01, 0.0, 0.05])
def test_black_scholes_put_call_parity(rate):
    K = np.linspace(50.0, 160.0, 23)
    S, T, sigma = 100.0, 0.75, 0.3
    c = black_scholes_call(K, spot=S, rate=rate, maturity=T, volatility=sigma)
    puts = np.array([_bs_reference(S, k, rate, T, sigma)[1] for k in K])
    # C - P = S - K exp(-rT)
    np.testing.assert_allclose(c - puts, S - K * np.exp(-rate * T), atol=1e-11)


def test_black_scholes_small_volatility_limit():
    # sigma -> 0: the call tends to its discounted intrinsic value max(S - K exp(-rT), 0)
    K = np.array([80.0, 95.0, 105.0, 120.0])
    c = black_scholes_call(K, spot=100.0, rate=0.02, maturity=0.5, volatility=1e-4)
    np.testing.assert_allclose(c, np.maximum(100.0 - K * np.exp(-0.01), 0.0), atol=1e-10)


def test_make_option_prices_shapes_seed_noise():
    K, price, truth = make_option_prices(random_state=0)
    assert K.shape == (40, 1) and price.shape == (40,) and truth.shape == (40,)
    assert K.dtype == price.dtype == truth.dtype == np.float64
    np.testing.assert_allclose(K[:, 0], np.linspace(60.0, 140.0, 40))
    np.testing.assert_allclose(truth, black_scholes_call(K), rtol=1e-15)
    for k, t in zip(K[::7, 0], truth[::7], strict=True):
        assert t == pytest.approx(_bs_reference(100.0, k, 0.02, 0.5, 0.25)[0], rel=1e-12)
    K2, price2, _ = make_option_prices(random_state=0)
    np.testing.assert_array_equal(price, price2)
    assert not np.array_equal(price, make_option_prices(random_state=1)[1])
    # the noise is N(0, noise^2) in price units: the generator's own draws
    expected = truth + 0.05 * np.random.default_rng(0).standard_normal(40)
    np.testing.assert_allclose(price, expected, rtol=1e-15)
    _, p0, t0 = make_option_prices(10, noise=0.0, random_state=3)
    np.testing.assert_array_equal(p0, t0)


def test_option_truth_is_convex_and_decreasing():
    r, T, sigma = 0.03, 1.5, 0.4
    K, _, truth = make_option_prices(400, rate=r, maturity=T, volatility=sigma, noise=0.0,
                                     strike_range=(20.0, 300.0), random_state=0)
    h = K[1, 0] - K[0, 0]
    slope = np.diff(truth) / h
    # slopes of the chords are in [-exp(-rT), 0] and increase (convexity)
    assert np.all(slope <= 0.0) and np.all(slope >= -np.exp(-r * T))
    assert np.all(np.diff(slope) > 0.0)
    # the closed-form derivative -exp(-rT) Phi(d2) at the chord midpoints
    mid = K[:-1, 0] + h / 2
    d2 = (np.log(100.0 / mid) + (r - sigma**2 / 2) * T) / (sigma * np.sqrt(T))
    exact = np.array([-np.exp(-r * T) * _phi(v) for v in d2])
    np.testing.assert_allclose(slope, exact, atol=1e-4 * h)


@pytest.mark.parametrize("kwargs, name", [
    ({"n_strikes": 1}, "n_strikes"), ({"n_strikes": 2.5}, "n_strikes"),
    ({"spot": 0.0}, "spot"), ({"spot": -1.0}, "spot"), ({"rate": np.inf}, "rate"),
    ({"maturity": 0.0}, "maturity"), ({"volatility": -0.1}, "volatility"),
    ({"noise": -1.0}, "noise"), ({"strike_range": (0.0, 10.0)}, "strike_range"),
    ({"strike_range": (10.0, 10.0)}, "strike_range"), ({"strike_range": 5.0}, "strike_range"),
    ({"strike_range": (1.0, 2.0, 3.0)}, "strike_range"), ({"random_state": "a"}, "random_state"),
])
def test_make_option_prices_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_option_prices(**kwargs)


@pytest.mark.parametrize("K, name", [([[1.0, 2.0]], "K"), ([0.0, 1.0], "K"), ([np.nan], "K")])
def test_black_scholes_call_validation(K, name):
    with pytest.raises(ValueError, match=name):
        black_scholes_call(K)


@pytest.mark.parametrize("module", ["psdsos.datasets._economics", "psdsos.datasets._options"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
