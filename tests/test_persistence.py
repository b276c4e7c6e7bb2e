"""The one writer and one reader of psdsos._persistence (estimators declare their files).

- every declared estimator round-trips (predictions equal after load);
- files written by the hand-written savers before the declarations (psdsos a061991, kept
  under tests/data/persistence/, see make_fixtures.py there) load and predict as they did,
  and the declared writer produces the same array names and metadata keys;
- pickled object arrays are refused (and never unpickled); a wrong shape, a NaN or a
  missing array is a ValueError naming the file and the array;
- the mechanism expresses LocalizedSELF too (its parts config, kernels, nested arrays).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as np
import pytest

import psdsos
from psdsos._persistence import (
    SavedArray,
    SavedEstimator,
    SavedScalar,
    _load_estimator,
    label_array,
    load_npz,
)
from psdsos.structured import LocalizedSELF
from psdsos.structured.parts import Blocks

try:  # LocalizedSELF's private helpers (its file is being restructured: see the last test)
    from psdsos.structured._estimator import _params_from_meta, _space_from_meta
    from psdsos.structured._localized import _Elements, _parts_config, _parts_from_config
except ImportError:  # pragma: no cover
    _Elements = None

#: The fixtures' non-convex ConvexRegressor fit warns (a small sigma, few constraint points).
pytestmark = pytest.mark.filterwarnings("ignore::psdsos.estimators.NonConvexFitWarning")

DATA = pathlib.Path(__file__).resolve().parent / "data" / "persistence"


def _fixtures_module():
    spec = importlib.util.spec_from_file_location("make_fixtures", DATA / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FIX = _fixtures_module()
with np.load(DATA / "expected.npz", allow_pickle=False) as _data:
    EXPECTED = {k: _data[k] for k in _data.files}
KINDS = sorted({k.split("/")[0] for k in EXPECTED})
#: The estimators whose files are declared (LocalizedSELF keeps its own saver for now).
DECLARED = [k for k in KINDS if k.split("-")[0] not in ("PSDModel", "LocalizedSELF")]


def _read(path):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
    return arrays, meta


def _write(path, arrays, meta):
    """A model file with ``arrays`` and a consistent shape record (only the schema's checks
    can catch a change)."""
    meta = {**meta, "array_shapes": {k: list(np.shape(v)) for k, v in arrays.items()}}
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(path, __meta__=payload, **arrays)


def _assert_same_predictions(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _key_tree(meta):
    """The nested metadata keys (the values left out: they are the fit's numbers)."""
    if isinstance(meta, dict):
        return {k: _key_tree(v) for k, v in meta.items()}
    return None


@pytest.fixture(scope="module")
def fitted():
    return FIX.fit_models()


# ---------------------------------------------------------------------------------------
# files of the previous savers
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_file_of_the_previous_saver_loads_and_predicts_as_before(kind):
    model = psdsos.load(DATA / f"{kind}.npz")
    _assert_same_predictions(FIX.predict(model, EXPECTED[f"{kind}/X"]), EXPECTED[f"{kind}/y"])


@pytest.mark.parametrize("kind", DECLARED)
def test_declared_writer_keeps_the_format(fitted, kind, tmp_path):
    """Same array names, dtypes kinds and ranks, same metadata keys as the previous saver."""
    model, _ = fitted[kind]
    path = tmp_path / "m.npz"
    if kind == "ConvexRegressor":
        model.save(path, metadata={"columns": ["x"]})
    else:
        model.save(path)
    new_arrays, new_meta = _read(path)
    old_arrays, old_meta = _read(DATA / f"{kind}.npz")
    assert sorted(new_arrays) == sorted(old_arrays)
    for k, A in new_arrays.items():
        assert (A.dtype.kind, A.ndim) == (old_arrays[k].dtype.kind, old_arrays[k].ndim), k
    assert _key_tree(new_meta) == _key_tree(old_meta)
    assert new_meta["params"] == old_meta["params"]


# ---------------------------------------------------------------------------------------
# round trips
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", DECLARED)
def test_round_trip(fitted, kind, tmp_path):
    model, X = fitted[kind]
    model.save(tmp_path / "m.npz")
    back = psdsos.load(tmp_path / "m.npz")
    assert type(back) is type(model)
    assert back.get_params().keys() == model.get_params().keys()
    np.testing.assert_array_equal(np.asarray(FIX.predict(back, X)),
                                  np.asarray(FIX.predict(model, X)))
    # saved again, the file is the same
    back.save(tmp_path / "again.npz")
    a1, m1 = _read(tmp_path / "m.npz")
    a2, m2 = _read(tmp_path / "again.npz")
    assert m1 == m2
    assert sorted(a1) == sorted(a2)
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k])


