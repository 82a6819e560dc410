"""Shared test settings."""

from __future__ import annotations

import os

from hypothesis import settings

# In CI the property tests replay the same examples every run, so a result never depends on
# the draw; locally they explore new examples each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
