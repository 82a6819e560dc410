"""Shared test settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import respx
from hypothesis import settings

# In CI the property tests replay the same examples every run, so a result never depends on
# the draw; locally they explore new examples each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages are wrapped at $COLUMNS when it is set (schematic/cli/telling.py), and
    pytest-xdist sets it in its workers: every test starts without it, and a test about
    wrapping sets the width it means."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def each_kind_its_own_size_limit() -> Iterator[None]:
    """`--max-input-size` sets one limit for the rest of the process (as a command run does):
    a test that ran a command with it in-process would leave it to the tests after it."""
    from schematic.safe_yaml import set_max_input_size

    yield
    set_max_input_size(None)


@pytest.fixture
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Factory retries still happen, with zero backoff, so command tests do not sleep."""
    import schematic.factory.client as factory

    monkeypatch.setattr(
        factory, "DEFAULT_RETRY", factory.RetryPolicy(backoff=0.0, max_retry_after=0.0)
    )


# Command tests that reach a (mocked) Image Factory define URL and CLUSTER at module level; these
# fixtures read them from the requesting module.


@pytest.fixture
def factory_env(tmp_path: Path) -> dict[str, str]:
    """An environment where the factory comes from the cluster file and the cache is private."""
    return {
        "TALOS_SCHEMATIC_FACTORY": "",
        "TALOS_SCHEMATIC_FACTORY_TOKEN": "",
        "TALOS_SCHEMATIC_FACTORY_AUTH": "",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The requesting module's CLUSTER, written to a cluster file."""
    path = tmp_path / "cluster.yaml"
    path.write_text(request.module.CLUSTER)
    return path


@pytest.fixture
def factory_router(request: pytest.FixtureRequest) -> Iterator[respx.MockRouter]:
    """respx routes for the requesting module's URL; any unrouted request fails the test."""
    url = request.module.URL
    with respx.mock(base_url=url, assert_all_mocked=True, assert_all_called=False) as mock:
        yield mock


def pytest_report_header() -> list[str]:
    """Which helm and kubectl the consumer tests run (tests/real_tools.py)."""
    from real_tools import HELM, KUBECTL

    return [tool.found for tool in (HELM, KUBECTL)]
