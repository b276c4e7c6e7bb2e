"""Shared pytest fixtures and settings for the psdsos test suite.

Settings live here rather than in ``pytest.ini`` / ``pyproject.toml`` so that running any
test file alone behaves the same way.

* ``seed``: the integer in the environment variable ``PSDSOS_SEED`` (default 0), so that CI
  can sweep seeds (``PSDSOS_SEED=3 pytest``) without touching the tests.
* ``rng``: a ``numpy.random.Generator`` seeded with ``seed``.
* Hypothesis profiles: ``psdsos`` (default: no deadline, 25 examples, fast enough for every
  commit) and ``psdsos-ci`` (200 examples) selected with ``PSDSOS_HYPOTHESIS_PROFILE``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "psdsos",
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
settings.register_profile(
    "psdsos-ci",
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
settings.load_profile(os.environ.get("PSDSOS_HYPOTHESIS_PROFILE", "psdsos"))


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
        f"psdsos: PSDSOS_SEED={_env_seed()}, hypothesis profile "
        f"{os.environ.get('PSDSOS_HYPOTHESIS_PROFILE', 'psdsos')}"
    )
