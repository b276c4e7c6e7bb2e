"""The kernel names of the commands, in one place.

What exists is the kernel registry's (:func:`psdsos.kernels.kernel_names`); the names here are
the commands' choices among them, and what a kernel can do (convex-fit needs Hessians) is
asked of the registry.
"""

from __future__ import annotations

from psdsos.kernels import kernel_aliases, kernel_names

#: Kernels cross-validated by bures-demo (without --paper), from smooth to rough.
DEMO_KERNELS = ("gaussian", "matern52", "exponential")
#: The kernel of the PSD paper's Figure 1 (bures-demo --paper).
PAPER_KERNEL = "exponential"
#: convex-fit's default kernel, as the PSD paper's section 6.
CONVEX_DEFAULT_KERNEL = "gaussian"


def hessian_kernels() -> tuple[str, ...]:
    """The registered radial kernels that are twice differentiable (convex-fit's choices: its
    SoS constraint is on the Hessian), then their aliases ("rbf": the Gaussian kernel)."""
    names = tuple(kernel_names(differentiability=2))
    return names + tuple(a for a, n in kernel_aliases().items() if n in names)


def listed(names: tuple[str, ...]) -> str:
    """``"a, b, c"``: kernel names as the help texts and reports list them."""
    return ", ".join(names)
