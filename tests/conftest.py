"""Shared pytest fixtures and settings for the psdsos test suite.

Settings live here rather than in ``pytest.ini`` / ``pyproject.toml`` so that running any
test file alone behaves the same way.

* ``seed``: the integer in the environment variable ``PSDSOS_SEED`` (default 0), so that CI
  can sweep seeds (``PSDSOS_SEED=3 pytest``) without touching the tests.
* ``rng``: a ``numpy.random.Generator`` seeded with ``seed``.
* Hypothesis profiles, selected with ``PSDSOS_HYPOTHESIS_PROFILE``:

  - ``psdsos`` (default): derandomized (every run, on every machine, draws the same
    examples, so a newcomer and CI see the same results), no deadline, 25 examples;
  - ``psdsos-explore``: randomized, 200 examples, for nightly-style runs that look for new
    counterexamples (a failure prints the ``@reproduce_failure`` / seed to pin it with
    ``@example`` as a regression test);
  - ``psdsos-ci``: kept as an alias of the default (derandomized) profile.

* BLAS/OpenMP threads are limited to one for the whole session (``threadpoolctl``): the
  tests are small, and several threads per process on a shared machine (or pytest-xdist
  workers) oversubscribe the cores.  ``PSDSOS_TEST_THREADS=k`` sets another limit,
  ``PSDSOS_TEST_THREADS=0`` leaves the libraries' defaults.
* The ``slow`` marker (registered in ``pyproject.toml``) labels checks of several seconds
  whose fast variants stay in the default run; they are deselected by default, and
  ``pytest -m "slow or not slow"`` (or ``-m slow``) runs them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_HEALTH = [HealthCheck.too_slow, HealthCheck.differing_executors]
settings.register_profile(
    "psdsos", deadline=None, max_examples=25, derandomize=True, suppress_health_check=_HEALTH
)
settings.register_profile(
    "psdsos-ci", deadline=None, max_examples=25, derandomize=True, suppress_health_check=_HEALTH
)
settings.register_profile(
    "psdsos-explore",
    deadline=None,
    max_examples=200,
    derandomize=False,
    suppress_health_check=_HEALTH,
)
_PROFILES = ("psdsos", "psdsos-ci", "psdsos-explore")
_profile = os.environ.get("PSDSOS_HYPOTHESIS_PROFILE", "psdsos")
if _profile not in _PROFILES:
    raise pytest.UsageError(
        f"PSDSOS_HYPOTHESIS_PROFILE must be one of {', '.join(_PROFILES)}, got {_profile!r}"
    )
settings.load_profile(_profile)


def _env_threads():
    raw = os.environ.get("PSDSOS_TEST_THREADS", "1")
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"PSDSOS_TEST_THREADS must be a non-negative integer, got {raw!r}")
    return value


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.fixture(scope="session", autouse=True)
def _limit_threads():
    """One BLAS/OpenMP thread per test process (``PSDSOS_TEST_THREADS``, 0: no limit): in
    this process with threadpoolctl, in subprocesses (examples, console entry points)
    through the environment variables the libraries read at start (those already set are
    kept)."""
    n = _env_threads()
    if n == 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    added = [v for v in _THREAD_VARS if v not in os.environ]
    for v in added:
        os.environ[v] = str(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        for v in added:
            os.environ.pop(v, None)


#: Checks of several seconds whose fast variants stay in the default run (node id -> the
#: fast variant), marked ``slow`` at collection.
_SLOW = {
    "tests/test_cnls.py::test_sklearn_compatible[PiecewiseLinearConvexRegressor()-"
    "check_regressors_train(readonly_memmap=True)]": "check_regressors_train",
    "tests/test_cnls.py::test_sklearn_compatible[PiecewiseLinearConvexRegressor()-"
    "check_regressors_train(readonly_memmap=True,X_dtype=float32)]": "check_regressors_train",
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in _SLOW:
            item.add_marker(pytest.mark.slow)


def _env_seed():
    raw = os.environ.get("PSDSOS_SEED", "0")
    message = f"PSDSOS_SEED must be a non-negative integer, got {raw!r}"
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(message) from None
    if value < 0:
        raise pytest.UsageError(message)
    return value


@pytest.fixture
def seed():
    """Base seed of the run: ``PSDSOS_SEED`` (default 0)."""
    return _env_seed()


@pytest.fixture
def rng(seed):
    """A fresh ``numpy.random.Generator`` seeded with :func:`seed`."""
    return np.random.default_rng(seed)


def pytest_report_header(config):
    return (
        f"psdsos: PSDSOS_SEED={_env_seed()}, hypothesis profile {_profile}, "
        f"BLAS threads {_env_threads() or 'default'}"
    )
