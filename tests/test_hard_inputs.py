"""Hard inputs: every one is refused with a ValueError naming the argument (or, for a
missing model file, FileNotFoundError), or answered finitely and correctly.

Covers complex and extreme-magnitude PSD targets, extreme kernel bandwidths, the SoS block's
input checks, ``score`` with malformed targets, and corrupted model files (every loadable
estimator type, every kind of corruption).  References: the unscaled fit (the PSD fit is
equivariant under M -> c M, lam1 -> c lam1), a constant kernel's closed form, the saved
model's own predictions.
"""

from __future__ import annotations

import json
import warnings
import zipfile

import cvxpy as cp
import numpy as np
import pytest

import psdsos
from psdsos import ConvexRegressor, PSDRegressor
from psdsos._npz import arrays_digest
from psdsos.estimators import KernelRidgeRegressor, PiecewiseLinearConvexRegressor
from psdsos.kernels import KERNELS, get_kernel
from psdsos.sos import SoSBlock, sos_constraints
from psdsos.structured import KRLSEstimator, SELFEstimator


def _psd_data(n=8, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = np.linspace(0.0, 1.0, n)[:, None]
    A = rng.standard_normal((n, d, d)) * 0.3 + np.eye(d) * (1 + X[:, :, None])
    return X, A @ A.transpose(0, 2, 1)


# ---------------------------------------------------------------------------------------
# PSD targets: complex refused; any magnitude fitted (J(cB; cM, c lam1) = c^2 J(B; M, lam1))
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["fit", "score"])
def test_complex_targets_refused(where):
    X, M = _psd_data()
    Mc = M + 1e-3j * M
    est = PSDRegressor(sigma=0.3)
    if where == "score":
        est.fit(X, M)
    with pytest.raises(ValueError, match="y must hold real numbers"):
        est.fit(X, Mc) if where == "fit" else est.score(X, Mc)


@pytest.mark.parametrize("M", [np.arange(8.0) + 1j, ["a"] * 8])
def test_scalar_targets_complex_or_text_refused(M):
    # 1-D complex targets were once cast to float (imaginary part dropped)
    X = np.linspace(0.0, 1.0, 8)[:, None]
    with pytest.raises(ValueError, match="y must"):
        PSDRegressor(sigma=0.3).fit(X, M)


@pytest.mark.parametrize("c", [1e160, 1e-160])
def test_extreme_target_magnitudes_fitted_like_unit_ones(c):
    # M x 1e160 once predicted 0 with objective inf
    X, M = _psd_data()
    ref = PSDRegressor(sigma=0.3, lam1=1e-2, lam2=1e-2, tol=1e-10).fit(X, M)
    est = PSDRegressor(sigma=0.3, lam1=1e-2 * c, lam2=1e-2, tol=1e-10).fit(X, c * M)
    P = est.predict(X)
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(P / c, ref.predict(X), rtol=0,
                               atol=1e-9 * np.abs(ref.predict(X)).max())
    assert est.score(X, c * M) == pytest.approx(ref.score(X, M), abs=1e-9)


@pytest.mark.parametrize("bad, match", [
    (lambda M: M.reshape(len(M), -1), r"y must have shape \(n_samples, d, d\)"),
    (lambda M: M.reshape(2, 4, 4), "different numbers of samples"),
    (lambda M: np.where(M > M.max() / 2, np.nan, M), "y contains NaN"),
])
def test_score_with_malformed_M_refused(bad, match):
    X, M = _psd_data()
    est = PSDRegressor(sigma=0.3).fit(X, M)
    with pytest.raises(ValueError, match=match):
        est.score(X, bad(M))


# ---------------------------------------------------------------------------------------
# kernel bandwidth: [1e-75, 1e75] (derivatives scale like sigma^-4), one check in Kernel
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("sigma", [1e300, 1e-300, 1e76, 1e-76, 0.0, -1.0, np.inf, np.nan])
def test_kernel_bandwidth_out_of_range_names_sigma(name, sigma):
    # 1e300 once raised OverflowError (sigma**2), 1e-300 a NaN kernel matrix
    with pytest.raises(ValueError, match="sigma"):
        get_kernel(name, sigma)


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("sigma", [1e75, 1e-75])
def test_kernel_bandwidth_at_the_range_ends_is_finite(name, sigma):
    k = get_kernel(name, sigma)
    X = np.linspace(0.0, 1.0, 5)[:, None]
    K = k(X)
    # a huge bandwidth is the constant kernel, a tiny one the identity (points are distinct)
    np.testing.assert_array_equal(K, np.ones((5, 5)) if sigma > 1 else np.eye(5))
    if k.differentiability >= 2:
        H = k.hessian(X)
        assert np.all(np.isfinite(H))


