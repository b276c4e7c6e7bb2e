"""A new output space is one file: defined outside psdsos (here), registered with the public
decorator, and used by name in the estimators, with no edit inside psdsos.

``IntervalSpace`` (reals in [lo, hi], squared loss, closed-form decoding) goes through
SELFEstimator and KRLSEstimator (fit, predict, score, save and ``psdsos.load``);
``BitsSpace`` (0/1 vectors, Hamming count loss, the unit cube with a projection set) goes
through FenchelYoungEstimator.  Both pass the contract of ``test_space_contract.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_space_contract import check_output_space

import psdsos
from psdsos.structured import (
    CONTINUOUS_SPACES,
    FenchelYoungEstimator,
    KRLSEstimator,
    LocalizedSELF,
    OutputSpace,
    SELFEstimator,
    check_alpha,
    get_output_space,
    output_spaces,
    register_output_space,
    resolve_method,
)
from psdsos.structured.polytopes import UnitCube
from psdsos.structured.spaces.discrete import DISCRETE_SPACES


class IntervalSpace(OutputSpace):
    r"""Reals in [lo, hi] with the squared loss.

    :math:`F(y) = \sum_i \alpha_i (y - y_i)^2 = s y^2 - 2 g y + c` with :math:`s = \sum_i
    \alpha_i`, :math:`g = \sum_i \alpha_i y_i`: its minimum over [lo, hi] is at an end or, for
    s > 0, at clip(g / s) -- the best of these three candidates.
    """

    decode_methods = ("closed_form",)
    symmetric_loss = True

    def __init__(self, lo: float = 0.0, hi: float = 1.0) -> None:
        self.lo = lo
        self.hi = hi

    def check_Y(self, Y, name="Y"):
        A = np.asarray(Y, dtype=np.float64)
        if A.ndim != 1 or not np.all(np.isfinite(A)):
            raise ValueError(f"{name} must be finite reals of shape (n,), got {A.shape}")
        if np.any(A < self.lo - 1e-12) or np.any(A > self.hi + 1e-12):
            raise ValueError(f"{name} must lie in [{self.lo}, {self.hi}]")
        return np.clip(A, self.lo, self.hi)

    def loss(self, Y_true, Y_pred):
        T, P = self._pair(Y_true, Y_pred)
        return (T - P) ** 2

    def loss_gradient(self, Z, Y):
        return 2.0 * (np.asarray(Z, dtype=np.float64) - np.asarray(Y, dtype=np.float64))

    def decode(self, alpha, method="auto"):
        resolve_method(self, method)
        a = check_alpha(alpha, len(self.Y_train_))
        s, g = a.sum(axis=1), a @ self.Y_train_
        inner = np.clip(g / np.where(s > 0, s, 1.0), self.lo, self.hi)
        cands = np.stack([np.full_like(s, self.lo), np.full_like(s, self.hi),
                          np.where(s > 0, inner, self.lo)], axis=1)
        F = s[:, None] * cands**2 - 2.0 * g[:, None] * cands
        return cands[np.arange(len(s)), np.argmin(F, axis=1)]

    def project(self, Z):
        return np.clip(np.asarray(Z, dtype=np.float64), self.lo, self.hi)

    def to_config(self):
        return {"lo": float(self.lo), "hi": float(self.hi)}


class BitsSpace(OutputSpace):
    r"""0/1 vectors of length k with the Hamming count loss: embedding :math:`\varphi(y) = y`,
    marginal polytope the unit cube, :math:`L = \langle\hat y, -2y + 1\rangle + \langle y,
    1\rangle` (V = -2I, b = 1, c(y) = sum y); Fenchel-Young projection set "cube"."""

    decode_methods = ("oracle",)
    symmetric_loss = True
    projection_sets = {"cube": lambda space: space.polytope_}

    def check_Y(self, Y, name="Y"):
        A = np.asarray(Y)
        if A.ndim != 2 or not np.all((A == 0) | (A == 1)):
            raise ValueError(f"{name} must be 0/1 vectors of shape (n, k)")
        return A.astype(np.int64)

    def loss(self, Y_true, Y_pred):
        T, P = self._pair(Y_true, Y_pred)
        return (T != P).sum(axis=1).astype(np.float64)

    def fit(self, Y_train):
        self.Y_train_ = self.check_Y(Y_train, "Y")
        self.polytope_ = UnitCube(self.Y_train_.shape[1])
        return self

    def embed(self, Y):
        return self.check_Y(Y).astype(np.float64)

    def affine_decomposition(self):
        k = self.Y_train_.shape[1]
        return -2.0 * np.eye(k), np.ones(k), lambda Y: self.check_Y(Y).sum(axis=1)

    def from_vertices(self, M):
        return np.rint(M).astype(np.int64)

    def decode(self, alpha, method="auto"):
        resolve_method(self, method)
        a = check_alpha(alpha, len(self.Y_train_))
        theta = 2.0 * (a @ self.Y_train_) - a.sum(axis=1)[:, None]
        return self.from_vertices(self.polytope_.map_oracle(theta))


@pytest.fixture(scope="module", autouse=True)
def registered():
    """The same as ``@register_output_space(...)`` above each class; applied here so that the
    toy spaces leave the registry after this module (other tests list the built-in ones)."""
    register_output_space("toy_interval")(IntervalSpace)
    register_output_space("toy_bits")(BitsSpace)
    yield
    del CONTINUOUS_SPACES["toy_interval"]
    del DISCRETE_SPACES["toy_bits"]


def test_registered_by_name():
    assert output_spaces()["toy_interval"] is IntervalSpace and IntervalSpace.name == "toy_interval"
    assert isinstance(get_output_space("TOY_INTERVAL"), IntervalSpace)
    assert "toy_interval" in CONTINUOUS_SPACES and "toy_bits" in DISCRETE_SPACES
    from psdsos.structured._fy_estimator import PROJECTION_SETS

    assert PROJECTION_SETS["cube"] == ("toy_bits",)


def test_registry_refuses_duplicates_and_non_spaces():
    class Other(IntervalSpace):
        pass

    with pytest.raises(ValueError, match="'toy_interval'"):
        register_output_space("toy_interval")(Other)
    with pytest.raises(ValueError, match="'multiclass'"):
        register_output_space("multiclass")(Other)
    with pytest.raises(ValueError, match="lower-case"):
        register_output_space("Toy_Other")
    with pytest.raises(TypeError, match="OutputSpace"):
        register_output_space("toy_other")(dict)
    assert "toy_other" not in output_spaces() and Other.name == "toy_interval"


@pytest.mark.parametrize("space, name", [(IntervalSpace, "interval"), (BitsSpace, "bits")])
def test_toy_spaces_follow_the_contract(space, name):
    rng = np.random.default_rng(1)
    Y, Y2 = ((rng.uniform(0, 1, 6), rng.uniform(0, 1, 6)) if name == "interval"
             else (rng.integers(0, 2, (6, 3)), rng.integers(0, 2, (6, 3))))
    check_output_space(space(), Y, Y2, rng)


def _data(rng, n=30):
    X = rng.uniform(-1, 1, (n, 2))
    return X, np.clip(0.5 + 0.4 * X[:, 0] * X[:, 1] + 0.3 * X[:, 1], 0.0, 1.0)


def test_interval_space_in_self_and_krls_by_name(tmp_path):
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    est = SELFEstimator(sigma=0.7, lam=1e-3, output="toy_interval").fit(X, y)
    P = est.predict(X[:5])
    assert isinstance(est.output_space_, IntervalSpace)
    # the closed form is the argmin of the SELF objective over a fine grid of [0, 1]
    A = est.scores(X[:5])
    grid = np.linspace(0.0, 1.0, 20001)
    F = ((grid[None, :, None] - y[None, None, :]) ** 2 * A[:, None, :]).sum(axis=2)
    np.testing.assert_allclose(P, grid[np.argmin(F, axis=1)], atol=1e-4)
    assert est.score(X, y) == pytest.approx(-np.mean((est.predict(X) - y) ** 2))
    est.save(tmp_path / "interval.npz")
    loaded = psdsos.load(tmp_path / "interval.npz")
    assert isinstance(loaded.output_space_, IntervalSpace)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    krls = KRLSEstimator(sigma=0.7, output="toy_interval").fit(X, y)
    np.testing.assert_allclose(krls.predict(X[:5]),
                               np.clip(krls.scores(X[:5]) @ y, 0.0, 1.0))
    # a space object with its own parameters, too
    est2 = SELFEstimator(sigma=0.7, output=IntervalSpace(lo=0.2, hi=0.8)).fit(X, y.clip(0.2, 0.8))
    assert np.all((est2.predict(X) >= 0.2) & (est2.predict(X) <= 0.8))


def test_bits_space_in_fenchel_young_by_name(tmp_path):
    """The toy space is multilabel with the unnormalized Hamming loss: the same fit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = (X @ rng.normal(size=(3, 4)) + 0.3 * rng.normal(size=(40, 4)) > 0).astype(int)
    est = FenchelYoungEstimator("toy_bits", projection_set="cube", lam=1e-2).fit(X, Y)
    ref = FenchelYoungEstimator(psdsos.structured.MultilabelSpace(normalize=False),
                                projection_set="unit_cube", lam=1e-2).fit(X, Y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    assert est.score(X, Y) == pytest.approx(-np.mean(np.sum(est.predict(X) != Y, axis=1)))
    with pytest.raises(ValueError, match="does not apply to output 'toy_bits'"):
        FenchelYoungEstimator("toy_bits", projection_set="marginal").fit(X, Y)
    with pytest.raises(ValueError, match="discrete output space object"):
        FenchelYoungEstimator("toy_interval").fit(X, Y)
    est.save(tmp_path / "bits.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "bits.npz").predict(X), est.predict(X))


def test_interval_space_in_localized_self_by_name():
    """LocalizedSELF takes the plug-in space by name: it offers project and loss_gradient,
    so Algorithm 3 (stochastic projected subgradient) decodes it; with one part this
    approximates the SELF decode, and every element lies in the interval."""
    assert IntervalSpace().supports("element_sgd")
    rng = np.random.default_rng(1)
    X, y = _data(rng, n=40)
    kw = dict(sigma=0.7, lam=1e-2)
    loc = LocalizedSELF(**kw, output="toy_interval", decode_method="sgd", max_iter=4000,
                        random_state=0).fit(X, y)
    assert isinstance(loc.output_space_, IntervalSpace)
    P = loc.predict(X[:8])
    assert np.all((P >= 0.0) & (P <= 1.0))
    ref = SELFEstimator(**kw, output="toy_interval").fit(X, y).predict(X[:8])
    np.testing.assert_allclose(P.ravel(), ref, atol=0.1)
