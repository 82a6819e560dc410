"""The factory's official extension lists, cached on disk per factory and Talos release.

One JSON file per (factory URL, release) under ``$XDG_CACHE_HOME/talos-schematic``; it holds
the URL without credentials and the answer, never a token. A missing, stale or damaged file only
means asking the factory again, and an unwritable cache directory never fails a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path

import pydantic

from schematic.errors import printable
from schematic.factory.client import ExtensionInfo, FactoryClient
from schematic.inputs.factory_url import split_factory_url
from schematic.output.disk import write_file_atomically
from schematic.safe_yaml import read_text

__all__ = ["DEFAULT_CACHE_TTL", "default_cache_dir", "live_extensions"]

DEFAULT_CACHE_TTL = 24 * 3600.0

_EXTENSION_LIST = pydantic.TypeAdapter(list[ExtensionInfo])


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/talos-schematic``, or ``~/.cache/talos-schematic``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "talos-schematic"


def _cache_file(cache_dir: Path, url: str, version: str) -> Path:
    host = urllib.parse.urlsplit(url).hostname or "factory"
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return cache_dir / f"extensions-{host}-{digest}-{version}.json"


def _read_cache(path: Path, url: str, version: str, ttl: float, now: float) -> list[ExtensionInfo]:
    try:
        # Bounded, and a FIFO or device planted under the cache's name is not opened.
        text = read_text(path)
        raw = json.loads(text)
        fetched = float(raw["fetchedAt"])
        if raw["factory"] != url or raw["talos"] != version or not 0 <= now - fetched < ttl:
            return []
        extensions = _EXTENSION_LIST.validate_python(raw["extensions"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        # A missing, stale or damaged cache only means fetching again.
        return []
    # What the client wrote had its control characters escaped; a raw one was put there by hand.
    if any(printable(value) != value for value in _strings(extensions)):
        return []
    return extensions


def _strings(extensions: list[ExtensionInfo]) -> list[str]:
    return [value for info in extensions for value in info.model_dump().values()]


def live_extensions(
    client_or_url: FactoryClient | str,
    version: str,
    *,
    cache_dir: Path | None = None,
    ttl: float = DEFAULT_CACHE_TTL,
    now: Callable[[], float] = time.time,
) -> list[ExtensionInfo]:
    """The factory's official extensions for ``version``, cached on disk for ``ttl`` seconds.

    ``ttl=0`` always asks the factory (and refreshes the cache).
    """
    talos = version if version.startswith("v") else f"v{version}"
    url = client_or_url.url if isinstance(client_or_url, FactoryClient) else client_or_url
    url = split_factory_url(url)[0]
    path = _cache_file(cache_dir or default_cache_dir(), url, talos)
    if ttl > 0:
        cached = _read_cache(path, url, talos, ttl, now())
        if cached:
            return cached
    if isinstance(client_or_url, FactoryClient):
        extensions = client_or_url.official_extensions(talos)
    else:
        with FactoryClient(client_or_url) as client:
            extensions = client.official_extensions(talos)
    record = {
        "factory": url,
        "talos": talos,
        "fetchedAt": now(),
        "extensions": [info.model_dump() for info in extensions],
    }
    # The cache is an optimisation; an unwritable cache directory must not fail the run.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, indent=1, sort_keys=True) + "\n"
        write_file_atomically(path, text.encode(), mode=0o600)
    return extensions