def _estimators(sigma):
    return [PSDRegressor(sigma=sigma), ConvexRegressor(sigma=sigma),
            KernelRidgeRegressor(sigma=sigma), SELFEstimator(sigma=sigma),
            KRLSEstimator(sigma=sigma)]


@pytest.mark.parametrize("sigma", [1e300, 1e-300])
@pytest.mark.parametrize("index", range(5), ids=["PSD", "Convex", "KRR", "SELF", "KRLS"])
def test_every_estimator_refuses_unusable_bandwidth(sigma, index):
    est = _estimators(sigma)[index]
    X = np.linspace(0.0, 1.0, 8)[:, None]
    with pytest.raises(ValueError, match=r"sigma .*must be in \[1e-75, 1e\+75\]"):
        est.fit(X, X[:, 0] ** 2 + 1.0)


@pytest.mark.parametrize("index", range(5), ids=["PSD", "Convex", "KRR", "SELF", "KRLS"])
def test_every_estimator_fits_the_largest_bandwidth_finitely(index):
    # sigma = 1e75: the constant kernel; every prediction finite
    est = _estimators(1e75)[index]
    X = np.linspace(0.0, 1.0, 8)[:, None]
    est.fit(X, X[:, 0] ** 2 + 1.0)
    assert np.all(np.isfinite(est.predict(X)))


# ---------------------------------------------------------------------------------------
# SoS block: complex Psi and non-integer d
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("Psi_kind, d, match", [
    ("complex-2d", 1, "Psi must be a real array"),
    ("complex-3d", None, "Psi must be a real array"),
    ("real-2d", 1.5, "d must be a positive integer"),
    ("real-2d", np.nan, "d must be a positive integer"),
    ("real-2d", "2", "d must be a positive integer"),
    ("real-2d", True, "d must be a positive integer"),
    ("real-2d", 0, "d must be >= 1"),
    ("real-3d", 1.5, "d must be a positive integer"),
])
@pytest.mark.parametrize("entry", ["SoSBlock", "sos_constraints"])
def test_sos_block_refuses_complex_psi_and_non_integer_d(Psi_kind, d, match, entry):
    Phi = np.random.default_rng(0).standard_normal((4, 3))
    Psi = {"complex-2d": Phi + 1j, "complex-3d": Phi[:, :, None] * (1 + 1j),
           "real-2d": Phi, "real-3d": Phi.reshape(4, 3, 1).repeat(2, axis=2)}[Psi_kind]
    with pytest.raises(ValueError, match=match):
        if entry == "SoSBlock":
            SoSBlock(Psi, d)
        else:
            sos_constraints(cp.Variable((4, 1, 1)), Psi, d)


def test_sos_block_accepts_integral_float_d():
    Phi = np.random.default_rng(0).standard_normal((4, 3))
    assert SoSBlock(Phi, 2.0).d == SoSBlock(Phi, np.int64(2)).d == 2