def test_every_declared_estimator_is_covered():
    covered = {k.split("-")[0] for k in DECLARED}
    declared = {cls.__name__ for cls in _subclasses(SavedEstimator)
                if not cls.__name__.startswith("_") and cls.__module__.startswith("psdsos")}
    assert declared <= covered | {"KRLSEstimator"}
    assert declared >= {"PSDRegressor", "ConvexRegressor", "PiecewiseLinearConvexRegressor",
                        "SELFEstimator", "KRLSEstimator", "FenchelYoungEstimator"}


def _subclasses(cls):
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


# ---------------------------------------------------------------------------------------
# refused files, each message naming the file and the array
# ---------------------------------------------------------------------------------------
class _Boom:
    """Unpickling this would run code: a model file must never do that."""

    ran = False

    def __reduce__(self):
        return (_Boom._run, ())

    @staticmethod
    def _run():
        _Boom.ran = True
        return 0


@pytest.mark.parametrize("kind", ["PSDRegressor", "ConvexRegressor", "SELFEstimator-labels",
                                  "FenchelYoungEstimator"])
def test_pickled_object_array_refused_and_never_unpickled(kind, tmp_path):
    arrays, meta = _read(DATA / f"{kind}.npz")
    name = sorted(arrays)[0]
    bad = np.empty(arrays[name].shape or (1,), dtype=object)
    bad.flat[0] = _Boom()
    path = tmp_path / "pickled.npz"
    _write(path, {**arrays, name: bad}, meta)  # np.savez pickles object arrays
    with pytest.raises(ValueError, match="cannot read psdsos model file"):
        psdsos.load(path)
    assert not _Boom.ran


def test_writer_never_pickles():
    with pytest.raises(ValueError, match="dtype object"):
        label_array(np.array([1, "a", None], dtype=object), "Est")
    np.testing.assert_array_equal(label_array(np.array(["a", "b"], dtype=object), "Est"),
                                  ["a", "b"])


def _arrays_of(kind):
    arrays, meta = _read(DATA / f"{kind}.npz")
    return arrays, meta


