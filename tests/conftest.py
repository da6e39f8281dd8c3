"""Shared test setup: hypothesis profiles and the x64 fixture."""
import os

import pytest
from hypothesis import settings

import secant

# Small by default so `make test` stays fast; `make test-thorough` sets HYPOTHESIS_PROFILE=thorough.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=10000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def x64():
    """Runs the test with 64-bit types enabled, restoring 32-bit defaults afterwards."""
    secant.config.update("enable_x64", True)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)