# ---------------------------------------------------------------------------------------
# model files
# ---------------------------------------------------------------------------------------
def _fit_models():
    X, M = _psd_data()
    x1 = np.linspace(-1.0, 1.0, 10)[:, None]
    y = x1[:, 0] ** 2 + 0.1 * np.sin(5 * x1[:, 0])
    Y2 = np.hstack([np.sin(x1), np.cos(x1)])
    cp_pts = np.linspace(-1.0, 1.0, 6)[:, None]
    fast = dict(solver="primal", primal_solver="CLARABEL")
    return {
        "PSDRegressor": PSDRegressor(sigma=0.3, lam2=1e-3).fit(X, M),
        "PSDRegressor-nystrom": PSDRegressor(sigma=0.3, n_landmarks=4, random_state=0,
                                             **fast).fit(X, M),
        "PSDRegressor-scalar": PSDRegressor(sigma=0.3).fit(X, M[:, 0, 0]),
        "PSDModel": PSDRegressor(sigma=0.3, lam2=1e-3).fit(X, M).model_,
        "ConvexRegressor": ConvexRegressor(sigma=1.0, constraint_points=cp_pts,
                                           **fast).fit(x1, y),
        "ConvexRegressor-exact": ConvexRegressor(sigma=1.0, representation="exact",
                                                 constraint_points=4, random_state=0,
                                                 **fast).fit(x1, y),
        "PiecewiseLinearConvexRegressor": PiecewiseLinearConvexRegressor().fit(x1, y),
        "SELFEstimator": SELFEstimator(sigma=0.5).fit(x1, Y2),
        "SELFEstimator-nystrom": SELFEstimator(sigma=0.5, n_landmarks=4,
                                               random_state=0).fit(x1, Y2),
        "KRLSEstimator": KRLSEstimator(sigma=0.5, output="sphere").fit(
            x1, Y2 / np.linalg.norm(Y2, axis=1, keepdims=True)),
    }


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{kind: (model, path)} for every loadable type, fitted on tiny data and saved."""
    tmp = tmp_path_factory.mktemp("models")
    out = {}
    for kind, model in _fit_models().items():
        path = tmp / f"{kind}.npz"
        model.save(path)
        out[kind] = (model, path)
    return out


KINDS = ["PSDRegressor", "PSDRegressor-nystrom", "PSDRegressor-scalar", "PSDModel",
         "ConvexRegressor", "ConvexRegressor-exact", "PiecewiseLinearConvexRegressor",
         "SELFEstimator", "SELFEstimator-nystrom", "KRLSEstimator"]


def _read(path):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
    return arrays, meta


def _write(path, arrays, meta, *, record=True):
    """Rewrite a model file; ``record``: update the recorded array shapes and the arrays'
    digest to match (as a buggy writer would), so that only the schema's cross-checks can
    catch the change."""
    if isinstance(meta, dict):
        meta = dict(meta)
    if record and isinstance(meta, dict) and "array_shapes" in meta:
        meta["array_shapes"] = {k: list(v.shape) for k, v in arrays.items()}
        if "arrays_sha256" in meta:
            meta["arrays_sha256"] = arrays_digest(arrays)
    text = meta if isinstance(meta, (bytes, str)) else json.dumps(meta)
    payload = np.frombuffer(text.encode("utf-8") if isinstance(text, str) else text,
                            dtype=np.uint8)
    np.savez(path, __meta__=payload, **arrays)


def _predict(model, X):
    return model(X) if isinstance(model, psdsos.sos.PSDModel) else model.predict(X)


def _X_for(model):
    p = model.features.anchors_.shape[1] if hasattr(model, "features") else model.n_features_in_
    return np.linspace(-0.9, 0.9, 7)[:, None] * np.ones((1, p))


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_unchanged(saved, kind):
    model, path = saved[kind]
    loaded = psdsos.load(path)
    assert type(loaded) is type(model)
    X = _X_for(model)
    np.testing.assert_array_equal(np.asarray(_predict(loaded, X)),
                                  np.asarray(_predict(model, X)))


def test_constraint_points_array_survives_save_and_load(saved):
    # save once replaced an array of constraint points by None
    model, path = saved["ConvexRegressor"]
    loaded = psdsos.load(path)
    assert isinstance(loaded.constraint_points, np.ndarray)
    np.testing.assert_array_equal(loaded.constraint_points, model.constraint_points)
    np.testing.assert_array_equal(loaded.constraint_points_, model.constraint_points_)
    # the reloaded estimator refits on the same points
    x1 = model.X_fit_
    y = model.predict(x1)
    again = loaded.fit(x1, y)
    np.testing.assert_array_equal(again.constraint_points_, model.constraint_points)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no psdsos model file"):
        psdsos.load(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError):
        psdsos.sos.PSDModel.load(tmp_path / "nope")


#: Arrays a model file may lack (files written before they existed).
OPTIONAL_ARRAYS = {"x_box"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_dropped_array_named(saved, kind, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    for key in arrays:
        if key in OPTIONAL_ARRAYS:
            continue
        bad = tmp_path / f"drop-{key}.npz"
        for record in (True, False):
            _write(bad, {k: v for k, v in arrays.items() if k != key}, meta, record=record)
            with pytest.raises(ValueError, match=f"no array '{key}'"):
                psdsos.load(bad)


def test_convex_file_without_box_uses_the_expansion_points(saved, tmp_path):
    """Files written before x_box_ existed (their expansion points were the training
    points): the certificate's box is that of X_fit_."""
    model, path = saved["ConvexRegressor"]
    arrays, meta = _read(path)
    old = tmp_path / "old.npz"
    _write(old, {k: v for k, v in arrays.items() if k != "x_box"}, meta)
    back = psdsos.load(old)
    assert getattr(back, "x_box_", None) is None
    np.testing.assert_array_equal(back._box_array(), np.vstack([model.X_fit_.min(0),
                                                                model.X_fit_.max(0)]))
    np.testing.assert_array_equal(back.predict(model.X_fit_), model.predict(model.X_fit_))


