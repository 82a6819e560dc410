"""The on-disk cache of the factory's extension lists, against a respx-mocked factory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from schematic.factory import cache as extension_cache
from schematic.factory.cache import live_extensions
from schematic.factory.client import ExtensionInfo, FactoryClient

URL = "https://factory.example.test"
TOKEN = "s3cr3t-token-value"
NVIDIA_OPEN = {
    "name": "siderolabs/nvidia-open-gpu-kernel-modules-production",
    "ref": "ghcr.io/siderolabs/nvidia-open-gpu-kernel-modules-production:595.91.07-v1.13.9",
    "digest": "sha256:" + "a" * 64,
    "author": "Sidero Labs",
    "description": "NVIDIA open GPU kernel modules",
}
QEMU_EXT = {
    "name": "siderolabs/qemu-guest-agent",
    "ref": "ghcr.io/siderolabs/qemu-guest-agent:10.0.2",
    "digest": "sha256:" + "b" * 64,
    "author": "Sidero Labs",
    "description": "QEMU guest agent",
    "newField": "ignored",
}


@pytest.fixture
def client() -> Iterator[FactoryClient]:
    with FactoryClient(URL, environ={}, sleep=lambda _: None) as made:
        yield made


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_mocked=True, assert_all_called=True) as mock:
        yield mock


def test_public_api_is_pinned() -> None:
    assert sorted(extension_cache.__all__) == [
        "DEFAULT_CACHE_TTL",
        "default_cache_dir",
        "live_extensions",
    ]


def test_default_cache_dir_follows_xdg() -> None:
    assert extension_cache.default_cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/talos-schematic")


def test_live_extensions_are_cached_per_factory_and_version(
    client: FactoryClient, router: respx.MockRouter, tmp_path: Path
) -> None:
    route = router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[NVIDIA_OPEN])
    )
    clock = [1_000_000.0]
    first = live_extensions(client, "v1.13.9", cache_dir=tmp_path, ttl=60, now=lambda: clock[0])
    clock[0] += 59
    second = live_extensions(client, "v1.13.9", cache_dir=tmp_path, ttl=60, now=lambda: clock[0])
    assert first == second == [ExtensionInfo(**NVIDIA_OPEN)]
    assert route.call_count == 1
    clock[0] += 2
    live_extensions(client, "v1.13.9", cache_dir=tmp_path, ttl=60, now=lambda: clock[0])
    assert route.call_count == 2
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1
    assert files[0].startswith("extensions-factory.example.test-") and files[0].endswith(
        "-v1.13.9.json"
    )
    record = json.loads((tmp_path / files[0]).read_text())
    assert record["factory"] == URL
    assert record["extensions"][0]["ref"] == NVIDIA_OPEN["ref"]


def test_damaged_cache_is_fetched_again_and_never_holds_credentials(
    router: respx.MockRouter, tmp_path: Path
) -> None:
    route = router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[QEMU_EXT])
    )
    env = {"TALOS_SCHEMATIC_FACTORY_TOKEN": TOKEN}
    with FactoryClient(URL.replace("https://", "https://u:pw12345@"), environ=env) as c:
        live_extensions(c, "v1.13.9", cache_dir=tmp_path)
        (cache,) = tmp_path.iterdir()
        assert TOKEN not in cache.read_text() and "pw12345" not in cache.read_text()
        cache.write_text('{"factory": "' + URL + '", "ext')
        live_extensions(c, "v1.13.9", cache_dir=tmp_path)
    assert route.call_count == 2
    assert json.loads(cache.read_text())["talos"] == "v1.13.9"


def test_live_extensions_ttl_zero_refreshes(
    client: FactoryClient, router: respx.MockRouter, tmp_path: Path
) -> None:
    route = router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[QEMU_EXT])
    )
    live_extensions(client, "v1.13.9", cache_dir=tmp_path)
    live_extensions(client, "v1.13.9", cache_dir=tmp_path, ttl=0)
    assert route.call_count == 2


def test_unwritable_cache_does_not_fail(
    client: FactoryClient, router: respx.MockRouter, tmp_path: Path
) -> None:
    router.get("/version/v1.13.9/extensions/official").mock(
        return_value=httpx.Response(200, json=[QEMU_EXT])
    )
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert live_extensions(client, "v1.13.9", cache_dir=blocker / "sub") == [
        ExtensionInfo(**QEMU_EXT)
    ]
