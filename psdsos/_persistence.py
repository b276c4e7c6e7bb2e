"""Saved models: the .npz + JSON file format, the registry of loadable classes, the writer
and the reader of fitted estimators (never pickle: a model file must not run code).

Shared by every layer that saves models (``psdsos.sos``, ``psdsos.estimators``,
``psdsos.structured``); imports only the leaf :mod:`psdsos._validation`, the parameter
checks :mod:`psdsos._params` and the kernels (the lowest layer), whose objects are saved by
name.

The file itself (the .npz archive, its atomic writer and its checked reader) is
:mod:`psdsos._npz`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np
from sklearn.utils.validation import check_is_fitted

from psdsos._npz import (
    _DIGEST_KEY,
    _SHAPES_KEY,
    arrays_digest,
    atomic_write,
    load_npz,
    npz_path,
    save_npz,
)
from psdsos._params import validate_params
from psdsos._validation import PathLike, check_saved_arrays, check_saved_meta
from psdsos.kernels import KERNELS, Kernel, LinearKernel

__all__ = ["save_npz", "load_npz", "load", "register_loadable", "register_loader",
           "SavedEstimator", "SavedArray", "SavedScalar", "label_array", "atomic_write",
           "arrays_digest", "npz_path", "embed_estimator", "load_embedded", "kernel_by_name"]

T = TypeVar("T")


#: ``type`` entry of a model file -> the function rebuilding the object from the file's
#: (arrays, metadata, source); filled by :func:`register_loadable` and :func:`register_loader`.
_LOADABLE: dict[str, Callable[[dict[str, np.ndarray], dict[str, Any], str], Any]] = {}


def register_loader(name: str,
                    loader: Callable[[dict[str, np.ndarray], dict[str, Any], str], Any]) -> None:
    """Make :func:`load` rebuild files of type ``name`` with ``loader(arrays, meta, source)``
    (``source``: the file, quoted, for messages)."""
    _LOADABLE[name] = loader


def register_loadable(cls: type[T]) -> type[T]:
    """Class decorator: make ``psdsos.load`` able to rebuild instances of ``cls``.

    ``cls`` declares its file: it is a :class:`SavedEstimator`.
    """
    if not issubclass(cls, SavedEstimator):
        raise TypeError(f"{cls.__name__} must be a SavedEstimator to be loadable")
    register_loader(cls.__name__, functools.partial(_load_estimator, cls))
    return cls


def load(path: PathLike) -> Any:
    """Load a model saved with ``estimator.save(path)`` (.npz + JSON, no pickle).

    The file is checked before anything is built: its metadata against the estimator's
    schema (``_SAVED_META``), its constructor parameters against the estimator's own
    ``_parameter_constraints`` (an unknown parameter name is refused too), and its arrays
    against the array schema (``_saved_arrays``): every required array present, finite, and
    of shapes consistent with each other and with the metadata.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    The fitted estimator (or PSDModel) stored in the file.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path`` (nor at ``path + ".npz"``).
    ValueError
        If the file is not a valid psdsos model file; the message names the entry (array,
        metadata entry or parameter) at fault.
    """
    arrays, meta = load_npz(path)
    source = repr(os.fspath(path))
    typ = meta["type"]
    loader = _LOADABLE.get(typ)
    if loader is None:
        raise ValueError(f"{source} holds an unknown model type {typ!r} (expected one of "
                         f"{sorted(_LOADABLE)})")
    return loader(arrays, meta, source)


def _load_estimator(cls, arrays, meta, source):
    """The checks of :func:`load` in order (metadata, parameters, arrays), then the build."""
    check_saved_meta(meta, {"params": "dict", **cls._SAVED_META}, source=source)
    meta["params"] = _saved_params(cls, meta["params"], arrays, source)
    spec, symbols = cls._saved_arrays(meta, source=source)
    check_saved_arrays(arrays, spec, symbols=symbols, source=source,
                       any_dtype=cls._SAVED_ANY_DTYPE)
    try:
        return cls._from_saved(arrays, meta, source=source)
    except (KeyError, TypeError, IndexError) as exc:  # a schema gap: still a ValueError
        raise ValueError(f"{source} is not a valid {cls.__name__} file: "
                         f"{type(exc).__name__} {exc}") from None


def embed_estimator(est: SavedEstimator, prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file of the fitted ``est`` (:meth:`SavedEstimator._saved_file`) as part of another
    estimator's file: its arrays renamed ``prefix + name``, its metadata (type, parameters,
    fitted scalars) to be stored as one metadata entry.  Read back by
    :func:`load_embedded`."""
    arrays, meta = est._saved_file()
    return {prefix + k: v for k, v in arrays.items()}, meta


