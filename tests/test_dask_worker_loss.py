"""An out-of-core ConvexRegressor fit survives the loss of a dask worker.

The fit's passes over a ``dask.array`` (statistics, the sample of candidate rows, the
block-by-block factor of psdsos.estimators._dask) are pure task graphs built from the
user's arrays: no data are scattered and no state is kept on the workers, so when a worker
process dies the scheduler recomputes its lost tasks on the others (and on the worker its
nanny restarts) and the fit ends with the same answer.

The worker is killed from inside a task, deterministically: X's row blocks are read by a
loader that numbers its calls across the worker processes (exclusive creation of files
``load-<k>``); the call numbered k in ``kill_at`` ends its process with ``os._exit`` in the
middle of the task, after writing the worker's address to its file.  The first call (the
first pass) and the last call of a healthy fit (the factor's pass) kill their worker.  The
answer is compared with the same graph computed in the test's process and with the
in-memory fit.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from psdsos import ConvexRegressor

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


def _data(n=900, seed=16):
    rng = np.random.default_rng(seed)
    X = 10.0 + 3.0 * rng.uniform(-1, 1, (n, 2))
    y = np.sum((X - 10.0) ** 2, axis=1) + np.exp((X[:, 0] - 10.0) / 3.0)
    return X, y + 0.1 * rng.standard_normal(n)


def _loader(X, folder, kill_at):
    """load(start, stop) -> X[start:stop], numbering its calls in ``folder``; the calls
    numbered in ``kill_at`` end their worker process mid-task."""

    def load(start, stop):
        k = 0
        while True:  # the first free number, taken atomically (across processes)
            try:
                fd = os.open(os.path.join(folder, f"load-{k}"),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                k += 1
        if k in kill_at:
            from distributed import get_worker

            os.write(fd, get_worker().address.encode())
            os.close(fd)
            os._exit(1)  # the worker process dies here, its task unfinished
        os.close(fd)
        return X[start:stop]

    return load


def _dask_X(X, folder, kill_at=(), block=300):
    load = _loader(X, str(folder), frozenset(kill_at))
    parts = [da.from_delayed(dask.delayed(load, pure=True)(a, min(a + block, len(X))),
                             shape=(min(a + block, len(X)) - a, X.shape[1]), dtype=X.dtype)
             for a in range(0, len(X), block)]
    return da.concatenate(parts)


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ConvexRegressor(**kw).fit(X, y)


def _calls(folder):
    return sorted(int(p.name.split("-")[1]) for p in folder.iterdir())


def test_fit_survives_a_killed_worker(tmp_path):
    X, y = _data()
    kw = dict(n_landmarks=10, centers="landmarks", random_state=0, tol=1e-9)
    tol = kw["tol"]
    mem = _fit(X, y, **kw)
    healthy_dir, faulty_dir = tmp_path / "healthy", tmp_path / "faulty"
    healthy_dir.mkdir()
    faulty_dir.mkdir()
    dy = da.from_array(y, chunks=300)
    # the same graph computed in this process: the reference, and the number of reads
    with dask.config.set(scheduler="synchronous"):
        healthy = _fit(_dask_X(X, healthy_dir), dy, **kw)
    n_calls = len(_calls(healthy_dir))
    assert n_calls >= 6  # 3 blocks, read by several passes
    kill_at = (0, n_calls - 1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        faulty = _fit(_dask_X(X, faulty_dir, kill_at), dy, **kw)
        # both kills happened (on a worker whose address the scheduler has dropped since)
        killed = [(faulty_dir / f"load-{k}").read_text() for k in kill_at]
        assert all(address.startswith("tcp://") for address in killed)
        assert not set(killed) & set(client.scheduler_info()["workers"])
        # the lost reads were done again
        assert len(_calls(faulty_dir)) > n_calls
    for ref in (healthy, mem):
        np.testing.assert_array_equal(faulty.constraint_points_, ref.constraint_points_)
        assert faulty.objective_ == pytest.approx(ref.objective_, rel=10 * tol)
        np.testing.assert_allclose(faulty.predict(X), ref.predict(X),
                                   atol=np.sqrt(tol) * np.ptp(y))
