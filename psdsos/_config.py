"""Global configuration: the working-memory budget of chunked data passes.

Like scikit-learn's ``working_memory``, psdsos splits every pass over the samples whose
temporaries grow with n times a feature dimension (the SoS evaluation map and its adjoint,
kernel blocks against landmarks, the preconditioner's Hadamard-square factor, Afriat checks)
into row chunks whose temporaries stay within ``working_memory`` mebibytes.  The results do
not depend on the budget beyond rounding (sums are accumulated chunk by chunk).

This module imports nothing from psdsos (a leaf, like ``psdsos._validation``).
"""

from __future__ import annotations

import contextlib
import numbers
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["get_config", "set_config", "config_context", "chunk_rows"]

#: Default budget of one chunk's temporaries, in MiB: small enough for a processor cache
#: (much larger chunks make passes over the SoS maps slower), large enough for efficient
#: matrix products.
DEFAULT_WORKING_MEMORY = 16

_local = threading.local()


def _state():
    if not hasattr(_local, "config"):
        _local.config = {"working_memory": DEFAULT_WORKING_MEMORY}
    return _local.config


def get_config() -> dict[str, Any]:
    """The current configuration, a dict with ``"working_memory"`` (MiB)."""
    return dict(_state())


def _check_working_memory(value):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not value > 0 or value != value or value == float("inf")):
        raise ValueError(f"working_memory must be a positive finite number of MiB, got {value!r}")
    return float(value)


def set_config(working_memory: float | None = None) -> None:
    """Set the configuration for this thread.

    Parameters
    ----------
    working_memory : float, optional
        Budget in mebibytes of the temporaries of one chunk of a pass over the samples
        (default 16).  Smaller values lower peak memory at the cost of more, smaller
        matrix products; the total memory is O(n r + (r d)^2) beyond the data either way.
    """
    if working_memory is not None:
        _state()["working_memory"] = _check_working_memory(working_memory)


@contextlib.contextmanager
def config_context(*, working_memory: float | None = None) -> Iterator[None]:
    """Temporarily change the configuration (see :func:`set_config`).

    Examples
    --------
    >>> import psdsos
    >>> with psdsos.config_context(working_memory=64):
    ...     psdsos.get_config()["working_memory"]
    64.0
    """
    old = get_config()
    set_config(working_memory=working_memory)
    try:
        yield
    finally:
        _state().update(old)


def chunk_rows(n_rows, bytes_per_row, *, budget_mib=None):
    """Rows per chunk so that a chunk's temporaries (``bytes_per_row`` each) stay within
    the working-memory budget; at least 1, at most ``n_rows``."""
    budget = float(get_config()["working_memory"] if budget_mib is None else budget_mib)
    rows = int(budget * 2**20 // max(float(bytes_per_row), 1.0))
    return max(1, min(int(n_rows), rows))


def row_chunks(n_rows, bytes_per_row, *, budget_mib=None):
    """Slices covering ``range(n_rows)`` in chunks of :func:`chunk_rows` rows."""
    step = chunk_rows(max(n_rows, 1), bytes_per_row, budget_mib=budget_mib)
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]
