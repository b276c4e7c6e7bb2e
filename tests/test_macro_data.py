"""The bundled US macroeconomic data (statsmodels' macrodata columns) and its rolling
covariance series."""

import numpy as np
import pytest

from psdsos.datasets import MACRO_FEATURES, load_macro_covariances, load_macrodata


def test_load_macrodata_table():
    macro = load_macrodata()
    assert macro.data.shape == (203, 3) and macro["data"] is macro.data  # a dict, attributes too
    assert macro.feature_names == MACRO_FEATURES == ("realgdp", "realcons", "realinv")
    assert np.all(np.isfinite(macro.data)) and np.all(macro.data > 0)
    # first and last rows as in statsmodels' macrodata.csv
    assert macro.data[0].tolist() == [2710.349, 1707.4, 286.898]
    assert macro.data[-1].tolist() == [12990.341, 9256.0, 1486.398]
    assert (macro.year[0], macro.quarter[0], macro.year[-1], macro.quarter[-1]) == (
        1959, 1, 2009, 3)
    np.testing.assert_array_equal(np.diff(macro.time), 0.25)  # consecutive quarters
    assert macro.year.dtype == np.int64
    macro.data[0, 0] = -1.0  # each call returns new arrays
    assert load_macrodata().data[0, 0] == 2710.349


def test_macro_covariances_defaults():
    b = load_macro_covariances()
    t, M = b.t, b.M
    assert t.shape == (61, 1) and M.shape == (61, 3, 3)
    np.testing.assert_allclose(np.diff(t[:, 0]), 0.75)
    assert t[0, 0] == pytest.approx(1961.625) and t[-1, 0] == pytest.approx(2006.625)
    assert np.all(np.isfinite(M))
    np.testing.assert_array_equal(M, np.swapaxes(M, 1, 2))
    w = np.linalg.eigvalsh(M)
    assert w.min() > 0  # SPD: every geometry applies
    assert 0.2 < w.min() < 0.22 and 840 < w.max() < 850  # the range, 0.2 to 850
    # the definition, against numpy's sample covariance
    growth = 400 * np.diff(np.log(load_macrodata().data), axis=0)
    np.testing.assert_allclose(b.growth, growth)
    for k in (0, 30, 60):
        s = b.start[k]
        np.testing.assert_allclose(M[k], np.cov(growth[s:s + 20].T), rtol=1e-12)
    assert (b.window, b.stride, b.scale) == (20, 3, 400.0)
    t2, M2 = load_macro_covariances(return_X_y=True)
    np.testing.assert_array_equal(M2, M)


def test_macro_covariances_options():
    t, M = load_macro_covariances(window=40, stride=8, return_X_y=True)
    assert len(M) == (202 - 40) // 8 + 1
    _, M100 = load_macro_covariances(scale=100.0, return_X_y=True)
    _, M400 = load_macro_covariances(return_X_y=True)
    np.testing.assert_allclose(M100 * 16, M400, rtol=1e-12)
    for kw, name in [({"window": 3}, "window"), ({"window": 203}, "window"),
                     ({"window": 2.5}, "window"), ({"stride": 0}, "stride"),
                     ({"scale": 0.0}, "scale"), ({"scale": np.inf}, "scale"),
                     ({"return_X_y": "yes"}, "return_X_y")]:
        with pytest.raises(ValueError, match=name):
            load_macro_covariances(**kw)


def test_docstring_examples_run():
    import doctest

    import psdsos.datasets._macro as mod

    result = doctest.testmod(mod)
    assert result.failed == 0 and result.attempted > 0
