"""The model file: arrays in a .npz archive with JSON metadata, written atomically and
checked when read (never pickle: a model file must not run code).

:func:`atomic_write` writes a temporary file in the destination's folder, flushed and
fsynced, then renamed onto the destination (``os.replace``), so a crash, a full disk or an
interrupt while saving leaves an existing file as it was and no partial file; the metadata
records a SHA-256 digest of the arrays (:func:`arrays_digest`), checked by
:func:`load_npz`.  The estimators' side of the format is :mod:`psdsos._persistence`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from typing import IO, Any

import numpy as np

from psdsos._validation import PathLike

__all__ = ["FORMAT_VERSION", "arrays_digest", "atomic_write", "load_npz", "npz_path",
           "save_npz"]


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


#: Metadata entry holding the SHA-256 digest of the arrays (:func:`arrays_digest`); files
#: written before it existed have none and load unchecked (format_version stays 1: an older
#: psdsos ignores the entry and reads the newer files).
_DIGEST_KEY = "arrays_sha256"


def arrays_digest(arrays: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a model file's arrays: for each array in the order of the sorted
    names, its name, dtype (``dtype.str``, byte order included) and shape as a JSON line,
    then its bytes in C order.  Any change of a value, dtype, shape, name, or an array added
    or removed changes it."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        A = np.asarray(arrays[name])
        h.update(json.dumps([name, A.dtype.str, list(A.shape)]).encode("utf-8") + b"\n")
        h.update((A if A.flags.c_contiguous else np.ascontiguousarray(A)).data)
    return h.hexdigest()


def npz_path(path: PathLike) -> str:
    """The file :func:`save_npz` writes for ``path``: ``path`` itself when it ends in
    ``".npz"``, else ``path + ".npz"`` (numpy's rule for ``np.savez``)."""
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def _umask() -> int:
    """The process's umask (from /proc where it is shown, else set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it is replaced whole or not at all.

    The file object is a temporary file in ``path``'s folder (``tempfile.mkstemp``); when the
    ``with`` block ends normally it is flushed, fsynced, given the permissions ``path`` has
    (or the umask's default for a new file) and renamed onto ``path`` with ``os.replace``
    (atomic on POSIX and Windows).  On any exception, ``KeyboardInterrupt`` included, the
    temporary file is removed and the exception re-raised: an existing ``path`` is left
    untouched.  A symbolic link is followed (its target is replaced); a destination that
    exists but is not a regular file (``/dev/stdout``, a pipe) is written in place.

    Parameters
    ----------
    path : str or path-like
        The destination; its folder must exist.
    mode : str
        ``"wb"`` or ``"w"`` (text; ``open_kwargs`` such as ``encoding``, ``newline`` are
        passed to :func:`os.fdopen`).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    if os.path.islink(path):
        path = os.path.realpath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, mode, **open_kwargs) as fh:  # a device or a pipe: nothing to rename
            yield fh
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        try:
            fh = os.fdopen(fd, mode, **open_kwargs)
        except BaseException:
            os.close(fd)
            raise
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:
            perm = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            perm = 0o666 & ~_umask()
        os.chmod(tmp, perm)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def save_npz(path: PathLike, arrays: Mapping[str, Any], meta: dict[str, Any]) -> None:
    """Write arrays and JSON metadata to one .npz file (metadata as a uint8 array).

    The file is ``path``, with ``".npz"`` appended when ``path`` does not end in it
    (:func:`npz_path`).  It is written atomically (:func:`atomic_write`): an existing file
    is replaced only once the new one is complete on disk.  The metadata records the shape
    of every array and the SHA-256 digest of the arrays (:func:`arrays_digest`), both
    checked by :func:`load_npz`.
    """
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    # the shape of every array is recorded: a truncated or altered array is caught at load
    shapes = {k: list(v.shape) for k, v in arrays.items()}
    meta = {"format_version": FORMAT_VERSION, "library": "psdsos", **meta,
            _SHAPES_KEY: shapes, _DIGEST_KEY: arrays_digest(arrays)}
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with atomic_write(npz_path(path)) as fh:
        np.savez(fh, __meta__=payload, **arrays)  # a file object: numpy appends nothing


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
        has no metadata, or its metadata is not a JSON object written by psdsos, or if its
        arrays do not match the SHA-256 digest recorded in its metadata (altered or
        corrupted after it was written).  Files written before the digest existed (psdsos
        earlier than the entry ``arrays_sha256``) have none and are read without that check.
    """
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path = path + ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"no psdsos model file {path!r}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"cannot read psdsos model file {path!r}: the file is damaged "
                         f"(truncated or corrupted): {type(exc).__name__}: {exc}") from None
    except (OSError, ValueError, KeyError) as exc:
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
    digest = meta.pop(_DIGEST_KEY, None)
    if digest is not None:  # None: written before the digest existed
        if not isinstance(digest, str):
            raise ValueError(f"{path!r}: metadata entry {_DIGEST_KEY!r} must be a string "
                             f"(a SHA-256 hex digest), got {digest!r}")
        if arrays_digest(arrays) != digest:
            raise ValueError(f"{path!r} was altered or corrupted after it was written: its "
                             f"arrays do not match the SHA-256 digest recorded in its "
                             f"metadata ({_DIGEST_KEY!r})")
    if not isinstance(meta.get("type"), str):
        raise ValueError(f"{path!r}: metadata entry 'type' must be a string naming the model "
                         f"class, got {meta.get('type')!r}")
    return arrays, meta