def load_embedded(cls: type[T], arrays: Mapping[str, np.ndarray], meta: Any, prefix: str,
                  source: str) -> T:
    """The estimator of class ``cls`` embedded by :func:`embed_estimator` in a file whose
    arrays are ``arrays`` and whose metadata entry for it is ``meta``: checked as
    :func:`load` checks a file of its own (metadata, parameters, arrays; ``source`` names
    it in the messages), then built.  A ``type`` other than ``cls``'s name is refused."""
    if not isinstance(meta, dict) or meta.get("type") != cls.__name__:
        got = meta.get("type") if isinstance(meta, dict) else meta
        raise ValueError(f"{source} must hold a {cls.__name__} (metadata entry 'type'), got "
                         f"{got!r}")
    inner = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
    return _load_estimator(cls, inner, dict(meta), source)


#: Prefix of the arrays that hold array-valued constructor parameters.
_PARAM_ARRAY = "param_"


def _saved_params(cls, params, arrays, source):
    """The constructor parameters of a saved estimator, validated like ``fit`` does."""
    names = cls._get_param_names()
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(f"{source}: unknown parameter(s) {unknown} for {cls.__name__} "
                         f"(its parameters are {names})")
    params = dict(params)
    for name in names:
        key = _PARAM_ARRAY + name
        if params.get(name) == {"array": key}:
            if key not in arrays:
                raise ValueError(f"{source} has no array {key!r} (a required entry is "
                                 f"missing: the parameter {name})")
            A = arrays[key]
            if A.dtype.kind not in "fiu" or not np.all(np.isfinite(A)):
                raise ValueError(f"array {key!r} in {source} (the parameter {name}) is not "
                                 "numeric or contains NaN or infinite values")
            params[name] = A.astype(np.float64)
    try:
        validate_params(cls(**params))
    except ValueError as exc:
        raise ValueError(f"{source} holds an invalid parameter: {exc}") from None
    return params


def kernel_by_name(kernel: Kernel, owner: str) -> tuple[str, float]:
    """(name, bandwidth) under which a Kernel object of a registered class is saved; a
    ValueError naming ``owner`` for any other kernel object (saved models never use
    pickle)."""
    if type(kernel) not in KERNELS.values():
        raise ValueError(f"cannot save {owner} with a custom kernel object {kernel!r}: only "
                         "kernels registered with psdsos.kernels.register_kernel are saved "
                         "(by name)")
    return kernel.name, float(kernel.sigma)


def _encode_params(owner, params, arrays):
    """The constructor parameters as JSON values; array-valued ones go to ``arrays``.

    A kernel object of a registered class is saved by name, its bandwidth replacing ``sigma`` (a
    Kernel object carries its own bandwidth); a numpy Generator as None (not saved).
    """
    out = {}
    kernel_sigma = None
    for k, v in params.items():
        if isinstance(v, LinearKernel):
            v = v.name
        if isinstance(v, Kernel):
            v, kernel_sigma = kernel_by_name(v, owner)
        if isinstance(v, np.random.Generator):
            v = None
        if isinstance(v, np.ndarray) and v.ndim > 0:
            arrays[_PARAM_ARRAY + k] = np.asarray(v, dtype=np.float64)
            v = {"array": _PARAM_ARRAY + k}
        if isinstance(v, (np.integer, np.floating, np.bool_, np.ndarray)):
            v = v.item()
        out[k] = v
    if kernel_sigma is not None:
        out["sigma"] = kernel_sigma
    return out


# ---- declared files: one writer and one reader for every estimator ----------------------
class SavedArray:
    """A fitted array of a saved estimator (an entry of ``_fitted_arrays``).

    Parameters
    ----------
    shape : tuple or callable
        Its shape in the notation of :func:`psdsos._validation.check_saved_arrays` (ints,
        dimension names shared with the other arrays and the metadata, ``"r*d"``, None,
        ``...``), or ``shape(meta)`` when it depends on the file's metadata.
    attr : str, optional
        The estimator attribute written and restored (default: the array name + ``"_"``);
        ``""``: written by the estimator's ``_saved_extra`` and read by its
        ``_restore_saved`` (the array is only declared, for the checks).
    dtype : numpy dtype, optional
        The dtype the attribute is restored with (default: as stored).
    when : callable, optional
        ``when(meta)``: whether the file must hold the array (e.g. only for
        ``representation="exact"``); such an array is written when its attribute is not
        None.  An array name ending in ``"?"`` is optional (files written before it existed).
    labels : bool
        The array may hold labels (strings) instead of numbers; an object array of strings
        is saved as strings, any other object array is refused (never pickle).
    """

    __slots__ = ("shape", "attr", "dtype", "when", "labels")

    def __init__(self, shape: tuple | Callable[[dict[str, Any]], tuple],
                 attr: str | None = None, *, dtype: Any = None,
                 when: Callable[[dict[str, Any]], bool] | None = None,
                 labels: bool = False) -> None:
        self.shape, self.attr, self.dtype = shape, attr, dtype
        self.when, self.labels = when, labels


