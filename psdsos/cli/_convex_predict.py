"""``psdsos convex-predict`` (alias ``predict``): predictions of a model saved by
``convex-fit --model`` or ``shape-fit --model``."""

from __future__ import annotations

import csv

import numpy as np

from psdsos.cli._common import _check_output_path
from psdsos.cli._csv import _read_csv
from psdsos.cli._scaling import COLUMNS_KEY, SCALING_KEY, _Scaling


def _convex_predict(args, out):
    from sklearn.metrics import mean_squared_error

    from psdsos._npz import atomic_write
    from psdsos.estimators import ConvexRegressor, ShapeConstrainedRegressor, load
    from psdsos.sos import load_npz

    model = load(args.model)
    if not isinstance(model, (ConvexRegressor, ShapeConstrainedRegressor)):
        raise ValueError(f"{args.model} holds a {type(model).__name__}, not a ConvexRegressor "
                         "or a ShapeConstrainedRegressor (write one with psdsos convex-fit "
                         "--model or psdsos shape-fit --model)")
    kwargs = {}
    if args.raw:
        if not isinstance(model, ShapeConstrainedRegressor):
            raise ValueError("--raw applies to models saved by shape-fit (a "
                             "ShapeConstrainedRegressor)")
        kwargs["raw"] = True
    _, meta = load_npz(args.model)
    columns = meta.get(COLUMNS_KEY) or {}
    names = args.features if args.features is not None else columns.get("features")
    if names is None:
        raise ValueError(f"{args.model} has no feature names (it was not written by "
                         "psdsos convex-fit or shape-fit): give them with --features")
    if len(names) != model.n_features_in_:
        raise ValueError(f"the model takes {model.n_features_in_} features, but "
                         f"{len(names)} feature columns were given: {', '.join(names)}")
    for k, name in enumerate(names):
        if name in names[:k]:
            raise ValueError(f"feature column {name!r} is named twice")
    target = columns.get("target")
    column = args.column or (f"{target}_predicted" if target else "predicted")
    if args.out is not None:
        _check_output_path(args.out, "--out")
    table = _read_csv(args.data, args.delimiter)
    if column in table.header:
        raise ValueError(f"{args.data} already has a column {column!r}; name the predictions "
                         "with --column")
    X = np.column_stack([table.column(table.index(name, "feature"), "feature")
                         for name in names])
    if meta.get(SCALING_KEY) is not None:  # written by convex-fit or shape-fit: standardized
        scaling = _Scaling.from_meta(meta[SCALING_KEY], model.n_features_in_, args.model)
        pred = scaling.y_back(model.predict(scaling.X(X), **kwargs))
    else:
        pred = model.predict(X, **kwargs)

    def write(fh):
        writer = csv.writer(fh, delimiter=args.delimiter, lineterminator="\n")
        writer.writerow(table.header + [column])
        for row, v in zip(table.rows, pred, strict=True):
            writer.writerow(row + [repr(float(v))])

    if args.out is None:
        write(out)
        return 0
    # written whole or not at all: an existing --out file survives a failure mid-write
    with atomic_write(args.out, "w", newline="", encoding="utf-8") as fh:
        write(fh)
    print(f"psdsos {args.command}: {len(pred)} rows of {args.data}, features: "
          f"{', '.join(names)}", file=out)
    if target is not None and target in table.header:
        try:
            y = table.column(table.index(target, "target"), "target")
        except ValueError:
            y = None
        if y is not None:
            print(f"error (MSE) against column {target!r}: "
                  f"{mean_squared_error(y, pred):.6g}", file=out)
    print(f"predictions: {args.out} (column {column!r})", file=out)
    return 0
