"""Out-of-core convex regression: the data term's passes over a ``dask.array``.

With ``centers="landmarks"`` the data enter :class:`psdsos.problems.ConvexRegressionNystromProblem`
only through an (s x s) triangular factor accumulated block by block (s = n_features + 2 +
the number of landmarks).  Given ``X`` and ``y`` as dask arrays, :meth:`ConvexRegressor.fit`
runs that accumulation as one task per row block on the active dask scheduler (threads, or
the workers of a ``dask.distributed`` cluster), so the samples are never gathered in one
process: what the client holds is O(s^2 + m r d^2) whatever n.  Two more passes compute the
statistics the in-memory fit takes from the data (means, spreads, the bounding box, finiteness),
and the constraint points are chosen among a seeded sample of the rows plus the corners of the
data's bounding box.  dask is imported only here, and only when a dask array is passed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_dask_array", "dask_statistics", "dask_sample_rows", "dask_compress"]

#: Rows drawn (seeded, without replacement) among which the constraint points are chosen.
CANDIDATE_ROWS = 20000


def is_dask_array(A):
    """Whether ``A`` is a ``dask.array.Array`` (without importing dask)."""
    return type(A).__module__.split(".")[0] == "dask" and hasattr(A, "to_delayed")


def _check_inputs(X, y):
    import dask.array as da

    if not is_dask_array(X) or not is_dask_array(y):
        raise ValueError("X and y must both be dask arrays (or both in-memory arrays), got "
                         f"{type(X).__name__} and {type(y).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D dask array (n_samples, n_features), got {X.ndim}-D")
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D dask array (n_samples,), got {y.ndim}-D")
    if np.isnan(X.shape[0]) or np.isnan(y.shape[0]):
        raise ValueError("X and y must have known chunk sizes (call compute_chunk_sizes())")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y have {X.shape[0]} and {y.shape[0]} rows")
    for name, A in (("X", X), ("y", y)):
        if A.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be real numbers, got dtype {A.dtype}")
    X = X.astype(np.float64).rechunk({1: -1})
    y = y.astype(np.float64).rechunk((X.chunks[0],))
    return X, y, da


def dask_statistics(X, y):
    """(X, y, stats): rechunked arrays (rows split as X's, all columns in one chunk) and the
    statistics of the fit, computed in two passes on the active scheduler: n, the column
    means, the variance of all entries (for sigma="scale"), the bounding box, and those of
    y (mean, standard deviation and root mean square, largest |y|), each taken on the data
    divided by its largest magnitude (no overflow).  ValueError on NaN or infinity."""
    import dask

    X, y, da = _check_inputs(X, y)
    ax, ay, lo, hi, finite = dask.compute(
        da.max(da.abs(X)), da.max(da.abs(y)), X.min(axis=0), X.max(axis=0),
        da.isfinite(X).all() & da.isfinite(y).all())
    if not bool(finite):
        raise ValueError("Input X or y contains NaN or infinity")
    ax = float(ax) if ax > 0 else 1.0
    ayv = float(ay)
    ay_ = ayv if ayv > 0 else 1.0
    Xn, yn = X / ax, y / ay_
    mcol, mall = Xn.mean(axis=0), Xn.mean()
    my = yn.mean()
    var, vy, ms = dask.compute(((Xn - mall) ** 2).mean(), ((yn - my) ** 2).mean(),
                               (yn**2).mean())[0:3]
    mcol, mall, my = dask.compute(mcol, mall, my)
    n = int(X.shape[0])
    return X, y, {
        "n": n, "p": int(X.shape[1]), "x_mean": ax * np.asarray(mcol, dtype=np.float64),
        "x_var": ax * ax * float(var), "lo": np.asarray(lo, dtype=np.float64),
        "hi": np.asarray(hi, dtype=np.float64), "y_absmax": ayv, "y_mean": ay_ * float(my),
        "y_std": ay_ * float(np.sqrt(max(float(vy), 0.0))),
        "y_rms": ay_ * float(np.sqrt(max(float(ms), 0.0))),
        # sums of squares for the dual's floors: of y - mean(y) and of y
        "y_css": n * (ay_ * ay_) * float(vy), "y_ss": n * (ay_ * ay_) * float(ms),
    }


def dask_sample_rows(X, size, random_state):
    """``size`` rows of X drawn without replacement (seeded), as a numpy array."""
    n = int(X.shape[0])
    if size >= n:
        return np.asarray(X.compute(), dtype=np.float64)
    rng = np.random.default_rng(random_state)
    idx = np.sort(rng.choice(n, size=size, replace=False))
    return np.asarray(X[idx].compute(), dtype=np.float64)


def dask_compress(kernel, X, y, C, R, fit_intercept, offset, scale, t_offset, t_scale,
                  sign):
    """The factor T of the standardized rows [1, u, K(u, C) R^{-1}, t] over all the blocks
    (u = (x - offset) / scale, t = sign (y - t_offset) / t_scale), one task per row block,
    combined by one QR of the stacked block factors."""
    import dask

    from psdsos.sos._compress import combine_blocks, compress_block

    q = C.shape[0]
    s = (X.shape[1] + 1 if fit_intercept else 0) + q + 1

    def block(xb, yb):
        u = (np.asarray(xb, dtype=np.float64) - offset) / scale
        t = sign * ((np.asarray(yb, dtype=np.float64) - t_offset) / t_scale)
        return compress_block(kernel, u, C, R, t, fit_intercept)

    xs = X.to_delayed().ravel()
    ys = y.to_delayed().ravel()
    tasks = [dask.delayed(block)(xb, yb) for xb, yb in zip(xs, ys, strict=True)]
    return combine_blocks(dask.compute(*tasks), s)
