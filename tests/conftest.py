"""Shared test settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# In CI the property tests replay the same examples every run, so a result never depends on
# the draw; locally they explore new examples each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Factory retries still happen, with zero backoff, so command tests do not sleep."""
    import schematic.factory as factory

    monkeypatch.setattr(
        factory, "DEFAULT_RETRY", factory.RetryPolicy(backoff=0.0, max_retry_after=0.0)
    )
