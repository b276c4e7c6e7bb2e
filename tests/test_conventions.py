"""Conventions shared by every kernel estimator.

1. ``kernel="rbf"`` (scikit-learn's name) is the Gaussian kernel wherever a kernel name is
   accepted; the estimator keeps ``kernel="rbf"`` as given (clone contract), predicts as
   ``kernel="gaussian"`` and its saved file loads and predicts identically.
2. Fitting on a DataFrame with string column names warns about nothing (no internal call
   passes a bare array to a method that checks feature names), and neither does predicting
   on one; predicting on an array after a DataFrame fit keeps scikit-learn's warning.
3. Features on very different scales (one bandwidth for all of them) warn at fit time
   (:class:`psdsos.kernels.FeatureScaleWarning`), naming the features and the remedy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import psdsos
from psdsos import (
    ConvexRegressor,
    ConvexRegressorCV,
    KernelRidgeRegressor,
    KRLSEstimator,
    PiecewiseLinearConvexRegressor,
    PSDRegressor,
    PSDRegressorCV,
    SELFEstimator,
    ShapeConstrainedRegressor,
    ShapeConstrainedRegressorCV,
)
from psdsos.features import ExactFeatures
from psdsos.kernels import FeatureScaleWarning, GaussianKernel, get_kernel, kernel_names
from psdsos.structured import FenchelYoungEstimator, LocalizedSELF
from psdsos.structured.parts import Blocks


def _data(n=30, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    return X, np.sum(X**2, axis=1)


def _psd_targets(X):
    return np.einsum("ni,nj->nij", X, X) + 0.1 * np.eye(X.shape[1])


def _labels(X):
    return (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)


#: name -> (factory(kernel) returning an unfitted estimator, targets from X)
ESTIMATORS = {
    "PSDRegressor": (lambda k: PSDRegressor(k, random_state=0), _psd_targets),
    "PSDRegressorCV": (lambda k: PSDRegressorCV(kernels=(k,), sigmas=(0.5, 1.0),
                                                lam2s=(1e-2, 1e-4), cv=2), _psd_targets),
    "ConvexRegressor": (lambda k: ConvexRegressor(k, random_state=0), None),
    "ConvexRegressorCV": (lambda k: ConvexRegressorCV(kernel=k, sigmas=(2.0,), rhos=(1e-3,),
                                                      n_landmarks=(10,), cv=2, random_state=0),
                          None),
    "ShapeConstrainedRegressor": (lambda k: ShapeConstrainedRegressor(convex=True, kernel=k,
                                                                      random_state=0), None),
    "ShapeConstrainedRegressorCV": (
        lambda k: ShapeConstrainedRegressorCV(convex=True, kernel=k, sigmas=(1.0,),
                                              rhos=(1e-3,), lam2s=(1e-3,), cv=2,
                                              random_state=0), None),
    "KernelRidgeRegressor": (lambda k: KernelRidgeRegressor(k), None),
    "SELFEstimator": (lambda k: SELFEstimator(k), lambda X: np.sum(X**2, axis=1)[:, None]),
    "SELFEstimator-multiclass": (lambda k: SELFEstimator(k, output="multiclass"), _labels),
    "KRLSEstimator": (lambda k: KRLSEstimator(k), lambda X: np.sum(X**2, axis=1)[:, None]),
    "LocalizedSELF": (lambda k: LocalizedSELF(k, parts=Blocks(2, 1, 1)),
                      lambda X: np.column_stack([X[:, 0] ** 2, X[:, 1] ** 2])),
    "FenchelYoungEstimator": (lambda k: FenchelYoungEstimator("multiclass", model="kernel",
                                                              kernel=k, max_iter=200), _labels),
}


def _targets(name, X):
    make = {**ESTIMATORS, **QUIET}[name][1]
    return np.sum(X**2, axis=1) if make is None else make(X)


def _kernel_param(est):
    return "kernels" if isinstance(est, PSDRegressorCV) else "kernel"


# ------------------------------------------------------------------------------------------
# 1. kernel="rbf"
# ------------------------------------------------------------------------------------------


def test_get_kernel_rbf_is_the_gaussian_kernel():
    for name in ("rbf", "RBF", "Rbf"):
        k = get_kernel(name, sigma=0.7)
        assert type(k) is GaussianKernel and k.sigma == 0.7 and k.name == "gaussian"
    # an alias, not a second kernel: the registry's names are unchanged
    assert "rbf" not in kernel_names() and "rbf" not in kernel_names(radial_only=False)
    assert psdsos.kernels.kernel_aliases() == {"rbf": "gaussian"}
    # scikit-learn's rbf exp(-gamma ||x - y||^2) is ours with sigma = 1 / sqrt(2 gamma)
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(0)
    X, Y, gamma = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)), 0.3
    np.testing.assert_allclose(get_kernel("rbf", 1 / np.sqrt(2 * gamma))(X, Y),
                               rbf_kernel(X, Y, gamma=gamma), rtol=1e-12)
    Z = rng.normal(size=(6, 2))
    np.testing.assert_array_equal(ExactFeatures("rbf", 0.5).fit(Z).transform(Z),
                                  ExactFeatures("gaussian", 0.5).fit(Z).transform(Z))


def test_alias_cannot_shadow_or_be_shadowed():
    from psdsos.kernels import Kernel, register_kernel

    with pytest.raises(ValueError, match="rbf"):
        @register_kernel("rbf")
        class _Shadow(Kernel):  # noqa: F841
            pass
    for taken in ("rbf", "Gaussian"):  # another kernel's alias, another kernel's name
        with pytest.raises(ValueError, match=taken.lower()):
            register_kernel("my_kernel", aliases=(taken,))
    assert "my_kernel" not in kernel_names()


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_rbf_predicts_as_gaussian(name):
    X, _ = _data()
    y = _targets(name, X)
    make = ESTIMATORS[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convexity, convergence: the same for both
        a = make("rbf").fit(X, y)
        b = make("gaussian").fit(X, y)
    key = _kernel_param(a)
    assert a.get_params()[key] in ("rbf", ("rbf",))  # kept as given (clone contract)
    assert clone(a).get_params()[key] == a.get_params()[key]
    Xt, _ = _data(7, seed=1)
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))


@pytest.mark.parametrize("name", ["PSDRegressor", "ConvexRegressor", "ShapeConstrainedRegressor",
                                  "SELFEstimator", "SELFEstimator-multiclass", "LocalizedSELF",
                                  "FenchelYoungEstimator"])
def test_rbf_model_file_loads_and_predicts_identically(name, tmp_path):
    X, _ = _data()
    y = _targets(name, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ESTIMATORS[name][0]("rbf").fit(X, y)
    path = tmp_path / "model.npz"
    est.save(path)
    loaded = psdsos.load(path)
    assert loaded.kernel == "rbf"
    Xt, _ = _data(7, seed=1)
    np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("command", ["convex-fit", "shape-fit"])
def test_rbf_in_the_cli(command):
    from psdsos.cli._parser import _build_parser

    args = _build_parser().parse_args([command, "data.csv", "--target", "y", "--kernel", "rbf"])
    assert args.kernel == "rbf"


def test_unknown_kernel_message_lists_the_alias():
    X, y = _data()
    with pytest.raises(ValueError, match="'rbf'"):
        PSDRegressor("cauchy").fit(X, _psd_targets(X))


# ------------------------------------------------------------------------------------------
# 2. DataFrames with feature names
# ------------------------------------------------------------------------------------------

#: The estimators, settings that fit these data without any warning of their own.
QUIET = dict(ESTIMATORS)
QUIET["ConvexRegressor"] = (lambda k: ConvexRegressor(k, sigma=2.0, rho=1e-3,
                                                      random_state=0), None)
QUIET["PiecewiseLinearConvexRegressor"] = (lambda k: PiecewiseLinearConvexRegressor(), None)


def _frame(X, names=("income", "age")):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(X, columns=list(names)[: X.shape[1]])


@pytest.mark.parametrize("name", list(QUIET))
def test_dataframe_fit_and_predict_emit_no_warning(name):
    X, _ = _data()
    y = _targets(name, X)
    df = _frame(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = QUIET[name][0]("gaussian").fit(df, y)
        est.predict(df)
        for method in ("gradient", "hessian", "predict_convexified"):
            if hasattr(est, method):
                getattr(est, method)(df)
        for method in ("convexity_deficit", "curvature_scale"):
            if hasattr(est, method):
                getattr(est, method)()
        est.score(df, y)
    assert list(est.feature_names_in_) == ["income", "age"]
    # an array after a DataFrame fit: scikit-learn's usual warning
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)


def test_dataframe_shape_predict_raw_and_certificate_quiet():
    X, y = _data()
    df = _frame(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = ShapeConstrainedRegressor(convex=True, increasing=[0], random_state=0)
        est.fit(df, y + 3 * X[:, 0])
        est.predict(df, raw=True)
        est.gradient(df, raw=True)
        est.hessian(df, raw=True)


# ------------------------------------------------------------------------------------------
# 3. Features on very different scales
# ------------------------------------------------------------------------------------------

def _badly_scaled(n=30, p=2, seed=0):
    X, _ = _data(n, p, seed)
    X[:, 1] *= 1000.0  # a feature in other units
    return X


#: LocalizedSELF is left out: its inputs are signals (pixels, samples of a sequence) in one
#: unit, where a nearly constant pixel is uninformative rather than in other units, and a
#: per-feature scaling would break the parts' shared kernel.
SCALED = [name for name in ESTIMATORS if name != "LocalizedSELF"]


@pytest.mark.parametrize("name", SCALED)
def test_badly_scaled_features_warn_once_naming_them(name):
    """Every kernel estimator (one bandwidth for all the features) warns once at fit time,
    the CV ones included (not once per CV fit)."""
    X = _badly_scaled()
    y = _targets(name, X / [1, 1000])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ESTIMATORS[name][0]("gaussian").fit(X, y)
    ours = [w for w in caught if issubclass(w.category, FeatureScaleWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    msg = str(ours[0].message)
    assert issubclass(FeatureScaleWarning, UserWarning)
    # the feature of small spread named, the ratio and the remedy given
    sd = X.std(axis=0)
    assert "feature 0 " in msg and "StandardScaler" in msg
    assert f"a factor of {sd[1] / sd[0]:.3g}" in msg


def test_warning_names_several_features():
    X = _badly_scaled(p=3)
    with pytest.warns(FeatureScaleWarning, match="features 0, 2 "):
        KernelRidgeRegressor().fit(X, X[:, 0])


def test_warning_names_dataframe_columns():
    X = _badly_scaled(p=3)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=["alcohol", "proline", "hue"])
    with pytest.warns(FeatureScaleWarning, match="'alcohol', 'hue'"):
        KernelRidgeRegressor().fit(df, X[:, 0])


def test_no_scale_warning_when_it_does_not_apply():
    X = _badly_scaled(p=3)
    y = X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        # standardized first
        make_pipeline(StandardScaler(), KernelRidgeRegressor()).fit(X, y)
        # one feature
        KernelRidgeRegressor().fit(X[:, 1:2], y)
        # ratio below the threshold (100), constant features left out
        Xc = np.column_stack([X[:, 0], 50.0 * X[:, 2], np.full(30, 7.0)])
        KernelRidgeRegressor().fit(Xc, y)
        # no bandwidth: the linear kernel of the SELF estimators; no kernel at all
        SELFEstimator("linear").fit(X, y[:, None])
        PiecewiseLinearConvexRegressor().fit(X, X[:, 0] ** 2)
        # signals (parts of images or sequences): see SCALED
        LocalizedSELF(parts=Blocks(3, 1, 1)).fit(X, X**2)


def test_wine_standardized_beats_raw():
    """The remedy the warning gives (the issue's wine data: one bandwidth for all 13
    features is dominated by proline)."""
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    with pytest.warns(FeatureScaleWarning, match="proline|features"):
        raw = SELFEstimator(output="multiclass", lam=1e-3).fit(Xtr, ytr).score(Xte, yte)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        std = make_pipeline(StandardScaler(), SELFEstimator(output="multiclass", lam=1e-3))
        score = std.fit(Xtr, ytr).score(Xte, yte)
    assert score > 0.9 and score > raw + 0.1
