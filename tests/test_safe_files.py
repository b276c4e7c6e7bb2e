"""Files that survive faults (psdsos._npz.atomic_write, the arrays' digest).

- a save that fails half-way (full disk, any exception, KeyboardInterrupt) leaves an existing
  model file byte-identical and no temporary file in its folder; the first save of a file
  leaves nothing at all;
- the naming rule of ``save`` is numpy's (``".npz"`` appended when missing), the permissions
  of a replaced file are kept, a new file gets the umask's, a symbolic link is followed;
- every file records the SHA-256 digest of its arrays, checked at load: an altered array,
  a truncated file, damaged zip data are refused with a ValueError naming the file and
  saying what is wrong; files without a digest (older psdsos) still load;
- the command line: ``convex-predict --out`` replaces its CSV whole or not at all;
  ``convex-fit --model`` writes only after the fit and search have ended, so an interrupted
  search, or a save failing half-way, leaves an existing model file as it was.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import pathlib
import stat

import numpy as np
import pytest

import psdsos
from psdsos._npz import arrays_digest, atomic_write, npz_path
from psdsos.cli import COLUMNS_KEY

#: The fixtures' non-convex ConvexRegressor fit warns (a small sigma, few constraint points).
pytestmark = pytest.mark.filterwarnings("ignore::psdsos.estimators.NonConvexFitWarning")

DATA = pathlib.Path(__file__).resolve().parent / "data" / "persistence"
#: Model files of the previous savers (no digest): every loadable type.
KINDS = sorted(p.stem for p in DATA.glob("*.npz") if p.stem != "expected")
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and links")


def _read(path):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))


def _rewrite(path, arrays, meta):
    """A model file with ``arrays`` under the metadata ``meta`` as it is (its recorded shapes
    and digest are not updated)."""
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(path, __meta__=payload, **arrays)


def _predict(model, X):
    return model(X) if isinstance(model, psdsos.sos.PSDModel) else model.predict(X)


@pytest.fixture
def convex():
    """A fitted ConvexRegressor (read from a fixture file: no fit)."""
    return psdsos.load(DATA / "ConvexRegressor.npz")


class _FailingFile:
    """A file object that raises ``exc`` once ``limit`` bytes have been written (the first
    ``limit`` reach the file: a write failing half-way), after listing the folder."""

    def __init__(self, fh, limit, exc, folder, seen):
        self._fh, self._limit, self._exc = fh, limit, exc
        self._folder, self._seen, self._written = folder, seen, 0

    def write(self, data):
        if self._exc is not None and self._written + len(data) > self._limit:
            keep = self._limit - self._written
            self._fh.write(bytes(data[:keep]))
            self._fh.flush()
            self._seen.append({p.name: p.stat().st_size for p in self._folder.iterdir()})
            exc, self._exc = self._exc, None  # once (the writer's cleanup may write more)
            raise exc
        self._written += len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)


def _fail_savez_halfway(monkeypatch, exc, folder, limit=600):
    """np.savez writes ``limit`` bytes of the archive, then raises ``exc``; returns the
    listings of ``folder`` taken at the failure."""
    real = np.savez
    seen = []

    def savez(file, *args, **kwds):
        assert hasattr(file, "write"), "the model file must be written through a file object"
        return real(_FailingFile(file, limit, exc, folder, seen), *args, **kwds)

    monkeypatch.setattr(np, "savez", savez)
    return seen


FAULTS = [OSError(errno.ENOSPC, "No space left on device"), RuntimeError("writer bug"),
          KeyboardInterrupt()]


# ---------------------------------------------------------------------------------------
# atomic saves
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("exc", FAULTS, ids=lambda e: type(e).__name__)
def test_failed_save_leaves_the_existing_model_byte_identical(convex, exc, tmp_path,
                                                               monkeypatch):
    path = tmp_path / "model.npz"
    convex.save(path, metadata={"version": "old"})
    before = path.read_bytes()
    seen = _fail_savez_halfway(monkeypatch, exc, tmp_path)
    with pytest.raises(type(exc)):
        convex.save(path, metadata={"version": "new"})
    # the new file was being written beside the old one, which was never opened
    (listing,) = seen
    assert len(listing) == 2 and "model.npz" in listing
    (tmp,) = [n for n in listing if n != "model.npz"]
    assert tmp.endswith(".tmp") and listing[tmp] == 600
    assert listing["model.npz"] == len(before)
    # afterwards: the old file, byte for byte, and nothing else
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]
    monkeypatch.undo()
    X = convex.X_fit_[:5]
    np.testing.assert_array_equal(psdsos.load(path).predict(X), convex.predict(X))
    # and a save that succeeds replaces it
    convex.save(path, metadata={"version": "new"})
    assert psdsos.sos.load_npz(path)[1]["version"] == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]


@pytest.mark.parametrize("kind", ["PSDModel", "PSDRegressor", "SELFEstimator"])
def test_interrupted_first_save_leaves_no_file(kind, tmp_path, monkeypatch):
    model = psdsos.load(DATA / f"{kind}.npz")
    _fail_savez_halfway(monkeypatch, KeyboardInterrupt(), tmp_path, limit=100)
    with pytest.raises(KeyboardInterrupt):
        model.save(tmp_path / "model.npz")
    assert list(tmp_path.iterdir()) == []


def test_failure_before_writing_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    with pytest.raises(ZeroDivisionError), atomic_write(path, "w") as fh:
        fh.write("new\n")
        1 / 0  # noqa: B018
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb'"), \
            atomic_write(path, "a"):
        pass


@pytest.mark.parametrize("name", ["m", "m.npz", "m.NPZ", "m.npz.bak", "m."])
def test_save_names_files_as_numpy_does(convex, name, tmp_path):
    ref, mine = tmp_path / "numpy", tmp_path / "psdsos"
    ref.mkdir()
    mine.mkdir()
    np.savez(ref / name, a=np.zeros(1))
    convex.save(mine / name)
    assert [p.name for p in mine.iterdir()] == [p.name for p in ref.iterdir()]
    assert pathlib.Path(npz_path(mine / name)).name == next(ref.iterdir()).name
    # and load finds it under the name given to save
    back = psdsos.load(mine / name)
    np.testing.assert_array_equal(back.predict(convex.X_fit_[:3]),
                                  convex.predict(convex.X_fit_[:3]))


@POSIX
def test_permissions_kept_or_from_the_umask(convex, tmp_path):
    path = tmp_path / "m.npz"
    old = os.umask(0o027)
    try:
        convex.save(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o640  # as open() would create it
        path.chmod(0o604)
        convex.save(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o604  # the replaced file's
    finally:
        os.umask(old)


@POSIX
def test_symbolic_link_is_followed(convex, tmp_path):
    target = tmp_path / "real.npz"
    convex.save(target, metadata={"version": "old"})
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    convex.save(link, metadata={"version": "new"})
    assert link.is_symlink()
    assert psdsos.sos.load_npz(target)[1]["version"] == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npz", "real.npz"]


@POSIX
def test_a_device_is_written_in_place():
    with atomic_write(os.devnull, "w") as fh:
        fh.write("discarded\n")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


# ---------------------------------------------------------------------------------------
# the arrays' digest
# ---------------------------------------------------------------------------------------
def test_digest_covers_names_dtypes_shapes_and_bytes():
    A = np.arange(6.0).reshape(2, 3)
    base = arrays_digest({"A": A, "b": np.array([1, 2])})
    assert len(base) == 64 and int(base, 16) >= 0
    assert arrays_digest({"b": np.array([1, 2]), "A": A}) == base  # order of the mapping
    assert arrays_digest({"b": np.array([1, 2]), "A": np.asfortranarray(A)}) == base
    changed = [
        {"A": A.reshape(3, 2), "b": np.array([1, 2])},                      # shape
        {"A": A.view(np.int64), "b": np.array([1, 2])},                     # dtype
        {"A": A.astype(">f8"), "b": np.array([1, 2])},                      # byte order
        {"A2": A, "b": np.array([1, 2])},                                   # name
        {"A": A, "b": np.array([1, 3])},                                    # a value
        {"A": A},                                                           # an array less
        {"A": A, "b": np.array([1, 2]), "c": np.zeros(0)},                  # one more
    ]
    for arrays in changed:
        assert arrays_digest(arrays) != base
    # strings and 0-d arrays too
    assert arrays_digest({"s": np.array(["a", "b"])}) != arrays_digest({"s": np.array(["ab"])})
    assert arrays_digest({"x": np.float64(1.0)}) != arrays_digest({"x": np.array([1.0])})


@pytest.mark.parametrize("kind", KINDS)
def test_saved_file_records_the_digest_of_its_arrays(kind, tmp_path):
    model = psdsos.load(DATA / f"{kind}.npz")
    model.save(tmp_path / "m.npz")
    arrays, meta = _read(tmp_path / "m.npz")
    assert meta["arrays_sha256"] == arrays_digest(arrays)
    assert meta["format_version"] == 1  # older psdsos ignore the entry and read the file


@pytest.mark.parametrize("kind", KINDS)
def test_altered_array_refused_naming_the_file(kind, tmp_path):
    """One value changed by one ulp, shapes and finiteness intact: only the digest sees it."""
    model = psdsos.load(DATA / f"{kind}.npz")
    model.save(tmp_path / "m.npz")
    arrays, meta = _read(tmp_path / "m.npz")
    floats = [k for k, A in arrays.items() if A.dtype.kind == "f" and A.size]
    assert floats
    bad = tmp_path / "altered.npz"
    for name in floats:
        A = arrays[name].copy()
        A.flat[A.size // 2] = np.nextafter(A.flat[A.size // 2], np.inf)
        _rewrite(bad, {**arrays, name: A}, meta)
        with pytest.raises(ValueError, match="altered or corrupted after it was written") as info:
            psdsos.load(bad)
        assert repr(str(bad)) in str(info.value)
        assert "SHA-256" in str(info.value)
    # the unchanged arrays under the same metadata load
    _rewrite(bad, arrays, meta)
    psdsos.load(bad)


def test_damaged_files_refused_naming_the_file(convex, tmp_path):
    path = tmp_path / "m.npz"
    convex.save(path)
    raw = path.read_bytes()
    bad = tmp_path / "bad.npz"
    # truncated (a full disk, an interrupted copy)
    for cut in (len(raw) // 2, len(raw) - 1):
        bad.write_bytes(raw[:cut])
        with pytest.raises(ValueError, match="damaged \\(truncated or corrupted\\)") as info:
            psdsos.load(bad)
        assert repr(str(bad)) in str(info.value)
    # one bit flipped inside an array's data: the zip member's CRC-32 sees it
    data = convex.alpha_.tobytes()
    at = raw.index(data) + len(data) // 2
    bad.write_bytes(raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1:])
    with pytest.raises(ValueError, match="damaged \\(truncated or corrupted\\).*CRC") as info:
        psdsos.load(bad)
    assert repr(str(bad)) in str(info.value)
    # not a zip archive at all
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    with pytest.raises(ValueError, match="cannot read psdsos model file") as info:
        psdsos.load(bad)
    assert repr(str(bad)) in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_files_without_a_digest_still_load(kind, tmp_path):
    """Files of psdsos before the digest (the fixtures) load unchecked, and so does a new
    file whose digest entry was removed (documented: the digest detects damage, it is no
    signature)."""
    arrays, meta = _read(DATA / f"{kind}.npz")
    assert "arrays_sha256" not in meta
    psdsos.load(DATA / f"{kind}.npz")
    psdsos.load(DATA / f"{kind}.npz").save(tmp_path / "m.npz")
    arrays, meta = _read(tmp_path / "m.npz")
    del meta["arrays_sha256"]
    _rewrite(tmp_path / "stripped.npz", arrays, meta)
    psdsos.load(tmp_path / "stripped.npz")


def test_digest_entry_checked_and_reserved(convex, tmp_path):
    convex.save(tmp_path / "m.npz")
    arrays, meta = _read(tmp_path / "m.npz")
    _rewrite(tmp_path / "bad.npz", arrays, {**meta, "arrays_sha256": 12})
    with pytest.raises(ValueError, match="'arrays_sha256' must be a string") as info:
        psdsos.load(tmp_path / "bad.npz")
    assert repr(str(tmp_path / "bad.npz")) in str(info.value)
    with pytest.raises(ValueError, match="reserved keys"):
        convex.save(tmp_path / "m.npz", metadata={"arrays_sha256": "0" * 64})


# ---------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------
#: One candidate, primal interior point (as tests/test_cli_convex.py).
FAST = ["--cv", "2", "--rho", "1e-3", "--lam2", "1e-3", "--sigma", "2", "--solver", "primal",
        "--quiet"]


def _run(argv):
    from psdsos.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *rows])
    return str(path)


def _training_csv(path, n=20):
    from psdsos.datasets import make_convex_regression

    X, y = make_convex_regression(n, 1, noise=0.1, random_state=0)
    return _write_csv(path, ["x", "y"], [[repr(float(a)), repr(float(b))]
                                        for a, b in zip(X[:, 0], y, strict=True)])


@pytest.mark.parametrize("exc", FAULTS, ids=lambda e: type(e).__name__)
def test_predict_csv_replaced_whole_or_not_at_all(convex, exc, tmp_path, monkeypatch):
    from psdsos.cli._fit_common import _save_model

    model = _save_model(convex, tmp_path / "model", ["x"], "y")
    assert model == str(tmp_path / "model.npz")
    rows = [[repr(float(v))] for v in np.linspace(-0.9, 0.9, 50)]
    data = _write_csv(tmp_path / "new.csv", ["x"], rows)
    out = tmp_path / "pred.csv"
    out.write_text("previous predictions\n")
    real = csv.writer

    def failing_writer(fh, **kw):
        w = real(fh, **kw)

        class Writer:
            n = 0

            def writerow(self, row):
                Writer.n += 1
                if Writer.n == 20:
                    fh.flush()
                    raise exc
                return w.writerow(row)

        return Writer()

    monkeypatch.setattr(csv, "writer", failing_writer)
    argv = ["convex-predict", model, data, "--out", str(out)]
    if isinstance(exc, (OSError, RuntimeError)):  # reported by the command line: exit 1
        code, _, err = _run(argv)
        assert code == 1 and str(exc.args[-1]) in err
    else:
        with pytest.raises(type(exc)):
            _run(argv)
    assert out.read_text() == "previous predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz", "new.csv", "pred.csv"]
    monkeypatch.undo()
    code, _, err = _run(argv)
    assert code == 0, err
    with open(out, newline="") as fh:
        written = list(csv.reader(fh))
    assert written[0] == ["x", "y_predicted"] and len(written) == 51
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz", "new.csv", "pred.csv"]


def test_interrupted_search_leaves_the_existing_model(convex, tmp_path, monkeypatch):
    import psdsos.model_selection

    data = _training_csv(tmp_path / "train.csv")
    model = tmp_path / "model.npz"
    convex.save(model)
    before = model.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(psdsos.model_selection, "grid_search_cv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(["convex-fit", data, "--target", "y", *FAST, "--model", str(model)])
    assert model.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz", "train.csv"]


@pytest.mark.parametrize("exc", [FAULTS[0], FAULTS[2]], ids=lambda e: type(e).__name__)
def test_fit_whose_save_fails_halfway_leaves_the_existing_model(convex, exc, tmp_path,
                                                                monkeypatch):
    data = _training_csv(tmp_path / "train.csv")
    model = tmp_path / "model.npz"
    convex.save(model)
    before = model.read_bytes()
    seen = _fail_savez_halfway(monkeypatch, exc, tmp_path)
    argv = ["convex-fit", data, "--target", "y", *FAST, "--model", str(model)]
    if isinstance(exc, OSError):
        code, _, err = _run(argv)
        assert code == 1 and "No space left on device" in err
    else:
        with pytest.raises(KeyboardInterrupt):
            _run(argv)
    assert len(seen) == 1  # the fit ended and its save began
    assert model.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz", "train.csv"]
    # without the fault the same command replaces the file
    monkeypatch.undo()
    code, _, err = _run(argv)
    assert code == 0, err
    assert model.read_bytes() != before
    assert psdsos.sos.load_npz(model)[1][COLUMNS_KEY]["features"] == ["x"]


@pytest.mark.parametrize("name", ["bures.png", "bures.svg"])
def test_cli_figure_write_failing_half_way_keeps_the_old_figure(tmp_path, monkeypatch, capsys,
                                                                name):
    # the figure of bures-demo --out (and convex-fit --plot: the same helper) is written
    # through atomic_write: a savefig failing after some bytes leaves the old file whole
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from psdsos.cli import main

    out = tmp_path / name
    out.write_bytes(b"the previous figure")
    real = Figure.savefig

    def failing(self, fname, **kw):
        assert not isinstance(fname, (str, os.PathLike))  # a file object, not the path
        fname.write(b"half a figure")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", failing)
    assert main(["bures-demo", "--grid", "small", "--out", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_bytes() == b"the previous figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    monkeypatch.setattr(Figure, "savefig", real)
    assert main(["bures-demo", "--grid", "small", "--out", str(out)]) == 0
    head = out.read_bytes()[:8]
    assert head.startswith(b"\x89PNG") if name.endswith(".png") else b"<?xml" in head
    capsys.readouterr()
