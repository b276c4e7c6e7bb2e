"""Tests for psdsos.datasets: reproducibility, shapes, PSD-ness, endpoints, eq. (30)."""

import ast
import doctest
import importlib
import pathlib

import numpy as np
import pytest

from psdsos.datasets import (
    bures_geodesic_endpoints,
    convex_regression_truth,
    make_bures_geodesic,
    make_convex_regression,
)
from psdsos.geometry import bures_wasserstein_distance


class TestBuresGeodesic:
    @pytest.mark.parametrize("rank_one", [False, True])
    def test_reproducible(self, rank_one):
        t1, M1 = make_bures_geodesic(12, 3, rank_one=rank_one, random_state=7)
        t2, M2 = make_bures_geodesic(12, 3, rank_one=rank_one, random_state=7)
        _, M3 = make_bures_geodesic(12, 3, rank_one=rank_one, random_state=8)
        assert np.array_equal(t1, t2) and np.array_equal(M1, M2)
        assert not np.allclose(M1, M3)
        g = np.random.default_rng(3)
        _, M4 = make_bures_geodesic(12, 3, rank_one=rank_one, random_state=g)
        _, M5 = make_bures_geodesic(12, 3, rank_one=rank_one, random_state=g)
        assert not np.allclose(M4, M5)  # a Generator advances

    def test_global_rng_untouched(self):
        before = np.random.get_state()[1].copy()  # noqa: NPY002 (the legacy global RNG)
        make_bures_geodesic(5, random_state=None)
        make_convex_regression(5, random_state=None)
        assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002

    @pytest.mark.parametrize("rank_one", [False, True])
    @pytest.mark.parametrize("d", [1, 2, 4])
    def test_shapes_psd_endpoints(self, rank_one, d):
        t, M = make_bures_geodesic(12, d, rank_one=rank_one, random_state=0)
        assert t.shape == (12, 1) and M.shape == (12, d, d)
        assert np.allclose(t[:, 0], np.linspace(0, 1, 12)) and t[0, 0] == 0 and t[-1, 0] == 1
        assert np.array_equal(M, np.swapaxes(M, 1, 2))
        w = np.linalg.eigvalsh(M)
        assert w.min() >= -1e-12
        A, B = bures_geodesic_endpoints(d, rank_one=rank_one, random_state=0)
        assert np.allclose(M[0], A, atol=1e-12) and np.allclose(M[-1], B, atol=1e-12)
        if rank_one:
            for E in (A, B):
                assert np.linalg.matrix_rank(E, tol=1e-10) == 1
            assert np.all(np.abs(w[:, :-1]) < 1e-12)  # the whole curve has rank one
        else:
            for E in (A, B):
                lam = np.linalg.eigvalsh(E)
                assert lam.min() >= 0.2 - 1e-12 and lam.max() <= 2.0 + 1e-12

    def test_constant_speed(self):
        t, M = make_bures_geodesic(7, 3, random_state=1)
        D = bures_wasserstein_distance(M[0], M[-1])
        steps = bures_wasserstein_distance(M[:-1], M[1:])
        assert np.allclose(steps, D / 6, rtol=1e-9)

    def test_held_out_times_on_same_geodesic(self):
        A, B = bures_geodesic_endpoints(2, random_state=4)
        t_tr, M_tr = make_bures_geodesic(12, endpoints=(A, B))
        t_te, M_te = make_bures_geodesic(t=np.linspace(0, 1, 200), endpoints=(A, B))
        assert t_te.shape == (200, 1) and M_te.shape == (200, 2, 2)
        # the same seed without explicit endpoints gives the same curve
        _, M_seed = make_bures_geodesic(t=np.linspace(0, 1, 200), random_state=4)
        assert np.array_equal(M_seed, M_te)
        assert np.allclose(M_te[0], M_tr[0]) and np.allclose(M_te[-1], M_tr[-1])
        # explicit t given as a column, in any order
        tc = np.array([[0.5], [0.1]])
        t2, M2 = make_bures_geodesic(t=tc, endpoints=(A, B))
        assert np.array_equal(t2, tc)
        _, M3 = make_bures_geodesic(t=[0.1], endpoints=(A, B))
        assert np.allclose(M2[1], M3[0])

    def test_given_rank_deficient_endpoints(self):
        A = np.diag([1.0, 0.0])
        B = np.array([[1.0, 1.0], [1.0, 1.0]])
        t, M = make_bures_geodesic(5, endpoints=[A, B])
        assert np.allclose(M[0], A) and np.allclose(M[-1], B)

    @pytest.mark.parametrize(
        "kwargs, match",
        [
            (dict(n_samples=1), "n_samples"),
            (dict(n_samples=2.5), "n_samples"),
            (dict(d=0), "d must be"),
            (dict(rank_one="yes"), "rank_one"),
            (dict(t=[-0.1, 0.5]), "t must lie in"),
            (dict(t=[]), "t must be a non-empty"),
            (dict(t=np.zeros((2, 2))), "t must be"),
            (dict(t=[0.0, np.nan]), "t contains NaN"),
            (dict(random_state=-1), "random_state"),
            (dict(random_state="seed"), "random_state"),
            (dict(endpoints=np.eye(2)), "endpoints must be a pair"),
            (dict(endpoints=(np.eye(2), -np.eye(2))), r"endpoints\[1\]"),
            (dict(endpoints=(np.eye(2), np.eye(3))), "same shape"),
        ],
    )
    def test_bad_input(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            make_bures_geodesic(**kwargs)


class TestConvexRegression:
    def test_reproducible_and_shapes(self):
        X1, y1 = make_convex_regression(30, 3, random_state=0)
        X2, y2 = make_convex_regression(30, 3, random_state=0)
        X3, y3 = make_convex_regression(30, 3, random_state=1)
        assert X1.shape == (30, 3) and y1.shape == (30,)
        assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
        assert not np.allclose(X1, X3)
        # inputs do not depend on the noise level
        X4, _ = make_convex_regression(30, 3, noise=0.0, random_state=0)
        assert np.array_equal(X1, X4)

    def test_domain_and_default_b(self):
        X, _ = make_convex_regression(2000, 2, a=2.0, random_state=0)
        b = 2 * np.pi / 2.0
        assert np.all(np.abs(X) <= b) and np.abs(X).max() > 0.95 * b
        X, _ = make_convex_regression(500, 2, b=1.5, random_state=0)
        assert np.all(np.abs(X) <= 1.5) and np.abs(X).max() > 1.4

    def test_noiseless_equals_truth_and_closed_form(self):
        X, y = make_convex_regression(100, 2, a=1.5, noise=0.0, random_state=2)
        assert np.array_equal(y, convex_regression_truth(X, a=1.5))
        r = np.linalg.norm(X, axis=1)
        assert np.allclose(y, (np.cos(1.5 * r) - 1) / 1.5**2 + r**2 / 2, atol=1e-12)
        # 1-D input is read as n points of dimension 1
        assert np.allclose(
            convex_regression_truth([-1.0, 0.0, 2.0]),
            convex_regression_truth([[1.0], [0.0], [2.0]]),
        )

    def test_noise_statistics(self):
        X, y = make_convex_regression(4000, 2, noise=0.3, random_state=5)
        res = y - convex_regression_truth(X)
        assert abs(res.mean()) < 4 * 0.3 / np.sqrt(4000)
        assert abs(res.std() / 0.3 - 1) < 0.05

    @pytest.mark.parametrize("a", [0.5, 1.0, 3.0])
    def test_truth_convex_along_random_lines(self, a):
        rng = np.random.default_rng(11)
        d, h = 3, 0.01
        b = 2 * np.pi / a
        for _ in range(20):
            x0 = rng.uniform(-b, b, d)
            u = rng.standard_normal(d)
            u /= np.linalg.norm(u)
            s = np.arange(-300, 301) * h
            f = convex_regression_truth(x0 + s[:, None] * u, a=a)
            assert np.min(f[:-2] - 2 * f[1:-1] + f[2:]) >= -1e-10
        # not strictly convex: radial curvature vanishes at r = 2 pi / a
        r = 2 * np.pi / a + np.array([-h, 0.0, h])
        f = convex_regression_truth(r[:, None], a=a)
        assert abs(f[0] - 2 * f[1] + f[2]) / h**2 < 1e-3

    @pytest.mark.parametrize(
        "kwargs, match",
        [
            (dict(n_samples=0), "n_samples"),
            (dict(d=0), "d must be"),
            (dict(a=0.0), "a must be"),
            (dict(b=-1.0), "b must be"),
            (dict(noise=-0.1), "noise"),
            (dict(noise=np.inf), "noise"),
            (dict(random_state=1.5), "random_state"),
        ],
    )
    def test_bad_input(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            make_convex_regression(**{"n_samples": 10, **kwargs})

    def test_truth_bad_input(self):
        with pytest.raises(ValueError, match="X"):
            convex_regression_truth(np.full((3, 2), np.nan))
        with pytest.raises(ValueError, match="a must be"):
            convex_regression_truth(np.zeros((3, 2)), a=-1.0)


def test_datasets_import_only_geometry_and_validation():
    root = pathlib.Path(__file__).resolve().parents[1] / "psdsos" / "datasets"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.startswith("psdsos"):
                    assert name.startswith(
                        ("psdsos.datasets", "psdsos.geometry", "psdsos._validation")
                    ), f"{path.name} imports {name}"


@pytest.mark.parametrize("module", ["psdsos.datasets", "psdsos.datasets._geodesic"])
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


class TestLoadGlass:
    def test_bundled_data(self):
        from psdsos.datasets import GLASS_CLASSES, GLASS_FEATURES, load_glass

        X, y = load_glass(return_X_y=True)
        assert X.shape == (214, 9) and y.shape == (214,)
        assert np.all(np.isfinite(X))
        # class sizes of the UCI data (types 1, 2, 3, 5, 6, 7; type 4 has no sample)
        np.testing.assert_array_equal(np.bincount(y), [70, 76, 17, 13, 9, 29])
        # first fragment of the UCI file: RI 1.52101 -> 1000 (RI - 1.518) = 3.01
        np.testing.assert_allclose(X[0], [3.01, 13.64, 4.49, 1.10, 71.78, 0.06, 8.75, 0, 0])
        # oxide weight percents sum to about 100 (the UCI documentation)
        np.testing.assert_allclose(X[:, 1:].sum(axis=1), 100.0, atol=1.5)
        d = load_glass()
        assert d["target_names"] == GLASS_CLASSES and d["feature_names"] == GLASS_FEATURES
        np.testing.assert_array_equal(d["data"], X)
