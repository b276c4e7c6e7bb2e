"""Plotting (optional extra ``pip install psdsos[plot]``): PSD ellipses, convex-regression fits.

- :func:`plot_psd_ellipses`: 2x2 PSD matrices as ellipses (segments when rank one) centred
  along a line, as in Figures 1 and 6 of the PSD paper.
- :func:`plot_bures_comparison`: data / model / truth rows of ellipses in one figure.
- :func:`psd_ellipse_scale`: the common length scale that keeps neighbours apart.
- :func:`plot_convex_fit`: a fitted function of 1 or 2 features over its data (curve; contours
  and surface), as in Figures 2-4 of the PSD paper.

matplotlib is imported inside the functions only: importing psdsos.plotting works without it.
"""

from psdsos.plotting._convex import plot_convex_fit
from psdsos.plotting._ellipses import (
    plot_bures_comparison,
    plot_psd_ellipses,
    plot_psd_spectrum,
    psd_ellipse_scale,
)

__all__ = ["plot_bures_comparison", "plot_convex_fit", "plot_psd_ellipses", "plot_psd_spectrum",
           "psd_ellipse_scale"]