class SavedScalar:
    """A fitted scalar of a saved estimator (an entry of ``_fitted_scalars``, stored in the
    metadata entry ``"fitted"``) whose attribute is not its name: ``attr``, or ``""`` when
    the estimator's hooks write and read it."""

    __slots__ = ("kind", "attr")

    def __init__(self, kind: Any, attr: str) -> None:
        self.kind, self.attr = kind, attr


def _scalar(key, spec):
    """(kind, attribute) of a ``_fitted_scalars`` entry (a bare kind: attribute = key)."""
    if isinstance(spec, SavedScalar):
        return spec.kind, spec.attr
    return spec, key.rstrip("?")


def _as_kind(value, kind):
    """``value`` as the JSON type of its metadata kind (numpy scalars become Python's)."""
    if kind in ("int", "posint"):
        return int(value)
    if kind in ("real", "real*"):
        return float(value)
    if kind == "bool":
        return bool(value)
    return value


def label_array(values: Any, owner: str) -> np.ndarray:
    """Training labels as a savable array: an object array of strings (e.g. a pandas column)
    becomes a string array; any other object array is refused (saved models never use
    pickle)."""
    A = np.asarray(values)
    if A.dtype == object and all(isinstance(v, str) for v in A.ravel()):
        A = A.astype(str)
    if A.dtype == object:
        raise ValueError(f"cannot save {owner} trained on labels of dtype object (saved "
                         "models never use pickle): use numbers or strings as labels")
    return A


#: Metadata keys of the file itself, which ``save(metadata=...)`` must not use.
RESERVED_KEYS = frozenset({"type", "params", "fitted", "format_version", "library",
                           _SHAPES_KEY, _DIGEST_KEY})


