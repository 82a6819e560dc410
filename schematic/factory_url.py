"""Which Image Factory to talk to, and its URL as messages and files may show it.

``--factory URL``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster file's
``talos.imageFactoryURL``, else ``https://factory.talos.dev``. A ``user:password@`` part is
taken as basic credentials and never shown. No network here, so offline code may import it.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

from schematic.errors import FactoryError

__all__ = ["DEFAULT_FACTORY_URL", "FACTORY_ENV", "resolve_factory_url", "split_factory_url"]

DEFAULT_FACTORY_URL = "https://factory.talos.dev"
FACTORY_ENV = "TALOS_SCHEMATIC_FACTORY"


def resolve_factory_url(
    flag: str | None = None,
    cluster_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The factory base URL: ``--factory``, else ``$TALOS_SCHEMATIC_FACTORY``, else the cluster
    file's ``talos.imageFactoryURL``, else the public factory."""
    env = os.environ if environ is None else environ
    for candidate in (flag, env.get(FACTORY_ENV), cluster_url):
        if candidate:
            return candidate
    return DEFAULT_FACTORY_URL


def _masked(url: str) -> str:
    """``url`` with any ``user:password@`` part replaced, safe to show."""
    return re.sub(r"^([^/@]*//)?[^/]*@", r"\1***@", url.strip())


def split_factory_url(url: str) -> tuple[str, tuple[str, str] | None]:
    """The base URL without userinfo or trailing slash, and the userinfo as basic credentials."""
    if re.search(r"[\x00-\x20\x7f]", url.strip()):
        shown = _masked(url).encode("unicode_escape").decode("ascii")
        raise FactoryError(
            f"{shown}: not an Image Factory URL (it holds a space, line break or control character)"
        )
    try:
        parts = urllib.parse.urlsplit(url.strip())
        hostname = parts.hostname
    except ValueError as err:  # `http://[::1`: an unclosed IPv6 bracket
        raise FactoryError(f"{_masked(url)}: not a valid URL ({err})") from None
    hostport = parts.netloc.rpartition("@")[2]
    shown = urllib.parse.urlunsplit((parts.scheme, hostport, parts.path, "", "")).rstrip("/")
    if parts.scheme not in ("http", "https") or not hostname:
        # Whatever this is, a `user:password@` part must not be echoed back.
        given = _masked(url)
        hint = f" (did you mean https://{given}?)" if "://" not in given and given else ""
        raise FactoryError(f"{given or '(empty)'}: not an http(s) Image Factory URL{hint}")
    if parts.query or parts.fragment:
        raise FactoryError(f"{shown}: the factory URL must not carry a query or fragment")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise FactoryError(f"{shown}: the factory URL has an invalid port") from None
    userinfo = None
    if parts.username is not None:
        userinfo = (
            urllib.parse.unquote(parts.username),
            urllib.parse.unquote(parts.password or ""),
        )
    return shown, userinfo
