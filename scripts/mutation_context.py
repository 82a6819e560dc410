"""A pytest plugin for `make mutation`'s test map: coverage records which test ran each line.

Loaded with ``-p mutation_context`` under ``coverage run``. Each test's lines are recorded under
its node ID; the processes a test starts (``python -m schematic``) read the same ID from the
environment, where the coverage configuration's ``context`` picks it up. Each test's duration
is written to the file ``MUTATION_DURATIONS`` names, to size a mutant's time limit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CONTEXT_VARIABLE = "MUTATION_TEST_CONTEXT"
DURATIONS_VARIABLE = "MUTATION_DURATIONS"

_durations: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    import coverage

    measuring = coverage.Coverage.current()
    os.environ[CONTEXT_VARIABLE] = item.nodeid
    if measuring is not None:
        measuring.switch_context(item.nodeid)
    started = time.monotonic()
    try:
        yield
    finally:
        _durations[item.nodeid] = time.monotonic() - started
        if measuring is not None:
            measuring.switch_context("")
        del os.environ[CONTEXT_VARIABLE]


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(DURATIONS_VARIABLE)
    if target:
        Path(target).write_text(json.dumps(_durations, sort_keys=True))
