"""Write the model files of tests/test_persistence.py with a given psdsos version.

The files of this folder were written by psdsos at commit a061991 (the hand-written savers,
before the declared files of ``psdsos._persistence``)::

    git archive a061991 psdsos | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/data/persistence/make_fixtures.py tests/data/persistence

Each model is fitted on tiny seeded data; ``expected.npz`` holds the test inputs and the
predictions of the fitted (not reloaded) models, which the reloaded ones must reproduce.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import psdsos
from psdsos import (
    ConvexRegressor,
    PiecewiseLinearConvexRegressor,
    PSDRegressor,
)
from psdsos.structured import (
    FenchelYoungEstimator,
    KRLSEstimator,
    LocalizedSELF,
    SELFEstimator,
)
from psdsos.structured.parts import Blocks


def fit_models():
    """{kind: (fitted model, test inputs)} (the same recipe for every psdsos version)."""
    rng = np.random.default_rng(0)
    X = np.linspace(0.0, 1.0, 8)[:, None]
    A = rng.standard_normal((8, 2, 2)) * 0.3 + np.eye(2) * (1 + X[:, :, None])
    M = A @ A.transpose(0, 2, 1)
    x1 = np.linspace(-1.0, 1.0, 10)[:, None]
    y = x1[:, 0] ** 2 + 0.1 * np.sin(5 * x1[:, 0])
    Y2 = np.hstack([np.sin(x1), np.cos(x1)])
    labels = np.array(["a", "b", "c", "a", "b", "c", "a", "b", "c", "a"])
    fast = dict(solver="primal", primal_solver="CLARABEL")
    Xt = np.linspace(-0.9, 0.9, 5)[:, None]
    Xl = rng.normal(size=(12, 4))
    Yl = np.tanh(Xl) + 0.1 * rng.normal(size=(12, 4))
    multi = (Xl[:, :3] > 0).astype(int)
    return {
        "PSDRegressor": (PSDRegressor(sigma=0.3, lam2=1e-3).fit(X, M), Xt),
        "PSDRegressor-nystrom": (PSDRegressor(sigma=0.3, n_landmarks=4, random_state=0,
                                              **fast).fit(X, M), Xt),
        "PSDRegressor-huber": (PSDRegressor(sigma=0.3, loss="huber", delta=0.5).fit(
            X, M[:, 0, 0]), Xt),
        "PSDModel": (PSDRegressor(sigma=0.3, lam2=1e-3).fit(X, M).model_, Xt),
        "ConvexRegressor": (ConvexRegressor(sigma=1.0, constraint_points=np.linspace(
            -1.0, 1.0, 6)[:, None], **fast).fit(x1, y), Xt),
        "ConvexRegressor-exact": (ConvexRegressor(sigma=1.0, representation="exact",
                                                  constraint_points=4, random_state=0,
                                                  **fast).fit(x1, y), Xt),
        "PiecewiseLinearConvexRegressor": (PiecewiseLinearConvexRegressor().fit(x1, y), Xt),
        "SELFEstimator": (SELFEstimator(sigma=0.5).fit(x1, Y2), Xt),
        "SELFEstimator-nystrom": (SELFEstimator(sigma=0.5, n_landmarks=4,
                                                random_state=0).fit(x1, Y2), Xt),
        "SELFEstimator-labels": (SELFEstimator(sigma=0.5, output="multiclass").fit(
            x1, labels), Xt),
        "KRLSEstimator": (KRLSEstimator(sigma=0.5, output="sphere").fit(
            x1, Y2 / np.linalg.norm(Y2, axis=1, keepdims=True)), Xt),
        "FenchelYoungEstimator": (FenchelYoungEstimator("multiclass").fit(x1, labels), Xt),
        "FenchelYoungEstimator-kernel": (FenchelYoungEstimator(
            "multilabel", model="kernel", sigma=1.0).fit(Xl, multi), Xl[:5]),
        "LocalizedSELF": (LocalizedSELF(sigma=1.0, lam=1e-2, parts=Blocks(2, 2, 2)).fit(
            Xl, Yl), Xl[:5]),
    }


def predict(model, X):
    return model(X) if isinstance(model, psdsos.sos.PSDModel) else model.predict(X)


def main(folder):
    folder = pathlib.Path(folder)
    expected = {}
    for kind, (model, Xt) in fit_models().items():
        if kind == "ConvexRegressor":
            model.save(folder / f"{kind}.npz", metadata={"columns": ["x"]})
        else:
            model.save(folder / f"{kind}.npz")
        expected[f"{kind}/X"] = Xt
        expected[f"{kind}/y"] = np.asarray(predict(model, Xt))
    np.savez(folder / "expected.npz", **expected)


if __name__ == "__main__":
    main(sys.argv[1])
