"""Progress bars of the long runs (tqdm; a widget in Jupyter notebooks).

``verbose`` follows scikit-learn: 0 / False is silent, 1 / True (or more) always shows the
bar, on stderr; ``None`` (the default of :func:`grid_search_cv`) shows it only where someone
is watching (stderr is a terminal, or the code runs in a Jupyter kernel) and only once the
run has lasted :data:`AUTO_DELAY` seconds, so short runs and scripts whose stderr goes to a
file or a pipe print nothing.
"""

from __future__ import annotations

import numbers
import sys
from typing import Any

__all__ = ["AUTO_DELAY", "check_verbose", "progress_bar"]

#: Seconds a run lasts before ``verbose=None`` shows its bar (tqdm's ``delay``).
AUTO_DELAY = 1.0

#: The bar: "grid search:  40%|####      | fits 16/40 [00:03<00:04, 4.71fit/s]".
BAR_FORMAT = "{l_bar}{bar}| fits {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"


def check_verbose(verbose: Any) -> bool | None:
    """None (automatic), or whether to show the bar: bools and ints (<= 0 is silent)."""
    if verbose is None:
        return None
    if isinstance(verbose, numbers.Integral):  # bool included
        return int(verbose) > 0
    raise ValueError(f"verbose must be None, a bool or an int, got {verbose!r}")


def _in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel (where tqdm.auto draws a widget); the test
    tqdm.auto itself makes, without importing IPython."""
    return ("ipykernel.zmqshell" in sys.modules
            or "IPython.utils._process_emscripten" in sys.modules)


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def progress_bar(total: int, verbose: bool | None, desc: str) -> Any:
    """A tqdm bar of ``total`` steps on the current ``sys.stderr`` (tqdm.auto: a widget in a
    notebook), or None when ``verbose`` (from :func:`check_verbose`) says silent.  The caller
    calls ``update(k)`` and, in a ``finally``, ``close()``."""
    stream = sys.stderr
    notebook = _in_notebook()
    interactive = notebook or _is_tty(stream)
    if verbose is None:
        if not interactive:
            return None
        delay = AUTO_DELAY
    elif not verbose:
        return None
    else:
        delay = 0.0
    if notebook:
        from tqdm.auto import tqdm
    else:  # tqdm.auto would import asyncio for nothing
        from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="fit", file=stream, bar_format=BAR_FORMAT,
                delay=delay, leave=True, dynamic_ncols=interactive,
                # a log file gets a line every few seconds, a terminal 10 refreshes a second
                mininterval=0.1 if interactive else 2.0)
