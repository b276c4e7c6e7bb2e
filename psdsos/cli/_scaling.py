"""The standardization of convex-fit and the keys of its model file's metadata."""

from __future__ import annotations

import math

import numpy as np

#: Key of the model file's JSON metadata under which convex-fit stores the column names.
COLUMNS_KEY = "cli_columns"
#: Key of the model file's JSON metadata under which convex-fit stores its standardization.
SCALING_KEY = "cli_scaling"


class _Scaling:
    """The standardization of convex-fit: u_j = (x_j - x_mean_j) / x_scale_j per feature,
    t = (y - y_mean) / y_scale (means and standard deviations of the training data; a
    constant target keeps y_scale = 1).  Convexity (concavity) is preserved by these maps,
    so a convex fit in (u, t) is a convex function of x in the user's units."""

    def __init__(self, x_mean, x_scale, y_mean, y_scale):
        self.x_mean = np.asarray(x_mean, dtype=np.float64)
        self.x_scale = np.asarray(x_scale, dtype=np.float64)
        self.y_mean, self.y_scale = float(y_mean), float(y_scale)

    @classmethod
    def from_data(cls, X, y, names):
        from psdsos._validation import scaled_mean_std

        stats = [scaled_mean_std(X[:, j]) for j in range(X.shape[1])]
        for (_, sd), name in zip(stats, names, strict=True):
            if not (math.isfinite(sd) and sd > 0):
                raise ValueError(f"feature column {name!r} is constant: it cannot explain the "
                                 "target; leave it out with --features")
        ym, ysd = scaled_mean_std(y)
        return cls([m for m, _ in stats], [sd for _, sd in stats], ym,
                   ysd if math.isfinite(ysd) and ysd > 0 else 1.0)

    @classmethod
    def from_meta(cls, meta, n_features, path):
        try:
            out = cls(meta["x_mean"], meta["x_scale"], meta["y_mean"], meta["y_scale"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: invalid {SCALING_KEY!r} metadata (expected x_mean, "
                             "x_scale, y_mean, y_scale)") from None
        ok = (out.x_mean.shape == out.x_scale.shape == (n_features,)
              and np.all(np.isfinite(out.x_mean)) and np.all(out.x_scale > 0)
              and np.all(np.isfinite(out.x_scale)) and math.isfinite(out.y_mean)
              and math.isfinite(out.y_scale) and out.y_scale > 0)
        if not ok:
            raise ValueError(f"{path}: invalid {SCALING_KEY!r} metadata: {n_features} finite "
                             "means and scales > 0 expected")
        return out

    def to_meta(self):
        return {"x_mean": self.x_mean.tolist(), "x_scale": self.x_scale.tolist(),
                "y_mean": self.y_mean, "y_scale": self.y_scale}

    def X(self, X):
        return (X - self.x_mean) / self.x_scale

    def y(self, y):
        return (y - self.y_mean) / self.y_scale

    def y_back(self, t):
        return self.y_mean + self.y_scale * np.asarray(t)


class _InUserUnits:
    """A model fitted in standardized units, predicting in the user's (for the figure)."""

    def __init__(self, model, scaling):
        self.model, self.scaling = model, scaling

    def predict(self, X):
        return self.scaling.y_back(self.model.predict(self.scaling.X(np.asarray(X))))
