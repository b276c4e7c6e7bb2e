"""Saved models: the .npz + JSON file format, the registry of loadable classes, the writer
and the reader of fitted estimators (never pickle: a model file must not run code).

Shared by every layer that saves models (``psdsos.sos``, ``psdsos.estimators``,
``psdsos.structured``); imports only the leaf :mod:`psdsos._validation`, the parameter
checks :mod:`psdsos._params` and the kernels (the lowest layer), whose objects are saved by
name.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from psdsos._params import validate_params
from psdsos._validation import PathLike, check_saved_arrays, check_saved_meta
from psdsos.kernels import KERNELS, Kernel, LinearKernel

__all__ = ["save_npz", "load_npz", "load", "register_loadable", "save_estimator"]

FORMAT_VERSION = 1


#: Metadata entry recording the shape of every array of the file.
_SHAPES_KEY = "array_shapes"


def _check_recorded_shapes(path, arrays, shapes):
    """Every array recorded at save time is present, with the recorded shape."""
    if not isinstance(shapes, dict):
        raise ValueError(f"{path!r}: metadata entry {_SHAPES_KEY!r} must be a JSON object, "
                         f"got {type(shapes).__name__}")
    for name, shape in shapes.items():
        if name not in arrays:
            raise ValueError(f"{path!r} has no array {name!r} (a required entry is missing)")
        if not isinstance(shape, list) or list(arrays[name].shape) != shape:
            raise ValueError(f"array {name!r} in {path!r} has shape {arrays[name].shape}, but "
                             f"the file was written with shape {shape} (truncated or altered)")


def save_npz(path: PathLike, arrays: Mapping[str, Any], meta: dict[str, Any]) -> None:
    """Write arrays and JSON metadata to one .npz file (metadata as a uint8 array)."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    # the shape of every array is recorded: a truncated or altered array is caught at load
    shapes = {k: list(v.shape) for k, v in arrays.items()}
    meta = {"format_version": FORMAT_VERSION, "library": "psdsos", **meta,
            _SHAPES_KEY: shapes}
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    path = os.fspath(path)
    np.savez(path, __meta__=payload, **arrays)


def load_npz(path: PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file written by :func:`save_npz` with ``allow_pickle=False``.

    Returns
    -------
    arrays : dict of str to ndarray
    meta : dict
        The JSON metadata (a JSON object with ``library = "psdsos"``).

    Raises
    ------
    FileNotFoundError
        If ``path`` (or ``path + ".npz"``) does not exist.
    ValueError
        If the file is not a readable .npz archive (truncated, corrupted, pickled objects),
        has no metadata, or its metadata is not a JSON object written by psdsos.
    """
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"no psdsos model file {path!r}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"cannot read psdsos model file {path!r}: {exc}") from None
    if not isinstance(arrays, dict):  # np.load of a plain .npy file gives an array
        raise ValueError(f"{path!r} is not a psdsos model file (not an .npz archive)")
    if "__meta__" not in arrays:
        raise ValueError(f"{path!r} is not a psdsos model file (no metadata)")
    raw = arrays.pop("__meta__")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(f"{path!r}: the metadata entry '__meta__' must be the bytes of a JSON "
                         f"text (uint8, 1-D), got dtype {raw.dtype} and shape {raw.shape}")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path!r}: the metadata '__meta__' is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path!r}: the metadata '__meta__' must be a JSON object, got a "
                         f"{type(meta).__name__}")
    if meta.get("library") != "psdsos":
        raise ValueError(f"{path!r} is not a psdsos model file")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"{path!r} has format_version {version!r}; this version of psdsos "
                         f"reads format_version {FORMAT_VERSION}")
    shapes = meta.pop(_SHAPES_KEY, None)
    if shapes is not None:
        _check_recorded_shapes(path, arrays, shapes)
    if not isinstance(meta.get("type"), str):
        raise ValueError(f"{path!r}: metadata entry 'type' must be a string naming the model "
                         f"class, got {meta.get('type')!r}")
    return arrays, meta


_LOADABLE: dict[str, Any] = {}


def register_loadable(cls):
    """Class decorator: make ``psdsos.load`` able to rebuild instances of ``cls``."""
    _LOADABLE[cls.__name__] = cls
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
    if typ == "PSDModel":
        from psdsos.sos import PSDModel

        return PSDModel.from_arrays(arrays, meta, source=source)
    cls = _LOADABLE.get(typ)
    if cls is None:
        raise ValueError(f"{source} holds an unknown model type {typ!r} (expected one of "
                         f"{sorted(['PSDModel', *_LOADABLE])})")
    check_saved_meta(meta, {"params": "dict", **cls._SAVED_META}, source=source)
    meta["params"] = _saved_params(cls, meta["params"], arrays, source)
    spec, symbols = cls._saved_arrays(meta, source=source)
    check_saved_arrays(arrays, spec, symbols=symbols, source=source,
                       any_dtype=getattr(cls, "_SAVED_ANY_DTYPE", ()))
    try:
        return cls._from_saved(arrays, meta)
    except (KeyError, TypeError, IndexError) as exc:  # a schema gap: still a ValueError
        raise ValueError(f"{source} is not a valid {typ} file: {type(exc).__name__} {exc}"
                         ) from None


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


def save_estimator(estimator, path, arrays, extra_meta):
    """Write a fitted estimator: its constructor params (JSON-able) plus arrays.

    An array-valued parameter (e.g. ConvexRegressor's ``constraint_points``) is stored as
    the array ``param_<name>`` (its JSON entry is ``{"array": "param_<name>"}``) and
    restored by :func:`load`.
    """
    params = {}
    arrays = dict(arrays)
    kernel_sigma = None
    for k, v in estimator.get_params(deep=False).items():
        if isinstance(v, LinearKernel):
            v = v.name
        if isinstance(v, Kernel):
            if type(v) not in KERNELS.values():
                raise ValueError(
                    f"cannot save {type(estimator).__name__} with a custom kernel object "
                    f"{v!r}: only built-in kernels are saved"
                )
            kernel_sigma = float(v.sigma)
            v = v.name
        if isinstance(v, np.random.Generator):
            v = None
        if isinstance(v, np.ndarray) and v.ndim > 0:
            arrays[_PARAM_ARRAY + k] = np.asarray(v, dtype=np.float64)
            v = {"array": _PARAM_ARRAY + k}
        if isinstance(v, (np.integer, np.floating, np.bool_, np.ndarray)):
            v = v.item()
        params[k] = v
    if kernel_sigma is not None:
        # a Kernel object carries its own bandwidth: it wins over the estimator's sigma
        params["sigma"] = kernel_sigma
    meta = {"type": type(estimator).__name__, "params": params, **extra_meta}
    save_npz(path, arrays, meta)