class SavedEstimator:
    """Mixin of the estimators saved by :func:`psdsos.load`'s one writer and one reader.

    A subclass declares its file once:

    - ``_saved_fitted_attr``: the attribute of a fitted estimator (``save`` refuses an
      unfitted one);
    - ``_fitted_arrays``: ``{name: SavedArray}``, the arrays of the .npz file;
    - ``_fitted_scalars``: ``{name: kind or SavedScalar}``, the metadata entry ``"fitted"``
      (kinds of :func:`psdsos._validation.check_saved_meta`);
    - ``_saved_meta``: the schema of its other metadata entries;
    - ``_saved_dims``: dimensions known from the metadata, ``{"p": "fitted.n_features_in_"}``;

    and overrides the hooks for what is its own (a kernel object, a feature map, an output
    space, class labels): ``_saved_param_values`` (constructor parameters saved other than
    as set), ``_saved_extra`` (more arrays and metadata), ``_saved_spec`` (a schema that
    depends on the file), ``_saved_constructor_params`` and ``_restore_saved``.

    The file: the constructor parameters (``get_params``, array-valued ones as arrays
    ``param_<name>``), the declared arrays and scalars; loading checks the metadata, the
    parameters (``_parameter_constraints``), every array (present, numeric, finite, shapes
    consistent) before anything is built; ``allow_pickle=False`` throughout.
    """

    _saved_fitted_attr: ClassVar[str] = ""
    _fitted_arrays: ClassVar[dict[str, SavedArray]] = {}
    _fitted_scalars: ClassVar[dict[str, Any]] = {}
    _saved_meta: ClassVar[dict[str, Any]] = {}
    _saved_dims: ClassVar[dict[str, str]] = {}
    # derived from the declarations (the schema psdsos.load checks first)
    _SAVED_META: ClassVar[dict[str, Any]] = {}
    _SAVED_ANY_DTYPE: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fitted = {k: _scalar(k, v)[0] for k, v in cls._fitted_scalars.items()}
        cls._SAVED_META = {**cls._saved_meta, **({"fitted": fitted} if fitted else {})}
        cls._SAVED_ANY_DTYPE = tuple(k.rstrip("?") for k, a in cls._fitted_arrays.items()
                                     if a.labels)

    # ---- writer ---------------------------------------------------------------------------
    def save(self, path: PathLike) -> None:
        """Save the fitted estimator to ``path`` (.npz + JSON metadata; loaded by
        :func:`psdsos.load` without pickle)."""
        self._save(path)

    def _save(self, path, metadata=None):
        arrays, meta = self._saved_file(metadata)
        save_npz(path, arrays, meta)

    def _saved_file(self, metadata=None):
        """(arrays, metadata) of the file :meth:`save` writes (before :func:`save_npz` adds
        the format version, the shapes and the digest); also what an estimator holding
        this one embeds in its own file (:func:`load_embedded`)."""
        check_is_fitted(self, self._saved_fitted_attr)
        owner = type(self).__name__
        params = {**self.get_params(deep=False), **self._saved_param_values()}
        arrays, meta = self._saved_extra()
        fitted = {}
        for key, spec in self._fitted_scalars.items():
            kind, attr = _scalar(key, spec)
            if attr and (not key.endswith("?") or getattr(self, attr, None) is not None):
                fitted[key.rstrip("?")] = _as_kind(getattr(self, attr), kind)
        fitted.update(meta.pop("fitted", {}))
        for key, a in self._fitted_arrays.items():
            name = key.rstrip("?")
            if a.attr == "" or name in arrays:
                continue
            value = getattr(self, a.attr or name + "_", None)
            if value is not None:
                arrays[name] = value
            elif a.when is None and not key.endswith("?"):
                raise ValueError(f"cannot save {owner}: its fitted array {name!r} is None")
        for key, a in self._fitted_arrays.items():
            if a.labels and key.rstrip("?") in arrays:
                arrays[key.rstrip("?")] = label_array(arrays[key.rstrip("?")], owner)
        if fitted:
            meta["fitted"] = fitted
        if metadata:
            clash = RESERVED_KEYS.intersection(metadata)
            if clash:
                raise ValueError(f"metadata must not use the reserved keys {sorted(clash)}")
            meta.update(metadata)
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        for name, A in arrays.items():
            if A.dtype == object:  # np.savez would pickle it
                raise ValueError(f"cannot save {owner}: array {name!r} holds Python objects "
                                 "(saved models never use pickle)")
        json_params = _encode_params(owner, params, arrays)
        return arrays, {"type": owner, "params": json_params, **meta}

    def _saved_param_values(self):
        """Constructor parameters saved with another value than they have (e.g. an output
        space object by its name), checked savable; ``{}`` by default."""
        return {}

    def _saved_extra(self):
        """(arrays, metadata entries) beyond the declared ones; ``({}, {})`` by default.  A
        ``"fitted"`` entry is merged into the declared fitted scalars."""
        return {}, {}

    # ---- reader ---------------------------------------------------------------------------
    @classmethod
    def _saved_arrays(cls, meta, *, source="the model file"):
        """(array schema, known dimensions) of a file whose metadata is ``meta``."""
        spec = {}
        for name, a in cls._fitted_arrays.items():
            if a.when is None or a.when(meta):
                spec[name] = a.shape(meta) if callable(a.shape) else a.shape
        symbols = {"_from": {}}
        for sym, entry in cls._saved_dims.items():
            value = meta
            for part in entry.split("."):
                value = value[part]
            symbols[sym] = value
            symbols["_from"][sym] = f"metadata entry {entry!r}"
        return cls._saved_spec(spec, symbols, meta, source)

    @classmethod
    def _saved_spec(cls, spec, symbols, meta, source):
        """Hook: the declared (spec, symbols) completed with what depends on the file."""
        return spec, symbols

    @classmethod
    def _saved_constructor_params(cls, meta):
        """Hook: the constructor parameters of the saved estimator (validated already)."""
        return dict(meta["params"])

    @classmethod
    def _from_saved(cls, arrays, meta, *, source="the model file"):
        """The estimator of a checked file: constructor, declared arrays and scalars, then
        ``_restore_saved`` for the rest."""
        est = cls(**cls._saved_constructor_params(meta))
        for name, a in cls._fitted_arrays.items():
            name = name.rstrip("?")
            if a.attr == "" or name not in arrays:
                continue
            A = arrays[name]
            setattr(est, a.attr or name + "_",
                    A if a.dtype is None else np.asarray(A, dtype=a.dtype))
        fitted = meta.get("fitted", {})
        for key, spec in cls._fitted_scalars.items():
            kind, attr = _scalar(key, spec)
            if attr and key.rstrip("?") in fitted:
                setattr(est, attr, _as_kind(fitted[key.rstrip("?")], kind))
        est._restore_saved(arrays, meta, source)
        return est

    def _restore_saved(self, arrays, meta, source):
        """Hook: restore what the declarations do not (a kernel, a feature map, ...)."""
