"""Benchmark: localized structured prediction by parts (LocalizedSELF) at the paper's scale.

Section 6.2 of Ciliberto, Bach and Rudi: fingerprint images of 480 x 640 pixels, parts =
20 x 20 patches at stride 5 (circular: |P| = 96 * 128 = 12,288 patches, every pixel in 16),
an auxiliary dataset of m = 30,000 (image, patch) pairs drawn from 10 training images
(Algorithm 1), the restriction Gaussian kernel (eq. 20), the orientation loss (Local-Delta),
Nystrom features of rank r.  Measured, with one BLAS thread:

* fit time (auxiliary dataset, Nystrom features of the m pairs, the r x r system, the
  coefficient map times the embedded auxiliary outputs);
* predict time for one full test image (kernel between its 12,288 patches and the r
  landmarks, per-part scores, overlap-add, closed-form decoding);
* peak memory of the process (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which
  includes the Python interpreter and the data), and, for comparison, the memory that the
  explicit weights alpha(x, p) of one test image would take (|P| x m doubles);
* the test loss of eq. 24 (mean sin^2 of the angle error) against the trivial constant
  prediction, as a sanity check that the fast path predicts something sensible.

The images are synthetic (:func:`psdsos.datasets.make_fingerprints`; FVC2004 is not
redistributable); their generation is not timed.

Usage::

    python benchmarks/localized.py                 # paper scale (about a minute)
    python benchmarks/localized.py --quick         # tiny sizes (CI keeps it from rotting)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from psdsos.datasets import make_fingerprints
from psdsos.structured import LocalizedSELF
from psdsos.structured.parts import Patches2D


def peak_mb():
    """Peak resident memory of this process in MB (ru_maxrss: KB on Linux, bytes on macOS)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0**2 if sys.platform == "darwin" else r / 1024.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--n-landmarks", type=int, default=1000, help="Nystrom rank r")
    ap.add_argument("--out", default="bench-out/localized.md", help="where to save the table")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--figure", default=None,
                    help="also save the test image, its labels and the prediction (PNG)")
    args = ap.parse_args(argv)
    if args.quick:
        shape, n_train, m, r = (40, 60), 3, 600, 60
    else:
        shape, n_train, m, r = (480, 640), 10, 30_000, args.n_landmarks
    t0 = time.perf_counter()
    X, Y, _ = make_fingerprints(n_train + 1, shape, random_state=args.seed)
    t_data = time.perf_counter() - t0
    parts = Patches2D(shape, 20, stride=5, circular=True)
    Xtr, Ytr = X[:n_train].reshape(n_train, -1), Y[:n_train].reshape(n_train, -1)
    Xte, Yte = X[n_train:].reshape(1, -1), Y[n_train:].reshape(1, -1)
    mem0 = peak_mb()
    with threadpool_limits(limits=1):
        model = LocalizedSELF("gaussian", "scale", lam=1e-6, parts=parts, output="orientation",
                              n_aux=m, n_landmarks=r, random_state=args.seed)
        t0 = time.perf_counter()
        model.fit(Xtr, Ytr)
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        Z = model.predict(Xte)
        t_pred = time.perf_counter() - t0
    mem = peak_mb()
    loss = float(np.mean(np.sin(Z - Yte) ** 2))
    # the constant orientation minimizing the training loss (SELF with equal weights)
    c = 0.5 * np.angle(np.mean(np.exp(2j * Ytr)))
    loss0 = float(np.mean(np.sin(c - Yte) ** 2))
    alpha_gb = parts.n_parts * m * 8 / 1e9
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    rows = [
        ("image", f"{shape[0]} x {shape[1]}"),
        ("patches (n_parts)", f"{parts.n_parts} (20 x 20, stride 5, coverage "
                        f"{int(parts.coverage().min())}-{int(parts.coverage().max())})"),
        ("training images", f"{n_train}"),
        ("auxiliary pairs m", f"{m}"),
        ("Nystrom rank r", f"{r}"),
        ("fit time", f"{t_fit:.1f} s"),
        ("predict time (one image)", f"{t_pred:.1f} s"),
        ("fit + predict", f"{t_fit + t_pred:.1f} s (target < 60 s)"),
        ("peak memory (process)", f"{mem / 1024:.2f} GB (target < 4 GB; before fit "
                                  f"{mem0 / 1024:.2f} GB)"),
        ("explicit alpha of one image", f"{alpha_gb:.2f} GB (n_parts x m doubles, never formed)"),
        ("test loss eq. 24 (Local-Delta)", f"{loss:.4f}"),
        ("test loss, best constant", f"{loss0:.4f}"),
        ("data generation (not timed above)", f"{t_data:.1f} s"),
    ]
    lines = ["| quantity | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    lines.append("")
    lines.append(f"Machine: {platform.processor() or platform.machine()}, "
                 f"{os.cpu_count()} cores, one BLAS thread; numpy {np.__version__}; "
                 f"load average at the end {load[0]:.2f}.")
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
        panels = [("test image", X[n_train], "gray"),
                  ("ridge direction (7 x 7 Sobel)", Y[n_train], "hsv"),
                  (f"LocalizedSELF, eq. 24 loss {loss:.4f}", Z.reshape(shape), "hsv")]
        for ax, (title, img, cmap) in zip(axes, panels, strict=True):
            ax.imshow(img, cmap=cmap)
            ax.set_title(title)
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(args.figure, dpi=60, bbox_inches="tight")


if __name__ == "__main__":
    main()