@pytest.mark.parametrize("kind", KINDS)
def test_missing_array_named_with_the_file(kind, tmp_path):
    arrays, meta = _arrays_of(kind)
    path = tmp_path / "missing.npz"
    for name in arrays:
        if name == "x_box":  # optional: files written before it existed
            continue
        _write(path, {k: v for k, v in arrays.items() if k != name}, meta)
        with pytest.raises(ValueError, match=f"no array '{name}'") as info:
            psdsos.load(path)
        assert repr(str(path)) in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_nan_named_with_the_file(kind, tmp_path):
    arrays, meta = _arrays_of(kind)
    path = tmp_path / "nan.npz"
    floats = [k for k, A in arrays.items() if A.dtype.kind == "f" and A.size]
    assert floats
    for name in floats:
        A = arrays[name].copy()
        A.flat[A.size // 2] = np.nan
        _write(path, {**arrays, name: A}, meta)
        with pytest.raises(ValueError, match=f"array '{name}'.*NaN") as info:
            psdsos.load(path)
        assert repr(str(path)) in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_wrong_shape_named_with_the_file(kind, tmp_path):
    arrays, meta = _arrays_of(kind)
    path = tmp_path / "shape.npz"
    for name, A in arrays.items():
        _write(path, {**arrays, name: A[..., None]}, meta)
        with pytest.raises(ValueError, match=f"'{name}'") as info:
            psdsos.load(path)
        assert "shape" in str(info.value)
        assert repr(str(path)) in str(info.value)


def test_unknown_type_lists_the_registered_ones(tmp_path):
    arrays, meta = _arrays_of("PiecewiseLinearConvexRegressor")
    path = tmp_path / "t.npz"
    _write(path, arrays, {**meta, "type": "os.system"})
    with pytest.raises(ValueError, match="unknown model type 'os.system'.*PSDModel"):
        psdsos.load(path)


def test_reserved_metadata_keys_refused(fitted, tmp_path):
    model, _ = fitted["ConvexRegressor"]
    for key in ("type", "params", "fitted", "array_shapes"):
        with pytest.raises(ValueError, match="reserved keys"):
            model.save(tmp_path / "m.npz", metadata={key: 1})


# ---------------------------------------------------------------------------------------
# the mechanism expresses LocalizedSELF (its parts config, kernels and nested arrays)
# ---------------------------------------------------------------------------------------
def _landmarks(meta):
    return meta["params"].get("n_landmarks") is not None


class _DeclaredLocalizedSELF(SavedEstimator, LocalizedSELF):
    """LocalizedSELF's file declared with psdsos._persistence (the conversion recipe)."""

    _saved_fitted_attr = "coef_"
    _fitted_arrays = {
        "X_fit": SavedArray(("n", "p"), dtype=np.float64),
        "aux_sample": SavedArray(("m",), dtype=np.int64),
        "aux_part": SavedArray(("m",), dtype=np.int64),
        "coef": SavedArray(lambda meta: ("r", "D") if _landmarks(meta) else ("m", "D"),
                           dtype=np.float64),
        "landmark_index": SavedArray(("r",), dtype=np.int64, when=_landmarks),
        "R": SavedArray(("r", "r"), dtype=np.float64, when=_landmarks),
        "classes": SavedArray(("k",), attr="", labels=True,
                              when=lambda meta: meta["output_space"]["name"] == "multiclass"),
    }
    _fitted_scalars = {"n_features_in_": "posint", "n_aux_": "posint",
                       "y_1d": SavedScalar("bool", "_y_1d"), "y_shape": SavedScalar("list", ""),
                       "jitter_": SavedScalar("real", "")}
    _saved_meta = {"output": ("str", "dict"), "output_space": {"name": "str", "config": "any"},
                   "parts": ("dict", None), "kernels": "dict"}
    _saved_dims = {"p": "fitted.n_features_in_", "m": "fitted.n_aux_"}

    def _saved_param_values(self):
        if callable(self.part_weights):
            raise ValueError("cannot save LocalizedSELF with a callable part_weights")
        if self.coef_ is None:
            raise ValueError("cannot save LocalizedSELF decoded by Algorithm 3")
        return {"parts": None, "output": self.elements_.space.name}

    def _saved_extra(self):
        space = self.elements_.space
        arrays = {}
        if self.elements_.kind == "multiclass":
            arrays["classes"] = self.classes_
        local, universal = self._locality()
        kernels = {key: {"name": getattr(self, key).name,
                         "sigma": float(getattr(self, key).sigma)}
                   for key, on in (("kernel_", local), ("kernel0_", universal)) if on}
        out = self.output
        return arrays, {
            "output": (out.lower() if isinstance(out, str)
                       else {"name": out.name, "config": out.to_config()}),
            "output_space": {"name": space.name, "config": space.to_config()},
            "parts": _parts_config(self.parts), "kernels": kernels,
            "fitted": {"y_shape": [int(s) for s in self.y_shape_],
                       "jitter_": float(getattr(self, "jitter_", 0.0))}}

    @classmethod
    def _saved_constructor_params(cls, meta):
        return {**_params_from_meta(meta), "parts": _parts_from_config(meta["parts"])}

    def _restore_saved(self, arrays, meta, source):
        from psdsos.kernels import get_kernel

        el = _Elements(_space_from_meta(meta["output_space"]))
        if not el.closed_form:
            raise ValueError(f"metadata entry 'output_space' of {source} names a space "
                             "decoded by Algorithm 3, which is not saved")
        f = meta["fitted"]
        n, p = self.X_fit_.shape
        self.y_shape_ = ys = tuple(f["y_shape"])
        self.parts_ = self.parts if self.parts is not None else Blocks(
            1, p, int(np.prod(ys, dtype=np.int64)) if ys else 1)
        if self.parts_.input_dim != p:
            raise ValueError(f"the saved parts of {source} do not match the saved inputs")
        if el.kind == "multiclass":
            el.space.classes_ = el.classes_ = self.classes_ = arrays["classes"]
            el.e = len(arrays["classes"])
        elif el.kind == "euclidean":
            el.space._check_params()
        ii, pp = self.aux_sample_, self.aux_part_
        if ii.min() < 0 or ii.max() >= n or pp.min() < 0 or pp.max() >= self.parts_.n_parts:
            raise ValueError(f"arrays 'aux_sample' / 'aux_part' of {source} index outside "
                             "the saved inputs or parts")
        d_out = self.parts_.output_index.shape[1]
        if self.coef_.shape[1] != d_out * el.e:
            raise ValueError(f"array 'coef' of {source} must have {d_out * el.e} columns, "
                             f"got {self.coef_.shape[1]}")
        self.elements_, self.n_aux_ = el, len(ii)
        for key, k in meta["kernels"].items():
            setattr(self, key, get_kernel(k["name"], k["sigma"]))
        if "landmark_index" in arrays:
            self.jitter_ = f["jitter_"]
            if self.landmark_index_.min() < 0 or self.landmark_index_.max() >= len(ii):
                raise ValueError(f"array 'landmark_index' of {source} indexes outside the "
                                 "auxiliary pairs")
        self._build_assembly()


@pytest.mark.skipif(_Elements is None, reason="LocalizedSELF's helpers moved: it declares "
                    "its own file now (move _DeclaredLocalizedSELF's declarations there)")
def test_mechanism_expresses_localized_self(tmp_path):
    # the previous saver's file loads through the declaration
    arrays, meta = load_npz(DATA / "LocalizedSELF.npz")
    source = repr(str(DATA / "LocalizedSELF.npz"))
    model = _load_estimator(_DeclaredLocalizedSELF, arrays, meta, source)
    X = EXPECTED["LocalizedSELF/X"]
    _assert_same_predictions(model.predict(X), EXPECTED["LocalizedSELF/y"])
    # the declared writer writes the same file
    model.save(tmp_path / "m.npz")
    new_arrays, new_meta = _read(tmp_path / "m.npz")
    old_arrays, old_meta = _read(DATA / "LocalizedSELF.npz")
    assert sorted(new_arrays) == sorted(old_arrays)
    new_meta.pop("type"), old_meta.pop("type")
    assert _key_tree(new_meta) == _key_tree(old_meta)
    for k in old_arrays:
        np.testing.assert_array_equal(new_arrays[k], old_arrays[k])
    # and a fresh fit round-trips, with landmarks too
    rng = np.random.default_rng(5)
    Xf = rng.normal(size=(12, 4))
    Y = np.tanh(Xf)
    labels = np.where(Xf > 0, "up", "down")
    for kw, target in (({}, Y), ({"n_landmarks": 10, "random_state": 0}, Y),
                       ({"output": "multiclass"}, labels)):
        est = _DeclaredLocalizedSELF(sigma=1.0, lam=1e-2, parts=Blocks(2, 2, 2), **kw).fit(
            Xf, target)
        est.save(tmp_path / "f.npz")
        a, m = load_npz(tmp_path / "f.npz")
        back = _load_estimator(_DeclaredLocalizedSELF, a, m, "'f.npz'")
        np.testing.assert_array_equal(back.predict(Xf[:4]), est.predict(Xf[:4]))