@pytest.mark.parametrize("how", ["rows", "flat", "add-axis", "transpose-extra-column"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_reshaped_array_named(saved, kind, how, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    for key, A in arrays.items():
        if how == "rows":
            B = A[:-1]
        elif how == "flat":
            B = A.ravel()[:-1]
        elif how == "add-axis":
            B = A[..., None]
        else:
            B = np.concatenate([A, A[..., :1]], axis=-1) if A.ndim >= 2 else A[None]
        bad = tmp_path / f"{how}-{key}.npz"
        # the file's own shape record catches any change
        _write(bad, {**arrays, key: B}, meta, record=False)
        with pytest.raises(ValueError, match=f"array '{key}'.*truncated or altered"):
            psdsos.load(bad)
        # with a consistent record, the schema's cross-checks name the array (or the array
        # it disagrees with, which the message then names too)
        _write(bad, {**arrays, key: B}, meta, record=True)
        with pytest.raises(ValueError, match=f"'{key}'") as info:
            psdsos.load(bad)
        assert "shape" in str(info.value)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("kind", KINDS)
def test_each_non_finite_array_named(saved, kind, value, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    floats = [k for k, A in arrays.items() if A.dtype.kind == "f" and A.size]
    assert floats
    for key in floats:
        B = arrays[key].copy()
        B.flat[B.size // 2] = value
        bad = tmp_path / f"nan-{key}.npz"
        _write(bad, {**arrays, key: B}, meta)
        with pytest.raises(ValueError, match=f"array '{key}'.*NaN or infinite"):
            psdsos.load(bad)


def _corrupt_meta(meta, how, kind):
    meta = json.loads(json.dumps(meta))
    if how == "list":
        return [meta]
    if how == "invalid-json":
        return json.dumps(meta)[:-7]
    if how == "bytes-not-utf8":
        return b"\xff\xfe{}"
    if how == "drop-type":
        del meta["type"]
        return meta
    section = "fitted" if "fitted" in meta else "features"
    if how == "section-is-list":
        meta[section] = list(meta[section].values()) if isinstance(meta[section], dict) else []
        return meta, section
    if how == "drop-section":
        del meta[section]
        return meta, section
    if how == "fitted-entry-is-list":
        key = next(k for k, v in meta[section].items() if isinstance(v, (int, float, str)))
        meta[section][key] = [meta[section][key]]
        return meta, key
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["list", "invalid-json", "bytes-not-utf8", "drop-type"])
@pytest.mark.parametrize("kind", KINDS)
def test_metadata_not_a_psdsos_object_refused(saved, kind, how, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    bad = tmp_path / "bad.npz"
    _write(bad, arrays, _corrupt_meta(meta, how, kind), record=False)
    match = {"list": "must be a JSON object, got a list", "invalid-json": "not valid JSON",
             "bytes-not-utf8": "not valid JSON", "drop-type": "'type'"}[how]
    with pytest.raises(ValueError, match=match):
        psdsos.load(bad)


@pytest.mark.parametrize("how", ["section-is-list", "drop-section", "fitted-entry-is-list"])
@pytest.mark.parametrize("kind", KINDS)
def test_metadata_entries_checked(saved, kind, how, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    bad_meta, name = _corrupt_meta(meta, how, kind)
    bad = tmp_path / "bad.npz"
    _write(bad, arrays, bad_meta)
    with pytest.raises(ValueError, match=f"metadata entry '([a-z_]+\\.)?{name}'"):
        psdsos.load(bad)


#: A parameter of each type set to a value its _parameter_constraints refuse.
BAD_PARAMS = {
    "PSDRegressor": [("lam2", -1), ("kernel", "nope"), ("solver", 3), ("sigma", "wide")],
    "ConvexRegressor": [("lam2", -1), ("kernel", "nope"), ("rho", -1.0), ("concave", "no")],
    "PiecewiseLinearConvexRegressor": [("tol", -1), ("solver", "nope"), ("max_rounds", 0)],
    "SELFEstimator": [("lam", -1), ("kernel", "nope"), ("decode_method", "nope")],
    "KRLSEstimator": [("lam", -1), ("kernel", "nope"), ("landmarks", "nope")],
}


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "PSDModel"])
def test_invalid_or_unknown_parameter_named(saved, kind, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    bad = tmp_path / "bad.npz"
    for name, value in BAD_PARAMS[kind.split("-")[0]]:
        m = json.loads(json.dumps(meta))
        m["params"][name] = value
        _write(bad, arrays, m)
        with pytest.raises(ValueError, match=f"invalid parameter: {name} of"):
            psdsos.load(bad)
    m = json.loads(json.dumps(meta))
    m["params"]["bogus_option"] = 1
    _write(bad, arrays, m)
    with pytest.raises(ValueError, match="unknown parameter.*bogus_option"):
        psdsos.load(bad)


@pytest.mark.parametrize("kind", ["PSDRegressor", "PSDModel", "SELFEstimator-nystrom"])
def test_invalid_feature_metadata_named(saved, kind, tmp_path):
    _, path = saved[kind]
    arrays, meta = _read(path)
    bad = tmp_path / "bad.npz"
    for entry, value, match in [("kernel", "nope", "kernel"), ("sigma", -1.0, "sigma"),
                                ("sigma", "x", "features.sigma"),
                                ("class", "os.system", "features.class")]:
        m = json.loads(json.dumps(meta))
        feats = m["model"]["features"] if kind == "PSDRegressor" else m["features"]
        feats[entry] = value
        _write(bad, arrays, m)
        with pytest.raises(ValueError, match=match):
            psdsos.load(bad)


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_file_refused(saved, kind, tmp_path):
    _, path = saved[kind]
    raw = path.read_bytes()
    for cut in (len(raw) // 3, len(raw) - 40):
        bad = tmp_path / "cut.npz"
        bad.write_bytes(raw[:cut])
        with pytest.raises(ValueError, match="cannot read psdsos model file"):
            psdsos.load(bad)


def test_truncated_zip_member_refused(saved, tmp_path):
    # a member whose bytes were cut but the archive is otherwise well formed
    _, path = saved["PSDRegressor"]
    bad = tmp_path / "member.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            dst.writestr(info.filename, data[:-8] if info.filename == "B.npy" else data)
    with pytest.raises(ValueError, match="cannot read psdsos model file"):
        psdsos.load(bad)


# ---------------------------------------------------------------------------------------
# complex inputs: a ValueError naming X or y (scikit-learn's own message prints the array)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("Est", [ConvexRegressor, KernelRidgeRegressor,
                                 PiecewiseLinearConvexRegressor], ids=lambda c: c.__name__)
def test_scalar_estimators_name_complex_x_and_y(Est):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    with pytest.raises(ValueError, match="^X must hold real numbers"):
        Est().fit(X + 0j, y)
    with pytest.raises(ValueError, match="^y must hold real numbers"):
        Est().fit(X, y + 1j)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a non-convex fit may warn: not the point here
        est = Est().fit(X, y)
    with pytest.raises(ValueError, match="^X must hold real numbers"):
        est.predict(X + 0j)


@pytest.mark.parametrize("make", [lambda: PSDRegressor(sigma=0.3),
                                  lambda: SELFEstimator(output="euclidean"),
                                  lambda: KRLSEstimator(output="euclidean")],
                         ids=["PSD", "SELF", "KRLS"])
def test_other_estimators_name_complex_x(make):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    if "PSD" in type(make()).__name__:
        A = rng.normal(size=(12, 2, 2))
        y = A @ A.transpose(0, 2, 1)
    else:
        y = rng.normal(size=(12, 2))
    with pytest.raises(ValueError, match="^X must hold real numbers"):
        make().fit(X + 0j, y)
    est = make().fit(X, y)
    with pytest.raises(ValueError, match="^X must hold real numbers"):
        est.predict(X + 0j)
