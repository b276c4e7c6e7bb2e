"""The kernel registry: kernel classes by name, :func:`register_kernel`, :func:`get_kernel`.

A kernel is one module: its class, decorated with ``@register_kernel("name")`` where it is
defined.  Every estimator reads the registry when it checks its ``kernel=`` argument, so a
kernel registered by user code (a plug-in) is accepted by name like the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from psdsos._validation import check_choice, class_registrar
from psdsos.kernels._base import _ALIASES, _REGISTRY, Kernel, _is_radial, kernel_names

if TYPE_CHECKING:
    from psdsos.kernels._linear import LinearKernel

_K = TypeVar("_K", bound=type)


def register_kernel(name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[_K], _K]:
    """Class decorator: register a kernel class under ``name`` (a plug-in kernel).

    The class is then accepted by name (case-insensitive) wherever psdsos takes a kernel:
    :func:`get_kernel`, the ``kernel=`` argument of the estimators, saved models.  A
    subclass of :class:`Kernel` (a radial kernel with a bandwidth and derivatives) is listed
    in :data:`KERNELS` and accepted by every estimator; any other class (such as
    :class:`LinearKernel`, which gives Gram matrices only, built without arguments) is
    accepted by the SELF estimators only.  The decorator sets the class attribute ``name``.

    Parameters
    ----------
    name : str
        Non-empty; case-insensitive (stored in lower case).
    aliases : tuple of str, default=()
        Other names accepted for the same kernel (case-insensitive), e.g. ``("rbf",)`` for
        the Gaussian kernel, scikit-learn's name.  An alias is resolved wherever a name is
        (:func:`get_kernel`, the estimators' ``kernel=``, saved models) but is not listed
        by :func:`kernel_names`; :func:`kernel_aliases` lists them.  The kernel object's
        ``name`` is ``name``.

    Returns
    -------
    decorator : callable
        ``cls -> cls``, registering ``cls``.

    Raises
    ------
    ValueError
        If ``name`` is empty or not a string, or names another kernel already (the message
        names it and that kernel's class), or an alias already (or an alias names a kernel
        or another kernel's alias); the same class again (its module reloaded) replaces it.

    Examples
    --------
    A Cauchy kernel :math:`\\kappa(\\rho) = 1 / (1 + \\rho^2)` with its first derivative
    (enough for the Gram matrices and :meth:`Kernel.gradient`; :meth:`Kernel.hessian` also
    needs ``_hessian_coefs`` and ``differentiability >= 2``):

    .. code-block:: python

        from psdsos.kernels import Kernel, register_kernel

        @register_kernel("cauchy")
        class CauchyKernel(Kernel):
            formula = "k(x,y)=1/(1+rho^2)"
            differentiability = 0

            def _kappa(self, rho):
                return 1.0 / (1.0 + rho**2)

            def _dkappa(self, rho):
                return -2.0 * rho / (1.0 + rho**2) ** 2

        PSDRegressor(kernel="cauchy", sigma=0.5)
    """
    if isinstance(aliases, str) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ValueError(f"aliases of kernel {name!r} must be a tuple of non-empty strings, "
                         f"got {aliases!r}")
    own = name.lower() if isinstance(name, str) else name  # a bad name: class_registrar's error
    keys = [a.lower() for a in aliases]
    if own in _ALIASES:
        raise ValueError(f"kernel name {name!r} is already an alias of the "
                         f"{_ALIASES[own]!r} kernel")
    for key in keys:
        if key == own or key in _REGISTRY or _ALIASES.get(key, own) != own:
            raise ValueError(f"alias {key!r} of kernel {name!r} already names the "
                             f"{_ALIASES.get(key, key)!r} kernel")
    register = class_registrar(_REGISTRY, "kernel", name)

    def decorator(cls: _K) -> _K:
        cls = register(cls)
        _ALIASES.update(dict.fromkeys(keys, own))
        return cls

    return decorator


def kernel_aliases() -> dict[str, str]:
    """The other names of the registered kernels: ``{alias: name}`` (lower case).

    An alias is accepted wherever a kernel name is (case-insensitive) and gives the same
    kernel: ``"rbf"``, scikit-learn's name of the Gaussian kernel, is ``"gaussian"``.  Only
    the name differs: scikit-learn's ``rbf`` kernel :math:`\\exp(-\\gamma\\|x - y\\|^2)` is
    our Gaussian kernel with :math:`\\sigma = 1 / \\sqrt{2\\gamma}`, and the bandwidth
    argument stays ``sigma``.

    Returns
    -------
    aliases : dict of str to str

    Examples
    --------
    >>> from psdsos.kernels import kernel_aliases
    >>> kernel_aliases()
    {'rbf': 'gaussian'}
    """
    return {a: n for a, n in _ALIASES.items() if n in _REGISTRY}


def canonical_kernel_name(name: str) -> str:
    """``name`` in lower case, an alias replaced by the name it stands for (``"RBF"`` ->
    ``"gaussian"``); a name that is neither is returned lower-cased (unknown: the caller's
    check refuses it)."""
    key = name.lower()
    return _ALIASES.get(key, key)


class _RadialKernels(Mapping[str, type[Kernel]]):
    """Read-only view of the registered radial kernel classes by name (:data:`KERNELS`)."""

    def __getitem__(self, name: str) -> type[Kernel]:
        cls = _REGISTRY[name]
        if not _is_radial(cls):
            raise KeyError(name)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(kernel_names())

    def __len__(self) -> int:
        return len(kernel_names())

    def __repr__(self) -> str:
        return repr(dict(self))


#: Radial kernel classes by name (the names accepted by :func:`get_kernel`, besides the
#: Gram-only ``"linear"``): a read-only view of the registry, which plug-ins registered with
#: :func:`register_kernel` join.
KERNELS: Mapping[str, type[Kernel]] = _RadialKernels()


# "linear" is also a str: the first overload wins for it (mypy's documented overlap)
@overload
def get_kernel(kernel: Literal["linear"] | LinearKernel,  # type: ignore[overload-overlap]
               sigma: float | None = None) -> LinearKernel: ...
@overload
def get_kernel(kernel: str | Kernel, sigma: float | None = None) -> Kernel: ...
def get_kernel(kernel: str | Kernel | LinearKernel,
               sigma: float | None = None) -> Kernel | LinearKernel:
    """Return a :class:`Kernel` from a name and a bandwidth, or a Kernel unchanged.

    .. math::

        k(x, y) = \\kappa(\\|x - y\\| / \\sigma), \\quad
        \\kappa \\in \\{e^{-\\rho^2/2},\\ e^{-\\rho},\\ (1 + \\rho) e^{-\\rho},\\
        (1 + \\rho + \\rho^2/3) e^{-\\rho}\\}

    (Gaussian, exponential, Matern 3/2, Matern 5/2; the last three are the Sobolev kernels
    of the PSD paper's Example 1, eq. (15)).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "exponential", "matern32", "matern52", "linear"} or Kernel
        Kernel name (case-insensitive; any name of :func:`kernel_names` with
        ``radial_only=False``, plug-ins included, or an alias of :func:`kernel_aliases`:
        ``"rbf"``, scikit-learn's name, is the Gaussian kernel, whose
        :math:`\\exp(-\\gamma\\|x - y\\|^2)` is ours with :math:`\\sigma = 1/\\sqrt{2\\gamma}`)
        or a :class:`Kernel` (or :class:`LinearKernel`) instance.  An instance is returned
        **unchanged** and ``sigma`` is then ignored (the instance carries its own bandwidth).
        ``"linear"`` gives :class:`LinearKernel` (no bandwidth: ``sigma`` is ignored); only the
        SELF estimators accept it.
    sigma : float, default=None
        Bandwidth in ``[1e-75, 1e75]``; required when ``kernel`` is a radial kernel's name.

    Returns
    -------
    kernel : Kernel

    Raises
    ------
    ValueError
        If ``kernel`` is not one of the names above or a Kernel (the message names
        ``kernel`` and lists the choices), or if ``sigma`` is missing, not a real number,
        not in ``[1e-75, 1e75]`` (the message names ``sigma`` and the range).

    Examples
    --------
    >>> from psdsos.kernels import get_kernel
    >>> get_kernel("Matern52", sigma=0.5)
    Matern52Kernel(sigma=0.5)
    """
    if isinstance(kernel, (Kernel, *_REGISTRY.values())):
        return kernel  # type: ignore[return-value]
    name = canonical_kernel_name(kernel) if isinstance(kernel, str) else ""
    if name in _REGISTRY and not _is_radial(_REGISTRY[name]):  # Gram-only: no bandwidth
        return _REGISTRY[name]()
    if name not in KERNELS:  # raises, listing the names and aliases
        check_choice(kernel, "kernel", [*KERNELS, *kernel_aliases()])
    if sigma is None:
        raise ValueError(
            f"sigma (the kernel bandwidth) must be given with kernel={kernel!r}: "
            "a finite real number > 0, got None"
        )
    return KERNELS[name](sigma=sigma)
